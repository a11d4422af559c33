"""Sphinx directives that write the parts of a scheme page the code and the registry already hold.

Nothing these directives show is typed into a page, so nothing on a page can go stale:

``{ops-table} PATTERN``
    The registered ops whose name matches ``PATTERN`` (fnmatch): a table of op, inputs and outputs
    (dtype, tolerance class), then every reference function's signature read from the function
    itself with :func:`inspect.signature`.

``{case-table} PATTERN``
    Every golden case of those ops, from :data:`posenc_ref.registry.OPS`: one collapsed table per
    op (case id, kind, comment), under the command that prints the same list in a terminal.

``{signature} DOTTED.NAME``
    One function's signature (a helper that is not an op), read from the function.

``{spec-source} DOTTED.NAME``
    The source of one function of the package, found by its importable name. A name that does not
    exist stops the build (an :class:`~sphinx.errors.ExtensionError`, whatever the warning policy).
"""

from __future__ import annotations

import fnmatch
import html
import importlib
import inspect
import textwrap
from collections.abc import Callable, Sequence
from typing import Any

from docutils import nodes
from docutils.parsers.rst import Directive
from sphinx.errors import ExtensionError

SIGNATURE_WIDTH = 72


def matching_ops(pattern: str) -> list[Any]:
    """The registry's ops whose name matches ``pattern``, in registry order (at least one)."""
    from posenc_ref.registry import OPS

    ops = [op for op in OPS if fnmatch.fnmatch(op.name, pattern)]
    if not ops:
        raise ExtensionError(f"no registered op matches {pattern!r} (see `posenc-ref list`)")
    return ops


def signature_text(function: Callable[..., Any]) -> str:
    """``name(a, b, /, *, c=1.0)`` without annotations, wrapped to :data:`SIGNATURE_WIDTH` columns."""
    signature = inspect.signature(function)
    bare = signature.replace(parameters=[p.replace(annotation=p.empty) for p in signature.parameters.values()],
                             return_annotation=signature.empty)
    one_line = f"{function.__name__}{bare}"
    if len(one_line) <= SIGNATURE_WIDTH:
        return one_line
    inner = str(bare)[1:-1]
    body = textwrap.fill(inner, width=SIGNATURE_WIDTH, initial_indent="    ", subsequent_indent="    ",
                         break_long_words=False, break_on_hyphens=False)
    return f"{function.__name__}(\n{body}\n)"


def resolve(dotted: str) -> Any:
    """The object named ``package.module.name``; an :class:`ExtensionError` when there is none."""
    module_name, _, attribute = dotted.rpartition(".")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ExtensionError(f"cannot import {module_name!r} for {dotted!r}: {exc}") from exc
    if not hasattr(module, attribute):
        raise ExtensionError(f"{module_name} has no {attribute!r}; the page embeds {dotted} by name, "
                             f"so the function must exist before the docs build")
    return getattr(module, attribute)


def _literal(text: str, language: str = "python") -> nodes.literal_block:
    block = nodes.literal_block(text, text)
    block["language"] = language
    return block


def _table(header: Sequence[str], rows: Sequence[Sequence[nodes.Node | str]], widths: Sequence[int]) -> nodes.table:
    table = nodes.table(classes=["posenc-generated"])
    group = nodes.tgroup(cols=len(header))
    table += group
    for width in widths:
        group += nodes.colspec(colwidth=width)

    def row(cells: Sequence[nodes.Node | str]) -> nodes.row:
        out = nodes.row()
        for cell in cells:
            entry = nodes.entry()
            paragraph = nodes.paragraph()
            paragraph += nodes.Text(cell) if isinstance(cell, str) else cell
            entry += paragraph
            out += entry
        return out

    head = nodes.thead()
    head += row(header)
    group += head
    body = nodes.tbody()
    for cells in rows:
        body += row(cells)
    group += body
    return table


def _code(text: str) -> nodes.literal:
    return nodes.literal(text, text)


def _outputs(op: Any) -> nodes.inline:
    inline = nodes.inline()
    for index, output in enumerate(op.outputs):
        if index:
            inline += nodes.Text("; ")
        inline += _code(output.name)
        inline += nodes.Text(f" ({output.dtype}, ")
        inline += _code(output.tolerance)
        inline += nodes.Text(")")
    return inline


def _inputs(op: Any) -> nodes.Node | str:
    if not op.inputs:
        return "none (parameters only)"
    inline = nodes.inline()
    for index, name in enumerate(op.inputs):
        if index:
            inline += nodes.Text(", ")
        inline += _code(name)
    return inline


class OpsTable(Directive):
    """``{ops-table} PATTERN``: the ops, their inputs and outputs, and their functions' signatures."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        ops = matching_ops(self.arguments[0])
        rows = [[_code(op.name), _inputs(op), _outputs(op)] for op in ops]
        functions: list[Callable[..., Any]] = []
        for op in ops:
            if op.function not in functions:
                functions.append(op.function)
        signatures = "\n\n".join(f"# {f.__module__}\n{signature_text(f)}" for f in functions)
        intro = nodes.paragraph()
        intro += nodes.Text("Signatures, read from the functions when the site is built:")
        return [_table(["op", "inputs", "outputs (dtype, tolerance class)"], rows, [22, 28, 50]), intro,
                _literal(signatures)]


def _kind(case: Any) -> str:
    return f"error: {case.error}" if case.error else case.kind.replace("_", " ")


class CaseTable(Directive):
    """``{case-table} PATTERN``: every golden case of the matching ops, one collapsed table per op."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        pattern = self.arguments[0]
        ops = matching_ops(pattern)
        intro = nodes.paragraph()
        intro += nodes.Text(f"{sum(len(op.cases) for op in ops)} golden cases, from the registry; the same list in "
                            "a terminal: ")
        intro += _code(f"posenc-ref list --cases --op '{pattern}'")
        intro += nodes.Text(". Open an op to see its cases.")
        out: list[nodes.Node] = [intro]
        for op in ops:
            kinds = {kind: sum(c.kind == kind for c in op.cases)
                     for kind in ("normal", "edge", "long_position", "error")}
            counts = ", ".join(f"{n} {kind.replace('_', ' ')}" for kind, n in kinds.items() if n)
            summary = f"<code>{html.escape(op.name)}</code>: <code>{html.escape(op.summary)}</code> ({counts})"
            out.append(nodes.raw("", f'<details class="posenc-cases"><summary>{summary}</summary>', format="html"))
            # The comment is the manifest's one-line string, shown verbatim (its ASCII formulas are
            # not TeX, so they are set as code, never as prose).
            rows = [[_code(case.id), _kind(case), _code(case.comment)] for case in op.cases]
            out.append(_table(["case id", "kind", "why it exists (the manifest's comment)"], rows, [45, 15, 40]))
            out.append(nodes.raw("", "</details>", format="html"))
        return out


class Signature(Directive):
    """``{signature} DOTTED.NAME``: one function's signature, read from the function."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        return [_literal(signature_text(resolve(self.arguments[0])))]


class SpecSource(Directive):
    """``{signature} DOTTED.NAME``
    One function's signature (a helper that is not an op), read from the function.

``{spec-source} DOTTED.NAME``: the source of one function, found by name (missing: the build stops)."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        dotted = self.arguments[0]
        source = textwrap.dedent(inspect.getsource(resolve(dotted))).rstrip()
        block = _literal(source)
        caption = nodes.caption(dotted, "", _code(dotted))
        container = nodes.container("", caption, block, classes=["literal-block-wrapper"], literal_block=True)
        return [container]


def setup(app: Any) -> dict[str, Any]:
    app.add_directive("ops-table", OpsTable)
    app.add_directive("case-table", CaseTable)
    app.add_directive("signature", Signature)
    app.add_directive("spec-source", SpecSource)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
