"""The tolerance scales: machine-independent arithmetic, and agreement with the records they serve."""

import numpy as np
import pytest

from posenc_ref.records.resample import MODE_PARAMS
from posenc_ref.scales import _exact
from posenc_ref.scales import resample as resample_scales


@pytest.mark.parametrize("subscripts, shapes", [
    ("ij,jk->ik", [(3, 5), (5, 4)]),
    ("hqd,hkd->hqk", [(2, 3, 7), (2, 4, 7)]),
    ("ph,hwd,qw->pqd", [(4, 3), (3, 5, 2), (6, 5)]),
    ("bhqkp->bhqk", [(1, 2, 3, 4, 5)]),
    ("bhqp,bhkp,bhqkp->bhqk", [(1, 2, 3, 4), (1, 2, 5, 4), (1, 2, 3, 5, 4)]),
])
def test_einsum_is_numpy_einsum_in_a_fixed_order(subscripts, shapes):
    rng = np.random.default_rng(1)
    operands = [rng.normal(size=s) for s in shapes]
    got = _exact.einsum(subscripts, *operands)
    want = np.einsum(subscripts, *operands)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)


def test_einsum_adds_the_terms_one_at_a_time_in_row_major_order():
    # 1 + 2**-53 + 2**-53: left to right each tiny term is lost; summed first they are not
    a = np.array([[1.0, 2.0**-53, 2.0**-53]])
    b = np.ones((3, 1))
    assert _exact.einsum("ij,jk->ik", a, b)[0, 0] == 1.0
    assert _exact.einsum("ij,jk->ik", a[:, ::-1], b)[0, 0] == 1.0 + 2.0**-52


def test_transcendentals_are_correctly_rounded():
    import mpmath

    x = np.array([0.5, 1e-3, 3.0, 1e5, 987654.321])
    with mpmath.workdps(60):
        for fn, mp in ((_exact.cos, mpmath.cos), (_exact.sin, mpmath.sin), (_exact.log, mpmath.log)):
            assert fn(x).tolist() == [float(mp(mpmath.mpf(v))) for v in x.tolist()]
        assert _exact.power(10000.0, -x[:3]).tolist() == [float(mpmath.power(10000, -mpmath.mpf(v)))
                                                          for v in x[:3].tolist()]
    assert _exact.power(2.0, np.array([-3.0, 0.5])).tolist() == [0.125, float(np.sqrt(2.0))]
    assert _exact.hypot(3.0, 4.0).tolist() == 5.0


def test_resample_mode_names_are_the_records_mode_params():
    assert resample_scales._MODE_NAMES == tuple(p.name for p in MODE_PARAMS)
