"""transformers 5.x as an engine under test: each model's own rotary module, built from the config.

A model-level adapter (``run_model``, see ``posenc_ref/runner/models.py``): for a model case it
builds the model's configuration class from the config dict exactly as the case carries it
(``AutoConfig.for_model``; multimodal configs through ``get_text_config()``), builds the text
model on the ``meta`` device (no weights are allocated, so hidden sizes do not matter), and from
it takes

* the layer's attention module: ``scaling`` (the logit multiplier), ``layer_type``, ``use_rope``
  (NoPE layers) and the Llama 4 temperature attributes;
* the model's rotary module, rebuilt on the CPU from the same config (``type(model.rotary_emb)
  (config)``), called as the model calls it (with the layer type where the model keys rope
  parameters by layer type), with the case's positions as ``position_ids``: its cos/sin carry
  ``attention_scaling`` as transformers multiplies it in, and dynamic NTK / LongRoPE select on
  ``max(position_ids) + 1`` as in a forward pass;
* the modeling file's own ``apply_rotary_pos_emb`` on the case's q and k (``(1, H, T, D)``,
  float32), with the split the attention forward makes where it makes one (Phi's
  ``rotary_ndims``).

So transformers' config parsing (``rope_scaling`` -> ``rope_parameters`` standardisation,
defaults of the config class, per-layer-type nesting) and its rope initialisation functions are
what is under test; the harness adds no formula of its own. Temperature tuning (Llama 4) is the
one per-position rule the harness reads from the attention module's attributes, because
transformers computes it inline in the attention forward; Ministral 3's ``llama_4_scaling_beta``
rule is the modeling file's own ``get_llama_4_attn_scale``, called with the arguments its
attention forward passes.

Covered: the ``model.rope`` and ``model.nope`` ops for the model types in :data:`ROTATION`
(GPT-J's sin|cos table and Qwen2-VL / Qwen3-VL MRoPE included), and ``model.alibi``,
``model.t5``, ``model.deberta``, ``model.learned``, ``model.sinusoidal`` and ``model.transformer_xl``
(XLNet) for the model types in
``engine_transformers_tables.BUILT`` (that module says which function each one calls). A layer
of another scheme (a Llama config given to ``model.alibi``) is rejected with ``ValueError``; a
model type the harness does not build is ``not_applicable`` with the reason. Computes in float32
(transformers forces float32 for cos/sin).

    posenc-ref conformance conformance/adapters/engine_transformers.py:ADAPTER --op 'model.*'
"""

from __future__ import annotations

import functools
import importlib
import inspect
import json
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

if str(Path(__file__).resolve().parent) not in sys.path:  # the tables part lives next to this file
    sys.path.insert(0, str(Path(__file__).resolve().parent))
import engine_transformers_tables as tables  # noqa: E402

ROTARY_OPS = ("model.rope", "model.nope")
OPS = ROTARY_OPS + tables.OPS
_FULL = ("whole", "cos_sin")
ROTATION = {
    # model_type -> (which channels the attention forward rotates, what the rotary module returns)
    **{t: _FULL for t in ("llama", "mistral", "mixtral", "ministral", "ministral3", "qwen2", "qwen3", "qwen3_moe",
                          "qwen2_moe", "gemma", "gemma2", "gemma3_text", "gpt_oss", "gpt_neox", "phi3", "olmo2",
                          "olmo", "cohere", "cohere2", "glm4", "glm", "smollm3", "falcon", "stablelm", "starcoder2",
                          "granite")},
    "phi": ("rotary_ndims", "cos_sin"),
    "deepseek_v3": ("suffix", "cos_sin"),
    "deepseek_v2": ("suffix", "complex_bhtd"),
    "llama4_text": ("whole", "complex_bthd"),
    "qwen2_vl_text": ("whole", "cos_sin"),
    "qwen3_vl_text": ("whole", "cos_sin"),
    "gptj": ("rotary_dim", "sincos_table"),
    "gemma4_text": ("whole", "cos_sin_each"),
}
"""Model types whose rotation the harness builds, as their attention forward does it:
``whole`` passes the whole head to the modeling file's rotation function (partial rotary handled
inside it), ``rotary_ndims`` splits at the attention module's ``rotary_ndims`` first (Phi),
``rotary_dim`` at its ``rotary_dim`` (GPT-J), ``suffix`` rotates the last ``qk_rope_head_dim``
channels (DeepSeek's ``q_pe``). ``cos_sin``: the rotary module returns (cos, sin) for
``apply_rotary_pos_emb`` (DeepSeek-V3 with ``rope_interleave``: ``apply_rotary_pos_emb_interleave``;
Qwen2-VL / Qwen3-VL: the module takes the (3, B, T) MRoPE position streams and recomposes the
sections itself); ``cos_sin_each``: the same, rotated one tensor at a time on (B, T, H, D) as
Gemma 4's ``apply_rotary_pos_emb(x, cos, sin, unsqueeze_dim=2)``; ``complex_*``: it returns complex
``freqs_cis`` for ``apply_rotary_emb``, on (B, T, H, D) (Llama 4) or (B, H, T, D) (DeepSeek-V2);
``sincos_table``: GPT-J has no rotary module, its attention gathers rows of a sin|cos table
(``create_sinusoidal_positions``) and
rotates (B, T, H, D) with ``apply_rotary_pos_emb(x, sin, cos)``."""


def _torch() -> Any:
    import torch

    return torch


@functools.lru_cache(maxsize=64)
def _built(config_json: str) -> tuple[Any, Any, Any]:
    """(text config, meta text model, modeling module) for a config given as JSON text."""
    torch = _torch()
    from transformers import AutoConfig, AutoModel

    raw = json.loads(config_json)
    raw.pop("architectures", None)
    model_type = raw.pop("model_type")
    try:
        config = AutoConfig.for_model(model_type, **raw)
    except Exception as exc:  # transformers' own validation of the config: a rejection
        raise ConfigRejected(f"transformers rejected the config: {type(exc).__name__}: {exc}") from exc
    text = config.get_text_config()
    text._attn_implementation = "eager"
    with torch.device("meta"):
        model = AutoModel.from_config(text)
    module = importlib.import_module(type(model).__module__)
    return text, model, module


class ConfigRejected(ValueError):
    """transformers refused the config (its config class validation, or a layer it does not have)."""


def _layers(model: Any) -> Any:
    for path in ("layers", "h", "model.layers", "language_model.layers"):
        node = model
        try:
            for part in path.split("."):
                node = getattr(node, part)
            return node
        except AttributeError:
            continue
    raise LookupError(f"{type(model).__name__} has no decoder layer list")


def _attention(layer: Any) -> Any:
    for name in ("self_attn", "self_attention", "attention", "attn"):
        if hasattr(layer, name):
            return getattr(layer, name)
    raise LookupError(f"{type(layer).__name__} has no attention module")


class TransformersEngine:
    """transformers 5.x building each model's own rotary and attention modules from the config."""

    name = "transformers-engine"
    dtype = "float32"

    def __init__(self) -> None:
        try:
            import transformers

            self.version = f"transformers {transformers.__version__}, torch {_torch().__version__}"
        except ImportError:
            self.version = "transformers not installed"

    def error_category(self, exc: BaseException) -> str | None:
        """A KeyError naming the missing or unknown key is the engine rejecting the config; other
        ValueError/TypeError (config validation) too; anything else (a torch broadcasting
        RuntimeError, say) is unmapped: the engine accepted the config and then broke."""
        if isinstance(exc, (KeyError, ValueError, TypeError)):
            return "invalid_argument"
        return "out_of_range" if isinstance(exc, IndexError) else None

    def supports_model(self, config: Mapping[str, Any], *, op: str = "model.rope") -> bool | str:
        if op not in OPS:
            return f"{op}: this engine harness covers {', '.join(OPS)}"
        model_type = _text_type(config)
        if op in tables.OPS:
            if model_type in ROTATION or model_type in tables.KNOWN:
                return True  # a model type of another scheme: run_model rejects the layer
            return f"transformers' {model_type!r}: the harness does not build this model type's {op} path"
        if model_type not in ROTATION:
            return f"transformers' {model_type!r}: the harness does not build this model type's rotation path"
        return True

    def run_model(self, config: dict[str, Any], layer: int, inputs: Mapping[str, Any], *, op: str,
                  context_length: int | None = None) -> dict[str, Any]:
        if op not in OPS:
            raise NotImplementedError(f"{op} is not covered by this engine harness (covers {', '.join(OPS)})")
        text, model, module = _built(json.dumps(config, sort_keys=True))
        if op in tables.OPS:
            model_type = _text_type(config)
            if model_type in ROTATION and model_type not in tables.BUILT[op]:
                raise ValueError(f"{op}: transformers' {model_type!r} layers rotate (model.rope), no {op} module")
            if not 0 <= layer < tables.layer_count(model):
                raise ConfigRejected(f"layer {layer}: the model built from the config has "
                                     f"{tables.layer_count(model)} layers")
            return tables.run(op, model, module, model_type, layer, inputs)
        return rotary_outputs(text, model, module, _text_type(config), layer, inputs, op=op)


def rotary_outputs(text: Any, model: Any, module: Any, model_type: str, layer: int, inputs: Mapping[str, Any], *,
                   op: str, scaling: Callable[[Any], float] | None = None) -> dict[str, Any]:
    """``model.rope`` / ``model.nope`` outputs of layer ``layer`` of a text model built from ``text``
    (on the meta device) with the functions of its modeling ``module``: what :meth:`TransformersEngine.run_model`
    returns, and what the vLLM harness reads from the transformers model its Transformers backend wraps.
    ``scaling`` reads the multiplier of q.k from the layer's attention module (default: the module's own,
    :func:`_scaling`; the vLLM harness passes the scale of the attention kernel vLLM puts there); the
    per-position q factors of the forward (Llama 4 NoPE temperature, Ministral 3) multiply it. GPT-J's
    layer reads its own ``scale_attn``."""
    torch = _torch()
    layers = _layers(model)
    if not 0 <= layer < len(layers):
        raise ConfigRejected(f"layer {layer}: the model built from the config has {len(layers)} layers")
    attn = _attention(layers[layer])
    positions = np.asarray(inputs["positions"])
    q = torch.tensor(np.asarray(inputs["q"]), dtype=torch.float32).transpose(0, 1)[None]  # (1, H, T, D)
    k = torch.tensor(np.asarray(inputs["k"]), dtype=torch.float32).transpose(0, 1)[None]
    position_ids = torch.tensor(positions, dtype=torch.int64)[..., None, :]  # (1, T), MRoPE (3, 1, T)
    split, returns = ROTATION.get(model_type, ("whole", "cos_sin"))
    if returns == "sincos_table":
        return _gptj(module, attn, text, layer, q, k, positions)
    scale = np.full(positions.shape[-1], (scaling or _scaling)(attn))
    if getattr(attn, "attn_temperature_tuning", False) and not getattr(attn, "use_rope", True):
        # Llama 4: the attention forward multiplies q by this on NoPE layers (modeling_llama4).
        p = torch.tensor(positions, dtype=torch.float32)
        temp = torch.log1p(torch.floor((p + 1.0) / attn.floor_scale)) * attn.attn_scale + 1.0
        scale = scale * temp.double().numpy()
    beta_rule = getattr(module, "get_llama_4_attn_scale", None)
    rope_parameters = getattr(attn.config, "rope_parameters", None) if hasattr(attn, "config") else None
    if callable(beta_rule) and isinstance(rope_parameters, Mapping) and "llama_4_scaling_beta" in rope_parameters:
        # Ministral 3: the attention forward multiplies q by the modeling file's own rule, called with
        # these arguments (the rope parameters as transformers standardised them), in q's dtype.
        factor = beta_rule(torch.tensor(positions, dtype=torch.int64)[None],
                           rope_parameters.get("llama_4_scaling_beta"),
                           rope_parameters.get("original_max_position_embeddings")).to(torch.float32)
        scale = scale * factor[0, 0, :, 0].double().numpy()
    out: dict[str, Any] = {"logit_scale": scale}
    if op == "model.nope" and getattr(attn, "use_rope", True):
        raise ValueError(f"layer {layer}: transformers rotates this layer ({type(attn).__name__}); not a NoPE layer")
    if not getattr(attn, "use_rope", True):
        return {**out, "q_rot": inputs["q"], "k_rot": inputs["k"]}
    with torch.device("cpu"):
        rotary = type(model.rotary_emb)(config=text)
    call_args: tuple[Any, ...] = (q, position_ids)
    if "layer_type" in inspect.signature(rotary.forward).parameters:
        call_args += (attn.layer_type,)
    width = q.shape[-1]
    if split == "rotary_ndims":
        start, stop = 0, attn.rotary_ndims
    elif split == "suffix":
        start, stop = width - text.qk_rope_head_dim, width
    else:
        start, stop = 0, width
    with torch.no_grad():
        embedding = rotary(*call_args)
        q_r, k_r = q[..., start:stop], k[..., start:stop]
        if returns == "cos_sin":
            cos, sin = embedding
            apply = (module.apply_rotary_pos_emb_interleave if getattr(text, "rope_interleave", False)
                     and hasattr(module, "apply_rotary_pos_emb_interleave") else module.apply_rotary_pos_emb)
            q_r, k_r = apply(q_r, k_r, cos, sin)
            pairs = _per_pair(cos[0], sin[0])
        elif returns == "cos_sin_each":
            cos, sin = embedding
            q_r, k_r = (module.apply_rotary_pos_emb(x.transpose(1, 2), cos, sin, unsqueeze_dim=2).transpose(1, 2)
                        for x in (q_r, k_r))
            pairs = _per_pair(cos[0], sin[0])
        else:
            if returns == "complex_bthd":
                q_r, k_r = module.apply_rotary_emb(q_r.transpose(1, 2), k_r.transpose(1, 2), embedding)
                q_r, k_r = q_r.transpose(1, 2), k_r.transpose(1, 2)
            else:
                q_r, k_r = module.apply_rotary_emb(q_r, k_r, embedding)
            pairs = {"cos": embedding[0].real.double().numpy(), "sin": embedding[0].imag.double().numpy()}
        q_rot = torch.cat((q[..., :start], q_r, q[..., stop:]), -1)
        k_rot = torch.cat((k[..., :start], k_r, k[..., stop:]), -1)
    return {**out, "q_rot": q_rot[0].transpose(0, 1).double().numpy(),
            "k_rot": k_rot[0].transpose(0, 1).double().numpy(), **pairs}


def _cpu_attention(cls: type, text: Any, layer: int) -> Any:
    """An attention module built for real on the CPU (GPT-J keeps its scale in a tensor, which
    the meta model holds as a meta tensor; its projections are 4 x hidden^2, built once a case)."""
    torch = _torch()
    with torch.device("cpu"):
        return cls(text, layer)


def _gptj(module: Any, attn: Any, text: Any, layer: int, q: Any, k: Any, positions: np.ndarray
          ) -> dict[str, Any]:
    """GPT-J's rotation as GPTJAttention.forward does it: gather rows of the sin|cos table, rotate
    the first ``rotary_dim`` channels of (B, T, H, D) with every-two pairs."""
    torch = _torch()
    rotary_dim = attn.rotary_dim or q.shape[-1]
    needed = int(positions.max()) + 1
    # Note: the attention's buffer holds max_position_embeddings rows; a longer table from the
    # same function has the same rows (each row depends on its position alone) and reaches 10^6.
    table = module.create_sinusoidal_positions(max(needed, attn.max_positions), attn.pos_embd_dim)
    position_ids = torch.tensor(positions, dtype=torch.int64)[None]
    with torch.no_grad():
        sincos = table[position_ids]  # (1, T, rotary_dim): what the forward's torch.gather selects
        sin, cos = torch.split(sincos, sincos.shape[-1] // 2, dim=-1)
        q_t, k_t = q.transpose(1, 2), k.transpose(1, 2)  # (1, T, H, D)
        q_r = torch.cat((module.apply_rotary_pos_emb(q_t[..., :rotary_dim], sin, cos), q_t[..., rotary_dim:]), -1)
        k_r = torch.cat((module.apply_rotary_pos_emb(k_t[..., :rotary_dim], sin, cos), k_t[..., rotary_dim:]), -1)
    real = _cpu_attention(type(attn), text, layer)
    return {"logit_scale": np.full(len(positions), 1.0 / float(real.scale_attn)),
            "q_rot": q_r[0].double().numpy(), "k_rot": k_r[0].double().numpy(),
            "cos": cos[0].double().numpy(), "sin": sin[0].double().numpy()}


def _scaling(attn: Any) -> float:
    """The multiplier the attention module applies to q.k (``scaling``; Falcon's ``inv_norm_factor``)."""
    for name in ("scaling", "inv_norm_factor", "softmax_scale"):
        value = getattr(attn, name, None)
        if isinstance(value, (int, float)):
            return float(value)
    raise LookupError(f"{type(attn).__name__} has no scaling attribute")


def _text_type(config: Mapping[str, Any]) -> str:
    text = config.get("text_config")
    if isinstance(text, Mapping) and "model_type" in text:
        return str(text["model_type"])
    model_type = str(config.get("model_type"))
    return {"gemma3": "gemma3_text", "llama4": "llama4_text", "qwen2_vl": "qwen2_vl_text"}.get(model_type, model_type)


def _per_pair(cos: Any, sin: Any) -> dict[str, Any]:
    """cos/sin as transformers lays them out -> one column per pair ``(T, P)``: ``(T, 2P)`` with
    the halves repeated or each value twice, or ``(T, P)`` already (gpt-oss)."""
    c, s = cos.double().numpy(), sin.double().numpy()
    half = c.shape[-1] // 2
    if np.array_equal(c[:, :half], c[:, half:]) and np.array_equal(s[:, :half], s[:, half:]):
        return {"cos": c[:, :half], "sin": s[:, :half]}
    if np.array_equal(c[:, 0::2], c[:, 1::2]) and np.array_equal(s[:, 0::2], s[:, 1::2]):
        return {"cos": c[:, 0::2], "sin": s[:, 0::2]}
    return {"cos": c, "sin": s}  # already one column per pair (gpt-oss)


ADAPTER = TransformersEngine()
