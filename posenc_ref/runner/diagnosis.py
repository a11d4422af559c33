"""Convention diagnosis: when an output fails, find the known mistake it matches.

For a failing output the runner recomputes the case from its stored inputs under each known
alternative and reports every alternative the actual output matches (within the adapter's
own tolerance):

* every other value of each convention parameter of the op (``layout``, ``ladder``, ...);
* positions shifted by +1 and -1 (off-by-one origins), for each position input;
* the reference computed with float32 angles (when the adapter claims float64) and with
  float16 angles.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from posenc_ref.errors import SpecError
from posenc_ref.opspec import OpRecord
from posenc_ref.runner.emulation import EMULATIONS, emulate
from posenc_ref.tolerance import Dtype, compare, policy


def _alternatives(op: OpRecord, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]],
                  dtype: Dtype) -> Iterator[tuple[str, Callable[[], tuple[dict[str, Any], dict[str, Any], Mapping[str, Any]]]]]:
    for param in op.conventions:
        for value in param.choices:
            if param.name in params and value != params[param.name]:
                changed = {**params, param.name: value}
                yield f"matches the reference under {param.name}={value!r}", (
                    lambda changed=changed: (op.call(changed, inputs), changed, inputs))
    groups = [op.position_inputs] + ([(name,) for name in op.position_inputs] if len(op.position_inputs) > 1 else [])
    for group in groups:
        for delta in (1, -1):
            shifted = {**inputs, **{name: np.asarray(inputs[name]) + delta for name in group}}
            label = "positions" if group == ("positions",) else " and ".join(group)
            yield f"matches the reference with {label} {'+' if delta > 0 else '-'} 1 (off by one)", (
                lambda shifted=shifted: (op.call(params, shifted), dict(params), shifted))
    if op.name in EMULATIONS:
        angle_dtypes: tuple[Dtype, ...] = ("float32", "float16") if dtype == "float64" else ("float16",)
        for angles in angle_dtypes:
            note = " (the adapter declares float64)" if angles == "float32" else ""
            yield f"matches the reference computed with {angles} angles{note}", (
                lambda angles=angles: (emulate(op.name, params, inputs, output_dtype="float32", angle_dtype=angles),
                                       dict(params), inputs))


def diagnose(op: OpRecord, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]],
             failing: Mapping[str, NDArray[Any]], dtype: Dtype) -> list[str]:
    """Known mistakes that explain every failing output in ``failing`` (name -> actual array)."""
    found = []
    outputs = {out.name: out for out in op.outputs}
    for label, compute in _alternatives(op, params, inputs, dtype):
        try:
            candidate, cparams, cinputs = compute()
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
            with np.errstate(all="ignore"):
                if not compare(actual, expected, policy(out.tolerance, dtype), phase).passed:
                    matched = False
                    break
        if matched:
            found.append(label)
    return found
