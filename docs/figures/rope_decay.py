"""RoPE scores against distance: RoFormer's relative upper bound, and actual scores of random q, k."""

import matplotlib.pyplot as plt
import numpy as np

from posenc_ref.rope import rope_scores
from posenc_ref.rope_scaling import rope_inv_freq

dim, base = 128, 10000.0
distances = np.arange(0, 1025)
theta = rope_inv_freq(dim=dim, base=base)[0]

# RoFormer (Su et al., section 3.4.3): |score| <= max_i |h_{i+1} - h_i| * sum_j |S_j|, with
# S_j = sum_{k<j} exp(i r theta_k); the paper plots the mean (1 / (d/2)) sum_j |S_j| against r.
partial_sums = np.cumsum(np.exp(1j * np.outer(distances, theta)), axis=1)
bound = np.abs(partial_sums).mean(axis=1)

# Actual scores: a query at position r against a key at position 0, for random q and k.
rng = np.random.default_rng(2104)
heads = 256
q = rng.normal(size=(1, heads, 1, dim))
same = rope_scores(q, np.broadcast_to(q, (1, heads, distances.size, dim)), [int(distances[-1])],
                   distances[::-1], base=base)[0, :, 0]  # k = q, r apart (key t at distance t)
k = rng.normal(size=(1, 1, 1, dim))
single = rope_scores(q[:, :1], np.broadcast_to(k, (1, 1, distances.size, dim)), [int(distances[-1])],
                     distances[::-1], base=base)[0, 0, 0]

fig, (top, bottom) = plt.subplots(2, 1, figsize=(7.0, 5.0), sharex=True)
top.plot(distances, bound, color="C3", label="RoFormer bound: mean_j |S_j(r)|")
top.set_ylabel("relative upper bound")
top.set_title(f"dim={dim}, base={base:g}: the bound decays with the distance r, not monotonically")
top.legend(fontsize=8)
bottom.plot(distances, single / dim, color="0.6", linewidth=0.7, label="one random q, k")
bottom.plot(distances, same.mean(axis=0) / dim, color="C0",
            label=f"q and its copy, r apart (mean of {heads} random q)")
bottom.axhline(0, color="0.8", linewidth=0.6)
bottom.set_ylabel("score / dim")
bottom.set_xlabel("relative distance r = m - n")
bottom.legend(fontsize=8)
