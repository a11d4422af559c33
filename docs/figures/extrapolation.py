"""Beyond the trained range: a learned table raises (or, clamped, repeats its last row); a sinusoid continues."""

import matplotlib.pyplot as plt
import numpy as np

from posenc_ref import SpecError, learned_init, learned_lookup, sinusoidal_table

trained = 64
table = learned_init(trained, 16, seed=20170612)
positions = np.arange(2 * trained)

try:
    learned_lookup(table, positions)
    message = "no error"
except SpecError as exc:  # the reference refuses rows beyond the table
    message = f"SpecError ({exc.category})"
clamped = learned_lookup(table, positions, out_of_range="clamp")
sinusoid = sinusoidal_table(positions, dim=16)

fig, (top, bottom) = plt.subplots(2, 1, figsize=(7.0, 4.4), sharex=True)
top.plot(positions[:trained], learned_lookup(table, positions[:trained])[:, 0], label="learned, column 0")
top.plot(positions[trained:], clamped[trained:, 0], "--", color="C3", label='out_of_range="clamp": last row repeated')
top.text(trained * 1.5, 0.0, f'out_of_range="error": {message}', ha="center", fontsize=8,
         bbox={"facecolor": "white", "edgecolor": "C3"})
top.set_ylabel("value")
top.legend(fontsize=7, loc="lower left")
for column in (2, 6):
    bottom.plot(positions, sinusoid[:, column], label=f"sinusoid, column {column}")
bottom.set_ylabel("value")
bottom.set_xlabel("position")
bottom.legend(fontsize=7, loc="lower left")
for ax in (top, bottom):
    ax.axvspan(trained, 2 * trained, color="0.92")
    ax.axvline(trained, color="0.5", linewidth=0.8)
top.set_title(f"training range 0..{trained - 1} (white) and 2x beyond it (grey)")
