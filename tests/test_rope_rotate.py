"""rope_rotate, the plain formula, against the memory-lean path rope_apply and rope_scores use."""

import cmath

import numpy as np
import pytest

from posenc_ref.errors import SpecError
from posenc_ref.rope import rope_apply, rope_cos_sin, rope_rotate, rope_scores, rotary_frequencies

RNG = np.random.default_rng(11)


def tables(positions, w, factor):
    """``a cos(p w)`` and ``a sin(p w)``, (T, P), in the order the spec writes them."""
    angle = np.asarray(positions).astype(np.float64)[:, None] * w
    return factor * np.cos(angle), factor * np.sin(angle)


@pytest.mark.parametrize("layout", ["half", "interleaved", "interleaved_to_half"])
@pytest.mark.parametrize("rotary_dim", [None, 6])
@pytest.mark.parametrize("factor", [1.0, 1.2772588722239782])
def test_rope_apply_equals_the_plain_formula_bit_for_bit(layout, rotary_dim, factor):
    x = RNG.normal(size=(2, 3, 5, 10)) * 10.0 ** RNG.integers(-3, 4, size=(2, 3, 5, 10))
    positions = np.array([0, 1, 7, 4096, 10**6])
    space, w = rotary_frequencies(10, base=10000.0, rotary_dim=rotary_dim, partial="prefix", func="test")
    cos, sin = tables(positions, w, factor)
    plain = rope_rotate(x, cos, sin, layout=layout)
    lean = rope_apply(x, positions, rotary_dim=rotary_dim, layout=layout, attention_factor=factor)
    assert plain.tobytes() == lean.tobytes()


def test_rope_scores_rotate_with_the_plain_formula():
    q, k = RNG.normal(size=(1, 2, 4, 8)), RNG.normal(size=(1, 2, 3, 8))
    qp, kp = np.array([3, 5, 8, 13]), np.array([0, 2, 9])
    w = rotary_frequencies(8, base=500.0, rotary_dim=None, partial="prefix", func="test")[1]
    qr = rope_rotate(q, *tables(qp, w, 1.0), layout="interleaved")
    kr = rope_rotate(k, *tables(kp, w, 1.0), layout="interleaved")
    expected = np.einsum("bhqd,bhkd->bhqk", qr, kr)
    assert rope_scores(q, k, qp, kp, base=500.0, layout="interleaved").tobytes() == expected.tobytes()


def test_tables_of_rope_cos_sin_plug_in_directly():
    x = RNG.normal(size=(1, 1, 3, 4))
    w = rotary_frequencies(4, base=100.0, rotary_dim=None, partial="prefix", func="test")[1]
    cos, sin = rope_cos_sin([0, 1, 2], w, width="half")
    assert rope_rotate(x, cos, sin).tobytes() == rope_apply(x, [0, 1, 2], base=100.0).tobytes()


@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_the_rotation_is_complex_multiplication(layout):
    """(u + iv) e^{i theta}, pair by pair, with Python's complex arithmetic as the independent check."""
    x = RNG.normal(size=(3, 6))
    theta = RNG.uniform(-4, 4, size=(3, 3))
    out = rope_rotate(x, np.cos(theta), np.sin(theta), layout=layout)
    for row in range(3):
        for i in range(3):
            a, b = (i, i + 3) if layout == "half" else (2 * i, 2 * i + 1)
            z = complex(x[row, a], x[row, b]) * cmath.exp(1j * theta[row, i])
            assert out[row, a] == pytest.approx(z.real, abs=1e-14)
            assert out[row, b] == pytest.approx(z.imag, abs=1e-14)


def test_channels_past_the_tables_pass_through_and_inputs_are_not_modified():
    x = RNG.normal(size=(2, 7))
    before = x.copy()
    out = rope_rotate(x, [[0.6, 0.8]], [[0.8, -0.6]])
    assert np.array_equal(x, before)
    assert out[:, 4:].tobytes() == x[:, 4:].tobytes()


@pytest.mark.parametrize(("args", "kwargs", "fragment"), [
    (([[1.0, 2.0]], [[1.0]], [[1.0, 0.0]]), {}, "cos and sin must have the same shape"),
    (([[1.0, 2.0]], [[1.0, 1.0]], [[0.0, 0.0]]), {}, "at least 2P = 4 channels"),
    (([[1.0, 2.0]] * 2, [[1.0]] * 3, [[0.0]] * 3), {}, "must broadcast to the pairs of x"),
    (([[np.nan, 2.0]], [[1.0]], [[0.0]]), {}, "x must be finite"),
    (([[1.0, 2.0]], [[np.inf]], [[0.0]]), {}, "cos must be finite"),
    (([[1.0, 2.0]], [[1.0]], [[0.0]]), {"layout": "rotate_half"}, "layout"),
    (([[1e300, 1e300]], [[1e300]], [[1e300]]), {}, "overflows float64"),
])
def test_bad_input_is_a_spec_error_naming_the_problem(args, kwargs, fragment):
    with pytest.raises(SpecError, match="rope_rotate") as info:
        rope_rotate(*args, **kwargs)
    assert fragment in str(info.value)
