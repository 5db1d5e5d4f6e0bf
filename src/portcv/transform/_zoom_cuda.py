"""CuPy overrides of the B-spline zoom's kernels (``spline_prefilter``, ``spline_zoom``), running
``_zoom_cuda.cu``. ``_zoom.py`` holds the portable versions (the reference) and imports this
module at its end, which registers the overrides.

The portable code on CuPy is dozens of small CuPy calls per frame (a slice, a product and a sum
per tap and pass), so its time is the host's: about 1.3 ms for the prefilter and 1.7 ms for the
interpolation of one QCIF frame x7. Here each prefilter pass is one launch and the interpolation
two more (an x pass into an int64 buffer, then the y pass, so each input row's horizontal sum is
computed once), one thread per output sample, with the portable version's integer arithmetic.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from ._integral import _plane_shape
from ._zoom import COEFFICIENT_BITS, prefilter_taps, spline_axis, spline_prefilter_kernel, spline_zoom_kernel

#: Threads per block of both kernels.
BLOCK = 256


def divisor_args(d: int) -> tuple:
    """Kernel arguments ``(d, m, s1, s2)`` of ``_zoom_cuda.cu``'s division by the constant
    ``1 <= d <= 2**63`` (Granlund and Montgomery's multiplier, in exact Python integers)."""
    if not 1 <= d <= 2**63:
        raise ValueError(f"divisor {d} outside [1, 2**63]")
    ell = (d - 1).bit_length()  # ceil(log2 d)
    m = (2**64 * (2**ell - d)) // d + 1
    return np.uint64(d), np.uint64(m), np.int32(min(ell, 1)), np.int32(max(ell - 1, 0))


def _plane(x: Any, has_channels: bool) -> tuple[int, int, int, int]:
    """``(planes, H, W, C)`` of ``(..., H, W[, C])``."""
    h, w, c = _plane_shape(x, has_channels)
    return math.prod(x.shape[:-3] if has_channels else x.shape[:-2]), h, w, c


def _grid(samples: int, rows: int) -> tuple[int, int]:
    """x: the samples of one slab or output row; y: the rows, striding past 65,535."""
    return -(-samples // BLOCK), min(rows, 65535)


@functools.lru_cache(maxsize=64)
def _axis_on_device(order: int, n_in: int, n_out: int, device_id: int) -> tuple[Any, Any]:
    """One axis' interpolation table (``spline_axis``) uploaded once per device, the weights
    (non-negative, at most 2**30) as int32."""
    import cupy

    table = spline_axis(order, n_in, n_out)
    assert int(table.weight.max()) <= 2**30 and int(table.weight.min()) >= 0  # spline_axis's weights
    return cupy.asarray(table.index), cupy.asarray(table.weight.astype(np.int32))


@spline_prefilter_kernel.override("cupy", supports="uint8 images")
def _spline_prefilter_cupy(img: Any, *, has_channels: bool) -> Any:
    import cupy

    from ..backends.cupy import cuda_function, device_constant

    if img.dtype != cupy.uint8:
        return NotImplemented
    x = cupy.ascontiguousarray(img)
    planes, h, w, c = _plane(x, has_channels)
    out = cupy.empty(x.shape, dtype=cupy.int32)
    if out.size == 0:
        return out
    taps = prefilter_taps()
    h_taps, n = device_constant(taps, "int64"), np.int32(len(taps) - 1)
    rows = cupy.empty(x.shape, dtype=cupy.int32)
    # W pass: slabs (planes H, W, C), rounded to Q16 (>> 8); H pass: (planes, H, W C), Q16 (>> 24).
    for name, src, dst, (outer, length, inner), rnd, shift in (
            ("unsigned char", x, rows, (planes * h, w, c), 1 << 7, 8),
            ("int", rows, out, (planes, h, w * c), 1 << 23, 24)):
        cuda_function(__name__, f"portcv_spline_prefilter_pass<{name}>")(
            _grid(length * inner, outer), (BLOCK,),
            (src, h_taps, n, np.int32(outer), np.int32(length), np.int32(inner), np.int64(rnd), np.int32(shift), dst))
    return out


@spline_zoom_kernel.override("cupy", supports="uint8 pixels and int32 Q16 coefficients")
def _spline_zoom_cupy(coef: Any, *, order: int, size: tuple[int, int], has_channels: bool, frac_bits: int) -> Any:
    import cupy

    from ..backends.cupy import cuda_function, current_device_id

    pixels = coef.dtype == cupy.uint8 and frac_bits == 0
    if not (pixels or (coef.dtype == cupy.int32 and frac_bits == COEFFICIENT_BITS)):
        return NotImplemented
    x = cupy.ascontiguousarray(coef)
    planes, h, w, c = _plane(x, has_channels)
    dh, dw = size
    lead = x.shape[:-3] if has_channels else x.shape[:-2]
    out = cupy.empty(lead + ((dh, dw, c) if has_channels else (dh, dw)), dtype=cupy.uint8)
    if out.size == 0:
        return out
    tx, ty = spline_axis(order, w, dw), spline_axis(order, h, dh)
    exact = tx.exact and ty.exact
    if exact:
        shift, divisor = 0, (tx.total * ty.total) << frac_bits
    else:  # the first pass brought back to Q16, as the portable version
        shift, divisor = COEFFICIENT_BITS - frac_bits, ty.total << COEFFICIENT_BITS
    device = current_device_id()
    xi, xw = _axis_on_device(order, w, dw, device)
    yi, yw = _axis_on_device(order, h, dh, device)
    taps = tx.index.shape[1]
    rows = cupy.empty((planes * h, dw * c), dtype=cupy.int64)  # the x pass' exact sums
    cuda_function(__name__, f"portcv_spline_zoom_rows<{'unsigned char' if pixels else 'int'},{taps},"
                            f"{'true' if exact else 'false'}>")(
        _grid(dw * c, planes * h), (BLOCK,),
        (x, np.int32(planes * h), np.int32(w), np.int32(c), np.int32(dw), xi, xw, *divisor_args(tx.total),
         np.int64(tx.total // 2), np.int32(shift), rows))
    cuda_function(__name__, f"portcv_spline_zoom_columns<{taps}>")(
        _grid(dw * c, planes * dh), (BLOCK,),
        (rows, np.int32(planes), np.int32(h), np.int32(dh), np.int32(dw * c), yi, yw, *divisor_args(divisor),
         np.int64(divisor // 2), out))
    return out
