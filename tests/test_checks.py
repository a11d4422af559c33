"""The debugging checks: each verdict on inputs whose answer is known by hand, and every bad input."""

import math

import numpy as np
import pytest

from posenc_ref import learned_init, learned_lookup, sinusoidal_table
from posenc_ref.checks import extrapolation_check, order_check, scale_check
from posenc_ref.errors import SpecError


def test_scale_check_ratio_by_hand():
    # Sinusoid rows have norm sqrt(d/2) exactly; rows of ones have norm sqrt(d).
    dim = 8
    result = scale_check(np.ones((3, dim)), sinusoidal_table(np.arange(5), dim=dim))
    assert result.embedding_norm == pytest.approx(math.sqrt(dim))
    assert result.encoding_norm == pytest.approx(math.sqrt(dim / 2))
    assert result.ratio == pytest.approx(math.sqrt(0.5)) and result.passed


def test_scale_check_flags_small_embeddings():
    # BERT-style initial embeddings (std 0.02) against a unit-amplitude sinusoid at d = 512.
    result = scale_check(learned_init(100, 512, seed=1), sinusoidal_table(np.arange(64), dim=512))
    assert result.ratio > 30 and not result.passed
    assert scale_check([[3.0, 4.0]], [[0.0, 5.0]], max_ratio=1.0).passed  # equal norms pass at 1.0


@pytest.mark.parametrize(("embeddings", "encodings", "kwargs", "category"), [
    ([[1.0, 0.0]], [[1.0, 0.0, 0.0]], {}, "invalid_shape"),
    ([1.0, 0.0], [[1.0, 0.0]], {}, "invalid_shape"),
    ([[0.0, 0.0]], [[1.0, 0.0]], {}, "invalid_argument"),
    ([[1.0, np.nan]], [[1.0, 0.0]], {}, "invalid_argument"),
    ([[1.0, 0.0]], [[1.0, 0.0]], {"max_ratio": 0.0}, "invalid_argument"),
])
def test_scale_check_errors(embeddings, encodings, kwargs, category):
    with pytest.raises(SpecError, match="scale_check") as info:
        scale_check(embeddings, encodings, **kwargs)
    assert info.value.category == category


def test_extrapolation_learned_table_raises():
    table = learned_init(16, 4, seed=3)
    result = extrapolation_check(lambda p: learned_lookup(table, p), trained_length=16)
    assert result.evaluated_length == 32 and not result.passed
    assert result.error is not None and "beyond the table of 16 rows" in result.error


def test_extrapolation_clamped_table_repeats_last_row():
    table = learned_init(16, 4, seed=3)
    result = extrapolation_check(lambda p: learned_lookup(table, p, out_of_range="clamp"), trained_length=16, factor=3)
    assert (result.evaluated_length, result.repeated_rows, result.error, result.passed) == (48, 32, None, False)


def test_extrapolation_sinusoid_continues():
    result = extrapolation_check(lambda p: sinusoidal_table(p, dim=16), trained_length=512)
    assert result.passed and (result.error, result.nonfinite_rows, result.repeated_rows) == (None, 0, 0)


def test_extrapolation_nonfinite_rows_counted():
    def nan_fill(positions):
        rows = np.ones((positions.size, 2))
        rows[positions >= 10] = np.nan
        return rows

    result = extrapolation_check(nan_fill, trained_length=10, factor=1.5)
    assert (result.evaluated_length, result.nonfinite_rows, result.passed) == (15, 5, False)


def test_extrapolation_errors():
    with pytest.raises(TypeError, match="callable"):
        extrapolation_check("table", trained_length=4)  # type: ignore[arg-type]
    with pytest.raises(SpecError, match="factor must be > 1"):
        extrapolation_check(lambda p: np.zeros((p.size, 1)), trained_length=4, factor=1.0)
    with pytest.raises(SpecError, match="trained_length must be >= 1"):
        extrapolation_check(lambda p: np.zeros((p.size, 1)), trained_length=0)
    with pytest.raises(SpecError, match=r"encode must return shape \(4, D\)") as info:
        extrapolation_check(lambda p: np.zeros(p.size), trained_length=4)
    assert info.value.category == "invalid_shape"
    with pytest.raises(SpecError, match="beyond the table"):  # an error inside the trained range propagates
        extrapolation_check(lambda p: learned_lookup(np.zeros((2, 1)), p), trained_length=4)


def test_order_check_without_position_cannot_tell_copies_apart():
    rng = np.random.default_rng(0)
    tokens = rng.normal(size=(8, 6))
    tokens[5] = tokens[0]
    result = order_check(tokens, w_q=rng.normal(size=(6, 4)), w_k=rng.normal(size=(6, 4)))
    assert result.max_difference == 0.0 and not result.passed
    with_pe = order_check(tokens, encodings=sinusoidal_table(np.arange(8), dim=6))
    assert with_pe.passed and with_pe.max_difference > 1e-3


def test_order_check_weights_by_hand():
    # x0 = [1, 0] + [0, 1] = [1, 1], x1 = [1, 0] + [1, 0] = [2, 0]; scores / sqrt(2):
    # copy 0: [2, 2] -> weights [1/2, 1/2]; copy 1: [2, 4] -> weights [1, e^sqrt2] / (1 + e^sqrt2).
    result = order_check([[1.0, 0.0], [1.0, 0.0]], encodings=[[0.0, 1.0], [1.0, 0.0]], first=0, second=1)
    e = math.exp(math.sqrt(2))
    assert result.weights_first.tolist() == pytest.approx([0.5, 0.5])
    assert result.weights_second.tolist() == pytest.approx([1 / (1 + e), e / (1 + e)])
    assert result.max_difference == pytest.approx(e / (1 + e) - 0.5)


@pytest.mark.parametrize(("kwargs", "category", "match"), [
    ({"tokens": [[1.0], [2.0]], "first": 0, "second": 1}, "invalid_argument", "must be the same token"),
    ({"tokens": [[1.0], [1.0]], "first": 0, "second": 2}, "out_of_range", "second=2 is beyond"),
    ({"tokens": [[1.0], [1.0]], "first": 1, "second": 1}, "invalid_argument", "must differ"),
    ({"tokens": [1.0, 1.0], "first": 0, "second": 1}, "invalid_shape", "dimension"),
    ({"tokens": [[1.0], [1.0]], "first": 0, "second": 1, "encodings": [[1.0]]}, "invalid_shape", "encodings"),
    ({"tokens": [[1.0], [1.0]], "first": 0, "second": 1, "w_q": [[1.0], [1.0]]}, "invalid_shape", "w_q must have 1"),
    ({"tokens": [[1.0], [1.0]], "first": 0, "second": 1, "w_k": [[1.0, 2.0]]}, "invalid_shape", "same number"),
    ({"tokens": [[1.0], [1.0]], "first": 0, "second": 1, "atol": -1.0}, "invalid_argument", "atol"),
])
def test_order_check_errors(kwargs, category, match):
    tokens = kwargs.pop("tokens")
    with pytest.raises(SpecError, match=match) as info:
        order_check(tokens, **kwargs)
    assert info.value.category == category
