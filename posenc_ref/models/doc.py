"""The catalogue table of docs/models.md, written from the catalogue and the resolver (a test keeps it current)."""

from __future__ import annotations

from posenc_ref.models.catalogue import CATALOGUE
from posenc_ref.models.resolve import LayerPositions, resolve


def _rule(lp: LayerPositions) -> str:
    p = lp.params
    if lp.scheme in ("rope", "mrope"):
        text = f"{p['rope_type']} base {p['base']:g}" + (f" x{p['factor']:g}" if p.get("factor") else "")
        text += f", {p['rotary_dim']}/{lp.head_dim} {p['layout']}"
        text += f", turning {p['partial_rotary_factor']:g}" if p["partial"] == "proportional" else ""
        text += f", window {lp.window}" if lp.window else ""
        text += f", chunk {lp.chunk_size}" if lp.chunk_size else ""
        return text + (f", mrope {p['mrope_section']} {p['mrope_layout']}" if lp.scheme == "mrope" else "")
    if lp.scheme == "nope":
        return "no rotation" + (", temperature" if lp.temperature else "")
    if lp.scheme == "alibi":
        return f"{p['num_heads']} heads, bias_max {p['bias_max']:g}"
    if lp.scheme == "t5":
        return f"{p['num_buckets']} buckets, max_distance {p['max_distance']}, {p['direction']}"
    if lp.scheme == "deberta":
        return f"position_buckets {p['position_buckets']}, max_relative_positions {p['max_relative_positions']}"
    if lp.scheme == "learned":
        return f"{p['num_positions']} rows, offset {p['offset']}"
    if lp.scheme == "transformer_xl":
        return (f"R rows over {p['dim']}, base {p['base']:g}, attn_type {p['attn_type']}"
                + (f", clamp_len {p['clamp_len']}" if p["clamp_len"] else ""))
    return f"{p['ladder']} ladder, {p['layout']}, offset {p['position_offset']}"


def catalogue_table() -> str:
    """The Markdown table: model, family, each distinct layer kind's rule, the source and how it was checked."""
    rows = ["| model | family | layers (kind: scheme, rule) | config.json | checked |", "|---|---|---|---|---|"]
    for name, entry in CATALOGUE.items():
        kinds = "; ".join(f"{lp.kind}: {lp.scheme}, {_rule(lp)}" for lp in resolve(entry.config).kinds())
        url = entry.sources["config.json"]
        hub = url.split("huggingface.co/")[1].split("/blob")[0]
        checked = entry.sources["checked"]
        how = "second copy" if checked.startswith("a public copy") else "model card" if "card" in checked else \
            "restatements" if checked.startswith("restatements") else \
            "earlier revision" if checked.startswith("an earlier revision") else "hub file only"
        rows.append(f"| `{name}` | {entry.family} | {kinds} | [{hub}]({url}) | {how} |")
    return "\n".join(rows) + "\n"
