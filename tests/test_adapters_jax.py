"""JAX adapter (conformance/adapters/jax_port.py and its jax_*.py modules) through the runner; skipped
without jax."""

import contextlib
import sys
from pathlib import Path

import numpy as np
import pytest
from _loading import load_file

jax = pytest.importorskip("jax")

from posenc_ref.learned import learned_lookup  # noqa: E402
from posenc_ref.runner.adapters import load_adapter  # noqa: E402
from posenc_ref.runner.engine import run_conformance  # noqa: E402
from posenc_ref.sinusoidal import sinusoidal_table  # noqa: E402

ADAPTERS = Path(__file__).resolve().parents[1] / "conformance" / "adapters"
SPEC = f"{ADAPTERS / 'jax_port.py'}:ADAPTER"
# A quick selection (every op, the long positions, odd widths, errors); CI runs every case.
QUICK = ("sinusoidal.table.paper.interleaved.*", "sinusoidal.table.t2t.long_positions.*",
         "sinusoidal.table.odd_width.sin_gets_extra.concat_cos_sin.*", "sinusoidal.table.error.base_zero",
         "sinusoidal.fairseq.left_padded.*", "grid2d.detr_sine.*", "grid2d.timm_default.grid3x5.*",
         "learned.lookup.clamp", "learned.lookup.error.beyond_table",
         "rope.inv_freq.yarn.deepseek_v3", "rope.inv_freq.llama3.sanity.d128", "rope.inv_freq.error.odd_dim",
         "rope.cos_sin.full_interleaved.*", "rope.apply.interleaved_to_half.rotary32.d64",
         "rope.apply.error.positions_wrong_length", "rope.scores.decode.kv_cache", "rope.scores.xpos.half.long",
         "rope.xpos.torchscale.odd_window.d32", "rope.xpos.error.scale_overflows", "rope.mrope_cos_sin.interleaved.*",
         "alibi.slopes.press.h12", "alibi.bias.bottom_right.h6.cross_tq3_tk7", "alibi.bias.key_only.h4.batched",
         "alibi.mask_positions.all_padding_row",
         "t5.bucket.unidirectional.n32.d128.boundaries", "t5.bias.heads_buckets.t6", "t5.bias.error.table_rank1",
         "deberta.bucket.small.b8.m16.exact_top", "deberta.index.seq600.max_relative_positions",
         "deberta.scores.c2p_p2c.beyond_m.clamped", "deberta.scores.error.positions_2d",
         "shaw.output.memory.tq3.tk8.k3", "shaw.logits.error.cross_attention",
         "attention.gqa.h4kv2.t5.d8", "attention.causal.bottom_right.tq6tk3", "attention.window.decode.w4",
         "attention.fully_masked.uniform", "attention.error.fully_masked_row")


@contextlib.contextmanager
def x64(enabled):
    previous = bool(jax.config.jax_enable_x64)
    jax.config.update("jax_enable_x64", enabled)
    try:
        yield
    finally:
        jax.config.update("jax_enable_x64", previous)


def _quick(entry):
    import fnmatch

    return any(fnmatch.fnmatchcase(entry["id"], p) for p in QUICK)


@pytest.mark.parametrize(("enabled", "dtype"), [(True, "float64"), (False, "float32"), (False, "bfloat16")])
def test_jax_port_passes(enabled, dtype):
    with x64(enabled):
        adapter = load_adapter(SPEC)
        adapter = adapter if adapter.dtype == dtype else adapter.at_dtype(dtype)
        run = run_conformance(adapter, spec="jax", select=_quick, expectations=_expectations(dtype))
    assert run.passed and run.executed >= 30


def _expectations(dtype):
    """The adapter's expectations file at ``dtype`` (conformance/adapters/jax_<dtype>.toml), if any."""
    from posenc_ref.runner.expectations import load_expectations

    path = Path(SPEC.rsplit(":", 1)[0]).with_name(f"jax_{dtype}.toml")
    return load_expectations(path) if path.exists() else None


def _port():
    return load_file(SPEC.rsplit(":", 1)[0], "posenc_jax_adapter")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_narrow_dtypes_need_no_entry_for_the_rounding_of_the_inputs(dtype):
    """The float16/bfloat16 policies carry the input-rounding term: the reference's own float64 rotation
    of the rounded x, rounded once to the dtype, passes a case whose terms nearly cancel, and so does the
    port, with no expectation entry left in its files."""
    import ml_dtypes

    from posenc_ref.rope import rope_apply

    narrow = np.float16 if dtype == "float16" else ml_dtypes.bfloat16

    class ExactOnRoundedX:
        name = "exact-on-rounded-x"

        def __init__(self):
            self.dtype = dtype

        def run(self, op, params, inputs):
            x = np.asarray(inputs["x"]).astype(narrow).astype(np.float64)
            return rope_apply(x, inputs["positions"], **params).astype(narrow).astype(np.float64)

    only = lambda e: e["id"] == "rope.apply.half.d64.base10000"  # noqa: E731
    assert run_conformance(ExactOnRoundedX(), spec="exact", select=only).passed
    assert _expectations(dtype) is None  # no expectations file at float16 / bfloat16: nothing is expected to fail
    with x64(False):
        adapter = load_adapter(SPEC).at_dtype(dtype)
        run = run_conformance(adapter, spec="jax", select=only, expectations=_expectations(dtype))
    assert run.passed and {r.status for r in run.results} == {"pass"}


def test_dot_product_attention_is_the_library_below_float64():
    port = _port()
    with x64(False):
        adapter = port.jax_port("float32")
    assert "jax.nn.dot_product_attention" in adapter.calls["attention"]
    with x64(False):
        import jax.numpy as jnp

        q = np.linspace(-1, 1, 32).reshape(1, 2, 2, 8)
        params = {"scale": None, "causal": True, "alignment": "top_left", "window": None, "fully_masked": "zeros"}
        inputs = {"q": q, "k": q, "v": q, "mask": np.ones((1, 1, 1, 1), bool),
                  "key_padding_mask": np.ones((1, 2), bool), "bias": np.zeros((1, 1, 1, 1))}
        checked = port.attention_checks.attention(params, inputs)
        library, _ = port.attention(checked, jnp.float32, use_library=True)
        own, _ = port.attention(checked, jnp.float32, use_library=False)
    np.testing.assert_allclose(np.asarray(library), np.asarray(own), rtol=0, atol=1e-6)


def test_adapter_refuses_to_claim_float64_when_x64_is_off():
    with x64(False):
        adapter = load_adapter(SPEC)
        assert adapter.dtype == "float32"
        with pytest.raises(ValueError, match="float64 needs jax_enable_x64"):
            adapter.at_dtype("float64")
    with x64(True):
        claimed64 = load_adapter(SPEC)
        assert claimed64.dtype == "float64"
    with x64(False):  # x64 switched off after the float64 adapter was made: JAX would downcast silently
        downcast = pytest.warns(UserWarning, match="truncated to dtype float32")
        with downcast, pytest.raises(RuntimeError, match="JAX computed in float32, the adapter claims float64"):
            claimed64.run("sinusoidal.table", {"dim": 4, "base": 10000.0, "ladder": "paper", "layout": "interleaved",
                                               "odd_width": "error", "position_offset": 0, "scale": 1.0},
                          {"positions": np.arange(3)})


def test_embedding_pipeline_matches_the_reference():
    """Whole pipeline in JAX: token rows + sinusoid rows + layer norm, float32, against the reference."""
    import jax.numpy as jnp

    port = load_file(SPEC.rsplit(":", 1)[0], "posenc_jax_adapter")
    rng = np.random.default_rng(7)
    words = rng.normal(size=(30, 16))
    ids = np.array([[4, 8, 15, 16, 23, 29], [0, 1, 2, 3, 4, 5]])
    with x64(False):
        params = {"dim": 16, "base": 10000.0, "ladder": "paper", "layout": "interleaved", "odd_width": "error",
                  "scale": 1.0}
        pos = port.table(np.arange(ids.shape[1]), params, jnp.float32)
        summed = jnp.asarray(words, jnp.float32)[ids] + pos
        mean = summed.mean(-1, keepdims=True)
        actual = np.asarray((summed - mean) / jnp.sqrt(((summed - mean) ** 2).mean(-1, keepdims=True) + 1e-12))
    ref = learned_lookup(words, ids) + sinusoidal_table(np.arange(ids.shape[1]), dim=16)
    expected = (ref - ref.mean(-1, keepdims=True)) / np.sqrt(ref.var(-1, keepdims=True) + 1e-12)
    np.testing.assert_allclose(actual, expected, rtol=0, atol=64 * np.finfo(np.float32).eps)


NEW_OPS = ("rope.longrope_inv_freq", "transformer_xl.score", "transformer_xl.rel_shift", "resample.weights",
           "resample.table_1d", "resample.grid_2d", "attention.terms", "attention.pipeline", "attention.rope",
           "attention.alibi", "attention.t5", "attention.shaw", "attention.xl", "rope.rotate_freq")


def _of_new_ops(entry):
    return entry["op"] in NEW_OPS


def test_new_ops_are_supported():
    from posenc_ref.corpus import default_corpus_dir, read_manifest
    from posenc_ref.runner.adapters import supports

    with x64(False):
        adapter = load_adapter(SPEC)
    assert set(NEW_OPS) <= set(adapter.capabilities)
    cases = [e for e in read_manifest(default_corpus_dir())["cases"] if _of_new_ops(e)]
    assert {e["op"] for e in cases} == set(NEW_OPS)
    assert all(supports(adapter, e["op"], e["params"]) is None for e in cases)  # every corpus case runs
    timm = {"in_size": 14, "new_size": 16, "kernel": "bicubic", "antialias": "on", "coordinates": "half_pixel"}
    assert "a=-0.5" in supports(adapter, "resample.weights", {**timm, "cubic_a": -0.75})
    assert "a=-0.75" in supports(adapter, "resample.weights", {**timm, "antialias": "off", "cubic_a": -0.5})
    assert "scale_and_translate" in adapter.calls["resample.grid_2d"]
    assert "dot_product_attention" in adapter.calls["attention.rope"]


@pytest.mark.parametrize(("enabled", "dtype"), [(True, "float64"), (False, "float32")])
def test_new_ops_pass_every_case(enabled, dtype):
    """Every case of the newly covered ops, errors included, passes without an expectation entry."""
    with x64(enabled):
        adapter = load_adapter(SPEC)
        run = run_conformance(adapter, spec="jax", select=_of_new_ops)
    assert run.passed and {r.status for r in run.results} == {"pass"}
    assert {r.op for r in run.results} == set(NEW_OPS)


def _one(case):
    return lambda entry: entry["id"] == case


def _fails(port, case, dtype="float32"):
    with x64(dtype == "float64"):
        run = run_conformance(port.jax_port(dtype), spec="jax", select=_one(case))
    return not run.passed and "fail" in {r.status for r in run.results}


@pytest.mark.parametrize(("name", "case", "wrong"), [
    ("resample_method", "resample.weights.bicubic.up14to16.torch",
     lambda real: lambda kernel, antialias, a: "cubic"),  # jax.image's a=-0.5 with renormalised edges
    ("resample_geometry", "resample.grid_2d.bilinear.align_corners.7to12",
     lambda real: lambda n, m, step, align: real(n, m, step, False)),  # half-pixel instead of align corners
    ("xl_embedding", "transformer_xl.score.mem0.tq5.bidirectional",
     lambda real: lambda distance, width, base, c: real(-distance, width, base, c)),  # key minus query
    ("rel_shift", "transformer_xl.rel_shift.xlnet.uni.tq3.tk5",
     lambda real: lambda x, variant, k_len: real(x[:, :k_len], "transformer_xl", k_len)),
    ("rope_qk", "attention.rope.half.causal.t6.d8",
     lambda real: lambda q, k, qp, kp, base, layout, c: real(q, k, qp, kp, base, "interleaved", c)),
    ("rope_qk", "attention.rope.own_positions.tq3tk5",
     lambda real: lambda q, k, qp, kp, base, layout, c: real(q, k, qp + 1, kp, base, layout, c)),  # off by one
    ("shaw_terms", "attention.shaw.k2.t6.d8",
     lambda real: lambda q, index, rel_keys, rel_values: (real(q, index, rel_keys, rel_values)[0], 0.0)),
    ("xl_terms", "attention.xl.memory.tq4tk8",
     lambda real: lambda q, k, u, v, w_r, distance, base, c: real(q, k, v, u, w_r, distance, base, c)),  # u, v swapped
    ("split_heads", "attention.pipeline.sinusoidal.gqa.t8.d16",
     lambda real: lambda x, heads: x.reshape(x.shape[0], heads, x.shape[1], -1)),  # heads split without the transpose
    ("longrope_inv_freq", "rope.longrope_inv_freq.phi3.L4097",
     lambda real: lambda factors, dim, base, c: real(factors[::-1], dim, base, c)),
    ("scaled_freq", "rope.apply.linear.d128.factor8.long",  # the scaling ignored: plain base ** (-2i/S)
     lambda real: lambda scaling, space, rd, c: real({**scaling, "type": "default"}, space, rd, c)),
    ("scaled_freq", "rope.scores.llama3.d128.long",
     lambda real: lambda scaling, space, rd, c: real({**scaling, "type": "default"}, space, rd, c)),
    ("scaled_freq", "rope.apply.proportional.gemma4.d128.rotary32.long",  # every pair turning
     lambda real: lambda scaling, space, rd, c: real(scaling, space, space, c)),
    ("inv_freq", "rope.inv_freq.yarn.ggml_ext_factor_0.5",  # ext_factor ignored
     lambda real: lambda c, compute: real({**c, "ext": 1.0}, compute)),
    ("inv_freq", "rope.apply.yarn.ggml_ext_factor_0.5.d128.long",
     lambda real: lambda c, compute: real({**c, "ext": 1.0}, compute)),
    ("rotate_cached", "rope.rotate.onnx.half.random_cache",  # rows 0..T-1 instead of the positions
     lambda real: lambda x, rows, cos, sin, layout, x_layout: real(
         x, np.broadcast_to(np.arange(rows.shape[-1]), rows.shape), cos, sin, layout, x_layout)),
    ("rotate_cached", "rope.rotate.onnx.rotary_dim4.d8",
     lambda real: lambda x, rows, cos, sin, layout, x_layout: real(
         x, np.broadcast_to(np.arange(rows.shape[-1]), rows.shape), cos, sin, layout, x_layout)),
    ("rotate", "rope.rotate_freq.half.d32.long",  # positions off by one
     lambda real: lambda x, pos, space, rd, params, layout, c, freq=None: real(
         x, pos + 1, space, rd, params, layout, c, freq)),
    ("rotate", "rope.rotate_freq.yarn.gpt_oss.d64.long",  # the caller's frequencies reversed
     lambda real: lambda x, pos, space, rd, params, layout, c, freq=None: real(
         x, pos, space, rd, params, layout, c, None if freq is None else freq[::-1])),
    ("fairseq", "sinusoidal.fairseq.m2m100.chunk_after_cache",  # cache_rule ignored: fairseq's one-step rows
     lambda real: lambda tokens, params, c: real(tokens, {**params, "cache_rule": "fairseq"}, c)),
    ("fairseq", "sinusoidal.fairseq.m2m100.long_cache",  # the chunk's rows without the cached length
     lambda real: lambda tokens, params, c: real(tokens, {**params, "past_length": 0}, c)),
])
def test_a_wrong_port_variant_fails(monkeypatch, name, case, wrong):
    """The corpus catches each convention mistake in the new ports (the real port passes these cases)."""
    port = _port()
    assert not _fails(port, case)
    parts = [port, *(sys.modules[part] for part in ("jax_formulas", "jax_library"))]
    real = next(getattr(part, name) for part in parts if hasattr(part, name))
    for part in parts:  # wherever the adapter's modules look the function up
        if hasattr(part, name):
            monkeypatch.setattr(part, name, wrong(real))
    assert _fails(port, case)


def _own_factor_only(real):
    return lambda op, params, space, rd: {**real(op, params, space, rd), "a": float(params["attention_factor"])}


def _explicit_factor_ignored(real):
    return lambda op, params, space, rd: real(op, {**params, "scaling_attention_factor": None}, space, rd)


@pytest.mark.parametrize(("case", "wrong"), [
    ("rope.apply.yarn.d128.s16.long", _own_factor_only),  # YaRN's g(s) left out
    ("rope.scores.longrope.d64.long", _own_factor_only),  # LongRoPE's sqrt(1 + ln s / ln L0) left out
    ("rope.apply.yarn.explicit_attention_factor.d128.long", _explicit_factor_ignored),  # g(64) instead of 1
])
def test_a_port_with_the_wrong_scaling_attention_factor_fails(monkeypatch, case, wrong):
    """The variant's attention factor (YaRN's g(s), LongRoPE's, an explicit one where given) multiplies
    cos and sin on top of the op's own: a port that gets it wrong fails the scaled cases."""
    port = _port()
    assert not _fails(port, case)
    monkeypatch.setattr(port.checks, "scaling", wrong(port.checks.scaling))
    assert _fails(port, case)


def test_rope_rotate_and_the_scaled_cases_pass():
    """rope.rotate, every scaled rope.apply / rope.scores case and the m2m100 cache rule pass (float32)."""
    import re

    new = re.compile(r"rope\.(apply|scores)\.(linear|ntk_aware|dynamic|yarn|llama3|longrope|proportional\.gemma4)\."
                     r"|rope\.rotate\.|ggml_ext_factor|^sinusoidal\.fairseq\.m2m100\.")
    with x64(False):
        adapter = load_adapter(SPEC)
        run = run_conformance(adapter, spec="jax", select=lambda e: bool(new.search(e["id"])))
    assert run.passed and {r.status for r in run.results} == {"pass"}
    ops = {"rope.apply", "rope.scores", "rope.rotate", "rope.inv_freq", "sinusoidal.fairseq"}
    assert ops <= {r.op for r in run.results}
    assert run.executed >= 30


def test_the_deprecated_jax_adapter_spelling_loads_the_same_adapter():
    with x64(False):
        old, new = load_adapter(f"{ADAPTERS / 'jax_adapter.py'}:ADAPTER"), load_adapter(SPEC)
    assert (old.name, old.dtype, old.capabilities) == (new.name, new.dtype, new.capabilities)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_rope_rotate_freq_passes_in_the_narrow_dtypes(dtype):
    with x64(False):
        adapter = load_adapter(SPEC).at_dtype(dtype)
        run = run_conformance(adapter, spec="jax", select=lambda e: e["op"] == "rope.rotate_freq")
    assert run.passed and {r.status for r in run.results} == {"pass"} and run.executed >= 19
