"""Convention diagnosis: when an output fails, find the known mistake it matches.

For a failing output the runner recomputes the case from its stored inputs under each known
alternative and reports every alternative the actual output matches (within the adapter's
own tolerance):

* every other value of each convention parameter of the op (``layout``, ``ladder``, ...) and
  the listed suspect values of other parameters (a table ``offset`` of 0 or 2, ...);
* positions shifted by +1 and -1 (off-by-one origins), for each position input;
* the reference computed with float32 intermediates (angles, logarithms; when the adapter
  claims float64) and with float16 intermediates, for ops that compute them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from posenc_ref.errors import SpecError
from posenc_ref.opspec import OpRecord
from posenc_ref.runner.emulation import EMULATIONS, emulate
from posenc_ref.tolerance import Dtype, compare, policy


def _alternatives(op: OpRecord, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]],
                  dtype: Dtype) -> Iterator[tuple[str, dict[str, Any], Mapping[str, Any], Dtype | None]]:
    """``(label, params, inputs, angle dtype)``; an angle dtype means the low-precision emulation."""
    for param in op.params:
        for value in (param.choices if param.is_convention else ()) + param.suspects:
            if param.name in params and value != params[param.name]:
                yield f"matches the reference under {param.name}={value!r}", {**params, param.name: value}, inputs, None
    groups = [op.position_inputs] + ([(name,) for name in op.position_inputs] if len(op.position_inputs) > 1 else [])
    for group in groups:
        for delta in (1, -1):
            shifted = {**inputs, **{name: np.asarray(inputs[name]) + delta for name in group}}
            label = "positions" if group == ("positions",) else " and ".join(group)
            sign = "+" if delta > 0 else "-"
            yield f"matches the reference with {label} {sign} 1 (off by one)", dict(params), shifted, None
    what = op.low_precision_intermediates
    if op.name in EMULATIONS and what:
        angle_dtypes: tuple[Dtype, ...] = ("float32", "float16") if dtype == "float64" else ("float16",)
        for angles in angle_dtypes:
            note = " (the adapter declares float64)" if angles == "float32" else ""
            yield f"matches the reference computed with {angles} {what}{note}", dict(params), inputs, angles


def diagnose(op: OpRecord, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]],
             failing: Mapping[str, NDArray[Any]], dtype: Dtype) -> list[str]:
    """Known mistakes that explain every failing output in ``failing`` (name -> actual array)."""
    found = []
    outputs = {out.name: out for out in op.outputs}
    for label, cparams, cinputs, angles in _alternatives(op, params, inputs, dtype):
        try:
            if angles is None:
                candidate = op.call(cparams, cinputs)
            else:
                candidate = emulate(op.name, cparams, cinputs, output_dtype="float32", angle_dtype=angles)
        except (SpecError, ValueError, TypeError, FloatingPointError):
            continue
        matched = True
        for name, actual in failing.items():
            out = outputs[name]
            expected = np.asarray(candidate[name])
            if expected.shape != actual.shape:
                matched = False
                break
            phase = out.phase(cparams, cinputs) if out.phase else None
            scale = out.input_scale(cparams, cinputs) if out.input_scale else None
            with np.errstate(all="ignore"):
                if not compare(actual, expected, policy(out.tolerance, dtype), phase, scale).passed:
                    matched = False
                    break
        if matched:
            found.append(label)
    return found
