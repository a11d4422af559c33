"""The dot product PE(p) . PE(p + k) against the offset k: the same for every p, and symmetric in k."""

import matplotlib.pyplot as plt
import numpy as np

from posenc_ref import sinusoidal_frequencies, sinusoidal_table

dim = 128
offsets = np.arange(-256, 257)
fig, ax = plt.subplots(figsize=(7.0, 3.2))
for p, style in ((300, "-"), (5000, ":")):
    rows = sinusoidal_table(p + offsets, dim=dim)
    ax.plot(offsets, rows @ sinusoidal_table([p], dim=dim)[0], style, label=f"PE({p}) . PE({p} + k)")
kernel = np.cos(np.outer(offsets, sinusoidal_frequencies(dim=dim))).sum(axis=1)
ax.plot(offsets[::16], kernel[::16], "k.", label="sum_j cos(w_j k)")
ax.axvline(0, color="0.7", linewidth=0.8)
ax.set_xlabel("offset k")
ax.set_ylabel("dot product")
ax.set_title(f"dot product of sinusoidal rows, dim={dim}: depends on k only, even in k")
ax.legend(fontsize=8)
