"""Shaw et al.'s clipped relative index: the table row each (query, key) pair reads, under both signs."""

import matplotlib.pyplot as plt
import numpy as np

from posenc_ref.shaw import shaw_relative_index

positions = np.arange(10)
clip = 3
fig, axes = plt.subplots(1, 2, figsize=(7.4, 3.8))
for ax, sign in zip(axes, ("key_minus_query", "query_minus_key"), strict=True):
    index = shaw_relative_index(positions, positions, max_relative_position=clip, sign=sign)
    image = ax.imshow(index, cmap="coolwarm", vmin=0, vmax=2 * clip)
    for (i, j), row in np.ndenumerate(index):
        ax.text(j, i, str(row), ha="center", va="center", fontsize=7)
    ax.set_xlabel("key position j")
    ax.set_ylabel("query position i")
    ax.set_title(f'sign="{sign}"', fontsize=9)
fig.colorbar(image, ax=axes, shrink=0.8, label=f"table row (0..2K, K={clip})")
