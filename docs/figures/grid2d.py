"""2-D sin-cos channels on a non-square grid: x-columns vary along the width, y-columns along the height."""

import matplotlib.pyplot as plt

from posenc_ref import grid_coords, grid_sincos_2d

height, width, dim = 6, 10, 16
ys, xs = grid_coords(height, width)
table = grid_sincos_2d(ys, xs, dim=dim).reshape(height, width, dim)  # MAE convention: x_first, sin_cos

channels = (0, 1, 4, 8, 9, 12)
fig, axes = plt.subplots(2, 3, figsize=(7.0, 3.4))
for ax, channel in zip(axes.flat, channels):
    ax.imshow(table[:, :, channel], cmap="RdBu_r", vmin=-1.0, vmax=1.0, interpolation="nearest")
    axis = "x" if channel < dim // 2 else "y"
    ax.set_title(f"channel {channel} ({axis} block)", fontsize=8)
    ax.set_xticks([])
    ax.set_yticks([])
fig.suptitle(f"grid_sincos_2d on a {height} x {width} grid, dim={dim}, x_first / sin_cos", fontsize=9)
