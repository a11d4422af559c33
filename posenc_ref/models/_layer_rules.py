"""The per-layer rules of the rotary models that :mod:`posenc_ref.models.resolve` reads from a config:
the attention shape, the layer types, the NoPE layers, the rotary width, the layout, the softmax
multiplier and the attention temperature (docs/models.md pins the reading of every key).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final

from posenc_ref.errors import SpecError
from posenc_ref.models._reader import FUNC, Reader, check_upper, positive

_INTERLEAVED: Final = ("gptj", "cohere", "glm", "glm4", "llama4_text", "deepseek_v2")


_SHAPE_DEFAULTS: Final[dict[str, tuple[int, int | None, int | None]]] = {
    "llama": (32, None, None), "mistral": (32, 8, None), "mixtral": (32, 8, None), "qwen2": (32, 32, None),
    "qwen3": (32, 32, 128), "qwen2_vl": (64, 8, None), "qwen2_vl_text": (64, 8, None),
    "qwen3_vl_text": (32, 32, 128), "gemma": (16, 16, 256), "gemma2": (8, 4, 256), "gemma3_text": (8, 4, 256),
    "phi3": (32, None, None), "phi": (32, None, None), "gpt_neox": (64, None, None), "deepseek_v2": (32, None, None),
    "deepseek_v3": (128, 128, None), "gpt_oss": (64, 8, 64), "smollm3": (16, 4, None), "olmo2": (32, None, None),
    "cohere": (64, None, None), "glm": (32, 2, 128), "glm4": (32, 2, 128), "llama4_text": (40, 8, 128),
    "falcon": (71, None, None), "ministral3": (32, 8, 128)}
"""transformers 5.17 config-class defaults of (num_attention_heads, num_key_value_heads, head_dim), taken
when the key is absent: a hub file may leave them to the class (google/gemma-3-4b-pt's text_config has no
head count and no head_dim). ``None``: the key heads are the query heads, the head width is
``hidden_size / num_attention_heads``. DeepSeek's head width is always ``qk_nope_head_dim +
qk_rope_head_dim``; a type not listed here (Gemma 4, whose head keys are per layer type) needs the keys."""


def _attention_shape(r: Reader, model_type: str, *, heads_key: str = "num_attention_heads",
                     hidden_key: str = "hidden_size", kv_key: str = "num_key_value_heads") -> tuple[int, int, int]:
    default_heads, default_kv, default_dim = _SHAPE_DEFAULTS.get(model_type, (None, None, None))
    heads = r.integer(heads_key, default_heads)
    kv = r.integer(kv_key, heads if default_kv is None else default_kv) if kv_key else heads
    if heads % kv:
        raise SpecError(f"{FUNC}: {r.prefix}{heads_key}={heads} must be a multiple of {kv_key}={kv}")
    if r.has("head_dim") or default_dim is not None:
        return heads, kv, r.integer("head_dim", default_dim)
    hidden = r.integer(hidden_key)
    if hidden % heads:
        raise SpecError(f"{FUNC}: {r.prefix}{hidden_key}={hidden} is not a multiple of {heads_key}={heads}, and "
                        f"there is no head_dim")
    check_upper(f"{r.prefix}head_dim", hidden // heads)  # Note: the head width derived from hidden_size
    return heads, kv, hidden // heads


_WINDOW_DEFAULT: Final = {"mistral": 4096, "gemma2": 4096, "gemma3_text": 4096, "gemma4_text": 512, "gpt_oss": 128,
                          "qwen2": 4096, "qwen3": 4096, "qwen2_vl": 4096, "qwen2_vl_text": 4096}
"""transformers 5.17 config-class defaults of ``sliding_window``, taken when the key is absent (a JSON
null is no window, except for Gemma 4, whose class rejects it); the other windowed types default to no
window."""
_EVERY_LAYER: Final = ("mistral", "mixtral", "phi3", "ministral3")
"""Types whose modeling file gives every layer ``config.sliding_window`` (no ``layer_types``)."""
_GATED: Final = {"qwen2": 28, "qwen3": 28, "qwen2_vl": 80, "qwen2_vl_text": 80, "smollm3": None}
"""Types whose config class keeps ``sliding_window`` only when ``use_sliding_window`` is true (value: the
class default of ``max_window_layers``, None where the type has none)."""
_WINDOWED: Final = ("gemma2", "gemma3_text", "gemma4_text", "gpt_oss", *_EVERY_LAYER, *_GATED)


def _sliding_window(r: Reader, model_type: str) -> int | None:
    """The window of the model's sliding layers, or None (transformers 5.17 config classes). A type
    without sliding layers leaves the key unread, so it is listed as ignored."""
    if model_type not in _WINDOWED:
        return None
    if model_type in _GATED and not r.get("use_sliding_window", False):
        if r.has("sliding_window"):  # Note: Qwen2/Qwen3/SmolLM3 configs drop sliding_window unless use_sliding_window
            r.note(f"use_sliding_window is false: {r.prefix}sliding_window={r.data['sliding_window']!r} is dropped "
                   f"(no layer slides)")
        return None
    if "sliding_window" in r.data:
        window = r.get("sliding_window")
    else:
        window = r.get("sliding_window", _WINDOW_DEFAULT.get(model_type))
    if window is None and model_type == "gemma4_text":
        raise SpecError(f"{FUNC}: {r.prefix}sliding_window must be an integer >= 1 (Gemma4TextConfig has no null "
                        f"window), got None")
    if window is not None and (isinstance(window, bool) or not isinstance(window, int) or window < 1):
        raise SpecError(f"{FUNC}: {r.prefix}sliding_window must be an integer >= 1 or null, got {window!r}")
    if window is not None:
        check_upper(f"{r.prefix}sliding_window", window)
    return window


def _layer_types(r: Reader, model_type: str, n: int, window: int | None, uses_rope: list[bool]) -> list[str]:
    if r.has("layer_types"):
        types = r.get("layer_types")
        if not isinstance(types, list) or len(types) != n or not all(isinstance(t, str) for t in types):
            got = f"length {len(types)}" if isinstance(types, list) else repr(types)
            raise SpecError(f"{FUNC}: layer_types must list one type per layer (num_hidden_layers={n}), got {got}")
        if model_type == "gemma4_text" and types[-1] != "full_attention":
            # Note: Gemma4TextConfig forces the last layer to full attention (with a warning)
            r.note(f"layer_types ends with {types[-1]!r}: Gemma 4 makes its last layer full_attention")
            types = types[:-1] + ["full_attention"]
        return list(types)
    if model_type == "gemma4_text":
        types = ["sliding_attention" if (i + 1) % 6 else "full_attention" for i in range(n)]
        return types[:-1] + ["full_attention"]
    if model_type == "gemma2":
        return ["sliding_attention" if (i + 1) % 2 else "full_attention" for i in range(n)]
    if model_type == "gemma3_text":
        pattern = r.integer("sliding_window_pattern", 6)
        return ["sliding_attention" if (i + 1) % pattern else "full_attention" for i in range(n)]
    if model_type == "gpt_oss":
        return ["sliding_attention" if i % 2 == 0 else "full_attention" for i in range(n)]
    if window is None:
        return ["full_attention"] * n
    if model_type in _EVERY_LAYER:
        return ["sliding_attention"] * n  # Note: transformers applies sliding_window to every layer
    if model_type == "smollm3":  # Note: SmolLM3 slides on its NoPE layers only
        return ["full_attention" if rotated else "sliding_attention" for rotated in uses_rope]
    if model_type in _GATED:
        top = r.integer("max_window_layers", _GATED[model_type], minimum=0)
        return ["sliding_attention" if i >= top else "full_attention" for i in range(n)]
    return ["full_attention"] * n


def _uses_rope(r: Reader, model_type: str, n: int) -> list[bool]:
    if model_type not in ("llama4_text", "smollm3"):
        return [True] * n
    interval_key = "no_rope_layer_interval"
    if r.has("no_rope_layers") and r.get("no_rope_layers"):
        flags = r.get("no_rope_layers")
        if not isinstance(flags, list) or len(flags) != n or any(f not in (0, 1) for f in flags):
            raise SpecError(f"{FUNC}: no_rope_layers must list 0 or 1 for each of the {n} layers, got {flags!r}")
        return [bool(f) for f in flags]
    interval = r.integer(interval_key, 4)
    return [(i + 1) % interval != 0 for i in range(n)]


def _rotary(r: Reader, model_type: str, head_dim: int, source: Any) -> tuple[int, str, int]:
    """(rotary width, partial style, the width rope_inv_freq builds frequencies over)."""
    if model_type in ("deepseek_v2", "deepseek_v3"):
        return r.integer("qk_rope_head_dim"), "suffix", r.integer("qk_rope_head_dim")
    if model_type == "gptj":
        rd = head_dim if r.get("rotary_dim") is None else r.integer("rotary_dim")
        if rd % 2 or rd > head_dim:
            raise SpecError(f"{FUNC}: {r.prefix}rotary_dim must be even and at most the head width {head_dim}, "
                            f"got {rd}")
        return rd, "prefix", rd
    if model_type == "gpt_neox":
        factor = r.number("rotary_pct", 0.25) if not r.has("partial_rotary_factor") else r.number(
            "partial_rotary_factor")
    elif model_type in ("phi", "glm", "glm4", "phi3", "gpt_oss", "cohere", "olmo2", "qwen3", "smollm3",
                        "falcon", "qwen2"):
        default = {"phi": 0.5, "glm": 0.5, "glm4": 0.5}.get(model_type, 1.0)
        inner = source.get("partial_rotary_factor") if isinstance(source, (Reader, dict)) else None
        factor = r.number("partial_rotary_factor", default) if inner is None else positive(
            "rope_parameters.partial_rotary_factor", inner)
    else:
        factor = 1.0  # Note: transformers' Llama-style models ignore partial_rotary_factor
    if factor > 1.0:
        raise SpecError(f"{FUNC}: the partial rotary factor must be at most 1 (a share of head_dim={head_dim}), "
                        f"got {factor!r}")
    rd = int(head_dim * factor)
    if rd % 2 or rd < 2 or rd > head_dim:
        raise SpecError(f"{FUNC}: the rotary width int(head_dim * partial_rotary_factor) = {rd} must be even, "
                        f">= 2 and at most head_dim (head_dim={head_dim}, factor={factor})")
    return rd, "prefix", rd


def _lookup_any(source: Any, key: str) -> Any:
    return source.get(key) if isinstance(source, (Reader, dict)) else None


def _layout(r: Reader, model_type: str) -> str:
    if model_type == "deepseek_v3":
        return "interleaved_to_half" if r.get("rope_interleave", True) else "half"
    return "interleaved" if model_type in _INTERLEAVED else "half"


def _softmax_multiplier(params: Mapping[str, Any], model_type: str) -> float:
    """DeepSeek's ``mscale(s, mscale_all_dim)**2`` on the softmax scale (1 elsewhere)."""
    if model_type not in ("deepseek_v2", "deepseek_v3") or params["rope_type"] != "yarn":
        return 1.0
    from posenc_ref.rope_scaling import yarn_mscale
    m_all = params.get("mscale_all_dim")
    g = yarn_mscale(params["factor"], m_all) if m_all else 1.0
    multiplier = g * g  # Note: a product, not ** 2, so that an overflow is inf (refused below), not OverflowError
    if not math.isfinite(multiplier):
        raise SpecError(f"{FUNC}: the softmax multiplier mscale(factor={params['factor']!r}, mscale_all_dim="
                        f"{m_all!r})**2 overflows float64")
    return multiplier


def _temperature(r: Reader, model_type: str, rotated: bool) -> dict[str, Any] | None:
    if model_type == "llama4_text" and not rotated and r.get("attn_temperature_tuning", True):
        return {"rule": "llama4", "attn_scale": r.number("attn_scale", 0.1), "floor_scale": r.number(
            "floor_scale", 8192.0)}
    return None
