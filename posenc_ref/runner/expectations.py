"""Expectations files: an implementation's declared deviations, applied strictly.

A file (JSON, or TOML on Python 3.11+ / with ``tomli``) holds a list of entries::

    [[expectation]]
    id = "sinusoidal.table.*.long_positions.*"   # glob over case ids
    output = "table"                            # optional: one output only
    status = "relax"                            # xfail | skip | relax
    factor = 4.0                                # relax only: tolerance multiplier (> 1)
    reason = "float32 positions above 2**24 are not exact"
    link = "https://github.com/org/repo/issues/123"

(JSON: ``{"expectation": [ {...}, ... ]}``.) Strictness: a case marked ``xfail`` that passes is
an ``xpass`` and fails the run; an entry that matches no case is an error; ``reason`` and
``link`` are mandatory; a relaxed pass is reported as ``pass_relaxed``, never ``pass``.
"""

from __future__ import annotations

import fnmatch
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

STATUSES: Final = ("xfail", "skip", "relax")


class ExpectationsError(Exception):
    """The expectations file is malformed."""


@dataclass(frozen=True)
class Expectation:
    id: str
    status: str
    reason: str
    link: str
    output: str | None = None
    factor: float = 1.0
    source: str = ""

    def matches(self, case_id: str, output: str | None = None) -> bool:
        if not fnmatch.fnmatchcase(case_id, self.id):
            return False
        return self.output is None or output is None or self.output == output


def _parse_text(path: Path) -> Any:
    text = path.read_text()
    if path.suffix == ".json":
        return json.loads(text)
    try:
        import tomllib as toml
    except ModuleNotFoundError:
        try:
            import tomli as toml  # type: ignore[no-redef,import-not-found,unused-ignore]
        except ModuleNotFoundError:
            raise ExpectationsError(f"{path}: TOML needs Python 3.11+ or the tomli package; or write JSON") from None
    return toml.loads(text)


def load_expectations(path: str | Path) -> list[Expectation]:
    """Parse and validate an expectations file."""
    path = Path(path)
    if not path.is_file():
        raise ExpectationsError(f"expectations file {str(path)!r} does not exist")
    try:
        data = _parse_text(path)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ExpectationsError(f"{path}: cannot parse ({exc})") from None
    entries = data.get("expectation") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise ExpectationsError(f"{path}: expected a list under the key 'expectation'")
    result = []
    for n, entry in enumerate(entries, 1):
        where = f"{path} entry {n}"
        if not isinstance(entry, dict):
            raise ExpectationsError(f"{where}: not a table/object")
        unknown = set(entry) - {"id", "status", "reason", "link", "output", "factor"}
        if unknown:
            raise ExpectationsError(f"{where}: unknown key(s) {sorted(unknown)}")
        for key in ("id", "status", "reason", "link"):
            if not isinstance(entry.get(key), str) or not entry[key].strip():
                raise ExpectationsError(f"{where}: {key!r} is required (a non-empty string)")
        if entry["status"] not in STATUSES:
            raise ExpectationsError(f"{where}: status must be one of {', '.join(STATUSES)}, got {entry['status']!r}")
        if entry["status"] == "skip" and "output" in entry:
            raise ExpectationsError(f"{where}: skip applies to whole cases; remove 'output'")
        factor = entry.get("factor", 1.0)
        if entry["status"] == "relax":
            if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not factor > 1:
                raise ExpectationsError(f"{where}: relax needs factor > 1, got {factor!r}")
        elif "factor" in entry:
            raise ExpectationsError(f"{where}: factor only applies to status 'relax'")
        result.append(Expectation(entry["id"], entry["status"], entry["reason"], entry["link"],
                                  entry.get("output"), float(factor), f"{path.name}:{n}"))
    return result
