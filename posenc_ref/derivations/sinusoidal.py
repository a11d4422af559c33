r"""Claims about sinusoidal encodings (:mod:`posenc_ref.sinusoidal`).

Per frequency :math:`w`, a position contributes the pair :math:`(\sin wp, \cos wp)`; every
claim below is proved for one pair with symbolic :math:`w, p, k`, which proves it for every
width, since the table is a stack of such pairs (in some column order).
"""

from __future__ import annotations

import math

import numpy as np
import sympy

from posenc_ref.derivations._claim import Claim, Derivation
from posenc_ref.sinusoidal import sinusoidal_frequencies, sinusoidal_table

p, k, a, b = sympy.symbols("p k a b", real=True)
w = sympy.Symbol("w", positive=True)
d = sympy.Symbol("d", integer=True, positive=True)
base = sympy.Symbol("base", positive=True)


def _trig(expr: sympy.Expr) -> sympy.Expr:
    """Expand the arguments, then the angle-addition formulas, then the products."""
    return sympy.expand(sympy.expand_trig(sympy.expand(expr)))


def _shift_matrix(offset: sympy.Expr) -> sympy.Matrix:
    """``M_k`` acting on one ``(sin, cos)`` pair."""
    return sympy.Matrix([[sympy.cos(w * offset), sympy.sin(w * offset)],
                         [-sympy.sin(w * offset), sympy.cos(w * offset)]])


def _pair(position: sympy.Expr) -> sympy.Matrix:
    return sympy.Matrix([sympy.sin(w * position), sympy.cos(w * position)])


def _pythagoras(expr: sympy.Expr) -> sympy.Expr:
    expanded = _trig(expr)
    return sympy.expand(expanded.subs(sympy.sin(w * p) ** 2, 1 - sympy.cos(w * p) ** 2))


# --- linear shift --------------------------------------------------------------------------

def _linear_shift() -> Derivation:
    return Derivation(_pair(p + k), _shift_matrix(k) * _pair(p), {"w": "w > 0", "p, k": "real"}, _trig)


def _shift_blocks(dim: int, offset: int) -> np.ndarray:
    """Block-diagonal M_k for the interleaved layout, built from the reference frequencies."""
    m = np.zeros((dim, dim))
    for j, freq in enumerate(sinusoidal_frequencies(dim=dim)):
        c, s = math.cos(freq * offset), math.sin(freq * offset)
        m[2 * j: 2 * j + 2, 2 * j: 2 * j + 2] = [[c, s], [-s, c]]
    return m


def _linear_shift_tie_back() -> None:
    positions = np.array([0, 3, 17, 250])
    for offset in (1, 5, 40):
        shifted = sinusoidal_table(positions + offset, dim=16)
        mapped = sinusoidal_table(positions, dim=16) @ _shift_blocks(16, offset).T
        np.testing.assert_allclose(mapped, shifted, rtol=0, atol=1e-12)


LINEAR_SHIFT = Claim(
    name="sinusoidal.linear_shift",
    title="A shift by k is a fixed linear map",
    proof=(
        (r"One pair of columns, at frequency $w_j$:",
         r"PE_j(p) = \begin{pmatrix}\sin w_j p \\ \cos w_j p\end{pmatrix}"),
        (r"Angle addition, for both entries of the pair at $p + k$:",
         r"\begin{aligned}\sin w_j(p+k) &= \cos w_j k\,\sin w_j p + \sin w_j k\,\cos w_j p\\ \cos w_j(p+k) &= -\sin w_j k\,\sin w_j p + \cos w_j k\,\cos w_j p\end{aligned}"),
        (r"The coefficients depend on $k$ only, so the pair at $p + k$ is a fixed matrix times the pair at $p$:",
         r"PE_j(p+k) = \begin{pmatrix}\cos w_j k & \sin w_j k\\ -\sin w_j k & \cos w_j k\end{pmatrix} PE_j(p)"),
        (r"Stacking the pairs gives one block-diagonal matrix for the whole row:",
         r"PE(p+k) = M_k\,PE(p),\qquad M_k = \bigoplus_j \begin{pmatrix}\cos w_j k & \sin w_j k\\ -\sin w_j k & \cos w_j k\end{pmatrix}"),
    ),
    statement=r"PE(p + k) = M_k\,PE(p),\quad M_k = \bigoplus_j \begin{pmatrix}\cos w_j k & \sin w_j k\\"
              r" -\sin w_j k & \cos w_j k\end{pmatrix}",
    source="Vaswani et al. 2017, arXiv:1706.03762, section 3.5 (stated, not proved)",
    derive=_linear_shift,
    tie_back=_linear_shift_tie_back,
    ops=("sinusoidal.table",),
    cases=("sinusoidal.table.paper.interleaved.d16.p0-15",),
)


def _orthogonal() -> Derivation:
    m = _shift_matrix(k)
    return Derivation(m.T * m, sympy.eye(2), {"w": "w > 0", "k": "real"},
                      lambda e: sympy.expand(e.subs(sympy.sin(w * k) ** 2, 1 - sympy.cos(w * k) ** 2)))


def _orthogonal_tie_back() -> None:
    m = _shift_blocks(32, 7)
    np.testing.assert_allclose(m.T @ m, np.eye(32), atol=1e-14)


ORTHOGONAL = Claim(
    name="sinusoidal.shift_orthogonal",
    title="The shift map is orthogonal",
    proof=(
        (r"One block, writing $c = \cos w k$ and $s = \sin w k$:",
         r"\begin{pmatrix}c & -s\\ s & c\end{pmatrix}\begin{pmatrix}c & s\\ -s & c\end{pmatrix} = \begin{pmatrix}c^2 + s^2 & cs - sc\\ sc - cs & s^2 + c^2\end{pmatrix}"),
        (r"Since $c^2 + s^2 = 1$ every block is the identity, and so is the block-diagonal product:",
         r"M_k^\top M_k = I"),
    ),
    statement=r"M_k^\top M_k = I",
    source="follows from the block form of M_k",
    derive=_orthogonal,
    tie_back=_orthogonal_tie_back,
    ops=("sinusoidal.table",),
)


def _group() -> Derivation:
    return Derivation(_shift_matrix(a) * _shift_matrix(b), _shift_matrix(a + b), {"w": "w > 0", "a, b": "real"},
                      _trig)


def _group_tie_back() -> None:
    np.testing.assert_allclose(_shift_blocks(16, 3) @ _shift_blocks(16, 9), _shift_blocks(16, 12), atol=1e-13)


GROUP = Claim(
    name="sinusoidal.shift_group",
    title="Shifts compose by adding offsets",
    proof=(
        (r"One block of the product, with $c_a = \cos w a$, $s_a = \sin w a$ (and the same for $b$):",
         r"\begin{pmatrix}c_a & s_a\\ -s_a & c_a\end{pmatrix}\begin{pmatrix}c_b & s_b\\ -s_b & c_b\end{pmatrix} = \begin{pmatrix}c_a c_b - s_a s_b & c_a s_b + s_a c_b\\ -(s_a c_b + c_a s_b) & c_a c_b - s_a s_b\end{pmatrix}"),
        (r"Angle addition turns the entries into the block of $a + b$:",
         r"= \begin{pmatrix}\cos w(a+b) & \sin w(a+b)\\ -\sin w(a+b) & \cos w(a+b)\end{pmatrix},\qquad M_a M_b = M_{a+b}"),
    ),
    statement=r"M_a M_b = M_{a+b}",
    source="follows from the angle-addition formulas",
    derive=_group,
    tie_back=_group_tie_back,
    ops=("sinusoidal.table",),
)


# --- dot product and norm ------------------------------------------------------------------

def _dot_product() -> Derivation:
    lhs = (_pair(p).T * _pair(p + k))[0]
    return Derivation(lhs, sympy.cos(w * k), {"w": "w > 0", "p, k": "real"},
                      lambda e: sympy.simplify(_pythagoras(e)))


def _kernel(offset: int, dim: int) -> float:
    """sum_j cos(w_j k) from the reference frequencies."""
    return float(np.cos(sinusoidal_frequencies(dim=dim) * offset).sum())


def _dot_product_tie_back() -> None:
    for offset in (1, 9, 100):
        for start in (0, 13, 4000):
            rows = sinusoidal_table([start, start + offset], dim=32)
            assert math.isclose(float(rows[0] @ rows[1]), _kernel(offset, 32), abs_tol=1e-10)
            if start >= offset:  # the same kernel looking backwards: PE(p) . PE(p - k)
                back = sinusoidal_table([start, start - offset], dim=32)
                assert math.isclose(float(back[0] @ back[1]), _kernel(offset, 32), abs_tol=1e-10)
    assert _kernel(5, 32) == _kernel(-5, 32)


DOT_PRODUCT = Claim(
    name="sinusoidal.dot_product_offset",
    title="The dot product depends only on the offset, and is symmetric in it",
    proof=(
        (r"Pair $j$ contributes:",
         r"\sin(w_j p)\,\sin(w_j (p+k)) + \cos(w_j p)\,\cos(w_j (p+k))"),
        (r"That is the cosine of the difference of the two angles, in which $p$ cancels:",
         r"= \cos\big(w_j (p+k) - w_j p\big) = \cos(w_j k)"),
        (r"Summing the pairs, and using that cosine is even:",
         r"\langle PE(p), PE(p+k)\rangle = \sum_j \cos(w_j k) = \sum_j \cos(-w_j k) = \langle PE(p), PE(p-k)\rangle"),
    ),
    statement=r"\langle PE(p), PE(p + k)\rangle = \sum_j \cos(w_j k) = \langle PE(p), PE(p - k)\rangle",
    source="Vaswani et al. 2017 section 3.5; corrects tutorials that call the encoding direction-aware",
    derive=_dot_product,
    tie_back=_dot_product_tie_back,
    ops=("sinusoidal.table",),
    corrects="'sinusoidal encodings are direction-aware': the dot product cannot tell k from -k",
)


def _norm() -> Derivation:
    lhs = (_pair(p).T * _pair(p))[0]
    return Derivation(lhs, sympy.Integer(1), {"w": "w > 0", "p": "real"}, _pythagoras,
                      note="one per pair, so d/2 for an even width d")


def _norm_tie_back() -> None:
    for dim in (2, 8, 64):
        table = sinusoidal_table(np.arange(0, 10**6, 99991), dim=dim)
        np.testing.assert_allclose((table**2).sum(axis=-1), dim / 2, rtol=1e-13)


NORM = Claim(
    name="sinusoidal.norm",
    title="Every row has squared norm d/2",
    proof=(
        (r"Group the squared entries by pair:",
         r"\lVert PE(p)\rVert^2 = \sum_{j=0}^{d/2-1} \big(\sin^2 w_j p + \cos^2 w_j p\big)"),
        (r"Each pair is $1$, and there are $d/2$ pairs:",
         r"= \sum_{j=0}^{d/2-1} 1 = \frac{d}{2}"),
    ),
    statement=r"\lVert PE(p)\rVert^2 = d/2",
    source="follows from sin^2 + cos^2 = 1 per pair",
    derive=_norm,
    tie_back=_norm_tie_back,
    ops=("sinusoidal.table",),
)


# --- wavelengths ---------------------------------------------------------------------------

def _wavelengths() -> Derivation:
    # paper ladder, last pair j = d/2 - 1: w = base^(-(d-2)/d); t2t ladder: w = base^(-1)
    paper_last = 2 * sympy.pi / base ** (-(2 * (d / 2 - 1)) / d)
    t2t_last = 2 * sympy.pi / base ** (-sympy.Integer(1))
    lhs = sympy.Matrix([2 * sympy.pi / base**0, paper_last, t2t_last])
    rhs = sympy.Matrix([2 * sympy.pi, 2 * sympy.pi * base ** ((d - 2) / d), 2 * sympy.pi * base])
    return Derivation(lhs, rhs, {"base": "base > 0", "d": "even integer >= 4"},
                      lambda e: sympy.simplify(sympy.powsimp(sympy.expand_power_base(e, force=True), force=True)))


def _wavelengths_tie_back() -> None:
    for dim in (4, 64, 512):
        paper = 2 * math.pi / sinusoidal_frequencies(dim=dim)
        t2t = 2 * math.pi / sinusoidal_frequencies(dim=dim, ladder="t2t")
        assert math.isclose(paper[0], 2 * math.pi) and math.isclose(t2t[0], 2 * math.pi)
        assert math.isclose(paper[-1], 2 * math.pi * 10000 ** ((dim - 2) / dim), rel_tol=1e-13)
        assert math.isclose(t2t[-1], 2 * math.pi * 10000, rel_tol=1e-13)


def _wavelengths_fixed() -> None:
    # d = 512, base 10000: the paper's longest wavelength is 2 pi * 10000^(510/512), not 2 pi * 10000.
    longest = 2 * math.pi / float(sinusoidal_frequencies(dim=512)[-1])
    assert math.isclose(longest, 2 * math.pi * 10000 ** (510 / 512), rel_tol=1e-12)
    assert 60_000 < longest < 60_700 and not math.isclose(longest, 2 * math.pi * 10000, rel_tol=1e-2)


WAVELENGTHS = Claim(
    name="sinusoidal.wavelength_range",
    title="The wavelength range of each ladder",
    proof=(
        (r"Wavelength of a frequency, and the paper's ladder $w_j = \text{base}^{-2j/d}$:",
         r"\lambda_j = \frac{2\pi}{w_j} = 2\pi\,\text{base}^{2j/d}"),
        (r"Its ends, $j = 0$ and $j = d/2 - 1$:",
         r"\lambda_0 = 2\pi,\qquad \lambda_{d/2-1} = 2\pi\,\text{base}^{(d-2)/d}"),
        (r"The tensor2tensor ladder spreads the exponent over $d/2 - 1$ steps, $w_j = \text{base}^{-j/(d/2-1)}$, so its last wavelength is:",
         r"\lambda_{d/2-1}^{\text{t2t}} = 2\pi\,\text{base}"),
    ),
    statement=r"\lambda_0 = 2\pi;\quad \lambda_{\max}^{\text{paper}} = 2\pi\,\text{base}^{(d-2)/d};\quad"
              r" \lambda_{\max}^{\text{t2t}} = 2\pi\,\text{base}",
    source="Vaswani et al. 2017 section 3.5 says 'from 2 pi to 10000 * 2 pi', true only of the t2t ladder",
    derive=_wavelengths,
    tie_back=_wavelengths_tie_back,
    fixed_values=_wavelengths_fixed,
    ops=("sinusoidal.table",),
    corrects="'wavelengths run from 2 pi to 10000 * 2 pi': with the paper exponent 2i/d the longest is "
             "2 pi * 10000^((d-2)/d) (about 60,611 at d = 512, not 62,832)",
)


# --- layouts -------------------------------------------------------------------------------

def _layouts() -> Derivation:
    s0, c0, s1, c1 = sympy.symbols("s_0 c_0 s_1 c_1", real=True)
    interleaved = sympy.Matrix([s0, c0, s1, c1])
    permutation = sympy.Matrix([[1, 0, 0, 0], [0, 0, 1, 0], [0, 1, 0, 0], [0, 0, 0, 1]])
    return Derivation(permutation * interleaved, sympy.Matrix([s0, s1, c0, c1]), {"s_j, c_j": "real"},
                      note="shown for d = 4; the tie-back checks the same permutation at several widths")


def _layouts_tie_back() -> None:
    for dim in (4, 10, 64):
        n = dim // 2
        order = [2 * j for j in range(n)] + [2 * j + 1 for j in range(n)]
        inter = sinusoidal_table(np.arange(50), dim=dim)
        np.testing.assert_array_equal(inter[:, order], sinusoidal_table(np.arange(50), dim=dim,
                                                                         layout="concat_sin_cos"))


LAYOUTS = Claim(
    name="sinusoidal.layout_permutation",
    title="Interleaved and concatenated layouts differ by a fixed permutation",
    proof=(
        (r"At $d = 4$, with $s_j = \sin w_j p$ and $c_j = \cos w_j p$, the two layouts hold the same entries:",
         r"PE_{\text{interleaved}} = (s_0, c_0, s_1, c_1)^\top,\qquad PE_{\text{concat}} = (s_0, s_1, c_0, c_1)^\top"),
        (r"A permutation matrix that does not involve $p$ moves one into the other:",
         r"PE_{\text{concat}} = \begin{pmatrix}1&0&0&0\\0&0&1&0\\0&1&0&0\\0&0&0&1\end{pmatrix} PE_{\text{interleaved}}"),
    ),
    statement=r"PE_{\text{concat}}(p) = P\,PE_{\text{interleaved}}(p),\quad P \text{ independent of } p",
    source="tensorflow/tensor2tensor#391 (the paper interleaves, the code concatenates)",
    derive=_layouts,
    tie_back=_layouts_tie_back,
    ops=("sinusoidal.table",),
)

CLAIMS = (LINEAR_SHIFT, ORTHOGONAL, GROUP, DOT_PRODUCT, NORM, WAVELENGTHS, LAYOUTS)
