r"""Integer facts about relative positions, proved exhaustively over a finite domain.

Sympy is the wrong tool for index bookkeeping; these claims compare, entry by entry, what an
index trick reads with what direct indexing reads, for *every* size in a stated range. The
entries are distinct integers, so equality means the same element was read, not an
accidental coincidence of values.
"""

from __future__ import annotations

import numpy as np
import sympy

from posenc_ref.derivations._claim import Claim, Derivation
from posenc_ref.transformer_xl import direct_index, rel_shift, shift_row_distances

_MAX_Q, _MAX_K = 6, 9


def _ids(tq: int, rows: int) -> np.ndarray:
    return np.arange(tq * rows, dtype=np.float64).reshape(tq, rows) + 1.0


def _reads() -> tuple[list[int], list[int]]:
    """The entries each shift reads on its valid region, and what direct indexing reads there."""
    shifted: list[int] = []
    direct: list[int] = []
    for variant in ("transformer_xl", "xlnet"):
        for tq in range(1, _MAX_Q + 1):
            for tk in range(tq, _MAX_K + 1):
                rows = shift_row_distances(tq, tk, variant=variant)
                x = _ids(tq, rows.size)
                got, valid = rel_shift(x, variant=variant, k_len=tk)
                # direct indexing by definition: the column whose distance is m + i - j, queries
                # being the last Tq of the Tk positions (memory first)
                column = {int(distance): c for c, distance in enumerate(rows)}
                mask = valid.astype(bool)
                want = np.zeros((tq, tk))
                for i, j in zip(*np.nonzero(mask)):
                    want[i, j] = x[i, column[tk - tq + i - j]]
                shifted += got[mask].astype(int).tolist()
                direct += want[mask].astype(int).tolist()
    return shifted, direct


def _shift() -> Derivation:
    shifted, direct = _reads()
    return Derivation(sympy.Matrix(shifted), sympy.Matrix(direct),
                      {"Tq, Tk": f"1 <= Tq <= {_MAX_Q}, Tq <= Tk <= {_MAX_K}, both shift variants"},
                      lambda e: e,
                      note="exhaustive: every entry each shift reads on its valid region is the entry direct "
                           "indexing reads (distinct integer entries)")


def _shift_tie_back() -> None:
    # Outside its region the Transformer-XL shift reads zeros or wrapped rows, never the row of
    # the (negative) distance a bidirectional layer needs: the espnet bug of using it there.
    for tq, tk in ((3, 3), (4, 7), (6, 9)):
        distances = np.arange(tk - 1, -tq, -1)  # every distance a bidirectional layer needs
        x = _ids(tq, distances.size)
        got, valid = rel_shift(x[:, :tk], variant="transformer_xl", k_len=tk)  # XL builds only tk rows
        needed = direct_index(x, distances, np.arange(tk - tq, tk), np.arange(tk))
        outside = ~valid.astype(bool)
        assert outside.any() and (got[outside] != needed[outside]).all()
        np.testing.assert_array_equal(got[~outside], needed[~outside])


SHIFT = Claim(
    name="relative.shift_equals_direct_indexing",
    title="Both pad-and-reshape shifts equal direct indexing on their valid regions",
    proof=(
        (r"Direct indexing: query $i$ against key $j$ reads the relative row of its distance ($c$ clamps, $m$ is the memory length):",
         r"\mathrm{direct}(BD)_{ij} = BD_{i,\,c(m + i - j)}"),
        (r"Pad-and-reshape: padding one zero column, reshaping and dropping a row moves each entry to a fixed position, a function $\phi$ of $(i, j)$ and the sizes only:",
         r"\mathrm{shift}(BD)_{ij} = BD_{\phi(i, j)}"),
        (r"The claim is $\phi(i, j) = (i,\ c(m + i - j))$ on the valid region. This is integer bookkeeping, so it is checked entry by entry: $BD$ filled with distinct integers, every size in the stated range:",
         r"\phi(i, j) = \big(i,\ c(m + i - j)\big)\quad\text{for } j \le m + i \text{ (Transformer-XL), every } j \text{ (XLNet)}"),
    ),
    statement=r"\mathrm{shift}(BD)_{ij} = BD_{i,\,c(m + i - j)}\ \text{for } j \le m + i"
              r" \text{ (Transformer-XL) and every } j \text{ (XLNet)}",
    source="Dai et al. 2019 (Transformer-XL), arXiv:1901.02860, appendix B; Yang et al. 2019 (XLNet) rel_shift",
    derive=_shift,
    tie_back=_shift_tie_back,
    ops=("transformer_xl.rel_shift",),
    cases=("transformer_xl.rel_shift.transformer_xl.mem2.tq3.tk5", "transformer_xl.rel_shift.xlnet.bi.tq3.tk5"),
)

CLAIMS = (SHIFT,)
