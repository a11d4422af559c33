"""2-D sin-cos grids: structure, library presets, bad input."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from posenc_ref import SpecError
from posenc_ref.grid2d import AXIS_ORDERS, BLOCK_LAYOUTS, grid_coords, grid_sincos_2d, grid_sincos_2d_angles
from posenc_ref.sinusoidal import sinusoidal_table


def test_mae_is_x_block_then_y_block_of_1d_tables():
    ys, xs = grid_coords(3, 5)
    grid = grid_sincos_2d(ys, xs, dim=16)
    one_d = lambda p: sinusoidal_table(p, dim=8, layout="concat_sin_cos")  # noqa: E731  per-axis [sin|cos]
    np.testing.assert_array_equal(grid, np.concatenate([one_d(xs), one_d(ys)], axis=-1))


def test_big_vision_uses_the_t2t_denominator():
    ys, xs = grid_coords(2, 3)
    grid = grid_sincos_2d(ys, xs, dim=16, ladder="t2t")
    w = [10000 ** (-k / 3) for k in range(4)]  # k / (D/4 - 1)
    np.testing.assert_allclose(grid[5, :4], [math.sin(2 * wk) for wk in w], atol=1e-15)  # x = 2


def test_detr_interleaves_and_puts_y_first():
    grid = grid_sincos_2d([1], [2], dim=8, axis_order="y_first", block_layout="interleaved")[0]
    w = [1.0, 0.01]
    expect = [math.sin(w[0]), math.cos(w[0]), math.sin(w[1]), math.cos(w[1]),
              math.sin(2 * w[0]), math.cos(2 * w[0]), math.sin(2 * w[1]), math.cos(2 * w[1])]
    np.testing.assert_allclose(grid, expect, atol=1e-15)


def test_timm_default_block_order():
    grid = grid_sincos_2d([1], [2], dim=8, axis_order="y_first", block_layout="sin_sin_cos_cos")[0]
    w = [1.0, 0.01]
    expect = [math.sin(w[0]), math.sin(w[1]), math.sin(2 * w[0]), math.sin(2 * w[1]),
              math.cos(w[0]), math.cos(w[1]), math.cos(2 * w[0]), math.cos(2 * w[1])]
    np.testing.assert_allclose(grid, expect, atol=1e-15)


def test_non_square_grid_tells_axes_apart():
    ys, xs = grid_coords(3, 5)
    a = grid_sincos_2d(ys, xs, dim=16, axis_order="x_first")
    b = grid_sincos_2d(ys, xs, dim=16, axis_order="y_first")
    assert not np.allclose(a, b)
    assert grid_coords(2, 3, origin=1)[0].tolist() == [1, 1, 1, 2, 2, 2]


@settings(max_examples=40, deadline=None)
@given(
    quarter=st.integers(1, 16),
    order=st.sampled_from(AXIS_ORDERS),
    blocks=st.sampled_from(BLOCK_LAYOUTS),
    ys=st.lists(st.integers(0, 5000), min_size=1, max_size=6),
)
def test_properties(quarter, order, blocks, ys):
    xs = ys[::-1]
    dim = 4 * quarter
    grid = grid_sincos_2d(ys, xs, dim=dim, axis_order=order, block_layout=blocks)
    angles = grid_sincos_2d_angles(ys, xs, dim=dim, axis_order=order, block_layout=blocks)
    np.testing.assert_allclose((grid**2).sum(-1), dim / 2, rtol=1e-12)
    assert np.allclose(np.minimum(np.abs(grid - np.sin(angles)), np.abs(grid - np.cos(angles))), 0, atol=1e-12)


@pytest.mark.parametrize(
    "ys,xs,kwargs,match,category",
    [
        ([0], [0], {"dim": 6}, "dim must be a multiple of 4, got dim=6", "invalid_argument"),
        ([0, 1], [0], {"dim": 8}, "ys and xs must have the same shape", "invalid_shape"),
        ([0], [0], {"dim": 8, "axis_order": "h"}, "axis_order must be one of 'x_first', 'y_first'", "invalid_argument"),
        ([-1], [0], {"dim": 8}, "ys must be >= 0", "invalid_argument"),
        ([0.5], [0], {"dim": 8}, "ys must be whole numbers", "invalid_argument"),
    ],
)
def test_bad_input(ys, xs, kwargs, match, category):
    with pytest.raises(SpecError, match=match) as info:
        grid_sincos_2d(ys, xs, **kwargs)
    assert info.value.category == category
    with pytest.raises(SpecError, match="height must be >= 1"):
        grid_coords(0, 3)
