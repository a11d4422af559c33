"""The resolver: a model config to the positional encoding of every attention layer.

Readings follow transformers 5.x (``INTERPRETATIONS["transformers-5"]``) unless another named
interpretation is asked for; docs/models.md pins the reading of every key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from posenc_ref.errors import EXACT_LIMIT, SpecError
from posenc_ref.models import _rope
from posenc_ref.models._layer_rules import (
    _attention_shape,
    _layer_types,
    _layout,
    _lookup_any,
    _rotary,
    _sliding_window,
    _softmax_multiplier,
    _temperature,
    _uses_rope,
)
from posenc_ref.models._reader import FUNC, Reader, check_upper, count, finite, load_config

INTERPRETATIONS: Final[dict[str, str]] = {
    "transformers-5": "transformers 5.x (huggingface/transformers main, modeling_rope_utils.py and each "
                      "model's modeling file, as of 2026)",
    "transformers-4": "transformers 4.x (4.57): rope_scaling + rope_theta only; a 5.x rope_parameters key is "
                      "not read",
    "vllm": "vLLM 0.33 (rotary_embedding/: DeepSeek YaRN class, LongRoPE without attention_factor, dynamic NTK "
            "built once at max_position)",
}
_MULTIMODAL: Final = ("gemma3", "llama4", "qwen2_vl", "qwen2_5_vl", "qwen3_vl", "mistral3", "gemma4")
_ROPE_MODELS: Final = ("llama", "mistral", "mixtral", "qwen2", "qwen3", "qwen2_vl", "qwen2_vl_text", "qwen3_vl_text",
                       "qwen3_vl", "gemma", "gemma2", "gemma3_text", "phi3", "phi", "gpt_neox", "gptj",
                       "deepseek_v2", "deepseek_v3", "gpt_oss", "smollm3", "olmo2", "cohere", "glm", "glm4",
                       "llama4_text", "falcon", "ministral3", "gemma4_text")
_MAX_POSITION_DEFAULT: Final = {"gemma3_text": 131072, "qwen2": 32768, "mistral": 32768, "mixtral": 32768,
                                 "gpt_oss": 131072, "llama4_text": 4096 * 32, "ministral3": 262144,
                                 "gemma4_text": 131072}
"""transformers 5.x config class defaults of max_position_embeddings (2048 for the rest)."""
_BETA_MODELS: Final = ("ministral3",)
"""Model types whose attention multiplies q by ``1 + beta * log(1 + floor(p / L0))`` (transformers 5.17
modeling_ministral3.py ``get_llama_4_attn_scale``; modeling_mistral4.py too, a model type not read here)."""
# Note: other spellings transformers 5.17 accepts for a key the resolver reads (the config class's
# attribute_map, or a legacy keyword its __post_init__ still takes: BloomConfig's and FalconConfig's
# n_embed). BigScience's own hub files spell BLOOM n_embed / num_attention_heads (bigscience/bloomz-1b7
# config.json at hub revision 56394a13c2ba681dfd14a32346d3a14f3b69fcfa), a re-saved one hidden_size /
# n_head. T5's num_hidden_layers is left out: transformers then takes num_decoder_layers from the class
# default 6, not from the layer count, so such a config stays an error here.
_BART_LIKE: Final[dict[str, tuple[str, ...]]] = {
    "d_model": ("hidden_size",), "encoder_attention_heads": ("num_attention_heads",),
    "encoder_layers": ("num_hidden_layers",)}
_GPT2_LIKE: Final[dict[str, tuple[str, ...]]] = {
    "n_embd": ("hidden_size",), "n_positions": ("max_position_embeddings",), "n_head": ("num_attention_heads",),
    "n_layer": ("num_hidden_layers",)}
_SPELLINGS: Final[dict[str, tuple[str, dict[str, tuple[str, ...]]]]] = {
    "bloom": ("BloomConfig", {"n_layer": ("num_hidden_layers",), "n_head": ("num_attention_heads",),
                              "hidden_size": ("n_embed",)}),
    "falcon": ("FalconConfig", {"hidden_size": ("n_embed",)}),
    "mpt": ("MptConfig", {"n_heads": ("num_attention_heads",), "d_model": ("hidden_size",),
                          "n_layers": ("num_hidden_layers",)}),
    "gpt2": ("GPT2Config", _GPT2_LIKE),
    "gptj": ("GPTJConfig", _GPT2_LIKE),
    "xlnet": ("XLNetConfig", {"d_model": ("hidden_size",), "n_head": ("num_attention_heads",),
                              "n_layer": ("num_hidden_layers",)}),
    "t5": ("T5Config", {"d_model": ("hidden_size",), "num_heads": ("num_attention_heads",), "d_kv": ("head_dim",)}),
    "whisper": ("WhisperConfig", {**_BART_LIKE, "encoder_attention_heads": ("num_attention_heads",
                                                                             "num_key_value_heads")}),
    "marian": ("MarianConfig", _BART_LIKE),
    "bart": ("BartConfig", _BART_LIKE),
    "m2m_100": ("M2M100Config", _BART_LIKE),
}
_LEARNED: Final = ("bert", "roberta", "opt", "bart", "gpt2", "vit", "dinov2")
_SINUSOIDAL: Final = ("whisper", "marian", "m2m_100")


@dataclass(frozen=True)
class Provenance:
    """Where every parameter came from."""

    interpretation: str
    interpretation_version: str
    read: Mapping[str, Any]
    defaulted: Mapping[str, Any]
    ignored: tuple[str, ...]
    notes: tuple[str, ...]


@dataclass(frozen=True)
class LayerPositions:
    """The positional encoding of one attention layer (docs/models.md, "The resolver")."""

    index: int
    stack: str
    kind: str
    scheme: str
    params: Mapping[str, Any]
    num_heads: int
    num_kv_heads: int
    head_dim: int
    window: int | None = None
    chunk_size: int | None = None
    logit_scale: float = 1.0
    temperature: Mapping[str, Any] | None = None
    bias_scale: float = 1.0
    """What the layer multiplies its positional bias by before adding it to ``logit_scale * q.k``
    (Falcon's ALiBi: ``head_dim ** -0.5``, the bias added before the scale; else 1)."""

    def signature(self) -> tuple[Any, ...]:
        """Everything but the index: equal signatures are equal layers."""
        return (self.stack, self.kind, self.scheme, repr(sorted(self.params.items())), self.num_heads,
                self.num_kv_heads, self.head_dim, self.window, self.chunk_size, self.logit_scale,
                repr(sorted((self.temperature or {}).items())), self.bias_scale)


@dataclass(frozen=True)
class ModelPositions:
    """Every attention layer's positions, and the provenance of the reading."""

    model_type: str
    max_position: int | None
    layers: tuple[LayerPositions, ...]
    provenance: Provenance = field(repr=False)

    @property
    def num_layers(self) -> int:
        return len(self.layers)

    def kinds(self) -> tuple[LayerPositions, ...]:
        """The first layer of every distinct kind of layer, in layer order."""
        seen: dict[tuple[Any, ...], LayerPositions] = {}
        for layer in self.layers:
            seen.setdefault(layer.signature(), layer)
        return tuple(seen.values())


def resolve(config: Any, *, interpretation: str = "transformers-5", context_length: int | None = None
            ) -> ModelPositions:
    """Resolve a model config (a mapping, or the path of a ``config.json``) to its per-layer positions.

    Parameters
    ----------
    config
        The config as transformers writes it (4.x ``rope_scaling`` or 5.x ``rope_parameters``).
    interpretation
        A key of ``INTERPRETATIONS``.
    context_length
        ``L`` for dynamic NTK and LongRoPE layers (stored in their params); None leaves it open.

    Returns
    -------
    ModelPositions

    Raises
    ------
    SpecError
        A config that does not say what the model needs, or says it wrongly (the key and the value
        are named); a file that is not JSON or not a JSON object.
    TypeError
        ``config`` neither a mapping nor a path.

    Examples
    --------
    >>> m = resolve({"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4,
    ...              "num_hidden_layers": 2, "rope_theta": 10000.0})
    >>> [(layer.scheme, layer.params["rotary_dim"]) for layer in m.layers]
    [('rope', 16), ('rope', 16)]
    """
    whole = load_config(config)
    if interpretation not in INTERPRETATIONS:
        raise SpecError(f"{FUNC}: unknown interpretation {interpretation!r}; known: {', '.join(INTERPRETATIONS)}")
    if context_length is not None and (isinstance(context_length, bool) or not isinstance(context_length, int)
                                       or context_length < 1):
        raise SpecError(f"{FUNC}: context_length must be an integer >= 1, got {context_length!r}")
    if context_length is not None and context_length >= EXACT_LIMIT:
        raise SpecError(f"{FUNC}: context_length must be below 2**53, got {context_length!r}")
    root = Reader(whole)
    model_type = root.get("model_type")
    if not isinstance(model_type, str):
        raise SpecError(f"{FUNC}: the config needs model_type (a string), got {model_type!r}")
    r = root
    if model_type in _MULTIMODAL and root.has("text_config"):
        r = root.child("text_config")
        inner = r.get("model_type")
        model_type = inner if isinstance(inner, str) else model_type
    if model_type in _SPELLINGS:
        owner, spellings = _SPELLINGS[model_type]
        r.spell(spellings, owner)
    if model_type in _ROPE_MODELS and not (model_type == "falcon" and r.get("alibi", False)):
        layers, max_position = _rope_layers(r, model_type, interpretation, context_length)
    elif model_type in ("bloom", "mpt", "falcon"):
        layers, max_position = _alibi_layers(r, model_type)
    elif model_type == "t5":
        layers, max_position = _t5_layers(r)
    elif model_type == "deberta-v2":
        layers, max_position = _deberta_layers(r)
    elif model_type == "xlnet":
        from posenc_ref.models._relative import xlnet_layers
        layers, max_position = xlnet_layers(r)
    elif model_type in _LEARNED or model_type in _SINUSOIDAL:
        from posenc_ref.models._absolute import absolute_layers
        layers, max_position = absolute_layers(r, model_type)
    else:
        known = sorted(set(_ROPE_MODELS + _LEARNED + _SINUSOIDAL + ("bloom", "mpt", "t5", "deberta-v2", "xlnet")))
        raise SpecError(f"{FUNC}: model_type {model_type!r} is not one posenc-ref reads; known: {', '.join(known)}")
    provenance = Provenance(interpretation, INTERPRETATIONS[interpretation], dict(root.read), dict(root.defaulted),
                            root.ignored(whole), tuple(root.notes))
    return ModelPositions(model_type, max_position, tuple(layers), provenance)


def _rope_layers(r: Reader, model_type: str, interpretation: str, context_length: int | None
                 ) -> tuple[list[LayerPositions], int | None]:
    n = r.integer("num_hidden_layers" if model_type != "gptj" else "n_layer")
    if model_type == "gptj":
        heads, kv, head_dim = _attention_shape(r, model_type, heads_key="n_head", hidden_key="n_embd", kv_key="")
        max_position = r.integer("n_positions", 2048)
    else:
        heads, kv, head_dim = _attention_shape(r, model_type, kv_key="num_kv_heads" if model_type == "falcon" else
                                               "num_key_value_heads")
        if model_type == "falcon" and r.get("multi_query", True) and not r.get("new_decoder_architecture", False):
            kv = 1  # Note: Falcon-7B multi_query: one key head
        max_position = r.integer("max_position_embeddings", _MAX_POSITION_DEFAULT.get(model_type, 2048))
    if model_type in ("deepseek_v2", "deepseek_v3"):
        head_dim = r.integer("qk_nope_head_dim") + r.integer("qk_rope_head_dim")
    uses_rope = _uses_rope(r, model_type, n)
    window = _sliding_window(r, model_type)
    types = _layer_types(r, model_type, n, window, uses_rope)
    if interpretation == "vllm" and model_type in ("qwen2", "qwen3") and len(set(types)) > 1:
        r.note("vLLM does not load this config: its Qwen2/Qwen3 model asserts max_window_layers == "
               "num_hidden_layers when layer_types mix sliding and full attention (model_executor/models/qwen2.py)")
    if window is None and "sliding_attention" in types:
        r.note("layer_types lists sliding_attention layers but the config gives them no window: they attend to "
               "every earlier key")
    theta_key = "rotary_emb_base" if model_type == "gpt_neox" and not r.has("rope_theta") else "rope_theta"
    default_theta = {"gemma3_text": 1e6, "mixtral": 1e6, "qwen2_vl_text": 1e6, "cohere": 10000.0,
                     "gpt_oss": 150000.0, "llama4_text": 500000.0}.get(model_type, 10000.0)
    local = r.number("rope_local_base_freq", 10000.0) if model_type == "gemma3_text" else None
    wide = _gemma4_full_layers(r) if model_type == "gemma4_text" else None
    chunk = r.integer("attention_chunk_size") if model_type == "llama4_text" and r.has(
        "attention_chunk_size") else None
    scalar = r.number("query_pre_attn_scalar", 256.0) if model_type in ("gemma2", "gemma3_text") else None
    layers = []
    for i, (layer_type, rotated) in enumerate(zip(types, uses_rope)):
        kind = layer_type
        if model_type == "llama4_text":
            kind = "chunked_attention" if rotated else "full_attention"
        layer_window = window if kind == "sliding_attention" else None
        base_scale = (scalar if scalar is not None else float(head_dim)) ** -0.5
        layer_heads, layer_kv, layer_dim = heads, kv, head_dim
        if wide is not None:  # Note: Gemma 4: scaling 1.0 (q and k are RMS-normed before the rotation)
            base_scale = 1.0
            if layer_type == "full_attention":
                layer_dim, layer_kv = wide[0], wide[1] if wide[1] is not None else kv
        temperature = _temperature(r, model_type, rotated)
        if not rotated:
            layers.append(LayerPositions(i, "decoder", kind, "nope", {},
                                         heads, kv, head_dim, layer_window, None, base_scale, temperature))
            continue
        source = _rope.rope_source(r, layer_type, theta_key=theta_key, default_theta=default_theta,
                                   local_theta=local, interpretation=interpretation,
                                   class_default=_rope.CLASS_ROPE_PARAMETERS.get(model_type))
        kind_rope = _rope.rope_type(source, r)
        rotary_dim, partial, freq_dim = _rotary(r, model_type, layer_dim, source)
        if kind_rope == "proportional":
            partial, freq_dim = "proportional", layer_dim
        params = _rope.frequency_params(source, r, kind=kind_rope, dim=freq_dim, max_position=max_position,
                                        interpretation=interpretation)
        params.update(dim=freq_dim, rotary_dim=rotary_dim, partial=partial, layout=_layout(r, model_type))
        if kind_rope in ("dynamic", "longrope") and context_length is not None:
            params["context_length"] = context_length
        scheme = "rope"
        section = _lookup_any(source, "mrope_section")
        if section is not None:
            layout = "interleaved" if (_lookup_any(source, "mrope_interleaved")
                                       or model_type in ("qwen3_vl_text", "qwen3_vl")) else "chunked"
            params.update(mrope_section=_mrope_section(section, layout, freq_dim // 2), mrope_layout=layout)
            scheme = "mrope"
        scale = base_scale * _softmax_multiplier(params, model_type)
        # Note: only Ministral 3 (and Mistral 4) multiply q by the beta rule; elsewhere the key is ignored
        beta = _lookup_any(source, "llama_4_scaling_beta") if model_type in _BETA_MODELS else None
        if beta is not None:
            original = _lookup_any(source, "original_max_position_embeddings") or max_position
            temperature = {"rule": "llama4_beta", "beta": finite("llama_4_scaling_beta", beta),
                           "original_max_position": count("original_max_position_embeddings", original)}
        layers.append(LayerPositions(i, "decoder", kind, scheme, params, layer_heads, layer_kv, layer_dim, layer_window,
                                     chunk if kind == "chunked_attention" else None, scale, temperature))
    return layers, max_position


def _mrope_section(section: Any, layout: str, pairs: int) -> list[int]:
    """``mrope_section`` as three pair counts (T, H, W). The chunked layout splits the ``pairs`` rotated
    pairs into the three runs, so they must add up to it (transformers' split of cos/sin); the interleaved
    layout (Qwen3-VL) takes H and W from every third pair up to three times their counts, the rest T."""
    if (not isinstance(section, list) or len(section) != 3
            or any(isinstance(n, bool) or not isinstance(n, int) or n < 0 for n in section)):
        raise SpecError(f"{FUNC}: mrope_section must be a list of 3 integers >= 0 (pairs of the T, H and W "
                        f"streams), got {section!r}")
    if layout == "chunked" and sum(section) != pairs:
        raise SpecError(f"{FUNC}: mrope_section={section!r} must add up to the rotary width / 2 = {pairs} "
                        "(the chunked layout splits the pairs into the three streams)")
    return list(section)


def _gemma4_full_layers(r: Reader) -> tuple[int, int | None]:
    """(head width, key heads or None) of Gemma 4's full-attention layers (transformers 5.17
    Gemma4TextConfig: ``global_head_dim``, default 512; ``num_global_key_value_heads`` only where
    ``attention_k_eq_v`` is true, else the layers keep ``num_key_value_heads``)."""
    width = r.integer("global_head_dim", 512)
    k_eq_v = r.get("attention_k_eq_v", False)
    heads = r.get("num_global_key_value_heads") if k_eq_v else None
    if heads is not None and (isinstance(heads, bool) or not isinstance(heads, int) or heads < 1
                              or r.integer("num_attention_heads") % heads):
        raise SpecError(f"{FUNC}: {r.prefix}num_global_key_value_heads must be an integer >= 1 dividing "
                        f"num_attention_heads, got {heads!r}")
    if r.get("use_bidirectional_attention") == "all":
        r.note("use_bidirectional_attention='all': transformers makes every layer bidirectional and halves the "
               "sliding window; the layers here are read as the causal model")
    return width, heads


def _alibi_layers(r: Reader, model_type: str) -> tuple[list[LayerPositions], int | None]:
    if model_type == "mpt":
        n, heads, hidden = r.integer("n_layers"), r.integer("n_heads"), r.integer("d_model")
        attn = r.child("attn_config") if r.has("attn_config") else None
        if attn is None or not attn.get("alibi", False):
            raise SpecError(f"{FUNC}: an MPT config without attn_config.alibi=true has no position rule here")
        bias_max = attn.number("alibi_bias_max", 8.0)
        params = {"num_heads": heads, "slope_rule": "press", "bias_max": bias_max, "form": "relative_causal"}
        max_position = r.integer("max_seq_len", 2048)
        own = "mpt"
    else:
        n = r.integer("n_layer" if model_type == "bloom" else "num_hidden_layers")
        heads = r.integer("n_head" if model_type == "bloom" else "num_attention_heads")
        hidden = r.integer("hidden_size")
        params = {"num_heads": heads, "slope_rule": "press", "bias_max": 8.0, "form": "relative_causal"}
        max_position = None
        own = "key_only"
    kv = heads
    if model_type == "falcon":  # Note: FalconConfig defaults: multi_query true (one key head)
        if r.get("new_decoder_architecture", False):
            kv = r.integer("num_kv_heads", heads)
        elif r.get("multi_query", True):
            kv = 1
        if heads % kv:
            raise SpecError(f"{FUNC}: num_attention_heads={heads} must be a multiple of num_kv_heads={kv}")
    if hidden % heads:
        raise SpecError(f"{FUNC}: hidden size {hidden} is not a multiple of the {heads} heads")
    if heads & (heads - 1) and model_type == "mpt":
        r.note("MPT's slopes for a head count that is not a power of two differ from Press's rule")
    r.note(f"ALiBi bias reported in the relative_causal form; the model adds the {own} form "
           "(a per-row constant apart)")
    scale = float(hidden // heads) ** -0.5
    if model_type == "falcon":
        # Note: Falcon adds the bias to q.k before the 1/sqrt(head_dim) scale (BLOOM and MPT after it)
        r.note("Falcon adds the ALiBi bias to q.k before the head_dim ** -0.5 scale (transformers 5.x "
               "modeling_falcon.py folds alibi / sqrt(head_dim) into the mask): its logits are "
               "logit_scale * (q.k + bias), so the bias it adds to the scaled logits is bias_scale = "
               "head_dim ** -0.5 times the slope rule's")
    return [LayerPositions(i, "decoder", "decoder", "alibi", params, heads, kv, hidden // heads, logit_scale=scale,
                           bias_scale=scale if model_type == "falcon" else 1.0) for i in range(n)], max_position


def _t5_layers(r: Reader) -> tuple[list[LayerPositions], int | None]:
    heads, d_kv = r.integer("num_heads"), r.integer("d_kv")
    n_enc = r.integer("num_layers")
    n_dec = r.integer("num_decoder_layers", n_enc)
    base = {"num_buckets": r.integer("relative_attention_num_buckets", 32),
            "max_distance": r.integer("relative_attention_max_distance", 128)}
    layers = [LayerPositions(i, "encoder", "encoder", "t5", {**base, "direction": "bidirectional"}, heads, heads,
                             d_kv) for i in range(n_enc)]
    layers += [LayerPositions(n_enc + i, "decoder", "decoder", "t5", {**base, "direction": "unidirectional"}, heads,
                              heads, d_kv) for i in range(n_dec)]
    r.note("T5 attention has no 1/sqrt(d) scale (logit_scale 1); only the first layer of each stack holds the "
           "bias table, the others reuse it")
    return layers, None


def _deberta_layers(r: Reader) -> tuple[list[LayerPositions], int | None]:
    n, heads, hidden = r.integer("num_hidden_layers"), r.integer("num_attention_heads"), r.integer("hidden_size")
    if hidden % heads:
        raise SpecError(f"{FUNC}: hidden_size={hidden} is not a multiple of num_attention_heads={heads}")
    max_position = r.integer("max_position_embeddings", 512)
    if not r.get("relative_attention", False):
        raise SpecError(f"{FUNC}: a DeBERTa-v2 config with relative_attention false has no relative rule here")
    limit = r.get("max_relative_positions", -1)
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise SpecError(f"{FUNC}: max_relative_positions must be an integer, got {limit!r}")
    if limit < 1:
        r.note(f"max_relative_positions={limit!r} < 1: transformers uses max_position_embeddings={max_position}")
        limit = max_position
    check_upper("max_relative_positions", limit)
    buckets = r.get("position_buckets", -1)
    if isinstance(buckets, bool) or not isinstance(buckets, int) or buckets <= 0:
        raise SpecError(f"{FUNC}: position_buckets must be an integer > 0 (DeBERTa v3 log buckets), got {buckets!r}")
    check_upper("position_buckets", buckets)
    kinds = r.get("pos_att_type", ["c2p", "p2c"])
    if isinstance(kinds, str):
        kinds = kinds.split("|")
    if not isinstance(kinds, list) or not all(isinstance(k, str) for k in kinds):
        raise SpecError(f"{FUNC}: pos_att_type must be a list of strings or a '|'-joined string, got {kinds!r}")
    pos_att = "|".join(k for k in ("c2p", "p2c") if k in kinds)
    params = {"position_buckets": buckets, "max_relative_positions": limit, "pos_att_type": pos_att}
    scale = float(hidden // heads * (1 + len(pos_att.split("|")))) ** -0.5
    return [LayerPositions(i, "encoder", "encoder", "deberta", params, heads, heads, hidden // heads,
                           logit_scale=scale) for i in range(n)], max_position
