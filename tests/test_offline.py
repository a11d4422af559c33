"""Offline mode: `posenc-ref conformance verify RESULTS_DIR` judges results written elsewhere."""

import json
import shutil

import numpy as np

from posenc_ref.cli import main
from posenc_ref.runner.adapters import load_adapter
from posenc_ref.runner.offline import verify_results, write_results


def test_results_written_by_a_correct_float32_implementation_pass(tmp_path):
    written = write_results(tmp_path, load_adapter("numpy-float32"))
    assert written > 50
    run = verify_results(tmp_path)
    assert run.passed and run.adapter["dtype"] == "float32"
    statuses = {r.status for r in run.results}
    assert statuses <= {"pass", "not_applicable"} and "pass" in statuses


def test_wrong_values_errors_and_missing_cases_are_judged_like_a_live_run(tmp_path, capsys):
    write_results(tmp_path, load_adapter("numpy"))
    # A layout mistake: swap the halves of one interleaved table.
    table_file = tmp_path / "sinusoidal.table.paper.interleaved.d16.p0-15" / "table.npy"
    table = np.load(table_file)
    np.save(table_file, np.concatenate([table[..., 0::2], table[..., 1::2]], axis=-1))
    # A wrong error category, a missing output and an absent case.
    (tmp_path / "learned.lookup.error.beyond_table" / "error.txt").write_text("invalid_argument\nrow 20\n")
    (tmp_path / "grid2d.mae.grid3x5.d16" / "table.npy").unlink()
    shutil.rmtree(tmp_path / "learned.lookup.clamp")
    report = tmp_path.parent / "offline-report.json"
    code = main(["conformance", "verify", str(tmp_path), "--report-json", str(report)])
    out = capsys.readouterr().out
    assert code == 1
    by_case = {(r["case_id"], r["output"]): r for r in json.loads(report.read_text())["runs"][0]["results"]}
    layout = by_case[("sinusoidal.table.paper.interleaved.d16.p0-15", "table")]
    assert layout["status"] == "fail" and any("concat_sin_cos" in d for d in layout["diagnosis"])
    assert by_case[("learned.lookup.error.beyond_table", "error")]["status"] == "wrong_error"
    assert by_case[("grid2d.mae.grid3x5.d16", "table")]["status"] == "error"
    assert by_case[("learned.lookup.clamp", "rows")]["status"] == "not_applicable"
    assert by_case[("learned.lookup.bert.p0-11", "rows")]["status"] == "pass"
    assert f"posenc-ref conformance verify {tmp_path} --case sinusoidal.table.paper.interleaved.d16.p0-15" in out


def test_a_folder_without_implementation_json_is_a_usage_error(tmp_path, capsys):
    assert main(["conformance", "verify", str(tmp_path)]) == 2
    assert "implementation.json is missing" in capsys.readouterr().err
    (tmp_path / "implementation.json").write_text('{"name": "x", "dtype": "float128"}')
    assert main(["conformance", "verify", str(tmp_path)]) == 2
    assert main(["conformance", "verify"]) == 2
