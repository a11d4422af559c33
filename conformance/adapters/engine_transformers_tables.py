"""transformers 5.x as an engine under test: attention biases and absolute position tables, from the config.

The part of ``engine_transformers.py`` for the model ops that are not rotations: ``model.alibi``,
``model.t5``, ``model.deberta``, ``model.learned`` and ``model.sinusoidal``. Each function takes the
text model that transformers built from the case's config on the ``meta`` device (so the config
class's parsing and defaults, and every constructor, ran), moves only the position module it needs
to the CPU (``copy.deepcopy(module).to_empty(device="cpu")``: the engine's own attributes, no
weights) and calls the modeling file's own code on it, as the model's forward does:

* ALiBi: BLOOM's ``build_alibi_tensor(attention_mask, num_heads, dtype)`` (the model's method, its
  ``num_heads`` from ``n_head``), Falcon's module-level ``build_alibi_tensor`` (configs with
  ``alibi``; it multiplies in bfloat16, and the model's forward divides the result by
  ``sqrt(hidden_size // num_heads)`` before adding it to the scaled scores), MPT's
  ``build_mpt_alibi_tensor(num_heads, max_seq_len)`` called with the arguments the model's forward passes.
  These give a bias per *key* (``key_only`` up to a constant); the reference reports the ``relative_causal``
  form, so the harness subtracts the engine's own value at the query's position (``bias[h, i, j] = A[h, k_j] -
  A[h, q_i]``, a per-row constant that softmax ignores) and adds nothing else.
* T5: the stack's first self-attention (the one holding ``relative_attention_bias``; later blocks
  reuse its bias), ``compute_bias(1, K, past_seen_tokens=q)`` one query at a time. The buckets are
  read through the same path with a table whose row ``b`` holds ``b`` (exact in float32).
* DeBERTa-v2: the encoder's ``get_rel_pos`` (``build_relative_position`` with the encoder's
  ``position_buckets`` / ``max_relative_positions``) over ``max(positions) + 1`` tokens; the row
  the layer reads is ``clamp(rel + att_span, 0, 2 att_span - 1)`` with the layer's ``pos_ebd_size``
  as ``disentangled_attention_bias`` computes it inline (the one expression the harness writes).
* learned: the position ids the model derives for a sequence of ``max(positions) + 1`` tokens
  (BERT's ``position_ids`` buffer slice, RoBERTa's ``create_position_ids_from_input_ids``, OPT's
  and BART's module forward with their offset of 2, GPT-2's and Whisper's decoder ``arange``),
  read through the model's own embedding module whose row ``r`` holds ``r``; a position past the
  table makes the engine's lookup raise ``IndexError``. ViT / DINOv2 add their
  ``position_embeddings`` parameter whole (one row per token, [CLS] first): row ``p`` of it.
* XLNet: the model's ``relative_positional_encoding(qlen, klen)`` (its ``attn_type``, ``clamp_len``
  and ``bi_data`` read from the config), which holds one row per distance ``klen, klen - 1, ...``
  down to ``-qlen + 1`` (``"bi"``) or 0 (``"uni"``); the row of distance ``delta`` is row
  ``klen - delta``, with ``klen`` and ``qlen`` the smallest that hold every asked distance. A
  negative distance on a ``"uni"`` model is outside what it builds: ``IndexError``.
* sinusoidal: Whisper's encoder table (``sinusoids(*embed_positions.weight.shape)``, as its
  ``_init_weights`` fills it), Marian's ``create_weight()`` then its forward, M2M100's
  ``make_weights`` then its forward on non-padding tokens.

Positions are the token indices of one sequence without padding or cache offset.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

OPS = ("model.alibi", "model.t5", "model.deberta", "model.learned", "model.sinusoidal", "model.transformer_xl")
BUILT: dict[str, tuple[str, ...]] = {
    "model.alibi": ("bloom", "mpt", "falcon"),
    "model.t5": ("t5", "mt5"),
    "model.deberta": ("deberta-v2",),
    "model.learned": ("bert", "roberta", "gpt2", "opt", "bart", "whisper", "vit", "dinov2"),
    "model.sinusoidal": ("whisper", "marian", "m2m_100"),
    "model.transformer_xl": ("xlnet",),
}
"""op -> the model types whose position module the harness builds for it."""
KNOWN = frozenset(t for types in BUILT.values() for t in types)


def _blocks(stack: Any) -> Any:
    for name in ("block", "layers", "layer", "h", "blocks"):
        if isinstance(getattr(stack, name, None), _torch().nn.ModuleList):
            return getattr(stack, name)
    for name in ("encoder", "decoder"):  # BERT / ViT / DeBERTa hold an encoder, OPT a decoder
        inner = getattr(stack, name, None)
        if inner is not None:
            return _blocks(inner)
    raise LookupError(f"{type(stack).__name__} has no layer list")


def layer_count(model: Any) -> int:
    """Attention layers of the built model (encoder then decoder in an encoder-decoder model)."""
    if hasattr(model, "encoder") and hasattr(model, "decoder"):
        return len(_blocks(model.encoder)) + len(_blocks(model.decoder))
    return len(_blocks(model))


def _torch() -> Any:
    import torch

    return torch


def _on_cpu(module: Any) -> Any:
    """The engine's module, moved off the meta device with uninitialised storage."""
    return copy.deepcopy(module).to_empty(device="cpu")


def _probe(module: Any, attribute: str = "weight") -> Any:
    """Fill a (rows, width) table of ``module`` so that row ``r`` holds ``r`` in every column."""
    torch = _torch()
    table = getattr(module, attribute)
    with torch.no_grad():
        table.copy_(torch.arange(table.shape[0], dtype=table.dtype)[:, None].expand(table.shape))
    return module


def _rows(values: Any) -> np.ndarray:
    """Row indices read back from a probed lookup (T, width) -> (T,) int64."""
    return np.asarray(np.rint(values[..., 0].double().numpy()), dtype=np.int64)


def _stack(model: Any, layer: int) -> tuple[str, Any]:
    """(``"encoder"`` / ``"decoder"``, the stack) of layer ``layer`` in an encoder-decoder model
    (layers numbered encoder first, as ``posenc_ref.models`` numbers them)."""
    if not hasattr(model, "decoder"):
        return "encoder", model.encoder
    return ("encoder", model.encoder) if layer < len(_blocks(model.encoder)) else ("decoder", model.decoder)


# --- ALiBi --------------------------------------------------------------------------------------

def alibi(model: Any, module: Any, model_type: str, layer: int, inputs: Mapping[str, Any]) -> dict[str, Any]:
    torch = _torch()
    q, k = np.asarray(inputs["query_positions"]), np.asarray(inputs["key_positions"])
    n = int(max(q.max(), k.max())) + 1
    if model_type == "mpt":
        # Note: MptModel.forward builds the tensor with (num_heads, config.max_seq_len) and leaves
        # alibi_bias_max at the function's default of 8; the call below is that call.
        per_key = model.build_mpt_alibi_tensor(model.num_heads, model.config.max_seq_len, device="cpu")[:, 0]
        if n > per_key.shape[-1]:
            raise IndexError(f"position {n - 1} past MPT's ALiBi tensor of max_seq_len={per_key.shape[-1]}")
        per_key = per_key[:, per_key.shape[-1] - n:]  # MptAttention keeps the last key_length columns
    else:
        mask = torch.ones(1, n, dtype=torch.int64)
        build = model.build_alibi_tensor if model_type == "bloom" else module.build_alibi_tensor
        if model_type == "falcon" and not getattr(model.config, "alibi", False):
            raise ValueError("this Falcon config has alibi false: its layers rotate (model.rope)")
        heads = model.num_heads if hasattr(model, "num_heads") else model.config.num_attention_heads
        per_key = build(mask, heads, torch.float32)  # (H, 1, n)
        per_key = per_key.reshape(heads, n)
        if model_type == "falcon":
            # Note: FalconModel.forward folds the bias into the mask as alibi / sqrt(hidden_size //
            # num_heads) (its eager attention multiplies scores + alibi by inv_norm_factor alike):
            # what Falcon adds to the scaled scores is the bias divided by sqrt(head_dim).
            per_key = per_key / math.sqrt(model.config.hidden_size // heads)
    values = per_key.double()
    a_k, a_q = values[:, torch.tensor(k)], values[:, torch.tensor(q)]  # (H, Tk), (H, Tq)
    return {"bias": (a_k[:, None, :] - a_q[:, :, None]).numpy()}


# --- T5 -----------------------------------------------------------------------------------------

def t5(model: Any, layer: int, inputs: Mapping[str, Any]) -> dict[str, Any]:
    torch = _torch()
    _, stack = _stack(model, layer)
    attn = _on_cpu(stack.block[0].layer[0].SelfAttention)  # the block that holds the bias table
    table = torch.tensor(np.asarray(inputs["table"]), dtype=torch.float32)  # (N, H)
    q, k = np.asarray(inputs["query_positions"]), np.asarray(inputs["key_positions"])
    keys = torch.tensor(k)

    def bias(weight: Any) -> Any:
        with torch.no_grad():
            attn.relative_attention_bias.weight.copy_(weight)
            # one query at a time: compute_bias numbers keys 0..K-1 and the query past_seen_tokens
            return torch.cat([attn.compute_bias(1, int(k.max()) + 1, device="cpu", past_seen_tokens=int(i))[..., keys]
                              for i in q], dim=2)[0]  # (H, Tq, Tk)
    buckets = torch.arange(table.shape[0], dtype=torch.float32)[:, None].expand(table.shape)
    return {"bucket": np.asarray(np.rint(bias(buckets)[0].double().numpy()), dtype=np.int64),
            "bias": bias(table).double().numpy()}


# --- DeBERTa-v2 ---------------------------------------------------------------------------------

def deberta(model: Any, layer: int, inputs: Mapping[str, Any]) -> dict[str, Any]:
    torch = _torch()
    q, k = np.asarray(inputs["query_positions"]), np.asarray(inputs["key_positions"])
    n = int(max(q.max(), k.max())) + 1
    hidden = torch.zeros(1, n, 1)  # get_rel_pos reads only the length
    rel = model.encoder.get_rel_pos(hidden)[0]  # (n, n): bucketed q - k
    att_span = model.encoder.layer[layer].attention.self.pos_ebd_size
    # Note: disentangled_attention_bias computes the c2p row inline, exactly this expression.
    index = torch.clamp(rel + att_span, 0, att_span * 2 - 1)
    return {"index": index[torch.tensor(q)][:, torch.tensor(k)].numpy().astype(np.int64)}


# --- learned tables -----------------------------------------------------------------------------

def learned(model: Any, model_type: str, layer: int, inputs: Mapping[str, Any]) -> dict[str, Any]:
    torch = _torch()
    positions = np.asarray(inputs["positions"])
    n = int(positions.max()) + 1
    chosen = torch.tensor(positions)
    with torch.no_grad():
        if model_type in ("bert", "roberta"):
            emb = model.embeddings
            table = _probe(_on_cpu(emb.position_embeddings))
            if model_type == "bert":
                ids = torch.arange(emb.position_ids.shape[-1])[None]  # the buffer's value (its _init_weights)
                ids = ids[:, 0:n]  # BertEmbeddings.forward: position_ids[:, past : seq_length + past]
            else:
                tokens = torch.full((1, n), emb.padding_idx + 1, dtype=torch.int64)  # no padding token
                ids = emb.create_position_ids_from_input_ids(tokens, emb.padding_idx)
            rows = table(ids[0][chosen])
        elif model_type == "gpt2":
            # GPT2Model.forward: position_ids = arange(seq_length) + past_seen_tokens, then wpe
            rows = _probe(_on_cpu(model.wpe))(torch.arange(n)[chosen])
        elif model_type == "opt":
            out = _probe(_on_cpu(model.decoder.embed_positions))(torch.ones(1, n, dtype=torch.int64), 0)
            rows = out[0][chosen]
        elif model_type == "bart":
            _, stack = _stack(model, layer)
            out = _probe(_on_cpu(stack.embed_positions))(torch.zeros(1, n, dtype=torch.int64), 0)
            rows = out[0][chosen]
        elif model_type == "whisper":
            kind, stack = _stack(model, layer)
            if kind != "decoder":
                raise ValueError("Whisper's encoder table is sinusoidal (model.sinusoidal), not learned")
            # WhisperDecoder.forward: position_ids = arange(seq_length) + past, embed_positions(position_ids=...)
            rows = _probe(_on_cpu(stack.embed_positions))(None, position_ids=torch.arange(n)[None])[0][chosen]
        else:  # vit, dinov2: the (1, N + 1, hidden) parameter is added to the [CLS] + patch sequence whole
            parameter = model.embeddings.position_embeddings
            rows_of = torch.arange(parameter.shape[1], dtype=torch.float32)[:, None]
            rows = rows_of[chosen]
    return {"index": _rows(rows)}


# --- sinusoidal tables --------------------------------------------------------------------------

def sinusoidal(model: Any, module: Any, model_type: str, layer: int, inputs: Mapping[str, Any]) -> dict[str, Any]:
    torch = _torch()
    positions = np.asarray(inputs["positions"])
    n = int(positions.max()) + 1
    chosen = torch.tensor(positions)
    kind, stack = _stack(model, layer)
    with torch.no_grad():
        if model_type == "whisper":
            if kind != "encoder":
                raise ValueError("Whisper's decoder table is learned (model.learned), not sinusoidal")
            # WhisperPreTrainedModel._init_weights fills the encoder table with this call
            table = module.sinusoids(*stack.embed_positions.weight.shape)
            embedding = table[chosen]
        elif model_type == "marian":
            emb = _on_cpu(stack.embed_positions)
            emb.weight.copy_(emb.create_weight())  # what MarianPreTrainedModel._init_weights does
            embedding = emb((1, n))[chosen]
        else:  # m2m_100
            emb = _on_cpu(stack.embed_positions)
            emb.make_weights(emb.num_positions + emb.offset, emb.embedding_dim, emb.padding_idx)  # its _init_weights
            tokens = torch.full((1, n), emb.padding_idx + 1, dtype=torch.int64)  # no padding token
            embedding = emb(tokens)[0][chosen]
    return {"embedding": embedding.double().numpy()}


# --- XLNet relative rows -----------------------------------------------------------------------

def transformer_xl(model: Any, inputs: Mapping[str, Any]) -> dict[str, Any]:
    distances = np.asarray(inputs["distances"], dtype=np.int64)
    klen = max(int(distances.max()), 1)
    qlen = max(1 - int(distances.min()), 1)
    with _torch().no_grad():
        rows = model.relative_positional_encoding(qlen, klen, bsz=None)[:, 0, :]  # (klen + qlen or klen + 1, d)
    index = klen - distances
    if int(index.max()) >= rows.shape[0]:
        raise IndexError(f"distance {int(distances.min())}: XLNet attn_type={model.attn_type!r} builds rows "
                         f"for distances {klen} down to {klen - rows.shape[0] + 1} only")
    return {"embedding": rows[_torch().tensor(index)].double().numpy()}


def run(op: str, model: Any, module: Any, model_type: str, layer: int, inputs: Mapping[str, Any]) -> dict[str, Any]:
    """The outputs of a bias / table model op, computed by the modules of ``model``."""
    if model_type in KNOWN and model_type not in BUILT[op]:
        raise ValueError(f"{op}: transformers' {model_type!r} has no {op} position module (another scheme)")
    if model_type not in BUILT[op]:
        raise NotImplementedError(f"{op}: the harness does not build {model_type!r}'s position module")
    if op == "model.alibi":
        return alibi(model, module, model_type, layer, inputs)
    if op == "model.t5":
        return t5(model, layer, inputs)
    if op == "model.deberta":
        return deberta(model, layer, inputs)
    if op == "model.learned":
        return learned(model, model_type, layer, inputs)
    if op == "model.transformer_xl":
        return transformer_xl(model, inputs)
    return sinusoidal(model, module, model_type, layer, inputs)
