"""Mutants of the relative-position and resampling ops (see :mod:`posenc_ref.runner.mutants`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from posenc_ref import transformer_xl
from posenc_ref.registry import get_op
from posenc_ref.runner.mutants._common import Mutant, swap, with_params


def _shaw_unclipped(op: str, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> Any:
    """Rows ``d + K`` without the clip; indices outside the table wrap as NumPy/PyTorch negative indices do."""
    k = int(params["max_relative_position"])
    distance = np.asarray(inputs["k_positions"])[None, :] - np.asarray(inputs["q_positions"])[:, None]
    if params["sign"] == "query_minus_key":
        distance = -distance
    index = (distance + k) % (2 * k + 1)
    if op == "shaw.index":
        return index
    if op == "shaw.logits":
        q, keys, table = (np.asarray(inputs[n], dtype=np.float64) for n in ("q", "k", "rel_keys"))
        return q @ keys.T + np.take_along_axis(q @ table.T, index, axis=1)
    alpha, values, table = (np.asarray(inputs[n], dtype=np.float64) for n in ("weights", "v", "rel_values"))
    return alpha @ values + np.einsum("ij,ijd->id", alpha, table[index])


def _xl_shift_bidirectional(op: str, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> Any:
    """The Transformer-XL pad-and-reshape shift applied to every pair, as if a causal mask followed.

    Rows are built for distances ``Tk - 1 .. 0`` and the memory is taken as ``Tk - Tq`` (the
    layout the shift assumes); entries with ``j > m + i`` keep the zeros and wrapped rows.
    """
    q, k, u, v, w_r = (np.asarray(inputs[n], dtype=np.float64) for n in ("q", "k", "u", "v", "w_r"))
    rows = transformer_xl.shift_row_distances(q.shape[0], k.shape[0], variant="transformer_xl")
    if int(params["clamp_len"]) > 0:
        rows = np.minimum(rows, int(params["clamp_len"]))
    r = transformer_xl.xl_relative_embedding(rows, dim=w_r.shape[0], base=params["base"]) @ w_r
    return (q + u) @ k.T + transformer_xl.rel_shift_transformer_xl((q + v) @ r.T)


def _bicubic_other_a(op: str, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> Any:
    other = -0.5 if float(params["cubic_a"]) == -0.75 else -0.75
    return get_op(op).call({**params, "cubic_a": other}, inputs)


MUTANTS: Final[tuple[Mutant, ...]] = (
    Mutant("shaw-unclipped", "Shaw rows d + K without clipping to +/-K (out-of-table rows wrap around)",
           "huggingface/transformers#9164 (relative_key never clips)",
           ("shaw.index", "shaw.logits", "shaw.output"), _shaw_unclipped),
    Mutant("xl-shift-bidirectional", "Transformer-XL's _rel_shift used where every key is visible (no causal mask)",
           "espnet/espnet#2684; kimiyoung/transformer-xl#8, #138; ZhengkunTian/OpenTransformer#25",
           ("transformer_xl.score",), _xl_shift_bidirectional),
    Mutant("xl-shift-for-xlnet", "the Transformer-XL shift where the XLNet shift is meant",
           "zihangdai/xlnet#97",
           ("transformer_xl.rel_shift",), with_params(swap("variant", {"xlnet": "transformer_xl"}))),
    Mutant("bicubic-other-a", "Keys' cubic with the other a (-0.5 for -0.75 and back)",
           "Blaizzy/mlx-vlm#1243; apache/tvm#17932; pytorch/pytorch#19650",
           ("resample.weights", "resample.table_1d", "resample.grid_2d"), _bicubic_other_a,
           diagnosis="cubic_a="),
)
