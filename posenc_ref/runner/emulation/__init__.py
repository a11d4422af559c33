"""The reference computed the way typical low-precision frameworks compute it (calibration only).

These emulations are not the spec; they exist to calibrate tolerances. Each rounds where a
PyTorch/JAX implementation rounds:

* frequencies as transformers builds ``inv_freq``: the exponent ``e_k`` rounded to the compute
  dtype, then ``1 / base ** e_k`` in the compute dtype;
* angles ``float(p) * w`` and ``sin``/``cos`` in the *angle dtype* (float32 for a correct
  implementation, float16 for the known-bad "float16 angles" one);
* the result rounded once to the output dtype (float32, float16 or bfloat16).

One module per scheme family; :data:`EMULATIONS` maps each op to its emulation.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from posenc_ref.runner.emulation import (
    alibi,
    attention,
    deberta,
    grid2d,
    learned,
    models,
    resample,
    rope,
    shaw,
    sinusoidal,
    t5,
    transformer_xl,
)
from posenc_ref.runner.emulation._common import Emulation, NameTable, UnknownKey, round_bfloat16, to_dtype
from posenc_ref.tolerance import Dtype

EMULATIONS: Final[NameTable[Emulation]] = NameTable({
    **sinusoidal.EMULATIONS,
    **grid2d.EMULATIONS,
    **learned.EMULATIONS,
    **attention.EMULATIONS,
    **shaw.EMULATIONS,
    **transformer_xl.EMULATIONS,
    **resample.EMULATIONS,
    **rope.EMULATIONS,
    **alibi.EMULATIONS,
    **t5.EMULATIONS,
    **deberta.EMULATIONS,
    **models.EMULATIONS,
}, "runner.emulation.EMULATIONS (op)")

__all__ = ["EMULATIONS", "NameTable", "UnknownKey", "emulate", "round_bfloat16", "to_dtype"]


def emulate(op: str, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]], *,
            output_dtype: Dtype, angle_dtype: Dtype) -> dict[str, NDArray[Any]]:
    """Run ``op`` computing in float32 (angles in ``angle_dtype``), rounded to ``output_dtype``."""
    ct = np.float32
    at = np.float16 if angle_dtype == "float16" else np.float32
    with np.errstate(over="ignore", invalid="ignore"):  # float16 angles overflow past 65504: by design
        outputs = EMULATIONS[op](params, inputs, ct, at)
    return {k: v if v.dtype.kind in "iu" else to_dtype(v, output_dtype) for k, v in outputs.items()}
