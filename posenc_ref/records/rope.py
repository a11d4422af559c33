"""Registry records of the RoPE ops (:mod:`posenc_ref.rope`, :mod:`posenc_ref.rope_variants`).

The frequency ops live in :mod:`posenc_ref.records.rope_scaling` and are listed first in :data:`RECORDS`.

Tolerance phases: a table element ``a cos(p w)`` has phase ``a p w``. A rotated channel has
phase ``a |(u, v)| (1 + |p w|)``: an angle error ``delta`` moves the pair by ``|(u, v)| delta``,
and the ``1 +`` covers the rounding of the products at unit phase. A score sums such pair
errors over the pairs of q and k: its phase is ``a^2 sum_i |q_i| |k_i| (1 + |m w_i| + |n w_i|)``
(times the xPos weight), plus ``sum |q_j k_j|`` over pass-through channels.

Input scales (the input-rounding term, :mod:`posenc_ref.tolerance`): a rotated channel
``a (u cos - v sin)`` has the terms ``a u cos`` and ``a v sin`` with one input factor each, so
its scale is ``a (|u| |cos| + |v| |sin|)`` (``|x|`` on pass-through channels). A score
``<R q, R k>`` expands into products of such terms with two input factors each: its scale is
``2 sum_d A_q,d A_k,d`` with ``A`` those per-channel sums (times the xPos weight of the pair).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from posenc_ref import rope as rp
from posenc_ref import rope_scaling as rs
from posenc_ref import rope_variants as rv
from posenc_ref.opspec import Case, OpRecord, Output, Param, error_cases
from posenc_ref.records.rope_scaling import BASE, BASES, HEAD_DIMS
from posenc_ref.records.rope_scaling import RECORDS as SCALING_RECORDS

CITATION = "Su et al. 2021, RoFormer, arXiv:2104.09864, section 3.4.2 (eq. 34)"
LONG = np.array([0, 1, 4095, 8191, 131071, 10**6], dtype=np.int64)
LAYOUT_USERS = {
    "half": "transformers rotate_half; GPT-NeoX; vLLM is_neox_style=True; ONNX interleaved=0; flash-attn",
    "interleaved": "RoFormer; Meta Llama complex; GPT-J; Cohere; GLM; vLLM is_neox_style=False; ONNX interleaved=1",
    "interleaved_to_half": "transformers 5.x DeepSeek-V3 apply_rotary_pos_emb_interleave",
}
LAYOUT = Param("layout", "str", "half", rp.LAYOUTS, users=LAYOUT_USERS, doc="which channels form a pair")
SCORE_LAYOUT = Param("layout", "str", "half", ("half", "interleaved"),
                     users={k: LAYOUT_USERS[k] for k in ("half", "interleaved")}, doc="which channels form a pair")
PARTIAL = Param("partial", "str", "prefix", rp.PARTIALS,
                users={"prefix": "GPT-NeoX rotary_pct; Phi; GLM; vLLM rotary_dim; ONNX rotary_embedding_dim",
                       "proportional": "Gemma 4 (transformers 5.x, vLLM Gemma4RotaryEmbedding); Gemma JAX"},
                doc="meaning of rotary_dim < head dim")
X_LAYOUT = Param("x_layout", "str", "BHTD", rp.X_LAYOUTS,
                 users={"BHTD": "transformers; ONNX 4-D", "BTHD": "flash-attn; vLLM"}, doc="axis order of x")
ROTARY_DIM = Param("rotary_dim", "int", None, doc="rotated channels (None: whole head)")
FACTOR_A = Param("attention_factor", "float", 1.0, doc="multiplies cos and sin (transformers attention_scaling)")


def _pair_norms(x: NDArray[np.float64], space: int, layout: str) -> NDArray[np.float64]:
    """|(u, v)| of each channel's pair (0 for pass-through channels), same shape as x."""
    n = space // 2
    out = np.zeros_like(x)
    if layout == "half":
        r = np.hypot(x[..., :n], x[..., n:space])
        out[..., :n], out[..., n:space] = r, r
    else:
        r = np.hypot(x[..., 0:space:2], x[..., 1:space:2])
        out[..., 0:space:2], out[..., 1:space:2] = r, r
        if layout == "interleaved_to_half":  # results land in half order
            out[..., :n], out[..., n:space] = r, r
    return out


def _abs_rotated(params: Mapping[str, Any], x: NDArray[Any], positions: NDArray[Any]) -> NDArray[np.float64]:
    """Per channel, ``sum |term|`` of the rotated value: ``a (|u| |cos| + |v| |sin|)``, ``|x|`` if not rotated.

    Same shape and axis order as ``x``; pairs and output slots as :func:`posenc_ref.rope.rope_apply`.
    """
    values = np.abs(np.asarray(x, dtype=np.float64))
    space, w = rp.rotary_frequencies(values.shape[-1], base=params["base"], rotary_dim=params.get("rotary_dim"),
                                     partial=params.get("partial", "prefix"), func="input_scale")
    angle = rp._angles("input_scale", positions, w, values.shape, params["x_layout"], "positions")
    factor = float(params.get("attention_factor", 1.0))
    cos, sin = factor * np.abs(np.cos(angle)), factor * np.abs(np.sin(angle))
    n, layout = space // 2, params["layout"]
    u, v = (values[..., :n], values[..., n:space]) if layout == "half" else (
        values[..., 0:space:2], values[..., 1:space:2])
    out = np.empty(np.broadcast_shapes(values.shape, angle.shape[:-1] + (values.shape[-1],)))
    out[..., space:] = values[..., space:]
    if layout == "interleaved":
        out[..., 0:space:2], out[..., 1:space:2] = u * cos + v * sin, u * sin + v * cos
    else:
        out[..., :n], out[..., n:space] = u * cos + v * sin, u * sin + v * cos
    return out


def _apply_input_scale(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> NDArray[np.float64]:
    return _abs_rotated(params, inputs["x"], inputs["positions"])


def _scores_input_scale(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> NDArray[np.float64]:
    aq = _abs_rotated(params, inputs["q"], inputs["q_positions"])
    ak = _abs_rotated(params, inputs["k"], inputs["k_positions"])
    if params["x_layout"] == "BTHD":
        aq, ak = aq.transpose(0, 2, 1, 3), ak.transpose(0, 2, 1, 3)
    if params.get("xpos_scale_base") is None:
        return np.asarray(2.0 * np.einsum("bhqd,bhkd->bhqk", aq, ak), dtype=np.float64)
    space, _ = rp.rotary_frequencies(aq.shape[-1], base=params["base"], rotary_dim=params["rotary_dim"],
                                     partial=params["partial"], func="input_scale")
    n = space // 2
    zeta = (2.0 * np.arange(n) + 0.4 * space) / (1.4 * space)
    qp = np.asarray(inputs["q_positions"]).reshape(-1, aq.shape[2]).astype(np.float64)
    kp = np.asarray(inputs["k_positions"]).reshape(-1, ak.shape[2]).astype(np.float64)
    weight = zeta ** ((qp[:, :, None] - kp[:, None, :])[:, None, :, :, None] / params["xpos_scale_base"])
    first, second = (slice(0, n), slice(n, space)) if params["layout"] == "half" else (
        slice(0, space, 2), slice(1, space, 2))
    pairs = (np.einsum("bhqp,bhkp->bhqkp", aq[..., first], ak[..., first])
             + np.einsum("bhqp,bhkp->bhqkp", aq[..., second], ak[..., second]))
    rest = np.einsum("bhqd,bhkd->bhqk", aq[..., space:], ak[..., space:])
    return np.asarray(2.0 * (np.sum(pairs * weight, axis=-1) + rest), dtype=np.float64)


def _angle_per_channel(params: Mapping[str, Any], x: NDArray[Any], positions: NDArray[Any]) -> tuple[
        NDArray[np.float64], int]:
    space, w = rp.rotary_frequencies(x.shape[-1], base=params["base"], rotary_dim=params["rotary_dim"],
                                     partial=params["partial"], func="phase")
    angle = np.abs(rp._angles("phase", positions, w, x.shape, params["x_layout"], "positions"))
    full = np.zeros(np.broadcast_shapes(angle.shape[:-1], x.shape[:-1]) + (x.shape[-1],))
    full[..., : space // 2] = angle
    full[..., space // 2: space] = angle
    if params["layout"] == "interleaved":
        full[..., :space] = np.repeat(angle, 2, axis=-1)
    return full, space


def _apply_phase(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> NDArray[np.float64]:
    x = np.asarray(inputs["x"], dtype=np.float64)
    angle, space = _angle_per_channel(params, x, inputs["positions"])
    norms = _pair_norms(x, space, params["layout"])
    return np.asarray(params["attention_factor"] * norms * (1.0 + angle), dtype=np.float64)


def _pair_phase(params: Mapping[str, Any], x: NDArray[np.float64], positions: NDArray[Any]) -> tuple[
        NDArray[np.float64], NDArray[np.float64], int]:
    """Per pair: ``|(u, v)|`` (B, H, T, P) and ``|p w|`` (B|1, 1, T, P), in BHTD order; and ``S``."""
    space, w = rp.rotary_frequencies(x.shape[-1], base=params["base"], rotary_dim=params["rotary_dim"],
                                     partial=params["partial"], func="phase")
    angle = np.abs(rp._angles("phase", positions, w, x.shape, params["x_layout"], "positions"))
    n = space // 2
    u, v = (x[..., :n], x[..., n:space]) if params["layout"] == "half" else (x[..., 0:space:2], x[..., 1:space:2])
    norm = np.hypot(u, v)
    if params["x_layout"] == "BTHD":
        norm, angle = norm.transpose(0, 2, 1, 3), angle.transpose(0, 2, 1, 3)
    return norm, angle, space


def _scores_phase(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> NDArray[np.float64]:
    q, k = np.asarray(inputs["q"], dtype=np.float64), np.asarray(inputs["k"], dtype=np.float64)
    rq, aq, space = _pair_phase(params, q, inputs["q_positions"])
    rk, ak, _ = _pair_phase(params, k, inputs["k_positions"])
    if params.get("xpos_scale_base") is None:
        total = np.einsum("bhqp,bhkp->bhqk", rq * (1.0 + aq), rk) + np.einsum("bhqp,bhkp->bhqk", rq, rk * ak)
    else:  # pair weights zeta^x and their own rounding |x ln zeta|
        n = space // 2
        zeta = (2.0 * np.arange(n) + 0.4 * space) / (1.4 * space)
        qp = np.asarray(inputs["q_positions"]).reshape(-1, rq.shape[2]).astype(np.float64)
        kp = np.asarray(inputs["k_positions"]).reshape(-1, rk.shape[2]).astype(np.float64)
        x = (qp[:, :, None] - kp[:, None, :])[:, None, :, :, None] / params["xpos_scale_base"]
        weight = zeta**x  # (B|1, 1, Tq, Tk, P)
        own = weight * (1.0 + np.abs(x * np.log(zeta)))
        total = (np.einsum("bhqp,bhkp,bhqkp->bhqk", rq * (1.0 + aq), rk, own)
                 + np.einsum("bhqp,bhkp,bhqkp->bhqk", rq, rk * ak, weight))
    if params["x_layout"] == "BTHD":
        q, k = q.transpose(0, 2, 1, 3), k.transpose(0, 2, 1, 3)
    rest = np.einsum("bhqd,bhkd->bhqk", np.abs(q[..., space:]), np.abs(k[..., space:]))
    phase: NDArray[np.float64] = np.asarray(params["attention_factor"] ** 2 * total + rest, dtype=np.float64)
    return phase


def _table_phase(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> NDArray[np.float64]:
    product = np.asarray(inputs["positions"], dtype=np.float64)[..., None] * np.asarray(inputs["inv_freq"])
    angle: NDArray[np.float64] = params["attention_factor"] * np.abs(product)
    if params["width"] == "full":
        return np.concatenate([angle, angle], axis=-1)
    if params["width"] == "full_interleaved":
        return np.repeat(angle, 2, axis=-1)
    return angle


# --- rope.cos_sin ----------------------------------------------------------------------------

def _table_inputs(positions: Any, **freq: Any) -> dict[str, NDArray[Any]]:
    return {"positions": np.asarray(positions, dtype=np.int64), "inv_freq": rs.rope_inv_freq(**freq)[0]}


_YARN16 = rs.rope_inv_freq(dim=128, rope_type="yarn", factor=16.0, original_max_position=4096)


def _cos_sin_cases() -> tuple[Case, ...]:
    p = "rope.cos_sin"
    cases = [Case(f"{p}.d{d}.base{int(b)}.long", {"width": "half"}, _table_inputs(LONG, dim=d, base=b),
                  f"half-width cache at positions to 10^6, head dim {d}, base {b:g}", kind="long_position",
                  flags=("LongPosition",))
             for d, b in zip(HEAD_DIMS, BASES)]
    cases += [Case(f"{p}.{width}.d16.positions0-15", {"width": width}, _table_inputs(np.arange(16), dim=16),
                   f"width={width}: where each column's frequency lands") for width in rp.WIDTHS]
    cases += [
        Case(f"{p}.yarn_attention_factor_folded", {"width": "full", "attention_factor": float(_YARN16[1][0])},
             {"positions": np.array([0, 1, 4095, 65535]), "inv_freq": _YARN16[0]},
             "YaRN s16 frequencies with attention factor 1.2773 folded into cos and sin (transformers)"),
        Case(f"{p}.positions_2d_repeated", {"width": "full"},
             _table_inputs([[0, 0, 1, 2], [5, 3, 3, 8191]], dim=32),
             "(B, T) positions, repeated and non-monotonic", kind="edge"),
    ]
    cases += error_cases(p, [
        ("negative_position", {"width": "half"}, _table_inputs([1, -1], dim=8), "invalid_argument",
         "a negative position"),
        ("inv_freq_2d", {"width": "half"}, {"positions": np.array([1]), "inv_freq": np.ones((2, 2))},
         "invalid_shape", "inv_freq must be (P,)"),
        ("attention_factor_zero", {"width": "half", "attention_factor": 0.0}, _table_inputs([1], dim=8),
         "invalid_argument", "attention_factor <= 0"),
        ("unknown_width", {"width": "double"}, _table_inputs([1], dim=8), "invalid_argument", "unknown width"),
    ])
    return tuple(cases)


COS_SIN = OpRecord(
    name="rope.cos_sin",
    family="rope",
    function=rp.rope_cos_sin,
    inputs=("positions", "inv_freq"),
    outputs=(Output("cos", "float64", "phase", _table_phase), Output("sin", "float64", "phase", _table_phase)),
    params=(
        FACTOR_A,
        Param("width", "str", "full", rp.WIDTHS,
              users={"half": "ONNX RotaryEmbedding caches; flash-attn; vLLM cos_sin_cache halves",
                     "full": "transformers cat(freqs, freqs)",
                     "full_interleaved": "GPT-J / GLM repeat_interleave"},
              doc="table width and column order"),
    ),
    summary="cos/sin tables for explicit positions, attention factor folded in",
    citation=CITATION,
    cases=_cos_sin_cases(),
    position_inputs=("positions",),
)


# --- rope.apply ------------------------------------------------------------------------------

def _x(shape: tuple[int, ...], positions: Any) -> Any:
    def make(rng: np.random.Generator) -> dict[str, NDArray[Any]]:
        return {"x": rng.normal(size=shape), "positions": np.asarray(positions, dtype=np.int64)}
    return make


LONG8 = [0, 1, 2, 4095, 8191, 131071, 999999, 10**6]


def _apply_cases() -> tuple[Case, ...]:
    p = "rope.apply"
    cases = [Case(f"{p}.{layout}.long.d64", {"layout": layout}, _x((1, 2, 8, 64), LONG8),
                  f"layout={layout} at positions 0..10^6", kind="long_position", flags=("LongPosition",))
             for layout in rp.LAYOUTS]
    cases += [Case(f"{p}.half.d{d}.base{int(b)}", {"base": b}, _x((1, 2, 6, d), [0, 1, 2, 3, 8191, 131071]),
                   f"head dim {d}, base {b:g}") for d, b in zip(HEAD_DIMS, BASES)]
    for d, rd in ((96, 24), (96, 48), (80, 40)):
        for layout in ("half", "interleaved"):
            cases.append(Case(f"{p}.prefix.{layout}.d{d}.rotary{rd}", {"rotary_dim": rd, "layout": layout},
                              _x((1, 2, 4, d), [0, 7, 4095, 131071]),
                              f"partial prefix {rd}/{d}: exponent over {rd}, channels {rd}.. untouched"))
        cases.append(Case(f"{p}.proportional.d{d}.rotary{rd}", {"rotary_dim": rd, "partial": "proportional"},
                          _x((1, 2, 4, d), [0, 7, 4095, 131071]),
                          f"proportional {rd}/{d}: pairs (i, i + {d // 2}), exponent over {d}, zero frequencies"))
    cases += [
        Case(f"{p}.bthd.batch_positions", {"x_layout": "BTHD"},
             _x((2, 5, 3, 16), [[0, 1, 2, 3, 4], [0, 0, 0, 1, 2]]),
             "(B, T, H, D) with per-row positions (left padding)"),
        Case(f"{p}.attention_factor", {"attention_factor": 1.2772588722239782}, _x((1, 1, 3, 32), [0, 9, 4095]),
             "YaRN attention factor folded into cos and sin scales the rotated channels"),
        Case(f"{p}.decode_offset", {}, _x((1, 2, 1, 64), [4100]), "one decoding step at position 4100", kind="edge"),
        Case(f"{p}.interleaved_to_half.rotary32.d64", {"layout": "interleaved_to_half", "rotary_dim": 32},
             _x((1, 1, 3, 64), [0, 5, 4095]), "DeepSeek-V3 order on a rope-part prefix", kind="edge"),
    ]
    cases += error_cases(p, [
        ("odd_rotary_dim", {"rotary_dim": 5}, _x((1, 1, 2, 8), [0, 1]), "invalid_argument", "odd rotary dim"),
        ("rotary_dim_above_head_dim", {"rotary_dim": 16}, _x((1, 1, 2, 8), [0, 1]), "invalid_argument",
         "rotary_dim > head dim"),
        ("unknown_layout", {"layout": "neox"}, _x((1, 1, 2, 8), [0, 1]), "invalid_argument", "unknown layout"),
        ("positions_wrong_length", {}, _x((1, 1, 2, 8), [0, 1, 2]), "invalid_shape", "positions of length 3 for T = 2"),
        ("x_rank3", {}, _x((1, 2, 8), [0, 1]), "invalid_shape", "x must be 4-D"),
        ("negative_position", {}, _x((1, 1, 2, 8), [0, -1]), "invalid_argument", "a negative position"),
        ("odd_head_dim", {}, _x((1, 1, 2, 7), [0, 1]), "invalid_argument", "odd head dim rotated whole"),
    ])
    return tuple(cases)


APPLY_PARAMS = (BASE, ROTARY_DIM, PARTIAL, LAYOUT, X_LAYOUT, FACTOR_A)
APPLY = OpRecord(
    name="rope.apply",
    family="rope",
    function=rp.rope_apply,
    inputs=("x", "positions"),
    outputs=(Output("y", "float64", "phase", _apply_phase, _apply_input_scale),),
    params=APPLY_PARAMS,
    summary="rotate q or k at explicit positions: layouts, partial prefix / proportional",
    citation=CITATION,
    cases=_apply_cases(),
    position_inputs=("positions",),
    value_inputs=("x",),
)


# --- rope.scores -----------------------------------------------------------------------------

def _qk(shape_q: tuple[int, ...], shape_k: tuple[int, ...], qpos: Any, kpos: Any) -> Any:
    def make(rng: np.random.Generator) -> dict[str, NDArray[Any]]:
        return {"q": rng.normal(size=shape_q), "k": rng.normal(size=shape_k),
                "q_positions": np.asarray(qpos, dtype=np.int64), "k_positions": np.asarray(kpos, dtype=np.int64)}
    return make


def _scores_cases() -> tuple[Case, ...]:
    p = "rope.scores"
    cases = [Case(f"{p}.{layout}.d64", {"layout": layout}, _qk((1, 2, 3, 64), (1, 2, 5, 64), [2, 3, 4], range(5)),
                  f"layout={layout}: q at 2..4, k at 0..4") for layout in ("half", "interleaved")]
    cases += [
        Case(f"{p}.decode.kv_cache", {}, _qk((1, 2, 1, 64), (1, 2, 4, 64), [4100], [0, 1, 4095, 4100]),
             "one query at 4100 against cached keys"),
        Case(f"{p}.long.offsets_near_1e6", {"base": 5e5}, _qk((1, 1, 2, 128), (1, 1, 3, 128),
                                                                [999999, 10**6], [999000, 999999, 10**6]),
             "positions near 10^6: scores depend on m - n only, but implementations round p * w",
             kind="long_position", flags=("LongPosition",)),
        Case(f"{p}.cross_attention", {"x_layout": "BTHD"}, _qk((2, 3, 2, 32), (2, 4, 2, 32),
                                                                [[0, 1, 2], [7, 8, 9]], [0, 10, 20, 30]),
             "cross-attention: q and k positions unrelated, (B, T, H, D)"),
        Case(f"{p}.prefix.d96.rotary24", {"rotary_dim": 24}, _qk((1, 1, 3, 96), (1, 1, 3, 96), [0, 5, 9], [1, 2, 3]),
             "partial prefix: pass-through channels add their plain dot product"),
        Case(f"{p}.proportional.d96.rotary48", {"rotary_dim": 48, "partial": "proportional"},
             _qk((1, 1, 3, 96), (1, 1, 3, 96), [0, 5, 9], [1, 2, 3]), "proportional rotation"),
        Case(f"{p}.attention_factor_squared", {"attention_factor": 1.2772588722239782},
             _qk((1, 1, 2, 32), (1, 1, 2, 32), [3, 4], [0, 4]), "the attention factor scales logits by its square"),
        Case(f"{p}.xpos.interleaved", {"layout": "interleaved", "xpos_scale_base": 512.0},
             _qk((1, 2, 4, 32), (1, 2, 4, 32), [0, 1, 2, 3], [0, 1, 2, 3]),
             "xPos (lucidrains): pair weights zeta^((m - n)/512), centring-independent"),
        Case(f"{p}.xpos.half.long", {"xpos_scale_base": 512.0},
             _qk((1, 1, 2, 64), (1, 1, 3, 64), [8191, 8192], [4095, 8000, 8192]),
             "xPos at offsets up to 4097", kind="long_position", flags=("LongPosition",)),
    ]
    cases += error_cases(p, [
        ("head_mismatch", {}, _qk((1, 2, 2, 8), (1, 3, 2, 8), [0, 1], [0, 1]), "invalid_shape",
         "q and k with different head counts"),
        ("k_positions_wrong_length", {}, _qk((1, 1, 2, 8), (1, 1, 3, 8), [0, 1], [0, 1]), "invalid_shape",
         "k_positions of length 2 for Tk = 3"),
        ("xpos_scale_base_zero", {"xpos_scale_base": 0.0}, _qk((1, 1, 2, 8), (1, 1, 2, 8), [0, 1], [0, 1]),
         "invalid_argument", "xpos_scale_base <= 0"),
    ])
    return tuple(cases)


SCORES = OpRecord(
    name="rope.scores",
    family="rope",
    function=rp.rope_scores,
    inputs=("q", "k", "q_positions", "k_positions"),
    outputs=(Output("scores", "float64", "phase", _scores_phase, _scores_input_scale),),
    params=(BASE, ROTARY_DIM, PARTIAL, SCORE_LAYOUT, X_LAYOUT, FACTOR_A,
            Param("xpos_scale_base", "float", None, doc="xPos scale base (512); None: plain RoPE")),
    summary="q.k logits with q and k rotated at their own positions (layout- and xPos-centre-independent)",
    citation=CITATION + "; Sun et al. 2022 xPos arXiv:2212.10554",
    cases=_scores_cases(),
    position_inputs=("q_positions", "k_positions"),
    value_inputs=("q", "k"),
)



# --- rope.xpos -------------------------------------------------------------------------------

def _xpos_phase_of(name: str) -> Any:
    def phase(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> NDArray[np.float64]:
        x = np.asarray(inputs[name], dtype=np.float64)
        common = {"base": params["base"], "rotary_dim": None, "partial": "prefix", "x_layout": params["x_layout"]}
        angle, space = _angle_per_channel({**common, "layout": params["layout"]}, x, inputs["positions"])
        norms = _pair_norms(x, space, params["layout"])
        t_axis = 2 if params["x_layout"] == "BHTD" else 1
        centre = rv.xpos_centre(x.shape[t_axis], params["centring"])
        pos = np.asarray(inputs["positions"]).reshape(-1, x.shape[t_axis]).astype(np.float64)
        power = np.abs(pos - centre) / params["scale_base"]
        power = power[:, None, :, None] if params["x_layout"] == "BHTD" else power[:, :, None, None]
        # the largest scale of any pair bounds this channel's: zeta^-|power| <= (1.4/0.4)^|power|
        bound = (1.4 / 0.4) ** power * (1.0 + power * np.log(1.4 / 0.4))
        return np.asarray(norms * (1.0 + angle) * bound, dtype=np.float64)
    return phase


def _xpos_input_scale_of(name: str) -> Any:
    def input_scale(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> NDArray[np.float64]:
        x = np.asarray(inputs[name], dtype=np.float64)
        common = {"base": params["base"], "rotary_dim": None, "partial": "prefix", "x_layout": params["x_layout"],
                  "layout": params["layout"]}
        rotated = _abs_rotated(common, x, inputs["positions"])
        t_axis = 2 if params["x_layout"] == "BHTD" else 1
        width = x.shape[-1]
        zeta = (2.0 * np.arange(width // 2) + 0.4 * width) / (1.4 * width)
        pos = np.asarray(inputs["positions"]).reshape(-1, x.shape[t_axis]).astype(np.float64)
        power = (pos - rv.xpos_centre(x.shape[t_axis], params["centring"])) / params["scale_base"]
        power = power[:, None, :, None] if params["x_layout"] == "BHTD" else power[:, :, None, None]
        up = zeta ** (power if name == "q" else -power)
        scale = np.repeat(up, 2, axis=-1) if params["layout"] == "interleaved" else np.concatenate([up, up], axis=-1)
        return np.asarray(rotated * scale, dtype=np.float64)
    return input_scale


def _qk_window(shape: tuple[int, ...], positions: Any) -> Any:
    def make(rng: np.random.Generator) -> dict[str, NDArray[Any]]:
        return {"q": rng.normal(size=shape), "k": rng.normal(size=shape),
                "positions": np.asarray(positions, dtype=np.int64)}
    return make


XPOS = OpRecord(
    name="rope.xpos",
    family="rope",
    function=rv.rope_xpos,
    inputs=("q", "k", "positions"),
    outputs=(Output("q_rot", "float64", "phase", _xpos_phase_of("q"), _xpos_input_scale_of("q")),
             Output("k_rot", "float64", "phase", _xpos_phase_of("k"), _xpos_input_scale_of("k"))),
    params=(
        BASE,
        Param("scale_base", "float", 512.0, doc="xPos scale base B (lucidrains xpos_scale_base)"),
        Param("centring", "str", "lucidrains", rv.CENTRINGS,
              users={"lucidrains": "lucidrains/rotary-embedding-torch use_xpos (c = T // 2)",
                     "torchscale": "microsoft/torchscale XPOS (c = ceil(T / 2))"},
              doc="where the scale power is zero"),
        Param("layout", "str", "interleaved", ("interleaved", "half"), doc="pairs (both xPos libraries: interleaved)"),
        X_LAYOUT,
    ),
    summary="xPos-rotated q and k in one window (centring convention named; compare scores across centrings)",
    citation="Sun et al. 2022, A Length-Extrapolatable Transformer, arXiv:2212.10554, eq. 7",
    cases=tuple([
        Case(f"rope.xpos.{centring}.odd_window.d32", {"centring": centring}, _qk_window((1, 2, 5, 32), range(5)),
             f"centring={centring} on an odd window (T = 5): the centres differ") for centring in rv.CENTRINGS
    ] + [
        Case("rope.xpos.even_window.long.d64", {"scale_base": 512.0}, _qk_window((1, 1, 4, 64), [4094, 4095, 4096,
                                                                                               4097]),
             "positions near 4096 in a window of 4", kind="long_position", flags=("LongPosition",)),
        Case("rope.xpos.half.bthd", {"layout": "half", "x_layout": "BTHD"}, _qk_window((2, 6, 2, 16), range(6)),
             "half-split pairs, (B, T, H, D)"),
    ] + error_cases("rope.xpos", [
        ("scale_base_zero", {"scale_base": 0.0}, _qk_window((1, 1, 2, 8), [0, 1]), "invalid_argument",
         "scale_base <= 0"),
        ("unknown_centring", {"centring": "middle"}, _qk_window((1, 1, 2, 8), [0, 1]), "invalid_argument",
         "unknown centring"),
        ("scale_overflows", {"scale_base": 1.0}, _qk_window((1, 1, 2, 8), [0, 10**6]), "out_of_range",
         "zeta ** (10^6 / 1) is beyond float64"),
    ])),
    position_inputs=("positions",),
    value_inputs=("q", "k"),
)


# --- rope.mrope_cos_sin ----------------------------------------------------------------------

def _mrope_phase(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> NDArray[np.float64]:
    section = np.asarray(inputs["mrope_section"])
    dim = int(params["dim"])
    stream = rv.mrope_stream(dim // 2, (int(section[0]), int(section[1]), int(section[2])), params["mrope_layout"])
    w = rs.rope_inv_freq(dim=dim, base=params["base"])[0]
    pos = np.asarray(inputs["positions"], dtype=np.float64)
    angle: NDArray[np.float64] = np.moveaxis(pos[stream], 0, -1) * w
    return np.concatenate([angle, angle], axis=-1) if params["width"] == "full" else angle


def _mrope(positions: Any, section: tuple[int, ...]) -> dict[str, NDArray[np.int64]]:
    return {"positions": np.asarray(positions, dtype=np.int64), "mrope_section": np.asarray(section, dtype=np.int64)}


_VISION = [[0, 1, 2, 3, 3, 3, 3, 7, 8], [0, 1, 2, 3, 3, 4, 4, 7, 8], [0, 1, 2, 3, 4, 3, 4, 7, 8]]
_LONG_STREAMS = [[0, 4095, 131071, 10**6], [0, 4095, 131000, 10**6], [0, 4000, 131071, 999000]]

MROPE = OpRecord(
    name="rope.mrope_cos_sin",
    family="rope",
    function=rv.mrope_cos_sin,
    inputs=("positions", "mrope_section"),
    outputs=(Output("cos", "float64", "phase", _mrope_phase), Output("sin", "float64", "phase", _mrope_phase)),
    params=(
        Param("dim", "int", doc="rotary dim d = 2 * sum(mrope_section)"), BASE,
        Param("mrope_layout", "str", "chunked", rv.MROPE_LAYOUTS,
              users={"chunked": "Qwen2-VL; Qwen2.5-VL; Qwen2.5-Omni (transformers, vLLM)",
                     "interleaved": "Qwen3-VL (transformers); vLLM mrope_interleaved"},
              doc="which frequency takes which stream"),
        Param("width", "str", "full", ("half", "full"), doc="table width (as rope.cos_sin)"),
    ),
    summary="multimodal RoPE tables from temporal/height/width position streams",
    citation="Wang et al. 2024, Qwen2-VL, arXiv:2409.12191, section 2.1",
    cases=(
        Case("rope.mrope_cos_sin.chunked.qwen2vl.d128", {"dim": 128, "base": 1e6}, _mrope(_VISION, (16, 24, 24)),
             "Qwen2-VL sections [16, 24, 24]: text, a 2x2 image patch grid, text again"),
        Case("rope.mrope_cos_sin.interleaved.qwen3vl.d128", {"dim": 128, "base": 5e6, "mrope_layout": "interleaved"},
             _mrope(_VISION, (24, 20, 20)), "Qwen3-VL interleaved THWTHW... with sections [24, 20, 20]"),
        Case("rope.mrope_cos_sin.long.half", {"dim": 64, "width": "half"}, _mrope(_LONG_STREAMS, (8, 12, 12)),
             "streams up to 10^6", kind="long_position", flags=("LongPosition",)),
        Case("rope.mrope_cos_sin.error.section_sum", {"dim": 64}, _mrope(_VISION, (16, 24, 24)),
             "error: mrope sections summing to 64, not d/2 = 32", kind="error", error="invalid_argument"),
        Case("rope.mrope_cos_sin.error.two_streams", {"dim": 8}, _mrope([[0, 1], [0, 1]], (2, 1, 1)),
             "error: positions must hold 3 streams", kind="error", error="invalid_shape"),
    ),
    position_inputs=(),
)

RECORDS = (*SCALING_RECORDS, COS_SIN, APPLY, SCORES, XPOS, MROPE)
