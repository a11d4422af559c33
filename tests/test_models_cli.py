"""`posenc-ref model list` and `posenc-ref model show`."""

import json
import subprocess
import sys
import time

from posenc_ref.cli import main
from posenc_ref.models.catalogue import CATALOGUE


def test_model_list_names_every_catalogued_model(capsys):
    assert main(["model", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == list(CATALOGUE)


def test_model_show_collapses_runs_and_prints_provenance(capsys):
    assert main(["model", "show", "gemma-3-27b"]) == 0
    out = capsys.readouterr().out
    assert "0-4 (5)    sliding_attention  rope    10000  default" in out
    assert "5          full_attention     rope    1e+06  linear     8" in out
    assert "defaulted: text_config.max_position_embeddings=131072" in out
    assert "reading: transformers-5" in out


def test_model_show_every_catalogued_model(capsys):
    """Every entry shows; the 1 s bar per model is benchmarks/bench_models.py's."""
    for name in CATALOGUE:
        start = time.process_time()
        assert main(["model", "show", name]) == 0, name
        assert time.process_time() - start < 5.0, name
    capsys.readouterr()


def test_model_show_values_json_and_path(tmp_path, capsys):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(CATALOGUE["phi-3.5-mini"].config))
    assert main(["model", "show", str(path), "--positions", "0,4096", "--layer", "0", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["context_length"] == 4097 and out["values"]["positions"] == [0, 4096]
    assert out["values"]["cos"][0][0] == out["runs"][0]["attention_factor"]  # cos at p = 0 is the factor
    assert out["provenance"]["notes"]


def test_model_show_bias_and_bad_names(capsys):
    assert main(["model", "show", "bloom-560m", "--positions", "0,3", "--json"]) == 0
    bias = json.loads(capsys.readouterr().out)["values"]["bias"]
    assert len(bias) == 16 and bias[0][1][0] == -3 * 2 ** -0.5
    assert main(["model", "show", "no-such-model"]) == 2
    assert "neither a catalogued model nor a file" in capsys.readouterr().err


def test_model_command_starts_without_the_registry():
    code = ("import sys; from posenc_ref.cli import main; main(['model', 'list']); "
            "print('posenc_ref.registry' in sys.modules, file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stderr.strip() == "False"


def test_docs_catalogue_table_is_current():
    from pathlib import Path

    from posenc_ref.models.doc import catalogue_table

    page = (Path(__file__).resolve().parent.parent / "docs" / "models.md").read_text()
    marker = "<!-- catalogue table: posenc_ref.models.doc.catalogue_table() -->\n"
    start = page.index(marker) + len(marker)
    assert page[start:page.index("<!-- end catalogue table -->")] == catalogue_table()
