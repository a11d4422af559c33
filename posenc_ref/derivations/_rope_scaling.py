"""The claims about the RoPE frequency scalings (linear, NTK, YaRN, Llama 3), part of
:mod:`posenc_ref.derivations.rope` (whose docstring pins the rotation), which lists them in its ``CLAIMS``.
"""

from __future__ import annotations

import math

import numpy as np
import sympy

from posenc_ref.derivations._claim import Claim, Derivation
from posenc_ref.derivations._rope_symbols import p, s, w
from posenc_ref.rope import rope_cos_sin
from posenc_ref.rope_scaling import rope_inv_freq, yarn_correction_range


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
