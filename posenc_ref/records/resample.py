"""Registry records of table resampling (:mod:`posenc_ref.resample`).

Scores and resampled tables are sums of products, judged with the ``reduction`` tolerance
(:mod:`posenc_ref.tolerance`): each output element carries its error scale ``m``, the sum over
its terms of ``(number of roundings on the term's path) * |term|`` plus the error of factors that
are themselves computed (sinusoids, interpolation weights), in units of half an epsilon.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from posenc_ref import resample as rs
from posenc_ref.opspec import Case, OpRecord, Output, Param
from posenc_ref.scales.resample import (
    _grid_input_scale,
    _grid_scale,
    _table_1d_input_scale,
    _table_1d_scale,
    _weights_scale,
)

RESAMPLE_CITATION = "Dosovitskiy et al. 2020 (ViT), arXiv:2010.11929, section 3.2; Keys 1981, IEEE TASSP 29(6); " \
                    "timm resample_abs_pos_embed; torch.nn.functional.interpolate"


MODE_PARAMS = (
    Param("kernel", "str", "bicubic", rs.KERNELS,
          users={"bicubic": "timm; HF ViT/MAE/DeiT/DINO interpolate_pos_encoding",
                 "bilinear": "big_vision/Google ViT resample_posemb (scipy zoom order=1)"},
          doc="cubic convolution or triangle"),
    Param("cubic_a", "float", -0.75, (-0.75, -0.5),
          users={-0.75: "PyTorch bicubic (antialias=False); OpenCV; jax.image 'cubic-pytorch'",
                 -0.5: "PIL; jax.image.resize; PyTorch and timm with antialias=True"},
          doc="Keys' parameter a"),
    Param("antialias", "str", "off", rs.ANTIALIAS,
          users={"off": "F.interpolate default; HF ViT; MAE; DeiT; DINO",
                 "on": "timm resample_abs_pos_embed; PIL; JAX"},
          doc="stretch the kernel when downsampling and renormalise at the edges"),
    Param("coordinates", "str", "half_pixel", rs.COORDINATES,
          users={"half_pixel": "align_corners=False (timm, HF, PyTorch default, JAX)",
                 "align_corners": "align_corners=True; scipy.ndimage.zoom grid_mode=False (big_vision)"},
          doc="source coordinate mapping"),
    Param("size_from", "str", "size", rs.SIZE_FROM,
          users={"size": "timm; HF ViT (transformers#35411); DINOv2 after dinov2#378",
                 "scale_factor": "DINO v1 and DINOv2 before #378 (scale_offset=0.1); older HF ViT"},
          doc="target given as a size or as a scale factor"),
    Param("scale_offset", "float", 0.0, doc="added to the new size before dividing (DINO's 0.1)"),
)


TIMM = {"antialias": "on", "cubic_a": -0.5}


DINO = {"size_from": "scale_factor", "scale_offset": 0.1}


def _weights_cases() -> tuple[Case, ...]:
    def case(name: str, params: dict[str, Any], comment: str, kind: Any = "normal") -> Case:
        return Case(f"resample.weights.{name}", params, {}, comment, kind=kind)
    return (
        case("bicubic.up14to16.torch", {"in_size": 14, "new_size": 16}, "PyTorch bicubic a=-0.75, 14 -> 16"),
        case("bicubic.up14to16.timm", {"in_size": 14, "new_size": 16, **TIMM},
             "timm: antialias path, a=-0.5, renormalised edges, 14 -> 16"),
        case("bicubic.down16to14.torch", {"in_size": 16, "new_size": 14},
             "PyTorch bicubic without antialias, 16 -> 14"),
        case("bicubic.down16to7.timm", {"in_size": 16, "new_size": 7, **TIMM},
             "timm downsampling: the kernel is stretched by 16/7"),
        case("bilinear.align_corners.7to13", {"in_size": 7, "new_size": 13, "kernel": "bilinear",
                                               "coordinates": "align_corners"},
             "align-corners bilinear (big_vision / scipy zoom order=1)"),
        case("bilinear.antialias.down16to6", {"in_size": 16, "new_size": 6, "kernel": "bilinear", "antialias": "on"},
             "antialiased triangle filter (PIL BILINEAR)"),
        case("bicubic.dino_scale_factor.14to16", {"in_size": 14, "new_size": 16, **DINO},
             "DINO v1: scale factor (16 + 0.1)/14 moves every sampling position"),
        case("bicubic.size.13to15", {"in_size": 13, "new_size": 15},
             "by size: 15 rows, where floor(13 * (15/13)) = 14 under a scale factor (dino#8)", kind="edge"),
        case("bicubic.align_corners.5to9", {"in_size": 5, "new_size": 9, "coordinates": "align_corners"},
             "align-corners bicubic: scale (n-1)/(m-1)"),
        case("bicubic.single_output", {"in_size": 6, "new_size": 1}, "resampling to one row", kind="edge"),
        case("error.new_size0", {"in_size": 6, "new_size": 0}, "error: resampling to a size < 1", kind="error"),
        case("error.antialias_align_corners", {"in_size": 6, "new_size": 3, "antialias": "on",
                                               "coordinates": "align_corners"},
             "error: antialias with align-corners coordinates is not pinned", kind="error"),
        case("error.offset_with_size", {"in_size": 6, "new_size": 3, "scale_offset": 0.1},
             "error: scale_offset under size_from='size'", kind="error"),
        case("error.unknown_kernel", {"in_size": 6, "new_size": 3, "kernel": "lanczos"}, "error: an unknown kernel",
             kind="error"),
    )


def _with_error(cases: tuple[Case, ...]) -> tuple[Case, ...]:
    return tuple(Case(c.id, c.params, c.inputs, c.comment, kind=c.kind, error="invalid_argument")
                 if c.kind == "error" else c for c in cases)


RESAMPLE_WEIGHTS = OpRecord(
    name="resample.weights", family="resample", function=rs.resample_weights, inputs=(),
    outputs=(Output("weights", "float64", "reduction", _weights_scale),),
    params=(Param("in_size", "int", doc="n input samples"), Param("new_size", "int", doc="requested output size"),
            *MODE_PARAMS),
    summary="one axis' (m, n) interpolation weights", citation=RESAMPLE_CITATION, cases=_with_error(_weights_cases()),
)


def _table(rows: int, dim: int) -> Any:
    return lambda rng: {"table": rng.normal(size=(rows, dim))}


def _table_1d_cases() -> tuple[Case, ...]:
    def case(name: str, params: dict[str, Any], rows: int, comment: str, **extra: Any) -> Case:
        return Case(f"resample.table_1d.{name}", params, _table(rows, 3), comment, **extra)
    return (
        case("bicubic.up10to16.prefix1", {"new_length": 16}, 11, "a 1-D table with a class row, 10 -> 16"),
        case("bicubic.down16to10.timm", {"new_length": 10, **TIMM}, 17, "timm antialias path downsampling 16 -> 10"),
        case("bilinear.prefix0.8to5", {"new_length": 5, "num_prefix_tokens": 0, "kernel": "bilinear"}, 8,
             "no prefix rows, bilinear 8 -> 5"),
        case("bicubic.align_corners.6to11", {"new_length": 11, "coordinates": "align_corners"}, 7,
             "align-corners bicubic on a 1-D table: end rows map onto end rows"),
        case("dino.scale_factor.10to16", {"new_length": 16, **DINO}, 11, "scale factor (16 + 0.1)/10 (DINO v1)"),
        case("size.13to15", {"new_length": 15}, 14, "by size: 15 rows, where a scale factor gives 14 (dino#8)",
             kind="edge"),
        case("error.new_length0", {"new_length": 0}, 11, "error: resampling to a size < 1", kind="error",
             error="invalid_argument"),
        case("error.prefix_only", {"new_length": 4, "num_prefix_tokens": 2}, 2,
             "error: a table with nothing beyond its prefix rows", kind="error", error="invalid_shape"),
        case("error.timm.prefix_only", {"new_length": 4, "num_prefix_tokens": 2, **TIMM}, 2,
             "error under timm's antialias path (antialias='on', cubic_a=-0.5): nothing beyond the prefix rows",
             kind="error", error="invalid_shape"),
        case("error.antialias_align_corners", {"new_length": 5, "antialias": "on", "coordinates": "align_corners"},
             11, "error: antialias with align-corners coordinates is not pinned", kind="error",
             error="invalid_argument"),
    )


RESAMPLE_1D = OpRecord(
    name="resample.table_1d", family="resample", function=rs.resample_table_1d, inputs=("table",),
    outputs=(Output("table", "float64", "reduction", _table_1d_scale, _table_1d_input_scale),),
    params=(Param("new_length", "int", doc="requested non-prefix rows"),
            Param("num_prefix_tokens", "int", 1, doc="leading rows kept as they are"), *MODE_PARAMS),
    summary="resample the non-prefix rows of a 1-D learned table", citation=RESAMPLE_CITATION,
    cases=_table_1d_cases(), value_inputs=("table",),
)


def _grid_cases() -> tuple[Case, ...]:
    def case(name: str, params: dict[str, Any], prefix: int, comment: str, **extra: Any) -> Case:
        full = {"num_prefix_tokens": prefix, **params}
        rows = prefix + params["grid_height"] * params["grid_width"]
        return Case(f"resample.grid_2d.{name}", full, _table(rows, 3), comment, **extra)
    g14 = {"grid_height": 14, "grid_width": 14, "new_height": 16, "new_width": 16}
    g16 = {"grid_height": 16, "grid_width": 16, "new_height": 14, "new_width": 14}
    odd = {"grid_height": 6, "grid_width": 9, "new_height": 11, "new_width": 4}
    return (
        case("up14to16.timm", {**g14, **TIMM}, 1, "timm resample_abs_pos_embed 14x14 -> 16x16 (224 -> 256 px)"),
        case("up14to16.torch", g14, 1, "HF ViT interpolate_pos_encoding / F.interpolate bicubic 14 -> 16"),
        case("down16to14.timm", {**g16, **TIMM}, 1, "timm downsampling 16 -> 14: antialias stretches the kernel"),
        case("down16to14.torch", g16, 1, "bicubic without antialias 16 -> 14"),
        case("non_square.6x9to11x4.prefix2", odd, 2,
             "non-square grid, up in one axis and down in the other, two prefix rows (DeiT cls + dist)"),
        case("non_square.6x9to11x4.timm", {**odd, **TIMM}, 1, "non-square grid on the antialias path"),
        case("dino.scale_factor.14to16", {**g14, **DINO}, 1, "DINO v1 scale factor (16 + 0.1)/14"),
        case("bilinear.align_corners.7to12", {"grid_height": 7, "grid_width": 7, "new_height": 12, "new_width": 12,
                                               "kernel": "bilinear", "coordinates": "align_corners"}, 0,
             "big_vision resample_posemb: align-corners linear, no prefix row"),
        case("size.13to15", {"grid_height": 13, "grid_width": 13, "new_height": 15, "new_width": 15}, 1,
             "by size: 15x15, where a scale factor gives 14x14 (dino#8)", kind="edge"),
        Case("resample.grid_2d.error.length_mismatch_prefix1", {**g14, "num_prefix_tokens": 1},
             _table(14 * 14, 3), "error: 196 rows for 1 prefix row + 14x14", kind="error", error="invalid_shape"),
        Case("resample.grid_2d.error.length_mismatch_prefix0", {**g14, "num_prefix_tokens": 0},
             _table(14 * 14 + 1, 3), "error: 197 rows for no prefix row + 14x14", kind="error", error="invalid_shape"),
        Case("resample.grid_2d.error.new_height0", {**g14, "new_height": 0}, _table(197, 3),
             "error: resampling to a height < 1", kind="error", error="invalid_argument"),
        Case("resample.grid_2d.error.table_1d", {**g14}, {"table": np.zeros(197)},
             "error: a table that is not (rows, D)", kind="error", error="invalid_shape"),
        Case("resample.grid_2d.error.bilinear.length_mismatch_prefix1",
             {**g14, "num_prefix_tokens": 1, "kernel": "bilinear", "coordinates": "align_corners"},
             _table(14 * 14, 3), "error under kernel='bilinear', coordinates='align_corners' (big_vision): 196 rows "
             "for 1 prefix row + 14x14", kind="error", error="invalid_shape"),
        Case("resample.grid_2d.error.antialias_align_corners",
             {**g14, "antialias": "on", "coordinates": "align_corners"}, _table(197, 3),
             "error: antialias with align-corners coordinates is not pinned", kind="error", error="invalid_argument"),
    )


RESAMPLE_2D = OpRecord(
    name="resample.grid_2d", family="resample", function=rs.resample_grid_2d, inputs=("table",),
    outputs=(Output("table", "float64", "reduction", _grid_scale, _grid_input_scale),),
    params=(Param("grid_height", "int", doc="declared H"), Param("grid_width", "int", doc="declared W"),
            Param("new_height", "int", doc="requested H'"), Param("new_width", "int", doc="requested W'"),
            Param("num_prefix_tokens", "int", 1, doc="leading rows kept as they are (timm default 1)"),
            *MODE_PARAMS),
    summary="resample a ViT position table's grid rows, prefix rows kept", citation=RESAMPLE_CITATION,
    cases=_grid_cases(), value_inputs=("table",),
)

RECORDS = (RESAMPLE_WEIGHTS, RESAMPLE_1D, RESAMPLE_2D)
