"""Sympy-verified derivations: every identity the schemes rely on, proved and tied back.

Each :class:`Claim` is checked three ways (the tests run all three):

1. **symbolic**: ``Derivation.holds()``: the residual ``lhs - rhs`` reduces to exactly zero under
   the stated assumptions, by explicit steps (trig or power expansion), not a blind
   ``simplify``;
2. **numeric tie-back**: the identity checked against the registered NumPy op(s);
3. **fixed values**: numbers fixed by the paper or the original code, where they exist.

:data:`REQUIRED` names every claim the specification depends on. A required claim without a
:class:`Claim`, or whose ops are not registered yet, is *pending*: ``posenc-ref derive`` and the
tests list it as such; it never passes silently. Only this package and :mod:`posenc_ref.oracle`
import sympy or mpmath.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from posenc_ref.derivations import alibi, attention, rope, sinusoidal, t5, transformer_xl
from posenc_ref.derivations._claim import Claim, Derivation

CLAIMS: Final[tuple[Claim, ...]] = (
    *sinusoidal.CLAIMS,
    *rope.CLAIMS,
    *alibi.CLAIMS,
    *t5.CLAIMS,
    *transformer_xl.CLAIMS,
    *attention.CLAIMS,
)

REQUIRED: Final[tuple[str, ...]] = (
    "sinusoidal.linear_shift",
    "sinusoidal.shift_orthogonal",
    "sinusoidal.shift_group",
    "sinusoidal.dot_product_offset",
    "sinusoidal.norm",
    "sinusoidal.wavelength_range",
    "sinusoidal.layout_permutation",
    "rope.relativity",
    "rope.norm",
    "rope.layout_permutation",
    "rope.linear_is_position_division",
    "rope.ntk_frequency_extremes",
    "rope.yarn_ramp_continuous",
    "rope.llama3_smoothing_continuous",
    "xpos.relative_scores",
    "alibi.relative",
    "alibi.key_only_row_constant",
    "alibi.power_of_two_slopes",
    "t5.buckets_monotone_exact_region",
    "relative.shift_equals_direct_indexing",
    "attention.permutation_equivariance",
)
"""Every claim the specification relies on, proved or pending."""

Status = Literal["proved", "failed", "pending"]


@dataclass(frozen=True)
class Verdict:
    name: str
    status: Status
    detail: str


def get_claim(name: str) -> Claim:
    for claim in CLAIMS:
        if claim.name == name:
            return claim
    raise KeyError(f"unknown claim {name!r}; known: {', '.join(c.name for c in CLAIMS)}")


def missing_ops(claim: Claim) -> list[str]:
    """Ops the claim's tie-back needs that are not registered."""
    from posenc_ref.registry import OPS

    names = {op.name for op in OPS}
    return [op for op in claim.ops if op not in names]


def verdict(name: str, *, numeric: bool = True) -> Verdict:
    """Check one required claim: symbolic, and with ``numeric`` the tie-back and fixed values."""
    try:
        claim = get_claim(name)
    except KeyError:
        return Verdict(name, "pending", "not written yet")
    if not claim.derive().holds():
        return Verdict(name, "failed", "the symbolic residual does not vanish")
    missing = missing_ops(claim)
    if missing:
        return Verdict(name, "pending", f"symbolic proof holds; tie-back waits for {', '.join(missing)}")
    if numeric:
        try:
            claim.tie_back()
            if claim.fixed_values:
                claim.fixed_values()
        except AssertionError as exc:
            return Verdict(name, "failed", f"numeric check failed: {exc}")
    checks = ["symbolic"] + (["numeric tie-back"] if numeric else [])
    checks += ["fixed values"] if numeric and claim.fixed_values else []
    return Verdict(name, "proved", ", ".join(checks))


__all__ = ["CLAIMS", "REQUIRED", "Claim", "Derivation", "Verdict", "get_claim", "missing_ops", "verdict"]
