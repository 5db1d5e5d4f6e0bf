"""The separable-filter kernel: exact integer horizontal + vertical taps, then one rounding.

Shared by every filter that is a separable correlation (Gaussian, box, Sobel, user taps): the
portable array-API version (NumPy reference, JAX under jit), its CuPy override, which runs
``_separable.cu``, and its NumPy override: the same exact sums in 16-bit integers where their
bound allows (int32 otherwise) over cache-sized row bands on the host's cores. Del Vecchio et
al.'s separable convolution (section II-A, eq. 2-3).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import _border, _validate
from .._border import BORDER_CODE, pad_axis
from .._kernel import kernel
from ..backends import backend

#: Longest 1-D kernel; the CUDA tile's shared memory is sized for it.
MAX_TAPS = 31
OUT_DTYPES = {"uint8": (0, 255), "int16": (-32768, 32767), "int32": (-(2**31), 2**31 - 1)}
_CUDA_TYPE = {"uint8": "unsigned char", "int16": "short", "int32": "int"}
_FINISH_CODE = {"shift": 0, "box_multiply": 1, "box_float32": 2, "floor_div": 3}


def check_accumulator(kx: tuple, ky: tuple, rounding: int) -> None:
    """Refuse taps whose worst-case sum over uint8 pixels could overflow the int32 accumulator."""
    # Both the horizontal intermediate and the final sum must fit int32.
    horizontal = sum(abs(t) for t in kx) * 255
    bound = max(horizontal, horizontal * sum(abs(t) for t in ky)) + rounding
    if bound > 2**31 - 1:
        raise ValueError(
            f"kx/ky: the worst-case sum over uint8 pixels ({bound - rounding}) would overflow the "
            "int32 accumulator; use smaller taps"
        )


def _correlate_axis(xp: Any, x: Any, taps: tuple[int, ...], axis: int, border: str, value: int) -> Any:
    """Exact integer correlation of ``x`` with ``taps`` along ``axis`` (anchor = k // 2), in int32.

    ``x`` is uint8 or int32; the border is added in ``x``'s own dtype (``value`` must fit it) and
    each tap's window is widened to int32 before its product, so a uint8 input is padded as bytes.
    """
    axis = axis % x.ndim
    n = x.shape[axis]
    before = len(taps) // 2
    padded = pad_axis(xp, x, axis, before, len(taps) - 1 - before, border, value)
    acc = None
    for i, t in enumerate(taps):
        if t == 0:
            continue
        window = [slice(None)] * x.ndim
        window[axis] = slice(i, i + n)
        term = xp.astype(padded[tuple(window)], xp.int32, copy=False) * t
        acc = term if acc is None else acc + term
    if acc is None:
        acc = xp.zeros(x.shape, dtype=xp.int32)
    return acc


def _horizontal_dtype(xp: Any, kx: tuple) -> Any:
    """uint16 or int16 if every horizontal sum over uint8 pixels fits it, else ``None`` (int32).

    ``|sum| <= 255 * sum(|kx|)``, the same bound covering a constant border's ``value * sum(kx)``.
    """
    bound = 255 * sum(abs(t) for t in kx)
    if min(kx) >= 0 and bound <= 65535:
        return xp.uint16
    if bound <= 32767:
        return xp.int16
    return None


def finish_accumulator(xp: Any, acc: Any, finish: tuple) -> Any:
    """The one rounding step of a filter (int32 accumulator -> output dtype)."""
    mode, p0, p1, out = finish
    if mode == "shift":
        if p0 > 0:
            acc = (acc + (1 << (p0 - 1))) >> p0  # round half up; >> is arithmetic for int32
        lo, hi = OUT_DTYPES[out]
        if out != "int32":
            acc = xp.clip(acc, lo, hi)  # OpenCV's saturate_cast, requested by the caller's dtype
        return xp.astype(acc, getattr(xp, out))
    if mode == "floor_div":
        # The Webcam Streaming & Filters report's truncating mean: floor(acc / p0), p0 > 0, exact integer division.
        lo, hi = OUT_DTYPES[out]
        return xp.astype(xp.clip(acc // p0, lo, hi), getattr(xp, out))
    if mode == "box_multiply":
        # OpenCV's blur for area <= 256: ((s + dd) * ds) >> 23 in uint32 (no overflow: s <= 255*256).
        scaled = xp.astype(acc + p0, xp.uint32) * p1
        return xp.astype(scaled >> 23, xp.uint8)
    # box_float32 (area > 256): rint_even(float32(s) * float32(1/A)), as OpenCV's row body does.
    # One IEEE multiply: nothing to contract into an FMA, so every backend rounds alike.
    inv_area = xp.asarray(np.asarray(p1, dtype=np.uint32).view(np.float32))
    return xp.astype(xp.round(xp.astype(acc, xp.float32) * inv_area), xp.uint8)


@kernel("separable_filter")
def separable_filter_kernel(
    xp: Any, img: Any, *, kx: tuple, ky: tuple, has_channels: bool, border: str, border_value: int, finish: tuple
) -> Any:
    """Portable separable filter: horizontal taps, vertical taps (int32, exact), one rounding."""
    y_axis, x_axis = (-3, -2) if has_channels else (-2, -1)
    # The horizontal pass pads the uint8 image itself (a quarter of int32's bytes) and widens per tap.
    acc = _correlate_axis(xp, img, kx, x_axis, border, border_value)
    # Its sums are stored in 16 bits where they fit (a 5-tap Gaussian or box: half the bytes the
    # vertical pass reads, where XLA materializes them); exact, the vertical pass widens per tap.
    narrow = _horizontal_dtype(xp, kx)
    if narrow is not None:
        acc = xp.astype(acc, narrow)
    # Rows outside a constant border are all `value`, so after the horizontal pass they hold value*sum(kx).
    acc = _correlate_axis(xp, acc, ky, y_axis, border, border_value * sum(kx))
    return finish_accumulator(xp, acc, finish)


def _sum_dtype(bound: int, non_negative: bool) -> Any:
    """The narrowest of uint16 / int16 / int32 that holds every partial sum of magnitude <= ``bound``."""
    if non_negative and bound <= 65535:
        return np.uint16
    return np.int16 if bound <= 32767 else np.int32


def correlate_shifted(src: Any, taps: tuple, step: int, n: int, axis: int, dtype: Any, name: str) -> Any:
    """``sum_i taps[i] * src[i*step : i*step + n]`` along ``axis`` (static slices), in ``dtype``.

    Symmetric (and antisymmetric) tap pairs share one multiply, as OpenCV's row filters do. The
    caller picks ``dtype`` wide enough for ``max|src| * sum|taps|``, which bounds every partial
    sum here (each is a sub-sum of the same terms), so the narrow arithmetic is exact. Every
    operation writes into this thread's scratch buffers ``name + ...``; the result is one of them.
    """
    from ..backends.numpy import scratch

    shape = list(src.shape)
    wide = scratch(name + "-src", tuple(shape), dtype)
    np.copyto(wide, src)  # widened once, so that every operation below runs on one type
    shape[axis] = n
    acc = scratch(name + "-acc", tuple(shape), dtype)
    term = scratch(name + "-term", tuple(shape), dtype)
    started = False

    def at(i: int) -> Any:
        index = [slice(None)] * wide.ndim
        index[axis] = slice(i * step, i * step + n)
        return wide[tuple(index)]

    def accumulate(i: int, j: int | None, w: int) -> None:
        nonlocal started
        if w == 0:
            return
        out = term if started else acc
        if j is None:
            np.multiply(at(i), w, out=out)
        else:
            (np.add if taps[i] == taps[j] else np.subtract)(at(i), at(j), out=out)
            if w != 1:
                np.multiply(out, w, out=out)
        if started:
            np.add(acc, term, out=acc)
        started = True

    k = len(taps)
    for i in range((k + 1) // 2):
        j = k - 1 - i
        if i != j and taps[i] in (taps[j], -taps[j]):
            accumulate(i, j, taps[i])
        else:
            accumulate(i, None, taps[i])
            if i != j:
                accumulate(j, None, taps[j])
    if not started:
        acc[...] = 0
    return acc


def shift_in_range(finish: tuple, taps: list[int]) -> bool:
    """Whether a ``shift`` finish's clip is a no-op for these 2-D taps over uint8 pixels: the
    sums lie in ``[-255 * sum(negative taps), 255 * sum(positive taps)]``, and rounding and
    ``>> shift`` keep them in the output's range."""
    mode, shift, _, out_name = finish
    if mode != "shift":
        return False
    lo, hi = OUT_DTYPES[out_name]
    rounding = (1 << (shift - 1)) if shift else 0
    pos, neg = sum(t for t in taps if t > 0), sum(-t for t in taps if t < 0)
    return lo <= (-255 * neg + rounding) >> shift and (255 * pos + rounding) >> shift <= hi


def finish_band(xp: Any, acc: Any, finish: tuple, in_range: bool, out: Any) -> None:
    """:func:`finish_accumulator` of a band's exact sums ``acc`` (any integer type, which this may
    overwrite) into ``out``, in place where it can be."""
    from ..backends.numpy import scratch

    def widened(dtype: Any) -> Any:  # C casting: two's complement modulo 2**32 for uint32
        if acc.dtype == dtype:
            return acc
        wide = scratch("finish", acc.shape, dtype)
        np.copyto(wide, acc, casting="unsafe")
        return wide

    if in_range:
        # The shift, in place; the clip cannot change a value here (so the store's cast is exact).
        v = acc
        if finish[1]:
            v = widened(np.int32)
            v += 1 << (finish[1] - 1)
            v >>= finish[1]
        np.copyto(out, v, casting="unsafe")
    elif finish[0] == "box_multiply":
        # ((acc + dd) * ds) >> 23 in uint32, in place: the same arithmetic modulo 2**32 from any
        # sum type; the uint8 store keeps the low byte, as astype does.
        v = widened(np.uint32)
        v += finish[1]
        v *= finish[2]
        v >>= 23
        np.copyto(out, v, casting="unsafe")
    else:
        out[...] = finish_accumulator(xp, widened(np.int32), finish)


@separable_filter_kernel.override("numpy", supports="uint8 images (others: the portable version)")
def _separable_filter_numpy(
    img: Any, *, kx: tuple, ky: tuple, has_channels: bool, border: str, border_value: int, finish: tuple
) -> Any:
    from ..backends.numpy import row_bands, run_bands

    params = dict(kx=kx, ky=ky, has_channels=has_channels, border=border, border_value=border_value, finish=finish)
    if img.dtype != np.uint8 or img.size == 0:
        return separable_filter_kernel.portable(backend().xp, img, **params)
    xp = backend().xp
    channels = img.shape[-1] if has_channels else 1
    y_axis, x_axis = (-3, -2) if has_channels else (-2, -1)
    height, width = img.shape[y_axis], img.shape[x_axis]
    # One uint8 copy padded on both axes by the portable border rule; a constant border's rows
    # are then `value` everywhere, whose horizontal sums are the portable's value * sum(kx).
    x = pad_axis(xp, img, x_axis, len(kx) // 2, len(kx) - 1 - len(kx) // 2, border, border_value)
    x = pad_axis(xp, x, y_axis, len(ky) // 2, len(ky) - 1 - len(ky) // 2, border, border_value)
    planes = img.size // (height * width * channels)
    x = np.ascontiguousarray(x).reshape(planes, height + len(ky) - 1, -1)
    n = width * channels
    # Every partial sum is bounded by 255 * sum|taps| (horizontal) and 255 * sum|kx| * sum|ky|
    # (both passes); check_accumulator keeps both within int32, and 16-bit types are used
    # where they hold them.
    sx, sy = sum(abs(t) for t in kx), sum(abs(t) for t in ky)
    h_dtype = _sum_dtype(255 * sx, min(kx) >= 0)
    v_dtype = np.promote_types(h_dtype, _sum_dtype(255 * sx * sy, min(kx) >= 0 and min(ky) >= 0))
    out = np.empty((planes, height, n), dtype=finish[3])
    in_range = shift_in_range(finish, [a * b for a in kx for b in ky])

    def band(item: tuple[int, int, int]) -> None:
        p, r0, r1 = item
        rows = x[p, r0: r1 + len(ky) - 1]
        h = correlate_shifted(rows, kx, channels, n, 1, h_dtype, "separable-x")
        finish_band(xp, correlate_shifted(h, ky, 1, r1 - r0, 0, v_dtype, "separable-y"), finish, in_range,
                    out[p, r0:r1])

    run_bands(band, row_bands(height, n, planes=planes))
    return out.reshape(img.shape)


@separable_filter_kernel.override("cupy")
def _separable_filter_cupy(
    img: Any, *, kx: tuple, ky: tuple, has_channels: bool, border: str, border_value: int, finish: tuple
) -> Any:
    import cupy

    from ..backends.cupy import cuda_function, device_constant

    channels = img.shape[-1] if has_channels else 1
    if not 1 <= channels <= 4 or len(kx) > MAX_TAPS or len(ky) > MAX_TAPS:
        return NotImplemented
    mode, p0, p1, out_name = finish
    # 32-row tiles halve the vertical halo's share; big kernels use 16 to stay under 48 KB of shared memory.
    tile_h = 16 if len(ky) > 15 or len(kx) * channels > 64 else 32
    fn = cuda_function(__name__, f"portcv_separable_filter<{len(kx)},{len(ky)},{channels},{_CUDA_TYPE[out_name]},{_FINISH_CODE[mode]},{tile_h}>",
    )
    img = cupy.ascontiguousarray(img)
    out = cupy.empty(img.shape, dtype=out_name)
    shape = img.shape
    H, W = shape[-3:-1] if has_channels else shape[-2:]
    planes = img.size // (H * W * channels)
    args = (
        np.int32(H), np.int32(W), device_constant(kx), device_constant(ky),
        np.int32(BORDER_CODE[border]), np.int32(border_value), np.int32(p0), np.int32(p1),
    )
    grid_xy = ((W * channels + 127) // 128, (H + tile_h - 1) // tile_h)
    if grid_xy[1] > 65535:  # gridDim.y limit: images over ~1M rows run the portable version
        return NotImplemented
    if planes <= 65535:
        fn(grid_xy + (planes,), (256,), (img, out) + args)
        return out
    src, dst = img.reshape(planes, -1), out.reshape(planes, -1)
    for start in range(0, planes, 65535):  # gridDim.z limit
        stop = min(planes, start + 65535)
        fn(grid_xy + (stop - start,), (256,), (src[start:stop], dst[start:stop]) + args)
    return out


# --------------------------------------------------------------------------------------------
# Public filters
# --------------------------------------------------------------------------------------------
def sep_filter(
    image: Any,
    kx: Any,
    ky: Any,
    shift: int,
    *,
    border: str = "reflect101",
    border_value: int = 0,
    dtype: str | None = None,
    channel_axis: Any = "auto",
) -> Any:
    """Separable integer filter: ``out = round(sum_j ky[j] sum_i kx[i] img[y+j-ay, x+i-ax] / 2**shift)``.

    Del Vecchio et al.'s separable convolution (section II-A, eq. 2-3) in exact integer arithmetic:
    the horizontal pass, then the vertical pass, accumulate in int32 without rounding, and one
    final ``(acc + 2**(shift-1)) >> shift`` rounds half up. Taps are correlation taps (not
    flipped), anchored at ``k // 2`` like OpenCV's ``sepFilter2D``.

    Parameters
    ----------
    image : (..., H, W) or (..., H, W, C) uint8 array
        Any backend's array; the result is on the active backend.
    kx, ky : sequence of int
        Horizontal and vertical taps, 1 to 31 each. ``sum(|kx|) * sum(|ky|) * 255`` must fit int32.
    shift : int
        Right shift (0..30) applied with rounding after both passes (taps in Q``shift``).
    border : {'reflect101', 'replicate', 'constant'}
        How pixels outside the image are made (OpenCV's BORDER_REFLECT_101 is the default).
    border_value : int
        The pixel value outside the image for ``border='constant'``.
    dtype : {None, 'uint8', 'int16', 'int32'}
        Output type. ``None`` picks uint8 when the taps cannot leave [0, 255] (non-negative taps
        with ``sum(kx) * sum(ky) <= 2**shift``), otherwise int32. An explicit uint8 or int16
        saturates like OpenCV's ``saturate_cast``.
    channel_axis : {'auto', None, -1}
        ``-1``: the last axis holds channels, filtered independently. ``None``: all leading axes
        are a batch of 2-D planes. ``'auto'``: channels when ``ndim >= 3`` and the last axis has
        at most 4 entries.

    Returns
    -------
    array of the same shape, dtype as described above.

    Examples
    --------
    >>> import numpy as np, portcv
    >>> img = np.arange(25, dtype=np.uint8).reshape(5, 5)
    >>> portcv.to_numpy(portcv.filters.sep_filter(img, [1, 2, 1], [1, 2, 1], 4))[2]
    array([11, 11, 12, 13, 14], dtype=uint8)
    """
    img = _validate.image(image)
    kx = _validate.taps(kx, "kx", max_len=MAX_TAPS)
    ky = _validate.taps(ky, "ky", max_len=MAX_TAPS)
    shift = _validate.integer(shift, "shift", low=0, high=30)
    border, border_value = _border.check(border, border_value)
    has_channels = _validate.has_channels(img, channel_axis)
    rounding = (1 << (shift - 1)) if shift else 0
    check_accumulator(kx, ky, rounding)
    finish = _shift_finish(dtype, shift, min(kx) >= 0 and min(ky) >= 0, sum(kx) * sum(ky))
    return separable_filter_kernel(
        img, kx=kx, ky=ky, has_channels=has_channels, border=border, border_value=border_value,
        finish=finish,
    )


def _shift_finish(dtype: Any, shift: int, non_negative: bool, tap_sum: int) -> tuple:
    """The output-dtype rule of sep_filter and convolve2d: ``None`` is uint8 when the taps
    cannot leave [0, 255] (non-negative, summing to at most ``2**shift``), int32 otherwise."""
    if dtype is None:
        dtype = "uint8" if non_negative and tap_sum <= (1 << shift) else "int32"
    return ("shift", shift, 0, _validate.choice(dtype, "dtype", tuple(OUT_DTYPES)))


def _box_finish(area: int) -> tuple:
    """OpenCV's normalization of a box sum over ``area`` pixels (8-bit ``blur``)."""
    if area == 1:
        return ("shift", 0, 0, "uint8")
    if area == 2:
        # OpenCV's formula gives (s + 2) >> 1 here, rounding 0.5 -> 1 and 1.0 -> 2 -- a bug we
        # do not copy; round half up instead.
        return ("box_multiply", 1, 1 << 22, "uint8")
    if area <= 256:
        q = 2**23 / area
        ds, dd = math.floor(q), area // 2
        if q - ds < 0.5:
            dd += 1
        else:
            ds += 1
        return ("box_multiply", dd, ds, "uint8")
    inv_area_bits = int(np.float32(1.0 / area).view(np.uint32))
    return ("box_float32", area, inv_area_bits, "uint8")


def box_blur(
    image: Any,
    ksize: Any,
    *,
    border: str = "reflect101",
    border_value: int = 0,
    channel_axis: Any = "auto",
) -> Any:
    """Mean (box) filter, equal to ``cv2.blur`` on uint8 images (the Webcam Streaming & Filters report's mean filter).

    The window sum ``s`` over ``A = kw * kh`` pixels is exact; it is normalized the way OpenCV
    does for 8-bit images: for ``A <= 256``, ``((s + dd) * ds) >> 23`` with ``ds = 2**23 / A``
    rounded and ``dd`` compensating (round half up, except that powers of two round
    ``(s + A/2 + 1) >> log2(A)``); for ``A > 256``, ``rint(float32(s) * float32(1/A))`` (one IEEE
    multiply, identical on every backend). For ``A = 2`` OpenCV computes ``(s + 2) >> 1``, which
    we treat as a bug: portcv rounds half up. For even ``A > 256`` OpenCV switches to float64 for
    the last pixels of some rows, where a tie can round the other way; portcv uses float32
    throughout (measured: a handful of pixels per million differ by 1).

    Parameters
    ----------
    image : (..., H, W) or (..., H, W, C) uint8 array
    ksize : int or (int, int)
        Window width (and height), 1 to 31; even sizes are anchored at ``k // 2`` like OpenCV.
    border, border_value, channel_axis
        As in :func:`sep_filter`.

    Examples
    --------
    >>> import numpy as np, portcv
    >>> img = np.array([[0, 0, 9], [0, 9, 9], [9, 9, 9]], np.uint8)
    >>> portcv.to_numpy(portcv.filters.box_blur(img, 3))
    array([[4, 5, 7],
           [5, 6, 7],
           [7, 7, 9]], dtype=uint8)
    """
    img = _validate.image(image)
    kw, kh = _validate.kernel_size(ksize, "ksize", odd=False, low=1, high=MAX_TAPS)
    border, border_value = _border.check(border, border_value)
    has_channels = _validate.has_channels(img, channel_axis)
    return separable_filter_kernel(
        img, kx=(1,) * kw, ky=(1,) * kh, has_channels=has_channels, border=border,
        border_value=border_value, finish=_box_finish(kw * kh),
    )


#: The mean filter's rounding: the Webcam Streaming & Filters report's truncation, or cv2.blur's arithmetic.
MEAN_ROUNDINGS = ("truncate", "opencv")


def mean_filter(
    image: Any,
    ksize: int,
    *,
    rounding: str = "truncate",
    border: str = "constant",
    border_value: int = 0,
    channel_axis: Any = "auto",
) -> Any:
    """The Webcam Streaming & Filters report's k x k mean filter: ``floor(window sum / k**2)``, zero border.

    The report (section 6.2, ``computeMeanKernel`` and its tiled CUDA convolution, section 6.4)
    multiplies every pixel by ``1/(k*k)`` in float, sums, and stores the sum into a ``uint8_t``,
    which truncates; pixels outside the image are 0. portcv computes the same thing exactly: the
    window sum ``s`` is an exact integer and ``out = floor(s / k**2)`` (integer division, the
    only rounding). That is the default; ``rounding='opencv'`` gives :func:`box_blur`'s
    ``cv2.blur`` arithmetic (round half up for odd ``k``) instead.

    Parameters
    ----------
    image : (..., H, W) or (..., H, W, C) uint8 array
    ksize : int
        Odd window side ``k``, 1 to 31.
    rounding : {'truncate', 'opencv'}
        ``'truncate'`` (the report): ``floor(s / k**2)``. ``'opencv'``: as :func:`box_blur`
        (``cv2.blur``), which rounds to nearest.
    border : {'constant', 'reflect101', 'replicate'}
        Default ``'constant'`` with ``border_value=0``: the report's zero padding (pixels
        outside the image count as 0 and the sum is still divided by ``k**2``).
    border_value : int
        The pixel value outside the image for ``border='constant'``.
    channel_axis : {'auto', None, -1}
        As in :func:`sep_filter`.

    Returns
    -------
    uint8 array of the same shape.

    Notes
    -----
    The report's float arithmetic (``float(1/k^2)`` taps, float32 sum, truncating conversion)
    can land just below an integer when ``s`` is a multiple of ``k**2``; portcv's exact
    ``floor`` is what that code means to compute. Against ``cv2.blur(img, (k, k),
    borderType=BORDER_CONSTANT)`` (and :func:`box_blur`) the default differs wherever the mean's
    fraction is >= 0.5: those round up, the report truncates (one level lower). The window is
    separable (ones x ones), so it runs on the separable kernel (``_separable.cu``) with the
    ``floor_div`` finish.

    Examples
    --------
    >>> import numpy as np, portcv
    >>> frame = np.array([[120, 139, 90], [99, 126, 106], [46, 75, 88]], np.uint8)   # report's B
    >>> portcv.to_numpy(portcv.filters.mean_filter(frame, 3))
    array([[53, 75, 51],
           [67, 98, 69],
           [38, 60, 43]], dtype=uint8)
    """
    img = _validate.image(image)
    k = _validate.integer(ksize, "ksize", low=1, high=MAX_TAPS)
    if k % 2 == 0:
        raise ValueError(f"ksize must be odd, got {k}")
    rounding = _validate.choice(rounding, "rounding", MEAN_ROUNDINGS)
    border, border_value = _border.check(border, border_value)
    has_channels = _validate.has_channels(img, channel_axis)
    area = k * k  # s <= 255 * 961: no overflow
    finish = ("floor_div", area, 0, "uint8") if rounding == "truncate" else _box_finish(area)
    return separable_filter_kernel(
        img, kx=(1,) * k, ky=(1,) * k, has_channels=has_channels, border=border,
        border_value=border_value, finish=finish,
    )
