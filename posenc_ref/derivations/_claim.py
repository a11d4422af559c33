"""The claim record: an identity stated in LaTeX, proved with sympy, tied back to the reference."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import sympy


@dataclass(frozen=True)
class Derivation:
    """Both sides of an identity, the assumptions on its symbols, and the proof strategy.

    ``steps`` turns ``lhs - rhs`` into a form that is *syntactically* zero when the identity
    holds (explicit trig expansion, power expansion, ...); blind ``simplify`` is avoided because
    it is slow and can time out.
    """

    lhs: Any
    rhs: Any
    assumptions: dict[str, str]
    steps: Callable[[Any], Any] = sympy.expand
    note: str = ""

    def residual(self) -> Any:
        difference = self.lhs - self.rhs
        if isinstance(difference, sympy.MatrixBase):
            return difference.applyfunc(self.steps)
        return self.steps(difference)

    def holds(self) -> bool:
        """``True`` when the residual is exactly zero."""
        residual = self.residual()
        if isinstance(residual, sympy.MatrixBase):
            return bool(residual.is_zero_matrix)
        return bool(residual == 0)


@dataclass(frozen=True)
class Claim:
    """One identity the schemes rely on.

    Attributes
    ----------
    name
        Importable, stable name (``"sinusoidal.linear_shift"``).
    statement
        The identity in LaTeX.
    source
        Where it is stated (paper and equation, or the code it pins).
    derive
        Builds the :class:`Derivation` (the symbolic proof CI runs).
    tie_back
        Checks the identity numerically against the registered NumPy op(s); raises
        ``AssertionError`` on disagreement.
    fixed_values
        Checks values fixed by the paper or the original code (may be ``None``).
    ops
        The registered ops the tie-back exercises; the claim is *pending* while one is missing.
    corrects
        When the claim corrects a common statement: what is commonly said.
    proof
        The proof as a reader follows it: ``(why, equation)`` steps, the equation in LaTeX, each
        one a line the reader can check from the one before. The symbolic check
        (:attr:`derive`) is the machine-checked form of the same argument.
    """

    name: str
    title: str
    statement: str
    source: str
    derive: Callable[[], Derivation]
    tie_back: Callable[[], None]
    ops: tuple[str, ...]
    fixed_values: Callable[[], None] | None = None
    corrects: str = ""
    cases: tuple[str, ...] = field(default_factory=tuple)
    proof: tuple[tuple[str, str], ...] = ()
