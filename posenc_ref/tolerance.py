r"""The tolerance model: how far an implementation computing in dtype ``D`` may be from the truth.

The golden values are float64 roundings of the exact result (see :mod:`posenc_ref.oracle`).
An element passes when

.. math::

    |a - e| \le n_{ulp}\,\mathrm{ulp}_D(|e|) + \text{floor}

with the floor set by the output's tolerance class:

``exact``
    Integer outputs (indices, buckets, positions): equal, element for element. Non-finite
    values (``-inf`` placements) must match exactly in every class.
``ulp``
    Values that are copied or computed without a phase (table lookups): floor 0.
``phase``
    Outputs ``sin``/``cos`` of a phase :math:`\theta = p\,w`. Rounding ``p`` and ``w`` and the
    product to a precision :math:`\epsilon` moves the angle by about
    :math:`\epsilon\,|\theta|`, so the floor is :math:`c\,\epsilon_P\,(1 + |\theta|)` with the
    element's own phase. ``P`` is ``D`` for float64 and float32; for float16 and bfloat16 it is
    float32, because angles must be computed in at least float32 and only the result rounded
    to the narrow type (the vLLM#54620 / gpt-neox#1003 bug class fails by design).
``normwise``
    Outputs of reductions (attention outputs and weights). The unit is a *row*: the vector
    along the last axis, of length :math:`K`. With :math:`r = \mathrm{rms}(e)` over the whole
    finite expected output, a row passes when

    .. math::

        \lVert a_r - e_r \rVert_2 \le c\,\sqrt{K}\,\epsilon_D\,(\lVert e_r \rVert_2 + r)

    and every element of it when
    :math:`|a - e| \le n_{ulp}\,\mathrm{ulp}_D(|e|) + 4c\,\sqrt{K}\,\epsilon_D\,(|e| + r)`.
    Derivation: a length-:math:`n` dot product or sum computed in precision :math:`\epsilon`
    has a forward error bounded by :math:`\gamma_n \sum |x_i y_i|` and, with rounding errors
    of random sign, typically :math:`\sqrt{n}\,\epsilon \sum |x_i y_i|` (Higham,
    *Accuracy and Stability of Numerical Algorithms*, sections 3.1 and 3.6). An attention
    row accumulates such errors in its logits (length ``D``), its softmax sum and its weighted
    value sum (length ``Tk``); the row's own length stands for the reduction length and the
    row norm for :math:`\sum |x_i y_i|`, with :math:`r` as the floor where cancellation makes a
    row small. The elementwise bound (four times looser) keeps one element from hiding in a
    large row. Masked weights and fully masked rows are exact zeros in every correct
    implementation and sit at ``|e| = 0``; ``nan`` rows must be ``nan``.

    A normwise output may also carry a *phase scale* :math:`m` (attention with RoPE): the
    ``phase`` class floor of its angles, :math:`c\,\epsilon_P\,(1 + |\theta|)` per rotated pair,
    carried through the logits and the softmax to first order. Both bounds then add
    :math:`c\,\epsilon_P\,m` (the row bound with the row's :math:`\lVert m_r \rVert_2`), with the
    ``phase`` class's :math:`c` and :math:`P`: an angle of :math:`10^6` radians rounded in
    float64 alone moves a weight by :math:`10^{-13}`, far past the normwise bound.
``reduction``
    Sums of products (attention scores, relative-position terms, interpolation): the floor is
    :math:`c\,\epsilon_P\,m` with the element's own *error scale* :math:`m`, which the op's
    record computes from the case's inputs (carried where the phase is carried). For a sum
    :math:`\sum_t x_t y_t` of :math:`L` products whose factors come in rounded, any summation
    order errs by at most :math:`\gamma_{L+2} \sum_t |x_t y_t|` with
    :math:`\gamma_n \approx n\,\epsilon/2` (Higham, *Accuracy and Stability of Numerical
    Algorithms*, 2nd ed., section 3.1), so a record sets :math:`m` to at least
    :math:`(L + 2) \sum_t |x_t y_t|` (adding the error of factors that are themselves
    computed, such as interpolation weights or sinusoids). With :math:`c = 1` the floor is
    twice that worst-case bound; cancellation (a score near zero) no longer fails correct
    code, while a wrong index, sign or kernel moves
    the result by the size of a term. ``P`` is ``D`` for float64 and float32 and float32 for
    float16 and bfloat16 (sums accumulated in float32, as framework matmuls do).
``power``
    Outputs of the form :math:`b^{x}` with a rounded exponent (RoPE inverse frequencies
    :math:`b^{-2i/d}` and the scalings built on them). Rounding :math:`x` to a precision
    :math:`\epsilon` moves the result by :math:`\epsilon\,|x \ln b| = \epsilon\,|\ln e|`
    *relative*, whatever the dtype of the final rounding, so the floor is
    :math:`c\,\epsilon_P\,|e|\,(1 + |\ln|e||)`: the log of the value is its phase. ``P`` as for
    ``phase``. A plain ``ulp`` bound cannot hold here: float64 ``1e6 ** (-14/80)`` is 4 ulp from
    the truth and the float32 transformers formula 5 ulp.

Input rounding: the corpus inputs are float64, but an implementation in ``D`` usually holds
its float data inputs (``x``, ``q``, ``k``, tables, weights: the record's ``value_inputs``) in
``D``. Rounding each factor of a term :math:`t` to ``D`` moves it by at most
:math:`n_t\,u_D\,|t|` to first order, with :math:`n_t` its rounded factors and
:math:`u_D = \epsilon_D / 2`, so an element moves by at most :math:`u_D\,s` with its *input
scale* :math:`s = \sum_t n_t\,|t|`, which the op's record computes and the corpus carries
(``input_scale.<output>.npy``). Every class with an input scale adds
:math:`c_{input}\,u_D\,s`: :data:`INPUT_C` is 0 for float64 (nothing is rounded) and float32
(its floors already hold twice the term, a test) and 2 for float16 and bfloat16 (twice the
first-order bound). Outputs that copy an input round once and need none; ``normwise``
scales with :math:`\epsilon_D` already.

Constants (:data:`POLICIES`) were calibrated on the built-in emulations of typical float32 and
float16 frameworks, with and without inputs held in the narrow dtype, which pass every case
with at least 2x headroom (a test), while the mutant catalogue (wrong layouts, off-by-one
positions, float16 angles, ...) fails (a test).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Literal

import numpy as np
from numpy.typing import NDArray

Dtype = Literal["float64", "float32", "float16", "bfloat16"]
NORMWISE_ELEMENT_FACTOR: Final = 4.0
"""The elementwise bound of the ``normwise`` class is this many times looser than the row bound."""
DTYPES: Final[tuple[Dtype, ...]] = ("float64", "float32", "float16", "bfloat16")

# (significand bits including the implicit one, minimum normal exponent)
_FORMATS: Final[dict[str, tuple[int, int]]] = {
    "float64": (53, -1022),
    "float32": (24, -126),
    "float16": (11, -14),
    "bfloat16": (8, -126),
}


def eps(dtype: Dtype) -> float:
    """Machine epsilon of ``dtype`` (distance from 1 to the next number)."""
    return 2.0 ** (1 - _FORMATS[dtype][0])


def unit_roundoff(dtype: Dtype) -> float:
    """Unit roundoff ``u = eps / 2`` of ``dtype``: the largest relative error of rounding to it."""
    return eps(dtype) / 2.0


def ulp(values: Any, dtype: Dtype) -> NDArray[np.float64]:
    """Spacing of ``dtype`` at ``|values|`` (the subnormal spacing below the normal range).

    Examples
    --------
    >>> ulp([1.0, 0.75], "float32").tolist() == [2.0**-23, 2.0**-24]
    True
    >>> float(ulp(1.0, "bfloat16"))
    0.0078125
    """
    bits, emin = _FORMATS[dtype]
    magnitude = np.abs(np.asarray(values, dtype=np.float64))
    _, exponent = np.frexp(magnitude)  # magnitude = m * 2**exponent, m in [0.5, 1)
    binade = np.where(magnitude == 0, emin, np.maximum(exponent - 1, emin))
    spacing: NDArray[np.float64] = np.ldexp(1.0, binade - bits + 1)
    return spacing


@dataclass(frozen=True)
class Policy:
    """A resolved tolerance: ``n_ulp * ulp_D(|e|) + c_phase * eps_P * (1 + |theta|) + c_input * u_D * s``.

    ``c_phase`` is the class constant: the phase floor's ``c`` for ``phase``, the normwise ``c``
    for ``normwise``, and for ``reduction`` the ``c`` of the floor ``c_phase * eps_P * m`` on the
    element's error scale ``m`` (so that relaxing a policy scales every class the same way).
    ``c_input`` multiplies the input-rounding term ``u_D * s`` (``u_D = eps_D / 2``, ``s`` the
    element's input scale), added wherever the output has an input scale. ``c_carried`` is the
    ``normwise`` class's constant of a carried phase scale ``m``: ``c_carried * eps_P * m``.
    """

    tolerance_class: str
    dtype: Dtype
    n_ulp: float
    c_phase: float = 0.0
    phase_dtype: Dtype = "float64"
    c_input: float = 0.0
    c_carried: float = 0.0

    def allowed(self, expected: NDArray[np.float64], phase: NDArray[np.float64] | None = None,
                input_scale: NDArray[np.float64] | None = None) -> NDArray[np.float64]:
        """The allowed absolute error at every element.

        ``input_scale`` (the output's per-element input scale, when it has one) adds
        ``c_input * u_D * s``; without it the term is absent.
        """
        bound = self.n_ulp * ulp(expected, self.dtype)
        if self.tolerance_class == "phase":
            if phase is None:
                raise ValueError("a phase tolerance needs the phase of every element")
            bound = bound + self.c_phase * eps(self.phase_dtype) * (1.0 + np.abs(phase))
        elif self.tolerance_class == "reduction":
            if phase is None:
                raise ValueError("a reduction tolerance needs the error scale of every element")
            bound = bound + self.c_phase * eps(self.phase_dtype) * np.abs(phase)
        elif self.tolerance_class == "power":
            magnitude = np.abs(np.asarray(expected, dtype=np.float64))
            log_phase = np.abs(np.log(np.where(magnitude > 0, magnitude, 1.0)))
            bound = bound + self.c_phase * eps(self.phase_dtype) * magnitude * (1.0 + log_phase)
        if input_scale is not None and self.c_input and self.tolerance_class not in ("exact", "normwise"):
            bound = bound + self.c_input * unit_roundoff(self.dtype) * np.abs(input_scale)
        return np.asarray(bound, dtype=np.float64)

    def describe(self, carried: bool = True) -> str:
        """The policy as a formula; ``carried=False`` leaves out a ``normwise`` carried phase term."""
        if self.tolerance_class == "exact":
            return "exact"
        text = f"{self.n_ulp:g} ulp({self.dtype})"
        if self.tolerance_class == "phase":
            text += f" + {self.c_phase:g} * eps({self.phase_dtype}) * (1 + |theta|)"
        if self.tolerance_class == "reduction":
            text += f" + {self.c_phase:g} * eps({self.phase_dtype}) * m"
        if self.tolerance_class == "normwise":
            term = f" + {self.c_carried:g} * eps({self.phase_dtype}) * m" if self.c_carried and carried else ""
            return (f"rows: ||a-e|| <= {self.c_phase:g} * sqrt(K) * eps({self.dtype}) * (||e|| + rms(e)){term}; "
                    f"elements: {text} + {NORMWISE_ELEMENT_FACTOR * self.c_phase:g} * sqrt(K) * eps({self.dtype})"
                    f" * (|e| + rms(e)){term}")
        if self.tolerance_class == "power":
            text += f" + {self.c_phase:g} * eps({self.phase_dtype}) * |e| * (1 + |ln|e||)"
        if self.c_input:
            text += f" + {self.c_input:g} * u({self.dtype}) * s"
        return text

    def allowed_normwise(self, expected: NDArray[np.float64], carried: NDArray[np.float64] | None = None,
                         ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """``(row bound, element bound)`` of the ``normwise`` class; rows are along the last axis.

        ``expected`` holds the finite expected values (non-finite entries already zeroed);
        ``carried`` is the output's phase scale ``m`` where it has one (module notes).
        """
        k = expected.shape[-1] if expected.ndim else 1
        rms = float(np.sqrt(np.mean(np.square(expected)))) if expected.size else 0.0
        unit = np.sqrt(k) * eps(self.dtype) * self.c_phase
        rows = unit * (np.sqrt(np.sum(np.square(expected), axis=-1, keepdims=True)) + rms)
        elements = self.n_ulp * ulp(expected, self.dtype) + NORMWISE_ELEMENT_FACTOR * unit * (np.abs(expected) + rms)
        if carried is not None:
            m = self.c_carried * eps(self.phase_dtype) * np.abs(np.broadcast_to(carried, expected.shape))
            rows = rows + np.sqrt(np.sum(np.square(m), axis=-1, keepdims=True))
            elements = elements + m
        return np.asarray(rows, dtype=np.float64), np.asarray(elements, dtype=np.float64)


INPUT_C: Final[dict[Dtype, float]] = {"float64": 0.0, "float32": 0.0, "float16": 2.0, "bfloat16": 2.0}
"""``c_input`` by adapter dtype: the input-rounding term ``c_input * u_D * s`` (see the module notes).

float64: the corpus inputs are float64 numbers, so nothing is rounded. float32: the existing
floors already hold at least twice the first-order effect of float32 inputs at every element of
the corpus (a test). float16 and bfloat16: twice the first-order bound."""

NORMWISE_C: Final = 8.0
"""The ``normwise`` constant ``c`` (calibrated: see the module notes and tests/test_runner.py)."""

PHASE_C: Final[dict[Dtype, float]] = {"float64": 8.0, "float32": 16.0, "float16": 16.0, "bfloat16": 16.0}
"""The ``phase`` class constant ``c`` by adapter dtype; a ``normwise`` output's carried phase scale uses it too."""
PHASE_DTYPE: Final[dict[Dtype, Dtype]] = {"float64": "float64", "float32": "float32", "float16": "float32",
                                          "bfloat16": "float32"}
"""``P``, the precision angles are computed in, by adapter dtype (at least float32: module notes)."""

POLICIES: Final[dict[tuple[str, Dtype], Policy]] = {
    **{("exact", d): Policy("exact", d, 0.0) for d in DTYPES},
    ("ulp", "float64"): Policy("ulp", "float64", 2.0),
    ("ulp", "float32"): Policy("ulp", "float32", 2.0),
    ("ulp", "float16"): Policy("ulp", "float16", 2.0),
    ("ulp", "bfloat16"): Policy("ulp", "bfloat16", 2.0),
    **{("phase", d): Policy("phase", d, 2.0, PHASE_C[d], PHASE_DTYPE[d], INPUT_C[d]) for d in DTYPES},
    **{("normwise", d): Policy("normwise", d, 2.0, NORMWISE_C, PHASE_DTYPE[d], c_carried=PHASE_C[d])
       for d in DTYPES},
    ("reduction", "float64"): Policy("reduction", "float64", 2.0, 1.0, "float64"),
    ("reduction", "float32"): Policy("reduction", "float32", 2.0, 1.0, "float32"),
    ("reduction", "float16"): Policy("reduction", "float16", 2.0, 1.0, "float32", INPUT_C["float16"]),
    ("reduction", "bfloat16"): Policy("reduction", "bfloat16", 2.0, 1.0, "float32", INPUT_C["bfloat16"]),
    ("power", "float64"): Policy("power", "float64", 2.0, 4.0, "float64"),
    ("power", "float32"): Policy("power", "float32", 2.0, 4.0, "float32"),
    ("power", "float16"): Policy("power", "float16", 2.0, 4.0, "float32"),
    ("power", "bfloat16"): Policy("power", "bfloat16", 2.0, 4.0, "float32"),
}
"""Policy by (tolerance class, adapter dtype). Documented with its derivation in docs/tolerance.md."""


def policy(tolerance_class: str, dtype: Dtype) -> Policy:
    """The :class:`Policy` for an output's class and an adapter's dtype."""
    try:
        return POLICIES[(tolerance_class, dtype)]
    except KeyError:
        raise ValueError(f"no tolerance policy for class {tolerance_class!r} and dtype {dtype!r}") from None


@dataclass(frozen=True)
class Comparison:
    """The verdict on one output: whether it passed and where it is worst."""

    passed: bool
    n_bad: int
    worst_index: tuple[int, ...] | None
    expected: float | None
    actual: float | None
    abs_error: float
    rel_error: float
    ulp_error: float
    allowed: float
    headroom: float
    """Smallest ratio allowed / error over the elements (``inf`` when every element is exact)."""


def compare(actual: Any, expected: Any, pol: Policy, phase: Any = None, input_scale: Any = None) -> Comparison:
    """Compare ``actual`` against the golden ``expected`` under ``pol``.

    ``actual`` must already have ``expected``'s shape. Non-finite expected values must be
    matched exactly; a non-finite actual value where a finite one is expected fails.
    ``phase`` is the per-element phase of the ``phase`` class (the error scale ``m`` of the
    ``reduction`` class) and is ignored by the others; ``input_scale`` is the per-element input
    scale ``s`` of the input-rounding term (absent: no term); the ``normwise`` class judges
    rows along the last axis (see the module notes).
    """
    e = np.asarray(expected)
    a = np.asarray(actual)
    if pol.tolerance_class == "exact":
        equal = (a == e) | (np.isnan(a.astype(np.float64)) & np.isnan(e.astype(np.float64)))
        bad = ~equal
        err = np.where(bad, np.inf, 0.0)
        allowed = np.zeros(e.shape)
    else:
        e64 = e.astype(np.float64)
        a64 = a.astype(np.float64)
        finite = np.isfinite(e64)
        same_nonfinite = ~finite & ((a64 == e64) | (np.isnan(a64) & np.isnan(e64)))
        with np.errstate(invalid="ignore"):
            err = np.where(finite, np.abs(a64 - e64), np.where(same_nonfinite, 0.0, np.inf))
        err = np.where(np.isnan(err), np.inf, err)
        if pol.tolerance_class == "normwise":
            carried = None if phase is None else np.where(finite, np.asarray(phase, dtype=np.float64), 0.0)
            row_allowed, allowed = pol.allowed_normwise(np.where(finite, e64, 0.0), carried)
            row_err = np.sqrt(np.sum(np.square(np.where(np.isfinite(err), err, 0.0)), axis=-1, keepdims=True))
            row_err = np.where(np.isinf(err).any(axis=-1, keepdims=True), np.inf, row_err)
            # a row over its bound marks every element with an error in it as bad
            with np.errstate(divide="ignore", invalid="ignore"):
                row_ratio = np.where(row_err > 0, row_allowed / np.where(row_err > 0, row_err, 1.0), np.inf)
                shared = np.where(np.isfinite(err) & (err > 0), err * row_ratio, allowed)
            allowed = np.minimum(allowed, shared)
        else:
            th = None if phase is None else np.broadcast_to(np.asarray(phase, dtype=np.float64), e.shape)
            scale = None if input_scale is None else np.broadcast_to(np.asarray(input_scale, dtype=np.float64), e.shape)
            allowed = pol.allowed(np.where(finite, e64, 0.0), th, scale)
        bad = err > allowed
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(err > 0, allowed / np.where(err > 0, err, 1.0), np.inf)
    n_bad = int(bad.sum())
    if e.size == 0:
        return Comparison(True, 0, None, None, None, 0.0, 0.0, 0.0, 0.0, float("inf"))
    flat = int(np.argmin(ratio))  # the element closest to (or furthest past) its bound
    index = tuple(int(i) for i in np.unravel_index(flat, e.shape))
    ev = float(e.reshape(-1)[flat])
    av = float(a.reshape(-1)[flat])
    abs_error = float(err.reshape(-1)[flat])
    unit = float(ulp(ev if np.isfinite(ev) else 0.0, pol.dtype))
    return Comparison(
        passed=n_bad == 0,
        n_bad=n_bad,
        worst_index=index,
        expected=ev,
        actual=av,
        abs_error=abs_error,
        rel_error=abs_error / abs(ev) if ev not in (0.0,) and np.isfinite(ev) else abs_error,
        ulp_error=abs_error / unit,
        allowed=float(allowed.reshape(-1)[flat]),
        headroom=float(ratio.min()),
    )
