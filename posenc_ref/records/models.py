"""Registry records of the model ops (:mod:`posenc_ref.models.compute`): catalogued models, layer by layer.

For every catalogued model (:mod:`posenc_ref.models.catalogue`) and every distinct kind of layer,
one case per position set: positions 0 and 1, around ``original_max_position_embeddings`` (the
LongRoPE switch, YaRN's trained length), the model's largest position and 10^6; q and k are small
seeded inputs with the model's head dim and GQA ratio (one key head). Each case's params are
``{"model", "config", "layer", "context_length"}`` with the config exactly as the JSON.

Tolerances are those of the existing ops: a table element ``a cos(p w)`` has phase ``a |p w|``; a
rotated channel ``a |(u, v)| (1 + |p w|)``, its input scale ``a (|u| |cos| + |v| |sin|)``
(:mod:`posenc_ref.records.rope`); the logit multiplier, a product of a few roundings, has phase
``4 |value|``; ALiBi biases the phase of :mod:`posenc_ref.records.alibi`; sinusoids ``|p w|``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from posenc_ref.errors import ErrorCategory
from posenc_ref.models import compute, resolve
from posenc_ref.models.catalogue import CATALOGUE
from posenc_ref.models.resolve import LayerPositions, ModelPositions
from posenc_ref.opspec import Case, OpRecord, Output, Param, error_cases
from posenc_ref.records._models_scales import (
    _alibi_phase,
    _copy_phase,
    _copy_scale,
    _layer,
    _rotated_phase,
    _rotated_scale,
    _scale_phase,
    _sinusoid_phase,
    _table_phase,
    _xl_phase,
    _zero_scale,
)

CITATION = "the model's config.json as transformers 5.x reads it (docs/models.md); the scheme ops' own citations"
_PARAMS = (Param("model", "str", "", doc="catalogue name (informational)"),
           Param("config", "str", doc="the model's config.json object, exactly as the JSON"),
           Param("layer", "int", doc="layer index in ModelPositions.layers"),
           Param("context_length", "int", None,
                 doc="L for dynamic NTK / LongRoPE (transformers: max(position_ids) + 1)"))
_MAX_T = 5
_MAX_GROUP = 4


# --- cases -----------------------------------------------------------------------------------------

def _short_kind(kind: str) -> str:
    return kind.removesuffix("_attention")


def _rope_positions(m: ModelPositions, lp: LayerPositions) -> list[tuple[str, list[int]]]:
    """(tag, positions) sets for a RoPE/NoPE layer: the long set, and the short side of a LongRoPE switch.

    Points in priority order (0, 1, 10^6, L0, the largest position, L0 - 1, L0 + 1, Llama 4's
    temperature steps); wide GQA groups keep fewer, so that the corpus stays small.
    """
    original = lp.params.get("original_max_position")
    priority: list[int | None] = [0, 1, 10**6, original, m.max_position - 1 if m.max_position else None]
    priority += [original - 1, original + 1] if original else []
    if lp.temperature and lp.temperature["rule"] == "llama4":
        floor = int(lp.temperature["floor_scale"])
        priority[3:3] = [floor - 1, 2 * floor - 1]
    group = min(lp.num_heads // lp.num_kv_heads, _MAX_GROUP) * lp.head_dim
    limit = 4 if group > 512 else _MAX_T
    chosen: list[int] = []
    for point in priority:
        if point is not None and point not in chosen and len(chosen) < limit:
            chosen.append(point)
    sets = [("long", sorted(chosen))]
    if lp.params.get("rope_type") == "longrope":
        switch = int(lp.params["original_max_position"])
        sets.append(("short_context", [0, 1, switch - 2, switch - 1]))
    return sets


def _qk_maker(lp: LayerPositions, positions: NDArray[np.int64]) -> Any:
    ratio = min(lp.num_heads // lp.num_kv_heads, _MAX_GROUP)  # one key head and its query group (at most 4)
    t = positions.shape[-1]

    def make(rng: np.random.Generator) -> dict[str, NDArray[Any]]:
        return {"positions": positions, "q": _values(rng, (t, ratio, lp.head_dim)),
                "k": _values(rng, (t, 1, lp.head_dim))}
    return make


def _values(rng: np.random.Generator, shape: tuple[int, ...]) -> NDArray[np.float64]:
    """Magnitudes in [1/8, 2) with random signs: no value is subnormal in float16 or bfloat16."""
    return np.where(rng.random(shape) < 0.5, -1.0, 1.0) * rng.uniform(0.125, 2.0, shape)


def _mrope_positions(chosen: list[int]) -> NDArray[np.int64]:
    t = np.asarray(chosen, dtype=np.int64)  # temporal stream; height and width streams are small grid indices
    return np.stack([t, np.arange(len(chosen), dtype=np.int64) * 3, np.arange(len(chosen), dtype=np.int64)[::-1] * 5])


def _model_cases(name: str) -> dict[str, list[Case]]:
    entry = CATALOGUE[name]
    m = resolve(entry.config)
    out: dict[str, list[Case]] = {}
    for lp in m.kinds():
        kind = _short_kind(lp.kind)
        base = {"model": name, "config": entry.config, "layer": lp.index, "context_length": None}
        why = f"{name} ({entry.family}) layer {lp.index}, a {lp.kind} layer"
        if lp.scheme in ("rope", "mrope", "nope"):
            op = "model.nope" if lp.scheme == "nope" else "model.rope"
            what = "nope" if lp.scheme == "nope" else "rope_apply"
            for tag, chosen in _rope_positions(m, lp):
                positions = _mrope_positions(chosen) if lp.scheme == "mrope" else np.asarray(chosen, dtype=np.int64)
                params = {**base, "context_length": int(max(chosen)) + 1}
                detail = f"{lp.params.get('rope_type', 'no rotation')}" + (
                    f", temperature {lp.temperature['rule']}" if lp.temperature else "")
                out.setdefault(op, []).append(Case(
                    f"model.{name}.{kind}.{what}.{tag}", params, _qk_maker(lp, positions),
                    f"{why}: {detail} at positions {chosen}", kind="normal",
                    flags=("Model", "LongPosition") if tag == "long" else ("Model",)))
        elif lp.scheme == "alibi":
            q, k = np.array([0, 1, 5, 2047]), np.array([0, 1, 2, 5, 1000, 2047])
            out.setdefault("model.alibi", []).append(Case(
                f"model.{name}.{kind}.alibi_bias.long", base, {"query_positions": q, "key_positions": k},
                f"{why}: {lp.num_heads} ALiBi slopes (bias_max {lp.params['bias_max']:g}) to distance 2047",
                flags=("Model", "LongPosition")))
        elif lp.scheme == "t5":
            q, k = np.array([0, 1, 5, 200]), np.array([0, 1, 3, 8, 16, 64, 127, 128, 500])
            buckets, heads = lp.params["num_buckets"], lp.num_heads

            def make(rng: np.random.Generator, q: Any = q, k: Any = k, b: int = buckets, h: int = heads) -> Any:
                return {"query_positions": q, "key_positions": k, "table": _values(rng, (b, h))}
            out.setdefault("model.t5", []).append(Case(
                f"model.{name}.{kind}.t5_bias.long", base, make,
                f"{why}: {lp.params['direction']} buckets up to and past max_distance {lp.params['max_distance']}",
                flags=("Model", "LongPosition")))
        elif lp.scheme == "deberta":
            q, k = np.array([0, 1, 100, 511]), np.array([0, 1, 2, 128, 255, 256, 300, 511])
            out.setdefault("model.deberta", []).append(Case(
                f"model.{name}.{kind}.deberta_index.long", base, {"query_positions": q, "key_positions": k},
                f"{why}: log buckets (position_buckets {lp.params['position_buckets']}) across the 512 positions",
                flags=("Model", "LongPosition")))
        elif lp.scheme == "learned":
            last = int(lp.params["num_positions"]) - int(lp.params["offset"]) - 1
            out.setdefault("model.learned", []).append(Case(
                f"model.{name}.{kind}.table_row.long", base, {"positions": np.array([0, 1, 2, last])},
                f"{why}: table rows read with offset {lp.params['offset']}, up to the last position {last}",
                flags=("Model", "LongPosition")))
            out["model.learned"].append(Case(
                f"model.{name}.{kind}.table_row.error.past_table", base, {"positions": np.array([0, last + 1])},
                f"error: position {last + 1} is past the {lp.params['num_positions']}-row table",
                kind="error", error="out_of_range"))
        elif lp.scheme == "transformer_xl":
            out.setdefault("model.transformer_xl", []).append(Case(
                f"model.{name}.{kind}.xl_embedding.long", base, {"distances": np.array(_XL_DISTANCES)},
                f"{why}: R rows over d_model {lp.params['dim']} at distances {_XL_DISTANCES}",
                flags=("Model", "LongPosition")))
        elif lp.scheme == "sinusoidal":
            if any(c.params["layer"] != lp.index and _layer(c.params).params == lp.params
                   for c in out.get("model.sinusoidal", [])):
                continue  # Note: the decoder shares the encoder's table (Marian, M2M100): one case
            last = int(lp.params["num_positions"]) - int(lp.params["position_offset"]) - 1
            out.setdefault("model.sinusoidal", []).append(Case(
                f"model.{name}.{kind}.sinusoidal.long", base, {"positions": np.array([0, 1, last])},
                f"{why}: {lp.params['ladder']} ladder, {lp.params['layout']}, offset {lp.params['position_offset']}",
                flags=("Model", "LongPosition")))
    return out


_XL_DISTANCES = [-4095, -512, -1, 0, 1, 2, 511, 512, 4095]
"""Both signs (``"bi"``), around XLNet's 512-token pretraining length, and 8x past it. Not 10^6:
an engine builds one R row per distance from ``klen`` down, so a distance of 10^6 is a 10^6-token
table (6 GB at float32 for XLNet-base), which no engine run could check."""
_XL_SMALL = {"model_type": "xlnet", "d_model": 16, "n_head": 2, "n_layer": 2, "attn_type": "uni", "clamp_len": 8}
"""Not a catalogued model: the only config here that sets clamp_len and attn_type='uni' (XLNetConfig reads both)."""


def _all_cases() -> dict[str, list[Case]]:
    cases: dict[str, list[Case]] = {}
    for name in CATALOGUE:
        for op, items in _model_cases(name).items():
            cases.setdefault(op, []).extend(items)
    cases.setdefault("model.transformer_xl", []).append(Case(
        "model.xlnet.clamp_len8.uni.xl_embedding", {"model": "", "config": _XL_SMALL, "layer": 1,
                                                    "context_length": None},
        {"distances": np.array([0, 1, 7, 8, 9, 100, 4095])},
        "a small XLNet config with clamp_len 8 and attn_type 'uni': distances past 8 read R_8", flags=("Model",)))
    return cases


_LLAMA = {"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2,
          "max_position_embeddings": 4096, "rope_theta": 10000.0}
_QK = {"positions": np.array([0, 1]), "q": np.ones((2, 1, 16)), "k": np.ones((2, 1, 16))}
_BAD: list[tuple[str, Mapping[str, Any], Any, ErrorCategory, str]] = [
    ("unknown_rope_type", {"config": {**_LLAMA, "rope_scaling": {"rope_type": "ntk_by_parts", "factor": 2.0}},
                           "layer": 0}, _QK, "invalid_argument", "an unknown rope_type"),
    ("yarn_without_factor", {"config": {**_LLAMA, "rope_scaling": {"rope_type": "yarn"}}, "layer": 0}, _QK,
     "invalid_argument", "YaRN without factor"),
    ("factor_not_positive", {"config": {**_LLAMA, "rope_scaling": {"rope_type": "linear", "factor": 0.0}},
                             "layer": 0}, _QK, "invalid_argument", "factor <= 0"),
    ("longrope_list_length", {"config": {**_LLAMA, "rope_scaling": {"type": "longrope", "short_factor": [1.0] * 3,
                                                                      "long_factor": [1.0] * 8},
                                         "original_max_position_embeddings": 1024}, "layer": 0, "context_length": 2},
     _QK, "invalid_argument", "a LongRoPE factor list of the wrong length"),
    ("layer_types_length", {"config": {**_LLAMA, "layer_types": ["full_attention"] * 3}, "layer": 0}, _QK,
     "invalid_argument", "layer_types not one per layer"),
    ("layer_out_of_range", {"config": _LLAMA, "layer": 2}, _QK, "invalid_argument", "layer index past the model"),
]

_T5 = {"model_type": "t5", "d_kv": 8, "num_heads": 2, "num_layers": 1}


def _grouped_cases() -> dict[str, list[Case]]:
    """The model cases by op, with each op's wrong-scheme error case."""
    wrong_scheme = {
        "model.nope": ("rope_layer", {"config": _LLAMA, "layer": 0}, _QK),
        "model.alibi": ("rope_layer", {"config": _LLAMA, "layer": 0},
                        {"query_positions": np.array([0]), "key_positions": np.array([0])}),
        "model.t5": ("rope_layer", {"config": _LLAMA, "layer": 0},
                     {"query_positions": np.array([0]), "key_positions": np.array([0]), "table": np.zeros((32, 2))}),
        "model.deberta": ("t5_layer", {"config": _T5, "layer": 0},
                          {"query_positions": np.array([0]), "key_positions": np.array([0])}),
        "model.sinusoidal": ("rope_layer", {"config": _LLAMA, "layer": 0}, {"positions": np.array([0])}),
        "model.transformer_xl": ("rope_layer", {"config": _LLAMA, "layer": 0}, {"distances": np.array([0])}),
    }
    groups = _all_cases()
    for op, (name, params, inputs) in wrong_scheme.items():
        groups.setdefault(op, []).extend(error_cases(op, [(name, params, inputs, "invalid_argument",
                                                           "a layer of another scheme")]))
    return groups


def _records() -> tuple[OpRecord, ...]:
    """The model ops' records; the case groups are built here and not kept (they are no lookup table)."""
    groups = _grouped_cases()

    def record(name: str, function: Any, inputs: tuple[str, ...], outputs: tuple[Output, ...], summary: str,
               extra: tuple[Case, ...] = (), **kwargs: Any) -> OpRecord:
        return OpRecord(name=name, family="model", function=function, inputs=inputs, outputs=outputs, params=_PARAMS,
                        summary=summary, citation=CITATION, cases=tuple(groups.get(name, [])) + extra, **kwargs)

    return (
        record("model.rope", compute.model_rope, ("positions", "q", "k"), (
            Output("q_rot", "float64", "phase", _rotated_phase("q"), _rotated_scale("q")),
            Output("k_rot", "float64", "phase", _rotated_phase("k"), _rotated_scale("k")),
            Output("cos", "float64", "phase", _table_phase, _zero_scale("cos")),
            Output("sin", "float64", "phase", _table_phase, _zero_scale("sin")),
            Output("logit_scale", "float64", "phase", _scale_phase, _zero_scale("logit_scale"))),
            "a RoPE or MRoPE layer of a model config: rotated q/k, the cos/sin tables and the logit multiplier",
            tuple(error_cases("model.rope", _BAD)), position_inputs=("positions",), value_inputs=("q", "k")),
        record("model.nope", compute.model_nope, ("positions", "q", "k"), (
            Output("q_rot", "float64", "phase", _copy_phase, _copy_scale("q")),
            Output("k_rot", "float64", "phase", _copy_phase, _copy_scale("k")),
            Output("logit_scale", "float64", "phase", _scale_phase, _zero_scale("logit_scale"))),
            "a NoPE layer: q/k unrotated, the per-position logit multiplier (Llama 4 temperature tuning)",
            position_inputs=("positions",), value_inputs=("q", "k")),
        record("model.alibi", compute.model_alibi, ("query_positions", "key_positions"),
                (Output("bias", "float64", "phase", _alibi_phase),),
                "an ALiBi layer's bias (relative_causal form)", position_inputs=("query_positions", "key_positions")),
        record("model.t5", compute.model_t5, ("query_positions", "key_positions", "table"),
                (Output("bucket", "int64", "exact"), Output("bias", "float64", "ulp")),
                "a T5 layer's relative buckets and bias", position_inputs=("query_positions", "key_positions"),
                value_inputs=("table",)),
        record("model.deberta", compute.model_deberta, ("query_positions", "key_positions"),
                (Output("index", "int64", "exact"),), "a DeBERTa-v2/v3 layer's relative-embedding rows",
                position_inputs=("query_positions", "key_positions")),
        record("model.learned", compute.model_learned, ("positions",), (Output("index", "int64", "exact"),),
                "the learned-table row each position reads (offsets of OPT, BART, RoBERTa)",
                position_inputs=("positions",)),
        record("model.transformer_xl", compute.model_transformer_xl, ("distances",),
                (Output("embedding", "float64", "phase", _xl_phase),),
                "the relative sinusoid rows of an XLNet layer (Transformer-XL R_delta), one per distance",
                tuple(error_cases("model.transformer_xl", [
                    ("uni_negative_distance", {"config": _XL_SMALL, "layer": 0}, {"distances": np.array([-1, 0])},
                     "out_of_range", "a negative distance on an attn_type='uni' layer")])),
                position_inputs=("distances",)),
        record("model.sinusoidal", compute.model_sinusoidal, ("positions",),
                (Output("embedding", "float64", "phase", _sinusoid_phase),),
                "the fixed sinusoidal embedding of a stack (Whisper encoder, Marian, M2M100)",
                position_inputs=("positions",)),
    )


RECORDS: tuple[OpRecord, ...] = _records()
