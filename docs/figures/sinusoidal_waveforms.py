"""A few sine columns against position: the frequency falls geometrically with the column index."""

import matplotlib.pyplot as plt
import numpy as np

from posenc_ref import sinusoidal_frequencies, sinusoidal_table

dim = 64
positions = np.arange(0, 200)
table = sinusoidal_table(positions, dim=dim)
w = sinusoidal_frequencies(dim=dim)

fig, ax = plt.subplots(figsize=(7.0, 3.0))
for k in (0, 4, 8, 12, 16):
    ax.plot(positions, table[:, 2 * k], label=f"k={k}, wavelength {2 * np.pi / w[k]:.1f}")
ax.set_xlabel("position p")
ax.set_ylabel("sin(p w_k)")
ax.set_title(f"sine columns 2k of sinusoidal_table(..., dim={dim})")
ax.legend(fontsize=7, loc="lower left", ncol=2)
