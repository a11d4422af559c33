"""The corpus files on disk, read with every check (the reading half of :mod:`posenc_ref.corpus`).

The manifest's schema, the paths it may name, the ``.npy`` headers and the hashes of the arrays;
:mod:`posenc_ref.corpus` re-exports everything public here, and its docstring describes the layout.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import posixpath
import stat
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

FORMAT_VERSION: Final = "1.0"

MAX_ARRAY_BYTES: Final = 64 << 20
"""The most data bytes one corpus array may hold; a header declaring more is refused unread."""

MAX_MANIFEST_BYTES: Final = 64 << 20
"""The largest ``manifest.json`` read."""


class CorpusError(Exception):
    """The corpus is corrupt or inconsistent; ``problems`` lists every finding by file or case."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("corrupt corpus:\n  " + "\n  ".join(problems))
        self.problems = problems


def array_sha256(array: NDArray[Any]) -> str:
    """sha256 of the raw little-endian, C-order bytes of ``array``."""
    data = np.ascontiguousarray(array)
    if data.dtype.byteorder == ">" or (data.dtype.byteorder == "=" and np.little_endian is False):
        data = data.astype(data.dtype.newbyteorder("<"))
    return hashlib.sha256(data.tobytes()).hexdigest()


_CASE_KEYS: Final = {"id": str, "op": str, "kind": str, "level": str, "flags": list, "comment": str,
                     "params": dict, "inputs": dict, "outputs": dict}

_ARRAY_KEYS: Final = {"file": str, "dtype": str, "shape": list, "sha256": str}


def _array_entries(case: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    for name, item in case.get("inputs", {}).items():
        yield f"input {name}", item
    for name, item in case.get("outputs", {}).items():
        yield f"output {name}", item
        if isinstance(item, dict) and "phase" in item:
            yield f"phase of {name}", item["phase"]
        if isinstance(item, dict) and "input_scale" in item:
            yield f"input scale of {name}", item["input_scale"]


def manifest_problems(manifest: Any) -> list[str]:
    """Schema problems of a parsed manifest (empty when it is well formed)."""
    if not isinstance(manifest, dict):
        return ["manifest.json: the top level must be an object"]
    problems = []
    for key, kind in {"format_version": str, "version": str, "generator": dict, "cases": list, "retired": list}.items():
        if not isinstance(manifest.get(key), kind):
            problems.append(f"manifest.json: {key!r} missing or not a {kind.__name__}")
    if manifest.get("format_version") not in (None, FORMAT_VERSION) and isinstance(manifest.get("format_version"), str):
        problems.append(f"manifest.json: format_version {manifest['format_version']!r}, "
                        f"this reader knows {FORMAT_VERSION!r}")
    seen: set[str] = set()
    retired = {r.get("id") for r in manifest.get("retired", []) if isinstance(r, dict)}
    for i, case in enumerate(manifest.get("cases", []) if isinstance(manifest.get("cases"), list) else []):
        where = f"manifest.json: case #{i}"
        if not isinstance(case, dict):
            problems.append(f"{where}: not an object")
            continue
        for key, kind in _CASE_KEYS.items():
            if not isinstance(case.get(key), kind):
                problems.append(f"{where} ({case.get('id')}): {key!r} missing or not a {kind.__name__}")
        cid = str(case.get("id"))
        if cid in seen:
            problems.append(f"{where}: duplicate id {cid!r}")
        if cid in retired:
            problems.append(f"{where}: id {cid!r} is retired and may not be reused")
        seen.add(cid)
        for label, item in _array_entries(case):
            if not isinstance(item, dict) or any(not isinstance(item.get(k), t) for k, t in _ARRAY_KEYS.items()):
                problems.append(f"{where} ({cid}): {label} lacks file/dtype/shape/sha256")
        if case.get("kind") == "error" and not case.get("expected_error"):
            problems.append(f"{where} ({cid}): error case without expected_error")
    return problems


def corpus_path(directory: Path, relative: Any) -> Path:
    """``directory / relative`` for a manifest path that cannot leave the corpus, else :class:`CorpusError`.

    The path must be a relative, normalised POSIX path (no ``..``, ``.``, empty parts, backslashes
    or drive letters) under ``cases/``; no part of it may be a symbolic link, and the file must be
    a regular file (no FIFO, device or folder). Each is refused by name.
    """
    name = str(relative)
    if not isinstance(relative, str) or not relative:
        raise CorpusError([f"{name!r}: a manifest path must be a non-empty string"])
    if relative.startswith("/") or "\\" in relative or ":" in relative.split("/")[0]:
        raise CorpusError([f"{name}: an absolute path in the manifest, refused (paths are relative to the corpus)"])
    parts = relative.split("/")
    if posixpath.normpath(relative) != relative or any(p in ("", ".", "..") for p in parts):
        raise CorpusError([f"{name}: not a normalised relative path (no '..', '.' or empty parts), refused"])
    if parts[0] != "cases" or len(parts) < 3:
        raise CorpusError([f"{name}: outside the corpus's cases/ folder, refused"])
    path = Path(directory)
    for i, part in enumerate(parts):
        path = path / part
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            raise CorpusError([f"{name}: listed in the manifest but missing"]) from None
        except OSError as exc:
            raise CorpusError([f"{name}: cannot be examined ({exc})"]) from None
        if stat.S_ISLNK(mode):
            raise CorpusError([f"{name}: {'/'.join(parts[:i + 1])} is a symbolic link, refused"])
        last = i == len(parts) - 1
        if not last and not stat.S_ISDIR(mode):
            raise CorpusError([f"{name}: {'/'.join(parts[:i + 1])} is not a folder"])
        if last and not stat.S_ISREG(mode):
            kind = ("a FIFO" if stat.S_ISFIFO(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
                    else "a folder" if stat.S_ISDIR(mode) else "a socket" if stat.S_ISSOCK(mode) else "not a file")
            raise CorpusError([f"{name}: {kind}, not a regular file, refused"])
    return path


def _header(handle: Any, name: str) -> tuple[tuple[int, ...], bool, np.dtype[Any]]:
    try:
        version = np.lib.format.read_magic(handle)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(handle)
        elif version == (2, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(handle)
        else:
            raise CorpusError([f"{name}: .npy format version {version} is not supported"])
    except CorpusError:
        raise
    except (ValueError, OSError, EOFError, SyntaxError) as exc:
        reason = "holds pickled objects" if "pickle" in str(exc).lower() or "object" in str(exc).lower() else (
            f"not a readable .npy header ({exc})")
        raise CorpusError([f"{name}: {reason}"]) from None
    return tuple(shape), bool(fortran), dtype


def _load(directory: Path, item: Mapping[str, Any]) -> NDArray[Any]:
    """Load one listed array, refusing anything that does not match its manifest entry.

    The path is checked first (:func:`corpus_path`); then the ``.npy`` header is parsed and its
    dtype and shape compared with the manifest, and its size with the file's and with
    :data:`MAX_ARRAY_BYTES`, before any data is read.
    """
    name = str(item["file"])
    path = corpus_path(directory, item["file"])
    try:
        with open(path, "rb") as handle:
            shape, _, dtype = _header(handle, name)
            if dtype.hasobject:
                raise CorpusError([f"{name}: holds pickled objects"])
            if dtype.name != item["dtype"] or list(shape) != list(item["shape"]):
                raise CorpusError([f"{name}: holds {dtype.name}{list(shape)}, the manifest says "
                                   f"{item['dtype']}{list(item['shape'])}"])
            size = math.prod(shape) * dtype.itemsize
            if size > MAX_ARRAY_BYTES:
                raise CorpusError([f"{name}: its header declares {size} bytes, above the limit of "
                                   f"{MAX_ARRAY_BYTES} (MAX_ARRAY_BYTES); not read"])
            have = os.fstat(handle.fileno()).st_size - handle.tell()
            if have != size:
                raise CorpusError([f"{name}: unreadable, {'truncated' if have < size else 'trailing bytes'}: "
                                   f"{have} data bytes for a header declaring {size}"])
            handle.seek(0)
            array = np.lib.format.read_array(handle, allow_pickle=False)
    except CorpusError:
        raise
    except ValueError as exc:
        reason = "holds pickled objects" if "pickle" in str(exc).lower() else f"unreadable ({exc})"
        raise CorpusError([f"{name}: {reason}"]) from None
    except (OSError, EOFError) as exc:
        raise CorpusError([f"{name}: unreadable or truncated ({exc})"]) from None
    if array_sha256(array) != item["sha256"]:
        raise CorpusError([f"{name}: sha256 mismatch (modified or corrupt)"])
    return array


def verify_files(directory: Path, cases: list[Mapping[str, Any]]) -> list[str]:
    """Integrity problems of the arrays that ``cases`` list (empty when all are intact)."""
    problems = []
    for case in cases:
        for _, item in _array_entries(case):
            try:
                _load(directory, item)
            except CorpusError as exc:
                problems.extend(exc.problems)
    return problems


def read_manifest(directory: Path) -> dict[str, Any]:
    """Parse and schema-check ``manifest.json``; :class:`CorpusError` on any problem."""
    path = Path(directory) / "manifest.json"
    try:
        info = os.lstat(path)
    except OSError:
        raise CorpusError([f"{path}: no manifest.json in the corpus directory"]) from None
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISREG(info.st_mode):
        raise CorpusError(["manifest.json: a symbolic link or not a regular file, refused"])
    if info.st_size > MAX_MANIFEST_BYTES:
        raise CorpusError([f"manifest.json: {info.st_size} bytes, above the limit of {MAX_MANIFEST_BYTES}"])
    try:
        manifest = json.loads(path.read_bytes().decode("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise CorpusError([f"manifest.json: not valid JSON ({exc})"]) from None
    problems = manifest_problems(manifest)
    if problems:
        raise CorpusError(problems)
    return dict(manifest)
