"""mpmath twins of the attention pass and the one-layer pipeline.

Written row by row from the formula: every logit is a sum of exact products of the stored
float64 inputs, the softmax is ``exp(s_j - max) / sum`` at :data:`~posenc_ref.oracle.DPS`
digits, every output element is ``sum_j p_j v_j``; each is rounded once to float64. The mask
rules are restated here from the spec text (key ``j`` is kept by the causal rule iff
``j <= i + offset``, by the window iff the aligned distance is below ``W``), not imported.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import mpmath
import numpy as np
from numpy.typing import NDArray

from posenc_ref.oracle._common import Oracle, to_float64

Row = list[Any]


def _kept(i: int, j: int, tq: int, tk: int, params: Mapping[str, Any]) -> bool:
    offset = tk - tq if params["alignment"] == "bottom_right" else 0
    ahead = (i + offset) - j  # how far key j lies behind the aligned query
    if params["causal"] and ahead < 0:
        return False
    window = params["window"]
    if window is not None and (ahead >= window or (not params["causal"] and -ahead >= window)):
        return False
    return True


def _softmax_row(logits: list[Any]) -> list[Any] | None:
    """Weights of one row (``None`` marks removed keys in ``logits``); ``None`` when nothing is kept."""
    kept = [s for s in logits if s is not None]
    if not kept:
        return None
    top = max(kept)
    exps = [mpmath.exp(s - top) if s is not None else mpmath.mpf(0) for s in logits]
    total = mpmath.fsum(exps)
    return [e / total for e in exps]


def _at(values: Any, index: tuple[int, ...]) -> Any:
    """One element of a stored float64 array, or of a function of the index returning an mpf."""
    return values(*index) if callable(values) else mpmath.mpf(float(values[index]))


def _attend(q: Any, k: Any, v: Any, params: Mapping[str, Any], keep: Any = None, additive: Any = None,
            bias: Any = None, term: Any = None, value_term: Any = None) -> tuple[Any, Any]:
    """Nested lists of mpf: q [b][h][i][d], k/v [b][g][j][d]; returns (output, weights), ``None`` rows for empty.

    ``term`` [b, h, i, j] joins the dot product inside the scale; ``value_term`` [b, h, i, j, d]
    joins value ``j`` under the weights; ``bias`` [b, h, i, j] joins the scaled logit. Each is a
    float64 array or a function of the index returning an mpf.
    """
    b_size, h_size, tq = len(q), len(q[0]), len(q[0][0])
    hkv, tk, dim = len(k[0]), len(k[0][0]), len(k[0][0][0])
    group = h_size // hkv
    scale = mpmath.mpf(params["scale"]) if params["scale"] is not None else 1 / mpmath.sqrt(dim)
    scale *= mpmath.mpf(params.get("softmax_multiplier", 1.0))
    out: list[Any] = []
    weights: list[Any] = []
    for b in range(b_size):
        out_b: list[Any] = []
        w_b: list[Any] = []
        for h in range(h_size):
            g = h // group
            out_h: list[Any] = []
            w_h: list[Any] = []
            for i in range(tq):
                logits: list[Any] = []
                for j in range(tk):
                    if not _kept(i, j, tq, tk, params) or (keep is not None and not keep[b, h, i, j]):
                        logits.append(None)
                        continue
                    if additive is not None and additive[b, h, i, j] == -np.inf:
                        logits.append(None)
                        continue
                    dot = mpmath.fsum(q[b][h][i][d] * k[b][g][j][d] for d in range(dim))
                    if term is not None:
                        dot += _at(term, (b, h, i, j))
                    s = scale * dot
                    if bias is not None:
                        s += _at(bias, (b, h, i, j))
                    if additive is not None:
                        s += mpmath.mpf(float(additive[b, h, i, j]))
                    logits.append(s)
                p = _softmax_row(logits)
                if p is None:
                    out_h.append(None)
                    w_h.append(None)
                    continue
                if value_term is None:
                    out_h.append([mpmath.fsum(p[j] * v[b][g][j][d] for j in range(tk)) for d in range(dim)])
                else:
                    out_h.append([mpmath.fsum(p[j] * (v[b][g][j][d] + _at(value_term, (b, h, i, j, d)))
                                              for j in range(tk)) for d in range(dim)])
                w_h.append(p)
            out_b.append(out_h)
            w_b.append(w_h)
        out.append(out_b)
        weights.append(w_b)
    return out, weights


def _mp(array: NDArray[Any]) -> Any:
    return [_mp(a) for a in array] if array.ndim else mpmath.mpf(float(array))


def _round(rows: Any, shape: tuple[int, ...], empty: Any) -> NDArray[np.float64]:
    """Round nested mpf lists once; ``None`` rows take ``empty(b, h)`` (a list of floats)."""
    out = np.empty(shape, dtype=np.float64)
    for b in range(shape[0]):
        for h in range(shape[1]):
            for i in range(shape[2]):
                row = rows[b][h][i]
                out[b, h, i] = empty(b, h) if row is None else [to_float64(x) for x in row]
    return out


def attention(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> dict[str, NDArray[Any]]:
    q, k, v = (np.asarray(inputs[n], dtype=np.float64) for n in ("q", "k", "v"))
    b, h, tq, dim = q.shape
    tk = k.shape[2]
    full = (b, h, tq, tk)
    mask = np.asarray(inputs["mask"])
    keep = np.broadcast_to(mask, full) if mask.dtype == bool else None
    additive = None if mask.dtype == bool else np.broadcast_to(mask.astype(np.float64), full)
    padding = np.broadcast_to(np.asarray(inputs["key_padding_mask"])[:, None, None, :], full)
    keep = padding if keep is None else keep & padding
    bias = np.broadcast_to(np.asarray(inputs["bias"], dtype=np.float64), full)
    out, weights = _attend(_mp(q), _mp(k), _mp(v), params, keep, additive, bias)
    policy = params["fully_masked"]
    group = h // k.shape[1]

    def empty_out(bi: int, hi: int) -> list[float]:
        if policy == "nan":
            return [float("nan")] * dim
        if policy == "uniform":
            values = v[bi, hi // group]
            return [to_float64(mpmath.fsum(mpmath.mpf(float(values[j, d])) for j in range(tk)) / tk)
                    for d in range(dim)]
        return [0.0] * dim

    def empty_weights(bi: int, hi: int) -> list[float]:
        fill = {"nan": float("nan"), "uniform": to_float64(mpmath.mpf(1) / tk)}.get(policy, 0.0)
        return [fill] * tk

    return {"output": _round(out, (b, h, tq, dim), empty_out),
            "weights": _round(weights, full, empty_weights)}


def pipeline(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> dict[str, NDArray[Any]]:
    tokens = np.asarray(inputs["tokens"]).tolist()
    table, pe = np.asarray(inputs["embedding"]), np.asarray(inputs["pe"])
    w = {n: _mp(np.asarray(inputs[n])) for n in ("w_q", "w_k", "w_v", "w_o")}
    heads = int(params["num_heads"])
    kv_heads = int(params["num_kv_heads"] or heads)
    width = table.shape[1]
    head_dim = len(w["w_q"][0]) // heads
    b_size, t = len(tokens), len(tokens[0])
    pe_rows = pe if pe.ndim == 3 else np.broadcast_to(pe, (b_size,) + pe.shape)

    def project(x: list[Any], matrix: Any, n_heads: int) -> list[Any]:
        """x [t][c] @ matrix -> [head][t][d] with head h owning columns h*D .. h*D + D - 1."""
        return [[[mpmath.fsum(x[ti][c] * matrix[c][hh * head_dim + d] for c in range(width))
                  for d in range(head_dim)] for ti in range(t)] for hh in range(n_heads)]

    q, k, v = [], [], []
    for bi in range(b_size):
        x = [[mpmath.mpf(float(table[tokens[bi][ti], c]))
              + (mpmath.mpf(float(pe_rows[bi, ti, c])) if params["pe_placement"] == "input" else 0)
              for c in range(width)] for ti in range(t)]
        q.append(project(x, w["w_q"], heads))
        k.append(project(x, w["w_k"], kv_heads))
        v.append(project(x, w["w_v"], kv_heads))
    attn_params = {"scale": None, "causal": params["causal"], "alignment": "bottom_right", "window": None}
    out, _ = _attend(q, k, v, attn_params)
    result = np.empty((b_size, t, width), dtype=np.float64)
    for bi in range(b_size):
        for ti in range(t):
            merged = [out[bi][hh][ti][d] for hh in range(heads) for d in range(head_dim)]
            for c in range(width):
                y = mpmath.fsum(merged[m] * w["w_o"][m][c] for m in range(heads * head_dim))
                if params["pe_placement"] == "after_block":
                    y += mpmath.mpf(float(pe_rows[bi, ti, c]))
                result[bi, ti, c] = to_float64(y)
    return {"output": result}


def terms(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> dict[str, NDArray[Any]]:
    q, k, v = (np.asarray(inputs[n], dtype=np.float64) for n in ("q", "k", "v"))
    b, h, tq, dim = q.shape
    tk = k.shape[2]
    term = np.broadcast_to(np.asarray(inputs["term"], dtype=np.float64), (b, h, tq, tk))
    value_term = np.broadcast_to(np.asarray(inputs["value_term"], dtype=np.float64), (b, h, tq, tk, dim))
    full = {"window": None, **params}
    out, weights = _attend(_mp(q), _mp(k), _mp(v), full, term=term, value_term=value_term)
    return {"output": _round(out, (b, h, tq, dim), lambda bi, hi: [0.0] * dim),
            "weights": _round(weights, (b, h, tq, tk), lambda bi, hi: [0.0] * tk)}


ORACLES: Final[dict[str, Oracle]] = {
    "attention": attention,
    "attention.terms": terms,
    "attention.pipeline": pipeline,
}
