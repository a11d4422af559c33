"""T5's relative-position buckets: exact near zero, logarithmic up to max_distance, then constant."""

import matplotlib.pyplot as plt
import numpy as np

from posenc_ref.t5 import t5_bucket

num_buckets, max_distance = 32, 128
relative = np.arange(-2 * max_distance, 2 * max_distance + 1)  # key position - query position
fig, (left, right) = plt.subplots(1, 2, figsize=(7.6, 3.4), sharey=True)
for ax, direction in zip((left, right), ("bidirectional", "unidirectional"), strict=True):
    buckets = t5_bucket(relative, num_buckets=num_buckets, max_distance=max_distance, direction=direction)
    ax.step(relative, buckets, where="mid", linewidth=1.2)
    for edge in (-max_distance, max_distance):
        ax.axvline(edge, color="0.75", linewidth=0.8, linestyle="--")
    ax.set_title(f'direction="{direction}"', fontsize=9)
    ax.set_xlabel("relative position (key - query)")
left.set_ylabel(f"bucket (num_buckets={num_buckets})")
fig.suptitle("exact near 0, then logarithmic; the last bucket holds every distance from before "
             f"max_distance={max_distance} (dashed) on", fontsize=9, y=1.02)
