"""2-D sin-cos channels on a non-square grid: x-columns vary along the width, y-columns along the height."""

import matplotlib.pyplot as plt

from posenc_ref import grid_coords, grid_sincos_2d

height, width, dim = 6, 10, 16
ys, xs = grid_coords(height, width)
table = grid_sincos_2d(ys, xs, dim=dim).reshape(height, width, dim)  # MAE convention: x_first, sin_cos

channels = (0, 1, 4, 8, 9, 12)
fig, axes = plt.subplots(2, 3, figsize=(8.4, 4.4), layout="constrained", sharex=True, sharey=True)
for ax, channel in zip(axes.flat, channels):
    image = ax.imshow(table[:, :, channel], cmap="RdBu_r", vmin=-1.0, vmax=1.0, interpolation="nearest")
    axis = "x" if channel < dim // 2 else "y"
    ax.set_title(f"channel {channel} ({axis} block)", fontsize=10)
    ax.set_xticks(range(0, width, 3))
    ax.set_yticks(range(0, height, 2))
for ax in axes[-1]:
    ax.set_xlabel("column (x)")
for ax in axes[:, 0]:
    ax.set_ylabel("row (y)")
fig.colorbar(image, ax=axes, shrink=0.8).set_label("value")
fig.suptitle(f"grid_sincos_2d on a {height} x {width} grid, dim={dim}, x_first / sin_cos", fontsize=10)
