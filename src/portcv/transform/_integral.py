"""The integral-image kernel: summed-area tables with a zero first row and column.

The portable version is two cumulative sums (exact integer additions, so every backend agrees);
the CuPy override (``_integral_cuda.py``) runs ``portcv/_integral_launch.cu``, a tile-decomposed
2-D scan (tile sums, carries
across tiles, in-tile warp-shuffle scans) in three launches; the NumPy override runs a compiled
loop (``_integral_numba.py``: per row, column sums then their running sum) where numba is
installed, and otherwise scans band by band (along x with ``np.cumsum``, then down row by row),
which avoids NumPy's strided axis-0 scan.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _validate
from .._kernel import kernel
from ..backends import backend

#: Largest per-plane pixel count whose int32 sums cannot wrap: 255 * H * W <= 2**31 - 1.
MAX_INT32_PIXELS = (2**31 - 1) // 255
SUM_DTYPES = ("int32", "int64")


@kernel("integral")
def integral_kernel(xp: Any, img: Any, *, has_channels: bool, squared: bool, dtype: str) -> Any:
    """Portable integral image: ``I[y, x] = sum(img[:y, :x])`` (per channel), shape ``(..., H+1, W+1[, C])``."""
    y_axis, x_axis = (-3, -2) if has_channels else (-2, -1)
    # The zero first row and column go in before the scans (cheaper to compile under jit than
    # include_initial), so the cumulative sums produce them.
    shape = list(img.shape)
    shape[y_axis] = 1
    padded = xp.concat([xp.zeros(tuple(shape), dtype=img.dtype), img], axis=y_axis)
    shape = list(padded.shape)
    shape[x_axis] = 1
    padded = xp.concat([xp.zeros(tuple(shape), dtype=img.dtype), padded], axis=x_axis)

    def table(values: Any, acc: Any) -> Any:
        return xp.cumulative_sum(xp.cumulative_sum(values, axis=y_axis, dtype=acc), axis=x_axis, dtype=acc)

    # The caller guarantees 255*H*W < 2**31 for int32, so the running sums cannot wrap.
    sums = table(padded, getattr(xp, dtype))
    if not squared:
        return sums
    wide = xp.astype(padded, xp.int64)
    # 255^2 * H * W < 2^63 for any image of at most 2^31 elements: int64 squared sums are exact.
    return sums, table(wide * wide, xp.int64)


@integral_kernel.override("numpy", supports="uint8 images (others: the portable version)")
def _integral_numpy(img: Any, *, has_channels: bool, squared: bool, dtype: str) -> Any:
    from ..backends.numpy import compiled, row_bands

    if img.dtype != np.uint8 or img.size == 0:
        return integral_kernel.portable(backend().xp, img, has_channels=has_channels, squared=squared, dtype=dtype)
    height, width, channels = _plane_shape(img, has_channels)
    planes = img.size // (height * width * channels)
    x = np.reshape(img, (planes, height, width, channels))
    lead = img.shape[:-3] if has_channels else img.shape[:-2]
    out_shape = lead + (height + 1, width + 1) + ((channels,) if has_channels else ())
    if compiled():
        return _integral_compiled(x, squared, np.dtype(dtype), out_shape)
    # Band by band (rows of about 512 KiB of sums, which stay in the cache between the two
    # scans): along x with np.cumsum (a C loop), then down, one row at a time from the finished
    # row above the band (np.cumsum along axis 0 walks each column with a row-sized stride and
    # was slower than these row-by-row vector adds). One thread: the row adds are short, and two
    # threads contending for the GIL between them were slower (docs/benchmarks.md). Integer additions:
    # the caller's int32 bound (255 * H * W < 2**31) covers every partial sum, as int64 does
    # for squares (255**2 * H * W < 2**63).
    bands = row_bands(height, width * channels, planes=planes, target=1 << 17)

    def table(acc: Any, square: bool) -> Any:
        out = np.empty((planes, height + 1, width + 1, channels), acc)
        out[:, 0] = 0
        out[:, :, 0] = 0
        for p, r0, r1 in bands:
            values = x[p, r0:r1]
            if square:
                values = values.astype(np.int64)
                values *= values
            np.cumsum(values, axis=1, dtype=acc, out=out[p, r0 + 1: r1 + 1, 1:])
            rows = list(out[p, r0: r1 + 1, 1:])
            for above, row in zip(rows, rows[1:]):
                np.add(row, above, out=row)
        return out.reshape(out_shape)

    sums = table(np.dtype(dtype), False)
    return (sums, table(np.int64, True)) if squared else sums



#: Pixels per band below which a plane's compiled integral is not split over threads: the loop
#: is bound by one store per pixel, and a 1080p plane in two bands on the 2-core machine ran
#: slower (0.84 ms) than on one thread (0.69 ms), so only planes of 4 Mi pixels or more split.
NUMBA_BAND_PIXELS = 1 << 22
#: The cost of a row of the carry pass (column sums of the bytes above a band, vectorized)
#: relative to a row of the integral itself (its column sums and their running sum).
_CARRY_COST = 0.1


def _integral_compiled(x: np.ndarray, squared: bool, acc: np.dtype, out_shape: tuple) -> Any:
    """The compiled loops (``_integral_numba.py``): one plane per thread, or a plane split into
    bands whose start rows come from the column sums above them, sized so that each band's
    carry pass plus its rows take the same time."""
    from ..backends.numpy import host_threads, run_bands
    from ._integral_numba import integral_band

    planes, height, width, channels = x.shape
    src = np.ascontiguousarray(x).reshape(planes, -1)
    sums = np.empty((planes, (height + 1) * (width + 1) * channels), acc)
    squares = np.empty((planes, sums.shape[1]) if squared else (planes, 1), np.int64)
    threads = host_threads()
    split = min(threads // planes, height, max(1, height * width // NUMBA_BAND_PIXELS)) if planes < threads else 1
    starts = _band_starts(height, max(1, split))
    items = [(p, r0, r1) for p in range(planes) for r0, r1 in zip(starts, starts[1:])]
    run_bands(lambda item: integral_band(src[item[0]], sums[item[0]], squares[item[0]], width, channels,
                                         item[1], item[2], squared), items)
    sums = sums.reshape(out_shape)
    return (sums, squares.reshape(out_shape)) if squared else sums


def _band_starts(height: int, bands: int) -> list[int]:
    """Row bounds of ``bands`` bands whose costs ``start * _CARRY_COST + rows`` are equal:
    ``start_{b+1} = start_b (1 - a) + X`` with ``X = H a / (1 - (1 - a)**bands)``."""
    a = _CARRY_COST
    step = height * a / (1 - (1 - a) ** bands)
    starts, r = [0], 0.0
    for _ in range(bands - 1):
        r = r * (1 - a) + step
        starts.append(min(height, max(starts[-1] + 1, round(r))))
    starts.append(height)
    return sorted(set(starts))


@integral_kernel.override("jax", supports="every input (uint8 on the CPU: the NumPy version through a host callback)")
def _integral_jax(img: Any, *, has_channels: bool, squared: bool, dtype: str) -> Any:
    b = backend()
    if b.runs_on_host and img.dtype == np.uint8:
        # XLA:CPU lowers cumsum to a windowed reduction, several times slower than NumPy's row
        # prefix sums and row adds on the same host memory (docs/benchmarks.md).
        from ..backends.jax import host_call

        return host_call(integral_kernel, img, has_channels=has_channels, squared=squared, dtype=dtype)
    return integral_kernel.portable_for(b)(img, has_channels=has_channels, squared=squared, dtype=dtype)



def _plane_shape(img: Any, has_channels: bool) -> tuple[int, int, int]:
    """``(H, W, C)`` of one image of a batch."""
    if has_channels:
        return img.shape[-3], img.shape[-2], img.shape[-1]
    return img.shape[-2], img.shape[-1], 1


# --------------------------------------------------------------------------------------------
# integral
# --------------------------------------------------------------------------------------------
def integral(image: Any, *, squared: bool = False, dtype: str = "int32", channel_axis: Any = "auto") -> Any:
    """Integral image (summed-area table), equal to ``cv2.integral`` / ``cv2.integral2``.

    ``I[y, x] = sum(image[:y, :x])`` per channel, with a zero first row and column, so any
    rectangle sum is four lookups: ``sum(image[y0:y1, x0:x1]) = I[y1, x1] - I[y0, x1] -
    I[y1, x0] + I[y0, x0]`` (the summed-area table the cascade papers scan; Viola-Jones'
    "integral image").

    Parameters
    ----------
    image : (..., H, W) or (..., H, W, C) uint8 array
    squared : bool
        Also return the integral of the squared pixels (for window variances).
    dtype : {'int32', 'int64'}
        Type of the sums. ``'int32'`` is OpenCV's default for 8-bit images; portcv refuses
        images whose sums could wrap (``255 * H * W > 2**31 - 1``, i.e. more than 8,421,504
        pixels per plane: 4K fits, 8K does not) with a ``ValueError`` instead of wrapping as
        OpenCV does. Pass ``'int64'`` for larger images.
    channel_axis : {'auto', None, -1}
        As in :func:`portcv.filters.sep_filter`.

    Returns
    -------
    sums : (..., H+1, W+1[, C]) array of ``dtype``
    squares : (..., H+1, W+1[, C]) int64 array
        Only with ``squared=True`` (then a tuple ``(sums, squares)`` is returned). Exact integers;
        ``cv2.integral2`` gives the same values as float64.

    Notes
    -----
    Rounding: none; every value is an exact integer sum. Portable path: two cumulative sums.
    CUDA: a tile-decomposed 2-D scan in three launches (per-tile row/column/total sums, their
    exclusive prefixes across tiles, then per tile warp-shuffle row scans and a column walk that
    starts from the integral of the row above the tile); no serial pass over the image.

    Examples
    --------
    >>> import numpy as np, portcv
    >>> img = np.array([[1, 2], [3, 4]], np.uint8)
    >>> portcv.to_numpy(portcv.transform.integral(img))
    array([[ 0,  0,  0],
           [ 0,  1,  3],
           [ 0,  4, 10]], dtype=int32)
    >>> s, q = portcv.transform.integral(img, squared=True)
    >>> int(portcv.to_numpy(q)[2, 2])
    30
    """
    img = _validate.image(image)
    squared = _validate.boolean(squared, "squared")
    dtype = _validate.choice(dtype, "dtype", SUM_DTYPES)
    has_channels = _validate.has_channels(img, channel_axis)
    height, width, _ = _plane_shape(img, has_channels)
    if dtype == "int32" and height * width > MAX_INT32_PIXELS:
        raise ValueError(
            f"image: {height}x{width} pixels can sum to 255 * {height * width} > 2**31 - 1, which int32 "
            "cannot hold (OpenCV would wrap); pass dtype='int64'"
        )
    _validate.output_elements(img.shape, (height, width), (height + 1, width + 1), "image")
    return integral_kernel(img, has_channels=has_channels, squared=squared, dtype=dtype)
