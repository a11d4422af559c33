"""RoPE on one 2-D pair: the vector turns by its position times the pair's frequency; scores see offsets only."""

import matplotlib.pyplot as plt
import numpy as np

from posenc_ref.rope import rope_apply, rope_scores
from posenc_ref.rope_scaling import rope_inv_freq

rng = np.random.default_rng(2021)
base = 10000.0
(theta,) = rope_inv_freq(dim=2, base=base)[0]  # one pair: theta = base^0
positions = np.arange(8)
x = rng.normal(size=2)
turned = rope_apply(np.broadcast_to(x, (1, 1, positions.size, 2)), positions, base=base)[0, 0]

fig, (left, right) = plt.subplots(1, 2, figsize=(7.4, 3.6))
radius = float(np.hypot(*x))
circle = np.linspace(0, 2 * np.pi, 200)
left.plot(radius * np.cos(circle), radius * np.sin(circle), color="0.85", linewidth=0.8)
for ax in (left, right):
    ax.set_aspect("equal")
    ax.set_xlabel("first channel of the pair $u$")
    ax.set_ylabel("second channel $v$")
    ax.axhline(0, color="0.9", linewidth=0.6)
    ax.axvline(0, color="0.9", linewidth=0.6)
colors = plt.cm.viridis(np.linspace(0, 0.9, positions.size))
for p, (a, b), color in zip(positions, turned, colors, strict=True):
    left.annotate("", xy=(a, b), xytext=(0, 0), arrowprops={"arrowstyle": "->", "color": color})
    left.text(1.12 * a, 1.12 * b, str(p), color=color, ha="center", va="center", fontsize=8)
left.set_xlim(-1.35 * radius, 1.35 * radius)
left.set_ylim(-1.35 * radius, 1.35 * radius)
left.set_title(f"x rotated at positions 0..{positions[-1]}\n(angle p * theta, theta = {theta:g} rad)", fontsize=9)

q, k = rng.normal(size=(2, 2))
q, k = q / np.hypot(*q), 0.7 * k / np.hypot(*k)  # unequal lengths, so the two arrows are told apart
pairs = ((5, 2), (9, 6))
for (m, n), style in zip(pairs, ("-", "--"), strict=True):
    qm = rope_apply(q[None, None, None], [m], base=base)[0, 0, 0]
    kn = rope_apply(k[None, None, None], [n], base=base)[0, 0, 0]
    score = float(rope_scores(q[None, None, None], k[None, None, None], [m], [n], base=base)[0, 0, 0, 0])
    for vec, name, color in ((qm, f"q at {m}", "C0"), (kn, f"k at {n}", "C3")):
        right.annotate("", xy=tuple(vec), xytext=(0, 0),
                       arrowprops={"arrowstyle": "->", "color": color, "linestyle": style})
        right.text(*(1.15 * vec), name, color=color, ha="center", va="center", fontsize=8)
    right.plot([], [], "k" + style, label=f"m={m}, n={n}: score {score:.4f}")
reach = 1.6 * float(max(np.hypot(*q), np.hypot(*k)))
for r in (float(np.hypot(*q)), float(np.hypot(*k))):
    right.plot(r * np.cos(circle), r * np.sin(circle), color="0.85", linewidth=0.8)
right.set_xlim(-reach, reach)
right.set_ylim(-reach, reach)
right.set_title("q at m, k at n: the angle between them,\nand the score, depend on m - n only", fontsize=9)
right.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.1))
