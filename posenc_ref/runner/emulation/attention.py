"""Low-precision emulation of the attention ops (calibration only; see the package docs).

The pass as a float32 framework runs it (torch SDPA math backend, a fused kernel's float32
accumulators): inputs rounded to float32, logits, softmax and the weighted sum in float32.
Which keys are kept and the scale are read off the reference's own validated pass, so the
mask rules are never restated here.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from posenc_ref._attention_blockwise import Pass, _term
from posenc_ref.alibi import alibi_bias
from posenc_ref.attention import prepare_pass
from posenc_ref.attention_pipeline import attention_layer
from posenc_ref.attention_positional import shaw_terms, xl_terms
from posenc_ref.records.attention import attention_case, attention_terms_case
from posenc_ref.records.attention_positional import RECORDS as POSITIONAL
from posenc_ref.runner.emulation._common import Emulation, NameTable
from posenc_ref.runner.emulation.rope import rotate_lowp
from posenc_ref.t5 import t5_bias

OPS_BY_NAME: Final = NameTable({record.name: record for record in POSITIONAL},
                               "runner.emulation.attention.OPS_BY_NAME (op)")


def _pass_lowp(p: Pass, ct: type, subtract_max: bool = True) -> tuple[NDArray[Any], NDArray[Any]]:
    """Output and weights of a validated pass computed in dtype ``ct``.

    A logits term and value term (Shaw, Transformer-XL) are taken from the reference's
    plug-in and rounded to ``ct`` before they join the float32 arithmetic. ``subtract_max=False``
    is the hand-written-kernel bug ``exp(s) / sum exp(s)``: past a logit of 88.7 float32's exp
    overflows to inf and the row turns into NaN.
    """
    group = p.groups
    q: NDArray[Any] = p.q.astype(ct)
    k: NDArray[Any] = np.repeat(p.k.astype(ct), group, axis=1)  # (B, H, Tk, D)
    v: NDArray[Any] = np.repeat(p.v.astype(ct), group, axis=1)
    t, u = _term(p, 0, p.k.shape[2], (q.shape[0], q.shape[1], q.shape[2], p.k.shape[2]))
    s: NDArray[Any] = q @ k.transpose(0, 1, 3, 2)
    if t is not None:
        s = s + t.astype(ct)
    s = s * ct(p.scale)
    if p.bias is not None:
        s = s + p.bias.astype(ct)
    if p.additive is not None:
        s = s + p.additive.astype(ct)
    if p.keep is not None:
        s = np.where(p.keep, s, ct(-np.inf))
    m = s.max(axis=-1, keepdims=True)
    empty = m == -np.inf
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(s - np.where(empty, ct(0), m)) if subtract_max else np.exp(s)
    total = e.sum(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore"):
        w = e / np.where(empty, ct(1), total)
    rows = empty[..., 0]
    if p.fully_masked == "nan":
        w[rows] = np.nan
    elif p.fully_masked == "uniform":
        w[rows] = ct(1.0 / w.shape[-1])
    out: NDArray[Any] = w @ v
    if u is not None:
        out = out + np.einsum("bhqk,bhqkd->bhqd", w, np.broadcast_to(u.astype(ct), w.shape + (v.shape[-1],)))
    return out.astype(ct), w.astype(ct)


def _attention(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]], ct: type,
               at: type) -> dict[str, NDArray[Any]]:
    arrays = [inputs[n] for n in ("q", "k", "v", "mask", "key_padding_mask", "bias")]
    attention_case(*arrays, **params)  # the reference's validation, errors and fully-masked policy
    spec = prepare_pass(*arrays[:3], mask=arrays[3], key_padding_mask=arrays[4], bias=arrays[5], **params)
    out, weights = _pass_lowp(spec, ct)
    return {"output": out, "weights": weights}


def softmax_without_max(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> dict[
        str, NDArray[Any]]:
    """The ``attention`` op in float32 with its softmax as ``exp(s) / sum exp(s)`` (no row max
    subtracted), the fully-masked policy kept: what the mutant plants and the diagnosis names."""
    arrays = [inputs[n] for n in ("q", "k", "v", "mask", "key_padding_mask", "bias")]
    attention_case(*arrays, **params)
    spec = prepare_pass(*arrays[:3], mask=arrays[3], key_padding_mask=arrays[4], bias=arrays[5], **params)
    out, weights = _pass_lowp(spec, np.float32, subtract_max=False)
    return {"output": out, "weights": weights}


def _terms(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]], ct: type,
           at: type) -> dict[str, NDArray[Any]]:
    names = ("q", "k", "v", "term", "value_term")
    attention_terms_case(*(inputs[n] for n in names), **params)  # validation and errors
    spec = prepare_pass(inputs["q"], inputs["k"], inputs["v"], **params)
    group = spec.groups
    q: NDArray[Any] = spec.q.astype(ct)
    k: NDArray[Any] = np.repeat(spec.k.astype(ct), group, axis=1)
    v: NDArray[Any] = np.repeat(spec.v.astype(ct), group, axis=1)
    s: NDArray[Any] = (q @ k.transpose(0, 1, 3, 2) + inputs["term"].astype(ct)) * ct(spec.scale)
    if spec.keep is not None:
        s = np.where(spec.keep, s, ct(-np.inf))
    m = s.max(axis=-1, keepdims=True)
    empty = m == -np.inf
    e = np.exp(s - np.where(empty, ct(0), m))
    w = e / np.where(empty, ct(1), e.sum(axis=-1, keepdims=True))
    u: NDArray[Any] = np.broadcast_to(inputs["value_term"].astype(ct), w.shape + (v.shape[-1],))
    out = w @ v + np.einsum("bhqk,bhqkd->bhqd", w, u)
    return {"output": out.astype(ct), "weights": w.astype(ct)}


def _pipeline(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]], ct: type,
              at: type) -> dict[str, NDArray[Any]]:
    names = ("tokens", "embedding", "pe", "w_q", "w_k", "w_v", "w_o")
    attention_layer(*(inputs[n] for n in names), **params)  # validation and errors
    heads = int(params["num_heads"])
    kv_heads = int(params.get("num_kv_heads") or heads)
    table: NDArray[Any] = inputs["embedding"].astype(ct)
    pe: NDArray[Any] = inputs["pe"].astype(ct)
    w: dict[str, NDArray[Any]] = {n: inputs[n].astype(ct) for n in names[3:]}
    x = table[np.asarray(inputs["tokens"])]
    if params.get("pe_placement", "input") == "input":
        x = x + pe
    b, t, _ = x.shape
    head_dim = w["w_q"].shape[1] // heads

    def split(y: NDArray[Any], n: int) -> NDArray[Any]:
        return y.reshape(b, t, n, head_dim).transpose(0, 2, 1, 3)

    spec = prepare_pass(split(x @ w["w_q"], heads), split(x @ w["w_k"], kv_heads), split(x @ w["w_v"], kv_heads),
                        causal=params.get("causal", True))
    out, _ = _pass_lowp(spec, ct)  # the float32 projections convert to float64 exactly and back
    y: NDArray[Any] = out.transpose(0, 2, 1, 3).reshape(b, t, heads * head_dim) @ w["w_o"]
    if params.get("pe_placement", "input") == "after_block":
        y = y + pe
    return {"output": y.astype(ct)}


def _rope_lowp(base: float, layout: str, ct: type, at: type) -> Any:
    """The RoPE q/k transform as a float32 framework runs it: angles in ``at``, the rotation in ``ct``."""
    settings = {"base": base, "layout": layout, "x_layout": "BHTD", "rotary_dim": None, "partial": "prefix",
                "attention_factor": 1.0}

    def transform(q: NDArray[Any], k: NDArray[Any], q_positions: Any, k_positions: Any) -> tuple[Any, Any]:
        return (rotate_lowp(q, q_positions, settings, ct, at)[0].astype(np.float64),
                rotate_lowp(k, k_positions, settings, ct, at)[0].astype(np.float64))
    return transform


def _positional(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]], ct: type,
                at: type, *, op: str) -> dict[str, NDArray[Any]]:
    """A scheme plugged in: inputs rounded to ``ct``, the plug-in from the reference, the pass in ``ct``."""
    record = OPS_BY_NAME[op]
    record.call(params, inputs)  # the reference's validation and errors
    rounded: dict[str, Any] = {n: a.astype(ct).astype(np.float64) if a.dtype.kind == "f" else a
                               for n, a in inputs.items()}
    q, k, v = rounded["q"], rounded["k"], rounded["v"]
    common: dict[str, Any] = {n: params[n] for n in ("scale", "softmax_multiplier", "causal", "alignment")
                              if n in params}
    positions: dict[str, Any] = {"q_positions": rounded["q_positions"], "k_positions": rounded["k_positions"]}
    if op == "attention.rope":
        spec = prepare_pass(q, k, v, qk_transform=_rope_lowp(params["base"], params["layout"], ct, at),
                            **positions, **common)
    elif op == "attention.alibi":
        bias = alibi_bias(positions["q_positions"], positions["k_positions"], num_heads=q.shape[1],
                          form=params["form"])
        spec = prepare_pass(q, k, v, bias=bias, **common)
    elif op == "attention.t5":
        bias = t5_bias(positions["q_positions"], positions["k_positions"], rounded["table"],
                       num_buckets=params["num_buckets"], max_distance=params["max_distance"],
                       direction=params["direction"])
        spec = prepare_pass(q, k, v, bias=bias, **common)
    elif op == "attention.shaw":
        term = shaw_terms(rounded["rel_keys"], rounded["rel_values"],
                          max_relative_position=params["max_relative_position"], sign=params["sign"])
        spec = prepare_pass(q, k, v, logits_term=term, **positions, **common)
    else:
        term = xl_terms(rounded["u_bias"], rounded["v_bias"], rounded["w_r"], base=params["base"])
        spec = prepare_pass(q, k, v, logits_term=term, **positions, **common)
    out, weights = _pass_lowp(spec, ct)
    return {"output": out, "weights": weights}


EMULATIONS: Final[dict[str, Emulation]] = {
    **{op: partial(_positional, op=op) for op in OPS_BY_NAME},
    "attention": _attention,
    "attention.terms": _terms,
    "attention.pipeline": _pipeline,
}
