"""``--isolate``: an in-process adapter run in a child process, so native crashes stay its own.

An adapter that wraps native code can take the whole process with it: a segfault, an abort in
a C library (ggml aborts on a bad argument), ``os._exit``. :class:`IsolatedAdapter` loads the
adapter in a child Python process (one per adapter, started with ``multiprocessing``'s
``spawn``) and forwards ``supports``, ``run`` and ``error_category`` to it over a pipe. When
the child dies or runs past its per-case limit (``child_timeout``), that case is an ``error``
naming the exit status or signal (:class:`IsolatedCrash`), and the next case starts a fresh
child; the run goes on.

An exception raised by the adapter in the child comes back as an exception of the same type
name (a subclass of :class:`RemoteError`), carrying the category the adapter's own
``error_category`` gave it and the last frames of its traceback.
"""

from __future__ import annotations

import multiprocessing
import signal
import threading
from collections.abc import Mapping
from multiprocessing.connection import Connection
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from posenc_ref.runner.adapters import AdapterCrash, AdapterLoadError

DEFAULT_TIMEOUT: Final = 60.0
"""Seconds one call may take in the child (the runner lowers it to its own ``--timeout``)."""
START_TIMEOUT: Final = 120.0
"""Seconds the child may take to start and load the adapter."""
_FRAMES: Final = 5


class IsolatedCrash(AdapterCrash):
    """The isolated child died (a signal, ``os._exit``) or ran past its limit; it is restarted."""


class RemoteError(Exception):
    """An exception the adapter raised in the child (subclassed under its original type name)."""

    category: str | None = None
    category_note: str = ""
    remote_frames: list[str] = []


class RemoteBaseError(BaseException):
    """A ``BaseException`` that is not an ``Exception`` (``SystemExit``, ...) raised in the child."""

    category: str | None = None
    category_note: str = ""
    remote_frames: list[str] = []


class _Garbage:
    """A returned value the child could not turn into an array; ``numpy.asarray`` refuses it here too."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def __array__(self, *args: Any, **kwargs: Any) -> NDArray[Any]:
        raise ValueError(self.reason)


def _exit_text(code: int | None) -> str:
    if code is None:
        return "still running"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"


# --- the child -------------------------------------------------------------------------------

def _portable(value: Any) -> Any:
    """A returned output as something that pickles: an array, ``None``, or a :class:`_Garbage`."""
    if value is None:
        return None
    try:
        array = np.asarray(value)
    except BaseException as exc:  # adapter code: an output may fail even at conversion
        return _Garbage(f"{type(exc).__name__}: {exc}")
    if array.dtype.kind == "O":
        return _Garbage(f"an object array of {type(value).__name__}")
    return array


def _portable_outputs(returned: Any) -> Any:
    if isinstance(returned, Mapping):
        return {str(k): _portable(v) for k, v in returned.items()}
    if isinstance(returned, (tuple, list)):
        return [_portable(v) for v in returned]
    return _portable(returned)


def _raised(adapter: Any, exc: BaseException) -> tuple[str, str, bool, list[str], str | None, str]:
    from posenc_ref.runner.adapters import error_category
    from posenc_ref.runner.engine import describe_exception, exception_info

    kind, message, _ = describe_exception(exc)
    frames = list(exception_info(exc, _FRAMES)["frames"])
    category, note = None, ""
    if isinstance(exc, Exception):
        try:
            category = error_category(adapter, exc)
        except BaseException as mapper_exc:  # the mapper is adapter code too
            note = f"; error_category() raised {describe_exception(mapper_exc)[2]}"
    return kind, message, isinstance(exc, Exception), frames, category, note


def _serve(conn: Connection, spec: str, dtype: str | None) -> None:
    """The child's loop: load the adapter, then answer requests until told to stop."""
    from posenc_ref.runner.adapters import check_adapter, load_adapter, supports

    try:
        adapter = load_adapter(spec)
        if dtype and adapter.dtype != dtype:
            if not hasattr(adapter, "at_dtype"):
                raise AdapterLoadError(f"adapter {spec!r} computes in {adapter.dtype} and has no at_dtype()")
            adapter = check_adapter(adapter.at_dtype(dtype), f"{spec} at {dtype}")
        conn.send(("hello", {"name": str(adapter.name), "version": str(getattr(adapter, "version", "")),
                             "dtype": dict(adapter.dtype) if isinstance(adapter.dtype, Mapping) else adapter.dtype}))
    except BaseException as exc:  # adapter code: whatever it raised, the load failed
        conn.send(("load_error", str(exc) if isinstance(exc, AdapterLoadError) else f"{type(exc).__name__}: {exc}"))
        return
    while True:
        try:
            request = conn.recv()
        except (EOFError, OSError):
            return
        if request[0] == "close":
            return
        try:
            if request[0] == "supports":
                _, op, params, case_kind, inputs = request
                reply: tuple[Any, ...] = ("ok", supports(adapter, op, params, case_kind=case_kind, inputs=inputs))
            else:
                _, op, params, inputs = request
                reply = ("ok", _portable_outputs(adapter.run(op, params, inputs)))
        except BaseException as exc:  # adapter code: handed back to the runner, whatever it is
            reply = ("raised", *_raised(adapter, exc))
        try:
            conn.send(reply)
        except BaseException as exc:  # an answer that does not pickle
            conn.send(("raised", type(exc).__name__, f"the answer could not be sent back: {exc}", True, [], None, ""))


# --- the runner's side -----------------------------------------------------------------------

class IsolatedAdapter:
    """The adapter ``spec`` (a ``module:object`` or ``file.py:object``) run in a child process.

    Parameters
    ----------
    spec
        The adapter as named on the command line.
    dtype
        Run it at this dtype (through its ``at_dtype``), or ``None``.
    timeout
        Seconds one call may take in the child before it is killed and restarted
        (``child_timeout``; the runner lowers it to its own per-case limit).

    Raises
    ------
    AdapterLoadError
        The child could not load the adapter (or died while loading it).
    """

    def __init__(self, spec: str, *, dtype: str | None = None, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.spec = spec
        self.requested_dtype = dtype
        self.child_timeout = float(timeout)
        self.restarts = 0
        self._context = multiprocessing.get_context("spawn")
        self._lock = threading.Lock()
        self._process: Any = None
        self._conn: Connection | None = None
        hello = self._start()
        self.name = f"{hello['name']}"
        self.version = hello["version"]
        self.dtype = hello["dtype"]

    def _start(self) -> dict[str, Any]:
        parent, child = self._context.Pipe()
        process = self._context.Process(target=_serve, args=(child, self.spec, self.requested_dtype), daemon=True,
                                        name=f"posenc-isolated {self.spec}")
        process.start()
        child.close()
        try:
            if not parent.poll(START_TIMEOUT):
                raise AdapterLoadError(f"--isolate: the child did not load {self.spec!r} within {START_TIMEOUT:g} s")
            kind, value = parent.recv()
        except (EOFError, OSError):
            process.join(5)
            raise AdapterLoadError(f"--isolate: the child died while loading {self.spec!r} "
                                   f"({_exit_text(process.exitcode)})") from None
        except AdapterLoadError:
            process.kill()
            raise
        if kind != "hello":
            process.join(5)
            raise AdapterLoadError(str(value))
        self._process, self._conn = process, parent
        return dict(value)

    def _stop(self) -> None:
        if self._process is not None:
            if self._process.is_alive():
                self._process.kill()
            self._process.join(5)
        if self._conn is not None:
            self._conn.close()
        self._process, self._conn = None, None

    def _request(self, message: tuple[Any, ...]) -> Any:
        with self._lock:
            if self._conn is None or self._process is None or not self._process.is_alive():
                if self._process is not None:
                    self._stop()
                    self.restarts += 1
                self._start()
            conn, process = self._conn, self._process
            if conn is None or process is None:
                raise IsolatedCrash("the isolated process did not start")
            try:
                conn.send(message)
                if not conn.poll(self.child_timeout):
                    self._stop()
                    self.restarts += 1
                    raise IsolatedCrash(f"no answer within {self.child_timeout:g} s "
                                        "(the isolated process was killed and is restarted)")
                reply = conn.recv()
            except (EOFError, OSError, BrokenPipeError):
                process.join(5)
                code = process.exitcode
                self._stop()
                self.restarts += 1
                raise IsolatedCrash(f"the isolated process died ({_exit_text(code)}); it is restarted") from None
        if reply[0] == "ok":
            return reply[1]
        _, kind, text, is_exception, frames, category, note = reply
        base = RemoteError if is_exception else RemoteBaseError
        error = type(kind, (base,), {"__module__": "posenc_ref.runner.isolate"})(text)
        error.category, error.category_note, error.remote_frames = category, note, list(frames)
        raise error

    def supports(self, op: str, params: Mapping[str, Any], case_kind: str = "valid",
                 inputs: Mapping[str, NDArray[Any]] | None = None) -> bool | str:
        """The isolated adapter's own verdict (capabilities, ``supports``, dtype mapping)."""
        reason = self._request(("supports", op, dict(params), case_kind, dict(inputs or {})))
        return True if reason is None else str(reason)

    def run(self, op: str, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> Any:
        return self._request(("run", op, dict(params), dict(inputs)))

    def error_category(self, exc: BaseException) -> str | None:
        """The category the adapter's own mapper gave in the child; ``None`` for crashes."""
        return getattr(exc, "category", None) if isinstance(exc, RemoteError) else None

    def interrupt(self) -> None:
        """Kill the child (the runner's clock ran out); the next call starts a fresh one."""
        process = self._process
        if process is not None and process.is_alive():
            process.kill()

    def at_dtype(self, dtype: str) -> IsolatedAdapter:
        """The same adapter at ``dtype``, in a fresh child."""
        return IsolatedAdapter(self.spec, dtype=dtype, timeout=self.child_timeout)

    def close(self) -> None:
        """Stop the child."""
        with self._lock:
            if self._conn is not None:
                try:
                    self._conn.send(("close",))
                except (OSError, BrokenPipeError):
                    pass
            self._stop()
