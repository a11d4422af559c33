"""Every catalogued config with one key changed or deleted: the resolver and the model ops either give
an answer or a SpecError (never another exception, a NumPy warning, a hang or an allocation the size
of the bad value). Plus one regression test per bad value the mutation sweep first found."""

import copy
import warnings

import numpy as np
import pytest

from posenc_ref.errors import SpecError
from posenc_ref.models import compute, resolve
from posenc_ref.models.catalogue import CATALOGUE, get

BAD_VALUES = (None, -1, 0, 1, 3, 1.5, True, "x", [], {}, [1.0], 2**63, 10**30, float("nan"), float("inf"), 1e308,
              1e-308, {"rope_type": "yarn"})
"""Wrong types, zero and negative sizes, sizes past int64 and float64's range, non-finite floats."""


def _paths(mapping, prefix=()):
    for key, value in mapping.items():
        yield (*prefix, key)
        if isinstance(value, dict):
            yield from _paths(value, (*prefix, key))


def _mutants(config):
    for path in _paths(config):
        for value in ("delete", *BAD_VALUES):
            mutant = copy.deepcopy(config)
            parent = mutant
            for key in path[:-1]:
                parent = parent[key]
            if value == "delete":
                del parent[path[-1]]
            else:
                parent[path[-1]] = copy.deepcopy(value)
            yield ".".join(path), value, mutant


def _exercise(config):
    """Resolve, then run each distinct layer kind's model op at a few positions."""
    for lp in resolve(config).kinds():
        pos = np.array([0, 1, 4095])
        group = max(1, lp.num_heads // lp.num_kv_heads)
        q, k = np.ones((3, group, lp.head_dim)), np.ones((3, 1, lp.head_dim))
        layer = {"config": config, "layer": lp.index}
        try:
            if lp.scheme in ("rope", "mrope"):
                compute.model_rope(pos if lp.scheme == "rope" else np.stack([pos] * 3), q, k, **layer,
                                   context_length=4096)
            elif lp.scheme == "nope":
                compute.model_nope(pos, q, k, **layer)
            elif lp.scheme == "alibi":
                compute.model_alibi(pos, pos, **layer)
            elif lp.scheme == "t5":
                compute.model_t5(pos, pos, np.ones((lp.params["num_buckets"], lp.num_heads)), **layer)
            elif lp.scheme == "deberta":
                compute.model_deberta(pos, pos, **layer)
            elif lp.scheme == "learned":
                compute.model_learned(np.array([0, 1]), **layer)
            elif lp.scheme == "sinusoidal":
                compute.model_sinusoidal(np.array([0, 1]), **layer)
            else:
                compute.model_transformer_xl(np.array([0, 1]), **layer)
        except SpecError:
            pass  # Note: a config that resolves may still refuse the op (a learned table too short for 4095)


@pytest.mark.parametrize("name", list(CATALOGUE))
def test_every_one_key_mutation_resolves_or_is_a_spec_error(name):
    failures = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for key, value, mutant in _mutants(get(name).config):
            try:
                _exercise(mutant)
            except SpecError:
                pass
            except Exception as exc:  # noqa: BLE001 - the test lists every other exception
                failures.append(f"{key}={value!r}: {type(exc).__name__}: {exc}"[:200])
    assert not failures, "\n".join(failures[:10])


def test_the_sweep_reaches_every_scheme():
    schemes = {lp.scheme for entry in CATALOGUE.values() for lp in resolve(entry.config).layers}
    assert schemes == {"rope", "mrope", "nope", "alibi", "t5", "deberta", "learned", "sinusoidal", "transformer_xl"}


LLAMA = {"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 4,
         "num_hidden_layers": 2, "max_position_embeddings": 4096, "rope_theta": 10000.0}
# (num_key_value_heads written out: the tests below change the model type, and several classes default it to
# a count that does not divide 4)


@pytest.mark.parametrize("change,match", [
    ({"num_hidden_layers": 2**16 + 1}, r"num_hidden_layers must be at most 2\*\*16 = 65536"),
    ({"num_hidden_layers": 10**30}, r"num_hidden_layers must be at most 2\*\*16"),
    ({"hidden_size": 2**40, "num_attention_heads": 2, "num_key_value_heads": 2}, r"head_dim must be at most 2\*\*16"),
    ({"head_dim": 2**20}, r"head_dim must be at most 2\*\*16"),
    ({"max_position_embeddings": 2**63}, r"max_position_embeddings must be below 2\*\*53"),
    ({"rope_scaling": {"rope_type": "longrope", "short_factor": [1.0] * 8, "long_factor": [1.0] * 8},
      "original_max_position_embeddings": 0}, "original_max_position_embeddings must be an integer >= 1, got 0"),
    ({"rope_scaling": {"rope_type": "longrope", "short_factor": [1.0] * 8, "long_factor": [1.0] * 8},
      "original_max_position_embeddings": "x"}, "original_max_position_embeddings must be an integer >= 1"),
    ({"rope_scaling": {"rope_type": "yarn", "factor": 4.0, "beta_fast": "x"}}, "beta_fast must be a finite number"),
    ({"rope_scaling": {"rope_type": "yarn", "factor": 4.0, "mscale": float("inf")}}, "mscale must be a finite"),
    ({"model_type": "gpt_neox", "rotary_pct": float("inf")}, "rotary_pct must be a finite number, got inf"),
    ({"model_type": "gpt_neox", "rotary_pct": 1e308}, "partial rotary factor must be at most 1"),
    ({"model_type": "phi", "partial_rotary_factor": 2.0}, "partial rotary factor must be at most 1"),
    ({"model_type": "gptj", "n_embd": 64, "n_head": 4, "n_layer": 2, "rotary_dim": 32},
     "rotary_dim must be even and at most the head width 16, got 32"),
    ({"model_type": "gptj", "n_embd": 64, "n_head": 4, "n_layer": 2, "rotary_dim": "x"},
     "rotary_dim must be an integer >= 1"),
    ({"model_type": "llama4_text", "attention_chunk_size": []}, r"attention_chunk_size must be an integer >= 1"),
    ({"model_type": "qwen2_vl", "rope_scaling": {"type": "mrope", "mrope_section": 3}},
     "mrope_section must be a list of 3 integers >= 0"),
    ({"model_type": "qwen2_vl", "rope_scaling": {"type": "mrope", "mrope_section": [2, 2, 2]}},
     r"mrope_section=\[2, 2, 2\] must add up to the rotary width / 2 = 8"),
])
def test_values_the_sweep_found_are_spec_errors_naming_the_key(change, match):
    with pytest.raises(SpecError, match=match):
        _exercise({**LLAMA, **change})


def test_yarn_betas_past_float64_range_are_spec_errors():
    from posenc_ref.rope_scaling import yarn_correction_range
    for beta in (1e308, 1e-308):
        with pytest.raises(SpecError, match=r"beta_fast=.* outside float64's positive range"):
            yarn_correction_range(dim=128, base=1e4, original_max_position=4096, beta_fast=beta)
    assert yarn_correction_range(dim=128, base=1e4, original_max_position=4096, beta_fast=32.0) == (20, 46)


def test_softmax_multiplier_and_temperatures_that_overflow_are_spec_errors():
    deepseek = copy.deepcopy(get("deepseek-v2-lite").config)
    deepseek["rope_scaling"]["mscale_all_dim"] = 1e308
    with pytest.raises(SpecError, match=r"softmax multiplier .* overflows float64"):
        resolve(deepseek)
    scout = copy.deepcopy(get("llama-4-scout").config)
    scout["text_config"]["floor_scale"] = 1e-308
    nope = next(lp for lp in resolve(scout).layers if lp.scheme == "nope")
    q = np.ones((2, nope.num_heads // nope.num_kv_heads, nope.head_dim))
    with pytest.raises(SpecError, match=r"model_nope: layer 3's llama4 query temperature overflows float64"):
        compute.model_nope(np.array([0, 4095]), q, q[:, :1], config=scout, layer=nope.index)


@pytest.mark.parametrize("change,match", [
    ({"max_relative_positions": True}, "max_relative_positions must be an integer, got True"),
    ({"position_buckets": True}, "position_buckets must be an integer > 0"),
    ({"pos_att_type": 1.5}, "pos_att_type must be a list of strings"),
])
def test_deberta_keys_of_the_wrong_type_are_spec_errors(change, match):
    with pytest.raises(SpecError, match=match):
        resolve({**get("deberta-v3-base").config, **change})
