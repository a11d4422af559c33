"""The transformers engine harness (conformance/adapters/engine_transformers.py) against the
op-level reference functions, for configs whose reading is not in doubt.

Needs torch and transformers (the framework environment); skipped without them."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from posenc_ref.rope import rope_cos_sin  # noqa: E402
from posenc_ref.rope_scaling import rope_inv_freq  # noqa: E402

_PATH = Path(__file__).resolve().parents[1] / "conformance" / "adapters" / "engine_transformers.py"
_SPEC = importlib.util.spec_from_file_location("engine_transformers_under_test", _PATH)
assert _SPEC is not None and _SPEC.loader is not None
engine = importlib.util.module_from_spec(_SPEC)
sys.modules[_SPEC.name] = engine
_SPEC.loader.exec_module(engine)
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
    verdict = ADAPTER.supports_model(LLAMA31, op="model.alibi")
    assert isinstance(verdict, str) and "model.alibi" in verdict
    with pytest.raises(NotImplementedError, match="model.alibi"):
        ADAPTER.run_model(LLAMA31, 0, _inputs(32, 8, 128), op="model.alibi", context_length=None)
