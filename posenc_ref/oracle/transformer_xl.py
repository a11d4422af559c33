"""mpmath twins of the Transformer-XL / XLNet ops (:mod:`posenc_ref.transformer_xl`).

Every score is a sum written from the published definition, one term at a time, summed exactly
(``mpmath.fsum`` at the oracle's precision) and rounded once; the shifts are read off the
row-major layout of the padded matrix, element by element.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import mpmath
import numpy as np
from numpy.typing import NDArray

from posenc_ref.oracle._common import Inputs, Oracle, _rows, to_float64


def _xl_r(distance: int, dim_r: int, base: float) -> list[mpmath.mpf]:
    """R_delta = [sin(delta w_0) .. sin(delta w_{n-1}) | cos(delta w_0) .. cos(delta w_{n-1})]."""
    half = dim_r // 2
    freqs = [mpmath.power(mpmath.mpf(base), -mpmath.mpf(2 * c) / dim_r) for c in range(half)]
    return [mpmath.sin(distance * w) for w in freqs] + [mpmath.cos(distance * w) for w in freqs]


def xl_score(params: Mapping[str, Any], inputs: Inputs) -> dict[str, NDArray[Any]]:
    q, keys, w_r = _rows(inputs["q"]), _rows(inputs["k"]), _rows(inputs["w_r"])
    u, v = _rows([inputs["u"]])[0], _rows([inputs["v"]])[0]
    qs, ks = np.asarray(inputs["q_positions"]).tolist(), np.asarray(inputs["k_positions"]).tolist()
    clamp, dim, dim_r = int(params["clamp_len"]), len(u), len(w_r)
    projected: dict[int, list[mpmath.mpf]] = {}
    out = np.empty((len(qs), len(ks)))
    for i, qp in enumerate(qs):
        for j, kp in enumerate(ks):
            delta = qp - kp
            if clamp > 0:
                delta = max(-clamp, min(clamp, delta))
            if delta not in projected:
                rows = _xl_r(delta, dim_r, float(params["base"]))
                projected[delta] = [mpmath.fsum(rows[c] * w_r[c][d] for c in range(dim_r)) for d in range(dim)]
            r = projected[delta]
            out[i, j] = to_float64(mpmath.fsum(
                (q[i][d] + u[d]) * keys[j][d] + (q[i][d] + v[d]) * r[d] for d in range(dim)))
    return {"score": out}


def rel_shift(params: Mapping[str, Any], inputs: Inputs) -> dict[str, NDArray[Any]]:
    x = np.asarray(inputs["x"], dtype=np.float64)
    tq, rows = x.shape
    tk = int(params["k_len"])
    memory = tk - tq
    shifted = np.empty((tq, tk))
    valid = np.empty((tq, tk), dtype=np.int64)
    for i in range(tq):
        for j in range(tk):
            if params["variant"] == "transformer_xl":
                # padded (Tq, Tk+1) viewed flat; the first Tq entries dropped; element (i, j) of the rest
                flat = tq + i * tk + j
                r, c = divmod(flat, tk + 1)
                shifted[i, j] = 0.0 if c == 0 else x[r, c - 1]
                distance = tk - 1 - (c - 1)  # XL row c - 1 holds distance Tk - 1 - (c - 1)
            else:
                # x viewed flat; the first Tq entries dropped; rows of R - 1; element (i, j)
                flat = tq + i * (rows - 1) + j
                r, c = divmod(flat, rows)
                shifted[i, j] = x[r, c]
                distance = tk - c  # XLNet row c holds distance Tk - c
            valid[i, j] = int(r == i and (params["variant"] == "xlnet" or c != 0) and distance == memory + i - j)
    return {"shifted": shifted, "valid": valid}


ORACLES: Final[dict[str, Oracle]] = {
    "transformer_xl.score": xl_score,
    "transformer_xl.rel_shift": rel_shift,
}
