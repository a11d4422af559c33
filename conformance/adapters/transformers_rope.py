"""Library adapters for RoPE: transformers' own frequency initialisers and rotations.

``ROPE_INIT`` and ``LONGROPE`` (``compute_default_rope_parameters`` and ``ROPE_INIT_FUNCTIONS`` on
a ``LlamaConfig`` built from the case), ``LLAMA_ROPE`` (``LlamaRotaryEmbedding`` +
``apply_rotary_pos_emb``; a scaled ``rope.apply`` takes its frequencies and attention scaling
from ``ROPE_INIT_FUNCTIONS`` on a LlamaConfig of the case's scaling), ``GPTJ_ROPE`` (GPT-J's
interleaved rotation, unscaled) and ``QWEN2VL_MROPE`` (``Qwen2VLRotaryEmbedding``). Our parameters
map onto transformers' ``rope_parameters`` as conformance/README.md ("PyTorch and transformers
adapters") describes; what transformers cannot express (ntk_aware, the vLLM conventions, ggml's
``ext_factor``) is not applicable, with the reason.

Run::

    posenc-ref conformance conformance/adapters/transformers_rope.py:ROPE_INIT \\
        --expectations conformance/adapters/torch_library.toml
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
from posenc_adapter_shared import Adapter, base_value, choice, integer, invalid, invalid_shape, positions, require
from torch_common import (
    _back,
    _ExplainedAdapter,
    _finite_float,
    _llama_config,
    _numpy,
    _rope_scaling,
    _rope_x,
    _transformers,
    _version,
)

torch = require("torch", "torch")


def _required(p: Mapping[str, Any], name: str, hf_name: str) -> Any:
    if p.get(name) is None:
        raise invalid(f"rope_type={p['rope_type']!r} needs {name} ({hf_name} in transformers' rope_parameters)")
    return p[name]


ROPE_INIT_TYPES = ("default", "linear", "dynamic", "yarn", "llama3", "proportional")


def _rope_parameters(p: Mapping[str, Any]) -> tuple[dict[str, Any], int, int | None]:
    """Our ``rope.inv_freq`` parameters as transformers ``rope_parameters``, the head_dim and ``seq_len``.

    The wrapper's checks (transformers' init functions validate nothing): even ``dim``, a known
    type, required parameters present, ``factor >= 1`` (linear, dynamic, yarn, llama3),
    ``low_freq_factor < high_freq_factor``, ``0 < partial_rotary_factor <= 1``, ``base > 0``.
    transformers' dynamic bracket uses ``max(context_length, M)`` and is always >= 1.
    """
    rope_type = choice("rope_type", p["rope_type"], ROPE_INIT_TYPES + ("ntk_aware", "longrope"))
    dim = integer("dim", p["dim"], 2)
    if dim % 2:
        raise invalid(f"dim must be even, got {dim}")
    base = base_value(p["base"])
    out: dict[str, Any] = {"rope_type": rope_type, "rope_theta": base}
    rho = _finite_float("partial_rotary_factor", p["partial_rotary_factor"], positive=True)
    if rho > 1:
        raise invalid(f"partial_rotary_factor must be in (0, 1], got {rho}")
    ext = _finite_float("ext_factor", p.get("ext_factor", 1.0))
    if not 0.0 <= ext <= 1.0:
        raise invalid(f"ext_factor must be in [0, 1] (ggml's ramp weight), got {ext}")
    seq_len = None
    if rope_type in ("linear", "dynamic", "yarn", "llama3"):
        factor = _finite_float("factor", _required(p, "factor", "factor"), minimum=1.0)
        out["factor"] = factor
    if rope_type == "proportional":
        out["partial_rotary_factor"] = rho
        if p.get("factor") is not None:
            out["factor"] = _finite_float("factor", p["factor"], positive=True)
    if rope_type in ("dynamic", "yarn", "llama3"):
        out["original_max_position_embeddings"] = integer(
            "original_max_position", _required(p, "original_max_position", "original_max_position_embeddings"), 1)
    if rope_type == "dynamic":
        seq_len = integer("context_length", _required(p, "context_length", "max(position_ids) + 1"), 1)
    if rope_type == "yarn":
        for name in ("beta_fast", "beta_slow", "mscale", "mscale_all_dim", "attention_factor"):
            if p.get(name) is not None:
                out[name] = _finite_float(name, p[name])
        out["truncate"] = bool(p["truncate"])
    if rope_type == "llama3":
        low = _finite_float("low_freq_factor", _required(p, "low_freq_factor", "low_freq_factor"), positive=True)
        high = _finite_float("high_freq_factor", _required(p, "high_freq_factor", "high_freq_factor"), positive=True)
        if low >= high:
            raise invalid(f"low_freq_factor must be < high_freq_factor, got {low} and {high}")
        out.update(low_freq_factor=low, high_freq_factor=high)
    return out, dim, seq_len


def _init_frequencies(params: Mapping[str, Any]) -> tuple[Any, float, Any]:
    """transformers' inv_freq (float32 tensor) and attention factor for our ``rope.inv_freq``
    parameters (every type but longrope), and the LlamaConfig it built them from."""
    rope_parameters, dim, seq_len = _rope_parameters(params)
    rope_type = rope_parameters["rope_type"]
    trained = rope_parameters.get("original_max_position_embeddings", 4096)
    if rope_type == "dynamic":  # transformers' dynamic M is max_position_embeddings
        rope_parameters.pop("original_max_position_embeddings")
    # yarn and llama3: max_position_embeddings = factor * original, as their configs have it
    max_position = int(round(rope_parameters["factor"] * trained)) if rope_type in ("yarn", "llama3") else trained
    config = _llama_config(rope_parameters, dim, max_position)
    if rope_type == "default":
        llama = _transformers("llama.modeling_llama")
        inv_freq, attention_factor = llama.LlamaRotaryEmbedding.compute_default_rope_parameters(config)
    else:
        init = require("transformers.modeling_rope_utils", "torch").ROPE_INIT_FUNCTIONS[rope_type]
        inv_freq, attention_factor = init(config, None, seq_len)
    return inv_freq, float(attention_factor), config


def _rope_init(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, ...]:
    inv_freq, attention_factor, config = _init_frequencies(params)
    mscale = 1.0  # DeepSeek-V3's attention multiplies its softmax scale for yarn only
    if params["rope_type"] == "yarn":
        mscale = _transformers("deepseek_v3.modeling_deepseek_v3").yarn_apply_mscale(config.rope_parameters, 1.0)
    return (_numpy(inv_freq), np.array([attention_factor]), np.array([float(mscale)]))


def _apply_frequencies(params: Mapping[str, Any], scaled: Mapping[str, Any], space: int) -> tuple[Any, float]:
    """A scaled ``rope.apply`` case's frequencies and attention factor from transformers'
    ``ROPE_INIT_FUNCTIONS`` on a LlamaConfig of head_dim S: the case's scaling keywords as
    ``rope_parameters`` (``scaling_attention_factor`` is transformers' ``attention_factor``), the
    case's ``context_length`` as ``seq_len``."""
    if scaled["type"] == "longrope":
        chosen = scaled["freq"]["factors"].tolist()
        short, long = (chosen if params[n] is None else params[n] for n in ("short_factor", "long_factor"))
        return _longrope_init(params, space, short, long, params["scaling_attention_factor"])
    inv_freq, attention_factor, _ = _init_frequencies({**params, "dim": space, "partial_rotary_factor": 1.0,
                                                       "attention_factor": params["scaling_attention_factor"]})
    return inv_freq, attention_factor


def _llama_apply(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
    x, pos, rotary = _rope_x(params, inputs, ("half",))
    scaled = _rope_scaling("rope.apply", params, x, rotary)
    llama = _transformers("llama.modeling_llama")
    config = _llama_config({"rope_type": "default", "rope_theta": base_value(params["base"])}, rotary, 4096)
    embedding = llama.LlamaRotaryEmbedding(config)
    scaling = 1.0
    if scaled["type"] != "default":  # the init function's frequencies, the case's context_length as seq_len
        embedding.inv_freq, scaling = _apply_frequencies(params, scaled, rotary)
    embedding.attention_scaling = float(params["attention_factor"]) * scaling  # what a yarn init sets, times ours
    xt = torch.from_numpy(x).to(torch.float32)
    with torch.no_grad():
        cos, sin = embedding(xt, torch.from_numpy(np.array(pos)))  # (B, T, rotary), float32
        if rotary == x.shape[-1]:
            y, _ = llama.apply_rotary_pos_emb(xt, xt, cos, sin)
        else:  # GPT-NeoX rotates the prefix cos.shape[-1] and passes the rest through
            y, _ = _transformers("gpt_neox.modeling_gpt_neox").apply_rotary_pos_emb(xt, xt, cos, sin)
    return _back(y, params["x_layout"])


def _gptj_apply(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
    x, pos, rotary = _rope_x(params, inputs, ("interleaved",))
    _rope_scaling("rope.apply", params, x, rotary)  # the scaling keywords checked; GPT-J has none
    gptj = _transformers("gptj.modeling_gptj")
    table = gptj.create_sinusoidal_positions(int(pos.max()) + 1, rotary)  # (N, rotary): [sin | cos], base 10^4
    sincos = table[torch.from_numpy(np.array(pos))]  # (B, T, rotary)
    sin, cos = torch.split(sincos, rotary // 2, dim=-1)
    xt = torch.from_numpy(x).to(torch.float32).transpose(1, 2)  # GPT-J rotates (B, T, H, D)
    with torch.no_grad():
        y = torch.cat([gptj.apply_rotary_pos_emb(xt[..., :rotary], sin, cos), xt[..., rotary:]], dim=-1)
    return _back(y.transpose(1, 2), params["x_layout"])


def _llama_cos_sin(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    pos, inv_freq = checks.cos_sin(params, inputs)
    factor = float(params["attention_factor"])
    llama = _transformers("llama.modeling_llama")
    embedding = llama.LlamaRotaryEmbedding(_llama_config({"rope_type": "default", "rope_theta": 10000.0},
                                                         2 * inv_freq.size, 4096))
    embedding.inv_freq = torch.from_numpy(inv_freq).to(torch.float32)  # the frequencies under test
    embedding.attention_scaling = factor
    flat = torch.from_numpy(pos.reshape(1, -1))
    with torch.no_grad():
        cos, sin = embedding(torch.zeros(1, dtype=torch.float32), flat)  # (1, N, 2P) = [freqs | freqs]
    shape = pos.shape + (2 * inv_freq.size,)
    return _numpy(cos.reshape(shape)), _numpy(sin.reshape(shape))


def _qwen2vl_mrope(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    width = choice("width", params["width"], ("half", "full"))
    choice("mrope_layout", params["mrope_layout"], ("chunked", "interleaved"))
    dim = integer("dim", params["dim"], 2)
    base = base_value(params["base"])
    section = positions("mrope_section", inputs["mrope_section"]).tolist()
    if dim % 2 or len(section) != 3 or sum(section) != dim // 2:
        raise invalid(f"need an even dim and three mrope_section entries summing to dim/2, got {dim} and {section}")
    pos = positions("positions", inputs["positions"])
    if pos.ndim != 2 or pos.shape[0] != 3:
        raise invalid_shape(f"positions must be (3, T): temporal, height, width streams, got {pos.shape}")
    choice("mrope_layout", params["mrope_layout"], ("chunked",))  # Qwen2-VL's layout, after the checks
    qwen2vl = _transformers("qwen2_vl.modeling_qwen2_vl")
    config = qwen2vl.Qwen2VLTextConfig(hidden_size=dim, num_attention_heads=1, num_key_value_heads=1,
                                       rope_parameters={"rope_type": "default", "rope_theta": base,
                                                        "mrope_section": section})
    rotary = qwen2vl.Qwen2VLRotaryEmbedding(config)
    with torch.no_grad():
        cos, sin = rotary(torch.zeros(1, dtype=torch.float32), torch.from_numpy(pos)[:, None, :])  # (1, T, dim)
    if width == "half":
        cos, sin = cos[..., : dim // 2], sin[..., : dim // 2]
    return _numpy(cos[0]), _numpy(sin[0])


def _longrope_init(params: Mapping[str, Any], dim: int, short: Any, long: Any,
                   attention_factor: Any) -> tuple[Any, float]:
    """``ROPE_INIT_FUNCTIONS['longrope']`` on a LlamaConfig of head_dim ``dim`` with the factor lists,
    ``seq_len = context_length``: (inv_freq float32 tensor, attention factor)."""
    trained = integer("original_max_position", params["original_max_position"], 1)
    rope_parameters: dict[str, Any] = {
        "rope_type": "longrope", "rope_theta": base_value(params["base"]), "short_factor": list(short),
        "long_factor": list(long), "original_max_position_embeddings": trained,
        "factor": _finite_float("factor", params["factor"], positive=True)}
    if attention_factor is not None:
        rope_parameters["attention_factor"] = _finite_float("attention_factor", attention_factor, positive=True)
    seq_len = integer("context_length", params["context_length"], 1)
    config = _llama_config(rope_parameters, dim, max(int(rope_parameters["factor"] * trained), 1))
    init = require("transformers.modeling_rope_utils", "torch").ROPE_INIT_FUNCTIONS["longrope"]
    inv_freq, factor = init(config, None, seq_len)
    return inv_freq, float(factor)


def _longrope(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    dim = integer("dim", params["dim"], 2)
    if dim % 2:
        raise invalid(f"dim must be even, got {dim}")
    short, long = (np.asarray(inputs[n], dtype=np.float64) for n in ("short_factor", "long_factor"))
    if short.shape != (dim // 2,) or long.shape != (dim // 2,):
        raise invalid(f"short_factor and long_factor must have length dim/2 = {dim // 2}, "
                       f"got {short.shape}, {long.shape}")
    inv_freq, attention_factor = _longrope_init(params, dim, short.tolist(), long.tolist(), params["attention_factor"])
    return _numpy(inv_freq), np.array([attention_factor])


UNSCALED = {"rope_type": ("default",), "factor": (None,), "original_max_position": (None,),
            "context_length": (None,), "low_freq_factor": (None,), "high_freq_factor": (None,), "beta_fast": (None,),
            "beta_slow": (None,), "mscale": (None,), "mscale_all_dim": (None,), "scaling_attention_factor": (None,),
            "ext_factor": (1.0,), "short_factor": (None,), "long_factor": (None,)}
"""``rope.apply`` capabilities of a rotation without RoPE scaling (GPT-J's fixed sinusoid table)."""
LLAMA_SCALING = {"rope_type": ("default", "linear", "dynamic", "yarn", "llama3", "longrope"),
                 "dynamic_convention": ("transformers",), "yarn_convention": ("transformers",), "ext_factor": (1.0,)}
"""The scalings transformers' ROPE_INIT_FUNCTIONS express for ``rope.apply`` (no ntk_aware base, no vLLM
conventions, no ggml ext_factor; proportional rotation is not Llama's partial prefix)."""


_LIBRARY_REASONS = {
    "ext_factor": "ggml's ext_factor (llama.cpp --yarn-ext-factor); transformers' YaRN blends by the ramp alone "
                  "(ext_factor 1)",
    "rope_type": "transformers has no ntk_aware init (its NTK scaling is 'dynamic')",
    "dynamic_convention": "transformers' dynamic NTK takes max(context_length, max_position_embeddings) "
                          "('transformers')",
    "yarn_convention": "transformers' YaRN is the 'transformers' convention",
}
REASONS = {
    **{(op, name): why for op in ("rope.inv_freq", "rope.apply") for name, why in _LIBRARY_REASONS.items()},
    ("rope.inv_freq", "rope_type"): _LIBRARY_REASONS["rope_type"] + "; longrope takes its factor lists as inputs "
                                    "(LONGROPE, rope.longrope_inv_freq)",
    ("rope.apply", "partial"): "Llama / GPT-NeoX rotate a prefix",
    ("rope.apply", "layout"): "Llama's rotate_half pairs channel i with i + d/2 (layout 'half')",
}
"""Why ROPE_INIT and LLAMA_ROPE cannot run a parameter value (the not_applicable reason)."""
GPTJ_REASONS = {
    ("rope.apply", "partial"): REASONS[("rope.apply", "partial")],
    ("rope.apply", "layout"): "GPT-J's rotate_every_two pairs channels 2i and 2i + 1 (layout 'interleaved')",
    ("rope.apply", "base"): "GPT-J's create_sinusoidal_positions fixes base 10000",
    ("rope.apply", "attention_factor"): "GPT-J's rotation has no attention factor",
    **{("rope.apply", name): "GPT-J's create_sinusoidal_positions has no RoPE scaling" for name in UNSCALED},
}


def rope_init() -> Adapter:
    calls = {"rope.inv_freq": "transformers LlamaRotaryEmbedding.compute_default_rope_parameters (default) and "
                              "modeling_rope_utils.ROPE_INIT_FUNCTIONS[rope_type] (linear, dynamic, yarn, llama3, "
                              "proportional) on a LlamaConfig; softmax_scale from DeepSeek-V3's yarn_apply_mscale"}
    caps = {"rope.inv_freq": {"rope_type": ROPE_INIT_TYPES, "dynamic_convention": ("transformers",),
                              "yarn_convention": ("transformers",), "ext_factor": (1.0,)}}  # no ggml ext_factor
    return _ExplainedAdapter("transformers-rope-init", _version(), "float32", {"rope.inv_freq": _rope_init}, caps,
                             calls, reasons=REASONS)


def llama_rope() -> Adapter:
    calls = {"rope.apply": "transformers LlamaRotaryEmbedding.forward + Llama apply_rotary_pos_emb (rotate_half); "
                           "GPT-NeoX apply_rotary_pos_emb for a partial prefix; a scaled case's inv_freq and "
                           "attention_scaling from modeling_rope_utils.ROPE_INIT_FUNCTIONS[rope_type] on a LlamaConfig",
             "rope.cos_sin": "transformers LlamaRotaryEmbedding.forward with the case's inv_freq"}
    caps = {"rope.apply": {"layout": ("half",), "partial": ("prefix",), **LLAMA_SCALING},
            "rope.cos_sin": {"width": ("full",)}}
    return _ExplainedAdapter("transformers-llama-rope", _version(), "float32",
                             {"rope.apply": _llama_apply, "rope.cos_sin": _llama_cos_sin}, caps, calls, reasons=REASONS)


def gptj_rope() -> Adapter:
    calls = {"rope.apply": "transformers GPT-J create_sinusoidal_positions + apply_rotary_pos_emb (rotate_every_two)"}
    caps = {"rope.apply": {"layout": ("interleaved",), "partial": ("prefix",), "base": (10000.0,),
                           "attention_factor": (1.0,), **UNSCALED}}
    return _ExplainedAdapter("transformers-gptj-rope", _version(), "float32", {"rope.apply": _gptj_apply}, caps, calls,
                             reasons=GPTJ_REASONS)


def qwen2vl_mrope() -> Adapter:
    calls = {"rope.mrope_cos_sin": "transformers Qwen2VLRotaryEmbedding.forward (recomposition_frequencies) "
                                   "with rope_parameters['mrope_section'] = the case's sections"}
    return Adapter("transformers-qwen2vl-mrope", _version(), "float32", {"rope.mrope_cos_sin": _qwen2vl_mrope},
                   {"rope.mrope_cos_sin": {"mrope_layout": ("chunked",)}}, calls)


def longrope() -> Adapter:
    calls = {"rope.longrope_inv_freq": "transformers modeling_rope_utils.ROPE_INIT_FUNCTIONS['longrope'] "
                                       "(_compute_longrope_parameters) on a LlamaConfig"}
    return Adapter("transformers-longrope", _version(), "float32", {"rope.longrope_inv_freq": _longrope},
                   {"rope.longrope_inv_freq": {"longrope_convention": ("transformers",)}}, calls)


ROPE_INIT = rope_init
LLAMA_ROPE = llama_rope
GPTJ_ROPE = gptj_rope
QWEN2VL_MROPE = qwen2vl_mrope
LONGROPE = longrope
