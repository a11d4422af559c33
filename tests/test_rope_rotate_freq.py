"""rope_rotate_freq: rotation at caller-given inverse frequencies, against rope_apply bit for bit."""

import numpy as np
import pytest

from posenc_ref.errors import SpecError
from posenc_ref.rope import rope_apply, rope_rotate_freq, scaled_frequencies

LONG = [0, 1, 4095, 131071, 10**6]
SETTINGS = [
    {},
    {"layout": "interleaved", "x_layout": "BTHD"},
    {"rotary_dim": 16, "attention_factor": 1.25},
    {"rotary_dim": 16, "partial": "proportional", "layout": "interleaved"},
    {"base": 150000.0, "rope_type": "yarn", "factor": 32.0, "original_max_position": 4096, "beta_fast": 32.0,
     "beta_slow": 1.0, "truncate": False},
    {"rope_type": "llama3", "base": 5e5, "factor": 8.0, "original_max_position": 8192, "low_freq_factor": 1.0,
     "high_freq_factor": 4.0, "x_layout": "BTHD", "attention_factor": 0.5},
]


def _split(settings):
    apply_only = ("base", "rotary_dim", "partial", "attention_factor", "layout", "x_layout")
    scaling = {k: v for k, v in settings.items() if k not in apply_only}
    return scaling, {k: settings[k] for k in ("layout", "x_layout") if k in settings}


@pytest.mark.parametrize("settings", SETTINGS, ids=lambda s: s.get("rope_type", "default") + str(len(s)))
def test_equals_rope_apply_at_its_frequencies(settings):
    """With the frequencies and factor of scaled_frequencies, the result is rope_apply's, bit for bit."""
    scaling, conventions = _split(settings)
    shape = (1, 5, 2, 32) if settings.get("x_layout") == "BTHD" else (1, 2, 5, 32)
    x = np.random.default_rng(7).normal(size=shape)
    _, w, factor = scaled_frequencies(32, base=settings.get("base", 10000.0), rotary_dim=settings.get("rotary_dim"),
                                      partial=settings.get("partial", "prefix"), func="test", **scaling)
    a = settings.get("attention_factor", 1.0) * factor
    got = rope_rotate_freq(x, LONG, w, attention_factor=a, **conventions)
    assert got.tobytes() == rope_apply(x, LONG, **settings).tobytes()


def test_pass_through_and_zero_frequencies():
    """Channels past 2P are copied untouched (not scaled); a zero frequency only scales its pair."""
    x = np.random.default_rng(1).normal(size=(1, 1, 3, 10))
    y = rope_rotate_freq(x, [0, 5, 4095], [0.5, 0.0, 0.0], attention_factor=2.0)
    assert y[..., 6:].tobytes() == x[..., 6:].tobytes()
    np.testing.assert_array_equal(y[..., [1, 2, 4, 5]], 2.0 * x[..., [1, 2, 4, 5]])


def test_reversed_frequencies_differ():
    x = np.random.default_rng(2).normal(size=(1, 1, 2, 8))
    w = np.array([1.0, 0.1, 0.01, 0.001])
    assert not np.allclose(rope_rotate_freq(x, [3, 9], w), rope_rotate_freq(x, [3, 9], w[::-1]))


@pytest.mark.parametrize("inv_freq,kwargs,words", [
    (np.ones((2, 2)), {}, ("inv_freq", "(2, 2)")),
    ([1.0, -0.5], {}, ("inv_freq", "-0.5", ">= 0")),
    ([1.0, np.nan], {}, ("inv_freq", "nan", "finite")),
    ([], {}, ("inv_freq", "empty")),
    ([1.0] * 5, {}, ("2P = 10", "head dim 8")),
    ([1.0], {"layout": "interleaved_to_half"}, ("layout", "interleaved_to_half")),
    ([1.0], {"attention_factor": 0.0}, ("attention_factor",)),
    ([1.0], {"x_layout": "TBHD"}, ("x_layout",)),
])
def test_bad_input_names_the_function_argument_and_value(inv_freq, kwargs, words):
    with pytest.raises(SpecError, match="rope_rotate_freq") as info:
        rope_rotate_freq(np.ones((1, 1, 2, 8)), [0, 1], inv_freq, **kwargs)
    assert all(w in str(info.value) for w in words), str(info.value)


def test_positions_must_match_t():
    with pytest.raises(SpecError, match="positions") as info:
        rope_rotate_freq(np.ones((1, 1, 2, 8)), [0, 1, 2], [1.0])
    assert info.value.category == "invalid_shape"
