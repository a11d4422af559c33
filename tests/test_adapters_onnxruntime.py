"""ONNX Runtime adapter (conformance/adapters/onnxruntime_adapter.py); skipped without onnx/onnxruntime."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from posenc_ref.learned import learned_lookup  # noqa: E402
from posenc_ref.runner.adapters import load_adapter  # noqa: E402
from posenc_ref.runner.engine import run_conformance  # noqa: E402
from posenc_ref.sinusoidal import sinusoidal_table  # noqa: E402

FILE = Path(__file__).resolve().parents[1] / "conformance" / "adapters" / "onnxruntime_adapter.py"


def _module():
    spec = importlib.util.spec_from_file_location("posenc_onnxruntime_adapter", FILE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


COVERED = {"sinusoidal.table", "sinusoidal.fairseq", "grid2d.sincos", "learned.lookup", "rope.inv_freq",
           "rope.cos_sin", "rope.apply", "rope.scores", "alibi.slopes", "alibi.bias", "alibi.mask_positions",
           "t5.bucket", "t5.bias", "deberta.bucket", "deberta.index",
           "deberta.scores", "attention", "rope.xpos", "rope.mrope_cos_sin", "shaw.index", "shaw.logits",
           "shaw.output"}


def _covered(entry):
    return entry["op"] in COVERED


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16"])
def test_graphs_pass_every_case(dtype):
    from posenc_ref.runner.expectations import load_expectations

    adapter = load_adapter(f"{FILE}:ADAPTER")
    adapter = adapter if dtype == "float32" else adapter.at_dtype(dtype)
    expectations = load_expectations(FILE.with_name("onnxruntime_float16.toml")) if dtype == "float16" else None
    run = run_conformance(adapter, spec="ort", select=_covered, expectations=expectations)
    assert run.passed
    na = {r.op for r in run.results if r.status == "not_applicable"}
    if dtype == "float64":  # the real operators have no double kernel: not_applicable, never a pass
        assert na == {"rope.apply", "rope.scores", "attention"}
        assert all("no kernel" in r.message for r in run.results if r.op in na)
    else:  # what the operators cannot express: interleaved_to_half, xPos weights, nan/uniform fully-masked rows
        cases = {r.case_id for r in run.results if r.status == "not_applicable"}
        assert cases == {"rope.apply.interleaved_to_half.long.d64", "rope.apply.interleaved_to_half.rotary32.d64",
                         "rope.scores.xpos.interleaved", "rope.scores.xpos.half.long",
                         "attention.fully_masked.nan", "attention.fully_masked.uniform"}
    assert {r.op for r in run.results if r.status in ("pass", "xfail")} >= {
        "alibi.bias", "t5.bias", "deberta.index", "rope.cos_sin"}


def test_rope_and_attention_use_the_real_operators():
    module = _module()
    adapter = module.OnnxRuntimeAdapter("float32")
    assert "RotaryEmbedding operator (opset 23)" in adapter.calls["rope.apply"]
    assert "Attention operator (opset 23)" in adapter.calls["attention"]
    x = np.linspace(-1, 1, 2 * 3 * 2 * 8).reshape(2, 3, 2, 8)
    params = {"base": 100.0, "rotary_dim": 4, "partial": "prefix", "layout": "interleaved", "x_layout": "BTHD",
              "attention_factor": 1.0}
    g = module._graph("float32")
    feeds, outs = module.build_rope_apply(g, params, x.astype(np.float32), np.arange(3)[None], 4, 4)
    assert [n.op_type for n in g.nodes].count("RotaryEmbedding") == 1
    from posenc_ref.rope import rope_apply

    actual = module._execute(g, feeds, outs, "float32", 23)["y"]
    np.testing.assert_allclose(actual, rope_apply(x, np.arange(3), **params), rtol=0, atol=1e-6)


def test_bfloat16_is_not_offered_and_a_missing_kernel_is_not_applicable(monkeypatch):
    module = _module()
    with pytest.raises(ValueError, match="not offered"):
        module.OnnxRuntimeAdapter("bfloat16")
    # A graph onnxruntime has no kernel for (as RotaryEmbedding at float64 will be) is not_applicable.
    real_run = module._run

    def no_double_sin(builder, params, feeds, dtype, *extra):
        if dtype == "float64" and builder is module.build_grid:
            raise module.ort.capi.onnxruntime_pybind11_state.NotImplemented("Could not find an implementation for Sin")
        return real_run(builder, params, feeds, dtype, *extra)

    monkeypatch.setattr(module, "_run", no_double_sin)
    adapter = module.OnnxRuntimeAdapter("float64")
    run = run_conformance(adapter, spec="ort")
    grid = {r.status for r in run.results if r.op == "grid2d.sincos"}
    assert grid == {"not_applicable"}
    assert any("no kernel" in r.message for r in run.results if r.op == "grid2d.sincos")


def test_embedding_pipeline_graph_matches_the_reference():
    """Whole pipeline as one ONNX graph: Gather token rows + sinusoid table + LayerNormalization."""
    module = _module()
    ort, tp = module.ort, module.TensorProto
    rng = np.random.default_rng(3)
    words = rng.normal(size=(30, 16)).astype(np.float32)
    ids = np.array([[4, 8, 15, 16, 23, 29], [0, 1, 2, 3, 4, 5]])
    g = module.Graph("float32")
    params = {"dim": 16, "base": 10000.0, "ladder": "paper", "layout": "interleaved", "odd_width": "error",
              "scale": 1.0}
    positions = g.op("CumSum", g.op("Mul", g.op("Add", g.op("Mul", "ids", g.const(0, np.int64)), g.const(1, np.int64)),
                                    g.const(1, np.int64)), g.const(1, np.int64))
    positions = g.op("Sub", positions, g.const(1, np.int64))  # 0..T-1 per row, from the ids' shape
    summed = g.op("Add", g.op("Gather", g.const(words), "ids", axis=0), module._table(g, positions, params))
    out = g.op("LayerNormalization", summed, g.const(np.ones(16)), g.const(np.zeros(16)), axis=-1, epsilon=1e-12)
    model = g.model([("ids", tp.INT64, 2)], [(out, "embeddings", tp.FLOAT, 3)])
    actual = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, {"ids": ids})[0].astype(np.float64)
    ref = learned_lookup(words.astype(np.float64), ids) + sinusoidal_table(np.arange(ids.shape[1]), dim=16)
    expected = (ref - ref.mean(-1, keepdims=True)) / np.sqrt(ref.var(-1, keepdims=True) + 1e-12)
    np.testing.assert_allclose(actual, expected, rtol=0, atol=64 * np.finfo(np.float32).eps)
