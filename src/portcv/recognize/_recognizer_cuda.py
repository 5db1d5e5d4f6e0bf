"""CuPy overrides of the recognizer's kernels, launching the CUDA kernels of ``_recognizer_cuda.cu``.

``_lbp.py``, ``_histograms.py`` and ``_chi_square.py`` hold the portable versions (the
reference); each kernel here computes the same integers (the CUDA source says why, step by
step), which the suite's every-backend tests check bit for bit.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from ._chi_square import chi_square_kernel
from ._histograms import region_histograms_kernel
from ._lbp import lbp_kernel, mapping_table, reach, sample_offsets

#: CUDA's largest grid.y / grid.z.
_GRID_YZ = 65535
#: Histogram bins per region that shared memory holds (48 KiB of int32 counts); more: portable.
SHARED_BINS = 12288
#: Shared histograms per block at most (one per warp of 8).
_COPIES = 8
_CTYPES = {"uint8": "unsigned char", "uint16": "unsigned short", "int32": "int"}


@functools.lru_cache(maxsize=32)
def _label_table(P: int, method: str, device_id: int) -> Any:
    # Cached by (P, method), not through device_constant: hashing its 2**P values on every call
    # would cost more than the kernel.
    import cupy

    return cupy.asarray(mapping_table(P, method))


@lbp_kernel.override("cupy", supports="every input (one CUDA thread per label: exact 64-bit integer sums)")
def _lbp_cupy(image: Any, *, P: int, R: float, method: str, border: str) -> Any:
    import cupy

    from ..backends.cupy import cuda_function, current_device_id, device_constant

    image = cupy.ascontiguousarray(image)
    H, W = image.shape[-2], image.shape[-1]
    lead = tuple(image.shape[:-2])
    if border == "constant":
        origin, Ho, Wo = 0, H, W
    else:
        origin = math.ceil(R)
        Ho, Wo = H - 2 * origin, W - 2 * origin
    out = cupy.empty(lead + (Ho, Wo), dtype=cupy.uint16)
    frames = math.prod(lead)
    if out.size == 0:
        return out
    lut = np.uint64(0) if method == "default" else _label_table(P, method, current_device_id())
    points = device_constant(sum(sample_offsets(P, R), ()))  # P rows of (r0, c0, wr, wc)
    src = image.reshape(frames, H, W)
    dst = out.reshape(frames, Ho, Wo)
    fn = cuda_function(__name__, f"portcv_lbp_labels<{P}>")
    rows_per_launch = 8 * _GRID_YZ
    for f0 in range(0, frames, _GRID_YZ):
        n = min(_GRID_YZ, frames - f0)
        for row0 in range(0, Ho, rows_per_launch):
            fn((-(-Wo // 32), -(-min(rows_per_launch, Ho - row0) // 8), n), (32, 8),
               (src[f0:f0 + n], np.int32(H), np.int32(W), np.int32(Ho), np.int32(Wo), np.int32(origin), np.int32(row0),
                np.int32(reach(P, R)), np.int32(border == "constant"), points, lut, dst[f0:f0 + n]))
    return out


@region_histograms_kernel.override(
    "cupy", supports=f"up to {SHARED_BINS} bins (a block per region, one shared histogram per warp); more bins: portable")
def _region_histograms_cupy(labels: Any, *, ny: int, nx: int, h: int, w: int, bins: int, dtype: str) -> Any:
    import cupy

    from ..backends import backend
    from ..backends.cupy import cuda_function

    if bins > SHARED_BINS:
        return region_histograms_kernel.portable(backend().xp, labels, ny=ny, nx=nx, h=h, w=w, bins=bins, dtype=dtype)
    labels = cupy.ascontiguousarray(labels)
    lead = tuple(labels.shape[:-2])
    Hl, Wl = labels.shape[-2], labels.shape[-1]
    out = cupy.empty(lead + (ny, nx, bins), dtype=dtype)
    blocks = math.prod(lead) * ny * nx
    if blocks == 0:
        return out
    copies = max(1, min(_COPIES, SHARED_BINS // bins))
    fn = cuda_function(__name__, f"portcv_region_histograms<{_CTYPES[dtype]}>")
    fn((blocks,), (256,), (labels, np.int32(Hl), np.int32(Wl), np.int32(ny), np.int32(nx), np.int32(h),
                           np.int32(w), np.int32(bins), np.int32(copies), out),
       shared_mem=4 * copies * bins)
    return out


#: Counts up to this take the chi-square's float64 kernel (``portcv_chi_square_small``, F = 20).
SMALL_COUNT = 1023


def _queries_per_warp(rows: int) -> int:
    """Queries per warp of the chi-square kernel, by the number of query rows."""
    return 1 if rows == 1 else 4 if rows <= 4 else 8


def _bins_per_lane(bins: int) -> int:
    """Bins of a region a lane of the float64 kernel loads at once (CH): enough for a region of
    up to 256 bins in one step, a power of two so that few kernels are compiled."""
    need = max(1, -(-bins // 32))
    return min(8, 1 << (need - 1).bit_length())


@chi_square_kernel.override(
    "cupy", supports="every input (a warp per gallery row; counts outside [0, max_count] follow the portable int32 "
                     "arithmetic step by step)")
def _chi_square_cupy(Q: Any, G: Any, W: Any, *, frac_bits: int, parts: int, max_count: int) -> Any:
    import cupy

    from ..backends.cupy import cuda_function, sm_count

    Q = cupy.ascontiguousarray(Q)
    G = cupy.ascontiguousarray(G)
    W = cupy.ascontiguousarray(cupy.asarray(W, dtype=cupy.int64))
    rows, cols = Q.shape[0], G.shape[0]
    bins = Q.shape[2]
    d = Q.shape[1] * bins
    if rows == 0 or cols == 0 or d == 0:
        return cupy.zeros((rows, cols), dtype=cupy.int64)
    D = cupy.empty((rows, cols), dtype=cupy.int64)
    qb = _queries_per_warp(rows)
    types = f"{_CTYPES[str(Q.dtype)]},{_CTYPES[str(G.dtype)]},{qb}"
    small = max_count <= SMALL_COUNT
    if small:
        assert frac_bits == 20, "frac_bits(n) is 20 for every n <= 1023: the float64 kernel's F"
        fn = cuda_function(__name__, f"portcv_chi_square_small<{types},{_bins_per_lane(bins)}>")
    else:
        fn = cuda_function(__name__, f"portcv_chi_square<{types}>")
    warps = 8
    blocks = min(-(-cols // warps), 8 * sm_count())  # the warps stride over the gallery rows
    for r0 in range(0, rows, _GRID_YZ * qb):
        n = min(_GRID_YZ * qb, rows - r0)
        shape = (np.int32(n), np.int32(cols), np.int32(Q.shape[1]), np.int32(bins))
        tail = () if small else (np.int32(max_count), np.int32(frac_bits))
        fn((blocks, -(-n // qb)), (32 * warps,), (Q[r0:r0 + n], G, W) + shape + tail + (D[r0:r0 + n],))
    return D

