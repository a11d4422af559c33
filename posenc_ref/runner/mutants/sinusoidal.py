"""Mutants of the sinusoidal ops (see :mod:`posenc_ref.runner.mutants`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from posenc_ref import sinusoidal
from posenc_ref.registry import get_op
from posenc_ref.runner.emulation import emulate
from posenc_ref.runner.mutants._common import Mutant, swap, with_params


def _shift_positions(op: str, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> Any:
    record = get_op(op)
    shifted = {k: (np.asarray(v) + 1 if k in record.position_inputs else v) for k, v in inputs.items()}
    return record.call(params, shifted)


def _fairseq_offset_ignored(op: str, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> Any:
    tokens = np.asarray(inputs["tokens"])
    rows = np.broadcast_to(np.arange(tokens.shape[1]) + params.get("past_length", 0), tokens.shape)
    table = sinusoidal.sinusoidal_table(rows, dim=params["dim"], base=params.get("base", 10000.0), ladder="t2t",
                                        layout="concat_sin_cos", odd_width="zero_pad_last")
    return rows.astype(np.int64), table


def _float16_angles(op: str, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> Any:
    return emulate(op, params, inputs, output_dtype="float32", angle_dtype="float16")


MUTANTS: Final[tuple[Mutant, ...]] = (
    Mutant("sinusoid-ladder-swapped", "paper ladder (2k/d) and t2t ladder (k/(n-1)) exchanged",
           "tensorflow/tensor2tensor#391; huggingface/transformers Marian vs marian-nmt",
           ("sinusoidal.table", "grid2d.sincos"), with_params(swap("ladder", {"paper": "t2t", "t2t": "paper"})),
           diagnosis="ladder="),
    Mutant("sinusoid-layout-swapped", "interleaved and concatenated sin/cos layouts exchanged",
           "tensorflow/tensor2tensor#1925; dmlc/gluon-nlp#178",
           ("sinusoidal.table",),
           with_params(swap("layout", {"interleaved": "concat_sin_cos", "concat_sin_cos": "interleaved",
                                         "concat_cos_sin": "concat_sin_cos"})),
           diagnosis="layout="),
    Mutant("positions-off-by-one", "positions start at 1 where the scheme starts at 0",
           "facebookresearch/fairseq#1187; huggingface/transformers#20761",
           ("sinusoidal.table", "grid2d.sincos", "learned.lookup"), _shift_positions,
           diagnosis="positions + 1"),
    Mutant("fairseq-offset-ignored", "fairseq rows taken as arange(T): padding_idx offset and pad zeroing ignored",
           "facebookresearch/fairseq#123, #1100; bytedance/lightseq#144",
           ("sinusoidal.fairseq",), _fairseq_offset_ignored),
    Mutant("float16-angles", "angles p * w computed in float16 (the model dtype)",
           "vllm-project/vllm#54620; EleutherAI/gpt-neox#1003",
           ("sinusoidal.table", "sinusoidal.fairseq", "grid2d.sincos"), _float16_angles, dtype="float32",
           diagnosis="float16 angles"),
)
