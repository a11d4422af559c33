"""The independent oracle: mpmath twins of the reference formulas.

Every expected float in the golden corpus comes from here, computed with mpmath at
:data:`DPS` significant digits and rounded once, to nearest, to float64. The twins are written
element by element from the published formula (a column is *defined* here, not sliced), so a
slip in the vectorised NumPy reference shows up as a disagreement instead of being copied into
the corpus. Integer outputs are recomputed with plain Python integers.

One module per scheme family; :data:`ORACLES` maps every registered op to its twin. Only this
package and :mod:`posenc_ref.derivations` import mpmath or sympy.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import mpmath
from numpy.typing import NDArray

from posenc_ref.oracle import absolute, attention, attention_positional, bias, models, relative, rope
from posenc_ref.oracle._common import DPS, Oracle, to_float64

ORACLES: Final[dict[str, Oracle]] = {
    **absolute.ORACLES,
    **attention.ORACLES,
    **attention_positional.ORACLES,
    **relative.ORACLES,
    **rope.ORACLES,
    **bias.ORACLES,
    **models.ORACLES,
}

__all__ = ["DPS", "ORACLES", "Oracle", "expected", "to_float64"]


def expected(op_name: str, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> dict[str, NDArray[Any]]:
    """The oracle's outputs for ``op_name``; ``KeyError`` when the op has no oracle."""
    with mpmath.workdps(DPS):
        return ORACLES[op_name](params, inputs)
