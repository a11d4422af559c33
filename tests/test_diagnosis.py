"""The diagnosis as a search: named hypotheses, fitted values, shifts below 0, integer offsets, the catalogue."""

import numpy as np
import pytest

from posenc_ref import rope, rope_scaling
from posenc_ref.registry import get_op
from posenc_ref.runner import diagnosis
from posenc_ref.runner.diagnosis_measure import nameable, score, score_all, summary
from posenc_ref.runner.emulation import rope as emu

# the mutants recreating the failures issue 18 lists under "Done when"
DONE_WHEN = ("rope-dynamic-as-linear-rescale", "rope-longrope-always-long", "rope-yarn-beta-zero-literal",
             "rope-float32-rounded-angles-claimed-float64", "rope-yarn-truncate-ignored",
             "rope-yarn-attention-factor-ignored", "attention-fully-masked-nan", "rope-positions-minus-one",
             "attention-positional-alignment-swapped", "t5-bucket-rounded-log")


def test_the_catalogue_is_named_at_90_percent():
    """The share bars; the time bar (no case 1 s or more) is benchmarks/bench_diagnosis.py's."""
    scores = score_all()
    outputs, mutants, slowest = summary(scores)
    assert len(scores) == len(nameable()) and set(DONE_WHEN) <= set(nameable())
    assert mutants >= 0.9, [(s.name, s.named, s.failing) for s in scores if s.share < 0.9]
    assert outputs >= 0.9 and slowest > 0
    assert all(len(s.seconds) > 0 for s in scores if s.failing)  # each failing case's diagnosis was timed


# attention fits (issue 18 item 1): scale, window edge, GQA head mapping
ATTENTION_FITS = ("missing-inverse-sqrt-d", "gqa-modulo", "window-edge-off-by-one")


@pytest.mark.parametrize("name", DONE_WHEN + ATTENTION_FITS)
def test_each_done_when_failure_is_named(name):
    s = score(name)
    assert s.failing and s.named == s.failing, s.missed


def test_a_uniform_rescale_is_reported_with_its_fitted_factor():
    op = get_op("rope.inv_freq")
    params = {"dim": 128, "base": 10000.0}
    actual = rope_scaling.rope_inv_freq(dim=128)[0] / 2.6
    found = diagnosis.diagnose(op, params, {}, {"inv_freq": actual}, "float64")
    assert "matches rope_type='linear' with factor 2.6 (fitted)" in found


def test_a_base_is_fitted():
    op = get_op("rope.inv_freq")
    actual = rope_scaling.rope_inv_freq(dim=64, base=31234.5)[0]
    found = diagnosis.diagnose(op, {"dim": 64, "base": 10000.0}, {}, {"inv_freq": actual}, "float64")
    assert "matches rope_type='default' with base 31234.5 (fitted)" in found


def test_a_hypothesis_must_keep_the_outputs_that_passed():
    """A YaRN attention factor of 1 is not 'rope_type=default': that would move the frequencies too."""
    op = get_op("rope.inv_freq")
    params = {"rope_type": "yarn", "dim": 128, "factor": 16.0, "original_max_position": 4096}
    found = diagnosis.diagnose(op, params, {}, {"attention_factor": np.ones(1)}, "float64")
    assert found == ["matches the reference with attention_factor 1 (fitted)"]


def _shift_formula(op_name, params, inputs):
    op = get_op(op_name)
    label, compute = next((label, compute) for label, compute, *_ in diagnosis.hypotheses(op, params, inputs, {},
                                                                                            "float64")
                          if "positions - 1" in label)
    assert "evaluated as -1 by the formula" in label
    return compute()


@pytest.mark.parametrize("width", ["full", "half", "full_interleaved"])
def test_cos_sin_below_zero_by_the_angle_addition_formula(width):
    w = rope_scaling.rope_inv_freq(dim=16, base=500.0)[0]
    pos = np.array([0, 1, 7, 300])
    got = _shift_formula("rope.cos_sin", {"width": width, "attention_factor": 1.5}, {"positions": pos, "inv_freq": w})
    angle = (pos - 1.0)[:, None] * w  # directly, at -1, 0, 6, 299
    cos, sin = 1.5 * np.cos(angle), 1.5 * np.sin(angle)
    if width == "full":
        cos, sin = np.concatenate([cos, cos], -1), np.concatenate([sin, sin], -1)
    elif width == "full_interleaved":
        cos, sin = np.repeat(cos, 2, -1), np.repeat(sin, 2, -1)
    np.testing.assert_allclose(got["cos"], cos, atol=1e-12)
    np.testing.assert_allclose(got["sin"], sin, atol=1e-12)


@pytest.mark.parametrize("layout", sorted(rope.LAYOUTS))
@pytest.mark.parametrize(("rotary_dim", "partial", "x_layout"), [(None, "prefix", "BHTD"), (8, "prefix", "BTHD"),
                                                                  (8, "proportional", "BHTD")])
def test_apply_below_zero_through_the_inverse_rotation(layout, rotary_dim, partial, x_layout):
    rng = np.random.default_rng(5)
    x = rng.normal(size=(2, 3, 4, 12)) if x_layout == "BHTD" else rng.normal(size=(2, 4, 3, 12))
    pos = np.array([0, 2, 5, 40])
    params = {"base": 100.0, "rotary_dim": rotary_dim, "partial": partial, "layout": layout, "x_layout": x_layout,
              "attention_factor": 0.8}
    got = _shift_formula("rope.apply", params, {"x": x, "positions": pos})["y"]
    # the emulation's rotation computes the formula with no position check: in float64 at -1, 1, 4, 39
    want = emu.rotate_lowp(x, pos - 1, params, np.float64, np.float64)[0]
    np.testing.assert_allclose(got, want, atol=1e-12)


def test_integer_outputs_get_count_offset_and_where():
    op = get_op("t5.bucket")
    rel = np.arange(-40, 41)
    expected = op.call({}, {"relative_positions": rel})["buckets"]
    actual = expected.copy()
    actual[[3, 70]] += 1
    found = diagnosis.diagnose(op, {}, {"relative_positions": rel}, {"buckets": actual}, "float64")
    assert f"buckets off by +1 at 2 of {rel.size} elements (at (3,), (70,))" in found
    assert not any("inf" in line for line in found)


def test_nothing_explains_noise_and_the_closest_candidate_is_named():
    op = get_op("rope.cos_sin")
    w = rope_scaling.rope_inv_freq(dim=8)[0]
    inputs = {"positions": np.arange(6), "inv_freq": w}
    good = op.call({}, inputs)
    noisy = {"cos": good["cos"] + 0.01 * np.random.default_rng(1).normal(size=good["cos"].shape)}
    found = diagnosis.diagnose(op, {}, inputs, noisy, "float64")
    assert len(found) == 1 and found[0].startswith("unexplained: no known mistake explains it; closest candidate: ")
    assert "(residual " in found[0]
    assert diagnosis.diagnose(op, {}, inputs, noisy, "float64") == found  # deterministic


def test_float32_is_judged_at_float32_tolerance_only_when_float64_is_claimed():
    op = get_op("rope.cos_sin")
    w = rope_scaling.rope_inv_freq(dim=64)[0]
    inputs = {"positions": np.arange(0, 4096, 37), "inv_freq": w}
    exact = op.call({}, inputs)
    actual = {"sin": np.sin(inputs["positions"][:, None].astype(np.float32) * w.astype(np.float32))}
    actual["sin"] = np.concatenate([actual["sin"], actual["sin"]], -1).astype(np.float64)
    assert not np.allclose(actual["sin"], exact["sin"], atol=1e-9, rtol=0)
    at64 = diagnosis.diagnose(op, {}, inputs, actual, "float64")
    assert any(line.startswith("consistent with float32 angles") for line in at64)
    assert not any(line.startswith("consistent with float32") for line in diagnosis.diagnose(op, {}, inputs, actual,
                                                                                             "float32"))


def test_the_search_is_bounded():
    for name in ("rope.inv_freq", "attention.rope", "rope.apply", "t5.bias"):
        op = get_op(name)
        case = next(c for c in op.cases if c.kind != "error")
        found = diagnosis.hypotheses(op, op.full_params(case.params), case.make_inputs(), {}, "float64")
        assert 0 < len(found) <= diagnosis.MAX_HYPOTHESES


def test_failures_are_grouped_by_explanation():
    from posenc_ref.runner.adapters import load_adapter
    from posenc_ref.runner.engine import run_conformance
    from posenc_ref.runner.report import terminal

    run = run_conformance(load_adapter("mutant:rope-yarn-without-attention-factor"), spec="mutant",
                          select=lambda e: e["op"] == "rope.inv_freq")
    failing = [r for r in run.results if r.status == "fail"]
    lines = diagnosis.group_failures(run.results)
    counts = [int(line.split(" of ")[0]) for line in lines]
    assert sum(counts) == len(failing) and counts == sorted(counts, reverse=True)
    assert lines[0] == (f"{counts[0]} of {len(failing)} failing outputs: "
                        "matches the reference with attention_factor 1 (fitted)")
    assert all(line.endswith(")") and "largest residual" in line for line in lines if "unexplained" in line)
    assert f"  {lines[0]}" in terminal([run]).splitlines()


def test_two_convention_slips_at_once_are_named_as_a_pair():
    op = get_op("sinusoidal.table")
    inputs = next(c for c in op.cases if c.kind == "normal").make_inputs()
    params = op.full_params({**next(c for c in op.cases if c.kind == "normal").params, "ladder": "paper",
                             "layout": "interleaved"})
    both = op.call({**params, "ladder": "t2t", "layout": "concat_sin_cos"}, inputs)
    name = op.outputs[0].name
    found = diagnosis.diagnose(op, params, inputs, {name: both[name]}, "float64")
    assert "matches the reference under ladder='t2t' and layout='concat_sin_cos'" in found
    # a single slip is reported alone: pairs are tried only when no single one explains it
    one = op.call({**params, "layout": "concat_sin_cos"}, inputs)
    assert not any(" and " in line for line in diagnosis.diagnose(op, params, inputs, {name: one[name]}, "float64"))


def test_a_position_offset_is_found_by_the_search():
    """Every position shifted by 5 (a cache length counted twice, say) is named with its offset."""
    op = get_op("rope.cos_sin")
    case = next(c for c in op.cases if c.kind == "normal" and "positions" in c.make_inputs())
    params, inputs = op.full_params(case.params), case.make_inputs()
    actual = op.call(params, {**inputs, "positions": np.asarray(inputs["positions"]) + 5})
    found = diagnosis.diagnose(op, params, inputs, actual, "float64")
    assert any(line.startswith("matches the reference with positions + 5 (a position offset") for line in found)
    assert not any("positions - " in line for line in found)


def test_an_offset_below_zero_is_not_tried():
    op = get_op("rope.cos_sin")
    case = next(c for c in op.cases if c.kind == "normal" and np.min(c.make_inputs()["positions"]) == 0)
    labels = [h[0] for h in diagnosis.hypotheses(op, op.full_params(case.params), case.make_inputs(), {}, "float64")]
    assert any("positions + 8" in label for label in labels)
    assert not any("positions - 2" in label or "positions - 8" in label for label in labels)
