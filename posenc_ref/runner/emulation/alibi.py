"""Low-precision emulations of the ALiBi ops (calibration only; see the package docs).

Slopes as BLOOM/Falcon build them (transformers 5.24 ``build_alibi_tensor``): a float32 base
``2**(-b/c)`` raised to integer powers with ``pow``, the extra heads from the base
``2**(-b/(2c))``; the geometric rule as ``exp2`` of a float32 exponent. The bias is the float32
slope times the float32 distance. The transcendental steps run in the angle dtype (float32;
float16 for the known-bad point). Which distance each form multiplies is read off the float64
reference, never restated here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from posenc_ref import alibi
from posenc_ref.runner.emulation._common import Emulation


def _slopes(params: Mapping[str, Any], at: type) -> NDArray[Any]:
    heads = int(params["num_heads"])
    bias_max = float(params.get("bias_max", 8.0))
    if params.get("slope_rule", "press") == "geometric":
        exponent = at(bias_max) * np.arange(1, heads + 1).astype(at) / at(heads)
        geometric: NDArray[Any] = np.exp2(-exponent).astype(at)
        return geometric
    closest = 1 << (heads.bit_length() - 1)
    base = at(2.0 ** (-bias_max / closest))
    slopes: NDArray[Any] = np.power(base, np.arange(1, closest + 1).astype(at))
    if closest != heads:
        extra = at(2.0 ** (-bias_max / (2 * closest)))
        slopes = np.concatenate([slopes, np.power(extra, np.arange(1, 2 * (heads - closest), 2).astype(at))])
    result: NDArray[Any] = slopes.astype(at)
    return result


def _alibi_slopes(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]], ct: type,
                  at: type) -> dict[str, NDArray[Any]]:
    alibi.alibi_slopes(**params)  # the reference's validation and errors
    return {"slopes": _slopes(params, at).astype(ct)}


def _alibi_bias(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]], ct: type,
                at: type) -> dict[str, NDArray[Any]]:
    alibi.alibi_bias(inputs["query_positions"], inputs["key_positions"], **params)  # validation and errors
    unit = {**params, "num_heads": 1, "slope_rule": "press", "bias_max": 1.0}  # one head of slope 1/2
    signed = 2.0 * alibi.alibi_bias(inputs["query_positions"], inputs["key_positions"], **unit)  # (..., 1, Tq, Tk)
    slopes: NDArray[Any] = _slopes(params, at).astype(ct)
    return {"bias": slopes[:, None, None] * signed.astype(ct)}


def _mask_positions(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]], ct: type,
                    at: type) -> dict[str, NDArray[Any]]:
    return {"positions": alibi.alibi_mask_positions(inputs["attention_mask"])}


EMULATIONS: Final[dict[str, Emulation]] = {
    "alibi.slopes": _alibi_slopes,
    "alibi.bias": _alibi_bias,
    "alibi.mask_positions": _mask_positions,
}
