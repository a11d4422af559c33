"""Wavelengths 2 pi / w_k of the two frequency ladders: only t2t reaches 2 pi * base."""

import matplotlib.pyplot as plt
import numpy as np

from posenc_ref import sinusoidal_frequencies

dim = 64
fig, ax = plt.subplots(figsize=(7.0, 3.2))
for ladder, marker in (("paper", "o"), ("t2t", "s")):
    w = sinusoidal_frequencies(dim=dim, ladder=ladder)
    ax.semilogy(np.arange(w.size), 2 * np.pi / w, marker, markersize=3.5, label=f'ladder="{ladder}"')
for value, text in ((2 * np.pi, "2 pi"), (2 * np.pi * 10000.0, "2 pi * 10000")):
    ax.axhline(value, color="0.6", linewidth=0.8, linestyle="--")
    ax.annotate(text, (0, value), xytext=(2, 3), textcoords="offset points", fontsize=8, color="0.4")
ax.set_xlabel("frequency index k")
ax.set_ylabel("wavelength (positions)")
ax.set_title(f"wavelengths of sinusoidal_frequencies(dim={dim}, ladder=...)")
ax.legend()
