"""ONNX Runtime adapter (conformance/adapters/onnxruntime_graphs.py and its onnx_*.py modules); skipped without
onnx/onnxruntime."""

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from _loading import load_file

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from posenc_ref.learned import learned_lookup  # noqa: E402
from posenc_ref.runner.adapters import load_adapter  # noqa: E402
from posenc_ref.runner.engine import run_conformance  # noqa: E402
from posenc_ref.sinusoidal import sinusoidal_table  # noqa: E402

ADAPTERS = Path(__file__).resolve().parents[1] / "conformance" / "adapters"
FILE = ADAPTERS / "onnxruntime_graphs.py"
PARTS = ("onnx_graph", "onnx_primitive", "onnx_operators")  # the graph builder, the primitive graphs, the operators


def _module():
    """The adapter module, loaded from its file; its parts come in as top-level modules (:func:`_part`)."""
    return load_file(FILE, "posenc_onnxruntime_graphs")


def _part(name):
    return sys.modules[name]


def _patch(monkeypatch, module, name, value):
    """Replace ``name`` wherever the adapter's modules look it up (the defining module and its importers)."""
    for where in (module, *map(_part, PARTS)):
        if hasattr(where, name):
            monkeypatch.setattr(where, name, value)


NEW_OPS = ("rope.xpos", "rope.mrope_cos_sin", "rope.longrope_inv_freq", "shaw.index", "shaw.logits", "shaw.output",
           "transformer_xl.score", "transformer_xl.rel_shift", "resample.weights", "resample.table_1d",
           "resample.grid_2d", "attention.terms", "attention.pipeline", "attention.rope", "attention.alibi",
           "attention.t5", "attention.shaw", "attention.xl", "rope.rotate", "rope.rotate_freq")
# the ops whose graph holds a RotaryEmbedding, Attention or Resize node: no double kernel in onnxruntime 1.30
REAL_OPERATOR_OPS = {"rope.apply", "rope.scores", "attention", "attention.terms", "attention.pipeline",
                     "attention.rope", "attention.alibi", "attention.t5", "attention.shaw", "attention.xl",
                     "resample.weights", "resample.table_1d", "resample.grid_2d"}


def _new(entry):
    return entry["op"] in NEW_OPS


def _op_level(entry):
    """Every op but the model cases (model.*), which engines run from the config (run_model)."""
    return not entry["op"].startswith("model.")


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16"])
def test_graphs_pass_every_case(dtype):
    """Without an expectations file: at float16 too, every case passes or is not_applicable."""
    adapter = load_adapter(f"{FILE}:ADAPTER")
    adapter = adapter if dtype == "float32" else adapter.at_dtype(dtype)
    run = run_conformance(adapter, spec="ort", select=_op_level)
    assert run.passed
    assert not any("no ONNX graph" in r.message for r in run.results)  # every op of the registry has a graph
    na = {r.op for r in run.results if r.status == "not_applicable"}
    if dtype == "float64":  # the real operators have no double kernel: not_applicable, never a pass
        assert na == REAL_OPERATOR_OPS
        assert all("no kernel" in r.message or "no double kernel" in r.message
                   for r in run.results if r.op in na)
    else:  # what the operators cannot express: interleaved_to_half, xPos weights, nan/uniform fully-masked rows
        cases = {r.case_id for r in run.results if r.status == "not_applicable"}
        assert cases == {"rope.apply.interleaved_to_half.long.d64", "rope.apply.interleaved_to_half.rotary32.d64",
                         "rope.apply.yarn.deepseek_v3.interleaved_to_half.rotary64.d192.long",
                         "rope.scores.xpos.interleaved", "rope.scores.xpos.half.long",
                         "attention.fully_masked.nan", "attention.fully_masked.uniform"}
    assert {r.op for r in run.results if r.status == "pass"} >= {
        "alibi.bias", "t5.bias", "deberta.index", "rope.cos_sin", "rope.xpos", "shaw.output", "transformer_xl.score"}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_the_new_ops_pass_through_the_runner(dtype):
    adapter = load_adapter(f"{FILE}:ADAPTER")
    adapter = adapter if dtype == "float32" else adapter.at_dtype(dtype)
    for op in NEW_OPS:  # every new op has a graph; at float64 the real operators have no double kernel
        refused = dtype == "float64" and op in REAL_OPERATOR_OPS
        assert (adapter.supports(op, {}) is True) is not refused, op
    run = run_conformance(adapter, spec="ort", select=_new)
    assert run.passed
    statuses = {op: {r.status for r in run.results if r.op == op} for op in NEW_OPS}
    for op, seen in statuses.items():
        if dtype == "float64" and op in REAL_OPERATOR_OPS:
            assert seen == {"not_applicable"}, op
        else:
            assert seen == {"pass"}, op  # every case, error cases included, passes


def test_rope_and_attention_use_the_real_operators():
    module = _module()
    adapter = module.OnnxRuntimeAdapter("float32")
    assert "RotaryEmbedding operator (opset 23)" in adapter.calls["rope.apply"]
    assert "Attention operator (opset 23)" in adapter.calls["attention"]
    x = np.linspace(-1, 1, 2 * 3 * 2 * 8).reshape(2, 3, 2, 8)
    params = {"base": 100.0, "rotary_dim": 4, "partial": "prefix", "layout": "interleaved", "x_layout": "BTHD",
              "attention_factor": 1.0}
    g = _part("onnx_graph")._graph("float32")
    feeds, outs = _part("onnx_operators").build_rope_apply(g, params, x.astype(np.float32), np.arange(3)[None], 4, 4)
    assert [n.op_type for n in g.nodes].count("RotaryEmbedding") == 1
    from posenc_ref.rope import rope_apply

    actual = _part("onnx_graph")._execute(g, feeds, outs, "float32", 23)["y"]
    np.testing.assert_allclose(actual, rope_apply(x, np.arange(3), **params), rtol=0, atol=1e-6)


def test_bfloat16_is_not_offered_and_a_missing_kernel_is_not_applicable(monkeypatch):
    module = _module()
    with pytest.raises(ValueError, match="not offered"):
        module.OnnxRuntimeAdapter("bfloat16")
    # A graph onnxruntime has no kernel for (as RotaryEmbedding at float64 is) is not_applicable: the start-up
    # trial run of a registry case finds it.
    real_run = module.RUNNERS["grid2d.sincos"]

    def no_double_sin(params, inputs, dtype):
        if dtype == "float64":
            raise module.ort.capi.onnxruntime_pybind11_state.NotImplemented("Could not find an implementation for Sin")
        return real_run(params, inputs, dtype)

    monkeypatch.setitem(module.RUNNERS, "grid2d.sincos", no_double_sin)
    adapter = module.OnnxRuntimeAdapter("float64")
    run = run_conformance(adapter, spec="ort")
    grid = {r.status for r in run.results if r.op == "grid2d.sincos"}
    assert grid == {"not_applicable"}
    assert any("no kernel" in r.message for r in run.results if r.op == "grid2d.sincos")


def test_embedding_pipeline_graph_matches_the_reference():
    """Whole pipeline as one ONNX graph: Gather token rows + sinusoid table + LayerNormalization."""
    module = _module()
    graph = _part("onnx_graph")
    ort, tp = module.ort, graph.TensorProto
    rng = np.random.default_rng(3)
    words = rng.normal(size=(30, 16)).astype(np.float32)
    ids = np.array([[4, 8, 15, 16, 23, 29], [0, 1, 2, 3, 4, 5]])
    g = graph.Graph("float32")
    params = {"dim": 16, "base": 10000.0, "ladder": "paper", "layout": "interleaved", "odd_width": "error",
              "scale": 1.0}
    positions = g.op("CumSum", g.op("Mul", g.op("Add", g.op("Mul", "ids", g.const(0, np.int64)), g.const(1, np.int64)),
                                    g.const(1, np.int64)), g.const(1, np.int64))
    positions = g.op("Sub", positions, g.const(1, np.int64))  # 0..T-1 per row, from the ids' shape
    table = _part("onnx_primitive")._table(g, positions, params)
    summed = g.op("Add", g.op("Gather", g.const(words), "ids", axis=0), table)
    out = g.op("LayerNormalization", summed, g.const(np.ones(16)), g.const(np.zeros(16)), axis=-1, epsilon=1e-12)
    model = g.model([("ids", tp.INT64, 2)], [(out, "embeddings", tp.FLOAT, 3)])
    actual = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, {"ids": ids})[0].astype(np.float64)
    ref = learned_lookup(words.astype(np.float64), ids) + sinusoidal_table(np.arange(ids.shape[1]), dim=16)
    expected = (ref - ref.mean(-1, keepdims=True)) / np.sqrt(ref.var(-1, keepdims=True) + 1e-12)
    np.testing.assert_allclose(actual, expected, rtol=0, atol=64 * np.finfo(np.float32).eps)


def test_the_attention_block_and_resample_use_the_real_operators():
    module = _module()
    adapter = module.OnnxRuntimeAdapter("float32")
    assert "RotaryEmbedding" in adapter.calls["attention.rope"] and "Attention" in adapter.calls["attention.rope"]
    assert all("Resize" in adapter.calls[op] for op in ("resample.weights", "resample.table_1d", "resample.grid_2d"))
    rng = np.random.default_rng(0)
    q, k, v = rng.normal(size=(1, 4, 3, 8)), rng.normal(size=(1, 2, 5, 8)), rng.normal(size=(1, 2, 5, 8))
    params = {"base": 100.0, "layout": "interleaved", "scale": None, "softmax_multiplier": 1.0, "causal": True,
              "alignment": "bottom_right"}
    inputs = {"q": q, "k": k, "v": v, "q_positions": np.array([7, 8, 9]), "k_positions": np.arange(5, 10)}
    a = module.attention_checks.attention_rope(params, inputs)
    g = _part("onnx_graph")._graph("float32")
    feeds, outs = _part("onnx_operators").build_attention_scheme(g, "attention.rope", params, a)
    kinds = [n.op_type for n in g.nodes]
    assert kinds.count("RotaryEmbedding") == 2 and kinds.count("Attention") == 1
    actual = _part("onnx_graph")._execute(g, feeds, outs, "float32", 23)
    from posenc_ref.records.attention_positional import attention_rope_case

    expected = attention_rope_case(q, k, v, inputs["q_positions"], inputs["k_positions"], **params)
    np.testing.assert_allclose(actual["output"], expected[0], rtol=0, atol=1e-5)
    np.testing.assert_allclose(actual["weights"], expected[1], rtol=0, atol=1e-5)


def test_resize_float32_scales_that_change_the_output_size_are_not_applicable():
    adapter = _module().OnnxRuntimeAdapter("float32")
    params = {"in_size": 13, "new_size": 15, "kernel": "bicubic", "cubic_a": -0.75, "antialias": "off",
              "coordinates": "half_pixel", "size_from": "scale_factor", "scale_offset": 0.0}
    reason = adapter.supports("resample.weights", params)
    assert isinstance(reason, str) and "float32" in reason and "15" in reason and "14" in reason
    assert adapter.supports("resample.weights", {**params, "size_from": "size"}) is True
    assert adapter.supports("resample.weights", {**params, "in_size": 14, "new_size": 16, "scale_offset": 0.1}) is True


def _failing_ops(module, ops):
    run = run_conformance(module.OnnxRuntimeAdapter("float32"), spec="ort", select=lambda e: e["op"] in ops)
    return {r.op for r in run.results if r.status in ("fail", "error", "wrong_error")}


def test_a_wrong_port_fails(monkeypatch):
    """Deliberate mistakes in the graphs are caught: the opposite Shaw sign, a logits term added after
    the scale instead of before, and the antialias renormalisation dropped."""
    module = _module()
    ops = {"shaw.index", "attention.shaw", "attention.xl", "resample.weights"}
    assert _failing_ops(module, ops) == set()
    primitive, operators = _part("onnx_primitive"), _part("onnx_operators")
    real_index, real_node, real_rows = primitive._shaw_index, operators._attention_node, operators._resize_rows

    def flipped(g, params):
        other = "query_minus_key" if params["sign"] == "key_minus_query" else "key_minus_query"
        return real_index(g, {**params, "sign": other})

    def unscaled(g, a, causal, past, q, k, v, term=None, bias=None):
        return real_node(g, a, causal, past, q, k, v, None, term if bias is None else bias)

    def replicated(g, x, columns, axis, requested, params):
        return real_rows(g, x, columns, {**axis, "antialias": False}, requested, params)

    _patch(monkeypatch, module, "_shaw_index", flipped)
    _patch(monkeypatch, module, "_attention_node", unscaled)
    _patch(monkeypatch, module, "_resize_rows", replicated)
    assert _failing_ops(module, ops) == ops


def _failing_cases(adapter, ids):
    run = run_conformance(adapter, spec="ort", select=lambda e: e["id"] in ids)
    assert {r.case_id for r in run.results} == ids
    return {r.case_id for r in run.results if r.status in ("fail", "error", "wrong_error")}


def _corpus_ids(keep):
    from posenc_ref.corpus import default_corpus_dir

    manifest = json.loads((default_corpus_dir() / "manifest.json").read_text())
    return {e["id"] for e in manifest["cases"] if keep(e)}


def _scaling_changes_the_rotation():
    """The ok rope.apply/rope.scores cases whose scaling changes the frequencies or the factor (a dynamic
    NTK case below its trained length, say, rotates as the default does)."""
    from posenc_ref.registry import get_op
    from posenc_ref.rope import SCALING, scaled_frequencies

    ids = set()
    for op, x_name in (("rope.apply", "x"), ("rope.scores", "q")):
        record = get_op(op)
        for case in record.cases:
            params = record.full_params(case.params)
            if case.error is not None or params["rope_type"] == "default" or params["layout"] == "interleaved_to_half":
                continue
            head = case.make_inputs()[x_name].shape[-1]
            common = {"base": params["base"], "rotary_dim": params["rotary_dim"], "partial": params["partial"],
                      "func": op}
            _, w, a = scaled_frequencies(head, **common, **{k: params[k] for k in SCALING})
            _, plain, _ = scaled_frequencies(head, **common)
            if a != 1.0 or not np.array_equal(w, plain):
                ids.add(case.id)
    return ids


def test_a_wrong_scaling_or_cache_row_fails(monkeypatch):
    """Deliberate mistakes in the RoPE graphs are caught: the scaling ignored in rope.apply/rope.scores
    (plain frequencies, the op's own attention factor), YaRN's ext_factor ignored, and rope.rotate
    reading cache rows 0..T-1 instead of the positions' rows (at float32 through the RotaryEmbedding
    operator's position_ids, at float64 through the primitive Gather)."""
    module = _module()
    scaled = _scaling_changes_the_rotation()
    ext = _corpus_ids(lambda e: "ext_factor" in e["id"] and not e["expected_error"])
    rotate = _corpus_ids(lambda e: e["op"] == "rope.rotate" and not e["expected_error"])
    assert len(scaled) >= 15 and len(ext) == 3 and len(rotate) == 6
    single, double = module.OnnxRuntimeAdapter("float32"), module.OnnxRuntimeAdapter("float64")
    assert "RotaryEmbedding" in single.calls["rope.rotate"] and "Gather" in double.calls["rope.rotate"]
    assert _failing_cases(single, scaled | ext | rotate) == set()
    assert _failing_cases(double, rotate) == set()
    primitive = _part("onnx_primitive")
    real_inv_freq = primitive._inv_freq

    with monkeypatch.context() as m:
        _patch(m, module, "_scaled", lambda g, sc, rd: {})
        assert _failing_cases(single, scaled) == scaled
    with monkeypatch.context() as m:
        _patch(m, module, "_inv_freq", lambda g, c: real_inv_freq(g, {**c, "ext": 1.0}))
        assert _failing_cases(single, ext) == ext
    with monkeypatch.context() as m:
        _patch(m, module, "_position_ids", lambda g, positions, batch, t: g.const(
            np.broadcast_to(np.arange(t), (batch, t)), np.int64))
        assert _failing_cases(single, rotate) == rotate
        assert _failing_cases(double, rotate) == rotate


def test_rope_rotate_uses_the_real_operator_with_position_ids():
    """rope.rotate at float32: one RotaryEmbedding node fed the caches and position_ids; at float64 (no double
    kernel) the primitive rotation; both match the reference on random caches and a partial rotation."""
    from posenc_ref.rope import rope_rotate_cached

    module = _module()
    rng = np.random.default_rng(5)
    x, cos, sin = rng.normal(size=(2, 3, 2, 10)), rng.normal(size=(9, 3)), rng.normal(size=(9, 3))
    positions = np.array([[8, 0, 3], [1, 1, 7]])
    for layout in ("half", "interleaved"):
        params = {"layout": layout, "x_layout": "BTHD"}
        expected = rope_rotate_cached(x, positions, cos, sin, **params)
        c = module.checks.rotate_cached(params, {"x": x, "positions": positions, "cos_cache": cos, "sin_cache": sin})
        for dtype, operator, atol in (("float32", True, 1e-5), ("float64", False, 1e-13)):
            assert module.rotary_operator(dtype) is operator
            g = _part("onnx_graph")._graph(dtype)
            feeds, outs = _part("onnx_operators").build_rope_rotate(g, params, c, operator)
            nodes = [n for n in g.nodes if n.op_type == "RotaryEmbedding"]
            assert len(nodes) == int(operator)
            if operator:
                assert len(nodes[0].input) == 4  # X, cos_cache, sin_cache, position_ids
            actual = _part("onnx_graph")._execute(g, feeds, outs, dtype, 23 if operator else 21)["y"]
            np.testing.assert_allclose(actual, expected, rtol=0, atol=atol)


def test_rope_rotate_freq_runs_the_operator_and_a_wrong_variant_fails(monkeypatch):
    """rope.rotate_freq at float32 and float16: one RotaryEmbedding node, its caches built in the graph from
    the given inv_freq; at float64 (no double kernel) the primitive rotation. The positions off by one, or
    the frequencies reversed, fail every valid case through both."""
    module = _module()
    ids = _corpus_ids(lambda e: e["op"] == "rope.rotate_freq" and not e["expected_error"])
    single, half, double = (module.OnnxRuntimeAdapter(d) for d in ("float32", "float16", "float64"))
    assert len(ids) >= 10 and "RotaryEmbedding" in single.calls["rope.rotate_freq"]
    assert "Gather" in double.calls["rope.rotate_freq"]
    assert all(_failing_cases(a, ids) == set() for a in (single, half, double))
    right = module.checks.rotate_freq
    with monkeypatch.context() as m:
        m.setattr(module.checks, "rotate_freq", lambda p, i: {**right(p, i), "positions": right(p, i)["positions"] + 1})
        assert _failing_cases(single, ids) == ids and _failing_cases(double, ids) == ids
    with monkeypatch.context() as m:
        m.setattr(module.checks, "rotate_freq", lambda p, i: {**right(p, i), "inv_freq": right(p, i)["inv_freq"][::-1]})
        assert _failing_cases(single, ids) == ids and _failing_cases(double, ids) == ids


def test_the_deprecated_onnxruntime_adapter_spelling_loads_the_same_adapter():
    old, new = load_adapter(f"{ADAPTERS / 'onnxruntime_adapter.py'}:ADAPTER"), load_adapter(f"{FILE}:ADAPTER")
    assert (old.name, old.dtype, old.capabilities, old.refused) == (new.name, new.dtype, new.capabilities, new.refused)


def test_every_graph_is_tried_at_start_up_on_a_registry_case():
    """The start-up probe runs each op's graph on the registry's smallest valid case it can express, so no
    op goes untried (a missing kernel would otherwise surface as errors instead of not_applicable)."""
    from posenc_ref.registry import get_op

    module = _module()
    for op in module.RUNNERS:
        params, inputs = module._trial_case(op)
        record = get_op(op)
        assert any(case.error is None and record.full_params(case.params) == params for case in record.cases), op
        assert module._unexpressible(op, params) is None, op
