"""mpmath twins of the relative-position ops and of table resampling.

Every element is a sum written from the published definition, one term at a time, summed
exactly (``mpmath.fsum`` at the oracle's precision) and rounded once. Table rows are found from
each pair's distance with Python integers; the shifts are read off the row-major layout of the
padded matrix, element by element. Resampling weights are computed per output sample from the
kernel formula in exact arithmetic, never rounded before the final sum.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final

import mpmath
import numpy as np
from numpy.typing import NDArray

from posenc_ref.oracle._common import Oracle, to_float64

Inputs = Mapping[str, NDArray[Any]]


def _rows(array: Any) -> list[list[mpmath.mpf]]:
    return [[mpmath.mpf(float(x)) for x in row] for row in np.asarray(array, dtype=np.float64).tolist()]


def _shaw_row(qp: int, kp: int, k: int, sign: str) -> int:
    distance = kp - qp if sign == "key_minus_query" else qp - kp
    return max(-k, min(k, distance)) + k


def shaw_index(params: Mapping[str, Any], inputs: Inputs) -> dict[str, NDArray[Any]]:
    k, sign = int(params["max_relative_position"]), params["sign"]
    qs, ks = np.asarray(inputs["q_positions"]).tolist(), np.asarray(inputs["k_positions"]).tolist()
    return {"index": np.array([[_shaw_row(a, b, k, sign) for b in ks] for a in qs], dtype=np.int64)}


def shaw_logits(params: Mapping[str, Any], inputs: Inputs) -> dict[str, NDArray[Any]]:
    k, sign = int(params["max_relative_position"]), params["sign"]
    q, keys, table = _rows(inputs["q"]), _rows(inputs["k"]), _rows(inputs["rel_keys"])
    qs, ks = np.asarray(inputs["q_positions"]).tolist(), np.asarray(inputs["k_positions"]).tolist()
    out = np.empty((len(qs), len(ks)))
    for i, qp in enumerate(qs):
        for j, kp in enumerate(ks):
            rel = table[_shaw_row(qp, kp, k, sign)]
            out[i, j] = to_float64(mpmath.fsum(q[i][d] * (keys[j][d] + rel[d]) for d in range(len(q[i]))))
    return {"logits": out}


def shaw_output(params: Mapping[str, Any], inputs: Inputs) -> dict[str, NDArray[Any]]:
    k, sign = int(params["max_relative_position"]), params["sign"]
    alpha, values, table = _rows(inputs["weights"]), _rows(inputs["v"]), _rows(inputs["rel_values"])
    qs, ks = np.asarray(inputs["q_positions"]).tolist(), np.asarray(inputs["k_positions"]).tolist()
    dim = len(values[0])
    out = np.empty((len(qs), dim))
    for i, qp in enumerate(qs):
        for d in range(dim):
            out[i, d] = to_float64(mpmath.fsum(
                alpha[i][j] * (values[j][d] + table[_shaw_row(qp, kp, k, sign)][d]) for j, kp in enumerate(ks)))
    return {"output": out}


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


def _kernel(x: mpmath.mpf, kernel: str, a: mpmath.mpf) -> mpmath.mpf:
    ax = abs(x)
    if kernel == "bilinear":
        return max(mpmath.mpf(0), 1 - ax)
    if ax <= 1:
        return (a + 2) * ax**3 - (a + 3) * ax**2 + 1
    if ax < 2:
        return a * ax**3 - 5 * a * ax**2 + 8 * a * ax - 4 * a
    return mpmath.mpf(0)


def _weights(n: int, new: int, params: Mapping[str, Any]) -> list[dict[int, mpmath.mpf]]:
    """Per output sample, ``{input index: exact weight}``."""
    kernel, a = params["kernel"], mpmath.mpf(float(params["cubic_a"]))
    if params["size_from"] == "size":
        m, scale = new, mpmath.mpf(n) / new
    else:
        factor = mpmath.mpf(new + float(params["scale_offset"])) / n
        m = math.floor(float(n) * ((new + float(params["scale_offset"])) / n))  # the size, as defined in float64
        scale = 1 / factor
    if params["coordinates"] == "align_corners":
        scale = mpmath.mpf(n - 1) / (m - 1) if m > 1 else mpmath.mpf(0)
    rows: list[dict[int, mpmath.mpf]] = []
    for o in range(m):
        row: dict[int, mpmath.mpf] = {}
        if params["antialias"] == "on":
            stretch = max(scale, mpmath.mpf(1))
            support = (2 if kernel == "bicubic" else 1) * stretch
            centre = scale * (o + mpmath.mpf(0.5))
            lo, hi = max(int(centre - support + 0.5), 0), min(int(centre + support + 0.5), n)
            raw = {k: _kernel((k + mpmath.mpf(0.5) - centre) / stretch, kernel, a) for k in range(lo, hi)}
            total = mpmath.fsum(raw.values())
            row = {k: w / total for k, w in raw.items()}
        else:
            half = mpmath.mpf(0.5)
            x = scale * o if params["coordinates"] == "align_corners" else scale * (o + half) - half
            if kernel == "bilinear" and x < 0:
                x = mpmath.mpf(0)
            first = int(mpmath.floor(x))
            for tap in (range(first, first + 2) if kernel == "bilinear" else range(first - 1, first + 3)):
                index = min(max(tap, 0), n - 1)
                row[index] = row.get(index, mpmath.mpf(0)) + _kernel(x - tap, kernel, a)
        rows.append(row)
    return rows


def resample_weights(params: Mapping[str, Any], inputs: Inputs) -> dict[str, NDArray[Any]]:
    n = int(params["in_size"])
    rows = _weights(n, int(params["new_size"]), params)
    return {"weights": np.array([[to_float64(row.get(k, 0)) for k in range(n)] for row in rows])}


def resample_table_1d(params: Mapping[str, Any], inputs: Inputs) -> dict[str, NDArray[Any]]:
    table = np.asarray(inputs["table"], dtype=np.float64)
    prefix = int(params["num_prefix_tokens"])
    body = _rows(table[prefix:])
    rows = _weights(len(body), int(params["new_length"]), params)
    out = [[to_float64(mpmath.fsum(w * body[k][d] for k, w in row.items())) for d in range(table.shape[1])]
           for row in rows]
    return {"table": np.concatenate([table[:prefix], np.array(out).reshape(len(rows), table.shape[1])])}


def resample_grid_2d(params: Mapping[str, Any], inputs: Inputs) -> dict[str, NDArray[Any]]:
    table = np.asarray(inputs["table"], dtype=np.float64)
    prefix, height, width = int(params["num_prefix_tokens"]), int(params["grid_height"]), int(params["grid_width"])
    body = _rows(table[prefix:])
    along_h = _weights(height, int(params["new_height"]), params)
    along_w = _weights(width, int(params["new_width"]), params)
    out = []
    for row_h in along_h:
        for row_w in along_w:
            out.append([to_float64(mpmath.fsum(wh * ww * body[h * width + w][d]
                                               for h, wh in row_h.items() for w, ww in row_w.items()))
                        for d in range(table.shape[1])])
    return {"table": np.concatenate([table[:prefix], np.array(out).reshape(len(out), table.shape[1])])}


ORACLES: Final[dict[str, Oracle]] = {
    "shaw.index": shaw_index,
    "shaw.logits": shaw_logits,
    "shaw.output": shaw_output,
    "transformer_xl.score": xl_score,
    "transformer_xl.rel_shift": rel_shift,
    "resample.weights": resample_weights,
    "resample.table_1d": resample_table_1d,
    "resample.grid_2d": resample_grid_2d,
}
