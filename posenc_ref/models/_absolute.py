"""Absolute position embeddings (learned tables, sinusoids): the rule of each stack's embedding.

The embedding is added once, below the first layer; every layer of the stack reports it, so that
``layers`` still has one entry per attention layer.
"""

from __future__ import annotations

from typing import Any

from posenc_ref.errors import SpecError
from posenc_ref.models._reader import FUNC, Reader, check_upper


def _stack(kind: str, start: int, n: int, scheme: str, params: dict[str, Any], heads: int, hidden: int) -> list[Any]:
    from posenc_ref.models.resolve import LayerPositions
    if hidden % heads:
        raise SpecError(f"{FUNC}: the model width {hidden} is not a multiple of its {heads} heads")
    check_upper("head_dim", hidden // heads)  # Note: the head width derived from the model width
    return [LayerPositions(start + i, kind, kind, scheme, params, heads, heads, hidden // heads,
                           logit_scale=float(hidden // heads) ** -0.5) for i in range(n)]


def _learned(offset: int, rows: int, dim: int) -> dict[str, Any]:
    return {"offset": offset, "num_positions": rows, "dim": dim}


def absolute_layers(r: Reader, model_type: str) -> tuple[list[Any], int | None]:
    """(layers, the number of positions the embedding covers) for the learned / sinusoidal models."""
    if model_type in ("bert", "roberta"):
        kind = r.get("position_embedding_type", "absolute")
        if kind != "absolute":
            raise SpecError(f"{FUNC}: position_embedding_type={kind!r} is not read here (only 'absolute')")
        rows, hidden = r.integer("max_position_embeddings", 512), r.integer("hidden_size")
        offset = r.integer("pad_token_id", 1, minimum=0) + 1 if model_type == "roberta" else 0
        if model_type == "roberta":
            r.note("RoBERTa positions start at padding_idx + 1 (create_position_ids_from_input_ids)")
        layers = _stack("encoder", 0, r.integer("num_hidden_layers"), "learned", _learned(offset, rows, hidden),
                        r.integer("num_attention_heads"), hidden)
        return layers, rows - offset
    if model_type == "gpt2":
        rows, hidden = r.integer("n_positions", 1024), r.integer("n_embd", 768)
        return _stack("decoder", 0, r.integer("n_layer", 12), "learned", _learned(0, rows, hidden),
                      r.integer("n_head", 12), hidden), rows
    if model_type == "opt":
        rows, hidden = r.integer("max_position_embeddings", 2048), r.integer("hidden_size")
        r.note("OPT's learned table has max_position_embeddings + 2 rows; position p reads row p + 2")
        return _stack("decoder", 0, r.integer("num_hidden_layers"), "learned", _learned(2, rows + 2, hidden),
                      r.integer("num_attention_heads"), hidden), rows
    if model_type == "bart":
        rows, hidden = r.integer("max_position_embeddings", 1024), r.integer("d_model")
        params = _learned(2, rows + 2, hidden)
        r.note("BART's learned tables have max_position_embeddings + 2 rows; position p reads row p + 2")
        enc = _stack("encoder", 0, r.integer("encoder_layers"), "learned", params,
                     r.integer("encoder_attention_heads"), hidden)
        dec = _stack("decoder", len(enc), r.integer("decoder_layers"), "learned", params,
                     r.integer("decoder_attention_heads"), hidden)
        return enc + dec, rows
    if model_type in ("vit", "dinov2"):
        image, patch, hidden = r.integer("image_size"), r.integer("patch_size"), r.integer("hidden_size")
        if image % patch:
            raise SpecError(f"{FUNC}: image_size={image} is not a multiple of patch_size={patch}")
        rows = (image // patch) ** 2 + 1
        r.note(f"{model_type}: {image // patch}x{image // patch} patch grid plus the [CLS] row 0; other image "
               "sizes interpolate the table (resample.grid_2d)")
        return _stack("encoder", 0, r.integer("num_hidden_layers"), "learned", _learned(0, rows, hidden),
                      r.integer("num_attention_heads"), hidden), rows
    if model_type == "whisper":
        hidden = r.integer("d_model")
        enc_params = {"dim": hidden, "base": 10000.0, "ladder": "t2t", "layout": "concat_sin_cos",
                      "position_offset": 0, "num_positions": r.integer("max_source_positions", 1500)}
        enc = _stack("encoder", 0, r.integer("encoder_layers"), "sinusoidal", enc_params,
                     r.integer("encoder_attention_heads"), hidden)
        dec = _stack("decoder", len(enc), r.integer("decoder_layers"), "learned",
                     _learned(0, r.integer("max_target_positions", 448), hidden),
                     r.integer("decoder_attention_heads"), hidden)
        return enc + dec, r.integer("max_target_positions", 448)
    if model_type in ("marian", "m2m_100"):
        hidden, rows = r.integer("d_model"), r.integer("max_position_embeddings", 1024)
        if model_type == "marian":
            params = {"dim": hidden, "base": 10000.0, "ladder": "paper", "layout": "concat_sin_cos",
                      "position_offset": 0, "num_positions": rows}
        else:
            offset = r.integer("pad_token_id", 1, minimum=0) + 1
            r.note(f"M2M100 positions start at padding_idx + 1 = {offset} (fairseq)")
            params = {"dim": hidden, "base": 10000.0, "ladder": "t2t", "layout": "concat_sin_cos",
                      "position_offset": offset, "num_positions": rows + offset}
        enc = _stack("encoder", 0, r.integer("encoder_layers"), "sinusoidal", params,
                     r.integer("encoder_attention_heads"), hidden)
        dec = _stack("decoder", len(enc), r.integer("decoder_layers"), "sinusoidal", params,
                     r.integer("decoder_attention_heads"), hidden)
        return enc + dec, rows
    raise SpecError(f"{FUNC}: model_type {model_type!r} has no absolute position rule here")
