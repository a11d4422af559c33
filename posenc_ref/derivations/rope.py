r"""Claims about RoPE and its scalings (:mod:`posenc_ref.rope`, :mod:`posenc_ref.rope_scaling`,
:mod:`posenc_ref.rope_variants`).

The rotation is pinned to the code: ``rotate_half`` turns the pair :math:`(x_1, x_2)` into
:math:`(x_1\cos\theta - x_2\sin\theta,\ x_2\cos\theta + x_1\sin\theta) = R(\theta)\,x` with
:math:`R(\theta) = \begin{pmatrix}\cos\theta & -\sin\theta\\ \sin\theta & \cos\theta\end{pmatrix}`.
Every claim is proved for one pair with symbolic frequency and positions, which proves it for
every width (the head is a stack of such pairs, in either layout).
"""

from __future__ import annotations

import math

import numpy as np
import sympy

from posenc_ref.derivations._claim import Claim, Derivation
from posenc_ref.rope import rope_apply, rope_cos_sin, rope_layout_permutation, rope_scores
from posenc_ref.rope_scaling import rope_inv_freq, yarn_correction_range
from posenc_ref.rope_variants import rope_xpos

m, n, s, p = sympy.symbols("m n s p", real=True)
w = sympy.Symbol("w", positive=True)
q0, q1, k0, k1 = sympy.symbols("q_0 q_1 k_0 k_1", real=True)
Q = sympy.Matrix([q0, q1])
K = sympy.Matrix([k0, k1])


def _rotation(angle: sympy.Expr) -> sympy.Matrix:
    return sympy.Matrix([[sympy.cos(angle), -sympy.sin(angle)], [sympy.sin(angle), sympy.cos(angle)]])


def _trig(expr: sympy.Expr) -> sympy.Expr:
    return sympy.expand(sympy.expand_trig(sympy.expand(expr)))


def _unit(expr: sympy.Expr) -> sympy.Expr:
    expanded = _trig(expr)
    for angle in (w * m, w * n):
        expanded = sympy.expand(expanded.subs(sympy.sin(angle) ** 2, 1 - sympy.cos(angle) ** 2))
    return expanded


def _rng() -> np.random.Generator:
    return np.random.default_rng(2104)


# --- relativity ----------------------------------------------------------------------------

def _relativity() -> Derivation:
    lhs = ((_rotation(w * m) * Q).T * (_rotation(w * n) * K))[0]
    rhs = (Q.T * _rotation(w * (n - m)) * K)[0]
    return Derivation(lhs, rhs, {"w": "w > 0", "m, n": "real", "q, k": "real 2-vectors"}, _unit)


def _relativity_tie_back() -> None:
    rng = _rng()
    q, k = rng.normal(size=(1, 2, 1, 64)), rng.normal(size=(1, 2, 1, 64))
    for layout in ("half", "interleaved"):
        for qm, kn in ((5, 9), (1000, 4000), (0, 131071)):
            score = rope_scores(q, k, [qm], [kn], layout=layout)[..., 0, 0]
            relative = (q * rope_apply(k, [kn - qm], layout=layout)).sum(-1)[..., 0]  # q . R_{n-m} k
            np.testing.assert_allclose(score, relative, rtol=0, atol=1e-9)
        q2, k2 = rng.normal(size=(1, 2, 2, 64)), rng.normal(size=(1, 2, 2, 64))
        shifted = rope_scores(q2, k2, [7, 30], [3, 11], layout=layout)
        np.testing.assert_allclose(shifted, rope_scores(q2, k2, [10007, 10030], [10003, 10011], layout=layout),
                                   rtol=0, atol=1e-9)


RELATIVITY = Claim(
    name="rope.relativity",
    title="RoPE scores depend only on the offset n - m",
    proof=(
        (r"The rotation of one pair, and its transpose (the rotation backwards):",
         r"R_\theta = \begin{pmatrix}\cos\theta & -\sin\theta\\ \sin\theta & \cos\theta\end{pmatrix},\qquad R_\theta^\top = R_{-\theta}"),
        (r"Move the rotation of $q$ across the dot product:",
         r"(R_m q)^\top (R_n k) = q^\top R_m^\top R_n\, k = q^\top R_{-m} R_n\, k"),
        (r"Rotations compose by adding angles ($m w + n w$ here), so only the offset is left:",
         r"R_{-m} R_n = R_{n-m}\quad\Rightarrow\quad (R_m q)^\top (R_n k) = q^\top R_{n-m}\, k"),
    ),
    statement=r"(R_m q)^\top (R_n k) = q^\top R_{n-m}\,k",
    source="Su et al. 2021 (RoFormer), arXiv:2104.09864, eq. 16; corrects tutorials that write $R_{m-n}$",
    derive=_relativity,
    tie_back=_relativity_tie_back,
    ops=("rope.scores", "rope.apply"),
    corrects=r"$(R_m q)^\top (R_n k) = q^\top R_{m-n} k$: with $R_\theta = \begin{pmatrix}\cos\theta & -\sin\theta"
             r" \\ \sin\theta & \cos\theta\end{pmatrix}$ the product is $R_m^\top R_n = R_{n-m}$",
    cases=("rope.scores.half.d64", "rope.scores.long.offsets_near_1e6"),
)


# --- norm ----------------------------------------------------------------------------------

def _norm() -> Derivation:
    rotated = _rotation(w * m) * Q
    return Derivation((rotated.T * rotated)[0], (Q.T * Q)[0], {"w": "w > 0", "m": "real", "q": "real 2-vector"},
                      _unit)


def _norm_tie_back() -> None:
    x = _rng().normal(size=(2, 3, 4, 80))
    for layout in ("half", "interleaved"):
        rotated = rope_apply(x, [0, 17, 4095, 10**6], layout=layout, rotary_dim=40)
        np.testing.assert_allclose(np.linalg.norm(rotated, axis=-1), np.linalg.norm(x, axis=-1), rtol=1e-13)


NORM = Claim(
    name="rope.norm",
    title="Rotation preserves norms",
    proof=(
        (r"Write the squared norm as a quadratic form:",
         r"\lVert R_m x\rVert^2 = x^\top R_m^\top R_m\, x"),
        (r"With $c = \cos m w$, $s = \sin m w$, the middle matrix is the identity:",
         r"R_m^\top R_m = \begin{pmatrix}c^2 + s^2 & 0\\ 0 & c^2 + s^2\end{pmatrix} = I\quad\Rightarrow\quad \lVert R_m x\rVert = \lVert x\rVert"),
    ),
    statement=r"\lVert R_m x \rVert = \lVert x \rVert",
    source="Su et al. 2021, section 3.4 (R_m is orthogonal)",
    derive=_norm,
    tie_back=_norm_tie_back,
    ops=("rope.apply",),
)


# --- layouts -------------------------------------------------------------------------------

def _layouts() -> Derivation:
    # d = 4: pairs (0, 2) and (1, 3) in "half", (0, 1) and (2, 3) in "interleaved"
    a, b = sympy.symbols("theta_0 theta_1", real=True)
    half = sympy.zeros(4, 4)
    inter = sympy.zeros(4, 4)
    for pair, angle in enumerate((a, b)):
        r = _rotation(angle)
        for i, j in ((0, 0), (0, 1), (1, 0), (1, 1)):
            half[(pair, pair + 2)[i], (pair, pair + 2)[j]] = r[i, j]
            inter[2 * pair + i, 2 * pair + j] = r[i, j]
    perm = [0, 2, 1, 3]  # interleaved channel c holds half channel perm[c]
    permutation = sympy.Matrix(4, 4, lambda i, j: 1 if perm[i] == j else 0)
    return Derivation(permutation * half * permutation.T, inter, {"theta_i": "real"},
                      note="d = 4; the tie-back checks the permutation helper at several widths")


def _layouts_tie_back() -> None:
    rng = _rng()
    for dim in (4, 64, 80):
        x = rng.normal(size=(1, 2, 5, dim))
        to_inter = rope_layout_permutation(dim, from_layout="half", to_layout="interleaved")
        positions = [0, 3, 99, 4096, 65535]
        np.testing.assert_allclose(rope_apply(x, positions, layout="half")[..., to_inter],
                                   rope_apply(x[..., to_inter], positions, layout="interleaved"), rtol=0, atol=1e-12)


LAYOUTS = Claim(
    name="rope.layout_permutation",
    title="Half and interleaved layouts are conjugate by a fixed permutation",
    proof=(
        (r"The half layout rotates channel $i$ with channel $i + d/2$; the interleaved layout rotates $2i$ with $2i + 1$. The permutation sending $i \mapsto 2i$ and $i + d/2 \mapsto 2i + 1$ is, at $d = 4$:",
         r"P = \begin{pmatrix}1&0&0&0\\0&0&1&0\\0&1&0&0\\0&0&0&1\end{pmatrix}"),
        (r"Conjugating by $P$ relabels the channels: the same angles act on the same pairs, and $P$ does not involve $m$:",
         r"R^{\text{interleaved}}_m = P\,R^{\text{half}}_m\,P^\top"),
    ),
    statement=r"R^{\text{interleaved}}_m = P\,R^{\text{half}}_m\,P^\top,\quad P \text{ independent of } m",
    source="what checkpoint converters rely on (transformers' Llama conversion permutes q/k weights)",
    derive=_layouts,
    tie_back=_layouts_tie_back,
    ops=("rope.apply",),
)


# --- scalings ------------------------------------------------------------------------------

def _linear() -> Derivation:
    return Derivation(p * (w / s), (p / s) * w, {"w, s": "w > 0, s >= 1", "p": "real"},
                      note="position interpolation: frequencies divided by s are positions divided by s")


def _linear_tie_back() -> None:
    default = rope_inv_freq(dim=64)[0]
    linear = rope_inv_freq(dim=64, rope_type="linear", factor=4.0)[0]
    np.testing.assert_allclose(linear, default / 4.0, rtol=1e-15)
    cos_linear, sin_linear = rope_cos_sin([0, 4, 4000], linear)
    cos_default, sin_default = rope_cos_sin([0, 1, 1000], default)
    np.testing.assert_allclose(cos_linear, cos_default, rtol=0, atol=1e-12)
    np.testing.assert_allclose(sin_linear, sin_default, rtol=0, atol=1e-12)


LINEAR = Claim(
    name="rope.linear_is_position_division",
    title="Linear scaling equals dividing positions by the factor",
    proof=(
        (r"The angle of pair $i$ at position $p$ with the scaled frequency:",
         r"\theta_i = p \cdot \frac{w_i}{s}"),
        (r"Regroup the product:",
         r"= \frac{p}{s} \cdot w_i\qquad\text{(the original frequency at position } p/s\text{)}"),
    ),
    statement=r"p \cdot \frac{w_i}{s} = \frac{p}{s} \cdot w_i",
    source="Chen et al. 2023 (position interpolation), arXiv:2306.15595, eq. 4",
    derive=_linear,
    tie_back=_linear_tie_back,
    ops=("rope.inv_freq", "rope.cos_sin"),
)


def _ntk() -> Derivation:
    d = sympy.Symbol("d", positive=True)
    b = sympy.Symbol("b", positive=True)
    scaled_base = b * s ** (d / (d - 2))
    highest = scaled_base ** 0
    lowest = scaled_base ** (-(d - 2) / d)
    steps = lambda e: sympy.simplify(sympy.powdenest(sympy.expand_power_base(e, force=True), force=True))  # noqa: E731
    return Derivation(sympy.Matrix([highest, lowest]), sympy.Matrix([1, b ** (-(d - 2) / d) / s]),
                      {"b, s": "> 0", "d": "even, >= 4"}, steps)


def _ntk_tie_back() -> None:
    for dim, base, factor in ((64, 1e4, 4.0), (128, 5e5, 8.0), (80, 1e6, 2.0)):
        default = rope_inv_freq(dim=dim, base=base)[0]
        ntk = rope_inv_freq(dim=dim, base=base, rope_type="ntk_aware", factor=factor)[0]
        assert ntk[0] == default[0] == 1.0
        assert math.isclose(ntk[-1], default[-1] / factor, rel_tol=1e-13)


NTK = Claim(
    name="rope.ntk_frequency_extremes",
    title="The NTK-aware base change keeps the highest frequency and divides the lowest by s",
    proof=(
        (r"Frequency $i$ with the changed base $b' = b\,s^{d/(d-2)}$:",
         r"w'_i = b'^{-2i/d} = b^{-2i/d}\, s^{-2i/(d-2)} = w_i\, s^{-2i/(d-2)}"),
        (r"At $i = 0$ the factor is $s^0$:",
         r"w'_0 = w_0 = 1"),
        (r"At $i = d/2 - 1$ the exponent is $-2(d/2 - 1)/(d-2) = -1$:",
         r"w'_{d/2-1} = \frac{w_{d/2-1}}{s}"),
    ),
    statement=r"b' = b\,s^{d/(d-2)}:\quad w'_0 = w_0 = 1,\quad w'_{d/2-1} = w_{d/2-1}/s",
    source="bloc97, 'NTK-Aware Scaled RoPE' (2023); transformers _compute_dynamic_ntk_parameters",
    derive=_ntk,
    tie_back=_ntk_tie_back,
    ops=("rope.inv_freq",),
)


def _yarn() -> Derivation:
    # Outside [low, high] the clipped ramp is constant (0 below, 1 above), so the schedule is
    # w below and w/s above; inside it is the linear blend. Continuity at both edges is the
    # linear blend reaching exactly w at i = low and w/s at i = high.
    i, low, high = sympy.symbols("i low high", real=True)
    gamma = (i - low) / (high - low)
    blend = w * (1 - gamma) + (w / s) * gamma
    lhs = sympy.Matrix([blend.subs(i, low), blend.subs(i, high)])
    return Derivation(lhs, sympy.Matrix([w, w / s]), {"w, s": "> 0", "low < high": "the correction range"},
                      sympy.simplify, note="the linear blend meets the outer bands exactly at both edges")


def _yarn_tie_back() -> None:
    dim, base, factor = 128, 1e4, 16.0
    low, high = yarn_correction_range(dim=dim, base=base, original_max_position=4096, truncate=False)
    default = rope_inv_freq(dim=dim, base=base)[0]
    yarn = rope_inv_freq(dim=dim, base=base, rope_type="yarn", factor=factor, original_max_position=4096,
                         truncate=False)[0]
    gamma = np.clip((np.arange(dim // 2) - low) / (high - low), 0.0, 1.0)
    np.testing.assert_allclose(yarn, default * (1 - gamma) + default / factor * gamma, rtol=1e-14)
    steps = np.abs(np.diff(yarn / default))  # no jump larger than one ramp step
    assert steps.max() <= (1 - 1 / factor) / (high - low) * (1 + 1e-12)


def _yarn_fixed() -> None:
    # the YaRN sanity values: d = 128, b = 1e4, s = 16, L0 = 4096
    assert yarn_correction_range(dim=128, base=1e4, original_max_position=4096) == (20, 46)
    _, factor, _ = rope_inv_freq(dim=128, base=1e4, rope_type="yarn", factor=16.0, original_max_position=4096)
    assert float(factor[0]) == 0.1 * math.log(16.0) + 1.0 == 1.2772588722239782


YARN = Claim(
    name="rope.yarn_ramp_continuous",
    title="YaRN's ramp blends continuously into both bands",
    proof=(
        (r"Outside the correction range the ramp is clipped: $\gamma_i = 0$ for $i \le \ell$ and $\gamma_i = 1$ for $i \ge h$, so:",
         r"w'_i = w_i\ (i \le \ell),\qquad w'_i = \frac{w_i}{s}\ (i \ge h)"),
        (r"Inside, the unclipped ramp takes the same values at the edges:",
         r"\frac{i - \ell}{h - \ell}\Big|_{i=\ell} = 0,\qquad \frac{i - \ell}{h - \ell}\Big|_{i=h} = 1"),
        (r"So the blend meets each outer band exactly at its edge:",
         r"w'_\ell = w_\ell,\qquad w'_h = \frac{w_h}{s}"),
    ),
    statement=r"w'_i = w_i(1-\gamma_i) + \frac{w_i}{s}\gamma_i,\ "
              r"\gamma_i = \mathrm{clip}\Big(\frac{i-\ell}{h-\ell}, 0, 1\Big)"
              r"\ \text{is continuous at } i = \ell \text{ and } i = h",
    source="Peng et al. 2023 (YaRN), arXiv:2309.00071, section 3.2",
    derive=_yarn,
    tie_back=_yarn_tie_back,
    fixed_values=_yarn_fixed,
    ops=("rope.inv_freq",),
    cases=("rope.inv_freq.yarn.sanity.d128.s16",),
)


def _llama3() -> Derivation:
    lam, low_f, high_f, l0 = sympy.symbols("lambda l_f h_f L_0", positive=True)
    smooth = (l0 / lam - low_f) / (high_f - low_f)
    blended = (1 - smooth) * w / s + smooth * w
    lhs = sympy.Matrix([blended.subs(lam, l0 / low_f), blended.subs(lam, l0 / high_f)])
    return Derivation(lhs, sympy.Matrix([w / s, w]), {"lambda, l_f < h_f, L_0, w, s": "> 0"}, sympy.simplify,
                      note="at the band edges the blend equals the outer bands: w/s at lambda = L0/l_f, w at L0/h_f")


def _llama3_tie_back() -> None:
    # a 4-wide head has frequencies (1, base**-0.5): choose the base so that the second one's
    # wavelength sits just inside and just outside each band edge, and compare the two sides
    original, low_f, high_f, factor = 8192, 1.0, 4.0, 8.0
    for edge in (original / low_f, original / high_f):
        values = []
        for side in (1 - 1e-9, 1 + 1e-9):
            base = (edge * side / (2 * math.pi)) ** 2  # wavelength 2 pi sqrt(base) = edge * side
            values.append(rope_inv_freq(dim=4, base=base, rope_type="llama3", factor=factor,
                                        original_max_position=original, low_freq_factor=low_f,
                                        high_freq_factor=high_f)[0][1] * math.sqrt(base))
        assert math.isclose(values[0], values[1], rel_tol=1e-6), (edge, values)


def _llama3_fixed() -> None:
    # Llama 3.1 (d = 128, b = 5e5, s = 8, L0 = 8192, l_f = 1, h_f = 4): pairs 0-28 kept,
    # 29-34 smoothed, 35-63 divided by 8
    default = rope_inv_freq(dim=128, base=5e5)[0]
    scaled = rope_inv_freq(dim=128, base=5e5, rope_type="llama3", factor=8.0, original_max_position=8192,
                           low_freq_factor=1.0, high_freq_factor=4.0)[0]
    ratio = scaled / default
    assert (ratio[:29] == 1.0).all() and np.allclose(ratio[35:], 1 / 8, rtol=1e-15)
    assert ((ratio[29:35] > 1 / 8) & (ratio[29:35] < 1.0)).all()


LLAMA3 = Claim(
    name="rope.llama3_smoothing_continuous",
    title="Llama 3's smoothing is continuous at both band edges",
    proof=(
        (r"Between the band edges the frequency is blended:",
         r"w' = (1 - \sigma)\,\frac{w}{s} + \sigma\,w,\qquad \sigma = \frac{L_0/\lambda - l_f}{h_f - l_f}"),
        (r"At the long-wavelength edge $\lambda = L_0/l_f$, $L_0/\lambda = l_f$:",
         r"\sigma = 0\quad\Rightarrow\quad w' = \frac{w}{s}\ \text{(the divided band)}"),
        (r"At the short-wavelength edge $\lambda = L_0/h_f$, $L_0/\lambda = h_f$:",
         r"\sigma = 1\quad\Rightarrow\quad w' = w\ \text{(the kept band)}"),
    ),
    statement=r"\sigma = \frac{L_0/\lambda - l_f}{h_f - l_f}:\quad \sigma\big|_{\lambda = L_0/l_f} = 0,\ "
              r"\sigma\big|_{\lambda = L_0/h_f} = 1",
    source="Llama 3.1 apply_scaling (meta-llama/llama-models); transformers _compute_llama3_parameters",
    derive=_llama3,
    tie_back=_llama3_tie_back,
    fixed_values=_llama3_fixed,
    ops=("rope.inv_freq",),
    cases=("rope.inv_freq.llama3.sanity.d128",),
)


# --- xPos ----------------------------------------------------------------------------------

def _xpos() -> Derivation:
    zeta, big_b = sympy.symbols("zeta B", positive=True)
    lhs = ((zeta ** (m / big_b) * _rotation(w * m) * Q).T * (zeta ** (-n / big_b) * _rotation(w * n) * K))[0]
    rhs = zeta ** ((m - n) / big_b) * (Q.T * _rotation(w * (n - m)) * K)[0]
    return Derivation(lhs, rhs, {"zeta, B": "> 0", "m, n, w": "real, w > 0"},
                      lambda e: _unit(sympy.powsimp(sympy.expand(e), force=True)))


def _xpos_tie_back() -> None:
    rng = _rng()
    q, k = rng.normal(size=(1, 1, 6, 32)), rng.normal(size=(1, 1, 6, 32))
    scores = {}
    for centring in ("lucidrains", "torchscale"):
        for start in (0, 1000):
            qr, kr = rope_xpos(q, k, np.arange(start, start + 6), centring=centring)
            scores[centring, start] = np.einsum("bhqd,bhkd->bhqk", qr, kr)
    reference = scores["lucidrains", 0]
    for value in scores.values():
        np.testing.assert_allclose(value, reference, rtol=1e-9, atol=1e-12)


XPOS = Claim(
    name="xpos.relative_scores",
    title="xPos scores depend only on the offset (whatever the centring)",
    proof=(
        (r"The scalar weights move out of the dot product:",
         r"(\zeta^{m/B} R_m q)^\top (\zeta^{-n/B} R_n k) = \zeta^{m/B}\,\zeta^{-n/B}\,(R_m q)^\top (R_n k)"),
        (r"Powers add, and the rotation part is RoPE's relativity:",
         r"= \zeta^{(m-n)/B}\; q^\top R_{n-m}\, k"),
        (r"A centre $c$ subtracted from both positions cancels:",
         r"\zeta^{(m-c)/B}\,\zeta^{-(n-c)/B} = \zeta^{(m-n)/B}"),
    ),
    statement=r"(\zeta^{m/B} R_m q)^\top (\zeta^{-n/B} R_n k) = \zeta^{(m-n)/B}\,q^\top R_{n-m} k",
    source="Sun et al. 2022 (xPos), arXiv:2212.10554, eq. 7",
    derive=_xpos,
    tie_back=_xpos_tie_back,
    ops=("rope.xpos",),
)

CLAIMS = (RELATIVITY, NORM, LAYOUTS, LINEAR, NTK, YARN, LLAMA3, XPOS)
