"""Figure scripts: each is drawn from the reference, used by a page, listed, and runs (with matplotlib)."""

import re
import runpy
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
SCRIPTS = sorted((DOCS / "figures").glob("*.py"))
PAGES = sorted(p for p in DOCS.rglob("*.md") if "_build" not in p.parts and p.parent.name != "figures")
PLOT = re.compile(r"\.\. plot:: (figures/[\w-]+\.py)")


def test_every_figure_script_imports_the_reference():
    assert len(SCRIPTS) >= 10
    for script in SCRIPTS:
        assert re.search(r"^from posenc_ref(\.\S+)? import ", script.read_text(encoding="utf-8"), re.M), script.name


def test_every_figure_is_on_a_page_and_every_plot_has_a_script():
    used = {m for page in PAGES for m in PLOT.findall(page.read_text(encoding="utf-8"))}
    scripts = {f"figures/{s.name}" for s in SCRIPTS}
    assert used == scripts, f"unused scripts {sorted(scripts - used)}, missing scripts {sorted(used - scripts)}"


def test_every_figure_is_listed_in_the_figures_readme():
    listing = (DOCS / "figures" / "README.md").read_text(encoding="utf-8")
    assert all(f"`{s.name}`" in listing for s in SCRIPTS)


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.stem)
def test_figure_script_runs(script):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    try:
        runpy.run_path(str(script), run_name="__main__")
        figures = [plt.figure(n) for n in plt.get_fignums()]
        assert figures and all(fig.axes for fig in figures)
    finally:
        plt.close("all")
