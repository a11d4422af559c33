"""XLNet's relative positions: the sinusoid rows ``R_delta`` of Transformer-XL, read from an ``xlnet`` config.

transformers 5.x ``XLNetModel.relative_positional_encoding`` builds, for ``qlen`` queries after
``mlen`` cached tokens (``klen = mlen + qlen``), one row per distance ``delta = klen, klen - 1,
...`` down to ``-qlen + 1`` (``attn_type="bi"``) or ``0`` (``"uni"``), each row
``[sin(delta w) | cos(delta w)]`` with ``w_k = 10000 ** (-2k / d_model)`` over the model width
``d_model`` (not the head width), the distance clamped to ``[-clamp_len, clamp_len]`` when
``clamp_len > 0``. Every layer projects the same rows with its own ``r`` weights (``q . W_r R``),
so the rule is one per model; the position term of query ``i`` and key ``j`` reads the row of
``delta = (mlen + i) - j`` after the model's ``rel_shift``, which is
:func:`posenc_ref.transformer_xl.rel_shift_xlnet` (its variant ``"xlnet"``).
"""

from __future__ import annotations

from typing import Any

from posenc_ref.errors import SpecError
from posenc_ref.models._reader import FUNC, Reader


def xlnet_layers(r: Reader) -> tuple[list[Any], int | None]:
    """(layers, None): XLNet has no largest position (relative distances, any cache length)."""
    from posenc_ref.models.resolve import LayerPositions
    n, heads, width = r.integer("n_layer", 24), r.integer("n_head", 16), r.integer("d_model", 1024)
    if width % heads:
        raise SpecError(f"{FUNC}: d_model={width} must be a multiple of n_head={heads} (XLNetConfig's rule)")
    if width % 2:
        raise SpecError(f"{FUNC}: d_model={width} must be even (the rows are [sin | cos] halves)")
    head_dim = width // heads
    given = r.get("d_head", head_dim, record_default=False)
    if given != head_dim:
        raise SpecError(f"{FUNC}: d_head={given!r} must equal d_model // n_head = {head_dim} "
                        "(XLNetConfig raises otherwise)")
    attn_type = r.get("attn_type", "bi")
    if attn_type not in ("bi", "uni"):
        raise SpecError(f"{FUNC}: attn_type must be 'bi' or 'uni' (XLNet), got attn_type={attn_type!r}")
    clamp = r.get("clamp_len", -1)
    if isinstance(clamp, bool) or not isinstance(clamp, int):
        raise SpecError(f"{FUNC}: clamp_len must be an integer (<= 0: no clamp), got clamp_len={clamp!r}")
    bi_data = r.get("bi_data", False)
    if bi_data is not False:
        raise SpecError(f"{FUNC}: bi_data={bi_data!r} (pretraining's two-direction batch: half the batch reads "
                        "R at the negated distances) is not a per-layer rule read here; released configs have "
                        "bi_data false")
    mem = r.get("mem_len")
    r.note("XLNet's R rows are [sin | cos] over d_model (base 10000, w_k = 10000 ** (-2k / d_model)), shared by "
           "every layer; each layer applies its own r_w_bias / r_r_bias and W_r")
    if clamp > 0:
        r.note(f"distances are clamped to [-{clamp}, {clamp}] before the sinusoid (clamp_len={clamp})")
    if mem:
        r.note(f"mem_len={mem}: a forward pass with cached tokens has klen = mlen + qlen; the distances follow")
    params = {"dim": width, "base": 10000.0, "clamp_len": max(int(clamp), 0), "attn_type": attn_type}
    kind = "bi_attention" if attn_type == "bi" else "uni_attention"
    return [LayerPositions(i, "encoder", kind, "transformer_xl", params, heads, heads, head_dim,
                           logit_scale=float(head_dim) ** -0.5) for i in range(n)], None
