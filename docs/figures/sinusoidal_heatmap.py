"""Sinusoidal table as a heatmap: fast columns on the left, slow columns on the right (striped pattern)."""

import matplotlib.pyplot as plt
import numpy as np

from posenc_ref import sinusoidal_table

positions = np.arange(128)
table = sinusoidal_table(positions, dim=128)  # paper ladder, interleaved layout

fig, ax = plt.subplots(figsize=(7.0, 3.6))
image = ax.imshow(table, aspect="auto", cmap="RdBu_r", vmin=-1.0, vmax=1.0, interpolation="nearest")
ax.set_xlabel("column (2k: sin, 2k+1: cos)")
ax.set_ylabel("position p")
ax.set_title("sinusoidal_table(arange(128), dim=128): paper ladder, interleaved")
fig.colorbar(image, ax=ax, label="value")
