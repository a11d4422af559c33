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

Each case has its own time limit (``timeout``). A process that exits, writes something that is
not a protocol message, or runs past the limit is killed; that case is an ``error`` and the
next case starts a fresh process (with a fresh handshake).
"""

from __future__ import annotations

import atexit
import json
import os
import queue
import shlex
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any, Final

import numpy as np
from numpy.typing import NDArray

from posenc_ref import corpus
from posenc_ref.errors import ERROR_CATEGORIES
from posenc_ref.tolerance import DTYPES

PROTOCOL: Final = "posenc-ref-subprocess/1"
DEFAULT_TIMEOUT: Final = 30.0
"""Seconds one case may take in the child (below the runner's default of 60 s, so the child is
killed and restarted before the runner abandons the call)."""
HANDSHAKE_TIMEOUT: Final = 30.0
_STDERR_TAIL: Final = 2000


class ProtocolError(Exception):
    """The child broke the protocol: it exited, timed out or wrote something unexpected."""


class CaseRejected(Exception):
    """The child rejected a case's input with an error category."""

    def __init__(self, category: str, message: str) -> None:
        super().__init__(f"{category}: {message}")
        self.category = category


class _Child:
    """One running child process with a reader thread feeding its stdout lines to a queue."""

    def __init__(self, argv: list[str], cwd: str | None) -> None:
        try:
            self.process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                            stderr=subprocess.PIPE, text=True, bufsize=1, cwd=cwd)
        except OSError as exc:
            raise ProtocolError(f"cannot start {shlex.join(argv)}: {exc}") from exc
        self.lines: queue.SimpleQueue[str | None] = queue.SimpleQueue()
        self.stderr: list[str] = []
        stdout, stderr = self.process.stdout, self.process.stderr
        if stdout is None or stderr is None:
            raise ProtocolError("the process has no stdout/stderr pipes")
        threading.Thread(target=self._pump, args=(stdout, self.lines), daemon=True).start()
        threading.Thread(target=self._drain, args=(stderr,), daemon=True).start()

    @staticmethod
    def _pump(stream: IO[str], lines: queue.SimpleQueue[str | None]) -> None:
        for line in stream:
            lines.put(line)
        lines.put(None)

    def _drain(self, stream: IO[str]) -> None:
        for line in stream:
            self.stderr.append(line)
            if len(self.stderr) > 200:
                del self.stderr[:100]

    def stderr_tail(self) -> str:
        text = "".join(self.stderr).strip()
        return text[-_STDERR_TAIL:]

    def send(self, message: Mapping[str, Any]) -> None:
        stdin = self.process.stdin
        if stdin is None:
            raise ProtocolError("the process has no stdin")
        try:
            stdin.write(json.dumps(message) + "\n")
            stdin.flush()
        except (BrokenPipeError, OSError, ValueError) as exc:
            raise ProtocolError(self._exit_note(f"writing to the process failed ({exc})")) from exc

    def receive(self, timeout: float) -> dict[str, Any]:
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise ProtocolError(f"no answer within {timeout:g} s (process killed and restarted)") from None
        if line is None:
            raise ProtocolError(self._exit_note("the process closed its output"))
        try:
            message = json.loads(line)
        except json.JSONDecodeError:
            raise ProtocolError(f"not a JSON line on stdout: {line.strip()[:200]!r}") from None
        if not isinstance(message, dict) or not isinstance(message.get("type"), str):
            raise ProtocolError(f"not a protocol message (an object with a 'type'): {line.strip()[:200]!r}")
        return message

    def _exit_note(self, what: str) -> str:
        try:
            code = self.process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            code = None
        tail = self.stderr_tail()
        return f"{what}; exit status {code}" + (f"; stderr: {tail}" if tail else "")

    def stop(self) -> None:
        if self.process.poll() is None:
            try:
                self.send({"type": "shutdown"})
                if self.process.stdin is not None:
                    self.process.stdin.close()
                self.process.wait(timeout=2)
            except (ProtocolError, subprocess.TimeoutExpired):
                self.process.kill()
                self.process.wait()
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            if stream is not None and not stream.closed:
                try:
                    stream.close()
                except OSError:
                    pass


class SubprocessAdapter:
    """A posenc-ref adapter backed by a child process (see the module docstring).

    Parameters
    ----------
    argv
        The command and its arguments.
    timeout
        Seconds one case (or the handshake) may take before the child is killed.
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
        self.timeout = float(timeout)
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
        caps = hello.get("capabilities")
        if caps is not None and not isinstance(caps, dict):
            self.close()
            raise ProtocolError(f"handshake: capabilities must be an object, got {type(caps).__name__}")
        self.capabilities: dict[str, dict[str, tuple[Any, ...]]] | None = None if caps is None else {
            str(op): {str(k): tuple(v) for k, v in (values or {}).items()} for op, values in caps.items()}
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
                answer = child.receive(self.timeout)
                if answer.get("seq") != seq:
                    raise ProtocolError(f"answer for seq {answer.get('seq')!r} while waiting for seq {seq}")
                return self._outputs(answer, out_dir)
            except ProtocolError:
                self._restart()
                raise
            finally:
                shutil.rmtree(case_dir, ignore_errors=True)

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
                outputs[str(name)] = np.load(file, allow_pickle=False)
            except (OSError, ValueError) as exc:
                raise ProtocolError(f"output {name!r}: cannot read {file}: {exc}") from exc
        return outputs

    def error_category(self, exc: BaseException) -> str | None:
        """The category the child named; ``None`` for crashes, timeouts and anything else."""
        return exc.category if isinstance(exc, CaseRejected) and exc.category in ERROR_CATEGORIES else None

    def at_dtype(self, dtype: str) -> SubprocessAdapter:
        """The same command, asked for ``dtype`` in its handshake."""
        return SubprocessAdapter(self.argv, timeout=self.timeout, dtype=dtype, cwd=self.cwd)

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
    """``POSENC_SUBPROCESS_TIMEOUT`` (seconds) or :data:`DEFAULT_TIMEOUT`."""
    raw = os.environ.get("POSENC_SUBPROCESS_TIMEOUT")
    try:
        return float(raw) if raw else DEFAULT_TIMEOUT
    except ValueError:
        return DEFAULT_TIMEOUT

