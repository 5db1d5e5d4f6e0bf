"""The direct 2-D filter kernel: a non-separable integer correlation, then one rounding.

Del Vecchio et al.'s direct form (section II-A, eq. 1): every output sums ``KH * KW`` products, the
``O(MNk^2)`` cost its Table I measures against the separable ``O(MNk)`` of Table II. Used for
kernels that do not factor (user kernels, the Webcam Streaming & Filters report's 2-D Gaussian). The portable
array-API version (NumPy reference, JAX under jit), its CuPy override, which runs
``_convolve_cuda.cu`` (``_convolve_cuda.py``), and its NumPy override (row bands, as the separable
filter's); all finish with ``portcv._separable_pass.finish_accumulator`` / ``finish()`` of ``common.cuh``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _border, _validate
from .._border import pad_axis
from .._kernel import kernel
from .._separable_pass import MAX_TAPS, finish_accumulator
from ..backends import backend
from ._separable import _shift_finish

#: Largest kernel side; the CUDA tile's shared memory is sized for it.
MAX_SIZE = 31


def check_accumulator(taps: tuple[tuple[int, ...], ...], rounding: int) -> None:
    """Refuse a kernel whose worst-case sum over uint8 pixels could overflow the int32 accumulator.

    Every partial sum of ``sum_ji k[j][i] * p`` is bounded by ``sum |k| * 255`` (0 <= p <= 255),
    and the rounding term is added once at the end.
    """
    bound = sum(abs(t) for row in taps for t in row) * 255 + rounding
    if bound > 2**31 - 1:
        raise ValueError(
            f"kernel: the worst-case sum over uint8 pixels ({bound - rounding}) would overflow the "
            "int32 accumulator; use smaller taps"
        )


@kernel("convolve2d")
def convolve2d_kernel(
    xp: Any, img: Any, *, taps: tuple, has_channels: bool, border: str, border_value: int, finish: tuple
) -> Any:
    """Portable direct 2-D correlation: ``acc = sum_j sum_i taps[j][i] * img[y+j-ay, x+i-ax]``
    (int32, exact; anchor ``(kh // 2, kw // 2)``), then the one rounding of ``finish``."""
    y_axis, x_axis = (-3, -2) if has_channels else (-2, -1)
    kh, kw = len(taps), len(taps[0])
    height, width = img.shape[y_axis], img.shape[x_axis]
    # The border is added to the uint8 image (static slices + concat, see pad_axis; a quarter of
    # int32's bytes) and each tap's window is widened to int32 before its product.
    # Constant borders: the corner blocks are `value` too, as in a constant-padded image.
    x = pad_axis(xp, img, x_axis, kw // 2, kw - 1 - kw // 2, border, border_value)
    x = pad_axis(xp, x, y_axis, kh // 2, kh - 1 - kh // 2, border, border_value)
    tail = (slice(None),) if has_channels else ()
    acc = None
    for j, row in enumerate(taps):  # the only Python loops: over taps
        for i, t in enumerate(row):
            if t == 0:
                continue
            term = xp.astype(x[(..., slice(j, j + height), slice(i, i + width)) + tail], xp.int32) * t
            acc = term if acc is None else acc + term
    if acc is None:
        acc = xp.zeros(img.shape, dtype=xp.int32)
    return finish_accumulator(xp, acc, finish)


@convolve2d_kernel.override("numpy", supports="uint8 images (others: the portable version)")
def _convolve2d_numpy(
    img: Any, *, taps: tuple, has_channels: bool, border: str, border_value: int, finish: tuple
) -> Any:
    from ..backends.numpy import compiled, row_bands, run_bands, scratch
    from .._separable_pass import _sum_dtype, correlate_shifted, finish_band, shift_in_range

    xp = backend().xp
    if img.dtype != np.uint8 or img.size == 0:
        return convolve2d_kernel.portable(xp, img, taps=taps, has_channels=has_channels, border=border,
                                          border_value=border_value, finish=finish)
    channels = img.shape[-1] if has_channels else 1
    y_axis, x_axis = (-3, -2) if has_channels else (-2, -1)
    kh, kw = len(taps), len(taps[0])
    height, width = img.shape[y_axis], img.shape[x_axis]
    if compiled():
        return _convolve2d_compiled(img, taps, channels, height, width, border, border_value, finish)
    # The portable version's padded uint8 copy, then per band of rows one row of taps at a time
    # (the separable filter's horizontal pass), summed: every partial sum is a sub-sum of
    # sum |k| * 255, which the caller's check keeps within int32; 16-bit types where it fits.
    x = pad_axis(xp, img, x_axis, kw // 2, kw - 1 - kw // 2, border, border_value)
    x = pad_axis(xp, x, y_axis, kh // 2, kh - 1 - kh // 2, border, border_value)
    planes = img.size // (height * width * channels)
    x = np.ascontiguousarray(x).reshape(planes, height + kh - 1, -1)
    n = width * channels
    flat = [t for row in taps for t in row]
    dtype = _sum_dtype(255 * sum(abs(t) for t in flat), min(flat) >= 0)
    in_range = shift_in_range(finish, flat)
    out = np.empty((planes, height, n), dtype=finish[3])

    def band(item: tuple[int, int, int]) -> None:
        p, r0, r1 = item
        acc = scratch("convolve2d-sum", (r1 - r0, n), dtype)
        acc[...] = 0
        for j, row in enumerate(taps):
            if any(row):
                np.add(acc, correlate_shifted(x[p, r0 + j: r1 + j], row, channels, n, 1, dtype, "convolve2d"), out=acc)
        finish_band(xp, acc, finish, in_range, out[p, r0:r1])

    run_bands(band, row_bands(height, n, planes=planes))
    return out.reshape(img.shape)


def _convolve2d_compiled(img: Any, taps: tuple, channels: int, height: int, width: int, border: str,
                         border_value: int, finish: tuple) -> Any:
    """The NumPy override's compiled path: one band of rows per thread and plane, each one call
    of ``convolve_band``."""
    from .._separable_pass import _sum_dtype, compiled_finish, loop_input, padded_sources, pass_taps
    from ..backends.numpy import host_threads, row_bands, run_bands, scratch
    from ._convolve_numba import convolve_band

    kh, kw = len(taps), len(taps[0])
    n = width * channels
    planes = img.size // (height * n)
    x = loop_input(img, (planes, height, n))
    out = np.empty((planes, height, n), dtype=finish[3])
    flat = [t for row in taps for t in row]
    # Every partial sum is a sub-sum of sum|k| * 255 (the caller keeps it within int32): the
    # narrowest type holding it, its arithmetic modulo 2**16 or 2**32 then exact.
    bound = sum(abs(t) for t in flat)
    acc_dtype = _sum_dtype(255 * bound, min(flat) >= 0)
    k = pass_taps(taps, acc_dtype)
    xsrc, ysrc = padded_sources(width, kw, border), padded_sources(height, kh, border)
    fin = compiled_finish(finish)

    def band(item: tuple[int, int, int]) -> None:
        p, r0, r1 = item
        ring = scratch("convolve2d-ring", (kh, (width + kw - 1) * channels), np.uint8)
        acc = scratch("convolve2d-acc", (n,), acc_dtype)
        convolve_band(x, out, p, r0, r1, k, xsrc, ysrc, channels, int(border_value), *fin, ring, acc)

    run_bands(band, row_bands(height, n, planes=planes, target=-(-height // host_threads()) * n))
    return out.reshape(img.shape)



# --------------------------------------------------------------------------------------------
# Direct 2-D filter, the Webcam Streaming & Filters report's mean and Gaussian filters, Sobel gradients
# --------------------------------------------------------------------------------------------
def convolve2d(
    image: Any,
    kernel: Any,
    shift: int,
    *,
    border: str = "reflect101",
    border_value: int = 0,
    dtype: str | None = None,
    channel_axis: Any = "auto",
) -> Any:
    """Direct 2-D integer filter: ``out = round(sum_j sum_i k[j, i] img[y+j-ay, x+i-ax] / 2**shift)``.

    Del Vecchio et al.'s direct 2-D form (section II-A, eq. 1), ``O(k^2)`` work per pixel, for
    kernels that do not factor into two 1-D taps (use :func:`sep_filter` for those; the paper's
    Table I vs II compares the two). Products are summed exactly in int32 and one final
    ``(acc + 2**(shift-1)) >> shift`` rounds half up, as in :func:`sep_filter`.

    Parameters
    ----------
    image : (..., H, W) or (..., H, W, C) uint8 array
        Any backend's array; the result is on the active backend.
    kernel : (kh, kw) array_like of int
        Integer taps, 1 to 31 on each side (any backend's array, a NumPy array or nested lists;
        read on the host). ``sum(|kernel|) * 255 + 2**(shift-1)`` must fit int32.
    shift : int
        Right shift (0..30) applied with rounding after the sum (taps in Q``shift``).
    border : {'reflect101', 'replicate', 'constant'}
        How pixels outside the image are made (OpenCV's BORDER_REFLECT_101 is the default).
    border_value : int
        The pixel value outside the image for ``border='constant'``.
    dtype : {None, 'uint8', 'int16', 'int32'}
        Output type, chosen as by :func:`sep_filter`: ``None`` is uint8 when the taps cannot
        leave [0, 255] (all >= 0, ``sum(kernel) <= 2**shift``), otherwise int32; uint8 and int16
        saturate like OpenCV's ``saturate_cast``.
    channel_axis : {'auto', None, -1}
        As in :func:`sep_filter`.

    Returns
    -------
    array of the same shape, dtype as described above.

    Notes
    -----
    Taps are **correlation** taps, anchored at ``(kh // 2, kw // 2)`` (even sizes too), as in
    OpenCV's ``filter2D`` and :func:`sep_filter`::

        acc[y, x] = sum_j sum_i kernel[j, i] * img[y + j - kh // 2, x + i - kw // 2]   (int32, exact)
        out = (acc + 2**(shift - 1)) >> shift        (shift > 0: round half up; shift = 0: acc)

    The paper's eq. 1 is a convolution (``h[i, j] x[m - i, n - j]``): pass
    ``kernel[::-1, ::-1]`` to get it. With ``shift=0`` the result is ``cv2.filter2D(img, ddepth,
    kernel.astype(np.float32), borderType=...)`` bit for bit (``ddepth`` -1 for uint8, CV_16S
    for int16). The CuPy version (``_convolve_cuda.cu``) is one pass over a shared-memory tile with
    its halo, the taps in shared memory.

    Examples
    --------
    >>> import numpy as np, portcv
    >>> img = np.arange(25, dtype=np.uint8).reshape(5, 5)
    >>> gauss = [[1, 2, 1], [2, 4, 2], [1, 2, 1]]        # = sep_filter(img, [1, 2, 1], [1, 2, 1], 4)
    >>> portcv.to_numpy(portcv.filters.convolve2d(img, gauss, 4))[2]
    array([11, 11, 12, 13, 14], dtype=uint8)
    >>> portcv.to_numpy(portcv.filters.convolve2d(img, [[-1, 0, 1]], 0))[2]   # correlation: x+1 - x-1
    array([0, 2, 2, 2, 0], dtype=int32)
    """
    img = _validate.image(image)
    taps = _validate.taps2d(kernel, "kernel", max_size=MAX_TAPS)
    shift = _validate.integer(shift, "shift", low=0, high=30)
    border, border_value = _border.check(border, border_value)
    has_channels = _validate.has_channels(img, channel_axis)
    check_accumulator(taps, (1 << (shift - 1)) if shift else 0)
    flat = [t for row in taps for t in row]
    finish = _shift_finish(dtype, shift, min(flat) >= 0, sum(flat))
    return convolve2d_kernel(
        img, taps=taps, has_channels=has_channels, border=border, border_value=border_value,
        finish=finish,
    )

