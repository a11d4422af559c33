"""The tolerance model's building blocks."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from posenc_ref.runner.emulation import round_bfloat16
from posenc_ref.tolerance import DTYPES, POLICIES, compare, eps, policy, ulp


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
