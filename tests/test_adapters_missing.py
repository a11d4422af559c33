"""A framework adapter whose framework is not installed names the extra to install."""

import sys
from pathlib import Path

import pytest

from posenc_ref.cli import main
from posenc_ref.runner.adapters import AdapterLoadError, load_adapter

ADAPTERS = Path(__file__).resolve().parents[1] / "conformance" / "adapters"


@pytest.mark.parametrize(("file", "module", "extra"), [
    ("torch_port.py:TORCH", "torch", "torch"),
    ("transformers_absolute.py:WHISPER", "torch", "torch"),
    ("transformers_rope.py:ROPE_INIT", "torch", "torch"),
    ("transformers_relative.py:T5_BIAS", "torch", "torch"),
    ("transformers_attention.py:EAGER_ATTENTION", "torch", "torch"),
    ("torch_functions.py:SDPA", "torch", "torch"),
    ("jax_port.py:ADAPTER", "jax", "jax"),
    ("onnxruntime_graphs.py:ADAPTER", "onnx", "onnx"),
    ("onnxruntime_graphs.py:ADAPTER", "onnxruntime", "onnx"),
    # the deprecated spellings (shims for one release)
    ("torch_adapter.py:TORCH", "torch", "torch"),
    ("torch_adapter.py:WHISPER", "torch", "torch"),
    ("jax_adapter.py:ADAPTER", "jax", "jax"),
    ("onnxruntime_adapter.py:ADAPTER", "onnx", "onnx"),
    ("onnxruntime_adapter.py:ADAPTER", "onnxruntime", "onnx"),
])
def test_missing_framework_names_the_extra(monkeypatch, capsys, file, module, extra):
    monkeypatch.setitem(sys.modules, module, None)  # makes `import module` fail, installed or not
    with pytest.raises(AdapterLoadError, match=rf"is not installed.*pip install 'posenc-ref\[{extra}\]'"):
        load_adapter(f"{ADAPTERS / file}")
    assert main(["conformance", f"{ADAPTERS / file}"]) == 2
    assert f"posenc-ref[{extra}]" in capsys.readouterr().err
