"""The runner's one timeout: cases judged back to back on a watched helper thread
(:func:`run_batch`), and what an exception from adapter code is reported as.

Part of :mod:`posenc_ref.runner.engine`, which re-exports everything public here.
"""

from __future__ import annotations

import threading
import time
import traceback
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

from posenc_ref.runner._engine_results import Result
from posenc_ref.runner.adapters import AdapterCrash


class AdapterTimeout(Exception):
    """An adapter call ran past the per-case timeout."""


GRACE: Final = 2.0
"""Seconds the runner's clock gives an adapter with its own per-call limit (a child process)
beyond that limit, so the adapter kills and restarts its child before the runner abandons it."""


def reconcile_timeout(adapter: Any, timeout: float | None) -> float | None:
    """The runner's per-case limit for ``adapter``, reconciled with the adapter's own.

    An adapter that runs cases in a child process (``subprocess:``, ``--isolate``) has its own
    per-case limit in ``child_timeout``: it kills and restarts the child past it, which is the
    clean way out of a stuck case. The runner lowers that limit to its own ``timeout`` and
    watches at the adapter's limit plus ``GRACE``, so the child's limit always acts first.
    """
    own = getattr(adapter, "child_timeout", None)
    if not isinstance(own, (int, float)) or isinstance(own, bool):
        return timeout
    if timeout is not None:
        own = min(float(own), timeout)
        adapter.child_timeout = own
    return float(own) + GRACE


Judge = Callable[[Mapping[str, Any]], list[Result]]


def run_batch(judge: Judge, entries: list[Mapping[str, Any]], timeout: float | None,
              failed: Callable[[Mapping[str, Any], str], list[Result]],
              progress: Callable[[int, int, str], None] | None = None,
              on_timeout: Callable[[], None] | None = None) -> list[Result]:
    """Judge every entry on one helper thread, watched by this one: the runner's one timeout.

    Handing every case to a thread and back costs more than small cases take, so the helper
    thread runs the cases back to back while this thread only watches the clock (``timeout``
    seconds per case; ``None``: no limit). Adapter code always runs on the helper thread, so a
    ``KeyboardInterrupt`` there is the adapter's, never the user's.

    * A case running past ``timeout`` is recorded through ``failed`` ("timed out after ..."),
      ``on_timeout`` is called (it may kill a child process), the thread is abandoned (Python
      cannot kill it) and a fresh thread goes on from the next case.
    * An exception escaping ``judge`` is the runner's own (``judge`` contains adapter code): it
      is recorded at once through ``failed`` as an internal error naming its type and message,
      and the run goes on.
    """
    per_case: list[list[Result] | None] = [None] * len(entries)
    lock = threading.Lock()  # orders "a case finished" against "that case timed out"
    start = 0
    while start < len(entries):
        current = {"index": start, "since": time.monotonic()}
        finished = threading.Event()
        cancelled = threading.Event()

        def work(begin: int, current: dict[str, float], finished: threading.Event,
                 cancelled: threading.Event) -> None:
            try:
                for i in range(begin, len(entries)):
                    with lock:
                        if cancelled.is_set():
                            return
                        current["index"], current["since"] = i, time.monotonic()
                    if progress:
                        progress(i + 1, len(entries), str(entries[i]["id"]))
                    try:
                        results = judge(entries[i])
                    except BaseException as exc:  # the runner's own failure: say what it is, at once
                        results = failed(entries[i], "internal error of the runner (not the adapter's): "
                                                     + describe_exception(exc)[2])
                    with lock:
                        if cancelled.is_set():
                            return
                        per_case[i] = results
            finally:
                finished.set()

        threading.Thread(target=work, args=(start, current, finished, cancelled), daemon=True,
                         name="posenc-adapter").start()
        tick = 0.05 if timeout is None else min(0.05, timeout)
        while not finished.wait(tick):
            if timeout is None:
                continue
            with lock:
                index = int(current["index"])
                if time.monotonic() - current["since"] > timeout and per_case[index] is None:
                    cancelled.set()
                    per_case[index] = failed(entries[index], f"timed out after {timeout:g} s")
                    start = index + 1
                    break
        else:
            start = len(entries)
        if cancelled.is_set() and on_timeout is not None:
            on_timeout()
    return [r for results in per_case for r in (results or [])]


def describe_exception(exc: BaseException) -> tuple[str, str, str]:
    """``(type name, message, "Type: message")`` of any exception, even one whose ``str()`` raises."""
    kind = type(exc).__name__
    try:
        message = str(exc)
    except BaseException as inner:  # an adapter's exception may fail even at being printed
        message = f"<str() of the exception raised {type(inner).__name__}>"
    return kind, message, f"{kind}: {message}" if message else kind


def exception_info(exc: BaseException, frames: int = 5) -> dict[str, Any]:
    """The type, message and last ``frames`` frames of an exception, for the report of an ``error``."""
    kind, message, _ = describe_exception(exc)
    remote = getattr(exc, "remote_frames", None)  # raised in an isolated child (--isolate)
    try:
        stack = traceback.extract_tb(exc.__traceback__)[-frames:]
        where = [f"{Path(f.filename).name}:{f.lineno} in {f.name}: {(f.line or '').strip()}" for f in stack]
    except Exception:  # a broken traceback must not hide the error itself
        where = []
    if isinstance(remote, list) and remote:
        where = [str(frame) for frame in remote[-frames:]]
    elif isinstance(exc, AdapterCrash):
        where = []  # raised by the runner's side of a child process: its frames are not the adapter's
    return {"type": kind, "message": message, "frames": where}
