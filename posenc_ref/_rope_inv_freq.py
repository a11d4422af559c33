"""The inverse-frequency formula of each RoPE scaling variant and the YaRN helpers they share.

The spec text is :mod:`posenc_ref.rope_scaling`, whose :func:`~posenc_ref.rope_scaling.rope_inv_freq`
checks what every variant shares (``rope_type``, ``dim``, ``base``, the conventions, ``factor``) and
calls the variant's function here through :data:`VARIANTS`; the names here that have no leading
underscore are re-exported there and documented as ``posenc_ref.rope_scaling.NAME``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from posenc_ref.errors import SpecError, check_float, check_float_array, check_int, check_size

_TRANSFORMERS_NAME: Final = {"original_max_position": "original_max_position_embeddings", "base": "rope_theta"}
_FUNC: Final = "rope_inv_freq"


def yarn_mscale(factor: float, mscale: float = 1.0) -> float:
    """YaRN's ``g(s, m) = 0.1 m ln s + 1`` for ``s > 1``, else 1 (transformers ``get_mscale``).

    Examples
    --------
    >>> yarn_mscale(1.0), round(yarn_mscale(math.e), 12)
    (1.0, 1.1)
    """
    factor = check_float("yarn_mscale", "factor", factor)
    mscale = check_float("yarn_mscale", "mscale", mscale)
    return 1.0 if factor <= 1.0 else 0.1 * mscale * math.log(factor) + 1.0


def yarn_correction_range(
    *, dim: int, base: float, original_max_position: int, beta_fast: float | None = None,
    beta_slow: float | None = None, truncate: bool = True,
) -> tuple[float, float]:
    """YaRN's ``(low, high)`` pair indices (transformers ``find_correction_range``).

    Examples
    --------
    >>> yarn_correction_range(dim=128, base=1e4, original_max_position=4096)
    (20, 46)
    """
    func = "yarn_correction_range"
    dim = check_int(func, "dim", dim, minimum=2)
    base = check_float(func, "base", base, positive=True)
    if base <= 1.0:
        raise SpecError(f"{func}: base must be > 1 (ln(base) divides), got base={base!r}")
    original_max_position = check_int(func, "original_max_position", original_max_position, minimum=1)
    for name, beta in (("beta_fast", beta_fast), ("beta_slow", beta_slow)):
        if beta is not None:
            check_float(func, name, beta, nonnegative=True)

    def correction(name: str, rotations: float) -> float:
        ratio = original_max_position / (rotations * 2 * math.pi)
        if not 0.0 < ratio < math.inf:  # Note: a beta near 1e308 or 1e-308 takes the quotient out of float64
            raise SpecError(f"{func}: {name}={rotations!r} puts original_max_position / ({name} * 2 pi) = "
                            f"{ratio!r} outside float64's positive range")
        return dim * math.log(ratio) / (2 * math.log(base))

    low = correction("beta_fast", beta_fast or 32.0)  # Note: transformers' `x or default`: 0 means the default
    high = correction("beta_slow", beta_slow or 1.0)
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    return max(low, 0), min(high, dim - 1)  # Note: clamp to d - 1 (keras-hub once used d/2 - 1)


def yarn_ramp(low: float, high: float, pairs: int, *, dtype: type = np.float64) -> NDArray[Any]:
    """YaRN's ramp ``gamma_i = clip((i - low) / (high - low), 0, 1)`` over pairs ``i = 0 .. pairs - 1``.

    ``(low, high)`` from :func:`yarn_correction_range`; when they are equal ``high`` gets
    ``+ 0.001`` first (transformers ``linear_ramp_factor``). ``dtype`` is float64 for the spec;
    the runner's low-precision emulation asks for float32, every step then rounding to it.

    Examples
    --------
    >>> yarn_ramp(1, 3, 5).tolist()
    [0.0, 0.0, 0.5, 1.0, 1.0]
    """
    low = check_float("yarn_ramp", "low", low)
    high = check_float("yarn_ramp", "high", high)
    pairs = check_int("yarn_ramp", "pairs", pairs, minimum=1)
    check_size("yarn_ramp", "the ramp of pairs", (pairs,))
    if low == high:
        high += 0.001  # Note: transformers' guard against a zero-width ramp
    t = np.dtype(dtype).type
    ramp: NDArray[Any] = np.clip((np.arange(pairs, dtype=t) - t(low)) / t(high - low), 0, 1).astype(t)
    return ramp


# --- one function per rope_type: its own checks first, then its formula -------------------------
# Each reads the shared, already checked ``dim``, ``base`` and ``s`` (the factor, 1 when absent)
# and checks the parameters only it uses, in the order it uses them.

InvFreq = tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]


@dataclass(frozen=True)
class Settings:
    """The arguments of :func:`rope_inv_freq`: ``dim``, ``base`` and ``s`` checked, the rest as given."""

    rope_type: str
    dim: int
    base: float
    s: float
    original_max_position: int | None
    context_length: int | None
    low_freq_factor: float | None
    high_freq_factor: float | None
    beta_fast: float | None
    beta_slow: float | None
    mscale: float | None
    mscale_all_dim: float | None
    attention_factor: float | None
    truncate: bool
    ext_factor: float
    partial_rotary_factor: float
    short_factor: Any
    long_factor: Any
    dynamic_convention: str
    yarn_convention: str

    def pairs(self) -> NDArray[np.float64]:
        return np.arange(self.dim // 2, dtype=np.float64)  # (P,)

    def plain(self) -> NDArray[np.float64]:
        """The unscaled ``w_i = base ** -(2i/d)``, (P,)."""
        return self.base ** -((2.0 * self.pairs()) / self.dim)

    def original(self) -> int:
        return check_int(_FUNC, "original_max_position",
                         required(self.rope_type, "original_max_position", self.original_max_position), minimum=1)

    def length(self) -> int:
        return check_int(_FUNC, "context_length", required(self.rope_type, "context_length", self.context_length),
                         minimum=1)


def _one() -> NDArray[np.float64]:
    return np.ones(1)


def required(rope_type: str, name: str, value: Any) -> Any:
    if value is None:
        alias = _TRANSFORMERS_NAME.get(name)
        also = f" (transformers: {alias})" if alias else ""
        raise SpecError(f"{_FUNC}: rope_type={rope_type!r} requires {name}{also}, got {name}=None")
    return value


def _default(a: Settings) -> InvFreq:
    return a.plain(), _one(), _one()


def _linear(a: Settings) -> InvFreq:
    return a.plain() / a.s, _one(), _one()


def _ntk_aware(a: Settings) -> InvFreq:
    scaled = a.base * a.s ** (a.dim / (a.dim - 2))
    return scaled ** -((2.0 * a.pairs()) / a.dim), _one(), _one()


def _dynamic(a: Settings) -> InvFreq:
    trained, length = a.original(), a.length()
    if a.dynamic_convention == "transformers":
        length = max(length, trained)  # Note: transformers rescales only past M
    bracket = (a.s * length / trained) - (a.s - 1.0)
    if bracket <= 0:
        raise SpecError(f"{_FUNC}: the dynamic NTK bracket factor * context_length / original_max_position - "
                        f"(factor - 1) must be > 0, got {bracket!r}")
    scaled = a.base * bracket ** (a.dim / (a.dim - 2))
    return scaled ** -((2.0 * a.pairs()) / a.dim), _one(), _one()


def _yarn(a: Settings) -> InvFreq:
    original = a.original()
    if a.base <= 1.0:
        raise SpecError(f"{_FUNC}: base must be > 1 for rope_type='yarn', got base={a.base!r}")
    if not isinstance(a.truncate, (bool, np.bool_)):
        raise TypeError(f"{_FUNC}: truncate must be a bool, got {type(a.truncate).__name__} {a.truncate!r}")
    fast = check_float(_FUNC, "beta_fast", a.beta_fast, positive=True) if a.beta_fast else None
    slow = check_float(_FUNC, "beta_slow", a.beta_slow, positive=True) if a.beta_slow else None
    m = check_float(_FUNC, "mscale", a.mscale, nonnegative=True) if a.mscale is not None else None
    m_all = None if a.mscale_all_dim is None else check_float(_FUNC, "mscale_all_dim", a.mscale_all_dim,
                                                              nonnegative=True)
    truncate = bool(a.truncate)
    ext = check_float(_FUNC, "ext_factor", a.ext_factor, nonnegative=True)
    if ext > 1.0:
        raise SpecError(f"{_FUNC}: ext_factor must be in [0, 1] (ggml's ramp weight), got ext_factor={ext!r}")
    s = a.s
    if a.yarn_convention == "vllm_deepseek":
        truncate = True  # Note: vLLM's DeepSeek class always floors/ceils
        factor_a = yarn_mscale(s, 1.0 if m is None else m) / yarn_mscale(s, 0.0 if m_all is None else m_all)
    elif a.attention_factor is not None:
        factor_a = check_float(_FUNC, "attention_factor", a.attention_factor, positive=True)
    elif ext == 0.0:
        factor_a = 1.0  # Note: ggml's rope_yarn applies its magnitude correction only when ext_factor != 0
    elif m and m_all:
        factor_a = yarn_mscale(s, m) / yarn_mscale(s, m_all)
    else:
        factor_a = yarn_mscale(s)
    low, high = yarn_correction_range(dim=a.dim, base=a.base, original_max_position=original, beta_fast=fast,
                                      beta_slow=slow, truncate=truncate)
    w = a.plain()
    ramp = yarn_ramp(low, high, a.dim // 2)  # (P,)
    if ext != 1.0:  # Note: ggml scales the extrapolation weight 1 - ramp by ext_factor
        ramp = ramp + (1.0 - ramp) * (1.0 - ext)
    scaled = w * (1.0 - ramp) + (w / s) * ramp
    softmax = yarn_mscale(s, m_all) ** 2 if m_all else 1.0
    return scaled, np.array([factor_a]), np.array([softmax])


def _llama3(a: Settings) -> InvFreq:
    original = a.original()
    low = check_float(_FUNC, "low_freq_factor", required(a.rope_type, "low_freq_factor", a.low_freq_factor),
                      positive=True)
    high = check_float(_FUNC, "high_freq_factor", required(a.rope_type, "high_freq_factor", a.high_freq_factor),
                       positive=True)
    if low >= high:
        raise SpecError(f"{_FUNC}: low_freq_factor must be < high_freq_factor, got {low!r} >= {high!r}")
    w, s = a.plain(), a.s
    wavelength = 2.0 * math.pi / w  # (P,)
    smooth = (original / wavelength - low) / (high - low)
    blended = (1.0 - smooth) * w / s + smooth * w
    scaled = np.where(wavelength < original / high, w, np.where(wavelength > original / low, w / s, blended))
    return scaled, _one(), _one()


def _longrope(a: Settings) -> InvFreq:
    original, length = a.original(), a.length()
    chosen = a.long_factor if length > original else a.short_factor  # Note: long only when L > L0 (transformers)
    name = "long_factor" if length > original else "short_factor"
    ext = check_float_array(_FUNC, name, required(a.rope_type, name, chosen), ndim=1)
    if ext.shape != (a.dim // 2,):
        raise SpecError(f"{_FUNC}: {name} must have length dim/2 = {a.dim // 2}, got length {ext.shape[0]}")
    if (ext <= 0).any():
        raise SpecError(f"{_FUNC}: {name} must be > 0, got {float(ext.min())!r}")
    if a.attention_factor is None:
        factor_a = 1.0 if a.s <= 1.0 else math.sqrt(1.0 + math.log(a.s) / math.log(original))
    else:
        factor_a = check_float(_FUNC, "attention_factor", a.attention_factor, positive=True)
    return 1.0 / (ext * a.base ** ((2.0 * a.pairs()) / a.dim)), np.array([factor_a]), _one()


def _proportional(a: Settings) -> InvFreq:
    rho = check_float(_FUNC, "partial_rotary_factor", a.partial_rotary_factor, positive=True)
    if rho > 1.0:
        raise SpecError(f"{_FUNC}: partial_rotary_factor must be <= 1, got partial_rotary_factor={rho!r}")
    i = a.pairs()
    turning = int(rho * a.dim // 2)  # (P,) pairs i < turning rotate
    return np.where(i < turning, a.base ** -((2.0 * i) / a.dim), 0.0) / a.s, _one(), _one()


class _Table(dict[str, Callable[[Settings], InvFreq]]):
    """The formulas by ``rope_type``; a type without one is a SpecError, never a fallback."""

    def __missing__(self, rope_type: str) -> Callable[[Settings], InvFreq]:
        raise SpecError(f"{_FUNC}: rope_type={rope_type!r} is listed in ROPE_TYPES but has no frequency formula "
                        f"in rope_scaling.VARIANTS (which has {', '.join(map(repr, self))})")


VARIANTS: Final = _Table({
    "default": _default,
    "linear": _linear,
    "ntk_aware": _ntk_aware,
    "dynamic": _dynamic,
    "yarn": _yarn,
    "llama3": _llama3,
    "longrope": _longrope,
    "proportional": _proportional,
})
"""The formula of each ``rope_type``, in the order of :data:`ROPE_TYPES` (a test holds them equal)."""
