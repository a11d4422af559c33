"""The catalogue: the position-relevant fields of real, public model configs, each with its source.

Each entry's ``config`` holds only the keys that decide positions (and those the resolver needs
to read them: model type, widths, head and layer counts), spelled and typed exactly as the
model's ``config.json`` on the Hugging Face hub has them. ``sources`` says where the values come
from: ``config.json`` (the hub file, at the hub revision the copies were checked against where they
name one, else at ``main``), ``defaults`` (the transformers config class whose default fills a key the
file leaves out), ``checked`` (how the values were confirmed: a second public
copy of the file, or not) and, where the values were taken from or checked against named public
copies, ``copies`` (repository, path and commit). Only numbers are copied, never weights or text.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from posenc_ref.models._factors import PHI3_MINI_128K_LONG, PHI3_MINI_128K_SHORT, PHI35_LONG, PHI35_SHORT

_COPY = "a public copy of this config.json (a test fixture or model dump citing the hub file) gives the same values"
_EARLIER = ("an earlier revision of the hub file (a public copy) gives the same position values; the current "
            "file was not cross-checked against a second copy")


@dataclass(frozen=True)
class CatalogueEntry:
    """One catalogued model: its name, family, position-relevant config and sources."""

    name: str
    family: str
    config: Mapping[str, Any]
    sources: Mapping[str, str]


def _entry(name: str, family: str, hub: str, config: dict[str, Any], checked: str, defaults: str = "",
           copies: str = "", revision: str = "main") -> CatalogueEntry:
    sources = {"config.json": f"https://huggingface.co/{hub}/blob/{revision}/config.json", "checked": checked}
    if defaults:
        sources["defaults"] = defaults
    if copies:
        sources["copies"] = copies
    return CatalogueEntry(name, family, config, sources)


def _llama(hidden: int, heads: int, kv: int, layers: int, max_pos: int, theta: float, **extra: Any) -> dict[str, Any]:
    return {"model_type": "llama", "hidden_size": hidden, "num_attention_heads": heads, "num_key_value_heads": kv,
            "num_hidden_layers": layers, "max_position_embeddings": max_pos, "rope_theta": theta, **extra}


def _llama3(factor: float) -> dict[str, Any]:
    return {"factor": factor, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
            "original_max_position_embeddings": 8192, "rope_type": "llama3"}


def _qwen2(max_pos: int, **extra: Any) -> dict[str, Any]:
    return {"model_type": "qwen2", "hidden_size": 3584, "num_attention_heads": 28, "num_key_value_heads": 4,
            "num_hidden_layers": 28, "max_position_embeddings": max_pos, "rope_theta": 1000000.0,
            "sliding_window": 131072, "use_sliding_window": False, "max_window_layers": 28, **extra}


def _gemma4_big(hidden: int, heads: int, kv: int, global_kv: int, cycles: int) -> dict[str, Any]:
    """Gemma 4 26B-A4B / 31B: attention_k_eq_v, window 1024, 5 sliding + 1 full layer per cycle."""
    return {"model_type": "gemma4", "text_config": {
        "model_type": "gemma4_text", "hidden_size": hidden, "num_attention_heads": heads, "num_key_value_heads": kv,
        "num_global_key_value_heads": global_kv, "head_dim": 256, "global_head_dim": 512,
        "num_hidden_layers": 6 * cycles, "max_position_embeddings": 262144, "sliding_window": 1024,
        "attention_k_eq_v": True, "layer_types": (["sliding_attention"] * 5 + ["full_attention"]) * cycles,
        "rope_parameters": {"full_attention": {"partial_rotary_factor": 0.25, "rope_theta": 1000000.0,
                                               "rope_type": "proportional"},
                            "sliding_attention": {"rope_theta": 10000.0, "rope_type": "default"}}}}


def _gemma3(hidden: int, layers: int, **shape: int) -> dict[str, Any]:
    """Gemma 3's text_config as the hub files have it: the rest (the window pattern, both bases and, for the
    4B, the heads and head width) is the class's default."""
    return {"model_type": "gemma3", "text_config": {
        "model_type": "gemma3_text", "hidden_size": hidden, **shape, "num_hidden_layers": layers,
        "rope_scaling": {"factor": 8.0, "rope_type": "linear"}, "sliding_window": 1024}}


_GEMMA3_DEFAULTS = ("transformers Gemma3TextConfig defaults (models/gemma3/configuration_gemma3.py): "
                    "max_position_embeddings 131072, sliding_window_pattern 6 (five sliding layers, then one full), "
                    "rope_theta 1000000.0 (full attention) and rope_local_base_freq 10000.0 (sliding attention)")
_GEMMA3_4B_DEFAULTS = (_GEMMA3_DEFAULTS + "; num_attention_heads 8, num_key_value_heads 4, head_dim 256 and "
                       "query_pre_attn_scalar 256, which the 4B file leaves to the class too")
_GEMMA3_COPIES = (
    "every copy found has the same short text_config (transformers_version 4.50.0.dev0): hidden_size, "
    "intermediate_size, model_type, num_hidden_layers, rope_scaling {factor 8.0, linear} and sliding_window 1024")
_GEMMA3_4B_COPIES = (
    "no verbatim copy of google's own file was found (the repository is gated); " + _GEMMA3_COPIES + ", nothing "
    "else: the hub pages of mlx-community/gemma-3-4b-it-bf16 (the -it file, unquantized) and "
    "mlx-community/gemma-3-4b-pt-6bit (the -pt file with MLX's quantization block). unsloth/gemma-3-4b-pt, "
    "re-saved by a later transformers, writes the class defaults out: 8 heads, 4 key heads, head_dim 256, "
    "query_pre_attn_scalar 256, max_position_embeddings 131072, rope_local_base_freq 10000.0")
_GEMMA3_27B_COPIES = (
    "no verbatim copy of google's own file was found (the repository is gated); " + _GEMMA3_COPIES + ", plus "
    "head_dim 128, num_attention_heads 32, num_key_value_heads 16 and query_pre_attn_scalar 168: "
    "NVIDIA/TensorRT-LLM@fe6fa01d7fcc2e20f55c756ed9281d6aeabaf494 "
    "tests/unittest/_torch/modeling/test_modeling_gemma3.py (the file as a Python dict, eos [1, 106]: the -it "
    "file, with num_hidden_layers and sliding_window cut for the test and sliding_window_pattern 6 added) and "
    "the hub pages of re-uploads (btly/hewo; Abc7347/copytext27binstructgmn, an MLX 4-bit copy)")
_PHI3_128K_COPIES = (
    "dotnet/machinelearning@6d1f7e2bf83e260ceb4f07ad1ae9fe3257033d49 "
    "src/Microsoft.ML.GenAI.Phi/Resource/Config/phi-3-mini-128k-instruct-config.json (the whole file: "
    "transformers_version 4.39.3, rope_scaling.type 'su'); pytorch/torchtune@9f37b169622320f76f1d5125c1665830928766a1 "
    "torchtune/models/phi3/_model_builders.py (LONG_FACTORS, SHORT_FACTORS, phi3_mini_128k: 32 layers, 32 heads, "
    "32 key heads, width 3072, original 4096, maximum 131072, base 10000). These are the values of the file as "
    "first published; whether the hub's main still holds them was not checked")
_FALCON_RW_COPIES = (
    "a Go test fixture quoting the hub file (package falcon, constant falconRW1BConfig, \"Fixture source: "
    "https://huggingface.co/tiiuae/falcon-rw-1b/blob/main/config.json\"; its repository was not resolved): alibi "
    "true, hidden_size 2048, num_attention_heads 32, num_hidden_layers 24, multi_query false, "
    "new_decoder_architecture false; the model card and keras-team/keras-hub "
    "keras_hub/src/models/falcon/falcon_presets.py (falcon_refinedweb_1b_en) give 24 layers")
_WHISPER_SMALL_COPIES = (
    "fancyerii/fancyerii.github.io@98971536217239ec760c48bde7bc71f412459543 _posts/2024-05-31-hf-whipser-code.md "
    "quotes the whole hub-cache file models--openai--whisper-small/snapshots/973afd24965f72e36ca33b3055d56a652f456b4d/"
    "config.json (transformers_version 4.27.0.dev0): d_model 768, encoder_layers 12, decoder_layers 12, "
    "encoder_attention_heads 12, decoder_attention_heads 12, max_source_positions 1500, max_target_positions 448 "
    "(and scale_embedding false); the config_dict it prints next adds only _commit_hash 973afd24 and "
    "attn_implementation")
_FALCON_7B_COPIES = (
    "tenstorrent/tt-buda@97caab7903a95ede3ddea536e3e3aec89cb98da5 pybuda/test/falcon/models/falcon7b/config.json "
    "(beside the hub's configuration_RW.py and modelling_RW.py) is the file as first published, for remote code: "
    "model_type RefinedWebModel, hidden_size 4544, n_head 71, n_layer 32, multi_query true, alibi false, "
    "parallel_attn true, transformers_version 4.27.4, no rope_theta, max_position_embeddings or "
    "new_decoder_architecture (n_head and n_layer are the entry's num_attention_heads and num_hidden_layers under "
    "RWConfig's names; the other three take FalconConfig's defaults); no copy of the current native file was found")
_MINISTRAL3_COPIES = (
    "YellowPerson792/ByteCaption@0f46888c08e8a866ee336144d99945ffdec72c4b Ministral-3-8B-Instruct-2512/config.json "
    "(the whole file, transformers_version 5.0.0.dev0, without the hub repository's FP8 quantization_config); "
    "every position key equals the transformers 5.17 Ministral3Config defaults "
    "(models/ministral3/configuration_ministral3.py, whose docstring names mistralai/Ministral-3-8B-Base-2512)")
_GEMMA4_E4B_COPIES = (
    "no verbatim copy of the hub file was found; these restatements of its text_config agree on every value "
    "here: ollama/ollama@017eb8ae4895fc6aea58b62f3793baa478586b6d x/models/gemma4/gemma4_test.go "
    "(TestParseTextConfigE4B: 42 layers, 8 heads, 2 key heads, head_dim 256, global_head_dim 512, "
    "max_position_embeddings 131072, sliding_window 512, attention_k_eq_v false, layer_types 5 sliding + 1 full "
    "x 7, rope_parameters full_attention proportional 0.25 at 1e6, sliding_attention default at 1e4), a public "
    "notebook's E4B settings (context_length 131072, the same heads, widths, window, layer pattern and rope), and "
    "a hub-metadata table quoting google/gemma-4-E4B-it (42 layers, 8 heads, 2 key heads, head_dim 256, window "
    "512, max_position_embeddings 131072); the rope_parameters also equal the transformers 5.17 "
    "Gemma4TextConfig defaults (models/gemma4/configuration_gemma4.py)")
_GEMMA4_26B_COPIES = (
    "ai-dynamo/aiconfigurator@0b077da5e017cb8ceac1ad14e91eb6e26c40207a "
    "aic-core/src/aiconfigurator_core/model_configs/google--gemma-4-26B-A4B_config.json (the whole file, "
    "Gemma4ForConditionalGeneration, transformers_version 5.5.0.dev0; text_config with enable_moe_block true, 128 "
    "experts, top 8); the NVFP4 derivative in the same repository (nvidia--Gemma-4-26B-A4B-NVFP4_config.json, "
    "@90f7fc0fcba7bb8082dd023da10bfc683ed99db5) has the same value for every position key here. layer_types is "
    "5 sliding + 1 full x 5 (full at layers 5, 11, 17, 23, 29)")
_GEMMA4_31B_COPIES = (
    "amazingvince/gemma4-fa4-kernels@0a8784c04f51b2d7c41e541f33042909f8be0c8a configs/model/gemma4-31b.lock.json "
    "(the text_config of google/gemma-4-31B restated key by key from the hub file at revision "
    "2d418d1b7ed8c04d732c3359e19a11fbc85b6842: 60 layers, 32 heads, 16 key heads, 4 global key heads, head_dim 256, "
    "global_head_dim 512, window 1024, max_position_embeddings 262144, attention_k_eq_v true, layer_types 5 sliding + "
    "1 full x 10, the rope_parameters below); AI-Hypercomputer/maxtext@618517702065e609e12c7772d9fbd4d1e20cf35a "
    "src/maxtext/configs/models/gemma4-31b.yml (Google's own restatement: 60 layers, 5376 wide, 32/16 heads, "
    "global_num_kv_heads 4, head_dim 256/512, window 1024, a 6-layer cycle, timescales 10000 local and 1000000 "
    "global, global_rope_proportion 0.25)")
_XLNET_COPIES = (
    "mmm587/DEMSA@b251ad43ae55347f66e537df4be448c0d81d272b xlnet-base-cased/config.json and "
    "zaidhassanch/gector@242aa88a2fc83c41390b155d2566f0d423f2fd5c pretrained_models/xlnet-base-cased/config.json "
    "(an earlier format: n_token, no model_type) agree on every position key: d_model 768, n_head 12, d_head 64, "
    "n_layer 12, attn_type 'bi', bi_data false, clamp_len -1, mem_len null, same_length false")
_PHI2_COPIES = (
    "henryhmko/VLM_interpretability@53ca1a97573e0a0133c7c3949a9caa84a44a2449 phi-2/config.json (the whole file, "
    "_name_or_path microsoft/phi-2, transformers_version 4.37.0): every position key here is equal, and its "
    "rope_scaling is null")
_LLAMA32_1B_COPIES = (
    "MatthewGoldsberry/LLM-Projects@bf1733705e944f312bf5564d13932a9b6de21606 Llama-3.2-1B/config.json (the whole "
    "file, LlamaForCausalLM, transformers_version 4.45.0.dev0): every position key here is equal, rope_scaling "
    "included (llama3, factor 32.0, low 1.0, high 4.0, original 8192)")
_QWEN3_8B_COPIES = (
    "sanjithudupa/compute-aware-arch-search@38147a2fa897d01d267ce4876b216d00804e8797 Qwen3-8B/config.json "
    "(Qwen3ForCausalLM, vocab 151936, re-saved by transformers 4.57.1, which writes layer_types: 36 x "
    "full_attention): every key here is equal in value (rope_theta spelled 1000000, an integer); the copy also "
    "has rope_scaling null, sliding_window null, use_sliding_window false and max_window_layers 36, which resolve "
    "as their absence does (no scaling, no sliding layer)")
_GPT_OSS_20B_COPIES = (
    "jihengzhang/jihz-gpt-oss-20b@7ec89800d2b55da8f65106e8a6f794b7b6433df8 gpt-oss-20b/config.json (the whole file, "
    "GptOssForCausalLM, transformers_version 4.55.0.dev0): every position key here is equal (rope_theta 150000, "
    "yarn factor 32.0 with truncate false, sliding_window 128, layer_types alternating sliding/full from layer 0)")
_BERT_BASE_COPIES = (
    "kujaarora/MLBA_CRM@2ac1a419a631725cb378840cea8580978972bf25 bert-base-uncased/config.json (BertModel, vocab "
    "30522, transformers_version 4.56.2) and du511/Sonic-RNY80C@95e7682da5924fc864a9532e879165702661b920 "
    "bert-base-uncased/config.json (_name_or_path bert-base-uncased, 4.48.2) agree on every position key here. "
    "Public setup scripts pin config.json at hub revision 86b5e0934494bd15c9632b12f734a8a67f723594 to git blob "
    "45a2321a7ecfdaaf60a6c1fd7f5463994cc8907d, 570 bytes, sha256 "
    "7160e1553ad2ca51d8c1cb066be533db31826e12d173824c1bb0cb1a4f187d20; a text with those hashes and size "
    "(BertForMaskedLM, transformers_version 4.6.0.dev0) has every key here equal")
_ROBERTA_BASE_COPIES = (
    "AYaroshevskii/Tweet-Sentiment@21be2ab2f22ca17d71abbd0e009168ceea658dc9 roberta-base/config.json (an early "
    "revision: no model_type, no pad_token_id; vocab 50265): hidden_size 768, 12 heads, 12 layers and "
    "max_position_embeddings 514 are equal. A public hub-cache listing shows hub revision "
    "e2da8e2f811d1448a5b465c236feacd80ffbac7b holding only config.json and model.safetensors, with blobs "
    "8db5e7ac5bfc9ec8b613b776009300fe3685d957 and the weights' sha256; a text of the file with that git blob hash "
    "(481 bytes, RobertaForMaskedLM, no transformers_version) has every key here equal, model_type roberta and "
    "pad_token_id 1 included")
_BART_BASE_COPIES = (
    "ibmm-unibe-ch/SMILES_or_SELFIES@d20ba5007f499e7d6d06a1714c7995aa42cf7c6e bart-base/config.json (a derivative: "
    "_name_or_path bart-base, its own vocabulary of 51201): d_model 768, 6 + 6 layers, 12 + 12 heads and "
    "max_position_embeddings 1024 are equal")
_GPT2_COPIES = (
    "LavenderCheng/LLM-Project---Team-5@f714e474f23d9c4452fe2c5747c75aca9c74b585 gpt2/config.json (_name_or_path "
    "gpt2, transformers_version 4.38.2) and "
    "Fu-fangteng/AIAA_4051_NLP_Final_Proj@a94fc8956c6fb9bc56dab1d601bfd2f625524b2b gpt2/config.json (4.54.0) agree "
    "on every position key here (n_positions 1024, n_ctx 1024). Public hub-cache listings and recorded hub "
    "responses give config.json at hub revision 607a30d783dfa663caf39e06633721c8d4cfcd7e as git blob "
    "10c66461e4c109db5a2196bff4bb59be30396ed8, 665 bytes; the file without those re-saves' additions and without a "
    "final newline has that git blob hash and size")
_VIT_BASE_COPIES = (
    "Vukkisa/AI-ML@b16802828035a9e89bd493664260719c173bbf49 vit-base-patch16-224/config.json "
    "(ViTForImageClassification with the 1000 ImageNet labels, transformers_version 4.57.1): every position key "
    "here is equal")
_DEBERTA_V3_BASE_COPIES = (
    "satishsingh-singh90/legal-Q-and-A-with-haystack@7aabdfe904d7fce5ba373997b45d9ba0ad3945a7 "
    "deberta-v3-base/config.json (a question-answering fine-tune saved from microsoft/deberta-v3-base, "
    "transformers_version 4.38.2): every position key here is equal (relative_attention true, "
    "max_relative_positions -1, position_buckets 256, pos_att_type p2c c2p, position_biased_input false)")
_GPT_NEOX_20B_COPIES = (
    "QiushengSong/Mamba_for_Named_Entity_Recoginition@626e582996aad783aa7fa1e063b13e4ff1550812 "
    "EleutherAI/gpt-neox-20b/config.json (the whole file, GPTNeoXForCausalLM, vocab 50432, transformers_version "
    "4.19.0.dev0): every position key here is equal (rotary_pct 0.25, rotary_emb_base 10000, no rope_theta)")
_GPT_J_6B_COPIES = (
    "qizhou000/RECIPE@61cbd27ef55639b1e3ed5f9128f6b929c7ade269 models/gpt-j-6b/config.json (the whole file, "
    "GPTJForCausalLM, vocab 50400, transformers_version 4.18.0.dev0): every position key here is equal "
    "(rotary_dim 64, n_positions 2048)")
_M2M100_418M_COPIES = (
    "clap-esp/clap-ai-core@647207a426bd2b1170f33a362e8e23c46a794ed9 models/m2m100_418M/config.json (_name_or_path "
    "facebook/m2m100_418M, re-saved by transformers 4.46.0) and pappricot/ScriptBuddy@"
    "b829c9996e6df5ebd0b03654a012abca04fe8ced models/m2m100_418M/config.json (4.50.3) agree on every position key "
    "here (and scale_embedding true)")
_LLAMA2_7B_COPIES = (
    "inference-sim/inference-sim@f90a1e3a6787da17c2cd463dab6fb2660b1b1760 model_configs/llama-2-7b-hf/config.json "
    "(LlamaForCausalLM, transformers_version 4.31.0.dev0, float16) and "
    "lucienhuangfu/eLLM@7b2e865f83a37cb2fac14bf8263fe45c587d3cc3 models/Llama-2-7b-hf/config.json (_name_or_path "
    "meta-llama/Llama-2-7b-hf, the same file cut to 3 layers) agree on every position key here but rope_theta, "
    "which neither has (rope_scaling null); HPMLL/llm-benchmark@0347b4f3ca6ae4773aab83c33cf569d8bd7506d9 "
    "models/Llama-2-7b-hf/config.json, re-saved by a later transformers, spells the default out: rope_theta 10000.0")
_LLAMA2_7B_DEFAULTS = ("rope_theta: the transformers LlamaConfig default 10000.0 (the hub file, written by "
                       "4.31.0.dev0, has no rope_theta)")
_LLAMA31_8B_COPIES = (
    "ai-dynamo/aiconfigurator@095f58a51c4ca8e61b66ec108d86f223f8d559ce "
    "aic-core/src/aiconfigurator_core/model_configs/meta-llama--Meta-Llama-3.1-8B_config.json (the whole file, "
    "LlamaForCausalLM, vocab 128256, transformers_version 4.43.0.dev0, eos 128001: the base model): every position "
    "key here is equal, rope_scaling included (llama3, factor 8.0, low 1.0, high 4.0, original 8192)")
_MIXTRAL_8X7B_COPIES = (
    "ai-dynamo/aiconfigurator@095f58a51c4ca8e61b66ec108d86f223f8d559ce "
    "aic-core/src/aiconfigurator_core/model_configs/mistralai--Mixtral-8x7B-v0.1_config.json and "
    "inference-sim/inference-sim@f90a1e3a6787da17c2cd463dab6fb2660b1b1760 "
    "model_configs/mixtral-8x7b-v0.1/config.json (the same JSON: MixtralForCausalLM, 8 experts, "
    "transformers_version 4.36.0.dev0) agree on every position key here (rope_theta 1000000.0, sliding_window null)")
_QWEN25_7B_INSTRUCT_COPIES = (
    "inference-sim/inference-sim@f90a1e3a6787da17c2cd463dab6fb2660b1b1760 "
    "model_configs/qwen2.5-7b-instruct/config.json (Qwen2ForCausalLM, vocab 152064, transformers_version 4.43.1): "
    "every position key here is equal (sliding_window 131072 with use_sliding_window false, max_window_layers 28). "
    "Public pin scripts give config.json at hub revision a09a35458c702b33eeacc393d103063234e8bc28 as git blob "
    "0178295f88afc3c7f279ed284f961f8c1be00654, 663 bytes, sha256 "
    "7463bb0ea78315365e6c6b74de4e73bbcc8359dfb0c5a737584e077d42c0b03c, and that copy has those hashes and size")
_DEEPSEEK_V3_COPIES = (
    "ai-dynamo/aiconfigurator@095f58a51c4ca8e61b66ec108d86f223f8d559ce "
    "aic-core/src/aiconfigurator_core/model_configs/deepseek-ai--DeepSeek-V3_config.json (the whole file, "
    "DeepseekV3ForCausalLM, vocab 129280, transformers_version 4.33.1): every position key here is equal "
    "(rope_theta the integer 10000; rope_scaling with type yarn and the integer factor 40)")
_LLAMA3_8B_COPIES = (
    "Girafboy/pytorchKQI@b6467fe3381ef7dd8ea9605c0b7373a52d1e1989 demo.py (the whole file as a Python dict, "
    "Meta_Llama_3_8B: LlamaForCausalLM, vocab 128256, transformers_version 4.40.0.dev0) and "
    "aijianiula0601/Qwen2-Audio@dad4f2c38c1333d9f0bd2277f81a4b4e5a0443dd meta-llama/Meta-Llama-3-8B/config.json "
    "(re-saved by transformers 4.52.4) agree on every position key here (rope_theta 500000.0, rope_scaling null)")
_QWEN2_7B_COPIES = (
    "Girafboy/pytorchKQI@b6467fe3381ef7dd8ea9605c0b7373a52d1e1989 demo.py (the whole file as a Python dict, Qwen2_7B: "
    "Qwen2ForCausalLM, vocab 152064, transformers_version 4.37.2) and "
    "NVIDIA/TensorRT-LLM@ca85a4540cb943e426781768acbe8afb49f8ee35 tests/unittest/_torch/modeling/test_modeling_qwen.py "
    "(Qwen_2_7B_CONFIG) agree on every position key here (max_position_embeddings 131072, sliding_window 131072 with "
    "use_sliding_window false, max_window_layers 28)")
_GEMMA2_9B_COPIES = (
    "Girafboy/pytorchKQI@b6467fe3381ef7dd8ea9605c0b7373a52d1e1989 demo.py (the whole file as a Python dict, "
    "gemma_2_9b: Gemma2ForCausalLM, vocab 256000, float32, transformers_version 4.42.0.dev0): every position key "
    "here is equal; it also has attn_logit_softcapping 50.0, final_logit_softcapping 30.0, cache_implementation "
    "hybrid and sliding_window_size 4096, which decide no position")
_MISTRAL_7B_COPIES = (
    "tanganke/fusion_bench@cd61eee7eaf49d1e1a96f1705d4bc67a195669e5 tests/test_depth_upscaling.py (a MistralConfig "
    "fixture citing https://huggingface.co/mistralai/Mistral-7B-v0.1/blob/main/config.json, transformers_version "
    "4.34.0.dev0): every position key here is equal (rope_theta 10000.0, sliding_window 4096)")
_PHI3_4K_COPIES = (
    "dotnet/machinelearning@17b689af77151463cf3b24100c32d558f779c620 "
    "src/Microsoft.ML.GenAI.Phi/Resource/Config/phi-3-mini-4k-instruct-config.json (transformers_version 4.39.3) "
    "and dAppCore/go-inference@0036245f6b8daada19a398b534f727746457fbb1 "
    "go/model/arch/microsoft/phi/testdata/microsoft-phi-3-mini-4k-instruct-config.json (4.40.2) agree on every "
    "position key here (rope_scaling null, sliding_window 2047)")
_PYTHIA_160M_COPIES = (
    "AusRedNeck/llm-lab@c79cea1ff18f6fdba811cbd16c3692b6735c9c1d references/pythia-160m/config.json (the whole file, "
    "GPTNeoXForCausalLM, vocab 50304, transformers_version 4.24.0): every position key here is equal "
    "(rotary_pct 0.25, rotary_emb_base 10000)")
_T5_BASE_COPIES = (
    "DayaAlex/T5_nlg@65ac101014b8f2df6eab0b40c9c7fdc51b2d3b98 t5-base-config.json (architectures T5WithLMHeadModel, "
    "an early revision of the hub file) and Girafboy/pytorchKQI@b6467fe3381ef7dd8ea9605c0b7373a52d1e1989 demo.py "
    "(t5_base, the file as a Python dict, architectures T5ForConditionalGeneration) agree on every key here: "
    "d_model 768, d_kv 64, num_heads 12, num_layers 12, relative_attention_num_buckets 32 (and n_positions 512); "
    "neither has num_decoder_layers or relative_attention_max_distance. A public run log gives config.json at hub "
    "revision a9723ea7f1b39c1eae772870f3b547bf6ef7e6c1 as 1208 bytes with sha256 "
    "46dd7cb62d29c81fb551e0ef1ea274c24a46ba441eeb948897706252933df033; a text with that sha256 and size "
    "(T5ForConditionalGeneration, task_specific_params) has every key here equal and neither key either")
_T5_BASE_DEFAULTS = (
    "transformers T5Config (models/t5/configuration_t5.py): num_decoder_layers is num_layers when absent (12), "
    "relative_attention_max_distance 128")
_FLAN_T5_BASE_COPIES = (
    "abderrazekAhlamouche/technical_chatbot@124cc5caf5ecb1bf4444465e290b594f88a9fcdd "
    "models/models--google--flan-t5-base/snapshots/7bcac572ce56db69c1ea7c8af255c5d7c9672fc2/config.json, a "
    "hub-cache snapshot of hub revision 7bcac572 that stores the file as a Git LFS pointer (git blob "
    "d41e16cd4cd58621695da4f94132f516d07251af, sha256 "
    "7c1853dbfa0e4aac093eb109a358b6ab25fe86b7c15185a91322f0ed26f0f940, 1404 bytes); a text of the file with that "
    "sha256 and that git blob hash (T5ForConditionalGeneration, transformers_version 4.23.1) has every key here "
    "equal, num_decoder_layers 12 and relative_attention_max_distance 128 included")
_GLM4_9B_CHAT_HF_COPIES = (
    "the hub's own pages for the file: https://huggingface.co/THUDM/glm-4-9b-chat-hf/blame/main/config.json (661 "
    "bytes, last changed in hub commit c7f73fd; GlmForCausalLM, transformers_version 4.46.0.dev0) and the same "
    "661-byte file uploaded to THUDM/glm-4-9b-chat at hub revision 9918c3fe7aab6a2100b5fd7117f5464ffb86c5d3 "
    "(https://huggingface.co/THUDM/glm-4-9b-chat/blob/9918c3fe7aab6a2100b5fd7117f5464ffb86c5d3/config.json) agree "
    "on every key here (model_type glm, head_dim 128, rope_theta 10000.0, max_position_embeddings 131072) and "
    "neither has partial_rotary_factor. The remote-code checkpoint it was converted from "
    "(THUDM/glm-4-9b-chat at 731ca7fd937cff9f2ae5f01de85a0c8bf21df6fa) has rope_ratio 500 and its "
    "modeling_chatglm.py rotates with base 10000 * rope_ratio; transformers' converter "
    "(models/glm/convert_glm_weights_to_hf.py at eaed17f4467e2956ee690f37f32842a9ac0c1fd2) reads rope_ratio "
    "with getattr on the config dict, which always gives 1, so the published file says 10000.0. The entry is "
    "the file as published: what transformers and vLLM compute from it")
_GLM4_9B_CHAT_HF_DEFAULTS = ("partial_rotary_factor: the transformers GlmConfig default 0.5 "
                             "(models/glm/configuration_glm.py, kwargs.setdefault)")
_BLOOM_560M_COPIES = (
    "kserve/kserve@142875871c7d39fa69c0d6d2c086d91ffa007596 docs/samples/fluid/README.md lists a hub-cache snapshot "
    "of bigscience/bloom-560m at revision e985a63c whose config.json is git blob "
    "a9f31df161b949147c63449ead0bd4e5fc70770d; a text of the file with that git blob hash (BloomForCausalLM, "
    "transformers_version 4.20.0, no _name_or_path) spells the width n_embed 1024, the heads num_attention_heads "
    "16 and the layers n_layer 24, as here, and has offset_alibi 100 and no seq_length. Re-saved derivatives "
    "(fine-tunes with _name_or_path bigscience/bloom-560m) write hidden_size and n_head instead, with the same "
    "values")
_OPT_125M_COPIES = (
    "vllm-project/vllm issue #1120 lists a hub-cache snapshot of facebook/opt-125m at revision 27dcfa74 whose "
    "config.json (651 bytes as downloaded) is git blob b3fb716a3024261980becb2382e31a3780985130; a text of the "
    "file with that git blob hash and size (_name_or_path facebook/opt-125m, OPTForCausalLM, "
    "transformers_version 4.21.0.dev0) has every key here equal (hidden_size 768, num_attention_heads 12, "
    "num_hidden_layers 12, max_position_embeddings 2048; pad_token_id 1)")
_DINOV2_BASE_COPIES = (
    "nilsrobinet/ReverseImageSearchDemo@cc9199b1030af0e390f275e3e32404063226baed models/dinov2-base/config.json, "
    "a Git LFS pointer (sha256 f7ff4cfa73d2f70647dbf6950541ad25d73082d54c2e7e9bded160c7656b2a70, 548 bytes); a text "
    "of the file with that sha256 and size (Dinov2Model, transformers_version 4.31.0.dev0, no _name_or_path) has "
    "every key here equal (hidden_size 768, 12 heads, 12 layers, image_size 518, patch_size 14); which hub revision "
    "the copy was taken at is not recorded")
_SMOLLM3_NOPE = [0 if (i + 1) % 4 == 0 else 1 for i in range(36)]
_SMOLLM3_3B_COPIES = (
    "fetchwiki/HuggingFaceTB-SmolLM3-3B@24f7882f92998ee0e691d105ade637afc3e5171f config.json, a mirror of the hub "
    "repository taken 2025-07-14 (its model_files.json names https://huggingface.co/HuggingFaceTB/SmolLM3-3B): the "
    "whole file (SmolLM3ForCausalLM, transformers_version 4.54.0.dev0, no _name_or_path), every key here equal, "
    "no_rope_layers element by element")
_LLAMA4_SCOUT_COPIES = (
    "AMD-AGI/Primus pull request #165 (2025-08-22) quotes https://huggingface.co/meta-llama/Llama-4-Scout-17B-16E/"
    "blob/main/config.json verbatim up to router_jitter_noise, and its review thread in #163 quotes use_qk_norm "
    "true from the same file: every key here is equal (rope_scaling llama3 factor 16.0, low_freq_factor 1.0, "
    "high_freq_factor 1.0, original 8192; no_rope_layers the empty list; no attn_temperature_tuning, floor_scale "
    "or attn_scale key); the merged AMD-AGI/Primus@9ee5d2fbfe5df538f3721cf6225aaa2e9b0170fc "
    "primus/configs/models/megatron/llama4_17B16E.yaml, citing the same URL, has rope_scaling_factor 16.0 and "
    "max_position_embeddings 262144. A transformers 4.51 printout of Llama4Config for the release shows an "
    "earlier rope_scaling (factor 8.0, high_freq_factor 4.0) and the class defaults written out "
    "(attn_temperature_tuning 4, floor_scale 8192, attn_scale 0.1, the 48 no_rope_layers flags); the entry "
    "held those values until corpus 1.10.0")
_LLAMA4_SCOUT_DEFAULTS = (
    "transformers Llama4TextConfig (models/llama4/configuration_llama4.py): an empty no_rope_layers is "
    "[int((i + 1) % no_rope_layer_interval != 0)] with no_rope_layer_interval 4 (every fourth layer NoPE); "
    "attn_temperature_tuning true, floor_scale 8192, attn_scale 0.1")
_QWEN2_VL_7B_COPIES = (
    "no whole copy of the file was found; Qwen's own quantized derivative Qwen/Qwen2-VL-7B-Instruct-GPTQ-Int8 "
    "(hub revision 34bb8e5bd295cb6f3e32ec0d5f337f68e8f90023, _name_or_path Qwen/Qwen2-VL-7B-Instruct) and a Python "
    "dict fixture of a VARGPT model built on it (the file in hub key order, transformers_version 4.41.2, "
    "model_type renamed; its repository was not resolved) agree on every key here (rope_theta 1000000.0, "
    "rope_scaling type mrope, mrope_section [16, 24, 24]); fine-tunes re-saved by later transformers write "
    "rope_scaling type default with rope_type default, which reads the same")
_QWEN3_VL_8B_COPIES = (
    "a public download manifest (its repository was not resolved) gives config.json at hub revision "
    "0c351dd01ed87e9c1b53cbc748cba10e6187ff3b as git blob 0e2df614c5fe1ad2b6b540c8625bebf2d7ec43ca, 1474 bytes, "
    "sha256 5cd452860dc1e9c29dd71cc3cef7f39b338b7a40793f7a260655c2d3568f3661; "
    "nikolay-grudanov/Team_5_AI_Tutor@ab9ec7bdae6a3482c3837098d07cb3bc0a6b43fc "
    "models/Qwen3-VL-8B-Instruct/config.json is that file with one local edit (text_config "
    "max_position_embeddings 8192); undoing it gives a text with those hashes and size "
    "(Qwen3VLForConditionalGeneration, transformers_version 4.57.0.dev0), every key here equal (rope_theta the "
    "integer 5000000, mrope_interleaved true, mrope_section [24, 20, 20])")
_PHI35_MINI_COPIES = (
    "sdpython/onnx-diagnostic@cc937c25e830a1195f73090ada9ea6bd8f670a57 "
    "onnx_diagnostic/torch_models/hghub/hub_data_cached_configs.py holds the whole file as a Python dict in the "
    "hub's key order (transformers_version 4.43.3); quaid-app/quaid@9aa8c61bcceea0fb3868936d154ef14bbf10051f "
    "src/core/conversation/model_lifecycle.rs pins hub revision 2fe192450127e6a83f7441aef6e3ca586c338b77 with "
    "config.json git blob 62d1ca8d4b3c8ab21ac9a30775e1a224be66ef58, and the dict written as the hub writes JSON "
    "(3451 bytes) has that git blob hash: every key here equal, all 48 long and 48 short factors included")
_DEEPSEEK_V2_LITE_COPIES = (
    "no whole copy of the file was found; two test fixtures quoting it (a C++ kDeepSeekV2Lite and a Python "
    "_V2_LITE_HF citing deepseek-ai/DeepSeek-V2-Lite/config.json; their repositories were not resolved) agree on "
    "every key here, the integer rope_theta 10000 and factor 40 and mscale / mscale_all_dim 0.707 included (the "
    "Python one has no model_type)")
_MPT_7B_COPIES = (
    "no copy of mosaicml's own file was found; crashx/flax-mpt7b's config.json (a Flax conversion whose auto_map "
    "names mosaicml/mpt-7b--configuration_mpt.MPTConfig, transformers_version 4.31.0) has every key here equal, "
    "and ybelkada/mpt-7b-bf16-sharded's (loaded from hub revision 72e5f594ce36f9cabfa2a9fd8f58b491eb467ee7, its "
    "_commit_hash) has attn_config alibi true and alibi_bias_max 8. Copies re-saved through transformers' own "
    "MptConfig (OpenVINO/mpt-7b-int8-ov and others) keep the sizes but drop attn_config's keys")
_COMMAND_R_COPIES = (
    "no copy of the hub file itself was found; derivatives whose _name_or_path is CohereForAI/c4ai-command-r-v01 "
    "(TechxGenus/c4ai-command-r-v01-AWQ at hub revision 0e9e54b4a8dcffef839078322c06b1e9b10eb5e5, "
    "transformers_version 4.40.0; prince-canuma/c4ai-command-r-v01-4bit, 4.39.0.dev0, from the remote-code era) "
    "agree on every key here (rope_theta 8000000.0)")
_OLMO2_7B_COPIES = (
    "public download scripts pin config.json at hub revision 7df9a82518afdecae4e8c026b27adccc8c1f0032 to sha256 "
    "f1e210de0ba704c579768c154bf57e36e170868ffecb060a6e0d3f2e6b0b9710, 623 bytes; the hub's page for the file on "
    "the repository's branch stage2-ingredient3-step11931-tokens50B (629 bytes, Olmo2ForCausalLM) with "
    "transformers_version 4.47.0 for 4.47.0.dev0 and no final newline gives a text with that sha256 and size, "
    "every key here equal (rope_theta the integer 500000)")
_OPUS_MT_EN_DE_COPIES = (
    "no copy of the hub file itself was found; the ONNX export Xenova/opus-mt-en-de (_name_or_path "
    "Helsinki-NLP/opus-mt-en-de, re-saved by transformers 4.34.0.dev0; quoted in "
    "harisnae/multilingual-translator-offline@79dec573de3a30f8b16b1481efd8cd4c9f459f62 README.md) and fine-tunes "
    "re-saved from it agree on every key here (d_model 512, 6 + 6 layers, 8 + 8 heads, max_position_embeddings "
    "512)")

_ENTRIES: Final[tuple[CatalogueEntry, ...]] = (
    _entry("llama-2-7b", "llama", "meta-llama/Llama-2-7b-hf",
           _llama(4096, 32, 32, 32, 4096, 10000.0), _COPY, _LLAMA2_7B_DEFAULTS, copies=_LLAMA2_7B_COPIES),
    _entry("llama-3-8b", "llama", "meta-llama/Meta-Llama-3-8B",
           _llama(4096, 32, 8, 32, 8192, 500000.0), _COPY, copies=_LLAMA3_8B_COPIES),
    _entry("llama-3.1-8b", "llama", "meta-llama/Llama-3.1-8B",
           _llama(4096, 32, 8, 32, 131072, 500000.0, rope_scaling=_llama3(8.0)), _COPY, copies=_LLAMA31_8B_COPIES),
    _entry("llama-3.2-1b", "llama", "meta-llama/Llama-3.2-1B",
           _llama(2048, 32, 8, 16, 131072, 500000.0, head_dim=64, rope_scaling=_llama3(32.0)), _COPY,
           copies=_LLAMA32_1B_COPIES),
    _entry("llama-4-scout", "llama4", "meta-llama/Llama-4-Scout-17B-16E", {
        "model_type": "llama4", "text_config": {
            "model_type": "llama4_text", "hidden_size": 5120, "num_attention_heads": 40, "num_key_value_heads": 8,
            "head_dim": 128, "num_hidden_layers": 48, "max_position_embeddings": 262144, "rope_theta": 500000.0,
            "rope_scaling": {"factor": 16.0, "high_freq_factor": 1.0, "low_freq_factor": 1.0,
                             "original_max_position_embeddings": 8192, "rope_type": "llama3"},
            "attention_chunk_size": 8192, "use_qk_norm": True, "no_rope_layers": []}},
           _COPY, _LLAMA4_SCOUT_DEFAULTS, copies=_LLAMA4_SCOUT_COPIES),
    _entry("mistral-7b-v0.1", "mistral", "mistralai/Mistral-7B-v0.1", {
        "model_type": "mistral", "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,
        "num_hidden_layers": 32, "max_position_embeddings": 32768, "rope_theta": 10000.0, "sliding_window": 4096},
        _COPY, copies=_MISTRAL_7B_COPIES),
    _entry("ministral-3-8b", "ministral3", "mistralai/Ministral-3-8B-Instruct-2512", {
        "model_type": "mistral3", "text_config": {
            "model_type": "ministral3", "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,
            "head_dim": 128, "num_hidden_layers": 34, "max_position_embeddings": 262144, "sliding_window": None,
            "rope_parameters": {"beta_fast": 32.0, "beta_slow": 1.0, "factor": 16.0, "llama_4_scaling_beta": 0.1,
                                "mscale": 1.0, "mscale_all_dim": 1.0, "original_max_position_embeddings": 16384,
                                "rope_theta": 1000000.0, "rope_type": "yarn", "type": "yarn"}}},
           _COPY, copies=_MINISTRAL3_COPIES),
    _entry("mixtral-8x7b", "mixtral", "mistralai/Mixtral-8x7B-v0.1", {
        "model_type": "mixtral", "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,
        "num_hidden_layers": 32, "max_position_embeddings": 32768, "rope_theta": 1000000.0, "sliding_window": None},
        _COPY, copies=_MIXTRAL_8X7B_COPIES),
    _entry("qwen2-7b", "qwen2", "Qwen/Qwen2-7B", _qwen2(131072), _COPY, copies=_QWEN2_7B_COPIES),
    _entry("qwen2.5-7b-instruct", "qwen2", "Qwen/Qwen2.5-7B-Instruct", _qwen2(32768), _COPY,
           copies=_QWEN25_7B_INSTRUCT_COPIES, revision="a09a35458c702b33eeacc393d103063234e8bc28"),
    _entry("qwen2.5-7b-instruct-yarn4", "qwen2", "Qwen/Qwen2.5-7B-Instruct",
           _qwen2(32768, rope_scaling={"factor": 4.0, "original_max_position_embeddings": 32768, "type": "yarn"}),
           "the model card's long-context setting (rope_scaling added to the hub config.json, as the card says)"),
    _entry("qwen3-8b", "qwen3", "Qwen/Qwen3-8B", {
        "model_type": "qwen3", "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,
        "head_dim": 128, "num_hidden_layers": 36, "max_position_embeddings": 40960, "rope_theta": 1000000.0},
        _COPY, copies=_QWEN3_8B_COPIES),
    _entry("qwen2-vl-7b", "qwen2-vl", "Qwen/Qwen2-VL-7B-Instruct", {
        "model_type": "qwen2_vl", "hidden_size": 3584, "num_attention_heads": 28, "num_key_value_heads": 4,
        "num_hidden_layers": 28, "max_position_embeddings": 32768, "rope_theta": 1000000.0,
        "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]}}, _COPY, copies=_QWEN2_VL_7B_COPIES),
    _entry("qwen3-vl-8b", "qwen3-vl", "Qwen/Qwen3-VL-8B-Instruct", {
        "model_type": "qwen3_vl", "text_config": {
            "model_type": "qwen3_vl_text", "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,
            "head_dim": 128, "num_hidden_layers": 36, "max_position_embeddings": 262144, "rope_theta": 5000000,
            "rope_scaling": {"mrope_interleaved": True, "mrope_section": [24, 20, 20], "rope_type": "default"}}},
        _COPY, copies=_QWEN3_VL_8B_COPIES, revision="0c351dd01ed87e9c1b53cbc748cba10e6187ff3b"),
    _entry("gemma-2-9b", "gemma2", "google/gemma-2-9b", {
        "model_type": "gemma2", "hidden_size": 3584, "num_attention_heads": 16, "num_key_value_heads": 8,
        "head_dim": 256, "num_hidden_layers": 42, "max_position_embeddings": 8192, "rope_theta": 10000.0,
        "query_pre_attn_scalar": 256, "sliding_window": 4096}, _COPY, copies=_GEMMA2_9B_COPIES),
    _entry("gemma-3-4b", "gemma3", "google/gemma-3-4b-pt", _gemma3(2560, 34), _COPY, _GEMMA3_4B_DEFAULTS,
           copies=_GEMMA3_4B_COPIES),
    _entry("gemma-3-27b", "gemma3", "google/gemma-3-27b-pt",
           _gemma3(5376, 62, head_dim=128, num_attention_heads=32, num_key_value_heads=16, query_pre_attn_scalar=168),
           _COPY, _GEMMA3_DEFAULTS, copies=_GEMMA3_27B_COPIES),
    _entry("gemma-4-e4b", "gemma4", "google/gemma-4-E4B-it", {
        "model_type": "gemma4", "text_config": {
            "model_type": "gemma4_text", "hidden_size": 2560, "num_attention_heads": 8, "num_key_value_heads": 2,
            "head_dim": 256, "global_head_dim": 512, "num_hidden_layers": 42, "max_position_embeddings": 131072,
            "sliding_window": 512, "attention_k_eq_v": False,
            "layer_types": (["sliding_attention"] * 5 + ["full_attention"]) * 7,
            "rope_parameters": {"full_attention": {"partial_rotary_factor": 0.25, "rope_theta": 1000000.0,
                                                   "rope_type": "proportional"},
                                "sliding_attention": {"rope_theta": 10000.0, "rope_type": "default"}}}},
        "restatements agree (no verbatim copy of the hub file was found)", copies=_GEMMA4_E4B_COPIES),
    _entry("gemma-4-26b-a4b", "gemma4", "google/gemma-4-26B-A4B", _gemma4_big(2816, 16, 8, 2, 5),
           _COPY, copies=_GEMMA4_26B_COPIES),
    _entry("gemma-4-31b", "gemma4", "google/gemma-4-31B", _gemma4_big(5376, 32, 16, 4, 10),
           "restatements agree (no verbatim copy of the hub file was found)", copies=_GEMMA4_31B_COPIES,
           revision="2d418d1b7ed8c04d732c3359e19a11fbc85b6842"),
    _entry("phi-3-mini-4k", "phi3", "microsoft/Phi-3-mini-4k-instruct", {
        "model_type": "phi3", "hidden_size": 3072, "num_attention_heads": 32, "num_key_value_heads": 32,
        "num_hidden_layers": 32, "max_position_embeddings": 4096, "original_max_position_embeddings": 4096,
        "rope_theta": 10000.0, "rope_scaling": None, "sliding_window": 2047}, _COPY, copies=_PHI3_4K_COPIES),
    _entry("phi-3-mini-128k", "phi3", "microsoft/Phi-3-mini-128k-instruct", {
        "model_type": "phi3", "hidden_size": 3072, "num_attention_heads": 32, "num_key_value_heads": 32,
        "num_hidden_layers": 32, "max_position_embeddings": 131072, "original_max_position_embeddings": 4096,
        "rope_theta": 10000.0, "rope_scaling": {"long_factor": PHI3_MINI_128K_LONG,
                                                 "short_factor": PHI3_MINI_128K_SHORT, "type": "su"},
        "sliding_window": 262144}, _COPY, copies=_PHI3_128K_COPIES),
    _entry("phi-3.5-mini", "phi3", "microsoft/Phi-3.5-mini-instruct", {
        "model_type": "phi3", "hidden_size": 3072, "num_attention_heads": 32, "num_key_value_heads": 32,
        "num_hidden_layers": 32, "max_position_embeddings": 131072, "original_max_position_embeddings": 4096,
        "rope_theta": 10000.0, "rope_scaling": {"long_factor": PHI35_LONG, "short_factor": PHI35_SHORT,
                                                 "type": "longrope"}, "sliding_window": 262144}, _COPY,
        copies=_PHI35_MINI_COPIES, revision="2fe192450127e6a83f7441aef6e3ca586c338b77"),
    _entry("deepseek-v2-lite", "deepseek-v2", "deepseek-ai/DeepSeek-V2-Lite", {
        "model_type": "deepseek_v2", "hidden_size": 2048, "num_attention_heads": 16, "num_key_value_heads": 16,
        "num_hidden_layers": 27, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "max_position_embeddings": 163840,
        "rope_theta": 10000, "rope_scaling": {
            "beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 0.707, "mscale_all_dim": 0.707,
            "original_max_position_embeddings": 4096, "type": "yarn"}}, _COPY, copies=_DEEPSEEK_V2_LITE_COPIES),
    _entry("deepseek-v3", "deepseek-v3", "deepseek-ai/DeepSeek-V3", {
        "model_type": "deepseek_v3", "hidden_size": 7168, "num_attention_heads": 128, "num_key_value_heads": 128,
        "num_hidden_layers": 61, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "max_position_embeddings": 163840,
        "rope_theta": 10000, "rope_scaling": {
            "beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 1.0, "mscale_all_dim": 1.0,
            "original_max_position_embeddings": 4096, "type": "yarn"}}, _COPY,
           "transformers DeepseekV3Config default rope_interleave=True "
           "(models/deepseek_v3/configuration_deepseek_v3.py)",
           copies=_DEEPSEEK_V3_COPIES),
    _entry("gpt-oss-20b", "gpt-oss", "openai/gpt-oss-20b", {
        "model_type": "gpt_oss", "hidden_size": 2880, "num_attention_heads": 64, "num_key_value_heads": 8,
        "head_dim": 64, "num_hidden_layers": 24, "max_position_embeddings": 131072, "rope_theta": 150000,
        "rope_scaling": {"beta_fast": 32.0, "beta_slow": 1.0, "factor": 32.0,
                         "original_max_position_embeddings": 4096, "rope_type": "yarn", "truncate": False},
        "sliding_window": 128,
        "layer_types": ["sliding_attention", "full_attention"] * 12}, _COPY, copies=_GPT_OSS_20B_COPIES),
    _entry("gpt-neox-20b", "gpt-neox", "EleutherAI/gpt-neox-20b", {
        "model_type": "gpt_neox", "hidden_size": 6144, "num_attention_heads": 64, "num_hidden_layers": 44,
        "rotary_pct": 0.25, "rotary_emb_base": 10000, "max_position_embeddings": 2048}, _COPY,
        copies=_GPT_NEOX_20B_COPIES),
    _entry("pythia-160m", "gpt-neox", "EleutherAI/pythia-160m", {
        "model_type": "gpt_neox", "hidden_size": 768, "num_attention_heads": 12, "num_hidden_layers": 12,
        "rotary_pct": 0.25, "rotary_emb_base": 10000, "max_position_embeddings": 2048}, _COPY,
        copies=_PYTHIA_160M_COPIES),
    _entry("gpt-j-6b", "gptj", "EleutherAI/gpt-j-6b", {
        "model_type": "gptj", "n_embd": 4096, "n_head": 16, "n_layer": 28, "rotary_dim": 64, "n_positions": 2048},
        _COPY, copies=_GPT_J_6B_COPIES),
    _entry("phi-2", "phi", "microsoft/phi-2", {
        "model_type": "phi", "hidden_size": 2560, "num_attention_heads": 32, "num_key_value_heads": 32,
        "num_hidden_layers": 32, "partial_rotary_factor": 0.4, "rope_theta": 10000.0,
        "max_position_embeddings": 2048}, _COPY, copies=_PHI2_COPIES),
    _entry("falcon-7b", "falcon", "tiiuae/falcon-7b", {
        "model_type": "falcon", "hidden_size": 4544, "num_attention_heads": 71, "num_hidden_layers": 32,
        "multi_query": True, "alibi": False, "new_decoder_architecture": False}, _EARLIER,
           "transformers FalconConfig defaults (models/falcon/configuration_falcon.py): max_position_embeddings "
           "2048, rope_theta 10000.0", copies=_FALCON_7B_COPIES),
    _entry("falcon-rw-1b", "falcon", "tiiuae/falcon-rw-1b", {
        "model_type": "falcon", "hidden_size": 2048, "num_attention_heads": 32, "num_hidden_layers": 24,
        "multi_query": False, "alibi": True, "new_decoder_architecture": False}, _COPY, copies=_FALCON_RW_COPIES),
    _entry("bloom-560m", "bloom", "bigscience/bloom-560m", {
        "model_type": "bloom", "n_embed": 1024, "n_layer": 24, "num_attention_heads": 16}, _COPY,
        copies=_BLOOM_560M_COPIES, revision="e985a63cdc139290c5f700ff1929f0b5942cced2"),
    _entry("mpt-7b", "mpt", "mosaicml/mpt-7b", {
        "model_type": "mpt", "d_model": 4096, "n_heads": 32, "n_layers": 32, "max_seq_len": 2048,
        "attn_config": {"alibi": True, "alibi_bias_max": 8}}, _COPY, copies=_MPT_7B_COPIES),
    _entry("t5-base", "t5", "google-t5/t5-base", {
        "model_type": "t5", "d_model": 768, "d_kv": 64, "num_heads": 12, "num_layers": 12,
        "relative_attention_num_buckets": 32}, _COPY, _T5_BASE_DEFAULTS, copies=_T5_BASE_COPIES,
        revision="a9723ea7f1b39c1eae772870f3b547bf6ef7e6c1"),
    _entry("flan-t5-base", "t5", "google/flan-t5-base", {
        "model_type": "t5", "d_model": 768, "d_kv": 64, "num_heads": 12, "num_layers": 12, "num_decoder_layers": 12,
        "relative_attention_num_buckets": 32, "relative_attention_max_distance": 128}, _COPY,
        copies=_FLAN_T5_BASE_COPIES, revision="7bcac572ce56db69c1ea7c8af255c5d7c9672fc2"),
    _entry("bert-base-uncased", "bert", "google-bert/bert-base-uncased", {
        "model_type": "bert", "hidden_size": 768, "num_attention_heads": 12, "num_hidden_layers": 12,
        "max_position_embeddings": 512, "position_embedding_type": "absolute"}, _COPY, copies=_BERT_BASE_COPIES,
        revision="86b5e0934494bd15c9632b12f734a8a67f723594"),
    _entry("roberta-base", "roberta", "FacebookAI/roberta-base", {
        "model_type": "roberta", "hidden_size": 768, "num_attention_heads": 12, "num_hidden_layers": 12,
        "max_position_embeddings": 514, "pad_token_id": 1}, _COPY, copies=_ROBERTA_BASE_COPIES,
        revision="e2da8e2f811d1448a5b465c236feacd80ffbac7b"),
    _entry("bart-base", "bart", "facebook/bart-base", {
        "model_type": "bart", "d_model": 768, "encoder_layers": 6, "decoder_layers": 6, "encoder_attention_heads": 12,
        "decoder_attention_heads": 12, "max_position_embeddings": 1024}, _COPY, copies=_BART_BASE_COPIES),
    _entry("opt-125m", "opt", "facebook/opt-125m", {
        "model_type": "opt", "hidden_size": 768, "num_attention_heads": 12, "num_hidden_layers": 12,
        "max_position_embeddings": 2048}, _COPY, copies=_OPT_125M_COPIES,
        revision="27dcfa74d334bc871f3234de431e71c6eeba5dd6"),
    _entry("gpt2", "gpt2", "openai-community/gpt2", {
        "model_type": "gpt2", "n_embd": 768, "n_head": 12, "n_layer": 12, "n_positions": 1024}, _COPY,
        copies=_GPT2_COPIES, revision="607a30d783dfa663caf39e06633721c8d4cfcd7e"),
    _entry("whisper-small", "whisper", "openai/whisper-small", {
        "model_type": "whisper", "d_model": 768, "encoder_layers": 12, "decoder_layers": 12,
        "encoder_attention_heads": 12, "decoder_attention_heads": 12, "max_source_positions": 1500,
        "max_target_positions": 448}, _COPY, copies=_WHISPER_SMALL_COPIES,
        revision="973afd24965f72e36ca33b3055d56a652f456b4d"),
    _entry("opus-mt-en-de", "marian", "Helsinki-NLP/opus-mt-en-de", {
        "model_type": "marian", "d_model": 512, "encoder_layers": 6, "decoder_layers": 6, "encoder_attention_heads": 8,
        "decoder_attention_heads": 8, "max_position_embeddings": 512}, _COPY, copies=_OPUS_MT_EN_DE_COPIES),
    _entry("m2m100-418m", "m2m100", "facebook/m2m100_418M", {
        "model_type": "m2m_100", "d_model": 1024, "encoder_layers": 12, "decoder_layers": 12,
        "encoder_attention_heads": 16, "decoder_attention_heads": 16, "max_position_embeddings": 1024,
        "pad_token_id": 1}, _COPY, copies=_M2M100_418M_COPIES),
    _entry("vit-base-patch16-224", "vit", "google/vit-base-patch16-224", {
        "model_type": "vit", "hidden_size": 768, "num_attention_heads": 12, "num_hidden_layers": 12,
        "image_size": 224, "patch_size": 16}, _COPY, copies=_VIT_BASE_COPIES),
    _entry("dinov2-base", "dinov2", "facebook/dinov2-base", {
        "model_type": "dinov2", "hidden_size": 768, "num_attention_heads": 12, "num_hidden_layers": 12,
        "image_size": 518, "patch_size": 14}, _COPY, copies=_DINOV2_BASE_COPIES),
    _entry("xlnet-base-cased", "xlnet", "xlnet/xlnet-base-cased", {
        "model_type": "xlnet", "d_model": 768, "n_head": 12, "d_head": 64, "n_layer": 12, "attn_type": "bi",
        "bi_data": False, "clamp_len": -1, "mem_len": None, "same_length": False}, _COPY, copies=_XLNET_COPIES),
    _entry("deberta-v3-base", "deberta-v2", "microsoft/deberta-v3-base", {
        "model_type": "deberta-v2", "hidden_size": 768, "num_attention_heads": 12, "num_hidden_layers": 12,
        "max_position_embeddings": 512, "relative_attention": True, "max_relative_positions": -1,
        "position_buckets": 256, "pos_att_type": ["p2c", "c2p"], "position_biased_input": False}, _COPY,
           copies=_DEBERTA_V3_BASE_COPIES),
    _entry("smollm3-3b", "smollm3", "HuggingFaceTB/SmolLM3-3B", {
        "model_type": "smollm3", "hidden_size": 2048, "num_attention_heads": 16, "num_key_value_heads": 4,
        "num_hidden_layers": 36, "max_position_embeddings": 65536, "rope_theta": 5000000.0,
        "no_rope_layer_interval": 4, "no_rope_layers": _SMOLLM3_NOPE}, _COPY, copies=_SMOLLM3_3B_COPIES),
    _entry("olmo-2-7b", "olmo2", "allenai/OLMo-2-1124-7B", {
        "model_type": "olmo2", "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 32,
        "num_hidden_layers": 32, "max_position_embeddings": 4096, "rope_theta": 500000}, _COPY,
        copies=_OLMO2_7B_COPIES, revision="7df9a82518afdecae4e8c026b27adccc8c1f0032"),
    _entry("command-r", "cohere", "CohereForAI/c4ai-command-r-v01", {
        "model_type": "cohere", "hidden_size": 8192, "num_attention_heads": 64, "num_key_value_heads": 64,
        "num_hidden_layers": 40, "max_position_embeddings": 8192, "rope_theta": 8000000.0}, _COPY,
        copies=_COMMAND_R_COPIES),
    _entry("glm-4-9b-chat-hf", "glm", "THUDM/glm-4-9b-chat-hf", {
        "model_type": "glm", "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 2,
        "head_dim": 128, "num_hidden_layers": 40, "max_position_embeddings": 131072, "rope_theta": 10000.0}, _COPY,
        _GLM4_9B_CHAT_HF_DEFAULTS, copies=_GLM4_9B_CHAT_HF_COPIES),
)

CATALOGUE: Final[Mapping[str, CatalogueEntry]] = {entry.name: entry for entry in _ENTRIES}


def get(name: str) -> CatalogueEntry:
    """The catalogue entry ``name``; ``KeyError`` listing the names otherwise."""
    if name not in CATALOGUE:
        raise KeyError(f"unknown model {name!r}; catalogued: {', '.join(CATALOGUE)}")
    return CATALOGUE[name]
