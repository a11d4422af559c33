"""The symbols and helpers shared by the RoPE claims (:mod:`posenc_ref.derivations.rope`): one pair
of channels, its rotation, the trigonometric simplifications and the seeded generator of the tie-backs.
"""

from __future__ import annotations

import numpy as np
import sympy

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
