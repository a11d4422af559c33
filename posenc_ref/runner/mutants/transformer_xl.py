"""Mutants of the Transformer-XL ops (see :mod:`posenc_ref.runner.mutants`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from posenc_ref import transformer_xl
from posenc_ref.runner.mutants._common import Mutant, swap, with_params


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


MUTANTS: Final[tuple[Mutant, ...]] = (
    Mutant("xl-shift-bidirectional", "Transformer-XL's _rel_shift used where every key is visible (no causal mask)",
           "espnet/espnet#2684; kimiyoung/transformer-xl#8, #138; ZhengkunTian/OpenTransformer#25",
           ("transformer_xl.score",), _xl_shift_bidirectional),
    Mutant("xl-shift-for-xlnet", "the Transformer-XL shift where the XLNet shift is meant",
           "zihangdai/xlnet#97",
           ("transformer_xl.rel_shift",), with_params(swap("variant", {"xlnet": "transformer_xl"}))),
)
