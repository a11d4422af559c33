r"""Claims about the ALiBi attention bias (:mod:`posenc_ref.alibi`)."""

from __future__ import annotations

import numpy as np
import sympy

from posenc_ref.derivations._claim import Claim, Derivation

i, j, c = sympy.symbols("i j c", integer=True)
slope = sympy.Symbol("m", positive=True)


# --- ALiBi ---------------------------------------------------------------------------------

def _alibi_relative() -> Derivation:
    bias = -slope * (i - j)
    return Derivation(bias.subs({i: i + c, j: j + c}, simultaneous=True), bias,
                      {"m": "m > 0", "i, j, c": "integers"}, note="shifting both positions by c changes nothing")


def _alibi_relative_tie_back() -> None:
    from posenc_ref.alibi import alibi_bias

    q, k = np.arange(3, 9), np.arange(0, 9)
    for form in ("relative_causal", "symmetric", "bottom_right"):
        for heads in (1, 5, 12):
            base = alibi_bias(q, k, num_heads=heads, form=form)
            np.testing.assert_array_equal(base, alibi_bias(q + 1000, k + 1000, num_heads=heads, form=form))


ALIBI_RELATIVE = Claim(
    name="alibi.relative",
    title="ALiBi's bias depends only on i - j",
    proof=(
        (r"The bias of head $h$:",
         r"b_h(i, j) = -m_h\,(i - j)"),
        (r"Shift both positions by $c$:",
         r"b_h(i + c, j + c) = -m_h\,\big((i + c) - (j + c)\big) = -m_h\,(i - j)"),
    ),
    statement=r"b_h(i + c, j + c) = b_h(i, j) = -m_h\,(i - j)",
    source="Press et al. 2021 (ALiBi), arXiv:2108.12409, section 3",
    derive=_alibi_relative,
    tie_back=_alibi_relative_tie_back,
    ops=("alibi.bias",),
    cases=("alibi.bias.relative_causal.h8.t6", "alibi.bias.key_only.h8.t6"),
)


def _key_only() -> Derivation:
    scores = sympy.symbols("s_0:4", real=True)
    keys = range(4)
    # row i: logits s_j - m (i - j) against s_j + m j; softmax of each
    relative = [sympy.exp(s - slope * (i - jj)) for s, jj in zip(scores, keys)]
    key_only = [sympy.exp(s + slope * jj) for s, jj in zip(scores, keys)]
    lhs = sympy.Matrix([r / sum(relative) for r in relative])
    rhs = sympy.Matrix([k / sum(key_only) for k in key_only])
    return Derivation(lhs, rhs, {"m": "m > 0", "i": "integer (the row)", "s_j": "real logits"},
                      lambda e: sympy.simplify(sympy.powsimp(sympy.expand(e))),
                      note="the forms differ by -m i, constant along the row, which softmax removes (4 keys shown)")


def _key_only_tie_back() -> None:
    from posenc_ref.alibi import alibi_bias

    q, k = np.arange(0, 7), np.arange(0, 7)
    relative = alibi_bias(q, k, num_heads=6, form="relative_causal")
    key_only = alibi_bias(q, k, num_heads=6, form="key_only")
    difference = relative - key_only
    np.testing.assert_allclose(difference, difference[..., :1] * np.ones_like(difference), rtol=0, atol=1e-12)
    causal = np.tril(np.ones((7, 7), dtype=bool))
    logits = np.random.default_rng(3).normal(size=(6, 7, 7))

    def softmax(x: np.ndarray) -> np.ndarray:
        x = np.where(causal, x, -np.inf)
        e = np.exp(x - x.max(-1, keepdims=True))
        weights: np.ndarray = e / e.sum(-1, keepdims=True)
        return weights

    np.testing.assert_allclose(softmax(logits + relative), softmax(logits + key_only), rtol=0, atol=1e-14)


KEY_ONLY = Claim(
    name="alibi.key_only_row_constant",
    title="Key-only ALiBi differs by a per-row constant, invisible after softmax",
    proof=(
        (r"Split the relative bias:",
         r"-m\,(i - j) = m\,j - m\,i"),
        (r"A constant $a$ added to a whole row leaves its softmax unchanged:",
         r"\mathrm{softmax}_j(x_j + a) = \frac{e^{a} e^{x_j}}{e^{a}\sum_{j'} e^{x_{j'}}} = \mathrm{softmax}_j(x_j)"),
        (r"With $a = -m\,i$, constant along row $i$:",
         r"\mathrm{softmax}_j\big(s_{ij} - m(i - j)\big) = \mathrm{softmax}_j\big(s_{ij} + m\,j\big)"),
    ),
    statement=r"-m(i - j) = m\,j - m\,i \ \Rightarrow\ \mathrm{softmax}_j(s_{ij} - m(i - j)) = "
              r"\mathrm{softmax}_j(s_{ij} + m j)",
    source="ofirpress/attention_with_linear_biases (the fairseq fork adds m j); BLOOM build_alibi_tensor",
    derive=_key_only,
    tie_back=_key_only_tie_back,
    ops=("alibi.bias",),
    corrects="key-only biases are not 'wrong' (mosaicml/llm-foundry#186): the logits differ, the attention "
             "weights do not (under a causal mask or any mask applied the same way to both)",
)


def _power_of_two() -> Derivation:
    heads = sympy.Symbol("H", positive=True, integer=True)
    h = sympy.Symbol("h", positive=True, integer=True)
    start = sympy.Integer(2) ** (-(sympy.Integer(2) ** -(sympy.log(heads, 2) - 3)))  # the authors' get_slopes
    lhs = start ** h
    rhs = sympy.Integer(2) ** (-8 * h / heads)
    steps = lambda e: sympy.simplify(sympy.powsimp(sympy.expand_log(sympy.expand_power_exp(e), force=True),  # noqa: E731
                                                   force=True))
    return Derivation(lhs, rhs, {"H": "a power of two", "h": "1..H"}, steps,
                      note="get_slopes_power_of_2: start = 2**(-2**-(log2 H - 3)), slope h = start**h")


def _power_of_two_tie_back() -> None:
    from posenc_ref.alibi import alibi_slopes

    for heads in (1, 2, 4, 8, 16, 32, 64, 128):
        expected = 2.0 ** (-8.0 * np.arange(1, heads + 1) / heads)
        np.testing.assert_allclose(alibi_slopes(num_heads=heads), expected, rtol=1e-15)
        np.testing.assert_allclose(alibi_slopes(num_heads=heads, slope_rule="geometric"), expected, rtol=1e-15)


def _power_of_two_fixed() -> None:
    from posenc_ref.alibi import alibi_slopes

    assert alibi_slopes(num_heads=8).tolist() == [2.0**-k for k in range(1, 9)]  # the paper's 1/2 ... 1/256
    # not a power of two: the authors' rule and the geometric reading part ways (H = 12)
    assert not np.allclose(alibi_slopes(num_heads=12), alibi_slopes(num_heads=12, slope_rule="geometric"))


POWER_OF_TWO = Claim(
    name="alibi.power_of_two_slopes",
    title="For H a power of two, the slopes are 2^(-8h/H)",
    proof=(
        (r"The authors' code starts the ladder at $2^{-2^{-(\log_2 H - 3)}}$; the inner exponent is:",
         r"2^{-(\log_2 H - 3)} = \frac{2^3}{2^{\log_2 H}} = \frac{8}{H}"),
        (r"Slope $h$ is the start raised to the power $h$:",
         r"m_h = \big(2^{-8/H}\big)^h = 2^{-8h/H},\qquad h = 1, \dots, H"),
    ),
    statement=r"H = 2^n:\quad m_h = \big(2^{-8/H}\big)^h = 2^{-8h/H},\ h = 1, \dots, H",
    source="Press et al. 2021, section 3 (the geometric sequence starting at 2^(-8/H)); ofirpress get_slopes",
    derive=_power_of_two,
    tie_back=_power_of_two_tie_back,
    fixed_values=_power_of_two_fixed,
    ops=("alibi.slopes",),
)


CLAIMS = (ALIBI_RELATIVE, KEY_ONLY, POWER_OF_TWO)
