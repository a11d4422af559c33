"""The model-level adapter protocol (posenc_ref/runner/models.py) and its hook in the runner:
run_model receives the config exactly as the case holds it, supports_model decides per model and
op, and a failing model case is diagnosed by the config reading that reproduces it."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest

from posenc_ref.corpus import GoldenCase, GoldenOutput
from posenc_ref.registry import get_op
from posenc_ref.runner.adapters import check_adapter
from posenc_ref.runner.engine import run_case
from posenc_ref.runner.models import diagnose_model, readings

ROPE = get_op("model.rope")


class _Loaded:
    """A corpus of one case whose expected outputs are the reference's (the corpus holds the
    oracle's; the protocol, not the values, is under test here)."""

    def __init__(self, case_id: str) -> None:
        self.case_obj = next(c for c in ROPE.cases if c.id == case_id)
        self.inputs = self.case_obj.make_inputs()
        self.expected = ROPE.call(dict(self.case_obj.params), self.inputs)
        self.entry = {"id": case_id, "op": ROPE.name, "params": dict(self.case_obj.params),
                      "comment": self.case_obj.comment, "level": "must",
                      "outputs": {o.name: {} for o in ROPE.outputs}}

    def case(self, entry: Mapping[str, Any]) -> GoldenCase:
        params, inputs = self.entry["params"], self.inputs
        outputs = {o.name: GoldenOutput(np.asarray(self.expected[o.name]), o.tolerance,
                                        o.phase(params, inputs) if o.phase else None,
                                        o.input_scale(params, inputs) if o.input_scale else None)
                   for o in ROPE.outputs}
        return GoldenCase(dict(entry), self.inputs, outputs)


class Misreading:
    """An engine that computes the reference from the config with one reading changed."""

    name = "misreading"
    dtype = "float64"

    def __init__(self, change: Any = None, supported: Any = True) -> None:
        self.change = change
        self.supported = supported
        self.seen: list[tuple[dict[str, Any], int, str, Any]] = []

    def supports_model(self, config: dict[str, Any], *, op: str) -> bool | str:
        return self.supported

    def run_model(self, config: dict[str, Any], layer: int, inputs: dict[str, Any], *, op: str,
                  context_length: int | None) -> dict[str, Any]:
        self.seen.append((copy.deepcopy(config), layer, op, context_length))
        if self.change is not None:
            self.change(config)
        params = {"model": "engine", "config": config, "layer": layer, "context_length": context_length}
        return get_op(op).call(params, inputs)


def _run(adapter: Any, case_id: str) -> list[Any]:
    loaded = _Loaded(case_id)
    return run_case(check_adapter(adapter, "test"), loaded, loaded.entry, [], "rerun")


def test_run_model_gets_the_config_exactly_and_passes() -> None:
    adapter = Misreading()
    case_id = "model.gemma-3-27b.sliding.rope_apply.long"
    results = _run(adapter, case_id)
    assert {r.status for r in results} == {"pass"}
    config, layer, op, context_length = adapter.seen[0]
    params = _Loaded(case_id).entry["params"]
    assert config == params["config"] and layer == params["layer"] and op == "model.rope"
    assert context_length == params["context_length"]


def test_supports_model_reason_makes_the_case_not_applicable() -> None:
    results = _run(Misreading(supported="no such model here"), "model.llama-3-8b.full.rope_apply.long")
    assert {(r.status, r.message) for r in results} == {("not_applicable", "no such model here")}


def test_a_model_level_adapter_without_run_gets_no_op_level_case() -> None:
    from posenc_ref.runner.engine import run_case as run_one

    class OpLoaded(_Loaded):
        pass

    loaded = _Loaded("model.llama-3-8b.full.rope_apply.long")
    entry = {**loaded.entry, "op": "rope.apply", "id": "rope.apply.x"}
    results = run_one(check_adapter(Misreading(), "test"), loaded, entry, [], "rerun")
    assert {r.status for r in results} == {"not_applicable"}
    assert "model cases only" in results[0].message


def _global_base_everywhere(config: dict[str, Any]) -> None:
    # the hub file names neither base: the engine takes Gemma3TextConfig's global 1e6 for both
    config["text_config"]["rope_local_base_freq"] = config["text_config"].get("rope_theta", 1000000.0)


def test_gemma3_sliding_layer_with_the_global_base_is_diagnosed() -> None:
    results = _run(Misreading(_global_base_everywhere), "model.gemma-3-27b.sliding.rope_apply.long")
    failing = [r for r in results if r.status == "fail"]
    assert {r.output for r in failing} >= {"cos", "sin", "q_rot", "k_rot"}
    assert all("`rope_local_base_freq` read as `rope_theta` (1000000.0) (in text_config)" in " ".join(r.diagnosis)
               for r in failing)
    assert all(r.diagnosis[0].startswith("layer 0 (sliding_attention): ") for r in failing)


def test_yarn_dropped_is_diagnosed_as_the_whole_block_ignored() -> None:
    results = _run(Misreading(lambda c: c.pop("rope_scaling")), "model.qwen2.5-7b-instruct-yarn4.full.rope_apply.long")
    failing = [r for r in results if r.status == "fail"]
    assert failing and all(any("`rope_scaling` ignored" in d for d in r.diagnosis) for r in failing)


def test_no_matching_reading_still_names_the_layer() -> None:
    def scale_theta(config: dict[str, Any]) -> None:
        config["rope_theta"] = config["rope_theta"] * 3.0

    results = _run(Misreading(scale_theta), "model.llama-3-8b.full.rope_apply.long")
    failing = [r for r in results if r.status == "fail"]
    assert failing and all(r.diagnosis == ["layer 0 (full_attention): no known misreading of the config matches"]
                           for r in failing)


def test_pairs_are_not_reported_beside_a_single_key_that_explains_the_failure() -> None:
    case = _Loaded("model.deepseek-v3.full.rope_apply.long")
    params, inputs = case.entry["params"], case.inputs
    config = params["config"]
    block = "rope_scaling" if "rope_scaling" in config else "rope_parameters"
    changed = copy.deepcopy(config)
    changed[block].pop("mscale_all_dim")
    actual = ROPE.call({**params, "config": changed}, inputs)
    wrong = {"cos": np.asarray(actual["cos"])}
    if np.array_equal(wrong["cos"], np.asarray(case.expected["cos"])):
        pytest.skip("mscale_all_dim does not change DeepSeek-V3's cos in this reading")
    found = diagnose_model(ROPE, params, inputs, wrong, "float64")
    assert any(f"`mscale_all_dim` ignored (in {block})" in f for f in found)
    assert not any("`mscale_all_dim` and" in f or "and `mscale_all_dim`" in f for f in found)


def test_readings_cover_nested_per_layer_type_rope_parameters() -> None:
    config = {"rope_parameters": {"full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1e6},
                                  "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}}}
    labels = [label for label, _, _ in readings(config)]
    assert "`factor` ignored (in rope_parameters.full_attention)" in labels
    assert ("sliding_attention layers given the full_attention rope parameters (`rope_parameters.full_attention`)"
            in labels)
    for _, changed, _ in readings(config):  # the original is never modified
        assert changed is not config
    assert config["rope_parameters"]["full_attention"]["factor"] == 8.0
