"""The model-level adapter example of conformance/README.md runs and behaves as the README says:
Llama 2 / Llama 3 cases pass, a case with rope scaling fails with the diagnosis shown."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from test_engines_protocol import _run

from posenc_ref.runner.adapters import load_adapter

README = Path(__file__).resolve().parents[1] / "conformance" / "README.md"
SECTION = "## Model-level adapters: an engine's own config parsing under test"


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Any:
    text = README.read_text(encoding="utf-8")
    section = text[text.index(SECTION):]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None, "the section has no python example"
    path = tmp_path_factory.mktemp("readme") / "my_engine.py"
    path.write_text(code.group(1), encoding="utf-8")
    return load_adapter(f"{path}:ADAPTER")


@pytest.mark.parametrize("case_id", ["model.llama-2-7b.full.rope_apply.long", "model.llama-3-8b.full.rope_apply.long"])
def test_unscaled_llama_cases_pass(engine: Any, case_id: str) -> None:
    assert {r.status for r in _run(engine, case_id)} == {"pass"}


def test_scaled_case_fails_with_the_readme_diagnosis(engine: Any) -> None:
    text = README.read_text(encoding="utf-8")
    shown = re.search(r"diagnosis: (layer 0 \(full_attention\): [^\n]*)", text[text.index(SECTION):])
    assert shown is not None
    results = {r.output: r for r in _run(engine, "model.llama-3.1-8b.full.rope_apply.long")}
    assert results["cos"].status == "fail"
    assert results["cos"].diagnosis == [shown.group(1)]
    assert results["logit_scale"].status == "pass"


def test_other_models_and_ops_are_not_applicable(engine: Any) -> None:
    assert engine.supports_model({"model_type": "gemma3"}, op="model.rope").startswith("model_type 'gemma3'")
    assert "rotary layers only" in engine.supports_model({"model_type": "llama"}, op="model.alibi")
