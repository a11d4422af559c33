"""The RoPE reading of a config: which rope parameters a layer type uses, as transformers 5.x reads them.

transformers 5.x keeps a layer's rope settings in ``rope_parameters`` (one mapping, or one per
layer type: ``{"sliding_attention": {...}, "full_attention": {...}}``). A config written for 4.x
carries ``rope_scaling`` (keys ``rope_type`` or ``type``) and a top-level ``rope_theta``;
transformers 5.x folds the two into ``rope_parameters`` when it loads the config
(``RotaryEmbeddingConfigMixin.standardize_rope_params``), and so does this reader.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from posenc_ref import rope_scaling as rs
from posenc_ref.errors import SpecError
from posenc_ref.models._reader import FUNC, Reader, count, finite, positive

ALIASES: Final = {"su": "longrope", "mrope": "default"}
"""Old ``rope_scaling.type`` names and what transformers reads them as (Phi-3's ``su``, Qwen2-VL's ``mrope``)."""
KNOWN: Final = tuple(t for t in rs.ROPE_TYPES if t != "ntk_aware")
_LAYER_TYPES: Final = ("full_attention", "sliding_attention", "chunked_attention", "linear_attention")


def _per_type(params: Mapping[str, Any]) -> bool:
    return bool(params) and all(key in _LAYER_TYPES and isinstance(v, Mapping) for key, v in params.items())


CLASS_ROPE_PARAMETERS: Final[dict[str, dict[str, Any]]] = {
    "ministral3": {"rope_type": "yarn", "rope_theta": 1000000.0, "factor": 16.0,
                   "original_max_position_embeddings": 16384, "beta_fast": 32.0, "beta_slow": 1.0,
                   "mscale_all_dim": 1.0, "mscale": 1.0, "llama_4_scaling_beta": 0.1},
    "gemma4_text": {"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                    "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25,
                                       "rope_theta": 1000000.0}},
}
"""Config classes that fill a missing ``rope_parameters`` with a whole object of their own
(transformers 5.17 ``Ministral3Config.__post_init__``, models/ministral3/configuration_ministral3.py;
``Gemma4TextConfig.__post_init__``, one object per layer type); there a top-level ``rope_theta``
without ``rope_scaling`` is not read."""


def rope_source(r: Reader, layer_type: str, *, theta_key: str, default_theta: float, local_theta: float | None,
                interpretation: str, class_default: dict[str, Any] | None = None) -> Reader | dict[str, Any]:
    """The mapping of rope settings that ``layer_type`` layers read (a Reader over the config, or a built dict).

    ``local_theta`` is Gemma 3's ``rope_local_base_freq`` reading for sliding layers of a 4.x config;
    ``class_default`` the config class's own ``rope_parameters`` when the config has no rope keys.
    """
    if r.has("rope_parameters") and interpretation != "transformers-4":
        node = r.child("rope_parameters")
        if _per_type(node.data):
            if layer_type not in node.data:
                raise SpecError(f"{FUNC}: rope_parameters has no entry for layer type {layer_type!r}; it has "
                                f"{', '.join(node.data)}")
            return node.child(layer_type)
        return node
    if class_default is not None and not r.has("rope_parameters") and not r.has("rope_scaling"):
        r.root.defaulted[r.prefix + "rope_parameters"] = dict(class_default)
        if r.has("rope_theta"):
            r.note("rope_theta without rope_parameters or rope_scaling is not read: the config class fills "
                   "rope_parameters with its own default object")
        chosen = class_default.get(layer_type) if _per_type(class_default) else class_default
        if chosen is None:
            raise SpecError(f"{FUNC}: the class default rope_parameters has no entry for layer type {layer_type!r}")
        return dict(chosen)
    if local_theta is not None and layer_type == "sliding_attention":
        # Note: Gemma 3 sliding layers: default rope at rope_local_base_freq, never the global scaling
        return {"rope_type": "default", "rope_theta": local_theta}
    if not r.has("rope_scaling"):
        r.get("rope_scaling")  # a JSON null rope_scaling is read: no scaling
    node = r.child("rope_scaling") if r.has("rope_scaling") else Reader({}, r.prefix + "rope_scaling.", parent=r)
    return _Legacy(node, r.number(theta_key, default_theta))


class _Legacy(Reader):
    """A 4.x ``rope_scaling`` object read with the top-level ``rope_theta`` folded in (as transformers 5 does)."""

    def __init__(self, node: Reader, theta: float) -> None:
        super().__init__(node.data, node.prefix, parent=node)
        self.theta = theta

    def get(self, key: str, default: Any = None, *, record_default: bool = True) -> Any:
        if key == "rope_theta":
            return self.theta
        return super().get(key, default, record_default=record_default)


def _lookup(source: Reader | dict[str, Any], key: str) -> Any:
    return source.get(key) if isinstance(source, Reader) else source.get(key)


def rope_type(source: Reader | dict[str, Any], r: Reader) -> str:
    raw = _lookup(source, "rope_type")
    if raw is None:
        raw = _lookup(source, "type")
    if raw is None:
        return "default"
    if not isinstance(raw, str):
        raise SpecError(f"{FUNC}: rope_type must be a string, got {raw!r}")
    if raw in ALIASES:
        r.note(f"rope type {raw!r} is read as {ALIASES[raw]!r} (transformers' alias)")
        raw = ALIASES[raw]
    if raw not in KNOWN:
        raise SpecError(f"{FUNC}: unknown rope_type {raw!r}; known: {', '.join(KNOWN)} (aliases: "
                        f"{', '.join(ALIASES)})")
    return raw


def frequency_params(source: Reader | dict[str, Any], r: Reader, *, kind: str, dim: int, max_position: int | None,
                     interpretation: str) -> dict[str, Any]:
    """``rope_inv_freq`` keywords (less ``context_length``) for one layer's rope settings."""
    out: dict[str, Any] = {"rope_type": kind, "base": positive("rope_theta", _lookup(source, "rope_theta"))}
    factor = _lookup(source, "factor")
    original = _lookup(source, "original_max_position_embeddings")
    if kind == "longrope" and original is None and r.has("original_max_position_embeddings"):
        original = r.get("original_max_position_embeddings")  # Note: Phi-3 keeps it at the top level
    if kind in ("linear", "dynamic", "yarn", "llama3") and factor is None:
        raise SpecError(f"{FUNC}: rope_type={kind!r} needs factor, which is missing")
    if kind == "longrope" and factor is None:
        if original is None or max_position is None:
            raise SpecError(f"{FUNC}: rope_type='longrope' needs factor or original_max_position_embeddings")
        # Note: transformers: max_position_embeddings / original
        factor = max_position / count("original_max_position_embeddings", original)
        r.note(f"longrope factor = max_position_embeddings / original_max_position_embeddings = {factor!r}")
    if factor is not None:
        out["factor"] = positive("factor", factor)
    if kind in ("yarn", "longrope", "llama3") or (kind == "dynamic"):
        if original is None:
            if max_position is None:
                raise SpecError(f"{FUNC}: rope_type={kind!r} needs original_max_position_embeddings")
            original = max_position
            r.note(f"{kind}: original_max_position_embeddings defaults to max_position_embeddings = {original}")
        if kind == "dynamic":
            original = max_position if max_position is not None else original  # Note: transformers 5 dynamic
        out["original_max_position"] = count("original_max_position_embeddings", original)
    if kind == "llama3":
        for key in ("low_freq_factor", "high_freq_factor"):
            value = _lookup(source, key)
            if value is None:
                raise SpecError(f"{FUNC}: rope_type='llama3' needs {key}, which is missing")
            out[key] = positive(key, value)
    if kind == "yarn":
        for key in ("beta_fast", "beta_slow", "mscale", "mscale_all_dim", "attention_factor"):
            value = _lookup(source, key)
            if value is not None:
                out[key] = finite(key, value)
        truncate = _lookup(source, "truncate")
        out["truncate"] = True if truncate is None else truncate
        if not isinstance(out["truncate"], bool):
            raise SpecError(f"{FUNC}: truncate must be true or false, got {truncate!r}")
        if interpretation == "vllm":
            out["yarn_convention"] = "vllm_deepseek" if r.get("model_type") in ("deepseek_v2", "deepseek_v3") \
                else "transformers"
    if kind == "longrope":
        for key in ("short_factor", "long_factor"):
            value = _lookup(source, key)
            if not isinstance(value, list) or len(value) != dim // 2:
                got = f"length {len(value)}" if isinstance(value, list) else repr(value)
                raise SpecError(f"{FUNC}: longrope {key} must be a list of rotary_dim/2 = {dim // 2} numbers, "
                                f"got {got}")
            out[key] = [positive(key, v) for v in value]
        attention = _lookup(source, "attention_factor")
        if attention is not None and interpretation != "vllm":
            out["attention_factor"] = positive("attention_factor", attention)
    if kind == "dynamic" and interpretation == "vllm":
        out["dynamic_convention"] = "vllm_static"
    if kind == "proportional":
        prf = _lookup(source, "partial_rotary_factor")
        out["partial_rotary_factor"] = 1.0 if prf is None else positive("partial_rotary_factor", prf)
    return out
