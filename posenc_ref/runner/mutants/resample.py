"""Mutants of the resampling ops (see :mod:`posenc_ref.runner.mutants`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from numpy.typing import NDArray

from posenc_ref.registry import get_op
from posenc_ref.runner.mutants._common import Mutant


def _bicubic_other_a(op: str, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> Any:
    other = -0.5 if float(params["cubic_a"]) == -0.75 else -0.75
    return get_op(op).call({**params, "cubic_a": other}, inputs)


MUTANTS: Final[tuple[Mutant, ...]] = (
    Mutant("bicubic-other-a", "Keys' cubic with the other a (-0.5 for -0.75 and back)",
           "Blaizzy/mlx-vlm#1243; apache/tvm#17932; pytorch/pytorch#19650",
           ("resample.weights", "resample.table_1d", "resample.grid_2d"), _bicubic_other_a,
           diagnosis="cubic_a="),
)
