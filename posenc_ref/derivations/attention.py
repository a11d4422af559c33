r"""Claims about attention itself (:mod:`posenc_ref.attention`): why position must be injected."""

from __future__ import annotations

import itertools

import numpy as np
import sympy

from posenc_ref.derivations._claim import Claim, Derivation

_N, _D = 3, 2


def _matrix(name: str) -> sympy.Matrix:
    return sympy.Matrix(_N, _D, lambda i, j: sympy.Symbol(f"{name}_{i}{j}", real=True))


def _attend(q: sympy.Matrix, k: sympy.Matrix, v: sympy.Matrix) -> sympy.Matrix:
    """softmax(q k^T / sqrt(D)) v, written out with exp."""
    e = (q * k.T / sympy.sqrt(_D)).applyfunc(sympy.exp)
    weights = sympy.Matrix(_N, _N, lambda i, j: e[i, j] / sum(e[i, m] for m in range(_N)))
    return weights * v


def _permutation(order: tuple[int, ...]) -> sympy.Matrix:
    return sympy.Matrix(_N, _N, lambda i, j: 1 if order[i] == j else 0)


def _equivariance() -> Derivation:
    q, k, v = _matrix("q"), _matrix("k"), _matrix("v")
    # every permutation of three tokens, stacked: Attn(Pq, Pk, Pv) against P Attn(q, k, v)
    orders = list(itertools.permutations(range(_N)))
    lhs = sympy.Matrix.vstack(*(_attend(_permutation(o) * q, _permutation(o) * k, _permutation(o) * v)
                                for o in orders))
    rhs = sympy.Matrix.vstack(*(_permutation(o) * _attend(q, k, v) for o in orders))
    return Derivation(lhs, rhs, {"q_ij, k_ij, v_ij": "real"}, sympy.expand,
                      note="all 3! permutations of three tokens with symbolic 2-dimensional q, k, v; "
                           "the tie-back checks longer sequences and grouped heads numerically")


def _equivariance_tie_back() -> None:
    from posenc_ref.attention import attention

    rng = np.random.default_rng(7)
    q, k, v = rng.normal(size=(1, 4, 9, 8)), rng.normal(size=(1, 2, 9, 8)), rng.normal(size=(1, 2, 9, 8))
    out = np.asarray(attention(q, k, v))
    for _ in range(5):
        order = rng.permutation(9)
        permuted = np.asarray(attention(q[:, :, order], k[:, :, order], v[:, :, order]))
        np.testing.assert_allclose(permuted, out[:, :, order], rtol=0, atol=1e-13)
    # a relative bias (a function of i - j) breaks it: the same permutation moves the output
    offsets = np.subtract.outer(np.arange(9), np.arange(9)).astype(np.float64)
    biased = np.asarray(attention(q, k, v, bias=-0.5 * np.abs(offsets)))
    order = np.roll(np.arange(9), 1)
    moved = np.asarray(attention(q[:, :, order], k[:, :, order], v[:, :, order], bias=-0.5 * np.abs(offsets)))
    assert not np.allclose(moved, biased[:, :, order])


EQUIVARIANCE = Claim(
    name="attention.permutation_equivariance",
    title="Attention without positions is permutation-equivariant",
    proof=(
        (r"Permuting the tokens permutes the rows of $Q$, $K$, $V$; the logits become:",
         r"(PQ)(PK)^\top = P\,(Q K^\top)\,P^\top"),
        (r"A row-wise softmax does not depend on the order of the entries in a row, so it commutes with the permutation:",
         r"\mathrm{softmax}\big(P S P^\top\big) = P\,\mathrm{softmax}(S)\,P^\top"),
        (r"The output, using $P^\top P = I$:",
         r"P A P^\top\, P V = P\,(A V)"),
    ),
    statement=r"\mathrm{Attn}(PQ, PK, PV) = P\,\mathrm{Attn}(Q, K, V)\ \text{for every permutation } P",
    source="Vaswani et al. 2017 section 3.5 motivates positional encodings by it; corrects tutorials that call "
           "attention permutation-invariant",
    derive=_equivariance,
    tie_back=_equivariance_tie_back,
    ops=("attention",),
    corrects="'self-attention is permutation-invariant': permuting the tokens permutes the outputs the same way "
             "(equivariance); only the set of outputs is invariant",
)

CLAIMS = (EQUIVARIANCE,)
