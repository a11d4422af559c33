"""Cosine similarity of sinusoidal rows: a Toeplitz pattern, nearby positions most similar."""

import matplotlib.pyplot as plt
import numpy as np

from posenc_ref import sinusoidal_table

table = sinusoidal_table(np.arange(96), dim=128)
unit = table / np.linalg.norm(table, axis=1, keepdims=True)
similarity = unit @ unit.T

fig, ax = plt.subplots(figsize=(4.6, 3.8))
image = ax.imshow(similarity, cmap="viridis", interpolation="nearest")
ax.set_xlabel("position")
ax.set_ylabel("position")
ax.set_title(r"$\cos(PE(i), PE(j))$, $d = 128$")
fig.colorbar(image, ax=ax).set_label("cosine similarity")
