"""Every row of the bad-input table gets its declared error, quickly, naming function, argument and value."""

from __future__ import annotations

import inspect
import time
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from bad_input_table import BASES, ROWS, Row

from posenc_ref import (
    alibi,
    attention,
    attention_pipeline,
    attention_positional,
    checks,
    deberta,
    grid2d,
    learned,
    resample,
    rope,
    rope_scaling,
    rope_variants,
    shaw,
    sinusoidal,
    t5,
    transformer_xl,
)
from posenc_ref.errors import SpecError

SPEC_MODULES: tuple[ModuleType, ...] = (
    sinusoidal, grid2d, learned, alibi, t5, deberta, shaw, transformer_xl, resample, rope, rope_scaling,
    rope_variants, attention, attention_pipeline, attention_positional, checks,
)
BUILDING_BLOCKS = {
    # public names that are internal building blocks of another public function, taking
    # already-validated arguments; each is reached (and its input checked) through that function
    "rotary_frequencies": "rope_apply / rope_scores / mrope_cos_sin validate head dim, base and rotary_dim",
    "scaled_frequencies": "rope_apply / rope_scores pass their validated head dim; the scaling is rope_inv_freq's",
    "xpos_centre": "rope_xpos passes its validated length and centring",
    "mrope_stream": "mrope_cos_sin passes its validated section and layout",
    "prepare_pass": "the validation half of attention itself (the same checks, named 'attention')",
    "direct": "attention's direct path, given the validated Pass that prepare_pass returns",
    "blockwise": "attention's blockwise path, given the validated Pass that prepare_pass returns",
    "tiles": "attention's row tiling of a validated Pass",
    "tileable": "whether attention tiles a validated Pass",
    "run": "attention's tile runner over a validated Pass",
    "xpos_scores": "rope_scores' xPos weighting of already rotated, validated queries and keys",
    "required": "rope_inv_freq's check that a rope_type's parameter is given, called with its validated arguments",
    "direct_output": "attention's direct path without weights, given the validated Pass",
    "workers": "the size of attention's thread pool (POSENC_REF_THREADS), no arguments",
}
TIME_LIMIT_S = 5.0
"""CPU seconds a refusal may take: a refusal is microseconds of work, a hang or a built output unbounded."""


def _call(row: Row) -> tuple[Any, tuple[Any, ...], dict[str, Any]]:
    func, argument, value = row[0], row[1], row[2]
    function, positional, base = BASES[func]
    if argument == "*":
        args, kwargs = value
        return function, tuple(args), dict(kwargs)
    assert argument in base or argument not in positional, f"{func}: unknown argument {argument}"
    values = {**base, argument: value}
    args = tuple(values.pop(name) for name in positional)
    return function, args, values


def test_the_table_is_large_and_covers_every_public_function() -> None:
    assert len(ROWS) >= 300
    assert all(len(row[5]) >= 2 for row in ROWS)  # the argument and the value, at least
    public = {name for module in SPEC_MODULES for name, obj in vars(module).items()
              if inspect.isfunction(obj) and not name.startswith("_")
              and (obj.__module__ == module.__name__ or obj.__module__.startswith("posenc_ref._"))}
    covered = {row[0] for row in ROWS}
    assert public - covered - set(BUILDING_BLOCKS) == set()
    assert covered <= set(BASES) and set(BASES) <= public


@pytest.mark.parametrize("func", sorted(BASES))
def test_every_base_call_is_valid(func: str) -> None:
    function, positional, base = BASES[func]
    values = dict(base)
    args = tuple(values.pop(name) for name in positional)
    function(*args, **values)


@pytest.mark.parametrize("row", ROWS, ids=[f"{r[0]}-{r[1]}-{i}" for i, r in enumerate(ROWS)])
def test_bad_input_gets_the_declared_error(row: Row) -> None:
    func, _, _, exception, category, words = row
    function, args, kwargs = _call(row)
    start = time.process_time()
    with pytest.raises(Exception) as info:
        function(*args, **kwargs)
    elapsed = time.process_time() - start
    error = info.value
    assert type(error) is exception, f"{type(error).__name__}: {error}"
    message = str(error)
    assert message.startswith(f"{func}: "), message
    for word in words:
        assert word in message, f"{word!r} not in {message!r}"
    if exception is SpecError:
        assert isinstance(error, SpecError) and error.category == category, (error.category, message)
    assert elapsed < TIME_LIMIT_S


def test_rows_are_distinct_calls() -> None:
    seen = set()
    for row in ROWS:
        key = (row[0], row[1], repr(np.asarray(row[2], dtype=object)) if row[1] != "*" else repr(row[2]))
        assert key not in seen, row
        seen.add(key)
