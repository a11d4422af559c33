"""The tolerance model's building blocks."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from posenc_ref.corpus import Corpus
from posenc_ref.registry import get_op
from posenc_ref.runner.emulation import round_bfloat16
from posenc_ref.tolerance import DTYPES, INPUT_C, POLICIES, compare, eps, policy, ulp, unit_roundoff


@given(st.floats(min_value=-1e30, max_value=1e30, allow_nan=False))
def test_ulp_matches_numpy_spacing(x):
    for name in ("float64", "float32", "float16"):
        dt = np.dtype(name).type
        with np.errstate(over="ignore"):
            value = float(dt(x))  # the nearest representable value
        if np.isfinite(value) and abs(value) < float(np.finfo(dt).max):
            assert ulp(value, name) == float(np.spacing(dt(abs(value)))), (name, value)


def test_ulp_at_representable_points():
    for name in ("float64", "float32", "float16"):
        dt = np.dtype(name).type
        for x in (0.0, 1.0, 0.75, 3.0, 1e-3, float(np.finfo(dt).tiny)):
            assert ulp(x, name) == float(np.spacing(dt(x))), (name, x)
    assert ulp(1.0, "bfloat16") == 2.0**-7
    assert eps("float32") == float(np.finfo(np.float32).eps)


def test_bfloat16_rounding_is_nearest_even():
    x = np.array([1.0, 1.0 + 2**-8, 1.0 + 3 * 2**-8, 1.00390625 + 1e-6, -2.5], dtype=np.float32)
    assert round_bfloat16(x).tolist() == [1.0, 1.0, 1.015625, 1.0078125, -2.5]


def test_every_class_and_dtype_has_a_policy():
    for cls in ("exact", "ulp", "phase", "normwise", "reduction", "power"):
        for dt in DTYPES:
            assert policy(cls, dt).dtype == dt
    with pytest.raises(ValueError):
        policy("no_such_class", "float32")
    # narrow dtypes judge their phases with float32's epsilon: angles must be float32 or better
    assert POLICIES[("phase", "float16")].phase_dtype == "float32"


def test_phase_floor_grows_with_the_phase():
    pol = policy("phase", "float32")
    small = pol.allowed(np.array([0.5]), np.array([1.0]))[0]
    large = pol.allowed(np.array([0.5]), np.array([1e6]))[0]
    assert large / small > 1e4


def test_reduction_floor_scales_with_the_error_scale_not_the_result():
    pol = policy("reduction", "float32")
    # a score that cancels to ~0 from terms of size 100 over 64 products: m = (64 + 2) * 6400
    m = np.array([66.0 * 6400.0])
    allowed = pol.allowed(np.array([1e-6]), m)[0]
    assert allowed == pytest.approx(2 * float(ulp(1e-6, "float32")) + eps("float32") * 66.0 * 6400.0)
    assert compare([3e-3], [0.0], pol, m).passed and not compare([1.0], [0.0], pol, m).passed
    assert POLICIES[("reduction", "bfloat16")].phase_dtype == "float32"
    with pytest.raises(ValueError, match="error scale"):
        pol.allowed(np.array([1.0]))


def test_power_floor_is_relative_and_grows_with_the_log():
    pol = policy("power", "float32")
    small = pol.allowed(np.array([1e-6]))[0] / 1e-6
    near_one = pol.allowed(np.array([0.75]))[0] / 0.75
    assert small > 2 * near_one  # |ln 1e-6| = 13.8: a longer exponent, more rounding
    assert pol.allowed(np.array([0.0]))[0] < 1e-40  # a zero frequency must stay (nearly) exact
    assert small < 1e-4  # still far below a bfloat16 rounding (2**-9 relative)


def test_compare_reports_worst_element_and_nonfinite_rules():
    pol = policy("ulp", "float64")
    verdict = compare([1.0, 2.0 + 1e-9, 3.0], [1.0, 2.0, 3.0], pol)
    assert not verdict.passed and verdict.worst_index == (1,) and verdict.n_bad == 1
    assert math.isclose(verdict.abs_error, 1e-9, rel_tol=1e-6)
    assert compare([-np.inf, 1.0], [-np.inf, 1.0], pol).passed
    assert not compare([0.0, 1.0], [-np.inf, 1.0], pol).passed
    assert not compare([np.nan], [1.0], pol).passed
    exact = compare(np.array([1, 2]), np.array([1, 3]), policy("exact", "float64"))
    assert not exact.passed and exact.worst_index == (1,)
    assert compare([1.0], [1.0], pol).headroom == math.inf


def test_input_term_adds_c_input_u_s_at_narrow_dtypes_only():
    s = np.array([1000.0])
    for cls in ("phase", "reduction"):
        for dt in DTYPES:
            pol = policy(cls, dt)
            base = pol.allowed(np.array([0.0]), np.array([1.0]))[0]
            with_term = pol.allowed(np.array([0.0]), np.array([1.0]), s)[0]
            assert with_term - base == pytest.approx(INPUT_C[dt] * unit_roundoff(dt) * 1000.0, rel=1e-12, abs=0.0)
    assert INPUT_C["float64"] == INPUT_C["float32"] == 0.0
    assert INPUT_C["float16"] >= 2.0 and INPUT_C["bfloat16"] >= 2.0  # twice the first-order bound u * s
    assert unit_roundoff("bfloat16") == 2.0**-8 and unit_roundoff("float16") == 2.0**-11
    # the normwise class already scales with eps_D: no input term
    norm = policy("normwise", "float16")
    assert norm.c_input == 0.0 and "u(" not in norm.describe()


def test_input_term_in_compare_and_describe():
    pol = policy("phase", "float16")
    assert pol.describe() == "2 ulp(float16) + 16 * eps(float32) * (1 + |theta|) + 2 * u(float16) * s"
    assert policy("reduction", "bfloat16").describe() == "2 ulp(bfloat16) + 1 * eps(float32) * m + 2 * u(bfloat16) * s"
    assert policy("phase", "float32").describe() == "2 ulp(float32) + 16 * eps(float32) * (1 + |theta|)"
    # a float16 score that cancels to ~0 from terms of size ~100: inputs rounded to float16 move it by ~0.1
    scale = np.array([2 * 64 * 100.0])
    assert not compare([0.05], [0.0], pol, [1.0]).passed  # no input scale, no term: the old policy
    assert compare([0.05], [0.0], pol, [1.0], input_scale=scale).passed
    assert not compare([100.0], [0.0], pol, [1.0], input_scale=scale).passed  # the size of a term still fails
    assert compare([0.05], [0.0], pol, [1.0], scale).allowed == pytest.approx(
        2 * float(ulp(0.0, "float16")) + 16 * eps("float32") * 2 + 2 * 2.0**-11 * 12800.0)
    assert not compare([0.05], [0.0], policy("phase", "float32"), [1.0], scale).passed  # float32: no term


def test_float32_floors_already_cover_float32_inputs(corpus_dir):
    """c_input = 0 at float32: the existing floors hold 2 u_32 s at every element of the corpus."""
    loaded, checked = Corpus(corpus_dir), 0
    for entry in loaded.cases:
        if entry["expected_error"]:
            continue
        golden = loaded.case(entry)
        for name, out in golden.outputs.items():
            if out.input_scale is None:
                continue
            expected = out.expected.astype(np.float64)
            floor = policy(out.tolerance, "float32").allowed(np.where(np.isfinite(expected), expected, 0.0), out.phase)
            need = 2.0 * unit_roundoff("float32") * np.broadcast_to(out.input_scale, expected.shape)
            assert (floor >= need).all(), (entry["id"], name)
            checked += 1
    assert checked > 50


def test_input_scales_bound_the_effect_of_rounding_the_value_inputs():
    """To first order, rounding every value input to D moves an output by at most u_D * s."""
    from posenc_ref.registry import OPS
    from posenc_ref.runner.adapters import round_value_inputs

    ops = [op for op in OPS if any(out.input_scale for out in op.outputs)]
    assert {op.name for op in ops} >= {"rope.apply", "rope.scores", "rope.xpos", "shaw.logits", "shaw.output",
                                       "deberta.scores", "transformer_xl.score", "resample.table_1d",
                                       "resample.grid_2d"}
    for op in ops:
        for case in op.cases:
            if case.error:
                continue
            params, inputs = op.full_params(case.params), case.make_inputs()
            exact = op.call(params, inputs)
            for dt in ("float16", "bfloat16"):
                moved = op.call(params, round_value_inputs(op.name, inputs, dt))
                for out in op.outputs:
                    assert out.input_scale is not None
                    scale = np.broadcast_to(out.input_scale(params, inputs), exact[out.name].shape)
                    bound = 1.001 * unit_roundoff(dt) * scale + 1e-300
                    assert (np.abs(moved[out.name] - exact[out.name]) <= bound).all(), (case.id, out.name, dt)


def test_value_inputs_never_include_what_angles_are_computed_from():
    for name in ("rope.cos_sin", "sinusoidal.table", "rope.longrope_inv_freq", "alibi.bias"):
        assert get_op(name).value_inputs == ()
    assert get_op("rope.apply").value_inputs == ("x",)
