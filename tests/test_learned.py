"""Learned tables: seeded init, offsets, the out-of-range policy."""

import numpy as np
import pytest

from posenc_ref import SpecError
from posenc_ref.learned import learned_init, learned_lookup
from posenc_ref.sinusoidal import fairseq_positions


def test_init_is_seeded_normal():
    a = learned_init(512, 64, seed=7)
    np.testing.assert_array_equal(a, learned_init(512, 64, seed=7))
    assert not np.array_equal(a, learned_init(512, 64, seed=8))
    np.testing.assert_array_equal(a, np.random.default_rng(7).normal(0.0, 0.02, size=(512, 64)))
    assert abs(a.std() - 0.02) < 1e-3


def test_offsets():
    table = np.arange(10.0)[:, None] * np.ones((1, 3))
    assert learned_lookup(table, [0, 1])[:, 0].tolist() == [0.0, 1.0]  # BERT
    assert learned_lookup(table, [0, 1], offset=2)[:, 0].tolist() == [2.0, 3.0]  # BART/OPT
    rows = learned_lookup(table, np.array([[0, 4], [2, 2]]))
    assert rows.shape == (2, 2, 3)


def test_roberta_rows_come_from_fairseq_positions():
    positions = fairseq_positions([[1, 1, 5, 6]], padding_idx=1)  # rows 1, 1, 2, 3
    table = np.arange(6.0)[:, None]
    assert learned_lookup(table, positions)[0, :, 0].tolist() == [1.0, 1.0, 2.0, 3.0]


def test_out_of_range_raises_naming_position_and_table_size():
    table = np.zeros((20, 4))
    message = r"position 20 \(row 20 with offset=0\) at index \(1,\) is beyond the table of 20 rows"
    with pytest.raises(SpecError, match=message) as info:
        learned_lookup(table, [3, 20])
    assert info.value.category == "out_of_range"
    with pytest.raises(SpecError, match="row 21 with offset=2"):
        learned_lookup(table, [19], offset=2)
    assert learned_lookup(np.arange(20.0)[:, None], [19, 20, 10**9], out_of_range="clamp")[:, 0].tolist() == [19.0] * 3


@pytest.mark.parametrize(
    "table,positions,kwargs,category",
    [
        (np.zeros((4, 2, 1)), [0], {}, "invalid_shape"),
        (np.zeros((0, 2)), [0], {}, "invalid_shape"),
        (np.array([[np.nan, 0.0]]), [0], {}, "invalid_argument"),
        (np.zeros((4, 2)), [-1], {}, "invalid_argument"),
        (np.zeros((4, 2)), [], {}, "invalid_shape"),
        (np.zeros((4, 2)), [0], {"out_of_range": "wrap"}, "invalid_argument"),
        (np.zeros((4, 2)), [0], {"offset": -1}, "invalid_argument"),
    ],
)
def test_bad_input(table, positions, kwargs, category):
    with pytest.raises(SpecError) as info:
        learned_lookup(table, positions, **kwargs)
    assert info.value.category == category
    assert str(info.value).startswith("learned_lookup: ")
