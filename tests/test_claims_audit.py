"""The numbers quoted in docs/claims.md are recomputed from the reference (a stale page fails)."""

import math
from pathlib import Path

import numpy as np
import pytest

from posenc_ref.sinusoidal import sinusoidal_frequencies, sinusoidal_table

PAGE = (Path(__file__).resolve().parent.parent / "docs" / "claims.md").read_text(encoding="utf-8")


def kernel(offsets, dim):
    total = np.zeros(len(offsets))
    for w in sinusoidal_frequencies(dim=dim):
        total += np.cos(np.asarray(offsets, dtype=np.float64) * w)
    return total


def quoted(value, digits):
    text = f"{value:.{digits}f}"
    assert text in PAGE, f"docs/claims.md should quote {text}"


def test_longest_wavelength():
    quoted(2 * math.pi / sinusoidal_frequencies(dim=512)[-1], 2)
    quoted(2 * math.pi * 10000, 2)


def test_kernel_is_not_monotone_nor_lorentzian():
    k = np.arange(2049)
    normalised = kernel(k, 512) / 256
    assert f"first increases at $\\delta = {int(np.argmax(np.diff(normalised) > 0)) + 1}$" in PAGE
    quoted(normalised[512], 4)
    quoted(normalised.min(), 4)
    assert f"at $\\delta = {int(np.argmin(normalised))}$" in PAGE
    gap = np.abs(normalised - 1 / (1 + (k / 32) ** 2))
    quoted(gap.max(), 4)
    assert f"(at $\\delta = {int(np.argmax(gap))}$)" in PAGE
    quoted(normalised[32], 4)


@pytest.mark.parametrize("dim,digits", [(512, 4), (2, None), (4, None)])
def test_nearest_encodings(dim, digits):
    k = np.arange(1, 10**6)
    distance = np.sqrt(np.maximum(dim - 2 * kernel(k, dim), 0))
    i = int(np.argmin(distance))
    if digits:
        quoted(distance[i], digits)
    else:
        assert f"{distance[i]:.4e}" in PAGE, f"{distance[i]:.4e}"
    assert f"$k = {k[i]}$" in PAGE


def test_columns_are_not_orthogonal():
    table = sinusoidal_table(np.arange(512), dim=512)
    gram = table.T @ table / 512
    quoted(np.abs(gram - np.diag(np.diag(gram))).max(), 4)


def test_frequencies_fall_with_the_dimension():
    from posenc_ref import sinusoidal_frequencies

    shown = sinusoidal_frequencies(dim=8).tolist()
    assert f"`sinusoidal_frequencies(dim=8)` is `{shown}`" in PAGE
    assert all(a > b for a, b in zip(shown, shown[1:]))
