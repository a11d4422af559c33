"""Mutants of the ALiBi ops (see :mod:`posenc_ref.runner.mutants`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from posenc_ref import alibi
from posenc_ref.registry import get_op
from posenc_ref.runner.emulation import round_bfloat16
from posenc_ref.runner.mutants._common import Mutant, swap, with_params


def _alibi_bfloat16_slopes(op: str, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> Any:
    """Falcon's cast of the slopes to bfloat16 before the product, in a float32 pipeline."""
    reference = get_op(op).call(params, inputs)
    slopes = alibi.alibi_slopes(num_heads=params["num_heads"], slope_rule=params["slope_rule"],
                                bias_max=params["bias_max"])
    narrow = round_bfloat16(slopes.astype(np.float32)).astype(np.float64)
    if op == "alibi.slopes":
        return narrow.astype(np.float32)
    ratio = np.where(slopes > 0, narrow / slopes, 1.0)[:, None, None]
    return (reference["bias"] * ratio).astype(np.float32)


def _alibi_sign_flipped(op: str, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> Any:
    return -get_op(op).call(params, inputs)["bias"]


MUTANTS: Final[tuple[Mutant, ...]] = (
    Mutant("alibi-slopes-geometric", "paper-literal 2^(-8h/H) slopes for every H instead of the authors' rule",
           "ml-explore/mlx#343; baichuan-inc/Baichuan2#225; ofirpress/attention_with_linear_biases#17",
           ("alibi.slopes", "alibi.bias"), with_params(swap("slope_rule", {"press": "geometric"})),
           diagnosis="slope_rule="),
    Mutant("alibi-sign-flipped", "ALiBi bias added with the wrong sign (+m(i-j): far keys favoured)",
           "paiml/aprender#2143 class; mosaicml/llm-foundry#186", ("alibi.bias",), _alibi_sign_flipped),
    Mutant("alibi-bfloat16-slopes", "slopes rounded to bfloat16 before the product (HF Falcon) in a float32 model",
           "transformers modeling_falcon build_alibi_tensor; reference notes, convention 24",
           ("alibi.slopes", "alibi.bias"), _alibi_bfloat16_slopes, dtype="float32"),
)
