"""Cross-attention positions: 5 query positions (decoding at an offset) against 14 key positions."""

import matplotlib.pyplot as plt
import numpy as np

from posenc_ref import sinusoidal_table

dim = 32
query_positions = np.arange(9, 14)  # a decoder step range, e.g. with a cache of 9 tokens
key_positions = np.arange(14)  # the encoder sequence
scores = sinusoidal_table(query_positions, dim=dim) @ sinusoidal_table(key_positions, dim=dim).T / np.sqrt(dim)

fig, (left, right) = plt.subplots(1, 2, figsize=(7.2, 2.8), gridspec_kw={"width_ratios": [1.0, 2.2]})
left.scatter(np.zeros_like(query_positions), query_positions, color="C1", label="queries (Tq = 5)")
left.scatter(np.ones_like(key_positions), key_positions, color="C0", label="keys (Tk = 14)")
left.set_xticks([0, 1], ["query", "key"])
left.set_xlim(-0.6, 1.6)
left.set_ylabel("position")
left.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.12))
image = right.imshow(scores, cmap="viridis", interpolation="nearest")
right.set_xticks(range(len(key_positions)), [str(p) for p in key_positions], fontsize=7)
right.set_yticks(range(len(query_positions)), [str(p) for p in query_positions], fontsize=7)
right.set_xlabel("key position")
right.set_ylabel("query position")
right.set_title("PE(q) . PE(k) / sqrt(D): peak where q = k", fontsize=8)
fig.colorbar(image, ax=right)
