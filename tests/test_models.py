"""The model-config resolver: the distinctive layer rules of each family, provenance, bad input."""

import json
import math
import re
import time

import numpy as np
import pytest

from posenc_ref import rope, rope_scaling
from posenc_ref.errors import SpecError
from posenc_ref.models import INTERPRETATIONS, compute, resolve
from posenc_ref.models.catalogue import CATALOGUE, get

LLAMA = {"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 4,
         "num_hidden_layers": 2, "max_position_embeddings": 4096, "rope_theta": 10000.0}
# (num_key_value_heads written out: the tests below change the model type, and several classes default it to
# a count that does not divide 4)


def layers(name, **kwargs):
    return resolve(get(name).config, **kwargs).layers


def test_catalogue_size_and_sources():
    assert len(CATALOGUE) >= 40
    assert len({e.family for e in CATALOGUE.values()}) >= 25
    for entry in CATALOGUE.values():
        assert entry.sources["config.json"].startswith("https://huggingface.co/"), entry.name
        assert entry.sources["checked"], entry.name
        json.dumps(entry.config)  # JSON types only, as the file has them


@pytest.mark.parametrize("name", list(CATALOGUE))
def test_every_key_is_read_or_listed_as_ignored(name):
    config = get(name).config
    prov = resolve(config).provenance
    for key in config:
        assert key in prov.read or key in prov.ignored, key
    assert set(prov.defaulted).isdisjoint(prov.read)
    assert prov.interpretation == "transformers-5" and "transformers 5" in prov.interpretation_version


def test_gemma3_sliding_layers_use_the_local_base_and_no_scaling():
    ls = layers("gemma-3-27b")
    full = [lp.index for lp in ls if lp.kind == "full_attention"]
    assert full == list(range(5, 62, 6))
    for lp in ls:
        if lp.kind == "sliding_attention":
            assert (lp.params["rope_type"], lp.params["base"], lp.window) == ("default", 10000.0, 1024)
            assert "factor" not in lp.params
        else:
            assert (lp.params["rope_type"], lp.params["base"], lp.params["factor"], lp.window) == (
                "linear", 1e6, 8.0, None)
        assert lp.logit_scale == pytest.approx(168 ** -0.5, rel=1e-15)


def test_gemma3_4b_takes_its_heads_and_bases_from_the_class_defaults():
    # google/gemma-3-4b-pt's text_config names no head count, head width, bases or window pattern:
    # Gemma3TextConfig's 8 heads, 4 key heads, head_dim 256 (not 2560 / 8), query_pre_attn_scalar 256,
    # 1e6 and 1e4, a full layer every sixth
    m = resolve(get("gemma-3-4b").config)
    assert {(lp.num_heads, lp.num_kv_heads, lp.head_dim) for lp in m.layers} == {(8, 4, 256)}
    assert [lp.index for lp in m.layers if lp.kind == "full_attention"] == list(range(5, 34, 6))
    assert {lp.params["base"] for lp in m.layers if lp.kind == "sliding_attention"} == {10000.0}
    assert {lp.params["base"] for lp in m.layers if lp.kind == "full_attention"} == {1e6}
    assert {lp.logit_scale for lp in m.layers} == {256 ** -0.5}
    assert {"text_config.num_attention_heads", "text_config.num_key_value_heads", "text_config.head_dim",
            "text_config.rope_theta", "text_config.rope_local_base_freq",
            "text_config.sliding_window_pattern"} <= set(m.provenance.defaulted)
    # a key that is present is read, not defaulted
    assert "text_config.head_dim" in resolve(get("gemma-3-27b").config).provenance.read


def test_sliding_windows_follow_the_config_class_defaults_and_use_sliding_window():
    # transformers 5.17 configuration_qwen3.py: sliding_window 4096 and max_window_layers 28 by default, kept
    # only when use_sliding_window; layers from max_window_layers on slide.
    qwen3 = {**LLAMA, "model_type": "qwen3", "num_hidden_layers": 30, "use_sliding_window": True}
    m = resolve(qwen3)
    assert [lp.window for lp in m.layers] == [None] * 28 + [4096] * 2
    assert m.provenance.defaulted["sliding_window"] == 4096 and m.provenance.defaulted["max_window_layers"] == 28
    m = resolve({**qwen3, "use_sliding_window": False, "sliding_window": 131072})
    assert {lp.window for lp in m.layers} == {None} and {lp.kind for lp in m.layers} == {"full_attention"}
    assert "sliding_window" in m.provenance.ignored and any("dropped" in n for n in m.provenance.notes)
    # configuration_mistral.py: an absent sliding_window is the class's 4096 on every layer; null is none.
    mistral = {**LLAMA, "model_type": "mistral"}
    assert [lp.window for lp in resolve(mistral).layers] == [4096, 4096]
    assert [lp.window for lp in resolve({**mistral, "sliding_window": None}).layers] == [None, None]
    # a model type without sliding layers leaves the key unread (Llama never slides)
    assert "sliding_window" in resolve({**LLAMA, "sliding_window": 64}).provenance.ignored
    assert any("vLLM does not load" in n for n in resolve(qwen3, interpretation="vllm").provenance.notes)
    m = resolve({**qwen3, "use_sliding_window": False, "layer_types": ["sliding_attention"] * 30})
    assert {lp.window for lp in m.layers} == {None} and any("no window" in n for n in m.provenance.notes)


def test_gemma3_written_for_transformers_5_reads_the_same():
    text = dict(get("gemma-3-4b").config["text_config"])
    scaling = text.pop("rope_scaling")
    # the class defaults the hub file leaves out, written out as transformers 5 writes them
    text["layer_types"] = ["sliding_attention" if (i + 1) % 6 else "full_attention" for i in range(34)]
    text["rope_parameters"] = {"full_attention": {**scaling, "rope_theta": 1000000.0},
                               "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}}
    five = resolve({"model_type": "gemma3", "text_config": text}).layers
    assert [(a.kind, dict(a.params)) for a in five] == [(b.kind, dict(b.params)) for b in layers("gemma-3-4b")]
    # transformers 4.x cannot read rope_parameters: its reading drops the scaling (the sglang#26187 class)
    four = resolve({"model_type": "gemma3", "text_config": text}, interpretation="transformers-4")
    assert four.layers[5].params["rope_type"] == "default"
    assert "text_config.rope_parameters" in four.provenance.ignored


def test_llama4_nope_layers_and_temperature_tuning():
    ls = layers("llama-4-scout")
    nope = [lp.index for lp in ls if lp.scheme == "nope"]
    assert nope == list(range(3, 48, 4))
    rotated = ls[0]
    assert (rotated.kind, rotated.chunk_size, rotated.params["layout"], rotated.temperature) == (
        "chunked_attention", 8192, "interleaved", None)
    assert (rotated.params["factor"], rotated.params["low_freq_factor"], rotated.params["high_freq_factor"]) == (
        16.0, 1.0, 1.0)
    # the hub file's no_rope_layers is [] and it has no temperature keys: the class defaults decide both
    defaulted = resolve(get("llama-4-scout").config).provenance.defaulted
    assert defaulted["text_config.no_rope_layer_interval"] == 4
    assert {"text_config.attn_temperature_tuning", "text_config.floor_scale", "text_config.attn_scale"} <= set(
        defaulted)
    lp = ls[3]
    positions = np.array([0, 8190, 8191, 16383, 10**6])
    # log1p(floor((p + 1) / 8192)) * 0.1 + 1, written out
    steps = [0, 0, 1, 2, (10**6 + 1) // 8192]
    expected = [(math.log1p(s) * 0.1 + 1) / math.sqrt(128) for s in steps]
    q = np.ones((5, 5, 128))
    k = np.ones((5, 1, 128))
    q_out, k_out, scale = compute.model_nope(positions, q, k, config=get("llama-4-scout").config, layer=lp.index)
    np.testing.assert_allclose(scale, expected, rtol=1e-14)
    assert (q_out == q).all() and (k_out == k).all()


def test_phi3_longrope_switch_at_original_max_position():
    config = get("phi-3.5-mini").config
    lp = layers("phi-3.5-mini")[0]
    short, a_short = compute.inv_freq(lp.params, 4096, "t")
    long, a_long = compute.inv_freq(lp.params, 4097, "t")
    i = np.arange(48)
    np.testing.assert_allclose(short, 1 / (np.array(config["rope_scaling"]["short_factor"]) * 1e4 ** (i / 48)))
    np.testing.assert_allclose(long, 1 / (np.array(config["rope_scaling"]["long_factor"]) * 1e4 ** (i / 48)))
    assert a_short == a_long == pytest.approx(math.sqrt(1 + math.log(32) / math.log(4096)))
    with pytest.raises(SpecError, match="context_length"):
        compute.inv_freq(lp.params, None, "t")


def test_phi3_mini_128k_reads_su_as_longrope_with_its_own_lists():
    entry = get("phi-3-mini-128k")
    model = resolve(entry.config)
    assert {lp.signature() for lp in model.layers} == {model.layers[0].signature()}
    lp = model.layers[0]
    assert (lp.scheme, lp.params["rope_type"], lp.params["factor"], lp.params["original_max_position"]) == (
        "rope", "longrope", 131072 / 4096, 4096)
    assert "rope type 'su' is read as 'longrope' (transformers' alias)" in model.provenance.notes
    scaling = entry.config["rope_scaling"]
    assert scaling["long_factor"] != get("phi-3.5-mini").config["rope_scaling"]["long_factor"]
    i = np.arange(48)
    short, _ = compute.inv_freq(lp.params, 4096, "t")
    long, _ = compute.inv_freq(lp.params, 4097, "t")
    np.testing.assert_allclose(short, 1 / (np.array(scaling["short_factor"]) * 1e4 ** (i / 48)))
    np.testing.assert_allclose(long, 1 / (np.array(scaling["long_factor"]) * 1e4 ** (i / 48)))
    bad = {**entry.config, "rope_scaling": {**scaling, "long_factor": scaling["long_factor"][:47]}}
    with pytest.raises(SpecError, match="long_factor must be a list of rotary_dim/2 = 48 numbers, got length 47"):
        resolve(bad)


def test_falcon_rw_alibi_layers_and_the_bias_before_the_scale():
    model = resolve(get("falcon-rw-1b").config)
    assert model.num_layers == 24 and {lp.scheme for lp in model.layers} == {"alibi"}
    lp = model.layers[0]
    assert (lp.num_heads, lp.num_kv_heads, lp.head_dim, lp.logit_scale, lp.bias_scale) == (32, 32, 64, 0.125, 0.125)
    assert any("before the head_dim ** -0.5 scale" in note for note in model.provenance.notes)
    bias = compute.model_alibi([3], [0, 3], config=get("falcon-rw-1b").config, layer=0)
    # what Falcon adds to the scaled logits: the slope rule's bias over sqrt(head_dim) = 8
    np.testing.assert_allclose(bias[:, 0, 0], -3 * 2.0 ** (-8 * np.arange(1, 33) / 32) / 8)
    assert resolve(get("bloom-560m").config).layers[0].bias_scale == 1.0  # BLOOM and MPT add it after the scale
    assert resolve(get("mpt-7b").config).layers[0].bias_scale == 1.0
    assert np.all(bias[:, 0, 1] == 0)
    assert resolve({**get("falcon-rw-1b").config, "multi_query": True}).layers[0].num_kv_heads == 1
    assert resolve({**get("falcon-rw-1b").config, "new_decoder_architecture": True,
                    "num_kv_heads": 8}).layers[0].num_kv_heads == 8
    with pytest.raises(SpecError, match="num_attention_heads=32 must be a multiple of num_kv_heads=5"):
        resolve({**get("falcon-rw-1b").config, "new_decoder_architecture": True, "num_kv_heads": 5})
    rope_falcon = resolve({**get("falcon-rw-1b").config, "alibi": False}).layers[0]
    assert rope_falcon.scheme == "rope"
    with pytest.raises(SpecError, match="hidden size 2050 is not a multiple of the 32 heads"):
        resolve({**get("falcon-rw-1b").config, "hidden_size": 2050})


def test_deepseek_softmax_multiplier_and_rope_suffix():
    lite = layers("deepseek-v2-lite")[0]
    g = 0.1 * 0.707 * math.log(40) + 1
    assert lite.logit_scale == pytest.approx(g * g / math.sqrt(192), rel=1e-14)
    _, a = compute.inv_freq(lite.params, None, "t")
    assert a == 1.0  # mscale == mscale_all_dim: the cos/sin factor cancels
    v3 = layers("deepseek-v3")[0]
    assert (v3.params["partial"], v3.params["rotary_dim"], v3.params["layout"], v3.head_dim) == (
        "suffix", 64, "interleaved_to_half", 192)
    rng = np.random.default_rng(0)
    q, k = rng.normal(size=(2, 1, 192)), rng.normal(size=(2, 1, 192))
    q_rot, _, _, _, _ = compute.model_rope(np.array([0, 4097]), q, k, config=get("deepseek-v3").config, layer=0)
    np.testing.assert_array_equal(q_rot[:, :, :128], q[:, :, :128])  # the nope channels pass through
    assert not np.allclose(q_rot[1, :, 128:], q[1, :, 128:])


def test_gpt_oss_yarn_does_not_truncate():
    ls = layers("gpt-oss-20b")
    assert ls[0].params["truncate"] is False and ls[0].window == 128 and ls[1].window is None
    w, a = compute.inv_freq(ls[0].params, None, "t")
    w_trunc, _, _ = rope_scaling.rope_inv_freq(dim=64, base=150000.0, rope_type="yarn", factor=32.0,
                                               original_max_position=4096, beta_fast=32.0, beta_slow=1.0)
    assert not np.allclose(w, w_trunc, rtol=1e-9)
    assert a == pytest.approx(0.1 * math.log(32) + 1)


def test_neox_and_gptj_partial_rotary():
    pythia = layers("pythia-160m")[0]
    assert (pythia.params["rotary_dim"], pythia.params["partial"], pythia.params["layout"]) == (16, "prefix", "half")
    rng = np.random.default_rng(1)
    q = rng.normal(size=(3, 1, 64))
    positions = np.array([0, 5, 2047])
    q_rot, _, cos, _, _ = compute.model_rope(positions, q, q.copy(), config=get("pythia-160m").config, layer=0)
    np.testing.assert_array_equal(q_rot[..., 16:], q[..., 16:])
    expected = rope.rope_apply(q.transpose(1, 0, 2)[None], positions, rotary_dim=16)[0].transpose(1, 0, 2)
    np.testing.assert_array_equal(q_rot, expected)
    assert cos.shape == (3, 8)
    gptj = layers("gpt-j-6b")[0]
    assert (gptj.params["rotary_dim"], gptj.head_dim, gptj.params["layout"]) == (64, 256, "interleaved")


def test_glm_rotates_the_first_half_of_the_head_in_adjacent_pairs():
    entry = get("glm-4-9b-chat-hf")
    model = resolve(entry.config)
    layer = model.layers[0]
    assert {row.kind for row in model.layers} == {"full_attention"} and len(model.layers) == 40
    assert (layer.head_dim, layer.params["rotary_dim"], layer.params["partial"], layer.params["layout"],
            layer.params["base"]) == (128, 64, "prefix", "interleaved", 10000.0)
    assert model.provenance.defaulted["partial_rotary_factor"] == 0.5  # GlmConfig's default; the file has none
    rng = np.random.default_rng(4)
    q, k = rng.normal(size=(3, 32, 128)), rng.normal(size=(3, 2, 128))
    positions = np.array([0, 7, 131071])
    q_rot = compute.model_rope(positions, q, k, config=entry.config, layer=0)[0]
    angle = positions[:, None, None] * 10000.0 ** (-np.arange(32) / 32)  # pair i turns at base ** (-2i / 64)
    even, odd = q[..., 0:64:2], q[..., 1:64:2]
    np.testing.assert_allclose(q_rot[..., 0:64:2], even * np.cos(angle) - odd * np.sin(angle), rtol=0, atol=1e-12)
    np.testing.assert_allclose(q_rot[..., 1:64:2], odd * np.cos(angle) + even * np.sin(angle), rtol=0, atol=1e-12)
    np.testing.assert_array_equal(q_rot[..., 64:], q[..., 64:])


def test_qwen_vl_mrope_sections():
    vl2, vl3 = layers("qwen2-vl-7b")[0], layers("qwen3-vl-8b")[0]
    assert (vl2.scheme, vl2.params["mrope_section"], vl2.params["mrope_layout"]) == ("mrope", [16, 24, 24], "chunked")
    assert (vl3.params["mrope_section"], vl3.params["mrope_layout"], vl3.params["base"]) == (
        [24, 20, 20], "interleaved", 5000000.0)
    rng = np.random.default_rng(2)
    q, k = rng.normal(size=(2, 7, 128)), rng.normal(size=(2, 1, 128))
    same = np.array([[3, 900]] * 3)  # text tokens: equal streams reduce MRoPE to RoPE
    q_rot = compute.model_rope(same, q, k, config=get("qwen2-vl-7b").config, layer=0)[0]
    plain = rope.rope_apply(q.transpose(1, 0, 2)[None], [3, 900], base=1e6)[0].transpose(1, 0, 2)
    np.testing.assert_array_equal(q_rot, plain)


def test_alibi_t5_deberta_and_learned_offsets():
    bloom = layers("bloom-560m")[0]
    assert (bloom.scheme, bloom.params["num_heads"], bloom.params["bias_max"]) == ("alibi", 16, 8.0)
    bias = compute.model_alibi([3], [0, 3], config=get("bloom-560m").config, layer=0)
    np.testing.assert_allclose(bias[:, 0, 0], -3 * 2.0 ** -(0.5 * np.arange(1, 17)))
    t5 = layers("t5-base")
    assert [lp.params["direction"] for lp in (t5[0], t5[12])] == ["bidirectional", "unidirectional"]
    # The hub file has no num_decoder_layers: T5Config then takes num_layers (12), not its class default 6.
    assert len(t5) == 24
    assert resolve(get("t5-base").config).provenance.defaulted == {"num_decoder_layers": 12,
                                                                   "relative_attention_max_distance": 128}
    deb = layers("deberta-v3-base")[0]
    assert (deb.params["max_relative_positions"], deb.params["position_buckets"], deb.params["pos_att_type"]) == (
        512, 256, "c2p|p2c")
    offsets = {name: layers(name)[0].params["offset"] for name in ("opt-125m", "bart-base", "roberta-base",
                                                                     "bert-base-uncased", "gpt2")}
    assert offsets == {"opt-125m": 2, "bart-base": 2, "roberta-base": 2, "bert-base-uncased": 0, "gpt2": 0}
    rows = compute.model_learned(np.array([0, 2047]), config=get("opt-125m").config, layer=0)
    assert rows.tolist() == [2, 2049]
    with pytest.raises(SpecError) as info:
        compute.model_learned(np.array([2048]), config=get("opt-125m").config, layer=0)
    assert info.value.category == "out_of_range"
    m2m = layers("m2m100-418m")[0]
    assert (m2m.params["position_offset"], m2m.params["ladder"]) == (2, "t2t")
    whisper = layers("whisper-small")
    assert (whisper[0].scheme, whisper[12].scheme) == ("sinusoidal", "learned")


def test_gemma4_full_layers_use_the_global_head_width_and_proportional_rope():
    g4 = layers("gemma-4-e4b")
    full = [lp.index for lp in g4 if lp.kind == "full_attention"]
    assert full == [5, 11, 17, 23, 29, 35, 41]
    sliding, wide = g4[0], g4[5]
    assert (sliding.head_dim, sliding.window, sliding.params["rope_type"], sliding.params["base"]) == (
        256, 512, "default", 10000.0)
    assert (wide.head_dim, wide.num_kv_heads, wide.window, wide.params["partial"]) == (512, 2, None, "proportional")
    assert {lp.logit_scale for lp in g4} == {1.0}
    w, factor = compute.inv_freq(wide.params, None, "t")  # 64 of the 256 pairs turn, over the 512-wide head
    np.testing.assert_array_equal(w[64:], 0.0)
    np.testing.assert_allclose(w[:64], 1e6 ** -(np.arange(0, 128, 2) / 512), rtol=1e-15)
    assert factor == 1.0
    text = {"model_type": "gemma4_text", "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
            "head_dim": 16, "global_head_dim": 32, "num_hidden_layers": 7, "attention_k_eq_v": True,
            "num_global_key_value_heads": 1}
    m = resolve(text)  # no layer_types: every 6th full and the last forced full; the class's rope defaults
    assert [lp.kind[0] for lp in m.layers] == list("sssssff")
    assert m.layers[5].num_kv_heads == 1 and m.layers[0].num_kv_heads == 2
    assert m.layers[6].params["partial_rotary_factor"] == 0.25 and m.layers[0].params["base"] == 10000.0
    assert "rope_parameters" in m.provenance.defaulted
    forced = resolve({**text, "layer_types": ["sliding_attention"] * 7})
    assert forced.layers[6].kind == "full_attention" and any("last layer" in n for n in forced.provenance.notes)
    big = layers("gemma-4-26b-a4b")  # attention_k_eq_v true: the full layers take the global key-head count
    assert [lp.index for lp in big if lp.kind == "full_attention"] == [5, 11, 17, 23, 29]
    assert (big[0].head_dim, big[0].num_kv_heads, big[0].window) == (256, 8, 1024)
    assert (big[5].head_dim, big[5].num_kv_heads, big[5].window) == (512, 2, None)
    dense = layers("gemma-4-31b")
    assert [lp.index for lp in dense if lp.kind == "full_attention"] == list(range(5, 60, 6))
    assert (dense[0].head_dim, dense[0].num_kv_heads, dense[0].window) == (256, 16, 1024)
    assert (dense[59].head_dim, dense[59].num_kv_heads, dense[59].window) == (512, 4, None)


def test_ministral3_yarn_factor_one_and_the_beta_query_scale():
    m3 = layers("ministral-3-8b")
    lp = m3[0]
    assert {x.signature() for x in m3} == {lp.signature()} and len(m3) == 34
    assert compute.inv_freq(lp.params, None, "t")[1] == 1.0  # g(16, 1) / g(16, 1): transformers' YaRN factor
    scale = compute.temperature(lp, np.array([0, 16383, 16384, 32767, 32768, 262143]))
    expected = 1 + 0.1 * np.log1p(np.floor(np.array([0, 16383, 16384, 32767, 32768, 262143]) / 16384))
    np.testing.assert_array_equal(scale, expected)
    assert scale[2] > 1.069 and scale[-1] > 1.277
    bare = {"model_type": "ministral3", "hidden_size": 256, "num_attention_heads": 4, "num_key_value_heads": 4,
            "num_hidden_layers": 2, "rope_theta": 5e5}
    m = resolve(bare)  # Ministral3Config fills rope_parameters whole; the top-level rope_theta is not read
    assert (m.layers[0].params["base"], m.layers[0].params["rope_type"], m.max_position) == (1e6, "yarn", 262144)
    assert "rope_theta" in m.provenance.ignored and "rope_parameters" in m.provenance.defaulted
    beta = {**LLAMA, "rope_parameters": {"rope_type": "default", "rope_theta": 1e4, "llama_4_scaling_beta": 0.1}}
    other = resolve(beta)  # a Llama config does not apply the beta rule
    assert other.layers[0].temperature is None and "rope_parameters.llama_4_scaling_beta" in other.provenance.ignored


def test_xlnet_rows_span_the_model_width_and_follow_attn_type_and_clamp_len():
    config = get("xlnet-base-cased").config
    xl = layers("xlnet-base-cased")
    assert {(lp.scheme, lp.kind, lp.head_dim, lp.logit_scale) for lp in xl} == {
        ("transformer_xl", "bi_attention", 64, 0.125)}
    assert xl[0].params == {"dim": 768, "base": 10000.0, "clamp_len": 0, "attn_type": "bi"}
    rows = compute.model_transformer_xl(np.array([-3, 0, 5]), config=config, layer=11)
    w = 10000.0 ** -(np.arange(0, 768, 2) / 768)  # over d_model = 768, not the head width 64
    for row, delta in zip(rows, (-3, 0, 5)):
        np.testing.assert_allclose(row, np.concatenate([np.sin(delta * w), np.cos(delta * w)]), rtol=0, atol=1e-15)
    small = {"model_type": "xlnet", "d_model": 8, "n_head": 2, "n_layer": 1, "attn_type": "uni", "clamp_len": 4}
    clamped = compute.model_transformer_xl(np.array([4, 9, 1000]), config=small, layer=0)
    np.testing.assert_array_equal(clamped[1:], clamped[[0, 0]])  # every distance past 4 reads R_4
    with pytest.raises(SpecError, match="distances >= 0 only") as info:
        compute.model_transformer_xl(np.array([-1]), config=small, layer=0)
    assert info.value.category == "out_of_range"
    assert resolve(small).provenance.defaulted == {"bi_data": False}
    for bad, match in (({"d_head": 5}, "d_head=5 must equal d_model // n_head = 4"),
                       ({"attn_type": "both"}, "attn_type must be 'bi' or 'uni'"),
                       ({"bi_data": True}, "bi_data=True"), ({"clamp_len": 2.5}, "clamp_len must be an integer"),
                       ({"n_head": 3}, "d_model=8 must be a multiple of n_head=3")):
        with pytest.raises(SpecError, match=match):
            resolve({**small, **bad})


def test_llama3_with_equal_band_factors_is_a_step():
    config = {**LLAMA, "rope_scaling": {"rope_type": "llama3", "factor": 16.0, "low_freq_factor": 1.0,
                                        "high_freq_factor": 1.0, "original_max_position_embeddings": 8192}}
    lp = resolve(config).layers[0]
    w, _ = compute.inv_freq(lp.params, None, "t")
    plain = 1e4 ** -(np.arange(8) / 8)
    np.testing.assert_array_equal(w, np.where(2 * np.pi / plain < 8192, plain, plain / 16.0))


def test_interpretations_named_with_versions():
    assert set(INTERPRETATIONS) == {"transformers-5", "transformers-4", "vllm"}
    vllm = resolve(get("deepseek-v3").config, interpretation="vllm").layers[0]
    assert vllm.params["yarn_convention"] == "vllm_deepseek"
    phi = dict(get("phi-3.5-mini").config)
    phi["rope_scaling"] = {**phi["rope_scaling"], "attention_factor": 1.0}
    assert resolve(phi).layers[0].params["attention_factor"] == 1.0
    assert "attention_factor" not in resolve(phi, interpretation="vllm").layers[0].params


def test_unknown_keys_are_listed_never_an_error():
    bare = {key: value for key, value in LLAMA.items() if key != "num_key_value_heads"}
    prov = resolve({**bare, "my_flag": 3, "rope_scaling": {"rope_type": "linear", "factor": 2.0, "x": 1}}).provenance
    assert "my_flag" in prov.ignored and "rope_scaling.x" in prov.ignored
    assert prov.defaulted["num_key_value_heads"] == 4  # LlamaConfig: the query heads
    # MistralConfig's key heads default to 8 whatever the query heads: 32 query heads, 8 key heads
    mistral = resolve({**bare, "model_type": "mistral", "hidden_size": 4096, "num_attention_heads": 32}).layers[0]
    assert (mistral.num_heads, mistral.num_kv_heads, mistral.head_dim) == (32, 8, 128)


@pytest.mark.parametrize("config,match", [
    ({**LLAMA, "rope_scaling": {"rope_type": "ntk_by_parts", "factor": 2.0}}, "known: default, linear"),
    ({**LLAMA, "rope_scaling": {"rope_type": "yarn"}}, "needs factor"),
    ({**LLAMA, "rope_scaling": {"rope_type": "linear", "factor": -1.0}}, "factor=-1.0"),
    ({**LLAMA, "rope_scaling": {"type": "longrope", "short_factor": [1.0] * 7, "long_factor": [1.0] * 8},
      "original_max_position_embeddings": 1024}, "short_factor must be a list of rotary_dim/2 = 8 numbers"),
    ({**LLAMA, "layer_types": ["full_attention"]}, "layer_types must list one type per layer"),
    ({**LLAMA, "hidden_size": 66}, "hidden_size=66 is not a multiple of num_attention_heads=4"),
    ({**LLAMA, "model_type": "mistral", "sliding_window": 0}, "sliding_window must be an integer >= 1 or null, got 0"),
    ({**LLAMA, "model_type": "gemma4_text", "sliding_window": None}, "Gemma4TextConfig has no null window"),
    ({**LLAMA, "model_type": "no_such_model"}, "not one posenc-ref reads"),
    ({**LLAMA, "rope_parameters": {"full_attention": {"rope_theta": 1e4}}, "layer_types": ["sliding_attention"] * 2},
     "no entry for layer type 'sliding_attention'"),
])
def test_bad_configs_name_the_key_and_value(config, match):
    with pytest.raises(SpecError, match=match):
        resolve(config)


def test_bad_files_and_objects(tmp_path):
    text = tmp_path / "config.json"
    text.write_text("{not json")
    with pytest.raises(SpecError, match="is not a JSON file"):
        resolve(text)
    text.write_text("[1, 2]")
    with pytest.raises(SpecError, match="must hold a JSON object, got a JSON list"):
        resolve(str(text))
    with pytest.raises(TypeError):
        resolve(42)
    text.write_text(json.dumps(LLAMA))
    assert resolve(text).num_layers == 2


def test_model_ops_check_their_inputs():
    q, k = np.ones((2, 2, 16)), np.ones((2, 1, 16))
    with pytest.raises(SpecError, match="GQA ratio"):  # LLAMA has 4 key heads for 4 query heads: ratio 1
        compute.model_rope([0, 1], q, k, config=LLAMA, layer=0)
    wide = {**LLAMA, "num_key_value_heads": 1}
    assert compute.model_rope([0, 1], q, k, config=wide, layer=0)[0].shape == (2, 2, 16)
    with pytest.raises(SpecError, match="whole number of heads"):
        compute.model_rope([0, 1], np.ones((2, 3, 16)), np.ones((2, 2, 16)), config=wide, layer=0)
    with pytest.raises(SpecError, match="layer must be an integer in"):
        compute.model_rope([0, 1], k, k, config=LLAMA, layer=5)
    with pytest.raises(TypeError):
        compute.model_rope([0, 1], k, k, config="llama", layer=0)


def test_resolving_the_catalogue_and_building_its_cases_is_bounded():
    start = time.process_time()
    for entry in CATALOGUE.values():
        resolve(entry.config)
    from posenc_ref.records import models
    cases = [c for op in models.RECORDS for c in op.cases]
    for case in cases[:20]:
        case.make_inputs()
    assert time.process_time() - start < 10
    assert len(cases) >= 60


def test_bloom_resaved_spelling_reads_as_the_hub_file():
    # BigScience's hub files write n_embed and num_attention_heads (bigscience/bloom-560m at e985a63c, the
    # catalogued entry; bigscience/bloomz-1b7 at 56394a13c2ba681dfd14a32346d3a14f3b69fcfa); a config re-saved by
    # transformers writes hidden_size and n_head. BloomConfig maps both onto the same model.
    catalogued = resolve(get("bloom-560m").config)
    assert {"n_embed": 1024, "num_attention_heads": 16} == {k: catalogued.provenance.read[k]
                                                            for k in ("n_embed", "num_attention_heads")}
    assert not catalogued.provenance.ignored
    assert any("n_embed is read as hidden_size (BloomConfig" in n for n in catalogued.provenance.notes)
    resaved = resolve({"model_type": "bloom", "hidden_size": 1024, "n_head": 16, "n_layer": 24})
    assert resaved.layers == catalogued.layers
    assert (len(catalogued.layers), catalogued.layers[0].scheme) == (24, "alibi")


@pytest.mark.parametrize(("config", "key", "expected"), [
    ({"model_type": "gpt2", "max_position_embeddings": 2048, "hidden_size": 1600, "num_attention_heads": 25,
      "num_hidden_layers": 48}, "n_positions", 2048),  # read as the default 1024 before the spellings
    ({"model_type": "gptj", "max_position_embeddings": 4096, "hidden_size": 256, "num_attention_heads": 4,
      "num_hidden_layers": 2, "rotary_dim": 32}, "n_positions", 4096),
    ({"model_type": "xlnet", "hidden_size": 256, "num_attention_heads": 4, "num_hidden_layers": 3}, "n_layer", 3),
    ({"model_type": "t5", "num_attention_heads": 4, "head_dim": 64, "num_layers": 2}, "num_heads", 4),
    ({"model_type": "mpt", "hidden_size": 256, "num_attention_heads": 4, "num_hidden_layers": 2,
      "attn_config": {"alibi": True}}, "n_heads", 4),
])
def test_every_spelling_transformers_accepts_is_read(config, key, expected):
    m = resolve(config)
    spelled = {k: v for k, v in config.items() if k not in ("model_type", "attn_config")}
    assert not set(spelled) - set(m.provenance.read)  # every spelling given was read, none ignored
    if key == "n_positions":
        assert m.max_position == expected
    elif key == "n_layer":
        assert len(m.layers) == expected
    else:
        assert {layer.num_heads for layer in m.layers} == {expected}
    assert any(f"is read as {key} (" in n for n in m.provenance.notes)


@pytest.mark.parametrize(("config", "message"), [
    ({"model_type": "gpt2", "n_positions": 1024, "max_position_embeddings": 2048},
     "n_positions=1024 and max_position_embeddings=2048 are two spellings of one GPT2Config attribute and disagree"),
    ({"model_type": "bloom", "hidden_size": 512, "n_embed": 1024, "n_head": 16, "n_layer": 2},
     "hidden_size=512 and n_embed=1024 are two spellings of one BloomConfig attribute"),
    ({"model_type": "bloom", "hidden_size": 1024, "n_layer": 2}, "needs n_head or num_attention_heads"),
    ({"model_type": "whisper", "d_model": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
      "encoder_layers": 1, "decoder_layers": 1, "decoder_attention_heads": 4},
     "num_attention_heads=4, num_key_value_heads=2 are spellings of one WhisperConfig attribute"),
])
def test_disagreeing_or_missing_spellings_are_an_error(config, message):
    with pytest.raises(SpecError, match=re.escape(message)):
        resolve(config)


def test_equal_spellings_are_both_read():
    m = resolve({"model_type": "gpt2", "n_positions": 2048, "max_position_embeddings": 2048})
    assert m.max_position == 2048 and {"n_positions", "max_position_embeddings"} <= set(m.provenance.read)
