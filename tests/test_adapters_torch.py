"""PyTorch adapters (conformance/adapters/torch_adapter.py) through the runner; skipped without torch."""

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import torch  # noqa: E402

from posenc_ref.learned import learned_lookup  # noqa: E402
from posenc_ref.runner.adapters import load_adapter  # noqa: E402
from posenc_ref.runner.engine import run_conformance  # noqa: E402
from posenc_ref.runner.expectations import load_expectations  # noqa: E402
from posenc_ref.sinusoidal import sinusoidal_table  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
FILE = ROOT / "conformance" / "adapters" / "torch_adapter.py"
EXPECTATIONS = load_expectations(str(ROOT / "conformance" / "adapters" / "torch_library.toml"))
EXPECTATIONS_DISTILBERT = load_expectations(str(ROOT / "conformance" / "adapters" / "distilbert.toml"))

LIBRARY = [("DISTILBERT", "float32"), ("MARIAN", "float32"), ("M2M100", "float32"), ("WHISPER", "float64"),
           ("WHISPER", "float32"), ("VITMAE_2D", "float64"), ("VITMAE_2D", "float32"), ("EMBEDDING", "float64"),
           ("EMBEDDING", "bfloat16")]


def _adapter(name, dtype):
    adapter = load_adapter(f"{FILE}:{name}")
    return adapter if adapter.dtype == dtype else adapter.at_dtype(dtype)


@pytest.mark.parametrize(("name", "dtype"), LIBRARY)
def test_library_adapters_pass_with_their_expectations(name, dtype):
    expectations = EXPECTATIONS_DISTILBERT if name == "DISTILBERT" else EXPECTATIONS
    run = run_conformance(_adapter(name, dtype), spec=name, expectations=expectations)
    assert run.passed, [(r.case_id, r.status, r.message) for r in run.results if r.status not in
                        ("pass", "not_applicable", "xfail", "skip")]
    assert run.executed >= 5


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16"])
def test_torch_port_passes_every_case_of_its_ops(dtype):
    adapter = _adapter("TORCH", dtype)
    run = run_conformance(adapter, spec="torch")
    assert run.passed
    assert not [r.case_id for r in run.results if r.op in adapter.capabilities and r.status == "not_applicable"]


# New-op library adapters: (name, dtype, ops it must execute)
NEW_LIBRARY = [("ROPE_INIT", "float32", {"rope.inv_freq"}), ("LONGROPE", "float32", {"rope.longrope_inv_freq"}),
               ("LLAMA_ROPE", "float32", {"rope.apply", "rope.cos_sin"}), ("GPTJ_ROPE", "float32", {"rope.apply"}),
               ("QWEN2VL_MROPE", "float32", {"rope.mrope_cos_sin"}),
               ("T5_BUCKET", "float32", {"t5.bucket"}), ("T5_BIAS", "float64", {"t5.bias"}),
               ("T5_BIAS", "float32", {"t5.bias"}), ("DEBERTA_BUCKET", "float32", {"deberta.bucket"}),
               ("BLOOM_ALIBI", "float32", {"alibi.slopes", "alibi.bias", "alibi.mask_positions"}),
               ("MPT_ALIBI", "float32", {"alibi.slopes"}), ("SDPA", "float64", {"attention"}),
               ("SDPA", "float32", {"attention"}), ("SDPA", "bfloat16", {"attention"}),
               ("INTERPOLATE", "float64", {"resample.weights", "resample.table_1d", "resample.grid_2d"}),
               ("INTERPOLATE", "float32", {"resample.weights", "resample.table_1d", "resample.grid_2d"})]


@pytest.mark.parametrize(("name", "dtype", "ops"), NEW_LIBRARY)
def test_new_op_library_adapters_pass_with_their_expectations(name, dtype, ops):
    adapter = _adapter(name, dtype)
    run = run_conformance(adapter, spec=name, expectations=EXPECTATIONS, select=lambda e: e["op"] in ops)
    assert run.passed, [(r.case_id, r.status, r.message) for r in run.results if r.status not in
                        ("pass", "not_applicable", "xfail", "skip")]
    assert {r.op for r in run.results if r.status == "pass"} == ops


def test_library_rope_init_reports_float32_and_xfails_only_the_vllm_bracket():
    # transformers builds inv_freq in float32 (arange(...).float()): the verdict is judged at float32.
    adapter = _adapter("ROPE_INIT", "float32")
    with pytest.raises(ValueError, match="computes in float32, not float64"):
        adapter.at_dtype("float64")
    run = run_conformance(adapter, spec="rope-init", select=lambda e: e["op"] == "rope.inv_freq")
    bad = {r.case_id: r.status for r in run.results if r.status not in ("pass", "not_applicable")}
    assert bad == {"rope.inv_freq.error.dynamic_bracket_not_positive": "fail"}


def test_sdpa_refuses_what_it_cannot_express():
    run = run_conformance(_adapter("SDPA", "float64"), spec="sdpa", select=lambda e: e["op"] == "attention")
    na = {r.case_id: r.message for r in run.results if r.status == "not_applicable"}
    assert "attention.window.causal.w3.t10" in na and "sliding-window" in na["attention.window.causal.w3.t10"]
    assert "attention.fully_masked.nan" in na
    assert {r.status for r in run.results if r.case_id == "attention.fully_masked.zeros"} == {"pass"}


def test_rope_attention_block_matches_the_reference():
    """Whole pipeline: q/k/v projections, transformers' Llama rotary, SDPA with GQA and causal mask."""
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding, apply_rotary_pos_emb

    from posenc_ref.attention import attention
    from posenc_ref.rope import rope_apply

    rng = np.random.default_rng(7)
    b, t, width, heads, kv_heads, d = 2, 9, 32, 4, 2, 8
    hidden = rng.normal(size=(b, t, width))
    wq, wk, wv = (rng.normal(size=(width, n * d)) / np.sqrt(width) for n in (heads, kv_heads, kv_heads))
    positions = np.array([np.arange(t), np.arange(t) + 1000])  # a second sequence deep into the context

    def split(x, n):
        return x.reshape(b, t, n, d).transpose(0, 2, 1, 3)

    q, k, v = split(hidden @ wq, heads), split(hidden @ wk, kv_heads), split(hidden @ wv, kv_heads)

    config = LlamaConfig(hidden_size=width, num_attention_heads=heads, num_key_value_heads=kv_heads, head_dim=d,
                         rope_parameters={"rope_type": "default", "rope_theta": 10000.0})
    rotary = LlamaRotaryEmbedding(config)
    with torch.no_grad():
        qt, kt, vt = (torch.from_numpy(a).to(torch.float32) for a in (q, k, v))
        cos, sin = rotary(qt, torch.from_numpy(positions))
        qr, _ = apply_rotary_pos_emb(qt, qt, cos, sin)
        kr, _ = apply_rotary_pos_emb(kt, kt, cos, sin)
        actual = torch.nn.functional.scaled_dot_product_attention(qr, kr, vt, is_causal=True, enable_gqa=True)
    actual = actual.numpy().astype(np.float64)

    def transform(qx, kx, q_pos, k_pos):
        return rope_apply(qx, q_pos), rope_apply(kx, k_pos)

    expected = attention(q, k, v, causal=True, q_positions=positions, k_positions=positions, qk_transform=transform)
    # float32 pipeline against float64: |v| ~ 1, angles up to 1008 rad
    np.testing.assert_allclose(actual, expected, rtol=0, atol=2e-4)
    unrotated = attention(q, k, v, causal=True)
    assert np.abs(actual - unrotated).max() > 1e-2  # the rotation matters at these positions


def test_library_adapters_report_the_dtype_the_library_computes_in():
    # DistilBERT and Marian copy through torch.FloatTensor; M2M100 computes with .float().
    for name in ("DISTILBERT", "MARIAN", "M2M100"):
        adapter = load_adapter(f"{FILE}:{name}")
        assert adapter.dtype == "float32"
        with pytest.raises(ValueError, match="computes in float32, not float64"):
            adapter.at_dtype("float64")
    assert load_adapter(f"{FILE}:WHISPER").at_dtype("float32").dtype == "float32"


def test_m2m100_library_deviations_are_what_the_expectations_say():
    run = run_conformance(_adapter("M2M100", "float32"), spec="m2m100")
    got = {r.case_id: r.status for r in run.results if r.status not in ("pass", "not_applicable")}
    assert got == {"sinusoidal.fairseq.error.dim2": "wrong_error",
                   "sinusoidal.fairseq.error.rank1_tokens": "wrong_error",
                   "sinusoidal.fairseq.error.incremental_two_tokens": "fail"}


def test_distilbert_embedding_pipeline_matches_the_reference():
    """Whole pipeline: DistilBERT's own embeddings module (token rows + sinusoid rows + LayerNorm)."""
    from transformers import DistilBertConfig, DistilBertModel

    torch.manual_seed(0)
    config = DistilBertConfig(vocab_size=40, dim=16, hidden_dim=32, n_layers=1, n_heads=2,
                              max_position_embeddings=24, sinusoidal_pos_embds=True)
    model = DistilBertModel(config).eval()
    ids = np.array([[3, 17, 5, 9, 0, 39, 12], [1, 2, 3, 4, 5, 6, 7]])
    with torch.no_grad():
        actual = model.embeddings(torch.from_numpy(ids)).numpy().astype(np.float64)
    words = model.embeddings.word_embeddings.weight.detach().numpy().astype(np.float64)
    norm = model.embeddings.LayerNorm
    summed = learned_lookup(words, ids) + sinusoidal_table(np.arange(ids.shape[1]), dim=16)
    mean = summed.mean(-1, keepdims=True)
    var = summed.var(-1, keepdims=True)
    expected = (summed - mean) / np.sqrt(var + 1e-12) * norm.weight.detach().numpy() + norm.bias.detach().numpy()
    # float32 pipeline: a few ulp of float32 per element, relative to the unit-variance output.
    np.testing.assert_allclose(actual, expected, rtol=0, atol=64 * np.finfo(np.float32).eps)
    assert not np.allclose(actual, expected[:, ::-1], atol=1e-3)  # position order matters here
