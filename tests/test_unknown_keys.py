"""Every name-keyed table fails loudly on a name it was not taught.

Two kinds of names key the tables: op names (the registry's) and ``rope_type`` values
(``rope_scaling.ROPE_TYPES``). The tables are found by walking the package, so a new table is
covered without being listed here. A lookup of an unknown name must raise a ``LookupError``
(or a ``SpecError`` from a spec function) whose message names the key and lists at least one
name the table does hold; never a fallback to default behaviour.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Mapping
from typing import Any, get_args

import numpy as np
import pytest

import posenc_ref
from posenc_ref import oracle, rope_scaling
from posenc_ref.errors import SpecError
from posenc_ref.registry import OPS, get_op
from posenc_ref.runner.emulation import EMULATIONS, UnknownKey, emulate
from posenc_ref.runner.emulation import rope as emulation_rope
from posenc_ref.runner.mutants import MUTANTS

FAKE_TYPE = "fake_scaling"
FAKE_OP = "fake.op"
OP_NAMES = {op.name for op in OPS}

# Tables in files another area owns that still answer an unknown key with a bare KeyError; each
# entry is an xfail(strict): fixing the table turns it into a failure until it is taken off here.
NEEDS_FIX: set[str] = set()


def _modules() -> list[Any]:
    names = [info.name for info in pkgutil.walk_packages(posenc_ref.__path__, "posenc_ref.")]
    return [importlib.import_module(name) for name in sorted(names) if ".derivations" not in name]


def _tables() -> dict[str, Mapping[str, Any]]:
    """Module-level mappings keyed by op names or rope types, less those merged into a bigger one."""
    found: dict[str, Mapping[str, Any]] = {}
    for module in _modules():
        for attr, value in vars(module).items():
            if not isinstance(value, Mapping) or not value or not all(isinstance(k, str) for k in value):
                continue
            keys = set(value)
            if keys <= OP_NAMES or keys <= set(rope_scaling.ROPE_TYPES):
                found.setdefault(f"{module.__name__}.{attr}", value)
    distinct = {id(t): name for name, t in found.items()}  # a table re-exported elsewhere counts once

    def merged(table: Mapping[str, Any]) -> bool:
        return any(other is not table and len(other) > len(table) and all(
            k in other and other[k] is v for k, v in table.items()) for other in found.values())
    return {name: found[name] for name in distinct.values() if not merged(found[name])}


TABLES = _tables()


def test_the_walk_finds_the_tables_the_runner_and_spec_use():
    assert {"posenc_ref.runner.emulation.EMULATIONS", "posenc_ref.oracle.ORACLES",
            "posenc_ref.rope_scaling.VARIANTS", "posenc_ref.runner.emulation.rope.FREQUENCIES"} <= set(TABLES)


@pytest.mark.parametrize("name", [
    pytest.param(n, marks=pytest.mark.xfail(strict=True, reason="another area's table: bare KeyError"))
    if n in NEEDS_FIX else n for n in sorted(TABLES)])
def test_unknown_key_is_a_clear_error(name):
    table = TABLES[name]
    key = FAKE_TYPE if set(table) <= set(rope_scaling.ROPE_TYPES) else FAKE_OP
    with pytest.raises((LookupError, SpecError)) as info:
        table[key]
    message = str(info.value)
    assert repr(key) in message and any(repr(k) in message for k in table), message


def test_unknown_mutant_name_is_a_clear_error():
    with pytest.raises(UnknownKey, match="'no-such-mutant'.*'rope-layout-swapped'"):
        MUTANTS["no-such-mutant"]


def test_unknown_op_is_a_clear_error_in_the_registry_and_the_emulation():
    with pytest.raises(KeyError, match=FAKE_OP):
        get_op(FAKE_OP)
    with pytest.raises(UnknownKey, match=f"'{FAKE_OP}'.*'rope.inv_freq'"):
        EMULATIONS[FAKE_OP]


def test_every_rope_type_table_holds_the_same_rope_types():
    assert get_args(rope_scaling.RopeType) == rope_scaling.ROPE_TYPES
    assert tuple(rope_scaling.VARIANTS) == rope_scaling.ROPE_TYPES
    assert tuple(emulation_rope.FREQUENCIES) == rope_scaling.ROPE_TYPES
    assert get_op("rope.inv_freq").param("rope_type").choices == rope_scaling.ROPE_TYPES


@pytest.fixture
def fake_rope_type(monkeypatch):
    """A rope_type the shared list accepts but that no table was taught."""
    monkeypatch.setattr(rope_scaling, "ROPE_TYPES", (*rope_scaling.ROPE_TYPES, FAKE_TYPE))
    return {"dim": 8, "base": 10000.0, "rope_type": FAKE_TYPE, "factor": None, "original_max_position": None,
            "context_length": None, "low_freq_factor": None, "high_freq_factor": None, "beta_fast": None,
            "beta_slow": None, "mscale": None, "mscale_all_dim": None, "attention_factor": None, "truncate": True,
            "partial_rotary_factor": 1.0, "dynamic_convention": "transformers", "yarn_convention": "transformers"}


def test_a_new_rope_type_fails_loudly_in_the_spec(fake_rope_type):
    with pytest.raises(SpecError, match=f"rope_inv_freq: rope_type='{FAKE_TYPE}' .* no frequency formula"):
        rope_scaling.rope_inv_freq(**fake_rope_type)


def test_a_new_rope_type_fails_loudly_in_the_emulation(fake_rope_type, monkeypatch):
    monkeypatch.setattr(rope_scaling, "rope_inv_freq", lambda **kwargs: (np.ones(4), np.ones(1), np.ones(1)))
    with pytest.raises(UnknownKey, match=f"FREQUENCIES.*'{FAKE_TYPE}'"):
        emulate("rope.inv_freq", fake_rope_type, {}, output_dtype="float32", angle_dtype="float32")


def test_a_new_rope_type_fails_loudly_in_the_oracle(fake_rope_type):
    with pytest.raises(LookupError, match=FAKE_TYPE):
        oracle.expected("rope.inv_freq", fake_rope_type, {})


def test_a_new_rope_type_fails_loudly_in_every_mutant_of_the_frequencies(fake_rope_type):
    mutants = [m for m in MUTANTS.values() if "rope.inv_freq" in m.ops]
    assert mutants
    for mutant in mutants:
        with pytest.raises((LookupError, SpecError), match=FAKE_TYPE):
            mutant.run("rope.inv_freq", fake_rope_type, {})
