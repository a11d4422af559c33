"""The mpmath oracle agrees with the float64 reference (within the float64 policy) on fresh inputs."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from posenc_ref import oracle
from posenc_ref.registry import get_op
from posenc_ref.sinusoidal import LADDERS, LAYOUTS
from posenc_ref.tolerance import compare, policy


def _agree(op_name, params, inputs):
    op = get_op(op_name)
    params = op.full_params(params)
    expected = oracle.expected(op_name, params, inputs)
    actual = op.call(params, inputs)
    for out in op.outputs:
        phase = out.phase(params, inputs) if out.phase else None
        verdict = compare(actual[out.name], expected[out.name], policy(out.tolerance, "float64"), phase)
        assert verdict.passed, (op_name, params, verdict)


@settings(max_examples=25, deadline=None)
@given(
    dim=st.integers(1, 12),
    ladder=st.sampled_from(LADDERS),
    layout=st.sampled_from(LAYOUTS),
    odd=st.sampled_from(("zero_pad_last", "sin_gets_extra")),
    positions=st.lists(st.integers(0, 10**7), min_size=1, max_size=4),
)
def test_sinusoid(dim, ladder, layout, odd, positions):
    if dim == 1 and odd == "zero_pad_last":
        return
    _agree("sinusoidal.table", {"dim": dim, "ladder": ladder, "layout": layout, "odd_width": odd},
           {"positions": np.array(positions)})


@settings(max_examples=15, deadline=None)
@given(quarter=st.integers(1, 4), order=st.sampled_from(("x_first", "y_first")),
       blocks=st.sampled_from(("sin_cos", "sin_sin_cos_cos", "interleaved")), ladder=st.sampled_from(LADDERS),
       coords=st.lists(st.tuples(st.integers(0, 10**5), st.integers(0, 10**5)), min_size=1, max_size=4))
def test_grid2d(quarter, order, blocks, ladder, coords):
    ys, xs = np.array(coords).T
    _agree("grid2d.sincos", {"dim": 4 * quarter, "axis_order": order, "block_layout": blocks, "ladder": ladder},
           {"ys": ys, "xs": xs})


def test_fairseq_and_learned():
    _agree("sinusoidal.fairseq", {"dim": 7, "padding_idx": 2}, {"tokens": np.array([[2, 5, 2, 6], [3, 3, 3, 3]])})
    table = np.random.default_rng(0).normal(size=(6, 3))
    _agree("learned.lookup", {"offset": 2, "out_of_range": "clamp"}, {"table": table, "positions": np.array([0, 3, 9])})


def test_oracle_rounds_once_to_nearest():
    # sin(1) correctly rounded; the exact value is 0.84147098480789650665...
    got = oracle.expected("sinusoidal.table", get_op("sinusoidal.table").full_params({"dim": 2}),
                          {"positions": np.array([1])})["table"]
    assert got[0, 0] == 0.8414709848078965


def test_every_float_op_has_an_oracle():
    from posenc_ref.registry import OPS

    assert {op.name for op in OPS} <= set(oracle.ORACLES)
    with pytest.raises(KeyError):
        oracle.expected("no.such.op", {}, {})
