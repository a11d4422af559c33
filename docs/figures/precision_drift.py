"""Error of low-precision angle computation against position, from the runner's emulations."""

import matplotlib.pyplot as plt
import numpy as np

from posenc_ref import sinusoidal_table
from posenc_ref.runner.emulation import emulate
from posenc_ref.tolerance import policy

params = {"dim": 64, "base": 10000.0, "ladder": "t2t", "layout": "concat_sin_cos", "odd_width": "error",
          "position_offset": 0, "scale": 1.0}
positions = np.unique(np.geomspace(1, 60000, 400).astype(np.int64))
reference = sinusoidal_table(positions, **params)
runs = (("float32", "float32", "float32 angles, float32 out"),
        ("float32", "bfloat16", "float32 angles, bfloat16 out"),
        ("float16", "float16", "float16 angles, float16 out"))

fig, ax = plt.subplots(figsize=(7.0, 3.4))
for angle_dtype, output_dtype, label in runs:
    table = emulate("sinusoidal.table", params, {"positions": positions},
                    output_dtype=output_dtype, angle_dtype=angle_dtype)["table"]
    error = np.abs(table.astype(np.float64) - reference).max(axis=1)
    ax.loglog(positions, np.maximum(error, 1e-12), label=label, linewidth=1.0)
allowed = policy("phase", "float32").allowed(np.ones_like(positions, dtype=np.float64), positions.astype(np.float64))
ax.loglog(positions, allowed, "k--", linewidth=0.8, label="float32 phase tolerance at |theta| = p (w_0 = 1)")
ax.set_xlabel("position p")
ax.set_ylabel("max |error| over the row")
ax.set_title('sinusoidal.table, dim=64, t2t / concat_sin_cos: error against the float64 reference')
ax.legend(fontsize=7)
