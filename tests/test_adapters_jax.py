"""JAX adapter (conformance/adapters/jax_adapter.py) through the runner; skipped without jax."""

import contextlib
from pathlib import Path

import numpy as np
import pytest

jax = pytest.importorskip("jax")

from posenc_ref.learned import learned_lookup  # noqa: E402
from posenc_ref.runner.adapters import load_adapter  # noqa: E402
from posenc_ref.runner.engine import run_conformance  # noqa: E402
from posenc_ref.sinusoidal import sinusoidal_table  # noqa: E402

SPEC = f"{Path(__file__).resolve().parents[1] / 'conformance' / 'adapters' / 'jax_adapter.py'}:ADAPTER"
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
    import importlib.util

    spec = importlib.util.spec_from_file_location("posenc_jax_adapter", SPEC.rsplit(":", 1)[0])
    port = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(port)
    return port


def test_rope_apply_float16_expectation_names_the_rounding_of_x():
    """The float16 expectations say the failures come from holding x in float16: the reference's own
    float64 rotation of the float16-rounded x, rounded once to float16, fails the same case, and the
    port passes it only as the declared xfail."""
    from posenc_ref.rope import rope_apply

    class ExactOnRoundedX:
        name, dtype = "exact-on-float16-x", "float16"

        def run(self, op, params, inputs):
            x = np.asarray(inputs["x"]).astype(np.float16).astype(np.float64)
            return rope_apply(x, inputs["positions"], **params).astype(np.float16)

    case = "rope.apply.half.d64.base10000"
    only = lambda e: e["id"] == case  # noqa: E731
    assert not run_conformance(ExactOnRoundedX(), spec="exact", select=only).passed
    entries = _expectations("float16")
    assert entries and all(e.status == "xfail" for e in entries)
    with x64(False):
        adapter = load_adapter(SPEC).at_dtype("float16")
        assert not run_conformance(adapter, spec="jax", select=only).passed
        run = run_conformance(adapter, spec="jax", select=only, expectations=entries)
        assert run.passed and {r.status for r in run.results} == {"xfail"}


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
        checked = port.checks.attention(params, inputs)
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
    import importlib.util

    import jax.numpy as jnp

    spec = importlib.util.spec_from_file_location("posenc_jax_adapter", SPEC.rsplit(":", 1)[0])
    port = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(port)
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
