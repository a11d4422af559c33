"""Registry records of the relative-position ops (Shaw, Transformer-XL / XLNet) and of table resampling.

Scores and resampled tables are sums of products, judged with the ``reduction`` tolerance
(:mod:`posenc_ref.tolerance`): each output element carries its error scale ``m``, the sum over
its terms of ``(number of roundings on the term's path) * |term|`` plus the error of factors that
are themselves computed (sinusoids, interpolation weights), in units of half an epsilon.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from posenc_ref import resample as rs
from posenc_ref import shaw as sh
from posenc_ref import transformer_xl as xl
from posenc_ref.errors import ErrorCategory
from posenc_ref.opspec import Case, OpRecord, Output, Param
from posenc_ref.sinusoidal import sinusoidal_frequencies

Inputs = Mapping[str, NDArray[Any]]

# --- Shaw ---------------------------------------------------------------------------------

SHAW_CITATION = "Shaw, Uszkoreit, Vaswani 2018, Self-Attention with Relative Position Representations, " \
                "arXiv:1803.02155, eqs. 3-5; tensor2tensor common_attention._relative_attention_inner"
SIGN = Param(
    "sign", "str", "key_minus_query", sh.SIGNS,
    users={"key_minus_query": "Shaw 2018; tensor2tensor _generate_relative_positions_matrix",
           "query_minus_key": "HF BERT-family position_embedding_type='relative_key' (4.x)"},
    doc="relative distance p_j - p_i or p_i - p_j",
)
K_PARAM = Param("max_relative_position", "int", doc="clipping distance K >= 1; tables have 2K + 1 rows")


def _shaw_logits_magnitude(params: Mapping[str, Any], inputs: Inputs) -> NDArray[np.float64]:
    """sum over the terms q_i k_i and q_i A^K_i of their absolute values: the op on |inputs|."""
    return sh.shaw_logits(np.abs(inputs["q"]), np.abs(inputs["k"]), np.abs(inputs["rel_keys"]),
                          inputs["q_positions"], inputs["k_positions"], **params)


def _shaw_output_magnitude(params: Mapping[str, Any], inputs: Inputs) -> NDArray[np.float64]:
    """sum over the terms alpha v and alpha A^V of their absolute values: the op on |inputs|."""
    return sh.shaw_output(np.abs(inputs["weights"]), np.abs(inputs["v"]), np.abs(inputs["rel_values"]),
                          inputs["q_positions"], inputs["k_positions"], **params)


def _shaw_logits_scale(params: Mapping[str, Any], inputs: Inputs) -> NDArray[np.float64]:
    # two dot products of length D, then one addition: D + 3 roundings on each product's path
    scale: NDArray[np.float64] = (np.asarray(inputs["q"]).shape[1] + 3) * _shaw_logits_magnitude(params, inputs)
    return scale


def _shaw_output_scale(params: Mapping[str, Any], inputs: Inputs) -> NDArray[np.float64]:
    # sums over Tk keys and over the 2K + 1 rows, then one addition
    length = np.asarray(inputs["v"]).shape[0] + 2 * int(params["max_relative_position"]) + 1
    scale: NDArray[np.float64] = (length + 3) * _shaw_output_magnitude(params, inputs)
    return scale


def _shaw_logits_input_scale(params: Mapping[str, Any], inputs: Inputs) -> NDArray[np.float64]:
    # every term q_i k_i or q_i A^K_i has two value-input factors
    return np.asarray(2.0 * _shaw_logits_magnitude(params, inputs), dtype=np.float64)


def _shaw_output_input_scale(params: Mapping[str, Any], inputs: Inputs) -> NDArray[np.float64]:
    # every term alpha v or alpha A^V has two value-input factors
    return np.asarray(2.0 * _shaw_output_magnitude(params, inputs), dtype=np.float64)


def _pos(*values: int) -> NDArray[np.int64]:
    return np.array(values, dtype=np.int64)


def _shaw_inputs(tq: int, tk: int, dim: int, k: int, q_start: int | None = None, *, output: bool = False) -> Any:
    start = tk - tq if q_start is None else q_start

    def make(rng: np.random.Generator) -> dict[str, NDArray[Any]]:
        first = ("weights", rng.dirichlet(np.ones(tk), size=tq)) if output else ("q", rng.normal(size=(tq, dim)))
        second = ("v", rng.normal(size=(tk, dim))) if output else ("k", rng.normal(size=(tk, dim)))
        table = ("rel_values" if output else "rel_keys", rng.normal(size=(2 * k + 1, dim)))
        return dict([first, second, table, ("q_positions", np.arange(start, start + tq)),
                     ("k_positions", np.arange(tk))])
    return make


def _shaw_cases(op: str, output: bool) -> tuple[Case, ...]:
    cases = [
        Case(f"shaw.{op}.self.t7.k2", {"max_relative_position": 2}, _shaw_inputs(7, 7, 8, 2, output=output),
             "self-attention, 7 positions, K=2: distances up to 6 are clipped on both sides"),
        Case(f"shaw.{op}.self.t7.k2.query_minus_key", {"max_relative_position": 2, "sign": "query_minus_key"},
             _shaw_inputs(7, 7, 8, 2, output=output), "sign i - j (HF relative_key) reads the mirrored rows"),
        Case(f"shaw.{op}.memory.tq3.tk8.k3", {"max_relative_position": 3}, _shaw_inputs(3, 8, 6, 3, output=output),
             "Tq != Tk with memory: the queries are the last 3 of 8 key positions (tensor2tensor)", kind="edge"),
        Case(f"shaw.{op}.cache.tq1.tk12.k4", {"max_relative_position": 4}, _shaw_inputs(1, 12, 6, 4, output=output),
             "decoding with a cache: one query at position Tk - 1 sees distances -(Tk-1)..0", kind="edge"),
        Case(f"shaw.{op}.hf_relative_key.unclipped", {"max_relative_position": 5, "sign": "query_minus_key"},
             _shaw_inputs(6, 6, 4, 5, output=output),
             "HF relative_key with max_position_embeddings=6: K = 5 never clips inside 6 positions"),
        Case(f"shaw.{op}.offset_positions.k2", {"max_relative_position": 2},
             _shaw_inputs(4, 9, 4, 2, q_start=3, output=output),
             "queries at key positions 3..6 of 0..8 (not the last ones): explicit offsets"),
    ]
    base = _shaw_inputs(4, 4, 4, 2, output=output)(np.random.default_rng(5))
    table = "rel_values" if output else "rel_keys"
    errors: list[tuple[str, dict[str, Any], dict[str, Any], ErrorCategory, str]] = [
        ("k0", {"max_relative_position": 0}, {table: base[table][:1]}, "invalid_argument", "K < 1"),
        ("cross_attention", {"max_relative_position": 2}, {"q_positions": _pos(7, 8, 9, 10)}, "invalid_argument",
         "query positions that are not key positions: a cross-attention alignment is undefined"),
        ("positions_mismatch", {"max_relative_position": 2}, {"q_positions": _pos(1, 2, 3)}, "invalid_shape",
         "3 query positions for 4 query rows"),
        ("table_rows", {"max_relative_position": 3}, {}, "invalid_shape", "a table of 2K+1 = 5 rows for K=3"),
        ("positions_2d", {"max_relative_position": 2}, {"k_positions": np.arange(4).reshape(2, 2)},
         "invalid_shape", "2-D key positions"),
        ("unknown_sign", {"max_relative_position": 2, "sign": "absolute"}, {}, "invalid_argument",
         "an unknown sign convention"),
    ]
    if not output:
        errors.append(("width_mismatch", {"max_relative_position": 2}, {"k": base["k"][:, :3]}, "invalid_shape",
                       "q and k of different widths"))
    cases += [Case(f"shaw.{op}.error.{name}", params, {**base, **change}, f"error: {why}", kind="error", error=cat)
              for name, params, change, cat, why in errors]
    return tuple(cases)


def _index_cases() -> tuple[Case, ...]:
    def both(q: NDArray[np.int64], k: NDArray[np.int64]) -> dict[str, NDArray[np.int64]]:
        return {"q_positions": q, "k_positions": k}
    return (
        Case("shaw.index.self.t6.k2", {"max_relative_position": 2}, both(np.arange(6), np.arange(6)),
             "clip(j - i, -2, 2) + 2 over 6 positions", flags=("KnownAnswer",)),
        Case("shaw.index.self.t6.k2.query_minus_key", {"max_relative_position": 2, "sign": "query_minus_key"},
             both(np.arange(6), np.arange(6)), "sign i - j: the transposed index"),
        Case("shaw.index.memory.tq3.tk7.k3", {"max_relative_position": 3}, both(np.arange(4, 7), np.arange(7)),
             "memory: queries are the last 3 of 7 key positions", kind="edge"),
        Case("shaw.index.cache.tq1.tk10.k4", {"max_relative_position": 4}, both(_pos(9), np.arange(10)),
             "cache mode: one query at Tk - 1", kind="edge"),
        Case("shaw.index.sparse_positions.k3", {"max_relative_position": 3}, both(_pos(2, 7), _pos(0, 2, 5, 7, 11)),
             "non-contiguous explicit positions", kind="edge"),
        Case("shaw.index.error.k0", {"max_relative_position": 0}, both(np.arange(3), np.arange(3)),
             "error: K < 1", kind="error", error="invalid_argument"),
        Case("shaw.index.error.cross_attention", {"max_relative_position": 2}, both(_pos(8), np.arange(5)),
             "error: a query position beyond the keys (cross-attention alignment undefined)", kind="error",
             error="invalid_argument"),
        Case("shaw.index.error.negative_position", {"max_relative_position": 2}, both(_pos(-1), _pos(-1, 0)),
             "error: a negative position", kind="error", error="invalid_argument"),
        Case("shaw.index.error.empty_keys", {"max_relative_position": 2},
             both(_pos(0), np.zeros((0,), dtype=np.int64)), "error: empty key positions", kind="error",
             error="invalid_shape"),
    )


SHAW_INDEX = OpRecord(
    name="shaw.index", family="relative", function=sh.shaw_relative_index,
    inputs=("q_positions", "k_positions"), outputs=(Output("index", "int64", "exact"),),
    params=(K_PARAM, SIGN), summary="clipped relative table rows clip(d, -K, K) + K",
    citation=SHAW_CITATION, cases=_index_cases(), position_inputs=("q_positions", "k_positions"),
)
SHAW_LOGITS = OpRecord(
    name="shaw.logits", family="relative", function=sh.shaw_logits,
    inputs=("q", "k", "rel_keys", "q_positions", "k_positions"),
    outputs=(Output("logits", "float64", "reduction", _shaw_logits_scale, _shaw_logits_input_scale),),
    params=(K_PARAM, SIGN), summary="q_i . k_j + q_i . A^K[r_ij] (unscaled), without a (Tq, Tk, D) gather",
    citation=SHAW_CITATION, cases=_shaw_cases("logits", False), position_inputs=("q_positions", "k_positions"),
    value_inputs=("q", "k", "rel_keys"),
)
SHAW_OUTPUT = OpRecord(
    name="shaw.output", family="relative", function=sh.shaw_output,
    inputs=("weights", "v", "rel_values", "q_positions", "k_positions"),
    outputs=(Output("output", "float64", "reduction", _shaw_output_scale, _shaw_output_input_scale),),
    params=(K_PARAM, SIGN), summary="sum_j alpha_ij (v_j + A^V[r_ij]) through the 2K + 1 distinct rows",
    citation=SHAW_CITATION, cases=_shaw_cases("output", True), position_inputs=("q_positions", "k_positions"),
    value_inputs=("weights", "v", "rel_values"),
)

# --- Transformer-XL / XLNet ---------------------------------------------------------------

XL_CITATION = "Dai et al. 2019, Transformer-XL, arXiv:1901.02860, section 3.3; Yang et al. 2019, XLNet, " \
              "arXiv:1906.08237; kimiyoung/transformer-xl mem_transformer.py; zihangdai/xlnet modeling.py"


def _xl_distinct_rows(params: Mapping[str, Any], inputs: Inputs) -> tuple[Any, Any, NDArray[np.float64]]:
    """The (clamped) query - key distances as ``(distinct, index of each pair's distance, |R| rows (U, D_r))``."""
    distance = np.asarray(inputs["q_positions"])[:, None] - np.asarray(inputs["k_positions"])[None, :]
    if int(params["clamp_len"]) > 0:
        distance = np.clip(distance, -params["clamp_len"], params["clamp_len"])
    distinct, inverse = np.unique(distance, return_inverse=True)
    rows = np.abs(xl.xl_relative_embedding(distinct, dim=np.shape(inputs["w_r"])[0], base=params["base"]))
    return distinct, inverse.reshape(distance.shape), rows


def _xl_score_scale(params: Mapping[str, Any], inputs: Inputs) -> NDArray[np.float64]:
    q, k = np.abs(inputs["q"]), np.abs(inputs["k"])
    u, v, w_r = np.abs(inputs["u"]), np.abs(inputs["v"]), np.abs(inputs["w_r"])
    dim, dim_r = q.shape[1], w_r.shape[0]
    distinct, inverse, rows = _xl_distinct_rows(params, inputs)  # rows (U, D_r)
    w = sinusoidal_frequencies(dim=dim_r, base=params["base"])
    theta = np.abs(distinct.astype(np.float64))[:, None] * np.concatenate([w, w])  # (U, D_r)
    # a sinusoid whose angle carries a few roundings of the frequency and of p * w: 12 |theta| + 2
    per_distance = (dim + dim_r + 4) * rows @ w_r + (12.0 * theta + 2.0) @ w_r  # (U, D)
    position = np.take_along_axis((q + v) @ per_distance.T, inverse, axis=1)
    scale: NDArray[np.float64] = (dim + 3) * (q + u) @ k.T + position
    return scale


def _xl_score_input_scale(params: Mapping[str, Any], inputs: Inputs) -> NDArray[np.float64]:
    # terms q_i k_i, u_i k_i, q_i W_ji R_j and v_i W_ji R_j: two value-input factors each
    q, k = np.abs(inputs["q"]), np.abs(inputs["k"])
    u, v, w_r = np.abs(inputs["u"]), np.abs(inputs["v"]), np.abs(inputs["w_r"])
    _, inverse, rows = _xl_distinct_rows(params, inputs)
    position = np.take_along_axis((q + v) @ (rows @ w_r).T, inverse, axis=1)
    return np.asarray(2.0 * ((q + u) @ k.T + position), dtype=np.float64)


def _xl_inputs(tq: int, tk: int, dim: int, dim_r: int, q_positions: NDArray[np.int64] | None = None) -> Any:
    def make(rng: np.random.Generator) -> dict[str, NDArray[Any]]:
        return {"q": rng.normal(size=(tq, dim)), "k": rng.normal(size=(tk, dim)), "u": rng.normal(size=dim),
                "v": rng.normal(size=dim), "w_r": rng.normal(size=(dim_r, dim)) / np.sqrt(dim_r),
                "q_positions": np.arange(tk - tq, tk) if q_positions is None else q_positions,
                "k_positions": np.arange(tk)}
    return make


def _xl_score_cases() -> tuple[Case, ...]:
    base = _xl_inputs(3, 5, 4, 6)(np.random.default_rng(7))
    errors: list[tuple[str, dict[str, Any], ErrorCategory, str]] = [
        ("odd_dim_r", {"w_r": base["w_r"][:5]}, "invalid_argument", "an odd sinusoid width D_r"),
        ("cross_attention", {"q_positions": _pos(5, 6, 7)}, "invalid_argument",
         "query positions beyond the keys: Transformer-XL defines no cross-attention alignment"),
        ("u_shape", {"u": base["u"][:3]}, "invalid_shape", "u of the wrong width"),
        ("positions_mismatch", {"q_positions": _pos(3, 4)}, "invalid_shape", "2 query positions for 3 query rows"),
        ("k_width", {"k": base["k"][:, :3]}, "invalid_shape", "k of another width than q"),
    ]
    return (
        Case("transformer_xl.score.mem3.tq4.tk7", {}, _xl_inputs(4, 7, 4, 6),
             "memory length 3, segment 4: the four terms with Tq != Tk"),
        Case("transformer_xl.score.mem0.tq5.bidirectional", {}, _xl_inputs(5, 5, 6, 8),
             "no memory, every pair (XLNet bi): negative distances j > i included"),
        Case("transformer_xl.score.clamp_len2", {"clamp_len": 2}, _xl_inputs(3, 7, 4, 6),
             "clamp_len = 2 clips distances to [-2, 2]", kind="edge"),
        Case("transformer_xl.score.cache.tq1.tk9", {}, _xl_inputs(1, 9, 4, 4),
             "decoding: one query at position 8 over 9 keys", kind="edge"),
        Case("transformer_xl.score.offset_queries", {}, _xl_inputs(2, 8, 4, 6, q_positions=_pos(2, 5)),
             "explicit query positions 2 and 5 among keys 0..7"),
        Case("transformer_xl.score.long_distance", {},
             lambda rng: {**_xl_inputs(2, 3, 4, 8)(rng), "q_positions": _pos(3000, 3001),
                          "k_positions": _pos(0, 3000, 3001)},
             "distances up to 3001: the sinusoid's phase enters the error scale", kind="long_position"),
        *(Case(f"transformer_xl.score.error.{name}", {}, {**base, **change}, f"error: {why}", kind="error",
               error=cat) for name, change, cat, why in errors),
    )


XL_SCORE = OpRecord(
    name="transformer_xl.score", family="relative", function=xl.xl_score, intermediates="angles",
    inputs=("q", "k", "u", "v", "w_r", "q_positions", "k_positions"),
    outputs=(Output("score", "float64", "reduction", _xl_score_scale, _xl_score_input_scale),),
    params=(Param("base", "float", 10000.0, doc="sinusoid base"),
            Param("clamp_len", "int", -1, doc="clip distances to +/-clamp_len when > 0")),
    summary="(q_i + u) . k_j + (q_i + v) . W_R^T R_{p_i - p_j} by direct indexing",
    citation=XL_CITATION, cases=_xl_score_cases(), position_inputs=("q_positions", "k_positions"),
    value_inputs=("q", "k", "u", "v", "w_r"),
)

VARIANT = Param(
    "variant", "str", "transformer_xl", xl.VARIANTS,
    users={"transformer_xl": "kimiyoung/transformer-xl _rel_shift; HF TransfoXL",
           "xlnet": "zihangdai/xlnet rel_shift; HF XLNet"},
    doc="which pad-and-reshape shift",
)


def _shift_case(name: str, variant: str, tq: int, tk: int, rows: int, comment: str, kind: Any = "normal") -> Case:
    return Case(f"transformer_xl.rel_shift.{name}", {"variant": variant, "k_len": tk},
                lambda rng: {"x": rng.normal(size=(tq, rows))}, comment, kind=kind)


REL_SHIFT = OpRecord(
    name="transformer_xl.rel_shift", family="relative", function=xl.rel_shift,
    inputs=("x",), outputs=(Output("shifted", "float64", "ulp"), Output("valid", "int64", "exact")),
    params=(VARIANT, Param("k_len", "int", doc="key length Tk >= Tq")),
    summary="the Transformer-XL / XLNet shift of BD rows, and where it equals direct indexing",
    citation=XL_CITATION,
    cases=(
        _shift_case("transformer_xl.mem2.tq3.tk5", "transformer_xl", 3, 5, 5,
                    "XL shift with memory 2: valid for j <= 2 + i, zeros and wrapped rows above"),
        _shift_case("transformer_xl.mem0.tq4", "transformer_xl", 4, 4, 4,
                    "XL shift without memory: the upper triangle is not direct (transformer-xl#8)", kind="edge"),
        _shift_case("xlnet.bi.tq3.tk5", "xlnet", 3, 5, 8, "XLNet shift, attn_type bi (R = Tk + Tq): valid everywhere"),
        _shift_case("xlnet.uni.tq3.tk5", "xlnet", 3, 5, 6, "XLNet shift, attn_type uni (R = Tk + 1): j <= m + i"),
        Case("transformer_xl.rel_shift.error.xl_rows", {"variant": "transformer_xl", "k_len": 5},
             {"x": np.zeros((3, 8))}, "error: the XL shift needs R = Tk rows", kind="error", error="invalid_shape"),
        Case("transformer_xl.rel_shift.error.xlnet_rows", {"variant": "xlnet", "k_len": 5},
             {"x": np.zeros((3, 5))}, "error: the XLNet shift needs R >= Tk + 1 rows", kind="error",
             error="invalid_shape"),
        Case("transformer_xl.rel_shift.error.negative_memory", {"variant": "transformer_xl", "k_len": 2},
             {"x": np.zeros((3, 2))}, "error: Tk < Tq", kind="error", error="invalid_argument"),
        Case("transformer_xl.rel_shift.error.x_1d", {"variant": "xlnet", "k_len": 2}, {"x": np.zeros(4)},
             "error: x must be (Tq, R)", kind="error", error="invalid_shape"),
    ),
    value_inputs=("x",),
)

# --- resampling ---------------------------------------------------------------------------

RESAMPLE_CITATION = "Dosovitskiy et al. 2020 (ViT), arXiv:2010.11929, section 3.2; Keys 1981, IEEE TASSP 29(6); " \
                    "timm resample_abs_pos_embed; torch.nn.functional.interpolate"
MODE_PARAMS = (
    Param("kernel", "str", "bicubic", rs.KERNELS,
          users={"bicubic": "timm; HF ViT/MAE/DeiT/DINO interpolate_pos_encoding",
                 "bilinear": "big_vision/Google ViT resample_posemb (scipy zoom order=1)"},
          doc="cubic convolution or triangle"),
    Param("cubic_a", "float", -0.75, (-0.75, -0.5),
          users={-0.75: "PyTorch bicubic (antialias=False); OpenCV; jax.image 'cubic-pytorch'",
                 -0.5: "PIL; jax.image.resize; PyTorch and timm with antialias=True"},
          doc="Keys' parameter a"),
    Param("antialias", "str", "off", rs.ANTIALIAS,
          users={"off": "F.interpolate default; HF ViT; MAE; DeiT; DINO",
                 "on": "timm resample_abs_pos_embed; PIL; JAX"},
          doc="stretch the kernel when downsampling and renormalise at the edges"),
    Param("coordinates", "str", "half_pixel", rs.COORDINATES,
          users={"half_pixel": "align_corners=False (timm, HF, PyTorch default, JAX)",
                 "align_corners": "align_corners=True; scipy.ndimage.zoom grid_mode=False (big_vision)"},
          doc="source coordinate mapping"),
    Param("size_from", "str", "size", rs.SIZE_FROM,
          users={"size": "timm; HF ViT (transformers#35411); DINOv2 after dinov2#378",
                 "scale_factor": "DINO v1 and DINOv2 before #378 (scale_offset=0.1); older HF ViT"},
          doc="target given as a size or as a scale factor"),
    Param("scale_offset", "float", 0.0, doc="added to the new size before dividing (DINO's 0.1)"),
)


def _mode(params: Mapping[str, Any]) -> dict[str, Any]:
    return {p.name: params[p.name] for p in MODE_PARAMS}


def _axis_scale(n: int, new: int, params: Mapping[str, Any]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``(|W|, E)`` for one axis: |weights| and each weight's own error scale.

    A weight comes from a source coordinate of magnitude up to ``n`` computed with a few
    roundings, through a kernel of slope below 1.5, then (antialias) a normalisation: its error
    is below ``16 (n + 4)`` half-epsilons per tap landing on it.
    """
    mode = _mode(params)
    weights = rs.resample_weights(in_size=n, new_size=new, **mode)
    counts = rs.tap_counts(in_size=n, new_size=new, **mode)
    return np.abs(weights), 16.0 * (n + 4) * counts


def _weights_scale(params: Mapping[str, Any], inputs: Inputs) -> NDArray[np.float64]:
    return _axis_scale(int(params["in_size"]), int(params["new_size"]), params)[1]


def _table_1d_scale(params: Mapping[str, Any], inputs: Inputs) -> NDArray[np.float64]:
    prefix = int(params["num_prefix_tokens"])
    table = np.abs(np.asarray(inputs["table"], dtype=np.float64))
    absw, err = _axis_scale(table.shape[0] - prefix, int(params["new_length"]), params)
    taps = float(absw.shape[1] if params["antialias"] == "on" else 4)
    body = ((taps + 3) * absw + err) @ table[prefix:]
    return np.concatenate([np.zeros((prefix, table.shape[1])), body])


def _grid_scale(params: Mapping[str, Any], inputs: Inputs) -> NDArray[np.float64]:
    prefix, height, width = int(params["num_prefix_tokens"]), int(params["grid_height"]), int(params["grid_width"])
    table = np.abs(np.asarray(inputs["table"], dtype=np.float64))
    grid = table[prefix:].reshape(height, width, -1)
    wh, eh = _axis_scale(height, int(params["new_height"]), params)
    ww, ew = _axis_scale(width, int(params["new_width"]), params)
    taps = float(wh.shape[1] + ww.shape[1] + 3 if params["antialias"] == "on" else 11)
    body = (taps * np.einsum("ph,hwd,qw->pqd", wh, grid, ww) + np.einsum("ph,hwd,qw->pqd", eh, grid, ww)
            + np.einsum("ph,hwd,qw->pqd", wh, grid, ew))
    return np.concatenate([np.zeros((prefix, table.shape[1])), body.reshape(-1, table.shape[1])])


def _table_1d_input_scale(params: Mapping[str, Any], inputs: Inputs) -> NDArray[np.float64]:
    # one value-input factor per term (the weights are computed); prefix rows are copies
    prefix = int(params["num_prefix_tokens"])
    table = np.abs(np.asarray(inputs["table"], dtype=np.float64))
    absw, _ = _axis_scale(table.shape[0] - prefix, int(params["new_length"]), params)
    return np.concatenate([table[:prefix], absw @ table[prefix:]])


def _grid_input_scale(params: Mapping[str, Any], inputs: Inputs) -> NDArray[np.float64]:
    prefix, height, width = int(params["num_prefix_tokens"]), int(params["grid_height"]), int(params["grid_width"])
    table = np.abs(np.asarray(inputs["table"], dtype=np.float64))
    wh, _ = _axis_scale(height, int(params["new_height"]), params)
    ww, _ = _axis_scale(width, int(params["new_width"]), params)
    body = np.einsum("ph,hwd,qw->pqd", wh, table[prefix:].reshape(height, width, -1), ww)
    return np.concatenate([table[:prefix], body.reshape(-1, table.shape[1])])


TIMM = {"antialias": "on", "cubic_a": -0.5}
DINO = {"size_from": "scale_factor", "scale_offset": 0.1}


def _weights_cases() -> tuple[Case, ...]:
    def case(name: str, params: dict[str, Any], comment: str, kind: Any = "normal") -> Case:
        return Case(f"resample.weights.{name}", params, {}, comment, kind=kind)
    return (
        case("bicubic.up14to16.torch", {"in_size": 14, "new_size": 16}, "PyTorch bicubic a=-0.75, 14 -> 16"),
        case("bicubic.up14to16.timm", {"in_size": 14, "new_size": 16, **TIMM},
             "timm: antialias path, a=-0.5, renormalised edges, 14 -> 16"),
        case("bicubic.down16to14.torch", {"in_size": 16, "new_size": 14},
             "PyTorch bicubic without antialias, 16 -> 14"),
        case("bicubic.down16to7.timm", {"in_size": 16, "new_size": 7, **TIMM},
             "timm downsampling: the kernel is stretched by 16/7"),
        case("bilinear.align_corners.7to13", {"in_size": 7, "new_size": 13, "kernel": "bilinear",
                                               "coordinates": "align_corners"},
             "align-corners bilinear (big_vision / scipy zoom order=1)"),
        case("bilinear.antialias.down16to6", {"in_size": 16, "new_size": 6, "kernel": "bilinear", "antialias": "on"},
             "antialiased triangle filter (PIL BILINEAR)"),
        case("bicubic.dino_scale_factor.14to16", {"in_size": 14, "new_size": 16, **DINO},
             "DINO v1: scale factor (16 + 0.1)/14 moves every sampling position"),
        case("bicubic.size.13to15", {"in_size": 13, "new_size": 15},
             "by size: 15 rows, where floor(13 * (15/13)) = 14 under a scale factor (dino#8)", kind="edge"),
        case("bicubic.align_corners.5to9", {"in_size": 5, "new_size": 9, "coordinates": "align_corners"},
             "align-corners bicubic: scale (n-1)/(m-1)"),
        case("bicubic.single_output", {"in_size": 6, "new_size": 1}, "resampling to one row", kind="edge"),
        case("error.new_size0", {"in_size": 6, "new_size": 0}, "error: resampling to a size < 1", kind="error"),
        case("error.antialias_align_corners", {"in_size": 6, "new_size": 3, "antialias": "on",
                                               "coordinates": "align_corners"},
             "error: antialias with align-corners coordinates is not pinned", kind="error"),
        case("error.offset_with_size", {"in_size": 6, "new_size": 3, "scale_offset": 0.1},
             "error: scale_offset under size_from='size'", kind="error"),
        case("error.unknown_kernel", {"in_size": 6, "new_size": 3, "kernel": "lanczos"}, "error: an unknown kernel",
             kind="error"),
    )


def _with_error(cases: tuple[Case, ...]) -> tuple[Case, ...]:
    return tuple(Case(c.id, c.params, c.inputs, c.comment, kind=c.kind, error="invalid_argument")
                 if c.kind == "error" else c for c in cases)


RESAMPLE_WEIGHTS = OpRecord(
    name="resample.weights", family="resample", function=rs.resample_weights, inputs=(),
    outputs=(Output("weights", "float64", "reduction", _weights_scale),),
    params=(Param("in_size", "int", doc="n input samples"), Param("new_size", "int", doc="requested output size"),
            *MODE_PARAMS),
    summary="one axis' (m, n) interpolation weights", citation=RESAMPLE_CITATION, cases=_with_error(_weights_cases()),
)


def _table(rows: int, dim: int) -> Any:
    return lambda rng: {"table": rng.normal(size=(rows, dim))}


def _table_1d_cases() -> tuple[Case, ...]:
    def case(name: str, params: dict[str, Any], rows: int, comment: str, **extra: Any) -> Case:
        return Case(f"resample.table_1d.{name}", params, _table(rows, 3), comment, **extra)
    return (
        case("bicubic.up10to16.prefix1", {"new_length": 16}, 11, "a 1-D table with a class row, 10 -> 16"),
        case("bicubic.down16to10.timm", {"new_length": 10, **TIMM}, 17, "timm antialias path downsampling 16 -> 10"),
        case("bilinear.prefix0.8to5", {"new_length": 5, "num_prefix_tokens": 0, "kernel": "bilinear"}, 8,
             "no prefix rows, bilinear 8 -> 5"),
        case("bicubic.align_corners.6to11", {"new_length": 11, "coordinates": "align_corners"}, 7,
             "align-corners bicubic on a 1-D table: end rows map onto end rows"),
        case("dino.scale_factor.10to16", {"new_length": 16, **DINO}, 11, "scale factor (16 + 0.1)/10 (DINO v1)"),
        case("size.13to15", {"new_length": 15}, 14, "by size: 15 rows, where a scale factor gives 14 (dino#8)",
             kind="edge"),
        case("error.new_length0", {"new_length": 0}, 11, "error: resampling to a size < 1", kind="error",
             error="invalid_argument"),
        case("error.prefix_only", {"new_length": 4, "num_prefix_tokens": 2}, 2,
             "error: a table with nothing beyond its prefix rows", kind="error", error="invalid_shape"),
    )


RESAMPLE_1D = OpRecord(
    name="resample.table_1d", family="resample", function=rs.resample_table_1d, inputs=("table",),
    outputs=(Output("table", "float64", "reduction", _table_1d_scale, _table_1d_input_scale),),
    params=(Param("new_length", "int", doc="requested non-prefix rows"),
            Param("num_prefix_tokens", "int", 1, doc="leading rows kept as they are"), *MODE_PARAMS),
    summary="resample the non-prefix rows of a 1-D learned table", citation=RESAMPLE_CITATION,
    cases=_table_1d_cases(), value_inputs=("table",),
)


def _grid_cases() -> tuple[Case, ...]:
    def case(name: str, params: dict[str, Any], prefix: int, comment: str, **extra: Any) -> Case:
        full = {"num_prefix_tokens": prefix, **params}
        rows = prefix + params["grid_height"] * params["grid_width"]
        return Case(f"resample.grid_2d.{name}", full, _table(rows, 3), comment, **extra)
    g14 = {"grid_height": 14, "grid_width": 14, "new_height": 16, "new_width": 16}
    g16 = {"grid_height": 16, "grid_width": 16, "new_height": 14, "new_width": 14}
    odd = {"grid_height": 6, "grid_width": 9, "new_height": 11, "new_width": 4}
    return (
        case("up14to16.timm", {**g14, **TIMM}, 1, "timm resample_abs_pos_embed 14x14 -> 16x16 (224 -> 256 px)"),
        case("up14to16.torch", g14, 1, "HF ViT interpolate_pos_encoding / F.interpolate bicubic 14 -> 16"),
        case("down16to14.timm", {**g16, **TIMM}, 1, "timm downsampling 16 -> 14: antialias stretches the kernel"),
        case("down16to14.torch", g16, 1, "bicubic without antialias 16 -> 14"),
        case("non_square.6x9to11x4.prefix2", odd, 2,
             "non-square grid, up in one axis and down in the other, two prefix rows (DeiT cls + dist)"),
        case("non_square.6x9to11x4.timm", {**odd, **TIMM}, 1, "non-square grid on the antialias path"),
        case("dino.scale_factor.14to16", {**g14, **DINO}, 1, "DINO v1 scale factor (16 + 0.1)/14"),
        case("bilinear.align_corners.7to12", {"grid_height": 7, "grid_width": 7, "new_height": 12, "new_width": 12,
                                               "kernel": "bilinear", "coordinates": "align_corners"}, 0,
             "big_vision resample_posemb: align-corners linear, no prefix row"),
        case("size.13to15", {"grid_height": 13, "grid_width": 13, "new_height": 15, "new_width": 15}, 1,
             "by size: 15x15, where a scale factor gives 14x14 (dino#8)", kind="edge"),
        Case("resample.grid_2d.error.length_mismatch_prefix1", {**g14, "num_prefix_tokens": 1},
             _table(14 * 14, 3), "error: 196 rows for 1 prefix row + 14x14", kind="error", error="invalid_shape"),
        Case("resample.grid_2d.error.length_mismatch_prefix0", {**g14, "num_prefix_tokens": 0},
             _table(14 * 14 + 1, 3), "error: 197 rows for no prefix row + 14x14", kind="error", error="invalid_shape"),
        Case("resample.grid_2d.error.new_height0", {**g14, "new_height": 0}, _table(197, 3),
             "error: resampling to a height < 1", kind="error", error="invalid_argument"),
        Case("resample.grid_2d.error.table_1d", {**g14}, {"table": np.zeros(197)},
             "error: a table that is not (rows, D)", kind="error", error="invalid_shape"),
    )


RESAMPLE_2D = OpRecord(
    name="resample.grid_2d", family="resample", function=rs.resample_grid_2d, inputs=("table",),
    outputs=(Output("table", "float64", "reduction", _grid_scale, _grid_input_scale),),
    params=(Param("grid_height", "int", doc="declared H"), Param("grid_width", "int", doc="declared W"),
            Param("new_height", "int", doc="requested H'"), Param("new_width", "int", doc="requested W'"),
            Param("num_prefix_tokens", "int", 1, doc="leading rows kept as they are (timm default 1)"),
            *MODE_PARAMS),
    summary="resample a ViT position table's grid rows, prefix rows kept", citation=RESAMPLE_CITATION,
    cases=_grid_cases(), value_inputs=("table",),
)

RECORDS = (SHAW_INDEX, SHAW_LOGITS, SHAW_OUTPUT, XL_SCORE, REL_SHIFT, RESAMPLE_WEIGHTS, RESAMPLE_1D, RESAMPLE_2D)
