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

from posenc_ref.oracle import (
    alibi,
    attention,
    attention_positional,
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
from posenc_ref.oracle._common import DPS, Oracle, OracleTable, to_float64

ORACLES: Final[dict[str, Oracle]] = OracleTable({
    **sinusoidal.ORACLES,
    **grid2d.ORACLES,
    **learned.ORACLES,
    **attention.ORACLES,
    **attention_positional.ORACLES,
    **shaw.ORACLES,
    **transformer_xl.ORACLES,
    **resample.ORACLES,
    **rope.ORACLES,
    **alibi.ORACLES,
    **t5.ORACLES,
    **deberta.ORACLES,
    **models.ORACLES,
})

__all__ = ["DPS", "ORACLES", "Oracle", "expected", "to_float64"]


def expected(op_name: str, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]], *,
             dps: int = DPS) -> dict[str, NDArray[Any]]:
    """The oracle's outputs for ``op_name`` at ``dps`` digits (the corpus: :data:`DPS`); ``KeyError`` for no oracle.

    ``golden audit`` passes twice the digits to check that every stored value is correctly rounded.
    """
    with mpmath.workdps(dps):
        return ORACLES[op_name](params, inputs)
