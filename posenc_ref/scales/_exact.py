"""Machine-independent arithmetic for the stored tolerance arrays (phases and input scales).

The corpus stores every phase and input scale, so their bits must not depend on the CPU, the
BLAS, the SIMD dispatch or the thread count of the machine that generates it. The scale
functions therefore use only:

* elementwise ``+ - * /``, ``abs`` and ``sqrt`` on float64 arrays, which IEEE 754 rounds
  correctly on every machine;
* sums of products through :func:`einsum` here, which multiplies elementwise and adds the terms
  one at a time in a fixed order (never BLAS, never NumPy's pairwise or SIMD reductions);
* powers, sines, cosines and logarithms evaluated in mpmath at :data:`DIGITS` digits and rounded
  once to float64 (:func:`power`, :func:`cos`, :func:`sin`, :func:`log`).

NumPy's ``power``, ``sin``, ``cos``, ``exp`` and ``log`` are not used: their last bits change
with the SIMD code path (AVX-512 or not) that NumPy dispatches at run time.
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

DIGITS: Final = 40
"""Working precision (decimal digits) of the transcendental values before their one rounding."""


def _rounded(name: str, *arrays: Any) -> NDArray[np.float64]:
    """``mpmath.<name>`` applied element by element, each result rounded once to nearest float64.

    mpmath is imported here, at generation time, not when the registry is imported.
    """
    import mpmath
    from mpmath.libmp import to_float

    fn = getattr(mpmath, name)
    values = np.broadcast_arrays(*(np.asarray(a, dtype=np.float64) for a in arrays))
    out = np.empty(values[0].shape, dtype=np.float64)
    flat = [v.reshape(-1).tolist() for v in values]
    with mpmath.workdps(DIGITS):
        result = [float(to_float(mpmath.mpf(fn(*(mpmath.mpf(x) for x in xs)))._mpf_, rnd="n")) for xs in zip(*flat)]
    out.reshape(-1)[:] = result
    return out


def power(base: Any, exponent: Any) -> NDArray[np.float64]:
    """``base ** exponent`` element by element (float64 arguments), correctly rounded."""
    return _rounded("power", base, exponent)


def cos(x: Any) -> NDArray[np.float64]:
    """``cos(x)`` element by element, correctly rounded."""
    return _rounded("cos", x)


def sin(x: Any) -> NDArray[np.float64]:
    """``sin(x)`` element by element, correctly rounded."""
    return _rounded("sin", x)


def exp(x: Any) -> NDArray[np.float64]:
    """``exp(x)`` element by element, correctly rounded (``exp(-inf) = 0``)."""
    values = np.asarray(x, dtype=np.float64)
    finite = np.isfinite(values)
    out = np.zeros(values.shape, dtype=np.float64)
    out[finite] = _rounded("exp", values[finite])
    return out


def log(x: Any) -> NDArray[np.float64]:
    """``log(x)`` element by element, correctly rounded."""
    return _rounded("log", x)


def hypot(u: Any, v: Any) -> NDArray[np.float64]:
    """``sqrt(u*u + v*v)`` with correctly rounded elementwise operations only."""
    a, b = np.asarray(u, dtype=np.float64), np.asarray(v, dtype=np.float64)
    return np.asarray(np.sqrt(a * a + b * b), dtype=np.float64)


def einsum(subscripts: str, *operands: Any) -> NDArray[np.float64]:
    """``numpy.einsum(subscripts, *operands)`` with a fixed, machine-independent rounding order.

    The operands are broadcast to the joint index space and multiplied left to right, element by
    element; the product is then summed over the contracted indices one term at a time, in
    row-major order of those indices. Each index letter appears at most once per operand.

    Examples
    --------
    >>> einsum("ij,jk->ik", [[1.0, 2.0]], [[3.0], [4.0]]).tolist()
    [[11.0]]
    """
    spec_in, spec_out = subscripts.replace(" ", "").split("->")
    terms = spec_in.split(",")
    if len(terms) != len(operands):
        raise ValueError(f"einsum: {len(terms)} operand subscripts for {len(operands)} operands")
    letters: list[str] = []
    for term in terms:
        letters += [c for c in term if c not in letters]
    aligned = []
    for term, operand in zip(terms, operands):
        array = np.asarray(operand, dtype=np.float64)
        order = sorted(range(len(term)), key=lambda i: letters.index(term[i]))
        array = np.transpose(array, order)
        present = [term[i] for i in order]
        aligned.append(array.reshape([array.shape[present.index(c)] if c in present else 1 for c in letters]))
    product = aligned[0]
    for array in aligned[1:]:
        product = product * array
    product = np.broadcast_to(product, np.broadcast_shapes(*(a.shape for a in aligned)))
    summed = [c for c in letters if c not in spec_out]
    kept = [c for c in letters if c in spec_out]
    moved = np.transpose(product, [letters.index(c) for c in summed + kept])
    kept_shape = moved.shape[len(summed):]
    terms_first = moved.reshape((-1,) + kept_shape)
    total = np.zeros(kept_shape, dtype=np.float64)
    for term_values in terms_first:
        total = total + term_values
    return np.asarray(np.transpose(total, [kept.index(c) for c in spec_out]), dtype=np.float64)
