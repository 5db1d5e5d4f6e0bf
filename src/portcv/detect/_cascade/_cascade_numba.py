"""Cascade window evaluation compiled with Numba: the NumPy override's loops where the ``cpu``
extra is installed (stump stages; deeper trees keep the vectorized path).

Where the vectorized path runs each stage on every window still alive, these loops take one
window through its stages and stop at the first it fails, as OpenCV's ``runAt`` does: most
windows die in the first stages. The arithmetic is ``_NumpyStumps``' (and so the portable
version's), per window and tree:

- Haar: ``F`` = the merged corner lookups times their coefficients, summed in int64 and wrapped
  to int32 (the true ``F`` fits int32, so the residue modulo 2**32 is ``F``); ``g = F |F|`` in
  float64 (exact: ``|F| < 2**26.5``); left iff ``g < signed_thr2 * max(nf, 0)`` (one IEEE float64
  multiply, as the vectorized path's); the stage sum is the right leaves' sum plus the
  left-minus-right gains of the trees that went left, in int64 (exact integers);
- LBP: the 16 corners in uint32 arithmetic (every difference wrapped to uint32: the true block
  sums), the 8-bit code, the tree's leaf for that code from its 256-entry table.
"""

from __future__ import annotations

import numba
import numpy as np

from ...backends.numpy import NUMBA_OPTIONS


#: The blocks ``(bi, bj)`` the LBP code compares with the centre, its bits from the most
#: significant (OpenCV's order: clockwise from the top-left block).
CODE_BLOCKS = np.array([[0, 0], [1, 0], [2, 0], [2, 1], [2, 2], [1, 2], [0, 2], [0, 1]], np.int64)


@numba.njit(**NUMBA_OPTIONS)
def haar_windows(img32: np.ndarray, win: np.ndarray, nf: np.ndarray, status: np.ndarray, first_stage: int,
                 stage_trees: np.ndarray, stage_threshold: np.ndarray, right_sum: np.ndarray, offsets: np.ndarray,
                 coefs: np.ndarray, counts: np.ndarray, signed: np.ndarray, gains: np.ndarray) -> None:
    """``status[k]`` for windows ``win[k]`` (flat int64 offsets) through the stump stages whose
    trees are ``stage_trees[i]:stage_trees[i + 1]`` (stage ``first_stage + i``): 1 when every
    stage passes, else ``-s`` of the first failing stage ``s``."""
    n_stages = stage_threshold.shape[0]
    for k in range(win.shape[0]):
        w = win[k]
        scale = np.float64(max(nf[k], 0))
        result = np.int32(1)
        for i in range(n_stages):
            acc = right_sum[i]
            for t in range(stage_trees[i], stage_trees[i + 1]):
                total = np.int64(0)
                off, coef = offsets[t], coefs[t]
                for c in range(counts[t]):
                    total += np.int64(coef[c]) * np.int64(img32[w + off[c]])
                f = np.float64(np.int32(total))
                if f * abs(f) < signed[t] * scale:
                    acc += gains[t]
            if acc < stage_threshold[i]:
                result = np.int32(-(first_stage + i))
                break
        status[k] = result


@numba.njit(**NUMBA_OPTIONS)
def lbp_windows(img: np.ndarray, win: np.ndarray, status: np.ndarray, first_stage: int, stage_trees: np.ndarray,
                stage_threshold: np.ndarray, offsets: np.ndarray, luts: np.ndarray) -> None:
    """As :func:`haar_windows` for LBP stump stages: ``luts[t]`` is tree ``t``'s leaf per code."""
    n_stages = stage_threshold.shape[0]
    corner = np.empty(16, np.uint32)
    for k in range(win.shape[0]):
        w = win[k]
        result = np.int32(1)
        for i in range(n_stages):
            acc = np.int64(0)
            for t in range(stage_trees[i], stage_trees[i + 1]):
                off = offsets[t]
                for c in range(16):
                    corner[c] = img[w + off[c]]
                centre = _block(corner, 1, 1)
                code = 0
                for b in range(8):  # most significant bit first
                    code = (code << 1) | (1 if _block(corner, CODE_BLOCKS[b, 0], CODE_BLOCKS[b, 1]) >= centre else 0)
                acc += luts[t, code]
            if acc < stage_threshold[i]:
                result = np.int32(-(first_stage + i))
                break
        status[k] = result


@numba.njit(**NUMBA_OPTIONS)
def _block(corner: np.ndarray, bi: int, bj: int) -> np.uint32:
    """Block (bi, bj) of the 4x4 corner grid, its four corners combined modulo 2**32."""
    a = 4 * bj + bi
    return np.uint32(np.uint32(np.uint32(corner[a] - corner[a + 1]) - corner[a + 4]) + corner[a + 5])


@numba.njit(**NUMBA_OPTIONS)
def integral_rows(x: np.ndarray, out: np.ndarray, squared: bool) -> None:
    """``out`` (H+1, W+1) uint32, zero first row and column: the integral of ``x`` (H, W), or of
    its squares, every value and sum wrapping modulo 2**32 (as the portable version's uint32
    ``x * x`` and cumulative sums)."""
    h, w = x.shape
    for r in range(h):
        src, above, row = x[r], out[r], out[r + 1]
        running = np.uint32(0)
        row[0] = 0
        for c in range(w):
            v = np.uint32(src[c])
            if squared:
                v = np.uint32(v * v)
            running = np.uint32(running + v)
            row[c + 1] = np.uint32(running + above[c + 1])
