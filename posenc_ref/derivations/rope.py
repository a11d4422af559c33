r"""Claims about RoPE and its scalings (:mod:`posenc_ref.rope`, :mod:`posenc_ref.rope_scaling`,
:mod:`posenc_ref.rope_variants`).

The rotation is pinned to the code: ``rotate_half`` turns the pair :math:`(x_1, x_2)` into
:math:`(x_1\cos\theta - x_2\sin\theta,\ x_2\cos\theta + x_1\sin\theta) = R(\theta)\,x` with
:math:`R(\theta) = \begin{pmatrix}\cos\theta & -\sin\theta\\ \sin\theta & \cos\theta\end{pmatrix}`.
Every claim is proved for one pair with symbolic frequency and positions, which proves it for
every width (the head is a stack of such pairs, in either layout).
"""

from __future__ import annotations

import numpy as np
import sympy

from posenc_ref.derivations._claim import Claim, Derivation
from posenc_ref.derivations._rope_scaling import LINEAR, LLAMA3, NTK, YARN
from posenc_ref.derivations._rope_symbols import K, Q, _rng, _rotation, _unit, m, n, w
from posenc_ref.rope import rope_apply, rope_layout_permutation, rope_scores
from posenc_ref.rope_variants import rope_xpos

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
