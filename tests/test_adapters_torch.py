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
def test_torch_port_passes_every_case(dtype):
    adapter = _adapter("TORCH", dtype)
    run = run_conformance(adapter, spec="torch", select=lambda entry: entry["op"] in adapter.capabilities)
    assert run.passed and run.counts()["not_applicable"] == 0  # every case of every op it declares


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
