"""Registry records of the RoPE variants (:mod:`posenc_ref.rope_variants`): xPos and M-RoPE.

Listed after the RoPE records of :mod:`posenc_ref.records.rope` in the registry; their tolerance
phases and input scales (:mod:`posenc_ref.scales.rope`) follow the rotated-channel rules given there.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from posenc_ref import rope_variants as rv
from posenc_ref.opspec import Case, OpRecord, Output, Param, error_cases
from posenc_ref.records.rope import X_LAYOUT
from posenc_ref.records.rope_scaling import BASE
from posenc_ref.scales.rope import _mrope_phase, _xpos_input_scale_of, _xpos_phase_of

# --- rope.xpos -------------------------------------------------------------------------------

def _qk_window(shape: tuple[int, ...], positions: Any) -> Any:
    def make(rng: np.random.Generator) -> dict[str, NDArray[Any]]:
        return {"q": rng.normal(size=shape), "k": rng.normal(size=shape),
                "positions": np.asarray(positions, dtype=np.int64)}
    return make


XPOS = OpRecord(
    name="rope.xpos",
    family="rope",
    function=rv.rope_xpos,
    inputs=("q", "k", "positions"),
    outputs=(Output("q_rot", "float64", "phase", _xpos_phase_of("q"), _xpos_input_scale_of("q")),
             Output("k_rot", "float64", "phase", _xpos_phase_of("k"), _xpos_input_scale_of("k"))),
    params=(
        BASE,
        Param("scale_base", "float", 512.0, doc="xPos scale base B (lucidrains xpos_scale_base)"),
        Param("centring", "str", "lucidrains", rv.CENTRINGS,
              users={"lucidrains": "lucidrains/rotary-embedding-torch use_xpos (c = T // 2)",
                     "torchscale": "microsoft/torchscale XPOS (c = ceil(T / 2))"},
              doc="where the scale power is zero"),
        Param("layout", "str", "interleaved", ("interleaved", "half"), doc="pairs (both xPos libraries: interleaved)"),
        X_LAYOUT,
    ),
    summary="xPos-rotated q and k in one window (centring convention named; compare scores across centrings)",
    citation="Sun et al. 2022, A Length-Extrapolatable Transformer, arXiv:2212.10554, eq. 7",
    cases=tuple([
        Case(f"rope.xpos.{centring}.odd_window.d32", {"centring": centring}, _qk_window((1, 2, 5, 32), range(5)),
             f"centring={centring} on an odd window (T = 5): the centres differ") for centring in rv.CENTRINGS
    ] + [
        Case("rope.xpos.even_window.long.d64", {"scale_base": 512.0}, _qk_window((1, 1, 4, 64), [4094, 4095, 4096,
                                                                                               4097]),
             "positions near 4096 in a window of 4", kind="long_position", flags=("LongPosition",)),
        Case("rope.xpos.half.bthd", {"layout": "half", "x_layout": "BTHD"}, _qk_window((2, 6, 2, 16), range(6)),
             "half-split pairs, (B, T, H, D)"),
        Case("rope.xpos.torchscale.long.d32", {"centring": "torchscale", "scale_base": 1024.0},
             _qk_window((1, 1, 5, 32), [4094, 4095, 4096, 4097, 4098]),
             "torchscale centring on an odd window near 4096 (scale base 1024: weights inside float16's range)",
             kind="long_position", flags=("LongPosition",)),
        Case("rope.xpos.bthd.long.d16", {"x_layout": "BTHD", "scale_base": 512.0},
             _qk_window((1, 4, 2, 16), [4094, 4095, 4096, 4097]),
             "(B, T, H, D) near 4096", kind="long_position", flags=("LongPosition",)),
    ] + error_cases("rope.xpos", [
        ("scale_base_zero", {"scale_base": 0.0}, _qk_window((1, 1, 2, 8), [0, 1]), "invalid_argument",
         "scale_base <= 0"),
        ("unknown_centring", {"centring": "middle"}, _qk_window((1, 1, 2, 8), [0, 1]), "invalid_argument",
         "unknown centring"),
        ("scale_overflows", {"scale_base": 1.0}, _qk_window((1, 1, 2, 8), [0, 10**6]), "out_of_range",
         "zeta ** (10^6 / 1) is beyond float64"),
    ])),
    position_inputs=("positions",),
    value_inputs=("q", "k"),
)


# --- rope.mrope_cos_sin ----------------------------------------------------------------------

def _mrope(positions: Any, section: tuple[int, ...]) -> dict[str, NDArray[np.int64]]:
    return {"positions": np.asarray(positions, dtype=np.int64), "mrope_section": np.asarray(section, dtype=np.int64)}


_VISION = [[0, 1, 2, 3, 3, 3, 3, 7, 8], [0, 1, 2, 3, 3, 4, 4, 7, 8], [0, 1, 2, 3, 4, 3, 4, 7, 8]]
_LONG_STREAMS = [[0, 4095, 131071, 10**6], [0, 4095, 131000, 10**6], [0, 4000, 131071, 999000]]


MROPE = OpRecord(
    name="rope.mrope_cos_sin",
    family="rope",
    function=rv.mrope_cos_sin,
    inputs=("positions", "mrope_section"),
    outputs=(Output("cos", "float64", "phase", _mrope_phase), Output("sin", "float64", "phase", _mrope_phase)),
    params=(
        Param("dim", "int", doc="rotary dim d = 2 * sum(mrope_section)"), BASE,
        Param("mrope_layout", "str", "chunked", rv.MROPE_LAYOUTS,
              users={"chunked": "Qwen2-VL; Qwen2.5-VL; Qwen2.5-Omni (transformers, vLLM)",
                     "interleaved": "Qwen3-VL (transformers); vLLM mrope_interleaved"},
              doc="which frequency takes which stream"),
        Param("width", "str", "full", ("half", "full"), doc="table width (as rope.cos_sin)"),
    ),
    summary="multimodal RoPE tables from temporal/height/width position streams",
    citation="Wang et al. 2024, Qwen2-VL, arXiv:2409.12191, section 2.1",
    cases=(
        Case("rope.mrope_cos_sin.chunked.qwen2vl.d128", {"dim": 128, "base": 1e6}, _mrope(_VISION, (16, 24, 24)),
             "Qwen2-VL sections [16, 24, 24]: text, a 2x2 image patch grid, text again"),
        Case("rope.mrope_cos_sin.interleaved.qwen3vl.d128", {"dim": 128, "base": 5e6, "mrope_layout": "interleaved"},
             _mrope(_VISION, (24, 20, 20)), "Qwen3-VL interleaved THWTHW... with sections [24, 20, 20]"),
        Case("rope.mrope_cos_sin.long.half", {"dim": 64, "width": "half"}, _mrope(_LONG_STREAMS, (8, 12, 12)),
             "streams up to 10^6", kind="long_position", flags=("LongPosition",)),
        Case("rope.mrope_cos_sin.error.section_sum", {"dim": 64}, _mrope(_VISION, (16, 24, 24)),
             "error: mrope sections summing to 64, not d/2 = 32", kind="error", error="invalid_argument"),
        Case("rope.mrope_cos_sin.error.two_streams", {"dim": 8}, _mrope([[0, 1], [0, 1]], (2, 1, 1)),
             "error: positions must hold 3 streams", kind="error", error="invalid_shape"),
        Case("rope.mrope_cos_sin.error.interleaved.section_sum",
             {"dim": 128, "base": 5e6, "mrope_layout": "interleaved"},
             _mrope(_VISION, (24, 20, 24)), "error under mrope_layout='interleaved': sections summing to 68, not "
             "d/2 = 64", kind="error", error="invalid_argument"),
    ),
    position_inputs=(),
)

RECORDS = (XPOS, MROPE)
