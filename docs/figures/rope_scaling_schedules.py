"""RoPE scaling schedules per pair index: scaled frequency / original for linear, NTK-aware, YaRN, Llama 3."""

import matplotlib.pyplot as plt
import numpy as np

from posenc_ref.rope_scaling import rope_inv_freq

dim, base, factor, original = 128, 500000.0, 8.0, 8192
default = rope_inv_freq(dim=dim, base=base)[0]
schedules = {
    "linear (position interpolation)": rope_inv_freq(dim=dim, base=base, rope_type="linear", factor=factor),
    "NTK-aware": rope_inv_freq(dim=dim, base=base, rope_type="ntk_aware", factor=factor),
    "YaRN": rope_inv_freq(dim=dim, base=base, rope_type="yarn", factor=factor, original_max_position=original),
    "Llama 3": rope_inv_freq(dim=dim, base=base, rope_type="llama3", factor=factor, original_max_position=original,
                             low_freq_factor=1.0, high_freq_factor=4.0),
}
pairs = np.arange(default.size)
fig, ax = plt.subplots(figsize=(7.0, 3.6))
for (name, (inv_freq, _, _)), style in zip(schedules.items(), ("-", "--", "-.", ":"), strict=True):
    ax.plot(pairs, inv_freq / default, style, linewidth=1.6, label=name)
ax.set_yscale("log", base=2)
ax.set_xlabel("pair index i (frequency falls with i)")
ax.set_ylabel("scaled / original frequency")
ax.set_title(f"factor {factor:g}, dim {dim}, base {base:g}, original context {original}")
ax.legend(fontsize=8)
