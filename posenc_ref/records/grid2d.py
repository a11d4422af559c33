"""Registry records of the 2-D sin-cos op (:mod:`posenc_ref.grid2d`)."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from posenc_ref import grid2d as g2
from posenc_ref.opspec import Case, OpRecord, Output, Param
from posenc_ref.records.sinusoidal import BASE
from posenc_ref.scales.grid2d import _phase


def _grid(height: int, width: int, origin: int = 0) -> dict[str, NDArray[np.int64]]:
    ys, xs = g2.grid_coords(height, width, origin=origin)
    return {"ys": ys, "xs": xs}


PRESETS = {
    "mae": ({"axis_order": "x_first", "block_layout": "sin_cos", "ladder": "paper"}, 0),
    "hf_helper": ({"axis_order": "y_first", "block_layout": "sin_cos", "ladder": "paper"}, 0),
    "timm_default": ({"axis_order": "y_first", "block_layout": "sin_sin_cos_cos", "ladder": "paper"}, 0),
    "big_vision": ({"axis_order": "x_first", "block_layout": "sin_cos", "ladder": "t2t"}, 0),
    "detr_sine": ({"axis_order": "y_first", "block_layout": "interleaved", "ladder": "paper"}, 1),
}


def _cases() -> tuple[Case, ...]:
    cases = [
        Case(f"grid2d.{name}.grid3x5.d16", {"dim": 16, **params}, _grid(3, 5, origin),
             f"{name} settings on a non-square 3x5 grid (square grids hide axis swaps)")
        for name, (params, origin) in PRESETS.items()
    ]
    cases += [
        Case("grid2d.mae.grid14x10.d32", {"dim": 32, **PRESETS["mae"][0]}, _grid(14, 10),
             "a ViT-sized non-square grid, MAE settings"),
        Case("grid2d.timm_default.grid1x7.d8", {"dim": 8, **PRESETS["timm_default"][0]}, _grid(1, 7),
             "a single-row grid: the y blocks stay at position 0", kind="edge"),
        Case("grid2d.hf_helper.large_coords.d16", {"dim": 16, **PRESETS["hf_helper"][0]},
             {"ys": np.array([0, 511, 4095, 65535]), "xs": np.array([65535, 4095, 1, 0])},
             "large coordinates: the phase-aware tolerance on both axes", kind="long_position",
             flags=("LongPosition",)),
    ]
    cases += [  # every ladder, axis order and block layout at coordinates past 4095 (any integer grid)
        Case(f"grid2d.{name}.large_coords.d16", {"dim": 16, **PRESETS[name][0]},
             {"ys": np.array([0, 1, 4095, 65535, 1000000]), "xs": np.array([1000000, 65535, 4096, 3, 0])},
             f"{name} settings at coordinates to 10^6 (a high-resolution grid or a global pixel offset): the "
             "phase-aware tolerance on both axes", kind="long_position", flags=("LongPosition",))
        for name in ("big_vision", "timm_default", "detr_sine")
    ]
    cases += [
        Case("grid2d.error.dim_not_multiple_of_4", {"dim": 6}, _grid(2, 2),
             "error: dim must be a multiple of 4", kind="error", error="invalid_argument"),
        Case("grid2d.error.shape_mismatch", {"dim": 8}, {"ys": np.arange(3), "xs": np.arange(4)},
             "error: ys and xs of different shapes", kind="error", error="invalid_shape"),
        Case("grid2d.error.unknown_axis_order", {"dim": 8, "axis_order": "h_first"}, _grid(2, 2),
             "error: an unknown axis order (the message lists the valid ones)", kind="error",
             error="invalid_argument"),
        Case("grid2d.error.unknown_block_layout", {"dim": 8, "block_layout": "cos_sin"}, _grid(2, 2),
             "error: an unknown block layout", kind="error", error="invalid_argument"),
        Case("grid2d.error.negative_coordinate", {"dim": 8}, {"ys": np.array([0, -1]), "xs": np.array([0, 0])},
             "error: a negative coordinate", kind="error", error="invalid_argument"),
    ]
    return tuple(cases)


GRID_2D = OpRecord(
    name="grid2d.sincos",
    family="absolute",
    function=g2.grid_sincos_2d,
    inputs=("ys", "xs"),
    outputs=(Output("table", "float64", "phase", _phase),),
    params=(
        Param("dim", "int", doc="encoded width, a multiple of 4"),
        BASE,
        Param("ladder", "str", "paper", ("paper", "t2t"),
              users={"paper": "MAE; HF helper; timm; DETR (exponent k/(D/4))",
                     "t2t": "big_vision posemb_sincos_2d (exponent k/(D/4 - 1))"},
              doc="per-axis frequency ladder"),
        Param("axis_order", "str", "x_first", g2.AXIS_ORDERS,
              users={"x_first": "MAE (effective); big_vision; DETR learned",
                     "y_first": "DETR sine; HF build_2d_sinusoidal_position_embedding; timm; t2t n-d"},
              doc="which axis fills the first half"),
        Param("block_layout", "str", "sin_cos", g2.BLOCK_LAYOUTS,
              users={"sin_cos": "MAE; big_vision; HF helper", "sin_sin_cos_cos": "timm default",
                     "interleaved": "DETR PositionEmbeddingSine"},
              doc="arrangement of the sin/cos blocks"),
    ),
    summary="2-D sin-cos encodings of integer grid coordinates",
    citation="He et al. 2021 (MAE), arXiv:2111.06377; Carion et al. 2020 (DETR), arXiv:2005.12872",
    cases=_cases(),
    position_inputs=("ys", "xs"),
)

RECORDS = (GRID_2D,)
