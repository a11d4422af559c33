"""Adapters in any language: a child process speaking JSON lines over stdin/stdout.

Named on the command line as ``subprocess:COMMAND ARGS...`` (split like a shell would). The
protocol is described in ``conformance/README.md`` and, message by message, by
``conformance/protocol.schema.json``. In short:

1. The runner starts the process and sends ``{"type": "hello", "protocol": PROTOCOL,
   "corpus_version": ..., "dtype": ...}`` (``dtype`` only when ``--dtype`` asks for one).
   The process answers ``{"type": "hello", "protocol": PROTOCOL, "name": ..., "version": ...,
   "dtype": ..., "capabilities": {...}}``.
2. For each case the runner writes the inputs as ``.npy`` files into a fresh folder and sends
   ``{"type": "run", "seq": N, "op": ..., "params": {...}, "inputs": {name: path},
   "output_dir": path}``. The process writes each output as ``.npy`` and answers ``{"type":
   "result", "seq": N, "outputs": {name: path}}``, or rejects the input with ``{"type":
   "error", "seq": N, "category": ..., "message": ...}``.
3. The runner sends ``{"type": "shutdown"}`` (or closes stdin) at the end.

Each case has its own time limit (``timeout``, from ``POSENC_SUBPROCESS_TIMEOUT`` or
:data:`DEFAULT_TIMEOUT`, lowered to the runner's ``--timeout`` by the runner). A process that
exits, writes something that is not a protocol message, or runs past the limit is killed; that
case is an ``error`` and the next case starts a fresh process (with a fresh handshake).

Limits: one message is one line of at most ``MAX_LINE_BYTES`` bytes; an output file may
hold at most :data:`MAX_OUTPUT_BYTES` bytes of data. A breach is an ``error`` for that case,
naming the limit. Bytes that are not UTF-8 are shown escaped (``\\xff``). An answer carries
the ``seq`` of its request: a stale answer (an earlier ``seq``, a child answering twice) is
dropped, an answer for a ``seq`` never sent is a protocol error.
"""

from __future__ import annotations

import atexit
import json
import math
import os
import shlex
import shutil
import tempfile
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from posenc_ref import corpus
from posenc_ref.errors import ERROR_CATEGORIES
from posenc_ref.runner._subprocess_child import MAX_LINE_BYTES as MAX_LINE_BYTES
from posenc_ref.runner._subprocess_child import ProtocolError as ProtocolError
from posenc_ref.runner._subprocess_child import _Child
from posenc_ref.tolerance import DTYPES

PROTOCOL: Final = "posenc-ref-subprocess/1"
DEFAULT_TIMEOUT: Final = 30.0
"""Seconds one case may take in the child (below the runner's default of 60 s, so the child is
killed and restarted before the runner abandons the call)."""
HANDSHAKE_TIMEOUT: Final = 30.0
MAX_OUTPUT_BYTES: Final = 1 << 30
"""The most data bytes one output ``.npy`` of a child may declare in its header."""
ENV_TIMEOUT: Final = "POSENC_SUBPROCESS_TIMEOUT"


def check_timeout(value: object, what: str) -> float:
    """``value`` as seconds: a finite number above 0, else ``ValueError`` naming ``what``."""
    try:
        seconds = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be a number of seconds, got {value!r}") from None
    if not math.isfinite(seconds) or seconds <= 0:
        raise ValueError(f"{what} must be finite and above 0 seconds, got {value!r}")
    return seconds


class CaseRejected(Exception):
    """The child rejected a case's input with an error category."""

    def __init__(self, category: str, message: str) -> None:
        super().__init__(f"{category}: {message}")
        self.category = category


class SubprocessAdapter:
    """A posenc-ref adapter backed by a child process (see the module docstring).

    Parameters
    ----------
    argv
        The command and its arguments.
    timeout
        Seconds one case may take before the child is killed (finite, above 0). Kept in
        ``child_timeout``, which the runner lowers to its own per-case limit.
    dtype
        Ask the child to compute in this dtype (``hello.dtype``); ``None``: its default.
    cwd
        Working directory of the child.

    Raises
    ------
    ProtocolError
        The child could not be started or its handshake failed.
    """

    def __init__(self, argv: list[str], *, timeout: float = DEFAULT_TIMEOUT, dtype: str | None = None,
                 cwd: str | None = None) -> None:
        if not argv:
            raise ProtocolError("subprocess: give a command, e.g. subprocess:node impl.js")
        self.argv = list(argv)
        try:
            self.child_timeout = check_timeout(timeout, "subprocess: the timeout")
        except ValueError as exc:
            raise ProtocolError(str(exc)) from None
        self.requested_dtype = dtype
        self.cwd = cwd
        self.restarts = 0
        self._seq = 0
        self._lock = threading.Lock()
        self._workdir = tempfile.mkdtemp(prefix="posenc-subprocess-")
        self._child: _Child | None = None
        hello = self._start()
        self.name = str(hello.get("name") or Path(self.argv[-1]).name)
        self.version = str(hello.get("version", ""))
        self.dtype = str(hello.get("dtype", ""))
        if self.dtype not in DTYPES:
            self.close()
            raise ProtocolError(f"handshake: dtype {hello.get('dtype')!r} is not one of {', '.join(DTYPES)}")
        if dtype is not None and self.dtype != dtype:
            self.close()
            raise ProtocolError(f"asked for dtype {dtype!r}, the process computes in {self.dtype!r}")
        try:
            self.capabilities = _capabilities(hello.get("capabilities"))
        except ProtocolError:
            self.close()
            raise
        atexit.register(self.close)

    @classmethod
    def from_command(cls, command: str, **kwargs: Any) -> SubprocessAdapter:
        """An adapter from one command line (split like a POSIX shell)."""
        return cls(shlex.split(command), **kwargs)

    def _start(self) -> dict[str, Any]:
        child = _Child(self.argv, self.cwd)
        hello: dict[str, Any] = {"type": "hello", "protocol": PROTOCOL, "corpus_version": _corpus_version()}
        if self.requested_dtype is not None:
            hello["dtype"] = self.requested_dtype
        try:
            child.send(hello)
            answer = child.receive(HANDSHAKE_TIMEOUT)
        except ProtocolError as exc:
            child.stop()
            raise ProtocolError(f"handshake with {shlex.join(self.argv)} failed: {exc}") from exc
        if answer.get("type") != "hello" or answer.get("protocol") != PROTOCOL:
            child.stop()
            got = json.dumps(answer)[:200]
            raise ProtocolError(f"handshake: expected a hello for protocol {PROTOCOL!r}, got {got}")
        self._child = child
        return answer

    def _start_child(self) -> _Child:
        self._start()
        if self._child is None:
            raise ProtocolError("the process did not start")
        return self._child

    def _restart(self) -> None:
        if self._child is not None:
            self._child.process.kill()
            self._child.stop()
            self._child = None
        self.restarts += 1

    @property
    def timeout(self) -> float:
        """Seconds one case may take in the child (``child_timeout``)."""
        return self.child_timeout

    def interrupt(self) -> None:
        """Kill the running child (the runner's clock ran out); the next case starts a fresh one."""
        child = self._child
        if child is not None and child.process.poll() is None:
            child.process.kill()

    def run(self, op: str, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> dict[str, NDArray[Any]]:
        """Hand one case to the child; its outputs as arrays.

        Raises
        ------
        CaseRejected
            The child rejected the input (its category is in the exception).
        ProtocolError
            The child crashed, timed out or broke the protocol; it is restarted for the next case.
        """
        with self._lock:
            child = self._child if self._child is not None else self._start_child()
            self._seq += 1
            seq = self._seq
            case_dir = Path(self._workdir) / f"case{seq}"
            out_dir = case_dir / "out"
            out_dir.mkdir(parents=True)
            paths = {}
            for name, array in inputs.items():
                paths[name] = str(case_dir / f"{name}.npy")
                np.save(paths[name], np.ascontiguousarray(array), allow_pickle=False)
            try:
                child.send({"type": "run", "seq": seq, "op": op, "params": dict(params), "inputs": paths,
                            "output_dir": str(out_dir)})
                return self._outputs(self._answer(child, seq), out_dir)
            except ProtocolError:
                self._restart()
                raise
            finally:
                shutil.rmtree(case_dir, ignore_errors=True)

    def _answer(self, child: _Child, seq: int) -> dict[str, Any]:
        """The child's answer to request ``seq``; stale answers (earlier ``seq``) are dropped."""
        deadline = time.monotonic() + self.child_timeout
        while True:
            answer = child.receive(max(deadline - time.monotonic(), 0.001), self.child_timeout)
            got = answer.get("seq")
            if got == seq:
                return answer
            if isinstance(got, int) and not isinstance(got, bool) and 0 < got < seq:
                continue  # an answer to an earlier request (the child answered twice): not this case's
            raise ProtocolError(f"answer for seq {got!r} while waiting for seq {seq}")

    @staticmethod
    def _outputs(answer: Mapping[str, Any], out_dir: Path) -> dict[str, NDArray[Any]]:
        kind = answer.get("type")
        if kind == "error":
            raise CaseRejected(str(answer.get("category")), str(answer.get("message", "")))
        if kind != "result" or not isinstance(answer.get("outputs"), dict):
            raise ProtocolError(f"expected a result or error message, got {json.dumps(answer)[:200]}")
        outputs = {}
        for name, path in answer["outputs"].items():
            file = Path(str(path))
            file = file if file.is_absolute() else out_dir / file
            try:
                outputs[str(name)] = _read_output(file)
            except (OSError, ValueError, EOFError) as exc:
                raise ProtocolError(f"output {name!r}: cannot read {file.name}: {exc}") from exc
        return outputs

    def error_category(self, exc: BaseException) -> str | None:
        """The category the child named; ``None`` for crashes, timeouts and anything else."""
        return exc.category if isinstance(exc, CaseRejected) and exc.category in ERROR_CATEGORIES else None

    def at_dtype(self, dtype: str) -> SubprocessAdapter:
        """The same command, asked for ``dtype`` in its handshake."""
        return SubprocessAdapter(self.argv, timeout=self.child_timeout, dtype=dtype, cwd=self.cwd)

    def close(self) -> None:
        """Stop the child and remove the scratch folder."""
        if self._child is not None:
            self._child.stop()
            self._child = None
        shutil.rmtree(self._workdir, ignore_errors=True)


def _corpus_version() -> str:
    try:
        return str(corpus.read_manifest(corpus.default_corpus_dir())["version"])
    except (corpus.CorpusError, OSError, KeyError):
        return "unknown"


def timeout_from_env() -> float:
    """``POSENC_SUBPROCESS_TIMEOUT`` (seconds) or :data:`DEFAULT_TIMEOUT`.

    Raises ``ValueError`` naming the variable when it is set to anything but a finite number
    above 0 (``-1``, ``nan``, ``inf``, ``soon``).
    """
    raw = os.environ.get(ENV_TIMEOUT)
    if raw is None or raw.strip() == "":
        return DEFAULT_TIMEOUT
    return check_timeout(raw.strip(), ENV_TIMEOUT)


def _capabilities(caps: Any) -> dict[str, dict[str, tuple[Any, ...]]] | None:
    """The hello's ``capabilities``, checked: ``{op: {param: [values...]}}`` or absent."""
    if caps is None:
        return None
    if not isinstance(caps, dict):
        raise ProtocolError(f"handshake: capabilities must be an object, got {type(caps).__name__}")
    out: dict[str, dict[str, tuple[Any, ...]]] = {}
    for op, values in caps.items():
        values = values or {}
        if not isinstance(values, dict) or not all(isinstance(v, list) for v in values.values()):
            raise ProtocolError(f"handshake: capabilities[{op!r}] must be an object of parameter name to a list "
                                f"of values, got {json.dumps(values)[:120]}")
        out[str(op)] = {str(k): tuple(v) for k, v in values.items()}
    return out


def _read_output(file: Path) -> NDArray[Any]:
    """One output ``.npy`` of the child: a plain file, its header read first and sized against
    :data:`MAX_OUTPUT_BYTES` before any data is read."""
    if not file.is_file():
        raise OSError("not a regular file (or missing)")
    with open(file, "rb") as handle:
        version = np.lib.format.read_magic(handle)
        if version == (1, 0):
            shape, _, dtype = np.lib.format.read_array_header_1_0(handle)
        elif version == (2, 0):
            shape, _, dtype = np.lib.format.read_array_header_2_0(handle)
        else:
            raise ValueError(f".npy format version {version} is not supported")
        size = math.prod(shape) * dtype.itemsize
        if size > MAX_OUTPUT_BYTES:
            raise ValueError(f"the header declares {size} bytes, above the limit of {MAX_OUTPUT_BYTES} "
                             "(MAX_OUTPUT_BYTES)")
    array: NDArray[Any] = np.load(file, allow_pickle=False)
    return array
