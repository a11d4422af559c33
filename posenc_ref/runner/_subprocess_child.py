"""The child process of a ``subprocess:`` adapter: started, its stdout read line by line under
:data:`MAX_LINE_BYTES` on a reader thread, its stderr tail kept, stopped.

Part of :mod:`posenc_ref.runner.subprocess_adapter` (whose docstring describes the protocol),
which re-exports everything public here.
"""

from __future__ import annotations

import json
import queue
import shlex
import subprocess
import threading
from collections.abc import Mapping
from typing import IO, Any, Final

from posenc_ref.runner.adapters import AdapterCrash

MAX_LINE_BYTES: Final = 1 << 20
"""The longest line (one protocol message, newline included) the runner reads from a child."""

_STDERR_TAIL: Final = 2000

_EXIT_WAIT: Final = 5.0


class ProtocolError(AdapterCrash):
    """The child broke the protocol: it exited, timed out or wrote something unexpected."""


def _text(data: bytes) -> str:
    """Bytes from a child as text; bytes that are not UTF-8 shown escaped (``\\xff``)."""
    return data.decode("utf-8", errors="backslashreplace")


class _Child:
    """One running child process with a reader thread feeding its stdout lines to a queue.

    The pipes are binary: lines are read with a length limit (:data:`MAX_LINE_BYTES`) and
    decoded by :func:`_text`, so no output of the child can exhaust memory or kill the reader.
    """

    def __init__(self, argv: list[str], cwd: str | None) -> None:
        try:
            self.process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                            stderr=subprocess.PIPE, bufsize=0, cwd=cwd)
        except OSError as exc:
            raise ProtocolError(f"cannot start {shlex.join(argv)}: {exc}") from exc
        self.lines: queue.SimpleQueue[str | ProtocolError | None] = queue.SimpleQueue()
        self.stderr: list[str] = []
        stdout, stderr = self.process.stdout, self.process.stderr
        if stdout is None or stderr is None:
            raise ProtocolError("the process has no stdout/stderr pipes")
        threading.Thread(target=self._pump, args=(stdout, self.lines), daemon=True).start()
        self._stderr_reader = threading.Thread(target=self._drain, args=(stderr,), daemon=True)
        self._stderr_reader.start()

    @staticmethod
    def _pump(stream: IO[bytes], lines: queue.SimpleQueue[str | ProtocolError | None]) -> None:
        try:
            while line := stream.readline(MAX_LINE_BYTES):
                if not line.endswith(b"\n") and len(line) >= MAX_LINE_BYTES:
                    lines.put(ProtocolError(f"a line on stdout is longer than the limit of {MAX_LINE_BYTES} bytes "
                                            f"(MAX_LINE_BYTES); it starts {_text(line[:80])!r}"))
                    while (rest := stream.readline(MAX_LINE_BYTES)) and not rest.endswith(b"\n"):
                        pass  # the rest of the oversized line, dropped
                    continue
                lines.put(_text(line))
        except (OSError, ValueError):
            pass
        lines.put(None)

    def _drain(self, stream: IO[bytes]) -> None:
        try:
            while line := stream.readline(_STDERR_TAIL):
                self.stderr.append(_text(line))
                if len(self.stderr) > 200:
                    del self.stderr[:100]
        except (OSError, ValueError):
            pass

    def stderr_tail(self) -> str:
        text = "".join(self.stderr).strip()
        return text[-_STDERR_TAIL:]

    def send(self, message: Mapping[str, Any]) -> None:
        stdin = self.process.stdin
        if stdin is None:
            raise ProtocolError("the process has no stdin")
        try:
            stdin.write((json.dumps(message) + "\n").encode("utf-8"))
            stdin.flush()
        except (BrokenPipeError, OSError, ValueError) as exc:
            raise ProtocolError(self._exit_note(f"writing to the process failed ({exc})")) from exc

    def receive(self, timeout: float, limit: float | None = None) -> dict[str, Any]:
        """The next message, waiting ``timeout`` s (``limit``: the whole limit, for the message)."""
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            said = timeout if limit is None else limit
            raise ProtocolError(f"no answer within {said:g} s (process killed and restarted)") from None
        if line is None:
            raise ProtocolError(self._exit_note("the process closed its output"))
        if isinstance(line, ProtocolError):
            raise line
        try:
            message = json.loads(line)
        except json.JSONDecodeError:
            raise ProtocolError(f"not a JSON line on stdout: {line.strip()[:200]!r}") from None
        if not isinstance(message, dict) or not isinstance(message.get("type"), str):
            raise ProtocolError(f"not a protocol message (an object with a 'type'): {line.strip()[:200]!r}")
        return message

    def _exit_note(self, what: str) -> str:
        """``what`` with the exit status and the stderr tail: the process is waited for and its
        stderr read to the end first, so neither is lost to a race with a broken pipe."""
        try:
            code: int | None = self.process.wait(timeout=_EXIT_WAIT)
        except subprocess.TimeoutExpired:
            code = None
        else:
            self._stderr_reader.join(timeout=_EXIT_WAIT)
        tail = self.stderr_tail()
        return f"{what}; exit status {code}" + (f"; stderr: {tail}" if tail else "")

    def stop(self) -> None:
        if self.process.poll() is None:
            try:
                self.send({"type": "shutdown"})
                if self.process.stdin is not None:
                    self.process.stdin.close()
                self.process.wait(timeout=2)
            except (ProtocolError, subprocess.TimeoutExpired, OSError):
                self.process.kill()
                self.process.wait()
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            if stream is not None and not stream.closed:
                try:
                    stream.close()
                except OSError:
                    pass
