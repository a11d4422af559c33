"""Resampling learned position tables: kernel, weights, prefix rows, library parity, bad input."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import ndimage

from posenc_ref import SpecError
from posenc_ref.resample import (
    cubic_kernel,
    output_size_and_scale,
    resample_grid_2d,
    resample_table_1d,
    resample_weights,
)


@pytest.mark.parametrize("a", [-0.75, -0.5, -1.0])
def test_cubic_kernel_interpolates_and_its_taps_sum_to_one(a):
    assert cubic_kernel([0.0, 1.0, -1.0, 2.0, -2.0, 2.5], a=a).tolist() == [1.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    t = np.linspace(0.0, 1.0, 17)
    taps = cubic_kernel(t + 1, a=a) + cubic_kernel(t, a=a) + cubic_kernel(1 - t, a=a) + cubic_kernel(2 - t, a=a)
    np.testing.assert_allclose(taps, 1.0, rtol=0, atol=1e-15)


def test_cubic_kernel_known_values_by_hand():
    # a = -0.75, x = 0.5: 1.25/8 - 2.25/4 + 1 = 0.59375; x = 1.5: -0.75 (27/8 - 45/4 + 12 - 4) = -0.09375
    assert cubic_kernel([0.5, 1.5], a=-0.75).tolist() == [0.59375, -0.09375]
    # a = -0.5, x = 0.5: 1.5/8 - 2.5/4 + 1 = 0.5625; x = 1.5: -0.5 (0.125) = -0.0625
    assert cubic_kernel([0.5, 1.5], a=-0.5).tolist() == [0.5625, -0.0625]


@pytest.mark.parametrize("mode", [
    {}, {"antialias": "on", "cubic_a": -0.5}, {"kernel": "bilinear"}, {"coordinates": "align_corners"},
    {"kernel": "bilinear", "antialias": "on"},
])
def test_same_size_is_the_identity_and_rows_sum_to_one(mode):
    np.testing.assert_allclose(resample_weights(in_size=9, new_size=9, **mode), np.eye(9), rtol=0, atol=1e-15)
    for n, m in [(14, 16), (16, 14), (16, 5), (3, 11)]:
        np.testing.assert_allclose(resample_weights(in_size=n, new_size=m, **mode).sum(axis=1), 1.0, atol=1e-14)


def test_antialias_stretches_the_kernel_only_when_downsampling():
    down = resample_weights(in_size=16, new_size=7, antialias="on", cubic_a=-0.5)
    plain = resample_weights(in_size=16, new_size=7, cubic_a=-0.5)
    assert (np.count_nonzero(down, axis=1) > np.count_nonzero(plain, axis=1)).any()
    # upsampling: interior rows of the antialias path are the plain a=-0.5 rows; only the edges differ
    up_aa = resample_weights(in_size=14, new_size=16, antialias="on", cubic_a=-0.5)
    up = resample_weights(in_size=14, new_size=16, cubic_a=-0.5)
    np.testing.assert_allclose(up_aa[2:-2], up[2:-2], rtol=0, atol=1e-15)
    assert not np.allclose(up_aa[0], up[0])


def test_size_versus_scale_factor():
    assert output_size_and_scale(in_size=13, new_size=15) == (15, 13 / 15)
    m, scale = output_size_and_scale(in_size=13, new_size=15, size_from="scale_factor")
    assert m == 14  # floor(13 * (15/13)) = floor(14.999999999999998): dino#8
    m, scale = output_size_and_scale(in_size=14, new_size=16, size_from="scale_factor", scale_offset=0.1)
    assert m == 16 and scale == 1.0 / (16.1 / 14)  # same size as by size, other sampling positions
    by_size = resample_weights(in_size=14, new_size=16)
    by_factor = resample_weights(in_size=14, new_size=16, size_from="scale_factor", scale_offset=0.1)
    assert np.abs(by_size - by_factor).max() > 1e-3


def test_prefix_rows_are_kept_and_the_grid_is_row_major():
    rng = np.random.default_rng(0)
    table = rng.normal(size=(2 + 6 * 9, 3))
    out = resample_grid_2d(table, grid_height=6, grid_width=9, new_height=11, new_width=4, num_prefix_tokens=2)
    np.testing.assert_array_equal(out[:2], table[:2])
    grid = table[2:].reshape(6, 9, 3)
    w_h, w_w = resample_weights(in_size=6, new_size=11), resample_weights(in_size=9, new_size=4)
    separable = np.stack([w_h @ grid[:, :, c] @ w_w.T for c in range(3)], axis=-1)
    np.testing.assert_allclose(out[2:].reshape(11, 4, 3), separable, rtol=0, atol=1e-13)
    # one axis at a time through the 1-D op gives the same grid
    rows = np.stack([resample_table_1d(grid[h], new_length=4, num_prefix_tokens=0) for h in range(6)])
    cols = np.stack([resample_table_1d(rows[:, w], new_length=11, num_prefix_tokens=0) for w in range(4)], axis=1)
    np.testing.assert_allclose(out[2:].reshape(11, 4, 3), cols, rtol=0, atol=1e-13)


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 20), st.integers(1, 20), st.sampled_from(["off", "on"]), st.sampled_from([-0.75, -0.5]))
def test_constant_tables_stay_constant(n, m, antialias, a):
    table = np.vstack([[[5.0]], np.full((n, 1), 2.5)])
    out = resample_table_1d(table, new_length=m, antialias=antialias, cubic_a=a)
    assert out[0, 0] == 5.0 and out.shape == (1 + m, 1)
    np.testing.assert_allclose(out[1:], 2.5, rtol=0, atol=1e-13)


def test_align_corners_bilinear_matches_scipy_zoom_order_1():
    # big_vision resample_posemb: scipy.ndimage.zoom(order=1), grid_mode=False maps ends onto ends
    rng = np.random.default_rng(1)
    grid = rng.normal(size=(7, 7))
    zoomed = ndimage.zoom(grid, 12 / 7, order=1)
    ours = resample_grid_2d(grid.reshape(-1, 1), grid_height=7, grid_width=7, new_height=12, new_width=12,
                            num_prefix_tokens=0, kernel="bilinear", coordinates="align_corners")
    np.testing.assert_allclose(ours[:, 0].reshape(12, 12), zoomed, rtol=0, atol=1e-12)


SHAPES = [(14, 14, 16, 16), (16, 16, 14, 14), (6, 9, 11, 4), (7, 5, 3, 12)]


@pytest.mark.parametrize("h,w,nh,nw", SHAPES)
def test_antialias_path_matches_pil(h, w, nh, nw):
    image = pytest.importorskip("PIL.Image")
    grid = np.random.default_rng(h * w).normal(size=(h, w)).astype(np.float32)
    for kernel, pil_filter, a in (("bicubic", image.BICUBIC, -0.5), ("bilinear", image.BILINEAR, -0.75)):
        pil = np.asarray(image.fromarray(grid, mode="F").resize((nw, nh), pil_filter))
        ours = resample_grid_2d(grid.reshape(-1, 1), grid_height=h, grid_width=w, new_height=nh, new_width=nw,
                                num_prefix_tokens=0, kernel=kernel, cubic_a=a, antialias="on")
        np.testing.assert_allclose(ours[:, 0].reshape(nh, nw), pil, rtol=0, atol=2e-6)


@pytest.mark.parametrize("h,w,nh,nw", SHAPES)
def test_plain_path_matches_opencv(h, w, nh, nw):
    cv2 = pytest.importorskip("cv2")
    grid = np.random.default_rng(h + w).normal(size=(h, w)).astype(np.float32)
    for kernel, flag in (("bicubic", cv2.INTER_CUBIC), ("bilinear", cv2.INTER_LINEAR)):
        cv = cv2.resize(grid, (nw, nh), interpolation=flag)  # half-pixel centres, a = -0.75, replicated edges
        ours = resample_grid_2d(grid.reshape(-1, 1), grid_height=h, grid_width=w, new_height=nh, new_width=nw,
                                num_prefix_tokens=0, kernel=kernel)
        np.testing.assert_allclose(ours[:, 0].reshape(nh, nw), cv, rtol=0, atol=2e-6)


@settings(max_examples=80, deadline=None)
@given(st.integers(-1, 6), st.integers(-1, 4), st.integers(-1, 3), st.integers(-2, 5), st.integers(-2, 5),
       st.sampled_from(["off", "on"]), st.sampled_from(["half_pixel", "align_corners"]),
       st.sampled_from(["size", "scale_factor"]), st.sampled_from([0.0, 0.1, -0.1]))
def test_arbitrary_input_raises_only_spec_errors(rows, height, width, new_h, new_w, aa, coords, size_from, offset):
    try:
        resample_grid_2d(np.ones((max(rows, 0), 2)), grid_height=height, grid_width=width, new_height=new_h,
                         new_width=new_w, antialias=aa, coordinates=coords, size_from=size_from, scale_offset=offset)
    except SpecError:
        pass


@pytest.mark.parametrize(
    "call,category,fragment",
    [
        (lambda: resample_weights(in_size=6, new_size=0), "invalid_argument", "new_size must be >= 1"),
        (lambda: resample_table_1d(np.zeros((5, 2)), new_length=0), "invalid_argument", "new_length must be >= 1"),
        (lambda: resample_grid_2d(np.zeros((197, 2)), grid_height=14, grid_width=14, new_height=0, new_width=4),
         "invalid_argument", "new_height must be >= 1"),
        (lambda: resample_grid_2d(np.zeros((196, 2)), grid_height=14, grid_width=14, new_height=4, new_width=4),
         "invalid_shape", "table has 196 rows, expected num_prefix_tokens + grid_height * grid_width (14 x 14) = "
         "1 + 196 = 197"),
        (lambda: resample_grid_2d(np.zeros((197, 2)), grid_height=14, grid_width=14, new_height=4, new_width=4,
                                  num_prefix_tokens=0), "invalid_shape", "expected num_prefix_tokens + grid_height * "
         "grid_width (14 x 14) = 0 + 196 = 196"),
        (lambda: resample_table_1d(np.zeros((2, 2)), new_length=3, num_prefix_tokens=2), "invalid_shape",
         "at least one more"),
        (lambda: resample_weights(in_size=4, new_size=2, antialias="on", coordinates="align_corners"),
         "invalid_argument", "antialias='on' is defined here for coordinates='half_pixel' only"),
        (lambda: resample_weights(in_size=4, new_size=2, scale_offset=0.1), "invalid_argument",
         "scale_offset applies under size_from='scale_factor' only"),
        (lambda: resample_weights(in_size=4, new_size=2, kernel="lanczos"), "invalid_argument",
         "kernel must be one of 'bicubic', 'bilinear'"),
        (lambda: resample_weights(in_size=0, new_size=2), "invalid_argument", "in_size must be >= 1"),
        (lambda: resample_grid_2d(np.zeros(197), grid_height=14, grid_width=14, new_height=4, new_width=4),
         "invalid_shape", "table must have 2 dimension(s)"),
    ],
)
def test_bad_input(call, category, fragment):
    with pytest.raises(SpecError) as info:
        call()
    assert info.value.category == category
    assert fragment in str(info.value)


TORCH_MODES = [
    ({}, {"mode": "bicubic", "align_corners": False}),
    ({"antialias": "on", "cubic_a": -0.5}, {"mode": "bicubic", "align_corners": False, "antialias": True}),
    ({"kernel": "bilinear"}, {"mode": "bilinear", "align_corners": False}),
    ({"kernel": "bilinear", "antialias": "on"}, {"mode": "bilinear", "align_corners": False, "antialias": True}),
    ({"coordinates": "align_corners"}, {"mode": "bicubic", "align_corners": True}),
]


@pytest.mark.parametrize("ours,theirs", TORCH_MODES)
@pytest.mark.parametrize("h,w,nh,nw", SHAPES)
def test_matches_torch_interpolate_when_installed(ours, theirs, h, w, nh, nw):
    torch = pytest.importorskip("torch")
    grid = np.random.default_rng(h * nw).normal(size=(h, w))
    expected = torch.nn.functional.interpolate(torch.from_numpy(grid)[None, None], size=(nh, nw), **theirs)
    got = resample_grid_2d(grid.reshape(-1, 1), grid_height=h, grid_width=w, new_height=nh, new_width=nw,
                           num_prefix_tokens=0, **ours)
    np.testing.assert_allclose(got[:, 0].reshape(nh, nw), expected[0, 0].numpy(), rtol=0, atol=1e-10)


def test_matches_torch_scale_factor_when_installed():
    torch = pytest.importorskip("torch")
    grid = np.random.default_rng(3).normal(size=(14, 14))
    factor = (16 + 0.1) / 14  # DINO v1
    expected = torch.nn.functional.interpolate(torch.from_numpy(grid)[None, None], scale_factor=(factor, factor),
                                               mode="bicubic", align_corners=False)
    got = resample_grid_2d(grid.reshape(-1, 1), grid_height=14, grid_width=14, new_height=16, new_width=16,
                           num_prefix_tokens=0, size_from="scale_factor", scale_offset=0.1)
    np.testing.assert_allclose(got[:, 0].reshape(16, 16), expected[0, 0].numpy(), rtol=0, atol=1e-10)
