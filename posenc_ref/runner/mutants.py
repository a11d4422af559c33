"""The mutant catalogue: deliberately wrong implementations, one per bug class seen in the wild.

Every mutant must fail at least one golden case, and the reference must pass them all (both
are tests). Where the mistake is a known convention slip, the runner's diagnosis must name it;
``diagnosis`` holds the phrase it must contain. Run one with
``posenc-ref conformance mutant:NAME`` to see what a user with that bug sees.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from posenc_ref import sinusoidal
from posenc_ref.registry import get_op
from posenc_ref.runner.emulation import emulate

Run = Callable[[str, Mapping[str, Any], Mapping[str, NDArray[Any]]], Any]


@dataclass(frozen=True)
class Mutant:
    name: str
    mistake: str
    source: str
    ops: tuple[str, ...]
    run: Run
    dtype: str = "float64"
    diagnosis: str | None = None

    def adapter(self) -> Any:
        return _MutantAdapter(self)


class _MutantAdapter:
    version = "mutant"

    def __init__(self, mutant: Mutant) -> None:
        self.mutant = mutant
        self.name = f"mutant:{mutant.name}"
        self.dtype = mutant.dtype
        self.capabilities: dict[str, dict[str, tuple[Any, ...]]] = {op: {} for op in mutant.ops}

    def run(self, op: str, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> Any:
        return self.mutant.run(op, params, inputs)


def _with_params(change: Callable[[str, dict[str, Any]], None]) -> Run:
    def run(op: str, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> Any:
        changed = dict(params)
        change(op, changed)
        return get_op(op).call(changed, inputs)
    return run


def _swap(name: str, mapping: Mapping[str, str]) -> Callable[[str, dict[str, Any]], None]:
    def change(op: str, params: dict[str, Any]) -> None:
        if name in params:
            params[name] = mapping.get(params[name], params[name])
    return change


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


MUTANTS: Final[dict[str, Mutant]] = {m.name: m for m in (
    Mutant("sinusoid-ladder-swapped", "paper ladder (2k/d) and t2t ladder (k/(n-1)) exchanged",
           "tensorflow/tensor2tensor#391; huggingface/transformers Marian vs marian-nmt",
           ("sinusoidal.table", "grid2d.sincos"), _with_params(_swap("ladder", {"paper": "t2t", "t2t": "paper"})),
           diagnosis="ladder="),
    Mutant("sinusoid-layout-swapped", "interleaved and concatenated sin/cos layouts exchanged",
           "tensorflow/tensor2tensor#1925; dmlc/gluon-nlp#178",
           ("sinusoidal.table",),
           _with_params(_swap("layout", {"interleaved": "concat_sin_cos", "concat_sin_cos": "interleaved",
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
    Mutant("learned-clamp-instead-of-error", "out-of-range learned positions clamped silently",
           "jax.numpy indexing; microsoft/onnxruntime#10234",
           ("learned.lookup",), _with_params(_swap("out_of_range", {"error": "clamp"}))),
    Mutant("grid2d-axes-swapped", "x and y halves of a 2-D encoding exchanged",
           "facebookresearch/mae#18; huggingface/transformers#41380",
           ("grid2d.sincos",), _with_params(_swap("axis_order", {"x_first": "y_first", "y_first": "x_first"})),
           diagnosis="axis_order="),
    Mutant("grid2d-blocks-timm", "timm's [sin|sin|cos|cos] blocks where per-axis [sin|cos] is meant",
           "timm build_sincos2d_pos_embed interleave_sin_cos",
           ("grid2d.sincos",),
           _with_params(_swap("block_layout", {"sin_cos": "sin_sin_cos_cos", "sin_sin_cos_cos": "sin_cos",
                                               "interleaved": "sin_cos"})),
           diagnosis="block_layout="),
)}
