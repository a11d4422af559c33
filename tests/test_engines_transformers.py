"""The transformers engine harness (conformance/adapters/engine_transformers.py) against the
op-level reference functions, for configs whose reading is not in doubt.

Needs torch and transformers (the framework environment); skipped without them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from _loading import load_file
from _windowed import windowed_names

pytest.importorskip("torch")
pytest.importorskip("transformers")

from posenc_ref.models._layer_rules import _SHAPE_DEFAULTS  # noqa: E402
from posenc_ref.rope import rope_cos_sin  # noqa: E402
from posenc_ref.rope_scaling import rope_inv_freq  # noqa: E402

_PATH = Path(__file__).resolve().parents[1] / "conformance" / "adapters" / "engine_transformers.py"
engine = load_file(_PATH, "engine_transformers_under_test")
ADAPTER = engine.ADAPTER

# Llama 3.1 8B config.json (meta-llama/Llama-3.1-8B, position-relevant fields).
LLAMA31 = {"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,
           "num_hidden_layers": 32, "max_position_embeddings": 131072, "rope_theta": 500000.0,
           "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                            "original_max_position_embeddings": 8192, "rope_type": "llama3"}}
# Gemma 3 27B text config (google/gemma-3-27b-it): six-layer pattern, five sliding then one full.
GEMMA3 = {"model_type": "gemma3_text", "hidden_size": 5376, "num_attention_heads": 32, "num_key_value_heads": 16,
          "head_dim": 128, "num_hidden_layers": 62, "query_pre_attn_scalar": 168, "rope_theta": 1000000.0,
          "rope_local_base_freq": 10000.0, "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
          "sliding_window": 1024, "sliding_window_pattern": 6, "max_position_embeddings": 131072}
# GPT-NeoX 20B (EleutherAI/gpt-neox-20b): a quarter of each 96-wide head rotated.
NEOX = {"model_type": "gpt_neox", "hidden_size": 6144, "num_attention_heads": 64, "num_hidden_layers": 44,
        "rotary_pct": 0.25, "rotary_emb_base": 10000, "max_position_embeddings": 2048}

POSITIONS = np.array([0, 1, 7, 31, 63])


def _inputs(heads: int, kv_heads: int, head_dim: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(1)
    t = len(POSITIONS)
    return {"positions": POSITIONS, "q": rng.standard_normal((t, heads, head_dim)),
            "k": rng.standard_normal((t, kv_heads, head_dim))}


def _rotate_half_layout(x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    """The half-layout rotation of the first 2*P channels of x (T, H, D) by per-pair cos/sin (T, P)."""
    p = cos.shape[-1]
    a, b = x[..., :p], x[..., p:2 * p]
    c, s = cos[:, None, :], sin[:, None, :]
    return np.concatenate([a * c - b * s, b * c + a * s, x[..., 2 * p:]], axis=-1)


def _check(out: dict[str, np.ndarray], inputs: dict[str, np.ndarray], inv_freq: np.ndarray, scale: float) -> None:
    cos, sin = rope_cos_sin(POSITIONS, inv_freq, width="half")
    phase = 1e-6 * (1 + POSITIONS.max())  # float32 angles: an error of ~eps32 * (1 + p * w) per phase
    np.testing.assert_allclose(out["cos"], cos, atol=phase)
    np.testing.assert_allclose(out["sin"], sin, atol=phase)
    np.testing.assert_allclose(out["q_rot"], _rotate_half_layout(inputs["q"], cos, sin), atol=8 * phase)
    np.testing.assert_allclose(out["k_rot"], _rotate_half_layout(inputs["k"], cos, sin), atol=8 * phase)
    np.testing.assert_allclose(out["logit_scale"], np.full(len(POSITIONS), scale), rtol=1e-15)


def test_llama31_reads_llama3_scaling_from_rope_scaling() -> None:
    inputs = _inputs(32, 8, 128)
    out = ADAPTER.run_model(LLAMA31, 3, inputs, op="model.rope", context_length=64)
    inv_freq, _, _ = rope_inv_freq(dim=128, base=500000.0, rope_type="llama3", factor=8.0, original_max_position=8192,
                                   low_freq_factor=1.0, high_freq_factor=4.0)
    _check(out, inputs, inv_freq, 128 ** -0.5)


@pytest.mark.parametrize(("layer", "base", "factor"), [(0, 10000.0, None), (4, 10000.0, None), (5, 1e6, 8.0)])
def test_gemma3_sliding_layers_use_the_local_base_unscaled(layer: int, base: float, factor: float | None) -> None:
    inputs = _inputs(32, 16, 128)
    out = ADAPTER.run_model(GEMMA3, layer, inputs, op="model.rope", context_length=64)
    inv_freq, _, _ = (rope_inv_freq(dim=128, base=base) if factor is None else
                      rope_inv_freq(dim=128, base=base, rope_type="linear", factor=factor))
    _check(out, inputs, inv_freq, 168 ** -0.5)


def test_neox_rotates_a_quarter_and_passes_the_rest_through() -> None:
    inputs = _inputs(64, 64, 96)
    out = ADAPTER.run_model(NEOX, 0, inputs, op="model.rope", context_length=64)
    assert out["cos"].shape == (len(POSITIONS), 12)
    np.testing.assert_array_equal(out["q_rot"][..., 24:], inputs["q"][..., 24:].astype(np.float32))
    inv_freq, _, _ = rope_inv_freq(dim=24, base=10000.0)
    _check(out, inputs, inv_freq, 96 ** -0.5)


def test_cases_outside_the_harness_are_not_applicable_with_a_reason() -> None:
    assert ADAPTER.supports_model(LLAMA31) is True
    reason = ADAPTER.supports_model({"model_type": "t5"})
    assert isinstance(reason, str) and "t5" in reason
    reason = ADAPTER.supports_model({"model_type": "reformer"}, op="model.alibi")
    assert isinstance(reason, str) and "model.alibi" in reason and "reformer" in reason


def test_xlnet_rows_come_from_the_models_own_relative_encoding() -> None:
    from posenc_ref.models.compute import model_transformer_xl
    config = {"model_type": "xlnet", "d_model": 16, "n_head": 2, "n_layer": 2, "attn_type": "bi", "clamp_len": 6}
    distances = np.array([-9, -6, -1, 0, 3, 7, 40])
    out = ADAPTER.run_model(config, 1, {"distances": distances}, op="model.transformer_xl", context_length=None)
    expected = model_transformer_xl(distances, config=config, layer=1)  # clamped to [-6, 6]
    np.testing.assert_allclose(out["embedding"], expected, rtol=0, atol=2e-6)
    with pytest.raises(IndexError, match="builds rows"):
        ADAPTER.run_model({**config, "attn_type": "uni"}, 0, {"distances": np.array([-1, 0])},
                          op="model.transformer_xl", context_length=None)


def test_a_layer_of_another_scheme_is_rejected() -> None:
    assert ADAPTER.supports_model(LLAMA31, op="model.alibi") is True
    with pytest.raises(ValueError, match="rotate"):
        ADAPTER.run_model(LLAMA31, 0, {"query_positions": np.array([0]), "key_positions": np.array([0])},
                          op="model.alibi", context_length=None)


# --- the bias and table layers, against the op-level reference functions -----------------------

# bigscience/bloom-560m config.json: 16 heads (a power of two: slopes 2^-0.5 ... 2^-8).
BLOOM = {"model_type": "bloom", "hidden_size": 1024, "n_head": 16, "n_layer": 24}
# google-t5/t5-base config.json: 12 heads, 32 buckets, max distance 128 (the T5Config defaults).
T5 = {"model_type": "t5", "d_model": 768, "d_kv": 64, "num_heads": 12, "num_layers": 12,
      "relative_attention_num_buckets": 32, "relative_attention_max_distance": 128}
# facebook/opt-125m config.json: 2048 positions, table of 2050 rows (offset 2).
OPT = {"model_type": "opt", "hidden_size": 768, "num_attention_heads": 12, "num_hidden_layers": 12,
       "max_position_embeddings": 2048}
# Helsinki-NLP/opus-mt-en-de config.json: d_model 512, 512 positions.
MARIAN = {"model_type": "marian", "d_model": 512, "encoder_layers": 6, "decoder_layers": 6,
          "encoder_attention_heads": 8, "decoder_attention_heads": 8, "max_position_embeddings": 512}
# EleutherAI/gpt-j-6b config.json: 16 heads of 256, the first 64 channels rotated in pairs (2i, 2i + 1).
GPTJ = {"model_type": "gptj", "n_embd": 4096, "n_head": 16, "n_layer": 28, "rotary_dim": 64, "n_positions": 2048}


def test_bloom_alibi_is_the_relative_bias_of_press_slopes() -> None:
    from posenc_ref.alibi import alibi_bias

    q, k = np.array([0, 3, 9]), np.array([0, 1, 3, 9])
    out = ADAPTER.run_model(BLOOM, 5, {"query_positions": q, "key_positions": k}, op="model.alibi")
    np.testing.assert_allclose(out["bias"], alibi_bias(q, k, num_heads=16), atol=1e-5)


@pytest.mark.parametrize(("layer", "direction"), [(0, "bidirectional"), (11, "bidirectional"), (12, "unidirectional"),
                                                  (23, "unidirectional")])
def test_t5_encoder_is_bidirectional_and_decoder_causal(layer: int, direction: str) -> None:
    from posenc_ref.t5 import t5_bucket

    q, k = np.array([0, 5, 200]), np.array([0, 1, 8, 130, 400])
    table = np.random.default_rng(2).standard_normal((32, 12))
    out = ADAPTER.run_model(T5, layer, {"query_positions": q, "key_positions": k, "table": table}, op="model.t5")
    expected = t5_bucket(k[None, :] - q[:, None], num_buckets=32, max_distance=128, direction=direction)
    np.testing.assert_array_equal(out["bucket"], expected)
    np.testing.assert_allclose(out["bias"], table[expected].transpose(2, 0, 1), atol=1e-6)


def test_opt_reads_row_position_plus_two_and_rejects_past_the_table() -> None:
    out = ADAPTER.run_model(OPT, 0, {"positions": np.array([0, 1, 2047])}, op="model.learned")
    assert out["index"].tolist() == [2, 3, 2049]
    with pytest.raises(IndexError):
        ADAPTER.run_model(OPT, 0, {"positions": np.array([0, 2048])}, op="model.learned")


def test_marian_table_is_the_concatenated_paper_sinusoid() -> None:
    from posenc_ref.sinusoidal import sinusoidal_table

    positions = np.array([0, 1, 511])
    out = ADAPTER.run_model(MARIAN, 7, {"positions": positions}, op="model.sinusoidal")
    expected = sinusoidal_table(positions, dim=512, ladder="paper", layout="concat_sin_cos")
    np.testing.assert_allclose(out["embedding"], expected, atol=1e-6 * 512)


def test_gptj_rotates_the_first_rotary_dim_channels_in_interleaved_pairs() -> None:
    from posenc_ref.rope import rope_apply

    inputs = _inputs(2, 1, 256)
    out = ADAPTER.run_model(GPTJ, 0, inputs, op="model.rope", context_length=64)
    q = inputs["q"].transpose(1, 0, 2)[None]  # (1, H, T, D)
    expected = rope_apply(q, POSITIONS, rotary_dim=64, layout="interleaved")[0].transpose(1, 0, 2)
    np.testing.assert_allclose(out["q_rot"], expected, atol=8e-6 * (1 + POSITIONS.max()))
    np.testing.assert_allclose(out["logit_scale"], np.full(len(POSITIONS), 256 ** -0.5), rtol=1e-7)


_SMALL = {"hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2,
          "num_hidden_layers": 4, "vocab_size": 128}


@pytest.mark.parametrize("config", [
    {"model_type": "qwen3", "use_sliding_window": True, "max_window_layers": 2},  # the class's 4096
    {"model_type": "qwen3", "use_sliding_window": True, "sliding_window": 64, "num_hidden_layers": 30},  # from 28
    {"model_type": "qwen3", "use_sliding_window": False, "layer_types": ["sliding_attention"] * 4},
    {"model_type": "qwen2", "use_sliding_window": False, "sliding_window": 131072, "max_window_layers": 1},
    {"model_type": "qwen2", "use_sliding_window": True, "sliding_window": 32, "max_window_layers": 0},
    {"model_type": "mistral"},  # the class's 4096 on every layer
    {"model_type": "mistral", "sliding_window": None},
    {"model_type": "mixtral", "num_local_experts": 2},
    {"model_type": "phi3", "sliding_window": 48, "pad_token_id": 0},
    {"model_type": "gemma2", "head_dim": 16},
    {"model_type": "smollm3", "use_sliding_window": True, "sliding_window": 32, "no_rope_layer_interval": 2,
     "pad_token_id": 0},
    {"model_type": "smollm3", "sliding_window": 32, "no_rope_layer_interval": 2,
     "pad_token_id": 0},
], ids=lambda c: "-".join(f"{k}={v}" for k, v in c.items() if k != "layer_types"))
def test_sliding_windows_per_layer_are_the_ones_transformers_builds(config: dict) -> None:
    """The window of every layer as transformers 5 builds the model (the attention module's own
    ``sliding_window`` where it keeps one; else ``config.sliding_window`` on every layer, as the
    Mistral, Mixtral and Phi-3 modeling files pass it) against the resolver's reading."""
    import torch
    import transformers

    from posenc_ref.models import resolve

    config = {**_SMALL, **config}
    hf_config = transformers.AutoConfig.for_model(**config)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(hf_config)
    built = []
    for layer in model.model.layers:
        attention = layer.self_attn
        built.append(attention.sliding_window if hasattr(attention, "sliding_window") else hf_config.sliding_window)
    resolved = resolve(config).layers
    assert [layer.window for layer in resolved] == built
    if getattr(hf_config, "layer_types", None) is not None:
        assert [layer.kind for layer in resolved] == list(hf_config.layer_types)


@pytest.mark.parametrize("name", windowed_names())
def test_catalogue_sliding_windows_are_the_ones_transformers_builds(name: str) -> None:
    """Every catalogued model with sliding layers, built by the harness from its config as the
    catalogue has it: each layer's window against the resolver's."""
    import json

    from posenc_ref.models import resolve
    from posenc_ref.models.catalogue import CATALOGUE

    config = CATALOGUE[name].config
    try:
        text, model, _ = engine._built(json.dumps(config))
    except engine.ConfigRejected as exc:  # a recorded finding (docs/findings.md), not this test's subject
        pytest.skip(str(exc)[:200])
    attentions = [engine._attention(layer) for layer in engine._layers(model)]
    built = [a.sliding_window if hasattr(a, "sliding_window") else text.sliding_window for a in attentions]
    assert [layer.window for layer in resolve(config).layers] == built


@pytest.mark.parametrize("model_type", sorted(_SHAPE_DEFAULTS))
def test_attention_shape_defaults_are_the_config_class_defaults(model_type: str) -> None:
    # posenc_ref.models._layer_rules._SHAPE_DEFAULTS against the class itself: built with no keys, and
    # with 16 query heads only, to tell "the key heads are the query heads" from a fixed count
    from transformers import CONFIG_MAPPING

    heads, kv, head_dim = _SHAPE_DEFAULTS[model_type]
    owner = CONFIG_MAPPING["qwen2_vl_text" if model_type == "qwen2_vl" else model_type]  # a flat Qwen2-VL file
    bare = owner()
    assert bare.num_attention_heads == heads
    sixteen = owner(num_attention_heads=16)
    own_kv = getattr(sixteen, "num_kv_heads" if model_type == "falcon" else "num_key_value_heads", None)
    assert (own_kv or 16) == (16 if kv is None else kv)
    if head_dim is not None:
        assert bare.head_dim == head_dim
    elif not model_type.startswith("deepseek"):  # DeepSeek's width is qk_nope_head_dim + qk_rope_head_dim
        assert getattr(bare, "head_dim", None) in (None, bare.hidden_size // heads)
