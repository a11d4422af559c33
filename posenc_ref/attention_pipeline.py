r"""One attention layer end to end, for goldens where layout and sign mistakes cannot cancel.

Formula
-------
For token ids :math:`x` (B, T), an embedding table :math:`E` (N, d), an absolute encoding
:math:`P` (T, d) or (B, T, d) and projections :math:`W_Q` (d, H D), :math:`W_K, W_V`
(d, Hkv D), :math:`W_O` (H D, d):

.. math::

    X = E[x] + P,\quad Q = X W_Q,\ K = X W_K,\ V = X W_V,\quad
    Y = \operatorname{attention}(Q, K, V)\, W_O

with the heads split as ``(B, T, H, D) -> (B, H, T, D)`` (head ``h`` owns columns
``h*D .. h*D + D - 1`` of the projection) and merged back the same way (Vaswani et al. 2017,
arXiv:1706.03762, section 3.2.2 and 3.5: "we add positional encodings to the input
embeddings").

Conventions
-----------
* ``pe_placement="input"`` (the paper, BERT, GPT-2, fairseq): the encoding rides into the
  projections. ``"after_block"`` adds it to the layer's *output* instead,
  ``Y = attention(E[x] W_Q, ...) W_O + P``: the common mistake the lesson card warns about
  ("adding position AFTER the first block"). Attention then never sees the order and the
  output is permutation-equivariant up to the added rows (``docs/attention.md``).
* Projections have no bias; ``scale = 1/sqrt(D)``; ``causal`` masks are bottom-right aligned
  (equal to top-left here since queries and keys are the same tokens).
* The absolute encoding is an input array (sinusoidal, learned, fairseq rows, ...), computed
  from explicit positions by its own op; rotary and bias schemes plug into :func:`attention`
  through ``attention_kwargs``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal

import numpy as np
from numpy.typing import NDArray

from posenc_ref.attention import attention
from posenc_ref.errors import SpecError, check_choice, check_float_array, check_int, check_positions, raised_by

PePlacement = Literal["input", "after_block"]
PE_PLACEMENTS: Final = ("input", "after_block")


def _split_heads(x: NDArray[np.float64], heads: int) -> NDArray[np.float64]:
    b, t, width = x.shape
    split: NDArray[np.float64] = x.reshape(b, t, heads, width // heads).transpose(0, 2, 1, 3)  # (B, heads, T, D)
    return split


def attention_layer(
    tokens: Any,
    embedding: Any,
    pe: Any,
    w_q: Any,
    w_k: Any,
    w_v: Any,
    w_o: Any,
    /,
    *,
    num_heads: int,
    num_kv_heads: int | None = None,
    causal: bool = True,
    pe_placement: PePlacement = "input",
    attention_kwargs: Mapping[str, Any] | None = None,
) -> NDArray[np.float64]:
    """Token ids -> embedding + absolute PE -> Q/K/V -> attention -> output projection.

    Parameters
    ----------
    tokens
        Integer token ids (B, T), each below the embedding's row count.
    embedding
        Embedding table (N, d).
    pe
        Absolute encoding rows for the tokens, (T, d) or (B, T, d).
    w_q, w_k, w_v, w_o
        Projections (d, H*D), (d, Hkv*D), (d, Hkv*D), (H*D, d).
    num_heads, num_kv_heads
        ``H`` and ``Hkv`` (``None``: ``Hkv = H``).
    causal
        Causal self-attention.
    pe_placement
        ``"input"`` or ``"after_block"`` (module notes).
    attention_kwargs
        Extra keyword arguments for :func:`posenc_ref.attention.attention` (plug-ins, masks).

    Returns
    -------
    ndarray, shape (B, T, d), float64

    Raises
    ------
    SpecError
        Token ids outside the table (``out_of_range``), inconsistent widths or head counts
        (``invalid_shape``), an unknown placement.

    Examples
    --------
    With one token the weights are [1], so the layer is ``(E[x] + P) W_V W_O``:

    >>> eye = np.eye(2)
    >>> attention_layer([[1]], eye, [[0.5, 0.0]], eye, eye, eye, eye, num_heads=1).tolist()
    [[[0.5, 1.0]]]
    """
    func = "attention_layer"
    check_choice(func, "pe_placement", pe_placement, PE_PLACEMENTS)
    heads = check_int(func, "num_heads", num_heads, minimum=1)
    kv_heads = heads if num_kv_heads is None else check_int(func, "num_kv_heads", num_kv_heads, minimum=1)
    ids = check_positions(func, "tokens", tokens, min_ndim=2)
    table = check_float_array(func, "embedding", embedding, ndim=2)
    width = table.shape[1]
    if ids.ndim != 2:
        raise SpecError(f"{func}: tokens must have shape (B, T), got {ids.shape}", category="invalid_shape")
    if ids.max() >= table.shape[0]:
        raise SpecError(f"{func}: token id {int(ids.max())} is beyond the {table.shape[0]}-row embedding",
                        category="out_of_range")
    b, t = ids.shape
    rows = check_float_array(func, "pe", pe)
    if rows.shape not in ((t, width), (b, t, width)):
        raise SpecError(f"{func}: pe must have shape ({t}, {width}) or ({b}, {t}, {width}), got {rows.shape}",
                        category="invalid_shape")
    w = {name: check_float_array(func, name, value, ndim=2)
         for name, value in (("w_q", w_q), ("w_k", w_k), ("w_v", w_v), ("w_o", w_o))}
    if w["w_q"].shape[0] != width or w["w_q"].shape[1] % heads:
        raise SpecError(f"{func}: w_q must have shape ({width}, H*D) with H={heads}, got {w['w_q'].shape}",
                        category="invalid_shape")
    head_dim = w["w_q"].shape[1] // heads
    for name, cols in (("w_k", kv_heads * head_dim), ("w_v", kv_heads * head_dim)):
        if w[name].shape != (width, cols):
            raise SpecError(f"{func}: {name} must have shape ({width}, {cols}), got {w[name].shape}",
                            category="invalid_shape")
    if w["w_o"].shape != (heads * head_dim, width):
        raise SpecError(f"{func}: w_o must have shape ({heads * head_dim}, {width}), got {w['w_o'].shape}",
                        category="invalid_shape")

    x = table[ids]  # (B, T, d)
    if pe_placement == "input":
        x = x + rows
    q = _split_heads(x @ w["w_q"], heads)
    k = _split_heads(x @ w["w_k"], kv_heads)
    v = _split_heads(x @ w["w_v"], kv_heads)
    with raised_by("attention_layer", "attention"):
        result = attention(q, k, v, causal=causal, **dict(attention_kwargs or {}))
    out = result[0] if isinstance(result, tuple) else result
    merged = out.transpose(0, 2, 1, 3).reshape(b, t, heads * head_dim)  # (B, T, H*D)
    y: NDArray[np.float64] = merged @ w["w_o"]
    if pe_placement == "after_block":
        y = y + rows  # Note: the mistake this option exists to demonstrate
    return y
