"""Every shell command the documentation shows runs, and prints what the documentation says it prints.

The commands are read at test time from the ``bash``/``sh``/``shell``/``console`` blocks of
README.md, docs/*.md, docs/lab/*.md and conformance/README.md. Each runs in a fresh temporary
directory (so the checkout's own pytest settings and modules are out of the way) with the
installed package first on ``PATH``, a copy of ``conformance/`` (the guide's commands name its
examples), and the guide's ``my_adapter.py`` written out from the guide itself.

* A ``console`` block shows ``$ command`` lines followed by their output; the output must be what
  the command prints, line for line, after one normalisation: run times (``0.35 s``) are not
  compared. A line ``...`` in the shown output stands for any number of lines.
* A command whose comment says ``exits 1`` must exit 1; every other command must exit 0.
* A few commands cannot run here, each for the reason :data:`SKIPPED` gives; a placeholder the
  reader fills in (``path/to/my_adapter.py``) is replaced by the guide's own file
  (:data:`PLACEHOLDERS`).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FENCE = re.compile(r"^(?P<indent> *)```(?P<lang>bash|console|shell|sh)\n(?P<body>.*?)^(?P=indent)```", re.S | re.M)
GUIDE_ADAPTER = re.compile(r"saved as `my_adapter\.py`:\n\n```python\n(.*?)```", re.S)
GUIDE_ENGINE = re.compile(r"saved as `my_engine\.py`:\n\n```python\n(.*?)```", re.S)
TIME = re.compile(r"\b\d+(?:\.\d+)? s\b")
# A narrow-float adapter's worst headroom depends on the CPU: NumPy's float32 sin/cos/exp run the
# machine's SIMD kernels (one example adapter shows 16.5 on one x86-64 CPU and 17.9 on another).
NARROW_HEADROOM = re.compile(r"(\((?:float32|float16|bfloat16)\): .*worst headroom )[0-9.e+-]+")

# (substring of the command, why it does not run in this test)
SKIPPED = (
    ("pip install", "installs packages; this test runs the package already installed"),
    ("python -m pytest", "the test suite itself (or a part of it) runs as the test suite"),
    ("python docs/build.py", "the docs build runs as its own CI step"),
    ("python docs/check_render.py", "the render check runs as its own CI step after the build"),
    ("golden generate", "rewrites the corpus, which only the corpus step may do"),
    ("run_frameworks.sh", "needs the framework environments (torch, JAX, ONNX Runtime)"),
    ("RESULTS_DIR", "needs results computed elsewhere (offline mode is tested in tests/test_runner.py)"),
)
# What the reader fills in -> the guide's own example, present in the temporary directory.
PLACEHOLDERS = {
    "path/to/my_adapter.py": "my_adapter.py",
    "my_pkg.adapter:ADAPTER": "my_adapter.py:ADAPTER",
    "--posenc-adapter=my_pkg.adapter:ADAPTER": "--posenc-adapter=my_adapter.py:ADAPTER",
    "my_expectations.toml": "conformance/examples/expectations.toml",
}


@dataclass(frozen=True)
class Command:
    source: str  # file:line
    text: str
    shown: tuple[str, ...] | None  # the output a console block shows, else None
    exit_status: int

    def __str__(self) -> str:
        return f"{self.source}: {self.text.splitlines()[0][:70]}"


def _split(body: str) -> list[tuple[int, str]]:
    """(line offset, command) for each command of a shell block: continuations and heredocs joined."""
    lines, commands, index = body.splitlines(), [], 0
    while index < len(lines):
        start, line = index, lines[index]
        if not line.strip() or line.lstrip().startswith("#"):
            index += 1
            continue
        text = [line]
        while text[-1].rstrip().endswith("\\") and index + 1 < len(lines):
            index += 1
            text.append(lines[index])
        heredoc = re.search(r"<<-?\s*'?(\w+)'?", text[0])
        if heredoc:
            while index + 1 < len(lines) and lines[index].strip() != heredoc.group(1):
                index += 1
                text.append(lines[index])
        commands.append((start, "\n".join(text)))
        index += 1
    return commands


def _console(body: str) -> list[tuple[int, str, tuple[str, ...]]]:
    """(line offset, command, shown output) for each ``$ `` line of a console block."""
    out: list[tuple[int, str, list[str]]] = []
    for offset, line in enumerate(body.splitlines()):
        if line.startswith("$ "):
            out.append((offset, line[2:], []))
        elif out:
            if out[-1][1].rstrip().endswith("\\") and not out[-1][2]:
                out[-1] = (out[-1][0], out[-1][1] + "\n" + line, [])
            else:
                out[-1][2].append(line)
    return [(offset, text, tuple(shown)) for offset, text, shown in out]


def documented_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "docs" / "lab").glob("*.md")),
            ROOT / "conformance" / "README.md"]


def documented_commands() -> list[Command]:
    commands = []
    for path in documented_files():
        text = path.read_text(encoding="utf-8")
        for match in FENCE.finditer(text):
            first = text.count("\n", 0, match.start("body")) + 1
            indent = len(match.group("indent"))
            body = "\n".join(line[indent:] for line in match.group("body").splitlines())
            where = path.relative_to(ROOT).as_posix()
            if match.group("lang") == "console":
                for offset, command, shown in _console(body):
                    commands.append(Command(f"{where}:{first + offset}", command, shown, _status(command)))
            else:
                for offset, command in _split(body):
                    commands.append(Command(f"{where}:{first + offset}", command, None, _status(command)))
    return commands


def _status(command: str) -> int:
    return 1 if re.search(r"#.*\bexits 1\b", command) else 0


def skip_reason(command: Command) -> str | None:
    for needle, reason in SKIPPED:
        if needle in command.text:
            return reason
    return None


def substitute(text: str) -> str:
    for placeholder in sorted(PLACEHOLDERS, key=len, reverse=True):
        text = text.replace(placeholder, PLACEHOLDERS[placeholder])
    return text


def matches(shown: tuple[str, ...], printed: list[str]) -> bool:
    """``printed`` equals ``shown`` line for line, a shown ``...`` standing for any run of lines."""
    def norm(line: str) -> str:
        return NARROW_HEADROOM.sub(r"\1<headroom>", TIME.sub("<time> s", line.rstrip()))

    want = [norm(line) for line in shown]
    got = [norm(line) for line in printed]
    while want and not want[-1]:
        want.pop()
    while got and not got[-1]:
        got.pop()

    def walk(w: int, g: int) -> bool:
        if w == len(want):
            return g == len(got)
        if want[w] == "...":
            return any(walk(w + 1, h) for h in range(g, len(got) + 1))
        return g < len(got) and got[g] == want[w] and walk(w + 1, g + 1)

    return walk(0, 0)


COMMANDS = documented_commands()


# One working directory per xdist worker for the whole session: a worker may run other modules' tests
# between two of these, and a module fixture would be rebuilt empty in between. Which worker runs which
# command is not fixed; a command that reads another's output runs that writer first (WRITTEN_BY_ANOTHER).
@pytest.fixture(scope="session")
def workdir(tmp_path_factory):
    work = tmp_path_factory.mktemp("documented-commands")
    shutil.copytree(ROOT / "conformance", work / "conformance",
                    ignore=shutil.ignore_patterns("__pycache__", "node_modules"))
    guide = (ROOT / "conformance" / "README.md").read_text(encoding="utf-8")
    adapter = GUIDE_ADAPTER.search(guide)
    assert adapter, "the conformance guide no longer shows the complete adapter saved as my_adapter.py"
    (work / "my_adapter.py").write_text(adapter.group(1), encoding="utf-8")
    engine = GUIDE_ENGINE.search(guide)
    assert engine, "the conformance guide no longer shows the model-level example saved as my_engine.py"
    (work / "my_engine.py").write_text(engine.group(1), encoding="utf-8")
    return work


def test_the_documents_show_commands():
    sources = {command.source.split(":")[0] for command in COMMANDS}
    assert {"README.md", "conformance/README.md"} <= sources
    assert any(command.shown for command in COMMANDS)


# Files a documented command reads that another documented command writes: the reader's test first runs
# the writer when the file is not there yet, so no test depends on which worker or order ran the writer.
WRITTEN_BY_ANOTHER = ("report.json",)


def run(command: Command, workdir: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env.pop("PYTHONPATH", None)
    return subprocess.run(["bash", "-c", substitute(command.text)], cwd=workdir, env=env, capture_output=True,
                          text=True, timeout=900, check=False)


def writes(command: Command, name: str) -> bool:
    return f"--report-json {name}" in command.text


def writer_of(name: str) -> Command:
    writers = [c for c in COMMANDS if writes(c, name) and not skip_reason(c)]
    assert writers, f"no documented command writes {name}, which a documented command reads"
    return writers[0]


@pytest.mark.parametrize("command", COMMANDS, ids=str)
def test_documented_command(command, workdir):
    reason = skip_reason(command)
    if reason:
        pytest.skip(reason)
    if "node " in command.text and shutil.which("node") is None:
        pytest.skip("needs Node.js")
    for name in WRITTEN_BY_ANOTHER:
        if name in command.text and not writes(command, name) and not (workdir / name).exists():
            writer = writer_of(name)
            wrote = run(writer, workdir)
            assert wrote.returncode == writer.exit_status, (
                f"{writer.source} (which writes {name}): {wrote.stderr[-2000:]}")
    done = run(command, workdir)
    printed = done.stdout + done.stderr
    assert done.returncode == command.exit_status, (
        f"{command.source}: exit status {done.returncode}, the docs expect {command.exit_status}\n{printed[-3000:]}")
    if command.shown is not None:
        assert matches(command.shown, done.stdout.splitlines()), (
            f"{command.source}: the docs show\n" + "\n".join(command.shown) + "\nbut the command printed\n"
            + done.stdout)


@pytest.mark.parametrize(("shown", "printed", "expected"), [
    (("a", "b 0.35 s"), ["a", "b 1.93 s"], True),
    (("a", "...", "z"), ["a", "b", "c", "z"], True),
    (("a", "b"), ["a", "c"], False),
    (("PASSED: 15 pass",), ["FAILED: 16 pass, 2 fail"], False),
    (("a",), ["a", "extra"], False),
])
def test_output_matching(shown, printed, expected):
    assert matches(shown, printed) is expected


def test_commands_are_split_as_a_shell_reads_them():
    body = "one --a \\\n    --b\n# a comment\ntwo <<'EOF'\nx\nEOF\nthree  # exits 1\n"
    commands = [text for _, text in _split(body)]
    assert commands == ["one --a \\\n    --b", "two <<'EOF'\nx\nEOF", "three  # exits 1"]
    assert _status(commands[2]) == 1 and _status(commands[0]) == 0
    assert _console("$ run it\nline 1\nline 2\n$ again\n") == [(0, "run it", ("line 1", "line 2")), (3, "again", ())]
