"""The ops as graphs of primitive ONNX operators (opset 21), the port side of the ONNX Runtime
adapter (:mod:`onnxruntime_graphs`): each ``build_*`` takes the graph and the checked NumPy
values and returns the feeds and outputs for :func:`onnx_graph._execute`. How each op is built is
described in :mod:`onnxruntime_graphs`.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

if str(Path(__file__).resolve().parent) not in sys.path:  # the shared helpers live next to this file
    sys.path.insert(0, str(Path(__file__).resolve().parent))
import posenc_adapter_checks as checks  # noqa: E402
from onnx_graph import I64, Feeds, Graph, Outs, TensorProto, _inputs_as, _int  # noqa: E402


def _table(g: Graph, rows: str, p: Mapping[str, Any]) -> str:
    """The sinusoidal table of int64 ``rows`` (..., ) -> (..., dim) in the compute dtype."""
    dim, odd = int(p["dim"]), int(p["dim"]) % 2 == 1
    width = dim - 1 if odd and p["odd_width"] == "zero_pad_last" else dim
    n = (width + 1) // 2
    n_cos = n - 1 if odd and p["odd_width"] == "sin_gets_extra" else n
    angles = g.op("Mul", g.unsqueeze_last(g.cast(rows, g.compute)), g.frequencies(width, p["base"], p["ladder"]))
    sin, cos = g.op("Sin", angles), g.op("Cos", angles)
    if n_cos < n:
        cos = g.last(cos, 0, n_cos)
    pieces: list[str]
    if p["layout"] == "interleaved":
        pieces = [g.interleave(g.last(sin, 0, n_cos) if n_cos < n else sin, cos, n_cos, rows)]
        if n_cos < n:
            pieces.append(g.last(sin, n_cos, n))
    elif p["layout"] == "concat_sin_cos":
        pieces = [sin, cos]
    else:
        pieces = [cos, sin]
    if dim - n - n_cos:
        pieces.append(g.op("Mul", g.last(sin, 0, 1), g.const(0.0)))  # the zero column
    out = g.op("Concat", *pieces, axis=-1) if len(pieces) > 1 else pieces[0]
    return g.op("Mul", out, g.const(float(p["scale"]))) if float(p["scale"]) != 1.0 else out


def build_table(g: Graph, params: Mapping[str, Any], positions: np.ndarray) -> tuple[Feeds, Outs]:
    """``sinusoidal.table`` of int64 ``positions`` (the offset is added in the graph)."""
    rows = g.op("Add", "positions", g.const(int(params["position_offset"]), np.int64))
    return [("positions", positions)], [(_table(g, rows, params), "table", "float")]


def build_fairseq(g: Graph, params: Mapping[str, Any], tokens: np.ndarray) -> tuple[Feeds, Outs]:
    """``sinusoidal.fairseq`` of the (B, T) int64 ``tokens``: the int64 rows and the embedding.
    ``cache_rule="fairseq"``: ``pad + CumSum(real) * real`` (``pad + past + 1`` for an incremental
    step); ``"m2m100"``: ``(CumSum(real) + past) * real + pad`` for any chunk length."""
    pad, past = int(params["padding_idx"]), int(params["past_length"])
    real = g.op("Cast", g.op("Not", g.op("Equal", "tokens", g.const(pad, np.int64))), to=TensorProto.INT64)
    if params.get("cache_rule", "fairseq") == "m2m100":  # (cumsum(real) + past) * real + pad, any T
        counted = g.op("Add", g.op("CumSum", real, g.const(1, np.int64)), g.const(past, np.int64))
        rows = g.op("Add", g.op("Mul", counted, real), g.const(pad, np.int64))
    elif past:
        rows = g.op("Add", g.op("Mul", "tokens", g.const(0, np.int64)), g.const(pad + past + 1, np.int64))
    else:
        counted = g.op("Mul", g.op("CumSum", real, g.const(1, np.int64)), real)
        rows = g.op("Add", counted, g.const(pad, np.int64))
    p = {"dim": params["dim"], "base": params["base"], "ladder": "t2t", "layout": "concat_sin_cos",
         "odd_width": "zero_pad_last", "scale": 1.0}
    keep = g.unsqueeze_last(g.cast(g.op("Not", g.op("Equal", rows, g.const(pad, np.int64))), g.compute))
    embedding = g.op("Mul", _table(g, rows, p), keep)
    return [("tokens", tokens)], [(rows, "positions", "int"), (embedding, "embedding", "float")]


def build_grid(g: Graph, params: Mapping[str, Any], ys: np.ndarray, xs: np.ndarray) -> tuple[Feeds, Outs]:
    """``grid2d.sincos`` of the int64 coordinates ``ys``, ``xs``."""
    w = g.frequencies(int(params["dim"]) // 2, params["base"], params["ladder"])  # (D/4,)
    q = int(params["dim"]) // 4
    y = g.op("Mul", g.unsqueeze_last(g.cast("ys", g.compute)), w)
    x = g.op("Mul", g.unsqueeze_last(g.cast("xs", g.compute)), w)
    a, b = (x, y) if params["axis_order"] == "x_first" else (y, x)
    sa, ca, sb, cb = g.op("Sin", a), g.op("Cos", a), g.op("Sin", b), g.op("Cos", b)
    if params["block_layout"] == "sin_cos":
        out = g.op("Concat", sa, ca, sb, cb, axis=-1)
    elif params["block_layout"] == "sin_sin_cos_cos":
        out = g.op("Concat", sa, sb, ca, cb, axis=-1)
    else:
        out = g.op("Concat", g.interleave(sa, ca, q, "ys"), g.interleave(sb, cb, q, "ys"), axis=-1)
    return [("ys", ys), ("xs", xs)], [(out, "table", "float")]


def build_lookup(g: Graph, params: Mapping[str, Any], table: np.ndarray, positions: np.ndarray) -> tuple[Feeds, Outs]:
    """``learned.lookup``: rows ``positions + offset`` of the float64 (N, D) ``table``, clamped under "clamp"."""
    rows = g.op("Add", "positions", g.const(int(params["offset"]), np.int64))
    if params["out_of_range"] == "clamp":
        rows = g.op("Min", rows, g.const(table.shape[0] - 1, np.int64))
    gathered = g.op("Gather", g.cast("table", g.compute), rows, axis=0)
    return [("table", table), ("positions", positions)], [(gathered, "rows", "float")]


def _yarn_ramp(g: Graph, i: str, low: float, high: float) -> str:
    """YaRN's ramp over the pair indices ``i``: ``Clip((i - low) / (high - low), 0, 1)``."""
    return g.op("Clip", g.op("Div", g.op("Sub", i, g.const(low)), g.const(high - low)), g.const(0.0), g.const(1.0))


def _inv_freq(g: Graph, c: Mapping[str, Any]) -> str:
    """The (d/2,) frequencies of :func:`posenc_adapter_checks.inv_freq`'s bookkeeping ``c`` (every
    rope_type but longrope): ``1 / Pow(base, 2i/d)`` and the variant's per-pair blend in the graph.
    YaRN's blend weight is the ramp ``gamma``, or ``gamma + (1 - gamma)(1 - e)`` with ggml's
    ``ext_factor`` e < 1."""
    dim, s = c["dim"], c["s"]
    i = g.const(np.arange(dim // 2))
    w = g.op("Div", g.const(1.0), g.op("Pow", g.const(c["base"]), g.op("Div", g.op("Mul", i, g.const(2.0)),
                                                                         g.const(float(dim)))))
    scaled = g.op("Div", w, g.const(s))
    if c["type"] == "proportional":
        w = g.op("Div", g.op("Where", g.op("Less", i, g.const(float(c["turning"]))), w, g.const(0.0)), g.const(s))
    elif c["type"] == "linear":
        w = scaled
    elif c["type"] == "llama3":
        wavelength = g.op("Div", g.const(2 * np.pi), w)
        smooth = g.op("Div", g.op("Sub", g.op("Div", g.const(float(c["original"])), wavelength), g.const(c["low"])),
                      g.const(c["high"] - c["low"]))
        blended = g.op("Add", g.op("Mul", g.op("Sub", g.const(1.0), smooth), scaled), g.op("Mul", smooth, w))
        long = g.op("Where", g.op("Greater", wavelength, g.const(c["original"] / c["low"])), scaled, blended)
        w = g.op("Where", g.op("Less", wavelength, g.const(c["original"] / c["high"])), w, long)
    elif c["type"] == "yarn":
        ramp = _yarn_ramp(g, i, *c["ramp"])
        ext = float(c.get("ext", 1.0))
        if ext != 1.0:  # ggml scales the extrapolation weight 1 - gamma by ext_factor
            ramp = g.op("Add", ramp, g.op("Mul", g.op("Sub", g.const(1.0), ramp), g.const(1.0 - ext)))
        w = g.op("Add", g.op("Mul", w, g.op("Sub", g.const(1.0), ramp)), g.op("Mul", scaled, ramp))
    return w


def build_inv_freq(g: Graph, params: Mapping[str, Any]) -> tuple[Feeds, Outs]:
    """:func:`_inv_freq` in the graph; the scalars (scaled bases, band edges, YaRN ramp ends and
    factors) are Python float64, as transformers keeps them."""
    c = checks.inv_freq(params)
    w = _inv_freq(g, c)
    factor, softmax = g.op("Identity", g.const([c["a"]])), g.op("Identity", g.const([c["softmax"]]))
    return [], [(w, "inv_freq", "float"), (factor, "attention_factor", "float"), (softmax, "softmax_scale", "float")]


def _angles(g: Graph, positions: str, inv_freq: str) -> str:
    """``Cast(p) * w`` over a new last axis."""
    return g.op("Mul", g.unsqueeze_last(g.cast(positions, g.compute)), inv_freq)


def build_cos_sin(g: Graph, params: Mapping[str, Any], pos: np.ndarray, inv_freq: np.ndarray) -> tuple[Feeds, Outs]:
    angle = _angles(g, "positions", g.cast("inv_freq", g.compute))
    factor = g.const(float(params["attention_factor"]))
    cos, sin = g.op("Mul", g.op("Cos", angle), factor), g.op("Mul", g.op("Sin", angle), factor)
    if params["width"] == "full":
        cos, sin = g.op("Concat", cos, cos, axis=-1), g.op("Concat", sin, sin, axis=-1)
    elif params["width"] == "full_interleaved":
        shape = g.op("Concat", g.op("Shape", "positions"), g.const([2 * inv_freq.shape[0]], I64), axis=0)
        cos, sin = (g.op("Reshape", g.op("Concat", g.unsqueeze_last(t), g.unsqueeze_last(t), axis=-1), shape)
                    for t in (cos, sin))
    return [("positions", pos), ("inv_freq", inv_freq)], [(cos, "cos", "float"), (sin, "sin", "float")]


def _slopes(g: Graph, params: Mapping[str, Any]) -> str:
    """``Pow(2, -x_h)`` (H,), the exponents exact from :func:`posenc_adapter_checks.alibi_exponents`."""
    heads, rule, bias_max = checks.alibi(params)
    return g.op("Pow", g.const(2.0), g.op("Neg", g.const(checks.alibi_exponents(heads, rule, bias_max))))


def build_slopes(g: Graph, params: Mapping[str, Any]) -> tuple[Feeds, Outs]:
    return [], [(_slopes(g, params), "slopes", "float")]


def _pairs(g: Graph, q: str, k: str) -> tuple[str, str]:
    """``i`` (..., Tq, 1) and ``j`` (..., 1, Tk)."""
    return g.unsqueeze_last(q), g.op("Unsqueeze", k, g.const([-2], I64))


def _alibi_bias(g: Graph, form: str, slopes: str, q_name: str, k_name: str, q: np.ndarray, k: np.ndarray) -> str:
    """``slope_h * signed distance`` (..., H, Tq, Tk) of the position inputs ``q_name`` and ``k_name``."""
    i, j = _pairs(g, q_name, k_name)
    if form == "relative_causal":
        signed = g.op("Sub", j, i)
    elif form == "key_only":
        signed = g.op("Add", g.op("Mul", i, g.const(0, I64)), j)
    elif form == "symmetric":
        signed = g.op("Neg", g.op("Abs", g.op("Sub", i, j)))
    else:
        shifted = g.op("Add", i, g.const(k.shape[-1] - q.shape[-1], I64))
        signed = g.op("Neg", g.op("Abs", g.op("Sub", shifted, j)))
    distance = g.cast(signed, g.compute)
    if q.ndim > 1:
        distance = g.op("Unsqueeze", distance, g.const([-3], I64))
    return g.op("Mul", g.op("Reshape", slopes, g.const([-1, 1, 1], I64)), distance)


def build_alibi(g: Graph, params: Mapping[str, Any], q: np.ndarray, k: np.ndarray) -> tuple[Feeds, Outs]:
    bias = _alibi_bias(g, params["form"], _slopes(g, params), "query_positions", "key_positions", q, k)
    return [("query_positions", q), ("key_positions", k)], [(bias, "bias", "float")]


def build_mask_positions(g: Graph, params: Mapping[str, Any], mask: np.ndarray) -> tuple[Feeds, Outs]:
    """BLOOM's ``(cumsum(mask) - 1) * mask`` with ``CumSum`` over the last axis."""
    counted = g.op("Sub", g.op("CumSum", "attention_mask", g.const(-1, I64)), g.const(1, I64))
    return [("attention_mask", mask)], [(g.op("Mul", counted, "attention_mask"), "positions", "int")]


def _t5_buckets(g: Graph, rel: str, limit: int, side: int, direction: str) -> str:
    """T5 ``_relative_position_bucket`` as transformers writes it: float log ladder, truncating cast."""
    exact = side // 2
    if direction == "bidirectional":
        offset = g.op("Mul", _int(g, g.op("Greater", rel, g.const(0, I64))), g.const(side, I64))
        n = g.op("Abs", rel)
    else:
        offset = g.const(0, I64)
        n = g.op("Max", g.op("Neg", rel), g.const(0, I64))
    ratio = g.op("Div", g.op("Log", g.op("Div", g.cast(g.op("Max", n, g.const(exact, I64)), g.compute),
                                          g.const(float(exact)))), g.const(float(np.log(limit / exact))))
    large = g.op("Add", g.const(exact, I64), _int(g, g.op("Mul", ratio, g.const(float(side - exact)))))
    large = g.op("Min", large, g.const(side - 1, I64))
    return g.op("Add", offset, g.op("Where", g.op("Less", n, g.const(exact, I64)), n, large))


def build_t5_bucket(g: Graph, params: Mapping[str, Any], rel: np.ndarray) -> tuple[Feeds, Outs]:
    _, limit, side, direction = checks.t5(params)
    return [("relative_positions", rel)], [(_t5_buckets(g, "relative_positions", limit, side, direction),
                                            "buckets", "int")]


def _t5_bias(g: Graph, q_name: str, k_name: str, table: str, rank: int, limit: int, side: int,
             direction: str) -> str:
    """``table[bucket(j - i), h]`` moved to (..., H, Tq, Tk); ``rank`` is the positions' rank."""
    i, j = _pairs(g, q_name, k_name)
    buckets = _t5_buckets(g, g.op("Sub", j, i), limit, side, direction)  # (..., Tq, Tk)
    gathered = g.op("Gather", g.cast(table, g.compute), buckets, axis=0)  # (..., Tq, Tk, H)
    full = rank + 2
    return g.op("Transpose", gathered, perm=list(range(full - 3)) + [full - 1, full - 3, full - 2])


def build_t5_bias(g: Graph, params: Mapping[str, Any], q: np.ndarray, k: np.ndarray,
                  table: np.ndarray) -> tuple[Feeds, Outs]:
    _, limit, side, direction = checks.t5(params)
    bias = _t5_bias(g, "query_positions", "key_positions", "table", q.ndim, limit, side, direction)
    return [("query_positions", q), ("key_positions", k), ("table", table)], [(bias, "bias", "float")]


def _deberta_buckets(g: Graph, delta: str, buckets: int, limit: int, clamp: str) -> str:
    """transformers ``make_log_bucket_position``: ceil of the float log ladder, signed."""
    if clamp == "max_relative_positions":
        delta = g.op("Clip", delta, g.const(-(limit - 1), I64), g.const(limit - 1, I64))
    mid = buckets // 2
    n = g.op("Abs", delta)
    ratio = g.op("Div", g.op("Log", g.op("Div", g.cast(g.op("Max", n, g.const(mid, I64)), g.compute),
                                          g.const(float(mid)))), g.const(float(np.log((limit - 1) / mid))))
    ladder = _int(g, g.op("Ceil", g.op("Mul", ratio, g.const(float(mid - 1)))))
    signed = g.op("Mul", g.op("Sign", delta), g.op("Add", ladder, g.const(mid, I64)))
    return g.op("Where", g.op("LessOrEqual", n, g.const(mid, I64)), delta, signed)


def build_deberta_bucket(g: Graph, params: Mapping[str, Any], rel: np.ndarray) -> tuple[Feeds, Outs]:
    buckets, limit, clamp = checks.deberta(params)
    return [("relative_positions", rel)], [(_deberta_buckets(g, "relative_positions", buckets, limit, clamp),
                                            "buckets", "int")]


def build_deberta_index(g: Graph, params: Mapping[str, Any], q: np.ndarray, k: np.ndarray) -> tuple[Feeds, Outs]:
    buckets, limit, clamp = checks.deberta(params)
    i, j = _pairs(g, "query_positions", "key_positions")
    bucket = _deberta_buckets(g, g.op("Sub", i, j), buckets, limit, clamp)
    index = g.op("Clip", g.op("Add", bucket, g.const(buckets, I64)), g.const(0, I64), g.const(2 * buckets - 1, I64))
    return [("query_positions", q), ("key_positions", k)], [(index, "index", "int")]


def build_deberta_scores(g: Graph, a: Mapping[str, Any]) -> tuple[Feeds, Outs]:
    """DebertaV2 disentangled logits: ``q k^T``, c2p ``GatherElements(q Kr^T, idx)``, p2c
    ``GatherElements(k Qr^T, idx^T)`` transposed back (both at ``idx(i - j)``), over ``sqrt(d (1 + n))``."""
    b = a["buckets"]
    i, j = _pairs(g, "query_positions", "key_positions")
    bucket = _deberta_buckets(g, g.op("Sub", i, j), b, a["limit"], a["clamp"])
    index = g.op("Clip", g.op("Add", bucket, g.const(b, I64)), g.const(0, I64), g.const(2 * b - 1, I64))  # (Tq, Tk)
    q, k, kr, qr = (g.cast(n, g.compute) for n in ("q", "k", "pos_key", "pos_query"))
    heads, tq, dim = a["q"].shape
    tk = a["k"].shape[1]
    scores = g.op("MatMul", q, g.op("Transpose", k, perm=[0, 2, 1]))
    if "c2p" in a["terms"]:
        c2p = g.op("MatMul", q, g.op("Transpose", kr, perm=[0, 2, 1]))  # (H, Tq, 2b)
        where = g.op("Expand", index, g.const([heads, tq, tk], I64))
        scores = g.op("Add", scores, g.op("GatherElements", c2p, where, axis=2))
    if "p2c" in a["terms"]:
        p2c = g.op("MatMul", k, g.op("Transpose", qr, perm=[0, 2, 1]))  # (H, Tk, 2b)
        where = g.op("Expand", g.op("Transpose", index, perm=[1, 0]), g.const([heads, tk, tq], I64))
        gathered = g.op("GatherElements", p2c, where, axis=2)  # (H, Tk, Tq): row j, column i
        scores = g.op("Add", scores, g.op("Transpose", gathered, perm=[0, 2, 1]))
    scores = g.op("Div", scores, g.const(float(np.sqrt(dim * (1 + len(a["terms"]))))))
    feeds = [("query_positions", a["qp"]), ("key_positions", a["kp"])] + [
        (n, a[n]) for n in ("q", "k", "pos_key", "pos_query")]
    return feeds, [(scores, "scores", "float")]


def _pair_channels(g: Graph, x: str, n: int, layout: str) -> tuple[str, str]:
    """The two channels of every rotation pair of ``x`` (..., 2n): (..., n) each for ``layout="half"``
    (``x[..., :n]``, ``x[..., n:]``), (..., n, 1) each for ``"interleaved"`` (even, odd channels)."""
    if layout == "half":
        return g.last(x, 0, n), g.last(x, n, 2 * n)
    pairs = g.op("Reshape", x, g.const([0, 0, 0, n, 2], I64))  # (B, ., ., n, 2)
    return g.last(pairs, 0, 1), g.last(pairs, 1, 2)


def _join_channels(g: Graph, a: str, b: str, layout: str) -> str:
    """Inverse of :func:`_pair_channels`."""
    if layout == "half":
        return g.op("Concat", a, b, axis=-1)
    return g.op("Reshape", g.op("Concat", a, b, axis=-1), g.const([0, 0, 0, -1], I64))


def _xpos_zeta(g: Graph, i: str, width: int) -> str:
    """xPos's per-pair decay ``zeta_i = (2i + 0.4 D) / (1.4 D)`` of the pair indices ``i`` (a width D)."""
    return g.op("Div", g.op("Add", g.op("Mul", i, g.const(2.0)), g.const(0.4 * width)), g.const(1.4 * width))


def build_xpos(g: Graph, params: Mapping[str, Any], q: np.ndarray, k: np.ndarray, pos: np.ndarray,
               dtype: str) -> tuple[Feeds, Outs]:
    """xPos with primitive operators: the pair channels ``(a, b)`` rotated to ``(a cos - b sin,
    b cos + a sin)`` at ``Pow(base, -2i/D)`` per pair, then q times and k divided by
    ``Pow(zeta, (p - c) / B)`` with ``zeta = (2i + 0.4 D) / (1.4 D)``. A third output flags a scale
    that overflows the compute dtype (``IsInf`` of ``zeta ** +-power``)."""
    width, t = q.shape[-1], pos.shape[-1]
    n, layout = width // 2, params["layout"]
    i = g.const(np.arange(n))
    inv_freq = g.op("Pow", g.const(float(params["base"])),
                    g.op("Neg", g.op("Div", g.op("Mul", i, g.const(2.0)), g.const(float(width)))))
    p = g.cast("positions", g.compute)  # (B|1, T)
    head_axis = 1 if params["x_layout"] == "BHTD" else 2
    angle = g.op("Unsqueeze", g.op("Mul", g.unsqueeze_last(p), inv_freq), g.const([head_axis], I64))
    centre = t // 2 if params["centring"] == "lucidrains" else -(-t // 2)
    power = g.op("Div", g.op("Sub", p, g.const(float(centre))), g.const(float(params["scale_base"])))
    zeta = _xpos_zeta(g, i, width)
    up = g.op("Pow", zeta, g.op("Unsqueeze", g.unsqueeze_last(power), g.const([head_axis], I64)))  # like angle
    cos, sin = g.op("Cos", angle), g.op("Sin", angle)
    if layout == "interleaved":
        cos, sin, up = g.unsqueeze_last(cos), g.unsqueeze_last(sin), g.unsqueeze_last(up)
    outs: Outs = []
    for name, scale in (("q", up), ("k", g.op("Reciprocal", up))):
        a, b = _pair_channels(g, g.cast(name, g.compute), n, layout)
        ra = g.op("Sub", g.op("Mul", a, cos), g.op("Mul", b, sin))
        rb = g.op("Add", g.op("Mul", b, cos), g.op("Mul", a, sin))
        outs.append((_join_channels(g, g.op("Mul", ra, scale), g.op("Mul", rb, scale), layout), f"{name}_rot", "float"))
    beyond = g.op("Or", g.op("IsInf", up), g.op("IsInf", g.op("Reciprocal", up)))
    outs.append((g.op("ReduceMax", _int(g, beyond), keepdims=0), "overflow", "int"))
    return [*_inputs_as(dtype, q=q, k=k), ("positions", pos)], outs


def build_mrope(g: Graph, params: Mapping[str, Any], pos: np.ndarray, stream: np.ndarray) -> tuple[Feeds, Outs]:
    """MRoPE cos/sin: ``Gather`` each pair's stream from the (3, ...) positions, move the pair axis
    last, times ``Pow(base, -2i/d)``; ``width="full"`` concatenates each table with itself."""
    dim = int(params["dim"])
    i = g.const(np.arange(dim // 2))
    w = g.op("Pow", g.const(float(params["base"])),
             g.op("Neg", g.op("Div", g.op("Mul", i, g.const(2.0)), g.const(float(dim)))))
    chosen = g.op("Gather", "positions", g.const(stream, I64), axis=0)  # (P, ...)
    rank = pos.ndim
    chosen = g.op("Transpose", chosen, perm=[*range(1, rank), 0])  # (..., P)
    angle = g.op("Mul", g.cast(chosen, g.compute), w)
    cos, sin = g.op("Cos", angle), g.op("Sin", angle)
    if params["width"] == "full":
        cos, sin = g.op("Concat", cos, cos, axis=-1), g.op("Concat", sin, sin, axis=-1)
    return [("positions", pos)], [(cos, "cos", "float"), (sin, "sin", "float")]


def _shaw_index(g: Graph, params: Mapping[str, Any]) -> str:
    """``Clip(+-(p_j - p_i), -K, K) + K`` (Tq, Tk) from the 1-D position inputs."""
    k = int(params["max_relative_position"])
    i, j = g.unsqueeze_last("q_positions"), g.op("Unsqueeze", "k_positions", g.const([0], I64))
    distance = g.op("Sub", j, i) if params["sign"] == "key_minus_query" else g.op("Sub", i, j)
    return g.op("Add", g.op("Clip", distance, g.const(-k, I64), g.const(k, I64)), g.const(k, I64))


def build_shaw(g: Graph, params: Mapping[str, Any], op: str, a: Mapping[str, Any], qp: np.ndarray, kp: np.ndarray,
               dtype: str) -> tuple[Feeds, Outs]:
    """``shaw.index``: :func:`_shaw_index`. ``shaw.logits``: ``q k^T + GatherElements(q A^T, index)``.
    ``shaw.output``: ``alpha v + (alpha . onehot(index)) A`` with the one-hot as
    ``Equal(index, arange(2K + 1))`` and the per-row sum a batched ``MatMul``."""
    index = _shaw_index(g, params)
    feeds: Feeds = [("q_positions", qp), ("k_positions", kp)]
    if op == "shaw.index":
        return feeds, [(index, "index", "int")]
    if op == "shaw.logits":
        q, k, table = (g.cast(n, g.compute) for n in ("q", "k", "rel_keys"))
        per_distance = g.op("MatMul", q, g.op("Transpose", table, perm=[1, 0]))  # (Tq, 2K + 1)
        logits = g.op("Add", g.op("MatMul", q, g.op("Transpose", k, perm=[1, 0])),
                      g.op("GatherElements", per_distance, index, axis=1))
        return feeds + _inputs_as(dtype, q=a["q"], k=a["k"], rel_keys=a["table"]), [(logits, "logits", "float")]
    alpha, v, table = (g.cast(n, g.compute) for n in ("weights", "v", "rel_values"))
    onehot = g.cast(g.op("Equal", g.unsqueeze_last(index), g.const(np.arange(a["rows"]), I64)), g.compute)
    per_distance = g.op("MatMul", g.op("Unsqueeze", alpha, g.const([1], I64)), onehot)  # (Tq, 1, 2K + 1)
    per_distance = g.op("Squeeze", per_distance, g.const([1], I64))
    out = g.op("Add", g.op("MatMul", alpha, v), g.op("MatMul", per_distance, table))
    return feeds + _inputs_as(dtype, weights=a["weights"], v=a["v"], rel_values=a["table"]), [(out, "output", "float")]


def _longrope_inv_freq(g: Graph, c: Mapping[str, Any], factors: str) -> str:
    """``Reciprocal(e * Pow(base, 2i/d))`` (d/2,) with ``factors`` the graph tensor of the list in use."""
    dim = c["dim"]
    i = g.const(np.arange(dim // 2))
    power = g.op("Pow", g.const(c["base"]), g.op("Div", g.op("Mul", i, g.const(2.0)), g.const(float(dim))))
    return g.op("Reciprocal", g.op("Mul", factors, power))


def build_longrope(g: Graph, c: Mapping[str, Any], dtype: str) -> tuple[Feeds, Outs]:
    """:func:`_longrope_inv_freq` with ``e`` the factor list in use (long when L > L0), chosen in
    Python as transformers chooses it; the attention factor is a Python float64 scalar, as
    transformers keeps it."""
    inv_freq = _longrope_inv_freq(g, c, g.cast("ext_factors", g.compute))
    factor = g.op("Identity", g.const([c["a"]]))
    return _inputs_as(dtype, ext_factors=c["factors"]), [(inv_freq, "inv_freq", "float"),
                                                         (factor, "attention_factor", "float")]


def scaled_inv_freq(g: Graph, sc: Mapping[str, Any], rd: int) -> str:
    """The (S/2,) frequencies of a scaled ``rope.apply``/``rope.scores``, from
    :func:`posenc_adapter_checks.scaling`'s ``sc`` (its ``freq`` at dim = S): the variant's
    frequencies as for ``rope.inv_freq`` / ``rope.longrope_inv_freq`` (the factor list a constant),
    times 0 from pair ``rd/2`` on (proportional rotation)."""
    c = sc["freq"]
    w = _longrope_inv_freq(g, c, g.const(c["factors"])) if sc["type"] == "longrope" else _inv_freq(g, c)
    pairs = c["dim"] // 2
    if rd // 2 < pairs:
        w = g.op("Mul", w, g.const((np.arange(pairs) < rd // 2).astype(np.float64)))
    return w


def build_rotate_cached(g: Graph, c: Mapping[str, Any], params: Mapping[str, Any], x: str, cos: str, sin: str,
                        rows: str) -> str:
    """``rope.rotate`` with primitive operators: ``Gather`` of the cache rows at the (B|1, T) int64
    ``rows``, the first 2P channels split into pairs (``Slice``, or ``Reshape`` to (..., P, 2) for
    interleaved pairs) and turned with ``Mul``/``Sub``/``Add``, the rest concatenated back
    untouched. ``x``, ``cos`` and ``sin`` are graph tensors in the compute dtype."""
    n, width = c["cos"].shape[1], c["x"].shape[-1]
    head_axis = g.const([1 if params["x_layout"] == "BHTD" else 2], I64)
    cr, sr = (g.op("Unsqueeze", g.op("Gather", t, rows, axis=0), head_axis) for t in (cos, sin))  # like x's pairs
    layout = params["layout"]
    if layout == "interleaved":
        cr, sr = g.unsqueeze_last(cr), g.unsqueeze_last(sr)
    head = g.last(x, 0, 2 * n) if 2 * n < width else x
    a, b = _pair_channels(g, head, n, layout)
    ra = g.op("Sub", g.op("Mul", a, cr), g.op("Mul", b, sr))
    rb = g.op("Add", g.op("Mul", b, cr), g.op("Mul", a, sr))
    out = _join_channels(g, ra, rb, layout)
    return g.op("Concat", out, g.last(x, 2 * n, width), axis=-1) if 2 * n < width else out


def _xl_embedding(g: Graph, distance: str, width: int, base: float) -> str:
    """``R = [sin(delta w) | cos(delta w)]`` (..., D_r) of int64 distances, ``w_k = Pow(base, -2k/D_r)``."""
    w = g.op("Pow", g.const(base), g.op("Neg", g.op("Div", g.op("Mul", g.const(np.arange(width // 2)), g.const(2.0)),
                                                      g.const(float(width)))))
    theta = g.op("Mul", g.unsqueeze_last(g.cast(distance, g.compute)), w)
    return g.op("Concat", g.op("Sin", theta), g.op("Cos", theta), axis=-1)


def _distance(g: Graph, q_name: str, k_name: str) -> str:
    """``p_i - p_j`` (Tq, Tk), int64, of 1-D position inputs."""
    return g.op("Sub", g.unsqueeze_last(q_name), g.op("Unsqueeze", k_name, g.const([0], I64)))


def build_xl_score(g: Graph, c: Mapping[str, Any], dtype: str) -> tuple[Feeds, Outs]:
    """``(q + u) k^T + (q + v) . (R_{p_i - p_j} W_R)``: ``R`` per (i, j) pair from the clipped distance,
    ``MatMul`` by ``w_r``, the per-query dot product a batched ``MatMul`` (Tq, 1, D) x (Tq, D, Tk)."""
    distance = _distance(g, "q_positions", "k_positions")
    if c["clamp_len"] > 0:
        distance = g.op("Clip", distance, g.const(-c["clamp_len"], I64), g.const(c["clamp_len"], I64))
    q, k, u, v, w_r = (g.cast(n, g.compute) for n in ("q", "k", "u", "v", "w_r"))
    content = g.op("MatMul", g.op("Add", q, u), g.op("Transpose", k, perm=[1, 0]))  # (Tq, Tk)
    r = g.op("MatMul", _xl_embedding(g, distance, c["w_r"].shape[0], c["base"]), w_r)  # (Tq, Tk, D)
    query = g.op("Unsqueeze", g.op("Add", q, v), g.const([1], I64))  # (Tq, 1, D)
    position = g.op("Squeeze", g.op("MatMul", query, g.op("Transpose", r, perm=[0, 2, 1])), g.const([1], I64))
    feeds = [("q_positions", c["qp"]), ("k_positions", c["kp"]),
             *_inputs_as(dtype, q=c["q"], k=c["k"], u=c["u"], v=c["v"], w_r=c["w_r"])]
    return feeds, [(g.op("Add", content, position), "score", "float")]


def build_rel_shift(g: Graph, c: Mapping[str, Any], dtype: str) -> tuple[Feeds, Outs]:
    """The codebase's pad-and-reshape: Transformer-XL ``Pad`` one zero column on the left,
    ``Reshape`` (Tk + 1, Tq), drop the first row, ``Reshape`` (Tq, Tk); XLNet ``Reshape`` (R, Tq),
    drop the first row, ``Reshape`` (Tq, R - 1), keep Tk columns. ``valid`` compares index grids."""
    tq, tk, rows = c["tq"], c["k_len"], c["rows"]
    x = g.cast("x", g.compute)
    drop = g.const([1], I64), g.const([np.iinfo(np.int64).max], I64), g.const([0], I64)
    i, j = g.const(np.arange(tq)[:, None], I64), g.const(np.arange(tk)[None, :], I64)
    if c["variant"] == "transformer_xl":
        padded = g.op("Pad", x, g.const([0, 1, 0, 0], I64))  # (Tq, Tk + 1)
        body = g.op("Slice", g.op("Reshape", padded, g.const([tk + 1, tq], I64)), *drop)
        shifted = g.op("Reshape", body, g.const([tq, tk], I64))
        valid = g.op("LessOrEqual", j, g.op("Add", i, g.const(tk - tq, I64)))
    else:
        body = g.op("Slice", g.op("Reshape", x, g.const([rows, tq], I64)), *drop)
        shifted = g.last(g.op("Reshape", body, g.const([tq, rows - 1], I64)), 0, tk)
        valid = g.op("Less", g.op("Sub", g.op("Add", j, g.const(tq, I64)), i), g.const(rows, I64))
    return _inputs_as(dtype, x=c["x"]), [(shifted, "shifted", "float"), (_int(g, valid), "valid", "int")]
