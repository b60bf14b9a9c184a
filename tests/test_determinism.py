"""Spec §1.5: results the spec decides never go through BLAS, whose rounding depends on the
CPU kernel and the thread count. The sans-I/O core (``codec/``) is scanned for
matrix products, ``np.dot``, ``np.linalg`` and ``einsum``; the stated-order helpers are
pinned to their formulas."""

from __future__ import annotations

import ast
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from posewire.codec import morph
from posewire.codec.ieee import SparseTable, exact_pseudo_inverse, ordered_norm, ordered_norm1, ordered_sum

CODEC = Path(__file__).resolve().parent.parent / "codec"
_BLAS_NAMES = {"linalg", "einsum", "dot", "matmul", "vdot", "inner", "tensordot", "lstsq", "pinv"}


def _blas_uses(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.BinOp | ast.AugAssign) and isinstance(node.op, ast.MatMult):
            found.append(f"{path.name}:{node.lineno} @")
        elif isinstance(node, ast.Attribute) and node.attr in _BLAS_NAMES:
            found.append(f"{path.name}:{node.lineno} .{node.attr}")
        elif isinstance(node, ast.ImportFrom):
            # ``from numpy.linalg import pinv``, ``from numpy import dot``: the names come in
            # bare, so the import itself is the use (a module path through linalg is one too)
            module = node.module or ""
            for alias in node.names:
                if alias.name in _BLAS_NAMES or "linalg" in module.split("."):
                    found.append(f"{path.name}:{node.lineno} from {module} import {alias.name}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if "linalg" in alias.name.split("."):
                    found.append(f"{path.name}:{node.lineno} import {alias.name}")
    return found


def test_codec_never_calls_blas() -> None:
    uses = [use for path in sorted(CODEC.glob("*.py")) for use in _blas_uses(path)]
    assert uses == []


def test_the_scan_finds_blas(tmp_path: Path) -> None:
    # the scan itself can fail: a file with each form is caught
    sample = tmp_path / "sample.py"
    sample.write_text("import numpy as np\nx = a @ b\ny = np.linalg.norm(a)\nz = np.einsum('i,i', a, a)\n")
    assert len(_blas_uses(sample)) == 3


@pytest.mark.parametrize("source", [
    "from numpy.linalg import pinv\n", "from numpy.linalg import norm as length\n",
    "from numpy import dot\n", "from numpy import linalg\n", "import numpy.linalg\n",
    "import numpy.linalg as la\n", "from scipy.linalg import lstsq\n", "from numpy import einsum as e\n",
])
def test_the_scan_finds_blas_brought_in_by_import(tmp_path: Path, source: str) -> None:
    # a BLAS routine imported by name is called without an attribute: the import is caught
    sample = tmp_path / "sample.py"
    sample.write_text(source + "x = 1\n")
    assert len(_blas_uses(sample)) == 1


def test_the_scan_leaves_other_imports(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("import math\nfrom numpy import asarray, sum as total\nfrom .ieee import ordered_sum\n")
    assert _blas_uses(sample) == []


finite = st.floats(-1e6, 1e6, allow_nan=False)


@given(arrays(np.float64, (5, 4), elements=finite))
def test_ordered_sum_is_left_to_right(values: np.ndarray) -> None:
    expected = [((((0.0 + row[0]) + row[1]) + row[2]) + row[3]) for row in values.tolist()]
    assert ordered_sum(values).tolist() == expected


@given(arrays(np.float64, (5, 3), elements=finite))
@example(np.full((5, 3), 1.25527525e-307))  # tiny: the squares underflow (make fuzz)
def test_ordered_norm_is_the_stated_formula(values: np.ndarray) -> None:
    # where no square leaves the normal range, exactly the stated formula; beyond it the
    # true length (spec §1.5), in both the batch and the float helper
    for row, got in zip(values.tolist(), ordered_norm(values).tolist(), strict=True):
        x, y, z = row
        if all(v == 0.0 or 2.0**-500 <= abs(v) <= 2.0**500 for v in row):
            assert got == float(np.sqrt(x * x + y * y + z * z))
        else:
            assert got == pytest.approx(math.hypot(x, y, z), rel=4e-16)
        assert ordered_norm1((x, y, z)) == got


@pytest.mark.parametrize("scale", [1e300, 1e-300, 5e-324, 1e308])
def test_extreme_lengths_are_true_lengths(scale: float) -> None:
    # spec §1.5: no overflow to inf, no underflow to 0 for finite non-zero vectors
    v = np.array([[scale, scale, 0.0], [0.0, 0.0, scale]])
    got = ordered_norm(v)
    assert np.isfinite(got).all() and (got > 0).all()
    assert got[0] == pytest.approx(math.hypot(scale, scale), rel=4e-16)
    assert got[1] == scale


@given(arrays(np.float64, (3, 52), elements=st.floats(0.0, 1.0)))
def test_face_solve_is_the_ordered_dense_sum(weights: np.ndarray) -> None:
    # leaving out zero entries changes nothing: the dense sum in channel order, term by term
    table = morph._SOLVE
    dense = np.zeros((weights.shape[0], table.shape[1]))
    for c in range(table.shape[0]):
        dense = dense + weights[:, c:c + 1] * table[c]
    np.testing.assert_array_equal(SparseTable(table).apply(weights), dense)
    assert SparseTable(table).apply1(weights[0].tolist()) == dense[0].tolist()


def test_exact_pseudo_inverse_is_a_left_inverse() -> None:
    gains = [[Fraction(repr(g)) for g in row] for row in morph._GAINS.tolist()]
    inverse = exact_pseudo_inverse(gains)
    used = [j for j in range(len(gains[0])) if any(row[j] for row in gains)]
    for a in used:
        for b in used:
            value = sum((inverse[a][i] * gains[i][b] for i in range(len(gains))), Fraction(0))
            assert value == (1 if a == b else 0)
    # the float table is that exact table rounded once per entry
    assert morph._SOLVE.T.tolist() == [[float(x) for x in row] for row in inverse]
