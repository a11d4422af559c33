r"""RoPE frequencies: the inverse frequencies and attention factor of every scaling variant.

Formula
-------
Pair ``i = 0 .. d/2 - 1`` of a rotary space of width ``d`` turns at the inverse frequency
:math:`w_i = b^{-2i/d}` (RoFormer, Su et al. 2021, arXiv:2104.09864, eq. 15, 0-based). A
*scaling variant* (``rope_type``, transformers' ``ROPE_INIT_FUNCTIONS`` vocabulary) changes the
frequencies to :math:`w'_i` and may set an *attention factor* :math:`a` that multiplies both
cos and sin (so q.k logits are multiplied by :math:`a^2`):

* ``default``: :math:`w'_i = w_i`, :math:`a = 1`.
* ``linear`` (Position Interpolation, arXiv:2306.15595): :math:`w'_i = w_i / s`.
* ``ntk_aware`` (static NTK-aware base change, lucidrains ``theta_rescale_factor``):
  :math:`b' = b\,s^{d/(d-2)}`, :math:`w'_i = b'^{-2i/d}`.
* ``dynamic`` (dynamic NTK): with context length :math:`L` and trained length :math:`M`,
  :math:`b' = b\,(sL/M - (s-1))^{d/(d-2)}`. ``dynamic_convention="transformers"`` rescales only
  when :math:`L > M` (transformers 5.x ``_compute_dynamic_ntk_parameters`` with
  ``max(seq_len, M)``); ``"vllm_static"`` always applies the bracket (vLLM 0.33
  ``DynamicNTKScalingRotaryEmbedding`` with ``max_position`` as ``L``, built once).
* ``yarn`` (arXiv:2309.00071, section 3.2-3.4): :math:`c(\beta) = d\ln(L_0/(2\pi\beta))/(2\ln b)`,
  ``low = c(beta_fast)``, ``high = c(beta_slow)`` (floored / ceiled when ``truncate``),
  clamped to ``[0, d - 1]``; ``high += 0.001`` if equal; ramp
  :math:`\gamma_i = \mathrm{clip}((i - low)/(high - low), 0, 1)`;
  :math:`w'_i = w_i(1-\gamma_i) + (w_i/s)\gamma_i`. ggml's ``ext_factor`` :math:`e \in [0, 1]`
  scales the extrapolation weight :math:`1 - \gamma_i` (``rope_yarn``'s ``ramp_mix``): the blend
  uses :math:`\gamma_i + (1 - \gamma_i)(1 - e)` in place of :math:`\gamma_i` (bit for bit
  :math:`\gamma_i` at the default :math:`e = 1`). Attention factor: explicit
  ``attention_factor``; else 1 when :math:`e = 0` (ggml applies its magnitude correction only
  for :math:`e \ne 0`); else :math:`g(s, m)/g(s, m_{all})` when ``mscale`` and ``mscale_all_dim``
  are both non-zero; else :math:`g(s, 1)`, with :math:`g(s, m) = 0.1\,m\ln s + 1` for
  :math:`s > 1` and 1 otherwise. ``softmax_scale`` is the DeepSeek multiplier
  :math:`g(s, m_{all})^2` applied by the attention module (1 when ``mscale_all_dim`` is 0/None).
* ``llama3`` (Llama 3.1 ``apply_scaling``): :math:`\lambda_i = 2\pi/w_i`; keep :math:`w_i` when
  :math:`\lambda_i < L_0/h_f`, use :math:`w_i/s` when :math:`\lambda_i > L_0/l_f`, else
  :math:`(1-\sigma)w_i/s + \sigma w_i` with :math:`\sigma = (L_0/\lambda_i - l_f)/(h_f - l_f)`.
* ``longrope`` (Phi-3 "su"): :math:`w'_i = 1/(e_i\,b^{2i/d})` with ``e = long_factor`` when
  :math:`L > L_0` else ``short_factor``; :math:`a = \sqrt{1 + \ln s/\ln L_0}` for :math:`s > 1`
  (or the explicit ``attention_factor``). See :func:`longrope_inv_freq`.
* ``proportional`` (Gemma 4, Gemma JAX ``rope_proportion``): ``dim`` is the *head* width
  :math:`h`; :math:`r = \lfloor\rho h\rfloor // 2` pairs turn at :math:`b^{-2i/h}/s`, the other
  pairs at frequency 0.

Conventions
-----------
* Parameter names follow transformers' ``rope_parameters``: ``base`` is ``rope_theta``,
  ``original_max_position`` is ``original_max_position_embeddings`` (for ``dynamic`` it is
  transformers' ``max_position_embeddings`` / vLLM's ``max_trained_positions``), ``factor``,
  ``low_freq_factor``, ``high_freq_factor``, ``beta_fast``, ``beta_slow``, ``mscale``,
  ``mscale_all_dim``, ``attention_factor``, ``truncate``, ``partial_rotary_factor``; ``ext_factor``
  is ggml's (``ggml_rope_ext``; llama.cpp ``--yarn-ext-factor``). ``context_length``
  is transformers' ``max(position_ids) + 1`` over the batch, passed explicitly.
* ``yarn_convention``: ``"transformers"`` (5.x, as above) or ``"vllm_deepseek"`` (vLLM 0.33
  ``DeepseekScalingRotaryEmbedding``: always floor/ceil whatever ``truncate``, attention factor
  :math:`g(s, m)/g(s, m_{all})` with ``mscale`` default 1 and ``mscale_all_dim`` default 0, the
  explicit ``attention_factor`` ignored).
* Computation order, float64 throughout: ``w = base ** -((2.0 * i) / d)``, then the variant's
  arithmetic in the order written above.

Differences from common implementations
---------------------------------------
* transformers and vLLM build frequencies in float32 (``base ** (arange(0, d, 2).float() / d)``);
  the corpus judges them with the ``power`` tolerance class.
* transformers reads ``beta_fast``/``beta_slow`` with ``x or default``: 0 means the default.
* keras-hub (before PR #2981) clamped ``high`` to ``d/2 - 1``; transformers clamps to ``d - 1``.
* vLLM's own ``ntk`` type (``(b a)^{-2i/d} / a^{2/d}``) is not transformers' and is not modelled.

Derivation claims relied on (derivations issue): ``rope.linear_is_position_division`` (linear
scaling equals positions divided by ``s``), ``rope.ntk_frequency_extremes`` (the NTK base change
keeps :math:`w_0` and scales :math:`w_{d/2-1}` by exactly :math:`1/s`),
``rope.yarn_ramp_continuous`` and ``rope.llama3_smoothing_continuous`` (both schedules are
continuous at their band edges).
"""

from __future__ import annotations

from typing import Any, Final, Literal

import numpy as np
from numpy.typing import NDArray

from posenc_ref._rope_inv_freq import (
    VARIANTS,
    Settings,
    required,
    yarn_correction_range,
    yarn_mscale,
    yarn_ramp,
)
from posenc_ref.errors import SpecError, check_choice, check_float, check_int, check_size, raised_by

RopeType = Literal["default", "linear", "ntk_aware", "dynamic", "yarn", "llama3", "longrope", "proportional"]
ROPE_TYPES: Final = ("default", "linear", "ntk_aware", "dynamic", "yarn", "llama3", "longrope", "proportional")
DYNAMIC_CONVENTIONS: Final = ("transformers", "vllm_static")
YARN_CONVENTIONS: Final = ("transformers", "vllm_deepseek")
LONGROPE_CONVENTIONS: Final = ("transformers", "vllm")
_NEEDS_FACTOR: Final = ("linear", "ntk_aware", "dynamic", "yarn", "llama3", "longrope")

__all__ = [
    "DYNAMIC_CONVENTIONS", "LONGROPE_CONVENTIONS", "ROPE_TYPES", "VARIANTS", "YARN_CONVENTIONS", "RopeType",
    "longrope_inv_freq", "rope_inv_freq", "yarn_correction_range", "yarn_mscale", "yarn_ramp",
]


def rope_inv_freq(
    *,
    dim: int,
    base: float = 10000.0,
    rope_type: RopeType = "default",
    factor: float | None = None,
    original_max_position: int | None = None,
    context_length: int | None = None,
    low_freq_factor: float | None = None,
    high_freq_factor: float | None = None,
    beta_fast: float | None = None,
    beta_slow: float | None = None,
    mscale: float | None = None,
    mscale_all_dim: float | None = None,
    attention_factor: float | None = None,
    truncate: bool = True,
    ext_factor: float = 1.0,
    partial_rotary_factor: float = 1.0,
    short_factor: Any = None,
    long_factor: Any = None,
    dynamic_convention: Literal["transformers", "vllm_static"] = "transformers",
    yarn_convention: Literal["transformers", "vllm_deepseek"] = "transformers",
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Inverse frequencies, attention factor and softmax multiplier of a RoPE variant.

    Parameters
    ----------
    dim
        Rotary width ``d`` (even, >= 2); the head width ``h`` for ``proportional``.
    base
        ``rope_theta`` (> 0; > 1 for ``yarn``).
    rope_type
        One of ``ROPE_TYPES`` (see the module notes for each formula).
    factor
        Scale ``s``: required (>= 1) for linear, ntk_aware, dynamic, yarn, llama3, longrope
        (any > 0 there); ``proportional`` defaults to 1.
    original_max_position
        ``L0`` / ``M``: required for dynamic, yarn, llama3, longrope.
    context_length
        ``L``: required for dynamic and longrope.
    low_freq_factor, high_freq_factor
        Llama 3 band factors (required for llama3, ``low < high``).
    beta_fast, beta_slow, mscale, mscale_all_dim, attention_factor, truncate
        YaRN parameters (``attention_factor`` also for longrope).
    ext_factor
        YaRN: ggml's ``ext_factor``, the weight of the ramp's extrapolation side, in [0, 1]; 1
        (the default) is the YaRN paper and transformers, 0 interpolates every pair (``w/s``).
    partial_rotary_factor
        ``proportional``: fraction ``rho`` of the head that turns, in (0, 1].
    short_factor, long_factor
        ``longrope``: the per-pair factor lists, length ``d/2``.
    dynamic_convention, yarn_convention
        Which library's semantics (module notes).

    Returns
    -------
    inv_freq : ndarray, shape (P,), float64
    attention_factor : ndarray, shape (1,), float64
        Multiplies cos and sin.
    softmax_scale : ndarray, shape (1,), float64
        Extra multiplier of the softmax scale (DeepSeek YaRN), else 1.

    Raises
    ------
    SpecError
        Odd or too small ``dim``, unknown ``rope_type`` (listing the valid ones), a missing
        required parameter (named, with its transformers name), ``factor < 1`` where not allowed,
        factor lists of the wrong length, ``low_freq_factor >= high_freq_factor``.

    Examples
    --------
    >>> rope_inv_freq(dim=4, base=100.0)[0].tolist()
    [1.0, 0.1]
    >>> w, a, _ = rope_inv_freq(dim=128, rope_type="yarn", factor=16.0, original_max_position=4096)
    >>> float(a[0])
    1.2772588722239782
    """
    func = "rope_inv_freq"
    check_choice(func, "rope_type", rope_type, ROPE_TYPES)
    dim = check_int(func, "dim", dim, minimum=4 if rope_type in ("dynamic", "ntk_aware") else 2)
    if dim % 2:
        raise SpecError(f"{func}: dim must be even, got dim={dim}")
    check_size(func, "the frequencies", (dim // 2,))
    base = check_float(func, "base", base, positive=True)
    check_choice(func, "dynamic_convention", dynamic_convention, DYNAMIC_CONVENTIONS)
    check_choice(func, "yarn_convention", yarn_convention, YARN_CONVENTIONS)
    if not 0.0 <= check_float(func, "ext_factor", ext_factor) <= 1.0:
        raise SpecError(f"{func}: ext_factor must be in [0, 1] (ggml's ramp weight), got ext_factor={ext_factor!r}")
    if rope_type in _NEEDS_FACTOR or factor is not None:
        factor = check_float(func, "factor", required(rope_type, "factor", factor), positive=True)
        if factor < 1.0 and rope_type != "longrope":
            raise SpecError(f"{func}: factor must be >= 1 for rope_type={rope_type!r}, got factor={factor!r}")
    settings = Settings(
        rope_type=rope_type, dim=dim, base=base, s=1.0 if factor is None else float(factor),
        original_max_position=original_max_position, context_length=context_length,
        low_freq_factor=low_freq_factor, high_freq_factor=high_freq_factor, beta_fast=beta_fast,
        beta_slow=beta_slow, mscale=mscale, mscale_all_dim=mscale_all_dim, attention_factor=attention_factor,
        truncate=truncate, ext_factor=ext_factor, partial_rotary_factor=partial_rotary_factor,
        short_factor=short_factor, long_factor=long_factor, dynamic_convention=dynamic_convention,
        yarn_convention=yarn_convention,
    )
    variant = VARIANTS[rope_type]
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        try:
            result = variant(settings)
        except (OverflowError, ZeroDivisionError) as exc:
            raise SpecError(f"{func}: the parameters overflow float64 ({exc})") from None
    if not all(np.isfinite(part).all() for part in result):
        raise SpecError(f"{func}: the parameters overflow float64 (non-finite frequencies or factors)")
    return result


def longrope_inv_freq(
    short_factor: Any, long_factor: Any, /, *, dim: int, base: float = 10000.0, factor: float,
    original_max_position: int, context_length: int, attention_factor: float | None = None,
    longrope_convention: Literal["transformers", "vllm"] = "transformers",
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """LongRoPE (Phi-3) inverse frequencies and attention factor; see :func:`rope_inv_freq`.

    The factor lists are arrays, shape (P,); ``long_factor`` is used when
    ``context_length > original_max_position`` (transformers; vLLM makes the same test once per
    deployment with ``max_model_len`` as ``context_length``), else ``short_factor``.
    ``longrope_convention="vllm"`` (vLLM 0.33 ``Phi3LongRoPEScaledRotaryEmbedding``, llama.cpp's
    converter) ignores an explicit ``attention_factor``: the factor is always
    ``sqrt(1 + ln s / ln L0)``.

    Returns
    -------
    inv_freq : ndarray, shape (P,), float64
    attention_factor : ndarray, shape (1,), float64

    Examples
    --------
    >>> _, a = longrope_inv_freq([1.0], [2.0], dim=2, factor=32.0, original_max_position=4096,
    ...                          context_length=4097)
    >>> float(a[0])
    1.1902380714238083
    """
    check_choice("longrope_inv_freq", "longrope_convention", longrope_convention, LONGROPE_CONVENTIONS)
    if longrope_convention == "vllm":
        attention_factor = None  # Note: vLLM forwards only short_mscale/long_mscale, never attention_factor
    with raised_by("longrope_inv_freq", "rope_inv_freq"):
        w, a, _ = rope_inv_freq(dim=dim, base=base, rope_type="longrope", factor=factor,
                                original_max_position=original_max_position, context_length=context_length,
                                attention_factor=attention_factor, short_factor=short_factor,
                                long_factor=long_factor)
    return w, a
