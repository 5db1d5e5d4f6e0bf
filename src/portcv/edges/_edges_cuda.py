"""CuPy overrides of the edge kernels (``detect``, ``magnitude``, ``canny_candidates``, ``hysteresis``),
running ``_edges_cuda.cu``. ``portcv.edges`` imports this module, which registers the overrides."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from .._border import BORDER_CODE
from .._separable_pass import separable_filter_kernel
from ._edges import (
    FUSED_BLUR_TAPS, LOW_PASS_FINISH, canny_candidates_kernel, detect_kernel, hysteresis_kernel,
    magnitude_kernel,
)


# Launch geometry of _edges_cuda.cu (its constexprs).
_DETECT_TILE_W = 128
_DETECT_THREADS = 256
_SHARED_LIMIT = 48 * 1024


def detect_shared_bytes(alpha: int, tile_h: int) -> int:
    """Static shared memory of ``portcv_edges_detect<alpha, tile_h, *>`` (the .cu's layout)."""
    r = alpha + 2
    lead = (r + 15) // 16 * 16
    in_w = (lead + _DETECT_TILE_W + r + 15) // 16 * 16
    s_in = (tile_h + 2 * r) * (in_w + 16)
    s_m = (tile_h + 2 * alpha + 2) * (_DETECT_TILE_W + 2 * alpha + 2) * 4
    s_acc = (tile_h + 2 * alpha) * (_DETECT_TILE_W + 2 * alpha)
    return s_in + s_m + s_acc


def detect_tile_h(alpha: int) -> int:
    """Rows per CUDA tile: the tallest of 32, 16, 8 whose shared memory fits 48 KB."""
    for tile_h in (32, 16, 8):
        if detect_shared_bytes(alpha, tile_h) <= _SHARED_LIMIT:
            return tile_h
    raise ValueError(f"alpha={alpha} needs more shared memory than a CUDA block has")


@functools.lru_cache(maxsize=64)
def _detect_launch(alpha: int, variant: str, taps: int, h: int, w: int) -> tuple[str, tuple[int, int]] | None:
    """Kernel name and grid (x, y) of ``_edges_cuda.cu``'s detector, or ``None`` past gridDim.y."""
    tile_h = detect_tile_h(alpha)
    grid_xy = ((w + _DETECT_TILE_W - 1) // _DETECT_TILE_W, (h + tile_h - 1) // tile_h)
    if grid_xy[1] > 65535:
        return None
    listing = "true" if variant == "listing" else "false"
    return f"portcv_edges_detect<{alpha},{tile_h},{listing},{taps}>", grid_xy


@detect_kernel.override("cupy", supports="CUDA's grid limit (gridDim.y <= 65535 row tiles)")
def _detect_cupy(image: Any, *, blur_taps: tuple, low_sq: int, high_sq: int, alpha: int, variant: str,
                 border: str) -> Any:
    import cupy

    from ..backends.cupy import cuda_function, device_constant

    if len(blur_taps) > FUSED_BLUR_TAPS:  # the separable kernel first, then the detector alone
        image = separable_filter_kernel(image, kx=blur_taps, ky=blur_taps, has_channels=False, border=border,
                                        border_value=0, finish=LOW_PASS_FINISH)
        blur_taps = ()
    shape = image.shape
    h, w = shape[-2], shape[-1]
    launch = _detect_launch(alpha, variant, len(blur_taps), h, w)
    if launch is None:
        return NotImplemented
    name, grid_xy = launch
    fn = cuda_function(__name__, name)
    src = cupy.ascontiguousarray(image)
    out = cupy.empty(shape, dtype=cupy.uint8)
    planes = src.size // (h * w)
    taps = device_constant(blur_taps or (0,))
    args = (np.int32(h), np.int32(w), np.int32(low_sq), np.int32(high_sq), np.int32(BORDER_CODE[border]), taps)
    if planes <= 65535:
        fn(grid_xy + (planes,), (_DETECT_THREADS,), (src, out) + args)
        return out
    src2, dst2 = src.reshape(planes, -1), out.reshape(planes, -1)
    for start in range(0, planes, 65535):  # gridDim.z limit
        stop = min(planes, start + 65535)
        fn(grid_xy + (stop - start,), (_DETECT_THREADS,), (src2[start:stop], dst2[start:stop]) + args)
    return out


@magnitude_kernel.override("cupy")
def _magnitude_cupy(gx: Any, gy: Any, *, kind: str) -> Any:
    import cupy

    from ..backends.cupy import cuda_function, launch_1d

    gx = cupy.ascontiguousarray(gx)
    gy = cupy.ascontiguousarray(gy)
    out = cupy.empty(gx.shape, dtype=cupy.int32)
    fn = cuda_function(__name__, f"portcv_edges_magnitude<{'true' if kind == 'l2' else 'false'}>")
    n = gx.size
    grid, block = launch_1d(n)
    fn(grid, block, (gx, gy, out, np.int64(n)))
    return out

_CANNY_TILE = 32


@canny_candidates_kernel.override("cupy")
def _canny_candidates_cupy(gx: Any, gy: Any, *, low: int, high: int, l2: bool) -> Any:
    import cupy

    from ..backends.cupy import cuda_function

    shape = gx.shape
    h, w = shape[-2], shape[-1]
    grid_xy = ((w + _CANNY_TILE - 1) // _CANNY_TILE, (h + _CANNY_TILE - 1) // _CANNY_TILE)
    if grid_xy[1] > 65535:
        return NotImplemented
    fn = cuda_function(__name__, f"portcv_canny_candidates<{'true' if l2 else 'false'},{_CANNY_TILE}>")
    gx = cupy.ascontiguousarray(gx)
    gy = cupy.ascontiguousarray(gy)
    out = cupy.empty(shape, dtype=cupy.uint8)
    planes = gx.size // (h * w)
    fx, fy, fo = gx.reshape(planes, -1), gy.reshape(planes, -1), out.reshape(planes, -1)
    for start in range(0, planes, 65535):  # gridDim.z limit
        stop = min(planes, start + 65535)
        fn(grid_xy + (stop - start,), (256,),
           (fx[start:stop], fy[start:stop], fo[start:stop], np.int32(h), np.int32(w), np.int32(low), np.int32(high)))
    return out

#: Most pixels per union-find launch: chunk-wide labels and the kernels' grid-stride loop
#: indices are int32, and an index plus the largest stride (launch_1d's 65535 * 8 blocks of 256
#: threads) must not pass 2**31 - 1.
_CC_MAX_PIXELS = 2**31 - 1 - 65535 * 8 * 256


@hysteresis_kernel.override("cupy")
def _hysteresis_cupy(state: Any) -> Any:
    """Connected components by union-find (``_edges_cuda.cu``, ``portcv_canny_cc_*``): four launches
    per chunk of whole planes, no host round trip."""
    import cupy

    from ..backends.cupy import cuda_function, launch_1d

    h, w = state.shape[-2], state.shape[-1]
    if h * w > _CC_MAX_PIXELS:
        return NotImplemented
    src = cupy.ascontiguousarray(state, dtype=cupy.uint8)
    planes = src.size // (h * w) if h * w else 0
    flat = src.reshape(planes, h * w)
    out = cupy.empty((planes, h * w), cupy.uint8)
    chunk = max(1, min(planes, _CC_MAX_PIXELS // max(1, h * w)))
    parent = cupy.empty(chunk * h * w, cupy.int32)
    strong_root = cupy.empty(chunk * h * w, cupy.uint8)
    init = cuda_function(__name__, "portcv_canny_cc_init")
    union = cuda_function(__name__, "portcv_canny_cc_union")
    compress = cuda_function(__name__, "portcv_canny_cc_compress")
    edges = cuda_function(__name__, "portcv_canny_cc_edges")
    for start in range(0, planes, chunk):
        stop = min(planes, start + chunk)
        n = np.int32((stop - start) * h * w)
        grid, block = launch_1d(int(n))
        part = flat[start:stop]
        init(grid, block, (part, parent, strong_root, n))
        union(grid, block, (part, parent, np.int32(h), np.int32(w), n))
        compress(grid, block, (part, parent, strong_root, n))
        edges(grid, block, (part, parent, strong_root, out[start:stop], n))
    return out.reshape(state.shape)
