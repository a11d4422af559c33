"""Cross-attention positions: 5 query positions (decoding at an offset) against 14 key positions.

Drawn for an absolute scheme (sinusoidal rows added to q and k) and for a relative one (RoPE: q
and k rotated at their own positions, so only the offset counts).
"""

import matplotlib.pyplot as plt
import numpy as np

from posenc_ref import sinusoidal_table
from posenc_ref.rope import rope_scores

dim = 32
query_positions = np.arange(9, 14)  # a decoder step range, e.g. with a cache of 9 tokens
key_positions = np.arange(14)  # the encoder sequence
absolute = sinusoidal_table(query_positions, dim=dim) @ sinusoidal_table(key_positions, dim=dim).T / np.sqrt(dim)
# RoPE: one random vector as the query and as every key, each rotated at its own position.
vector = np.random.default_rng(1706).normal(size=(1, 1, 1, dim))
relative = rope_scores(np.broadcast_to(vector, (1, 1, query_positions.size, dim)),
                       np.broadcast_to(vector, (1, 1, key_positions.size, dim)),
                       query_positions, key_positions)[0, 0] / np.sqrt(dim)

fig, (left, middle, right) = plt.subplots(1, 3, figsize=(10.0, 3.0), layout="constrained",
                                          gridspec_kw={"width_ratios": [0.8, 2.0, 2.0]})
left.scatter(np.zeros_like(query_positions), query_positions, color="C1", label=r"queries ($T_q = 5$)")
left.scatter(np.ones_like(key_positions), key_positions, color="C0", label=r"keys ($T_k = 14$)")
left.set_xticks([0, 1], ["query", "key"])
left.set_xlim(-0.6, 1.6)
left.set_xlabel("sequence")
left.set_ylabel("position")
left.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.25))
for ax, scores, title in ((middle, absolute, r"absolute: $PE(q) \cdot PE(k) / \sqrt{D}$"),
                          (right, relative, r"relative (RoPE): $\langle R_q x, R_k x\rangle / \sqrt{D}$")):
    image = ax.imshow(scores, cmap="viridis", interpolation="nearest")
    ax.set_xticks(range(0, len(key_positions), 2), [str(p) for p in key_positions[::2]])
    ax.set_yticks(range(len(query_positions)), [str(p) for p in query_positions])
    ax.set_xlabel("key position")
    ax.set_ylabel("query position")
    ax.set_title(title + "\npeak where $q = k$", fontsize=9)
    fig.colorbar(image, ax=ax, shrink=0.9).set_label("score")
