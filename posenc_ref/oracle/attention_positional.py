"""mpmath twins of attention with each positional scheme plugged in.

Each scheme's quantity is computed element by element from its definition and fed, unrounded,
into the attention twin (:func:`posenc_ref.oracle.attention._attend`):

* RoPE: every (D,) row of q and k rotated pair by pair as a complex product at its own
  position (the RoPE oracle's ``_rotate_row``), then the scores of the rotated rows.
* ALiBi: ``slope_h * distance(i, j)`` with the slope ``2**-x`` from the exact exponent and the
  distance of the form, from the stored positions (the ALiBi oracle's helpers).
* T5: ``table[bucket(k_j - q_i), h]`` with the bucket decided in exact arithmetic.
* Shaw: ``q_i . A^K[clip(d_ij, -K, K) + K]`` inside the scale and ``A^V[...]`` under the weights.
* Transformer-XL: ``u_h . k_j + (q_i + v_h) . (R_{p_i - p_j} W_{R,h})`` with ``R`` in mpmath.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import mpmath
import numpy as np
from numpy.typing import NDArray

from posenc_ref.oracle import alibi, rope, shaw, t5, transformer_xl
from posenc_ref.oracle._common import Oracle, _rows
from posenc_ref.oracle.attention import _attend, _mp, _round

Inputs = Mapping[str, NDArray[Any]]


def _arrays(inputs: Inputs) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    q, k, v = (np.asarray(inputs[n], dtype=np.float64) for n in ("q", "k", "v"))
    return q, k, v


def _positions(inputs: Inputs, name: str, batch: int) -> list[list[int]]:
    """Positions per batch row: [b][t]."""
    pos = np.asarray(inputs[name]).astype(np.int64)
    rows = pos.reshape(-1, pos.shape[-1]).tolist()
    return [rows[b if len(rows) > 1 else 0] for b in range(batch)]


def _params(params: Mapping[str, Any]) -> dict[str, Any]:
    return {"window": None, **params}


def _finish(out: Any, weights: Any, q: NDArray[Any], tk: int) -> dict[str, NDArray[Any]]:
    b, h, tq, dim = q.shape
    return {"output": _round(out, (b, h, tq, dim), lambda bi, hi: [0.0] * dim),
            "weights": _round(weights, (b, h, tq, tk), lambda bi, hi: [0.0] * tk)}


def rope_attention(params: Mapping[str, Any], inputs: Inputs) -> dict[str, NDArray[Any]]:
    q, k, v = _arrays(inputs)
    qp, kp = _positions(inputs, "q_positions", q.shape[0]), _positions(inputs, "k_positions", q.shape[0])
    settings = {"base": params["base"], "layout": params["layout"], "rotary_dim": None, "partial": "prefix",
                "attention_factor": 1.0}
    q_rot = [[[rope._rotate_row(q[b, h, i].tolist(), qp[b][i], settings) for i in range(q.shape[2])]
              for h in range(q.shape[1])] for b in range(q.shape[0])]
    k_rot = [[[rope._rotate_row(k[b, h, j].tolist(), kp[b][j], settings) for j in range(k.shape[2])]
              for h in range(k.shape[1])] for b in range(k.shape[0])]
    out, weights = _attend(q_rot, k_rot, _mp(v), _params(params))
    return _finish(out, weights, q, k.shape[2])


def alibi_attention(params: Mapping[str, Any], inputs: Inputs) -> dict[str, NDArray[Any]]:
    q, k, v = _arrays(inputs)
    qp, kp = _positions(inputs, "q_positions", q.shape[0]), _positions(inputs, "k_positions", q.shape[0])
    tq, tk = q.shape[2], k.shape[2]
    slopes = [alibi._slope(x) for x in alibi._exponents(
        {"num_heads": q.shape[1], "bias_max": 8.0, "slope_rule": "press"})]

    def bias(b: int, h: int, i: int, j: int) -> Any:
        return slopes[h] * alibi._distance(params["form"], qp[b][i], kp[b][j], tq, tk)

    out, weights = _attend(_mp(q), _mp(k), _mp(v), _params(params), bias=bias)
    return _finish(out, weights, q, tk)


def t5_attention(params: Mapping[str, Any], inputs: Inputs) -> dict[str, NDArray[Any]]:
    q, k, v = _arrays(inputs)
    qp, kp = _positions(inputs, "q_positions", q.shape[0]), _positions(inputs, "k_positions", q.shape[0])
    table = np.asarray(inputs["table"], dtype=np.float64)
    buckets, limit, direction = int(params["num_buckets"]), int(params["max_distance"]), params["direction"]

    def bias(b: int, h: int, i: int, j: int) -> Any:
        return mpmath.mpf(float(table[t5._t5_one(kp[b][j] - qp[b][i], buckets, limit, direction), h]))

    out, weights = _attend(_mp(q), _mp(k), _mp(v), _params(params), bias=bias)
    return _finish(out, weights, q, k.shape[2])


def shaw_attention(params: Mapping[str, Any], inputs: Inputs) -> dict[str, NDArray[Any]]:
    q, k, v = _arrays(inputs)
    qp, kp = _positions(inputs, "q_positions", 1)[0], _positions(inputs, "k_positions", 1)[0]
    clip, sign = int(params["max_relative_position"]), params["sign"]
    a_k, a_v = _rows(inputs["rel_keys"]), _rows(inputs["rel_values"])
    q_mp = _mp(q)

    def term(b: int, h: int, i: int, j: int) -> Any:
        row = a_k[shaw._shaw_row(qp[i], kp[j], clip, sign)]
        return mpmath.fsum(q_mp[b][h][i][d] * row[d] for d in range(len(row)))

    def value_term(b: int, h: int, i: int, j: int, d: int) -> Any:
        return a_v[shaw._shaw_row(qp[i], kp[j], clip, sign)][d]

    out, weights = _attend(q_mp, _mp(k), _mp(v), _params(params), term=term, value_term=value_term)
    return _finish(out, weights, q, k.shape[2])


def xl_attention(params: Mapping[str, Any], inputs: Inputs) -> dict[str, NDArray[Any]]:
    q, k, v = _arrays(inputs)
    qp, kp = _positions(inputs, "q_positions", 1)[0], _positions(inputs, "k_positions", 1)[0]
    u, vb, w_r = _mp(np.asarray(inputs["u_bias"])), _mp(np.asarray(inputs["v_bias"])), _mp(np.asarray(inputs["w_r"]))
    heads, dim = q.shape[1], q.shape[3]
    group = heads // k.shape[1]
    dim_r = len(w_r[0])
    q_mp, k_mp = _mp(q), _mp(k)
    projected: dict[tuple[int, int], list[Any]] = {}

    def r(h: int, delta: int) -> list[Any]:
        """``R_delta W_{R,h}``, (D,)."""
        if (h, delta) not in projected:
            row = transformer_xl._xl_r(delta, dim_r, float(params["base"]))
            projected[h, delta] = [mpmath.fsum(row[c] * w_r[h][c][d] for c in range(dim_r)) for d in range(dim)]
        return projected[h, delta]

    def term(b: int, h: int, i: int, j: int) -> Any:
        rel = r(h, qp[i] - kp[j])
        key = k_mp[b][h // group][j]
        return mpmath.fsum(u[h][d] * key[d] + (q_mp[b][h][i][d] + vb[h][d]) * rel[d] for d in range(dim))

    out, weights = _attend(q_mp, k_mp, _mp(v), _params(params), term=term)
    return _finish(out, weights, q, k.shape[2])


ORACLES: Final[dict[str, Oracle]] = {
    "attention.rope": rope_attention,
    "attention.alibi": alibi_attention,
    "attention.t5": t5_attention,
    "attention.shaw": shaw_attention,
    "attention.xl": xl_attention,
}
