"""Data flow of additive position encoding: X = E + PE goes into the Q/K/V projections of attention."""

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import FancyArrowPatch

from posenc_ref import learned_init, sinusoidal_table

length, dim = 12, 16
embeddings = learned_init(length, dim, seed=7, std=1.0 / np.sqrt(2))  # stand-in token embeddings E
encodings = sinusoidal_table(np.arange(length), dim=dim)  # PE
x = embeddings + encodings
rng = np.random.default_rng(7)
w_q, w_k = rng.normal(size=(2, dim, dim)) / np.sqrt(dim)
scores = (x @ w_q) @ (x @ w_k).T / np.sqrt(dim)
weights = np.exp(scores - scores.max(axis=1, keepdims=True))
weights /= weights.sum(axis=1, keepdims=True)

fig = plt.figure(figsize=(8.4, 3.6))
panels = {
    "E": ((0.02, 0.55, 0.14, 0.30), embeddings, "token embeddings $E$\n$(T \\times D)$"),
    "PE": ((0.02, 0.04, 0.14, 0.30), encodings, "$PE$(positions)\nsinusoidal_table"),
    "X": ((0.30, 0.29, 0.14, 0.36), x, "$X = E + PE$"),
    "A": ((0.78, 0.25, 0.2, 0.5), weights, "$\\mathrm{softmax}(QK^\\top / \\sqrt{D})$\n$(T \\times T)$"),
}
boxes = {}
for name, (rect, data, label) in panels.items():
    ax = fig.add_axes(rect)
    ax.imshow(data, aspect="auto", cmap="viridis" if name == "A" else "RdBu_r", interpolation="nearest")
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_title(label, fontsize=9)
    boxes[name] = rect
proj = fig.add_axes((0.52, 0.33, 0.17, 0.28))
proj.axis("off")
proj.add_patch(plt.Rectangle((0, 0), 1, 1, facecolor="0.93", edgecolor="0.3", transform=proj.transAxes))
proj.text(0.5, 0.5, "$Q = X W_q$\n$K = X W_k$\n$V = X W_v$", ha="center", va="center", fontsize=10)
proj.text(0.5, 1.08, "first attention block", ha="center", fontsize=9, transform=proj.transAxes)
plus = fig.text(0.23, 0.47, "+", fontsize=16, ha="center", va="center")


def arrow(start, end):
    fig.patches.append(FancyArrowPatch(start, end, transform=fig.transFigure, arrowstyle="-|>",
                                       mutation_scale=10, color="0.25", linewidth=1.0))


arrow((0.165, 0.70), (0.22, 0.52))
arrow((0.165, 0.24), (0.22, 0.43))
arrow((0.245, 0.47), (0.295, 0.47))
arrow((0.445, 0.47), (0.515, 0.47))
arrow((0.695, 0.47), (0.775, 0.47))
