"""``posenc-ref model``: list the catalogue, show a model's per-layer positions and provenance.

Kept apart from the rest of the CLI so that it starts without loading the op registry.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from posenc_ref.errors import SpecError
from posenc_ref.models import INTERPRETATIONS, compute, resolve
from posenc_ref.models.catalogue import CATALOGUE
from posenc_ref.models.resolve import LayerPositions, ModelPositions

_COLUMNS = ("layers", "kind", "scheme", "base", "rope_type", "factor", "rotary", "layout", "attn_factor", "window",
            "multipliers")


def add_model_parser(sub: Any) -> argparse.ArgumentParser:
    """Add ``model list`` / ``model show`` to a subparsers object; returns the ``model`` parser."""
    p_model: argparse.ArgumentParser = sub.add_parser(
        "model", help="model configs: the catalogue, and any config.json layer by layer")
    actions = p_model.add_subparsers(dest="model_action", metavar="ACTION", required=True)
    actions.add_parser("list", help="list the catalogued models (name, family, layers, schemes, source)")
    show = actions.add_parser("show", help="the per-layer positions of a catalogued model or a config.json, "
                                           "collapsed into runs of equal layers, then the provenance")
    show.add_argument("model", metavar="NAME|PATH", help="a catalogue name (see `posenc-ref model list`) or a "
                                                         "path to a config.json")
    show.add_argument("--positions", metavar="P,P,...", help="comma-separated positions: add the layer's cos/sin "
                                                            "(RoPE), bias (ALiBi, T5 buckets), rows (learned), R rows "
                                                            "(XLNet: the values are distances, query minus key; "
                                                            "write --positions=-4,0,4 for negative ones) there")
    show.add_argument("--layer", type=int, default=None, help="the layer for --positions (default: 0)")
    show.add_argument("--context-length", type=int, default=None,
                      help="L for dynamic NTK / LongRoPE (default: max(--positions) + 1, else unset)")
    show.add_argument("--interpretation", default="transformers-5", choices=tuple(INTERPRETATIONS),
                      help="whose reading of the config (default: transformers-5)")
    show.add_argument("--json", action="store_true", help="machine-readable output")
    p_model.set_defaults(func=run)
    return p_model


def _config(name: str) -> tuple[str, Any]:
    if name in CATALOGUE:
        return name, CATALOGUE[name].config
    path = Path(name)
    if path.exists():
        return str(path), path
    raise SpecError(f"posenc-ref model show: {name!r} is neither a catalogued model nor a file; catalogued: "
                    f"{', '.join(CATALOGUE)}")


def _row(lp: LayerPositions, context_length: int | None) -> dict[str, Any]:
    p = lp.params
    row: dict[str, Any] = {"kind": lp.kind, "scheme": lp.scheme, "window": lp.window, "chunk_size": lp.chunk_size,
                           "logit_scale": lp.logit_scale, "temperature": dict(lp.temperature or {}) or None,
                           "bias_scale": lp.bias_scale}
    if lp.scheme in ("rope", "mrope"):
        needs = p["rope_type"] in ("dynamic", "longrope") and context_length is None
        factor = None if needs else compute.inv_freq(p, context_length, "model show")[1]
        row.update(base=p["base"], rope_type=p["rope_type"], factor=p.get("factor"),
                   rotary_dim=p["rotary_dim"], partial=p["partial"], layout=p["layout"], attention_factor=factor)
        if lp.scheme == "mrope":
            row.update(mrope_section=p["mrope_section"], mrope_layout=p["mrope_layout"])
    else:
        row["params"] = dict(p)
    return row


def _runs(m: ModelPositions) -> list[tuple[int, int, LayerPositions]]:
    runs: list[tuple[int, int, LayerPositions]] = []
    for lp in m.layers:
        if runs and runs[-1][2].signature() == lp.signature() and runs[-1][1] == lp.index - 1:
            runs[-1] = (runs[-1][0], lp.index, runs[-1][2])
        else:
            runs.append((lp.index, lp.index, lp))
    return runs


def _cell(row: dict[str, Any], column: str) -> str:
    def num(v: Any) -> str:
        return "-" if v is None else f"{v:g}" if isinstance(v, float) else str(v)
    if column == "rotary":
        return f"{row['rotary_dim']} {row['partial']}" if "rotary_dim" in row else "-"
    if column == "attn_factor":
        return "needs L" if "rotary_dim" in row and row["attention_factor"] is None else num(row.get(
            "attention_factor"))
    if column == "window":
        return num(row["window"]) if row["chunk_size"] is None else f"chunk {row['chunk_size']}"
    if column == "multipliers":
        text = f"logit {row['logit_scale']:.6g}"
        if row["bias_scale"] != 1.0:
            text += f", bias x{row['bias_scale']:.6g}"
        if row["temperature"]:
            text += " + temp " + ",".join(f"{k}={v}" for k, v in row["temperature"].items() if k != "rule") + \
                f" ({row['temperature']['rule']})"
        return text
    if column == "rope_type" and "rope_type" not in row:
        return ",".join(f"{k}={v}" for k, v in row["params"].items() if not isinstance(v, list))
    value = row.get(column)
    if column == "layout" and "mrope_section" in row:
        return f"{value} mrope {row['mrope_layout']} {row['mrope_section']}"
    return num(value)


def _values(m: ModelPositions, layer: int, positions: list[int], context_length: int | None,
            config: Any) -> dict[str, Any]:
    """Tables at the asked positions (lists, for the text and the JSON output)."""
    if not 0 <= layer < m.num_layers:
        raise SpecError(f"posenc-ref model show: --layer must be in [0, {m.num_layers}), got {layer}")
    lp = m.layers[layer]
    pos = np.asarray(positions, dtype=np.int64)
    if lp.scheme in ("rope", "mrope"):
        w, factor = compute.inv_freq(lp.params, context_length, "model show")
        from posenc_ref.rope import rope_cos_sin
        cos, sin = rope_cos_sin(pos, w, attention_factor=factor, width="half")
        return {"cos": cos.tolist(), "sin": sin.tolist(), "logit_scale": (lp.logit_scale * compute.temperature(
            lp, pos, "posenc-ref model show")).tolist()}
    if lp.scheme == "nope":
        return {"logit_scale": (lp.logit_scale * compute.temperature(lp, pos, "posenc-ref model show")).tolist()}
    cfg = resolve_config(config)
    if lp.scheme == "alibi":
        return {"bias": compute.model_alibi(pos, pos, config=cfg, layer=layer).tolist()}
    if lp.scheme == "t5":
        from posenc_ref.t5 import t5_bucket
        return {"bucket": t5_bucket(pos[None, :] - pos[:, None], num_buckets=lp.params["num_buckets"],
                                    max_distance=lp.params["max_distance"], direction=lp.params["direction"]).tolist()}
    if lp.scheme == "deberta":
        return {"index": compute.model_deberta(pos, pos, config=cfg, layer=layer).tolist()}
    if lp.scheme == "learned":
        return {"index": compute.model_learned(pos, config=cfg, layer=layer).tolist()}
    if lp.scheme == "transformer_xl":
        return {"r_rows": compute.model_transformer_xl(pos, config=cfg, layer=layer).tolist()}
    return {"embedding": compute.model_sinusoidal(pos, config=cfg, layer=layer).tolist()}


def resolve_config(config: Any) -> dict[str, Any]:
    from posenc_ref.models._reader import load_config
    return load_config(config)


def _list() -> int:
    for name, entry in CATALOGUE.items():
        m = resolve(entry.config)
        schemes = ", ".join(sorted({f"{lp.kind}:{lp.scheme}" for lp in m.layers}))
        print(f"{name:<28} {entry.family:<11} {m.model_type:<14} {m.num_layers:>3} layers  {schemes}")
    return 0


def _show(args: argparse.Namespace) -> int:
    label, config = _config(args.model)
    positions = [int(p) for p in args.positions.split(",")] if args.positions else None
    context = args.context_length
    if context is None and positions:
        context = max(positions) + 1
    m = resolve(config, interpretation=args.interpretation)
    runs = [(first, last, _row(lp, context)) for first, last, lp in _runs(m)]
    prov = m.provenance
    values = _values(m, args.layer or 0, positions, context, config) if positions else None
    if args.json:
        out = {"model": label, "model_type": m.model_type, "num_layers": m.num_layers,
               "max_position": m.max_position, "context_length": context,
               "runs": [{"first": a, "last": b, **row} for a, b, row in runs],
               "provenance": {"interpretation": prov.interpretation, "version": prov.interpretation_version,
                              "read": dict(prov.read), "defaulted": dict(prov.defaulted),
                              "ignored": list(prov.ignored), "notes": list(prov.notes)}}
        if values is not None:
            out["values"] = {"layer": args.layer or 0, "positions": positions, **values}
        print(json.dumps(out, indent=1, default=str))
        return 0
    print(f"{label}: {m.model_type}, {m.num_layers} attention layers, max position "
          f"{m.max_position if m.max_position is not None else '-'}"
          f"{f', context length {context}' if context else ''}")
    table = [[f"{a}-{b} ({b - a + 1})" if b > a else f"{a}", *(_cell(row, c) for c in _COLUMNS[1:])]
             for a, b, row in runs]
    widths = [max(len(c), *(len(r[i]) for r in table)) for i, c in enumerate(_COLUMNS)]
    print("  ".join(c.ljust(w) for c, w in zip(_COLUMNS, widths)).rstrip())
    for r in table:
        print("  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip())
    print(f"\nreading: {prov.interpretation} — {prov.interpretation_version}")
    print("read:      " + ", ".join(f"{k}={_short(v)}" for k, v in prov.read.items()))
    print("defaulted: " + (", ".join(f"{k}={v!r}" for k, v in prov.defaulted.items()) or "-"))
    print("ignored:   " + (", ".join(prov.ignored) or "-"))
    for note in prov.notes:
        print(f"note:      {note}")
    if values is not None and positions is not None:
        print(f"\nlayer {args.layer or 0} at positions {positions}:")
        for key, value in values.items():
            if key in ("cos", "sin"):
                for p, row in zip(positions, value):
                    head = ", ".join(f"{v:.9g}" for v in row[:4])
                    print(f"  {key} p={p}: [{head}{', ...' if len(row) > 4 else ''}] last {row[-1]:.9g}")
            else:
                print(f"  {key}: {json.dumps(value)[:400]}")
    return 0


def _short(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 40 else text[:37] + "..."


def run(args: argparse.Namespace) -> int:
    try:
        return _list() if args.model_action == "list" else _show(args)
    except SpecError as exc:
        print(f"posenc-ref model: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # output piped into head, less, ...: stop quietly
        sys.stderr.close()
        return 0


def main(argv: Sequence[str]) -> int:
    """``posenc-ref model ...`` without the rest of the CLI (argv: what follows ``model``)."""
    parser = argparse.ArgumentParser(prog="posenc-ref")
    sub = parser.add_subparsers(dest="command", required=True)
    add_model_parser(sub)
    args = parser.parse_args(["model", *argv])
    return run(args)
