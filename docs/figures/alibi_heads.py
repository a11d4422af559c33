"""ALiBi bias matrices for a few heads: one slope per head times the (negative) distance, causally masked."""

import matplotlib.pyplot as plt
import numpy as np

from posenc_ref.alibi import alibi_bias, alibi_slopes

positions = np.arange(12)
num_heads = 8
heads = (0, 2, 5, 7)
bias = alibi_bias(positions, positions, num_heads=num_heads)
slopes = alibi_slopes(num_heads=num_heads)
future = positions[None, :] > positions[:, None]  # keys after the query: removed by the causal mask

fig, axes = plt.subplots(1, len(heads), figsize=(9.0, 3.4), sharey=True, layout="constrained")
shown = {h: np.ma.masked_array(bias[h], mask=future) for h in heads}
lowest = min(float(b.min()) for b in shown.values())  # one colour scale for every panel: slopes compare
for ax, h in zip(axes, heads, strict=True):
    image = ax.imshow(shown[h], cmap="viridis", vmin=lowest, vmax=0.0, interpolation="nearest")
    ax.set_title(rf"head {h}: $m = 2^{{{np.log2(slopes[h]):g}}}$", fontsize=10)
    ax.set_xlabel("key position $j$")
    ax.locator_params(integer=True)
axes[0].set_ylabel("query position $i$")
bar = fig.colorbar(image, ax=axes, shrink=0.85)
bar.set_label(r"bias $-m\,(i - j)$ (white: masked)")
