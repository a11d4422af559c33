"""The posenc-ref command line."""

import json
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from posenc_ref import corpus
from posenc_ref.cli import main

ONE = "sinusoidal.table.d6.position1.known_answer"


def cli(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_list(capsys):
    code, out, _ = cli(capsys, "list")
    assert code == 0 and "sinusoidal.table" in out and "learned.lookup" in out
    code, out, _ = cli(capsys, "list", "--cases", "--op", "learned.*")
    assert "learned.lookup.error.beyond_table" in out and "error:out_of_range" in out and "sinusoidal" not in out


def test_show(capsys):
    code, out, _ = cli(capsys, "show", ONE)
    assert code == 0
    for fragment in ("op       sinusoidal.table", "params   dim=6", "input    positions: int64[1] [1]",
                     "output   table: float64[1, 6] tolerance=phase [0.8414709848078965"):
        assert fragment in out
    code, _, err = cli(capsys, "show", "nope")
    assert code == 2 and "no case 'nope'" in err


def test_golden_verify_check_and_tampering(capsys, corpus_copy):
    assert cli(capsys, "golden", "verify", "--corpus", str(corpus_copy))[0] == 0
    code, out, _ = cli(capsys, "golden", "check", "--corpus", str(corpus_copy))
    assert code == 0 and "cases OK" in out
    entry = next(c for c in corpus.read_manifest(corpus_copy)["cases"] if c["id"] == ONE)
    path = corpus_copy / entry["outputs"]["table"]["file"]
    np.save(path, np.load(path) + 1, allow_pickle=False)
    for action in ("verify", "check"):
        code, out, _ = cli(capsys, "golden", action, "--corpus", str(corpus_copy))
        assert code == 1 and f"FAIL cases/{ONE}/expected.table.npy: sha256 mismatch" in out


def test_golden_generate(capsys, tmp_path):
    code, out, _ = cli(capsys, "golden", "generate", "--corpus", str(tmp_path / "g"))
    assert code == 0 and "wrote" in out
    assert corpus.verify(tmp_path / "g") == []


def test_conformance_exit_codes_and_reports(capsys, tmp_path):
    code, out, _ = cli(capsys, "conformance", "numpy", "numpy-float32", "--report-json", str(tmp_path / "r.json"),
                       "--junit", str(tmp_path / "j.xml"), "--markdown", str(tmp_path / "m.md"))
    assert code == 0
    assert "numpy (float64): PASSED" in out and "numpy-float32 (float32): PASSED" in out
    assert "absolute" in out  # the family x dtype matrix
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["passed"] and len(report["runs"]) == 2
    assert report["runs"][0]["corpus"]["manifest_sha256"]
    suites = ET.parse(tmp_path / "j.xml").getroot()
    assert len(suites) == 2 and suites[0].get("failures") == "0"
    assert (tmp_path / "m.md").read_text().startswith("| family | numpy (float64) | numpy-float32 (float32) |")

    code, out, _ = cli(capsys, "conformance", "mutant:sinusoid-layout-swapped", "--op", "sinusoidal.table")
    assert code == 1 and "FAILED" in out and "diagnosis: matches the reference under layout=" in out
    assert "rerun:     posenc-ref conformance mutant:sinusoid-layout-swapped --case sinusoidal.table." in out


def test_conformance_selection(capsys):
    code, out, _ = cli(capsys, "conformance", "numpy", "--case", ONE)
    assert code == 0 and ": PASSED: 1 pass;" in out
    code, out, _ = cli(capsys, "conformance", "numpy", "-k", "learned.lookup.error", "--level", "must")
    assert code == 0 and "6 pass" in out
    code, out, _ = cli(capsys, "conformance", "numpy", "-k", "no-such-case")
    assert code == 1 and "no case was executed" in out
    code, out, _ = cli(capsys, "conformance", "numpy", "--dtype", "float16", "--case", ONE)
    assert code == 0 and "numpy-float16 (float16): PASSED" in out


def test_conformance_usage_errors(capsys, tmp_path, corpus_copy):
    assert cli(capsys, "conformance")[0] == 2
    code, _, err = cli(capsys, "conformance", "nonexistent_adapter")
    assert code == 2 and "unknown adapter" in err
    bad = tmp_path / "bad.toml"
    bad.write_text("[[expectation]]\nid = 'x'\n")
    code, _, err = cli(capsys, "conformance", "numpy", "--expectations", str(bad))
    assert code == 2 and "'status' is required" in err
    (corpus_copy / "cases" / ONE / "stray.npy").write_bytes(b"x")
    code, _, err = cli(capsys, "conformance", "numpy", "--corpus", str(corpus_copy))
    assert code == 2 and "refusing to run" in err and "stray.npy" in err
    code, out, _ = cli(capsys, "conformance", "numpy", "--corpus", str(corpus_copy), "--allow-modified")
    assert code == 0 and "WARNING corpus" in out


def test_list_adapters(capsys):
    code, out, _ = cli(capsys, "conformance", "--list-adapters")
    assert code == 0 and "numpy-float32" in out and "mutant:float16-angles" in out


@pytest.mark.parametrize("args", [[], ["list"], ["show"], ["golden"], ["conformance"]])
def test_help_everywhere(args):
    exe = shutil.which("posenc-ref")
    command = [exe] if exe else [sys.executable, "-m", "posenc_ref.cli"]
    done = subprocess.run(command + args + ["--help"], capture_output=True, text=True, check=False)
    assert done.returncode == 0 and "usage: posenc-ref" in done.stdout
