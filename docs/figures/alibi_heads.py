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

fig, axes = plt.subplots(1, len(heads), figsize=(8.4, 3.0), sharey=True)
for ax, h in zip(axes, heads, strict=True):
    shown = np.ma.masked_array(bias[h], mask=future)
    image = ax.imshow(shown, cmap="viridis", vmin=float(shown.min()), vmax=0.0)
    ax.set_title(f"head {h}: m = 2^{np.log2(slopes[h]):g}", fontsize=8)
    ax.set_xlabel("key j")
    ax.locator_params(integer=True)
    fig.colorbar(image, ax=ax, orientation="horizontal", pad=0.22, shrink=0.9).ax.tick_params(labelsize=6)
axes[0].set_ylabel("query i")
fig.suptitle(f"bias -m_h (i - j) of {len(heads)} of {num_heads} heads (each on its own colour scale; white: masked)",
             fontsize=9)
