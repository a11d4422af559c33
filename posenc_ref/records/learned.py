"""Registry records of the learned-table lookup (:mod:`posenc_ref.learned`)."""

from __future__ import annotations

import numpy as np

from posenc_ref import learned as lr
from posenc_ref.opspec import Case, OpRecord, Output, Param
from posenc_ref.sinusoidal import fairseq_positions

_TABLE = lr.learned_init(20, 8, seed=20170612)
_LONG_TABLE = lr.learned_init(4098, 2, seed=20220502)
"""4098 rows: a 4096-position table with OPT's offset 2 (OPT-125m's own has 2050)."""
_TOKENS = np.array([[1, 1, 7, 8, 9, 10], [5, 6, 7, 8, 9, 10]], dtype=np.int64)


def _cases() -> tuple[Case, ...]:
    return (
        Case("learned.lookup.bert.p0-11", {}, {"table": _TABLE, "positions": np.arange(12)},
             "BERT/GPT-2: offset 0, positions 0..11"),
        Case("learned.lookup.gpt2.cache_offset", {}, {"table": _TABLE, "positions": np.arange(15, 20)},
             "decoding with a cache: positions past_len + 0..L-1 up to the last row", kind="edge"),
        Case("learned.lookup.bart.offset2", {"offset": 2}, {"table": _TABLE, "positions": np.arange(6)},
             "BART/OPT: row = position + 2"),
        Case("learned.lookup.roberta.left_padded", {},
             {"table": _TABLE, "positions": fairseq_positions(_TOKENS, padding_idx=1)},
             "RoBERTa left padding: rows from the fairseq rule (padding reads row 1, real tokens from row 2)",
             kind="edge"),
        Case("learned.lookup.clamp", {"out_of_range": "clamp"},
             {"table": _TABLE, "positions": np.array([0, 19, 20, 1000])},
             "out_of_range='clamp' (plain JAX indexing): rows beyond the table read the last row", kind="edge"),
        Case("learned.lookup.opt.offset2.long", {"offset": 2},
             {"table": _LONG_TABLE, "positions": np.array([0, 1, 2047, 2048, 4094, 4095])},
             "a 4098-row table with offset 2: position 4095 reads the last row, 4097", kind="long_position",
             flags=("LongPosition",)),
        Case("learned.lookup.clamp.long", {"out_of_range": "clamp"},
             {"table": _LONG_TABLE, "positions": np.array([0, 4095, 4097, 4098, 65535, 1000000])},
             "out_of_range='clamp' past a 4098-row table: every position from 4097 on reads row 4097",
             kind="long_position", flags=("LongPosition",)),
        Case("learned.lookup.error.beyond_table", {}, {"table": _TABLE, "positions": np.array([3, 20])},
             "error: position 20 of a 20-row table", kind="error", error="out_of_range"),
        Case("learned.lookup.error.beyond_table_with_offset", {"offset": 2},
             {"table": _TABLE, "positions": np.array([18])}, "error: position 18 + offset 2 of a 20-row table",
             kind="error", error="out_of_range"),
        Case("learned.lookup.error.negative_position", {}, {"table": _TABLE, "positions": np.array([-1])},
             "error: a negative position", kind="error", error="invalid_argument"),
        Case("learned.lookup.error.table_rank3", {}, {"table": _TABLE[None], "positions": np.array([0])},
             "error: a table that is not (N, D)", kind="error", error="invalid_shape"),
        Case("learned.lookup.error.unknown_policy", {"out_of_range": "wrap"},
             {"table": _TABLE, "positions": np.array([0])}, "error: an unknown out_of_range policy",
             kind="error", error="invalid_argument"),
        Case("learned.lookup.error.empty_positions", {},
             {"table": _TABLE, "positions": np.zeros((0,), dtype=np.int64)}, "error: empty positions",
             kind="error", error="invalid_shape"),
    )


LOOKUP = OpRecord(
    name="learned.lookup",
    family="absolute",
    function=lr.learned_lookup,
    inputs=("table", "positions"),
    outputs=(Output("rows", "float64", "ulp"),),
    params=(
        Param("offset", "int", 0, doc="row of position 0 (0: BERT/GPT-2; 2: BART/OPT/RoBERTa)", suspects=(0, 1, 2)),
        Param("out_of_range", "str", "error", lr.OUT_OF_RANGE,
              users={"error": "posenc-ref default; PyTorch CPU (IndexError)", "clamp": "plain JAX indexing"},
              doc="policy for rows beyond the table"),
    ),
    summary="rows of a learned absolute position table",
    citation="Devlin et al. 2018 (BERT), arXiv:1810.04805; Radford et al. 2019 (GPT-2)",
    cases=_cases(),
    position_inputs=("positions",),
    value_inputs=("table",),
)

RECORDS = (LOOKUP,)
