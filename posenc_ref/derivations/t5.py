r"""Claims about T5 relative-position buckets (:mod:`posenc_ref.t5`)."""

from __future__ import annotations

import numpy as np
import sympy

from posenc_ref.derivations._claim import Claim, Derivation
from posenc_ref.t5 import t5_bucket

# --- T5 ------------------------------------------------------------------------------------

_T5_DOMAIN = ((8, 16), (16, 32), (32, 64), (32, 128), (64, 256), (128, 512))
_SPAN = 2048


def _t5_reads() -> tuple[list[int], list[int]]:
    """(violations, expected zero) over the whole domain: monotone in |r|, exact near zero."""
    violations: list[int] = []
    for buckets, max_distance in _T5_DOMAIN:
        for direction in ("bidirectional", "unidirectional"):
            r = np.arange(-_SPAN, _SPAN + 1)
            got = t5_bucket(r, num_buckets=buckets, max_distance=max_distance, direction=direction)
            half = buckets // 2 if direction == "bidirectional" else buckets
            exact = half // 2
            side = r > 0 if direction == "bidirectional" else r <= 0
            for sign_side in (side, ~side) if direction == "bidirectional" else (side,):
                distance = np.abs(r[sign_side])
                values = got[sign_side][np.argsort(distance)]
                violations.append(int((np.diff(values) < 0).sum()))  # monotone non-decreasing in |r|
                near = np.sort(distance)[np.sort(distance) < exact]
                offset = values[: near.size] - near  # the exact region: bucket = |r| (+ half on one side)
                violations.append(int((offset != offset[0]).sum()) if near.size else 0)
                violations.append(int(values.max() - values.min() > half - 1))  # one side spans <= half buckets
    return violations, [0] * len(violations)


def _t5() -> Derivation:
    violations, zeros = _t5_reads()
    return Derivation(sympy.Matrix(violations), sympy.Matrix(zeros),
                      {"num_buckets, max_distance": f"{_T5_DOMAIN}", "r": f"|r| <= {_SPAN}, both directions"},
                      lambda e: e, note="exhaustive: the number of violations of each property is 0")


def _t5_tie_back() -> None:
    # the anchor row of the reference notes: bidirectional (32, 128), r = -10..10
    got = t5_bucket(np.arange(-10, 11)).tolist()
    assert got == [8, 8, 8, 7, 6, 5, 4, 3, 2, 1, 0, 17, 18, 19, 20, 21, 22, 23, 24, 24, 24]


def _t5_fixed() -> None:
    # saturation before max_distance: bucket 15 from |r| = 91, bucket 31 from 113 (causal)
    assert t5_bucket(np.array([-90, -91])).tolist() == [14, 15]
    assert t5_bucket(np.array([-112, -113]), direction="unidirectional").tolist() == [30, 31]


T5 = Claim(
    name="t5.buckets_monotone_exact_region",
    title="T5 buckets are monotone in |r| and exact near zero",
    proof=(
        (r"Below $E$ exact buckets the bucket is the distance itself:",
         r"n < E:\quad \operatorname{bucket}(n) = n"),
        (r"From $E$ on it is a floor of an increasing function of $n$, clipped at $B - 1$, so it never decreases:",
         r"n \ge E:\quad \operatorname{bucket}(n) = \min\Big(B - 1,\ E + \Big\lfloor \frac{\ln(n/E)}{\ln(D/E)}\,(B - E)\Big\rfloor\Big)"),
        (r"At the seam $n = E$ the logarithm is $0$, one above the last exact bucket:",
         r"\operatorname{bucket}(E) = E = \operatorname{bucket}(E - 1) + 1"),
        (r"Floating-point floors can still slip near integers, so the machine check below counts every violation exhaustively over the listed sizes; each count must be 0.",
         r"\#\{\text{decreases}\} = \#\{\text{inexact } |r| < E\} = 0"),
    ),
    statement=r"|r| < \tfrac{N'}{2} \Rightarrow \text{bucket}(r) = |r|"
              r" \ (+N' \text{ for } r > 0 \text{ bidirectionally});\ \text{bucket is non-decreasing in } |r|",
    source="Raffel et al. 2020 (T5), arXiv:1910.10683, section 2.1; Mesh TensorFlow _relative_position_bucket",
    derive=_t5,
    tie_back=_t5_tie_back,
    fixed_values=_t5_fixed,
    ops=("t5.bucket",),
)

CLAIMS = (T5,)
