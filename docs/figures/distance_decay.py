"""What each relative scheme does to a logit as the distance grows: ALiBi, T5 buckets, RoPE."""

import matplotlib.pyplot as plt
import numpy as np

from posenc_ref.alibi import alibi_bias
from posenc_ref.rope import rope_scores
from posenc_ref.t5 import t5_bucket

span = 1024
distances = np.arange(0, span + 1)

# ALiBi, 8 heads: the bias of a query at position `span` on a key `r` positions back.
bias = alibi_bias([span], distances[::-1], num_heads=8)[:, 0, :]  # (H, r)
# T5, bidirectional, 32 buckets, max_distance 128: the bucket a key r positions back falls into.
buckets = t5_bucket(-distances, num_buckets=32, max_distance=128)
# RoPE, d = 128, base 10^4: mean score of random queries against their own copy r positions back.
rng = np.random.default_rng(1810)
q = rng.normal(size=(1, 128, 1, 128))
copy = np.broadcast_to(q, (1, 128, distances.size, 128))
scores = rope_scores(q, copy, [span], distances[::-1])[0, :, 0].mean(axis=0) / 128

fig, (left, middle, right) = plt.subplots(1, 3, figsize=(10.5, 3.4))
for head in (0, 3, 7):
    left.plot(distances, bias[head], label=f"head {head + 1} of 8")
left.set_title("ALiBi: a linear penalty per head")
left.set_xlabel("distance r (keys back)")
left.set_ylabel("bias added to the logit")
left.legend(fontsize=8)
middle.plot(distances, buckets, color="C2")
middle.axvline(128, color="0.6", linewidth=0.8, linestyle="--")
middle.text(140, buckets.min() + 1, "max_distance = 128:\nevery farther key\nshares one bucket", fontsize=8)
middle.set_title("T5: log-spaced buckets, then one")
middle.set_xlabel("distance r (keys back)")
middle.set_ylabel("bucket index (one learned bias each)")
right.plot(distances, scores, color="C0")
right.axhline(0, color="0.8", linewidth=0.6)
right.set_title("RoPE: no penalty, a decaying match")
right.set_xlabel("distance r (keys back)")
right.set_ylabel("score of q with its copy / d")
fig.tight_layout()
