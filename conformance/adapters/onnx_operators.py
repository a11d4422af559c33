"""The ops that map onto a real ONNX operator: ``RotaryEmbedding`` and ``Attention`` (opset 23) for
``rope.apply``, ``rope.scores``, ``rope.rotate``, ``rope.rotate_freq``, ``attention``, ``attention.pipeline`` and the
``attention.<scheme>`` ops, ``Resize`` for ``resample.*``: the library side of the ONNX Runtime adapter
(:mod:`onnxruntime_graphs`, which describes how the case's conventions map onto their attributes).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

if str(Path(__file__).resolve().parent) not in sys.path:  # the shared helpers live next to this file
    sys.path.insert(0, str(Path(__file__).resolve().parent))

from onnx_graph import I64, NUMPY, Feeds, Graph, Outs, _inputs_as, helper  # noqa: E402
from onnx_primitive import (  # noqa: E402
    _alibi_bias,
    _angles,
    _distance,
    _shaw_index,
    _t5_bias,
    _xl_embedding,
    build_rotate_cached,
    scaled_inv_freq,
)


def _rotary(g: Graph, params: Mapping[str, Any], x: str, shape: tuple[int, ...], positions: str, t: int,
            space: int, rd: int, inv_freq: str | None = None, factor: float | None = None) -> str:
    """One real ``RotaryEmbedding`` (opset 23) node on ``x``: cos/sin caches (B, T, S/2) built in the
    graph from the positions (no ``position_ids``), ``interleaved`` = layout,
    ``rotary_embedding_dim`` = S (prefix: rotary_dim; proportional: the head dim, with frequency 0
    past rotary_dim); ``x_layout="BTHD"`` is the 3-D (B, T, H*D) input with ``num_heads``.
    ``inv_freq`` (S/2,) is a scaled variant's frequencies (:func:`onnx_primitive.scaled_inv_freq`),
    ``factor`` the whole attention factor; by default ``Pow(base, -2i/S)`` and the op's
    ``attention_factor``."""
    batch = shape[0]
    if inv_freq is None:
        i = np.arange(space // 2, dtype=np.float64)
        exponent = g.const(np.where(i < rd // 2, 2.0 * i / space, 0.0))
        inv_freq = g.op("Mul", g.op("Pow", g.const(float(params["base"])), g.op("Neg", exponent)),
                        g.const((i < rd // 2).astype(np.float64)))  # (S/2,)
    angle = _angles(g, g.op("Expand", positions, g.const([batch, t], I64)), inv_freq)  # (B, T, S/2)
    factor = g.const(float(params["attention_factor"] if factor is None else factor))
    cos = g.cast(g.op("Mul", g.op("Cos", angle), factor), g.x_dtype)
    sin = g.cast(g.op("Mul", g.op("Sin", angle), factor), g.x_dtype)
    attrs = {"interleaved": int(params["layout"] == "interleaved"), "rotary_embedding_dim": space}
    return _rotary_node(g, params["x_layout"], x, shape, cos, sin, None, attrs)


def _rotary_node(g: Graph, x_layout: str, x: str, shape: tuple[int, ...], cos: str, sin: str,
                 position_ids: str | None, attrs: Mapping[str, Any]) -> str:
    """The ``RotaryEmbedding`` node itself: 4-D (B, H, T, D) ``x`` as it is, (B, T, H, D) as the 3-D
    (B, T, H*D) input with ``num_heads``; ``position_ids`` (B, T) index 2-D caches when given."""
    inputs = [x, cos, sin] + ([position_ids] if position_ids is not None else [])
    if x_layout == "BHTD":
        return g.op("RotaryEmbedding", *inputs, **attrs)
    inputs[0] = g.op("Reshape", x, g.const([shape[0], shape[1], -1], I64))
    return g.op("Reshape", g.op("RotaryEmbedding", *inputs, num_heads=shape[2], **attrs), g.const(list(shape), I64))


def _scaled(g: Graph, sc: Mapping[str, Any] | None, rd: int) -> dict[str, Any]:
    """The ``inv_freq``/``factor`` keywords of :func:`_rotary` for the scaling ``sc`` (the default
    type keeps the plain frequencies, the factor is the whole one)."""
    if sc is None:
        return {}
    return {"inv_freq": None if sc["type"] == "default" else scaled_inv_freq(g, sc, rd), "factor": sc["a"]}


def build_rope_apply(g: Graph, params: Mapping[str, Any], x: np.ndarray, pos: np.ndarray, space: int,
                     rd: int, sc: Mapping[str, Any] | None = None) -> tuple[Feeds, Outs]:
    """``rope.apply``: one ``RotaryEmbedding`` node (:func:`_rotary`) at the frequencies and
    attention factor of the scaling ``sc`` (:func:`posenc_adapter_checks.scaling`)."""
    y = _rotary(g, params, "x", x.shape, "positions", pos.shape[-1], space, rd, **_scaled(g, sc, rd))
    return [("x", x), ("positions", pos)], [(y, "y", "float")]


def build_rope_scores(g: Graph, params: Mapping[str, Any], q: np.ndarray, k: np.ndarray, qp: np.ndarray,
                      kp: np.ndarray, space: int, rd: int, sc: Mapping[str, Any] | None = None) -> tuple[Feeds, Outs]:
    """``rope.scores`` without xPos: q and k each through ``RotaryEmbedding`` at their own
    positions (the scaling ``sc`` as in :func:`build_rope_apply`), then ``MatMul(q, k^T)`` in
    (B, H, T, D) order."""
    scaled = _scaled(g, sc, rd)
    qr = _rotary(g, params, "q", q.shape, "q_positions", qp.shape[-1], space, rd, **scaled)
    kr = _rotary(g, params, "k", k.shape, "k_positions", kp.shape[-1], space, rd, **scaled)
    if params["x_layout"] == "BTHD":
        qr, kr = g.op("Transpose", qr, perm=[0, 2, 1, 3]), g.op("Transpose", kr, perm=[0, 2, 1, 3])
    scores = g.op("MatMul", qr, g.op("Transpose", kr, perm=[0, 1, 3, 2]))
    return [("q", q), ("k", k), ("q_positions", qp), ("k_positions", kp)], [(scores, "scores", "float")]


def build_rope_rotate_freq(g: Graph, params: Mapping[str, Any], c: Mapping[str, Any], x: np.ndarray,
                           operator: bool) -> tuple[Feeds, Outs]:
    """``rope.rotate_freq``: with ``operator``, one ``RotaryEmbedding`` node (:func:`_rotary`) with
    ``rotary_embedding_dim = 2P``, its (B, T, P) caches built in the graph from the positions and the
    caller's ``inv_freq`` (fed as float64, cast to the compute dtype: a float32 buffer below float64),
    cos and sin times the attention factor; ``x`` (in the operator's dtype) as for ``rope.apply``.
    Without it (no kernel at the dtype), the same caches, one row per token, turn x through the
    primitive graph :func:`onnx_primitive.build_rotate_cached` in the compute dtype."""
    pairs = c["inv_freq"].size
    pos = c["positions"]  # (B|1, T)
    t = x.shape[2 if params["x_layout"] == "BHTD" else 1]
    w = g.cast("inv_freq", g.compute)
    feeds = [("x", x), ("positions", pos), ("inv_freq", c["inv_freq"])]
    if operator:
        y = _rotary(g, params, "x", x.shape, "positions", t, 2 * pairs, 2 * pairs, inv_freq=w, factor=c["a"])
        return feeds, [(y, "y", "float")]
    factor = g.const(float(c["a"]))
    flat = g.const([pos.size, pairs], I64)
    angle = _angles(g, "positions", w)  # (B|1, T, P)
    cos, sin = (g.op("Reshape", g.op("Mul", g.op(name, angle), factor), flat) for name in ("Cos", "Sin"))
    rows = g.const(np.arange(pos.size, dtype=np.int64).reshape(pos.shape), I64)  # token (b, t) reads its own row
    y = build_rotate_cached(g, {"x": x, "cos": np.empty((1, pairs))}, params, g.cast("x", g.compute), cos, sin, rows)
    return feeds, [(y, "y", "float")]


def _position_ids(g: Graph, positions: str, batch: int, t: int) -> str:
    """The (B, T) int64 cache rows of the (B|1, T) ``positions``."""
    return g.op("Expand", positions, g.const([batch, t], I64))


def build_rope_rotate(g: Graph, params: Mapping[str, Any], c: Mapping[str, Any],
                      operator: bool) -> tuple[Feeds, Outs]:
    """``rope.rotate``: with ``operator``, one real ``RotaryEmbedding`` (opset 23) node on x with the
    given (N, P) caches and ``position_ids`` (the positions, ``Expand``-ed to (B, T)),
    ``interleaved`` = layout, ``rotary_embedding_dim`` = 2P (the rest of the head passes through),
    (B, T, H, D) as the 3-D input with ``num_heads``; x and the caches are fed in the operator's
    dtype. Without it (no kernel at the dtype), the primitive graph
    :func:`onnx_primitive.build_rotate_cached` in the compute dtype."""
    x, pos, cos, sin = c["x"], c["positions"], c["cos"], c["sin"]
    t = x.shape[2 if params["x_layout"] == "BHTD" else 1]
    rows = _position_ids(g, "positions", x.shape[0], t)
    feeds = [*_inputs_as(g.x_dtype, x=x, cos_cache=cos, sin_cache=sin), ("positions", pos)]
    if operator:
        attrs = {"interleaved": int(params["layout"] == "interleaved"), "rotary_embedding_dim": 2 * cos.shape[1]}
        y = _rotary_node(g, params["x_layout"], "x", x.shape, "cos_cache", "sin_cache", rows, attrs)
    else:
        y = build_rotate_cached(g, c, params, g.cast("x", g.compute), g.cast("cos_cache", g.compute),
                                g.cast("sin_cache", g.compute), rows)
    return feeds, [(y, "y", "float")]


def _attention_node(g: Graph, a: Mapping[str, Any], causal: str, past: int, q: str, k: str, v: str,
                    term: str | None = None, bias: str | None = None) -> tuple[str, str]:
    """One real ``Attention`` (opset 23) node on the graph tensors q (B, H, Tq, D) and k, v
    (B, Hkv, Tk, D) in the operator's dtype (GQA from the shapes), ``scale``, ``is_causal``
    (``causal="op"``) and one float ``attn_mask`` holding the bias, the additive mask and ``-inf``
    where the padding, boolean mask or window removes a key (and the causal mask itself when
    ``causal`` is not ``"op"``). A logits ``term`` (compute dtype, broadcastable to (B, H, Tq, Tk)),
    added to q . k before the scale, enters the mask as ``term * scale`` (the operator adds its mask
    after scaling); a ``bias`` graph tensor (added after the scale) enters it as it is. ``past > 0``
    passes the first ``past`` keys as ``past_key``/``past_value`` (``Slice``), which moves
    ``is_causal`` to bottom-right alignment. Returns the output and the weights
    (``qk_matmul_output`` under ``qk_matmul_output_mode=3``, after the softmax)."""
    dt = g.x_dtype
    keep = a["keep_nc"] if causal == "op" else a["keep"]
    fixed = (np.asarray(a["bias"]) + np.asarray(a["additive"])) + np.where(keep, 0.0, -np.inf)
    if term is None and bias is None:
        mask = g.const(fixed, NUMPY[dt])
    else:
        mask = g.const(fixed)
        if term is not None:
            mask = g.op("Add", g.op("Mul", term, g.const(float(a["scale"]))), mask)
        if bias is not None:
            mask = g.op("Add", bias, mask)
        mask = g.cast(mask, dt)
    inputs = [q, k, v, mask]
    if past:
        def split(x: str) -> tuple[str, str]:
            cut, axis = g.const([past], I64), g.const([2], I64)
            return (g.op("Slice", x, g.const([0], I64), cut, axis),
                    g.op("Slice", x, cut, g.const([np.iinfo(np.int64).max], I64), axis))

        (past_key, k), (past_value, v) = split(k), split(v)
        inputs = [q, k, v, mask, past_key, past_value]
    out, weights = g._name("y"), g._name("w")
    present = [g._name("present_key"), g._name("present_value")] if past else ["", ""]  # ORT needs them with a past
    g.nodes.append(helper.make_node("Attention", inputs, [out, *present, weights], scale=float(a["scale"]),
                                    is_causal=int(causal == "op"), qk_matmul_output_mode=3))
    return out, weights


def build_attention(g: Graph, params: Mapping[str, Any], a: Mapping[str, Any], causal: str,
                    past: int) -> tuple[Feeds, Outs]:
    """``attention``: q, k, v fed in the operator's dtype to one :func:`_attention_node`."""
    out, weights = _attention_node(g, a, causal, past, "q", "k", "v")
    feeds = _inputs_as(g.x_dtype, q=a["q"], k=a["k"], v=a["v"])
    return feeds, [(out, "output", "float"), (weights, "weights", "float")]


def _structural(params: Mapping[str, Any], a: Mapping[str, Any]) -> tuple[str, int]:
    """How the case's causal mask is expressed: ``(causal, past)`` with causal ``"none"``, ``"op"``
    (``is_causal=1``) or ``"mask"`` (in ``attn_mask``: bottom-right with Tq > Tk, where
    ``is_causal`` would need a negative past length)."""
    tq, tk = a["q"].shape[2], a["k"].shape[2]
    if not params["causal"]:
        return "none", 0
    if params["alignment"] == "top_left" or tq == tk:
        return "op", 0
    if tk > tq:
        return "op", tk - tq  # bottom-right: the extra keys are the cache
    return "mask", 0


def _resize_rows(g: Graph, x: str, columns: int, axis: Mapping[str, Any], requested: int,
                 params: Mapping[str, Any]) -> str:
    """One real ``Resize`` of the rows of a 2-D ``x`` (n, columns) to (m, columns): ``mode`` cubic
    (``cubic_coeff_a`` = cubic_a) or linear, ``coordinate_transformation_mode`` half_pixel or
    align_corners, ``antialias`` and ``exclude_outside`` both 1 under ``antialias="on"`` (the
    stretched kernel, edge weights renormalised, no replicated taps), else 0 (edge taps replicate
    the edge sample); ``sizes`` = (m, columns), or ``scales`` = ``((requested + scale_offset) / n,
    1)`` (float32, as the operator takes them) under ``size_from="scale_factor"``."""
    attrs = {"mode": "cubic" if axis["kernel"] == "bicubic" else "linear", "cubic_coeff_a": axis["a"],
             "coordinate_transformation_mode": "align_corners" if axis["align_corners"] else "half_pixel",
             "antialias": int(axis["antialias"]), "exclude_outside": int(axis["antialias"])}
    if params["size_from"] == "size":
        return g.op("Resize", x, "", "", g.const([axis["m"], columns], I64), **attrs)
    factor = (requested + float(params["scale_offset"])) / axis["n"]
    return g.op("Resize", x, "", g.const([factor, 1.0], np.float32), **attrs)


def build_resample(g: Graph, op: str, c: Mapping[str, Any], params: Mapping[str, Any],
                   table: np.ndarray | None) -> tuple[Feeds, Outs]:
    """``resample.weights``: ``Resize`` of the rows of the (n, n) identity, which gives the (m, n)
    weights. ``table_1d``: the prefix rows, then ``Resize`` of the (L, D) rows. ``grid_2d``: the
    (H, W, D) grid resized separably with 2-D ``Resize`` nodes, the rows of (H, W*D) then the rows
    of (W, H'*D) (``Transpose``): onnxruntime 1.30's CPU ``Resize`` refuses 4-D (NCHW) cubic
    downsampling without antialias, and a 2-D ``Resize`` is the same separable kernel. ``Resize``
    runs in the adapter's dtype, on the table as fed."""
    dt = g.x_dtype
    if op == "resample.weights":
        eye = g.const(np.eye(c["n"]), NUMPY[dt])
        return [], [(_resize_rows(g, eye, c["n"], c, int(params["new_size"]), params), "weights", "float")]
    prefix = len(c["prefix"])
    cut, end, rows_axis = g.const([prefix], I64), g.const([np.iinfo(np.int64).max], I64), g.const([0], I64)
    head = g.op("Slice", "table_in", g.const([0], I64), cut, rows_axis)
    rows = g.op("Slice", "table_in", cut, end, rows_axis)
    if op == "resample.table_1d":
        resized = _resize_rows(g, rows, c["rows"].shape[1], c["axis"], int(params["new_length"]), params)
    else:
        (h, w, width), (hy, wx) = c["grid"].shape, (c["height"], c["width"])
        along_h = _resize_rows(g, g.op("Reshape", rows, g.const([h, w * width], I64)), w * width, hy,
                               int(params["new_height"]), params)  # (H', W*D)
        by_w = g.op("Reshape", g.op("Transpose", g.op("Reshape", along_h, g.const([hy["m"], w, width], I64)),
                                    perm=[1, 0, 2]), g.const([w, hy["m"] * width], I64))  # (W, H'*D)
        along_w = _resize_rows(g, by_w, hy["m"] * width, wx, int(params["new_width"]), params)  # (W', H'*D)
        grid = g.op("Transpose", g.op("Reshape", along_w, g.const([wx["m"], hy["m"], width], I64)), perm=[1, 0, 2])
        resized = g.op("Reshape", grid, g.const([-1, width], I64))  # (H' W', D), row-major
    return _inputs_as(dt, table_in=np.asarray(table)), [(g.op("Concat", head, resized, axis=0), "table", "float")]


def _value_term(g: Graph, out: str, weights: str, u: str) -> str:
    """``out + sum_j weights[..., i, j] u[..., i, j, :]`` in the compute dtype: (B, H, Tq, 1, Tk) x
    (..., Tq, Tk, D) ``MatMul``."""
    w = g.op("Unsqueeze", g.cast(weights, g.compute), g.const([-2], I64))
    extra = g.op("Squeeze", g.op("MatMul", w, u), g.const([-2], I64))
    return g.op("Add", g.cast(out, g.compute), extra)


def build_attention_scheme(g: Graph, op: str, params: Mapping[str, Any], a: Mapping[str, Any]) -> tuple[Feeds, Outs]:
    """``attention.<scheme>`` as the positional part in the graph around one real ``Attention``
    (:func:`_attention_node`, opset 23): RoPE rotates q and k with one ``RotaryEmbedding`` each
    (opset 23, cos/sin caches from the positions, as rope.apply); ALiBi and T5 build their bias
    (``Pow``/``Abs``/``Sub``; the T5 bucket ladder and ``Gather``) and pass it in ``attn_mask``;
    Shaw, Transformer-XL and stored terms pass their logits term as ``term * scale`` in
    ``attn_mask`` and add the value term (Shaw, stored) under the operator's weights."""
    dt = g.x_dtype
    causal, past = _structural(params, a)
    feeds = _inputs_as(dt, q=a["q"], k=a["k"], v=a["v"])
    q, k, term, bias, u = "q", "k", None, None, None
    b, h, tq, d = a["q"].shape
    if op == "attention.rope":
        p = {"base": a["base"], "layout": a["layout"], "x_layout": "BHTD", "attention_factor": 1.0}
        q = _rotary(g, p, "q", a["q"].shape, "q_positions", tq, d, d)
        k = _rotary(g, p, "k", a["k"].shape, "k_positions", a["k"].shape[2], d, d)
        feeds += [("q_positions", a["q_positions"]), ("k_positions", a["k_positions"])]
    elif op in ("attention.alibi", "attention.t5"):
        qp, kp = a["q_positions"], a["k_positions"]
        feeds += [("q_positions", qp), ("k_positions", kp)]
        if op == "attention.alibi":
            slopes = g.op("Pow", g.const(2.0), g.op("Neg", g.const(a["exponents"])))
            bias = _alibi_bias(g, a["form"], slopes, "q_positions", "k_positions", qp, kp)
        else:
            bias = _t5_bias(g, "q_positions", "k_positions", "table", qp.ndim, a["limit"], a["side"], a["direction"])
            feeds += _inputs_as(dt, table=a["table"])
    elif op == "attention.shaw":
        feeds += [("q_positions", a["qp"]), ("k_positions", a["kp"]),
                  *_inputs_as(dt, rel_keys=a["rel_keys"], rel_values=a["rel_values"])]
        index = _shaw_index(g, params)  # (Tq, Tk)
        per_distance = g.op("MatMul", g.cast("q", g.compute), g.op("Transpose", g.cast("rel_keys", g.compute),
                                                                   perm=[1, 0]))  # (B, H, Tq, 2K + 1)
        term = g.op("GatherElements", per_distance, g.op("Expand", index, g.const([b, h, tq, a["k"].shape[2]], I64)),
                    axis=3)
        u = g.op("Gather", g.cast("rel_values", g.compute), index, axis=0)  # (Tq, Tk, D)
    elif op == "attention.xl":
        feeds += [("q_positions", a["qp"]), ("k_positions", a["kp"]),
                  *_inputs_as(dt, u_bias=a["u_bias"], v_bias=a["v_bias"], w_r=a["w_r"])]
        r = g.op("MatMul", g.op("Unsqueeze", _xl_embedding(g, _distance(g, "q_positions", "k_positions"),
                                                          a["w_r"].shape[1], a["base"]), g.const([0], I64)),
                 g.op("Unsqueeze", g.cast("w_r", g.compute), g.const([1], I64)))  # (H, Tq, Tk, D)
        query = g.op("Add", g.cast("q", g.compute), g.op("Unsqueeze", g.cast("v_bias", g.compute),
                                                          g.const([1], I64)))  # (B, H, Tq, D)
        bd = g.op("MatMul", g.op("Unsqueeze", query, g.const([-2], I64)), g.op("Transpose", r, perm=[0, 1, 3, 2]))
        heads = g.op("Gather", g.cast("k", g.compute), g.const(np.arange(h) // a["groups"], I64), axis=1)
        content = g.op("MatMul", g.op("Unsqueeze", g.cast("u_bias", g.compute), g.const([1], I64)),
                       g.op("Transpose", heads, perm=[0, 1, 3, 2]))  # (B, H, 1, Tk): u_h . k_j
        term = g.op("Add", g.op("Squeeze", bd, g.const([-2], I64)), content)
    else:  # attention.terms
        feeds += _inputs_as(dt, term=a["term"], value_term=a["value_term"])
        term, u = g.cast("term", g.compute), g.cast("value_term", g.compute)
    out, weights = _attention_node(g, a, causal, past, q, k, "v", term, bias)
    if u is not None:
        out = _value_term(g, out, weights, u)
    return feeds, [(out, "output", "float"), (weights, "weights", "float")]


def build_pipeline(g: Graph, c: Mapping[str, Any]) -> tuple[Feeds, Outs]:
    """One layer: ``Gather`` of the token rows, ``Add`` of the absolute encoding (input, or after
    the output projection), ``MatMul`` projections in the compute dtype, then the real ``Attention``
    (opset 23) on 3-D (B, T, H*D) inputs with ``q_num_heads``/``kv_num_heads`` (the operator splits
    the heads, GQA from the counts) and ``is_causal``, and the ``MatMul`` by ``w_o``."""
    dt = g.x_dtype
    x = g.op("Gather", g.cast("embedding", g.compute), "tokens", axis=0)  # (B, T, d)
    pe = g.cast("pe", g.compute)
    if c["placement"] == "input":
        x = g.op("Add", x, pe)
    q, k, v = (g.cast(g.op("MatMul", x, g.cast(n, g.compute)), dt) for n in ("w_q", "w_k", "w_v"))
    out = g._name("y")
    g.nodes.append(helper.make_node("Attention", [q, k, v], [out], q_num_heads=c["heads"], kv_num_heads=c["kv_heads"],
                                    is_causal=int(c["causal"]), scale=float(c["scale"])))
    y = g.op("MatMul", g.cast(out, g.compute), g.cast("w_o", g.compute))
    if c["placement"] == "after_block":
        y = g.op("Add", y, pe)
    feeds = [("tokens", c["tokens"]), *_inputs_as(dt, **{n: c[n] for n in ("embedding", "pe", "w_q", "w_k", "w_v",
                                                                            "w_o")})]
    return feeds, [(y, "output", "float")]


def _float32_size(params: Mapping[str, Any]) -> bool | str:
    """Whether ``Resize`` under float32 ``scales`` gives the output size of ``size_from="scale_factor"``:
    onnxruntime sizes each axis as ``floor(n * scale)`` with the float32 scale, the reference as the
    float64 floor of F.interpolate (13 * (15/13) is 14 in float64, 15 in float32)."""
    offset = float(params["scale_offset"])
    for n_name, new_name in (("in_size", "new_size"), ("grid_height", "new_height"), ("grid_width", "new_width")):
        if n_name not in params or not isinstance(params[n_name], int) or params[n_name] < 1:
            continue  # malformed sizes are the validator's to refuse
        n, new = int(params[n_name]), float(params[new_name])
        wide, narrow = np.floor(n * ((new + offset) / n)), np.floor(np.float32(n) * np.float32((new + offset) / n))
        if wide != narrow:
            return (f"Resize takes its scales as float32: {n_name}={n} scaled by ({new:g} + {offset:g}) / {n} gives "
                    f"{int(narrow)} rows in onnxruntime (floor of the float32 product), {int(wide)} in the float64 "
                    "floor of size_from='scale_factor'; no Resize setting gives that output size")
    return True
