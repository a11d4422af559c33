"""PyTorch and transformers adapters (conformance/adapters/torch_*.py, transformers_*.py) through the runner;
skipped without torch."""

import json
import sys
from functools import cache
from pathlib import Path

import numpy as np
import pytest
from _loading import load_file

pytest.importorskip("torch")
pytest.importorskip("transformers")

import torch  # noqa: E402

from posenc_ref.corpus import default_corpus_dir  # noqa: E402
from posenc_ref.learned import learned_lookup  # noqa: E402
from posenc_ref.registry import OPS  # noqa: E402
from posenc_ref.runner.adapters import load_adapter  # noqa: E402
from posenc_ref.runner.engine import run_conformance  # noqa: E402
from posenc_ref.runner.expectations import load_expectations  # noqa: E402
from posenc_ref.sinusoidal import sinusoidal_table  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
ADAPTERS = ROOT / "conformance" / "adapters"
MODULES = {  # adapter name -> the module that holds it
    **dict.fromkeys(("DISTILBERT", "MARIAN", "M2M100", "WHISPER", "VITMAE_2D", "EMBEDDING", "VIT_INTERPOLATE"),
                    "transformers_absolute"),
    **dict.fromkeys(("ROPE_INIT", "LONGROPE", "LLAMA_ROPE", "GPTJ_ROPE", "QWEN2VL_MROPE"), "transformers_rope"),
    **dict.fromkeys(("T5_BUCKET", "T5_BIAS", "DEBERTA_BUCKET", "DEBERTA_SCORES", "BLOOM_ALIBI", "MPT_ALIBI",
                     "SHAW_W2V_BERT", "REL_SHIFT", "XLNET"), "transformers_relative"),
    "EAGER_ATTENTION": "transformers_attention",
    **dict.fromkeys(("SDPA", "INTERPOLATE", "TORCH_LAYER"), "torch_functions"),
    "TORCH": "torch_port",
}
PORT = ADAPTERS / "torch_port.py"
EXPECTATIONS = load_expectations(str(ROOT / "conformance" / "adapters" / "torch_library.toml"))
EXPECTATIONS_DISTILBERT = load_expectations(str(ROOT / "conformance" / "adapters" / "distilbert.toml"))

LIBRARY = [("DISTILBERT", "float32"), ("MARIAN", "float32"), ("M2M100", "float32"), ("WHISPER", "float64"),
           ("WHISPER", "float32"), ("VITMAE_2D", "float64"), ("VITMAE_2D", "float32"), ("EMBEDDING", "float64"),
           ("EMBEDDING", "bfloat16")]


def _spec(name):
    return f"{ADAPTERS / MODULES[name]}.py:{name}"


def _adapter(name, dtype):
    adapter = load_adapter(_spec(name))
    return adapter if adapter.dtype == dtype else adapter.at_dtype(dtype)


@pytest.mark.parametrize(("name", "dtype"), LIBRARY)
def test_library_adapters_pass_with_their_expectations(name, dtype):
    expectations = EXPECTATIONS_DISTILBERT if name == "DISTILBERT" else EXPECTATIONS
    # MarianSinusoidalPositionalEmbedding.create_weight builds all 10^6 + 1 rows of the long-position case
    # row by row (60-90 s on a loaded 2-core machine): a longer per-case timeout than the default 60 s
    timeout = {"timeout": 300.0} if name == "MARIAN" else {}
    run = run_conformance(_adapter(name, dtype), spec=name, expectations=expectations, **timeout)
    assert run.passed, [(r.case_id, r.status, r.message) for r in run.results if r.status not in
                        ("pass", "not_applicable", "xfail", "skip")]
    assert run.executed >= 5


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16"])
def test_torch_port_passes_every_case_of_its_ops(dtype):
    adapter = _adapter("TORCH", dtype)
    run = run_conformance(adapter, spec="torch")
    assert run.passed
    assert not [r.case_id for r in run.results if r.op in adapter.capabilities and r.status == "not_applicable"]


# New-op library adapters: (name, dtype, ops it must execute)
NEW_LIBRARY = [("ROPE_INIT", "float32", {"rope.inv_freq"}), ("LONGROPE", "float32", {"rope.longrope_inv_freq"}),
               ("LLAMA_ROPE", "float32", {"rope.apply", "rope.cos_sin"}), ("GPTJ_ROPE", "float32", {"rope.apply"}),
               ("QWEN2VL_MROPE", "float32", {"rope.mrope_cos_sin"}),
               ("T5_BUCKET", "float32", {"t5.bucket"}), ("T5_BIAS", "float64", {"t5.bias"}),
               ("T5_BIAS", "float32", {"t5.bias"}), ("DEBERTA_BUCKET", "float32", {"deberta.bucket"}),
               ("BLOOM_ALIBI", "float32", {"alibi.slopes", "alibi.bias", "alibi.mask_positions"}),
               ("MPT_ALIBI", "float32", {"alibi.slopes"}), ("SDPA", "float64", {"attention"}),
               ("SDPA", "float32", {"attention"}), ("SDPA", "bfloat16", {"attention"}),
               ("INTERPOLATE", "float64", {"resample.weights", "resample.table_1d", "resample.grid_2d"}),
               ("INTERPOLATE", "float32", {"resample.weights", "resample.table_1d", "resample.grid_2d"}),
               ("VIT_INTERPOLATE", "float64", {"resample.grid_2d"}),
               ("VIT_INTERPOLATE", "float32", {"resample.grid_2d"}),
               ("DEBERTA_SCORES", "float32", {"deberta.scores"}),
               ("SHAW_W2V_BERT", "float64", {"shaw.index", "shaw.logits"}),
               ("SHAW_W2V_BERT", "float32", {"shaw.index", "shaw.logits"}),
               ("REL_SHIFT", "float64", {"transformer_xl.rel_shift"}),
               ("REL_SHIFT", "bfloat16", {"transformer_xl.rel_shift"}),
               ("XLNET", "float32", {"transformer_xl.score", "attention.xl"}),
               ("EAGER_ATTENTION", "float32", {"attention.rope", "attention.alibi", "attention.t5"}),
               ("TORCH_LAYER", "float64", {"attention.pipeline"}), ("TORCH_LAYER", "float16", {"attention.pipeline"})]


@pytest.mark.parametrize(("name", "dtype", "ops"), NEW_LIBRARY)
def test_new_op_library_adapters_pass_with_their_expectations(name, dtype, ops):
    adapter = _adapter(name, dtype)
    run = run_conformance(adapter, spec=name, expectations=EXPECTATIONS, select=lambda e: e["op"] in ops)
    assert run.passed, [(r.case_id, r.status, r.message) for r in run.results if r.status not in
                        ("pass", "not_applicable", "xfail", "skip")]
    assert {r.op for r in run.results if r.status == "pass"} == ops


def test_library_rope_init_reports_float32_and_xfails_only_the_vllm_bracket():
    # transformers builds inv_freq in float32 (arange(...).float()): the verdict is judged at float32.
    adapter = _adapter("ROPE_INIT", "float32")
    with pytest.raises(ValueError, match="computes in float32, not float64"):
        adapter.at_dtype("float64")
    run = run_conformance(adapter, spec="rope-init", select=lambda e: e["op"] == "rope.inv_freq")
    bad = {r.case_id: r.status for r in run.results if r.status not in ("pass", "not_applicable")}
    assert bad == {"rope.inv_freq.error.dynamic_bracket_not_positive": "fail"}


def test_sdpa_refuses_what_it_cannot_express():
    run = run_conformance(_adapter("SDPA", "float64"), spec="sdpa", select=lambda e: e["op"] == "attention")
    na = {r.case_id: r.message for r in run.results if r.status == "not_applicable"}
    assert "attention.window.causal.w3.t10" in na and "sliding-window" in na["attention.window.causal.w3.t10"]
    assert "attention.fully_masked.nan" in na
    assert {r.status for r in run.results if r.case_id == "attention.fully_masked.zeros"} == {"pass"}


def test_rope_attention_block_matches_the_reference():
    """Whole pipeline: q/k/v projections, transformers' Llama rotary, SDPA with GQA and causal mask."""
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding, apply_rotary_pos_emb

    from posenc_ref.attention import attention
    from posenc_ref.rope import rope_apply

    rng = np.random.default_rng(7)
    b, t, width, heads, kv_heads, d = 2, 9, 32, 4, 2, 8
    hidden = rng.normal(size=(b, t, width))
    wq, wk, wv = (rng.normal(size=(width, n * d)) / np.sqrt(width) for n in (heads, kv_heads, kv_heads))
    positions = np.array([np.arange(t), np.arange(t) + 1000])  # a second sequence deep into the context

    def split(x, n):
        return x.reshape(b, t, n, d).transpose(0, 2, 1, 3)

    q, k, v = split(hidden @ wq, heads), split(hidden @ wk, kv_heads), split(hidden @ wv, kv_heads)

    config = LlamaConfig(hidden_size=width, num_attention_heads=heads, num_key_value_heads=kv_heads, head_dim=d,
                         rope_parameters={"rope_type": "default", "rope_theta": 10000.0})
    rotary = LlamaRotaryEmbedding(config)
    with torch.no_grad():
        qt, kt, vt = (torch.from_numpy(a).to(torch.float32) for a in (q, k, v))
        cos, sin = rotary(qt, torch.from_numpy(positions))
        qr, _ = apply_rotary_pos_emb(qt, qt, cos, sin)
        kr, _ = apply_rotary_pos_emb(kt, kt, cos, sin)
        actual = torch.nn.functional.scaled_dot_product_attention(qr, kr, vt, is_causal=True, enable_gqa=True)
    actual = actual.numpy().astype(np.float64)

    def transform(qx, kx, q_pos, k_pos):
        return rope_apply(qx, q_pos), rope_apply(kx, k_pos)

    expected = attention(q, k, v, causal=True, q_positions=positions, k_positions=positions, qk_transform=transform)
    # float32 pipeline against float64: |v| ~ 1, angles up to 1008 rad
    np.testing.assert_allclose(actual, expected, rtol=0, atol=2e-4)
    unrotated = attention(q, k, v, causal=True)
    assert np.abs(actual - unrotated).max() > 1e-2  # the rotation matters at these positions


def test_library_adapters_report_the_dtype_the_library_computes_in():
    # DistilBERT and Marian copy through torch.FloatTensor; M2M100 computes with .float().
    for name in ("DISTILBERT", "MARIAN", "M2M100"):
        adapter = load_adapter(_spec(name))
        assert adapter.dtype == "float32"
        with pytest.raises(ValueError, match="computes in float32, not float64"):
            adapter.at_dtype("float64")
    assert load_adapter(_spec("WHISPER")).at_dtype("float32").dtype == "float32"


def test_m2m100_library_deviations_are_what_the_expectations_say():
    run = run_conformance(_adapter("M2M100", "float32"), spec="m2m100")
    got = {r.case_id: r.status for r in run.results if r.status not in ("pass", "not_applicable")}
    assert got == {"sinusoidal.fairseq.error.dim2": "wrong_error",
                   "sinusoidal.fairseq.error.rank1_tokens": "wrong_error",
                   "sinusoidal.fairseq.error.incremental_two_tokens": "fail"}


def test_distilbert_embedding_pipeline_matches_the_reference():
    """Whole pipeline: DistilBERT's own embeddings module (token rows + sinusoid rows + LayerNorm)."""
    from transformers import DistilBertConfig, DistilBertModel

    torch.manual_seed(0)
    config = DistilBertConfig(vocab_size=40, dim=16, hidden_dim=32, n_layers=1, n_heads=2,
                              max_position_embeddings=24, sinusoidal_pos_embds=True)
    model = DistilBertModel(config).eval()
    ids = np.array([[3, 17, 5, 9, 0, 39, 12], [1, 2, 3, 4, 5, 6, 7]])
    with torch.no_grad():
        actual = model.embeddings(torch.from_numpy(ids)).numpy().astype(np.float64)
    words = model.embeddings.word_embeddings.weight.detach().numpy().astype(np.float64)
    norm = model.embeddings.LayerNorm
    summed = learned_lookup(words, ids) + sinusoidal_table(np.arange(ids.shape[1]), dim=16)
    mean = summed.mean(-1, keepdims=True)
    var = summed.var(-1, keepdims=True)
    expected = (summed - mean) / np.sqrt(var + 1e-12) * norm.weight.detach().numpy() + norm.bias.detach().numpy()
    # float32 pipeline: a few ulp of float32 per element, relative to the unit-variance output.
    np.testing.assert_allclose(actual, expected, rtol=0, atol=64 * np.finfo(np.float32).eps)
    assert not np.allclose(actual, expected[:, ::-1], atol=1e-3)  # position order matters here


# The ops the torch port gained with the relative schemes and attention with a scheme plugged in.
NEW_PORT_OPS = {"rope.xpos", "deberta.scores", "shaw.index", "shaw.logits", "shaw.output", "transformer_xl.score",
                "transformer_xl.rel_shift", "attention.terms", "attention.pipeline", "attention.rope",
                "attention.alibi", "attention.t5", "attention.shaw", "attention.xl"}


def _module():
    return load_file(PORT, "torch_port_under_test")


def test_every_registered_op_has_a_torch_adapter():
    module = _module()
    covered = set().union(*(load_adapter(_spec(name)).capabilities for name in MODULES))
    assert NEW_PORT_OPS <= set(module.torch_port("float64").capabilities)
    assert covered == {op.name for op in OPS if op.family != "model"}  # model.*: the engines (run_model)


def test_every_module_lists_the_adapters_it_holds_and_no_other():
    for module_name in set(MODULES.values()):
        module = load_file(ADAPTERS / f"{module_name}.py", f"{module_name}_under_test")
        held = {name for name in dir(module) if name.isupper() and callable(getattr(module, name))
                and name not in ("TORCH_DTYPES", "ADAPTER")}
        assert held == {name for name, where in MODULES.items() if where == module_name}, module_name


@pytest.mark.parametrize("name", sorted(MODULES))
def test_the_deprecated_torch_adapter_spelling_loads_the_same_adapter(name):
    old, new = load_adapter(f"{ADAPTERS / 'torch_adapter.py'}:{name}"), load_adapter(_spec(name))
    assert (old.name, old.dtype, old.capabilities) == (new.name, new.dtype, new.capabilities)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_torch_port_passes_every_case_of_the_new_ops(dtype):
    run = run_conformance(_adapter("TORCH", dtype), spec="torch", select=lambda e: e["op"] in NEW_PORT_OPS)
    assert run.passed
    assert {r.op for r in run.results if r.status == "pass"} == NEW_PORT_OPS


def _fails(adapter, ops):
    run = run_conformance(adapter, spec="mutant", select=lambda e: e["op"] in ops)
    return {r.op for r in run.results if r.status == "fail"}


def test_port_with_the_distance_sign_flipped_fails(monkeypatch):
    module = _module()
    right = module.port_xl_position
    monkeypatch.setattr(module, "port_xl_position", lambda q, v, w, distance, *rest: right(q, v, w, -distance, *rest))
    assert _fails(module.torch_port("float64"), {"transformer_xl.score", "attention.xl"}) == {
        "transformer_xl.score", "attention.xl"}


def test_port_without_the_shaw_value_term_fails(monkeypatch):
    module = _module()
    monkeypatch.setattr(module, "port_shaw_value_term", lambda weights, table, index: 0.0)
    assert _fails(module.torch_port("float32"), {"shaw.output", "attention.shaw", "shaw.logits"}) == {
        "shaw.output", "attention.shaw"}


def test_port_with_the_other_codebase_shift_fails(monkeypatch):
    module = _module()
    right = module.port_rel_shift

    def swapped(x, variant, k_len):
        other = "xlnet" if variant == "transformer_xl" else "transformer_xl"
        return right(torch.nn.functional.pad(x, (0, k_len + 1 - x.shape[1])) if other == "xlnet" else x[:, :k_len],
                     other, k_len)
    monkeypatch.setattr(module, "port_rel_shift", swapped)
    run = run_conformance(module.torch_port("float64"), spec="mutant",
                          select=lambda e: e["op"] == "transformer_xl.rel_shift" and ".error." not in e["id"])
    cases = {r.case_id for r in run.results}
    assert len(cases) == 4 and {r.case_id for r in run.results if r.status == "fail"} == cases


def test_eager_attention_refuses_alibi_forms_softmax_does_not_reduce():
    run = run_conformance(_adapter("EAGER_ATTENTION", "float32"), spec="eager",
                          select=lambda e: e["op"] == "attention.alibi")
    na = {r.case_id: r.message for r in run.results if r.status == "not_applicable"}
    assert set(na) == {"attention.alibi.symmetric.cross.tq4tk6"}
    assert "softmax cancels" in na["attention.alibi.symmetric.cross.tq4tk6"]


def test_deberta_scores_library_reaches_cross_attention_through_its_slots():
    # the library's own p2c cannot add a (Tk, Tk) block to Tq != Tk scores; the adapter's slots can
    run = run_conformance(_adapter("DEBERTA_SCORES", "float32"), spec="deberta", select=lambda e: e["op"] ==
                          "deberta.scores")
    assert {r.case_id: r.status for r in run.results}["deberta.scores.c2p_p2c.beyond_m"] == "pass"
    with pytest.raises(ValueError, match="computes in float32, not float64"):
        _adapter("DEBERTA_SCORES", "float32").at_dtype("float64")


def test_vit_interpolate_runs_only_the_settings_vit_hard_codes():
    select = lambda e: e["op"] == "resample.grid_2d"  # noqa: E731
    run = run_conformance(_adapter("VIT_INTERPOLATE", "float64"), spec="vit", select=select)
    passed = {r.case_id for r in run.results if r.status == "pass"}
    assert {"resample.grid_2d.up14to16.torch", "resample.grid_2d.down16to14.torch",
            "resample.grid_2d.size.13to15"} <= passed
    na = {r.case_id: r.message for r in run.results if r.status == "not_applicable"}
    assert "'antialias': 'on'" in na["resample.grid_2d.up14to16.timm"]
    assert "'num_prefix_tokens': 2" in na["resample.grid_2d.non_square.6x9to11x4.prefix2"]
    assert "'size_from': 'scale_factor'" in na["resample.grid_2d.dino.scale_factor.14to16"]


def _scaled_rope(entry):
    """The valid rope.apply / rope.scores cases with a RoPE scaling."""
    return (entry["op"] in ("rope.apply", "rope.scores") and entry["kind"] != "error"
            and entry["params"].get("rope_type", "default") != "default")


@cache
def load_manifest_cases():
    return tuple(json.loads((default_corpus_dir() / "manifest.json").read_text())["cases"])


def checks():
    """The shared adapter checks (posenc_adapter_checks, next to the adapters)."""
    if str(ADAPTERS) not in sys.path:
        sys.path.insert(0, str(ADAPTERS))
    import posenc_adapter_checks
    return posenc_adapter_checks


def _entries(select):
    return {e["id"]: e for e in load_manifest_cases() if select(e)}


def _unscaled_frequencies(params):
    """transformers' dynamic NTK at or below the trained length keeps the plain frequencies."""
    return (params["rope_type"] == "dynamic" and params["dynamic_convention"] == "transformers"
            and params["context_length"] <= params["original_max_position"])


def _variant_factor(op, params):
    """The variant's share of the attention factor (the shared checks' rule)."""
    return checks().scaling(op, params, 64, 64)["a"] / params["attention_factor"]


def test_port_passes_the_scaled_rope_cases_and_the_cached_rotation():
    run = run_conformance(_adapter("TORCH", "float32"), spec="torch",
                          select=lambda e: _scaled_rope(e) or e["op"] == "rope.rotate")
    assert run.passed
    assert {r.op for r in run.results if r.status == "pass"} == {"rope.apply", "rope.scores", "rope.rotate"}
    kinds = {_entries(_scaled_rope)[r.case_id]["params"]["rope_type"] for r in run.results if r.status == "pass"
             and r.op != "rope.rotate"}
    assert kinds == {"linear", "ntk_aware", "dynamic", "yarn", "llama3", "longrope", "proportional"}


def test_port_that_ignores_the_scaling_fails_every_scaled_case(monkeypatch):
    module = _module()
    real = module.port_rope_apply

    def plain(x, pos, rotary, params, compute, scaled=None):  # base ** (-2i/S), the variant's factor kept
        factor = params["attention_factor"] if scaled is None else scaled["a"]
        return real(x, pos, rotary, {**params, "attention_factor": factor}, compute)
    monkeypatch.setattr(module, "port_rope_apply", plain)
    run = run_conformance(module.torch_port("float64"), spec="mutant", select=_scaled_rope)
    cases = _entries(_scaled_rope)
    assert len(cases) >= 15 and {r.case_id for r in run.results} == set(cases)
    assert {r.case_id for r in run.results if r.status == "fail"} == {
        i for i, e in cases.items() if not _unscaled_frequencies(e["params"])}


def test_port_that_drops_ggml_ext_factor_fails_its_cases(monkeypatch):
    module = _module()
    right = module.port_yarn_ramp
    monkeypatch.setattr(module, "port_yarn_ramp", lambda i, low, high, ext=1.0: right(i, low, high))
    ggml = _entries(lambda e: e["kind"] != "error" and e["params"].get("ext_factor", 1.0) != 1.0)
    assert {e["op"] for e in ggml.values()} >= {"rope.inv_freq", "rope.apply"}
    run = run_conformance(module.torch_port("float64"), spec="mutant", select=lambda e: e["id"] in ggml)
    assert {r.case_id for r in run.results if r.status == "fail"} == set(ggml)


def test_port_that_drops_the_yarn_attention_factor_fails(monkeypatch):
    module = _module()
    real = module.port_rope_apply
    monkeypatch.setattr(module, "port_rope_apply", lambda x, pos, rotary, params, compute, scaled=None: real(
        x, pos, rotary, params, compute, None if scaled is None else {**scaled, "a": params["attention_factor"]}))
    yarn = _entries(lambda e: _scaled_rope(e) and e["params"]["rope_type"] == "yarn")
    run = run_conformance(module.torch_port("float64"), spec="mutant", select=lambda e: e["id"] in yarn)
    # an explicit factor 1, or vLLM DeepSeek's mscale == mscale_all_dim, leaves cos and sin unscaled
    scaled = {i for i, e in yarn.items() if abs(_variant_factor(e["op"], e["params"]) - 1.0) > 1e-3}
    assert len(scaled) >= 4 and len(yarn) > len(scaled)
    assert {r.case_id for r in run.results if r.status == "fail"} == scaled


def test_port_numbering_m2m100_chunks_as_fairseq_fails(monkeypatch):
    module = _module()
    right = module.port_fairseq
    monkeypatch.setattr(module, "port_fairseq", lambda tokens, params, compute: right(
        tokens, {**params, "cache_rule": "fairseq"}, compute))  # every token of a cached chunk at pad + past + 1
    m2m100 = _entries(lambda e: e["op"] == "sinusoidal.fairseq" and e["kind"] != "error"
                      and e["params"].get("cache_rule") == "m2m100")
    run = run_conformance(module.torch_port("float64"), spec="mutant", select=lambda e: e["id"] in m2m100)
    cached = {i for i, e in m2m100.items() if e["params"]["past_length"]}
    assert cached and {r.case_id for r in run.results if r.status == "fail"} == cached


def test_llama_rope_runs_scaled_cases_through_transformers_rope_init():
    cases = _entries(lambda e: _scaled_rope(e) and e["op"] == "rope.apply")
    run = run_conformance(_adapter("LLAMA_ROPE", "float32"), spec="llama-rope", expectations=EXPECTATIONS,
                          select=lambda e: e["id"] in cases)
    assert run.passed
    status = {r.case_id: r.status for r in run.results}
    library = {i for i, e in cases.items() if e["params"]["layout"] == "half" and e["params"]["partial"] == "prefix"
               and e["params"]["rope_type"] in ("linear", "dynamic", "yarn", "llama3", "longrope")
               and e["params"]["dynamic_convention"] == e["params"]["yarn_convention"] == "transformers"
               and e["params"]["ext_factor"] == 1.0}
    assert len(library) >= 8 and {status[i] for i in library} == {"pass"}
    assert {r.params["rope_type"] for r in run.results if r.status == "pass"} >= {"linear", "dynamic", "yarn",
                                                                                  "llama3", "longrope"}
    na = [r.message for r in run.results if r.status == "not_applicable"]
    assert any("ext_factor" in m and "ggml" in m for m in na) and any("ntk_aware" in m for m in na)


def _rotate_freq(entry):
    return entry["op"] == "rope.rotate_freq"


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16"])
def test_port_passes_the_rotation_at_given_frequencies(dtype):
    run = run_conformance(_adapter("TORCH", dtype), spec="torch", select=_rotate_freq)
    assert run.passed
    assert {r.case_id for r in run.results if r.status == "pass"} == set(_entries(_rotate_freq))


def test_port_with_the_frequencies_reversed_fails_the_rotation_at_given_frequencies(monkeypatch):
    module = _module()
    right = module.checks.rotate_freq

    def reversed_freq(params, inputs):
        c = right(params, inputs)
        return {**c, "inv_freq": np.ascontiguousarray(c["inv_freq"][::-1])}
    monkeypatch.setattr(module.checks, "rotate_freq", reversed_freq)
    normal = _entries(lambda e: _rotate_freq(e) and e["kind"] != "error")
    run = run_conformance(module.torch_port("float32"), spec="mutant", select=lambda e: e["id"] in normal)
    assert {r.case_id for r in run.results if r.status == "fail"} == set(normal)
