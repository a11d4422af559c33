"""mpmath twins of the 1-D sinusoid formulas (:mod:`posenc_ref.sinusoidal`).

Each column is *defined* here from the published formula, element by element, rather than
sliced as the NumPy reference does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import mpmath
import numpy as np
from numpy.typing import NDArray

from posenc_ref.oracle._common import Oracle, to_float64


def _column_rule(dim: int, layout: str, odd_width: str) -> tuple[int, list[tuple[str, int]]]:
    """For each column: ``("sin" | "cos" | "zero", frequency index)``, and the ladder width."""
    width = dim - 1 if (dim % 2 and odd_width == "zero_pad_last") else dim
    n_sin = (width + 1) // 2
    n_cos = width // 2
    rule: list[tuple[str, int]] = []
    for j in range(dim):
        if j >= width:
            rule.append(("zero", 0))
        elif layout == "interleaved":
            rule.append(("sin" if j % 2 == 0 else "cos", j // 2))
        elif layout == "concat_sin_cos":
            rule.append(("sin", j) if j < n_sin else ("cos", j - n_sin))
        else:
            rule.append(("cos", j) if j < n_cos else ("sin", j - n_cos))
    return width, rule


def _frequency(k: int, width: int, base: float, ladder: str) -> mpmath.mpf:
    n = (width + 1) // 2
    exponent = mpmath.mpf(2 * k) / width if ladder == "paper" else mpmath.mpf(k) / max(n - 1, 1)
    return mpmath.power(mpmath.mpf(base), -exponent)


def _sinusoid_rows(positions: NDArray[np.int64], dim: int, base: float, ladder: str, layout: str,
                   odd_width: str, scale: float = 1.0) -> NDArray[np.float64]:
    width, rule = _column_rule(dim, layout, odd_width)
    freqs = [_frequency(k, width, base, ladder) for k in range((width + 1) // 2)]
    out = np.empty(positions.shape + (dim,), dtype=np.float64)
    flat = out.reshape(-1, dim)
    for row, p in enumerate(positions.reshape(-1).tolist()):
        for j, (kind, k) in enumerate(rule):
            if kind == "zero":
                value = mpmath.mpf(0)
            else:
                angle = mpmath.mpf(p) * freqs[k]
                value = mpmath.sin(angle) if kind == "sin" else mpmath.cos(angle)
            flat[row, j] = to_float64(value * mpmath.mpf(scale))
    return out


def sinusoidal_table(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> dict[str, NDArray[Any]]:
    positions = np.asarray(inputs["positions"]).astype(np.int64) + int(params.get("position_offset", 0))
    return {"table": _sinusoid_rows(positions, int(params["dim"]), float(params["base"]), params["ladder"],
                                    params["layout"], params["odd_width"], float(params["scale"]))}


def fairseq(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> dict[str, NDArray[Any]]:
    tokens = np.asarray(inputs["tokens"]).tolist()
    pad = int(params["padding_idx"])
    past = int(params.get("past_length", 0))
    rows = []
    m2m100 = params.get("cache_rule", "fairseq") == "m2m100"
    for line in tokens:
        if past and not m2m100:
            rows.append([pad + past + 1 for _ in line])
            continue
        count, row = past if m2m100 else 0, []  # M2M100 counts on from the cache
        for token in line:
            if token == pad:
                row.append(pad)
            else:
                count += 1
                row.append(pad + count)
        rows.append(row)
    positions = np.array(rows, dtype=np.int64)
    table = _sinusoid_rows(positions, int(params["dim"]), float(params.get("base", 10000.0)), "t2t",
                           "concat_sin_cos", "zero_pad_last")
    table[positions == pad] = 0.0
    return {"positions": positions, "embedding": table}


ORACLES: Final[dict[str, Oracle]] = {
    "sinusoidal.table": sinusoidal_table,
    "sinusoidal.fairseq": fairseq,
}
