"""The separable pass every integer filter runs (``portcv.filters``, ``portcv.edges``): one
horizontal and one vertical 1-D integer correlation, exact in int32, then one rounding step
(:func:`finish_accumulator`). The ``separable_filter`` kernel is defined here; its CUDA override is
``_separable_pass_cuda.py``."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ._border import pad_axis
from ._kernel import kernel
from .backends import backend

#: Longest 1-D kernel; the CUDA tile's shared memory is sized for it.
MAX_TAPS = 31
OUT_DTYPES = {"uint8": (0, 255), "int16": (-32768, 32767), "int32": (-(2**31), 2**31 - 1)}


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
    from .backends.numpy import scratch

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
    from .backends.numpy import scratch

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
    from .backends.numpy import compiled, row_bands, run_bands

    params = dict(kx=kx, ky=ky, has_channels=has_channels, border=border, border_value=border_value, finish=finish)
    if img.dtype != np.uint8 or img.size == 0:
        return separable_filter_kernel.portable(backend().xp, img, **params)
    xp = backend().xp
    channels = img.shape[-1] if has_channels else 1
    y_axis, x_axis = (-3, -2) if has_channels else (-2, -1)
    height, width = img.shape[y_axis], img.shape[x_axis]
    if compiled():
        return _separable_filter_compiled(img, kx, ky, channels, height, width, border, border_value, finish)
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


def compiled_finish(finish: tuple) -> tuple[int, int, int, float, int, int]:
    """``finish`` as the compiled loops' scalars: (mode code, p0, p1, float32 1/A, lo, hi)."""
    from ._separable_pass_numba import FINISH_CODE

    mode, p0, p1, out = finish
    lo, hi = OUT_DTYPES[out]
    inv = float(np.asarray(p1, dtype=np.uint32).view(np.float32)) if mode == "box_float32" else 0.0
    return FINISH_CODE[mode], int(p0), int(p1), inv, lo, hi


def loop_input(img: np.ndarray, shape: tuple[int, int, int]) -> np.ndarray:
    """``img`` as the compiled loops read it: C-contiguous, ``(planes, H, W * C)``, and read-only
    (a view; Numba compiles read-only and writeable arrays apart, so this keeps one signature)."""
    x = np.ascontiguousarray(img).reshape(shape).view()
    x.flags.writeable = False
    return x


def pass_taps(taps: Any, sums: Any) -> np.ndarray:
    """Taps as the compiled loops take them: int16 for a pass whose sums are 16-bit (they fit:
    sums bounded by 255 * sum|taps| <= 65535 bound every tap by 257; int16 taps let LLVM keep the
    loop in 16-bit lanes), int32 otherwise. Tying the taps' type to the sums' keeps the
    compiled signatures few."""
    taps = np.asarray(taps, np.int64)
    return taps.astype(np.int16) if np.dtype(sums).itemsize == 2 else taps.astype(np.int32)


@functools.lru_cache(maxsize=64)
def padded_sources(n: int, taps: int, border: str) -> np.ndarray:
    """The source index of each of the ``n + taps - 1`` positions an axis of ``n`` is padded to
    for ``taps`` taps (anchor ``taps // 2``; -1: the constant), by ``_border.border_indices``;
    cached per size (21 us a call at 1080p, more than a tenth of a compiled blur's time)."""
    from ._border import border_indices

    table = border_indices(n, taps // 2, taps - 1 - taps // 2, border).astype(np.int64)
    table.flags.writeable = False
    return table


def _separable_filter_compiled(img: Any, kx: tuple, ky: tuple, channels: int, height: int, width: int, border: str,
                               border_value: int, finish: tuple) -> Any:
    """The NumPy override's compiled path: bands of rows, each one call of ``separable_band``."""
    from ._separable_pass_numba import separable_band
    from .backends.numpy import host_threads, row_bands, run_bands, scratch

    n = width * channels
    planes = img.size // (height * n)
    x = loop_input(img, (planes, height, n))
    out = np.empty((planes, height, n), dtype=finish[3])
    xsrc = padded_sources(width, len(kx), border)
    ysrc = padded_sources(height, len(ky), border)
    # The vertical sums (over uint8 rows) are bounded by 255 * sum|ky|, the outputs' by
    # 255 * sum|kx| * sum|ky| (check_accumulator keeps it within int32): each is kept in the
    # narrowest of uint16 / int16 / int32 that holds it, and the loops compute in that width
    # (twice the SIMD lanes of int32 where 16 bits hold it); the arithmetic is modulo 2**16 or
    # 2**32 then, which gives the exact sums (so the portable bits) since they fit.
    sx, sy = sum(abs(t) for t in kx), sum(abs(t) for t in ky)
    column_dtype = _sum_dtype(255 * sy, min(ky) >= 0)
    sum_dtype = _sum_dtype(255 * sx * sy, min(kx) >= 0 and min(ky) >= 0)
    tx, ty = pass_taps(kx, sum_dtype), pass_taps(ky, column_dtype)
    fin = compiled_finish(finish)
    outside = np.full(n, border_value, np.uint8)  # a constant border's rows

    def band(item: tuple[int, int, int]) -> None:
        p, r0, r1 = item
        column = scratch("separable-column", ((width + len(kx) - 1) * channels,), column_dtype)
        acc = scratch("separable-acc", (n,), sum_dtype)
        separable_band(x, out, p, r0, r1, tx, ty, xsrc, ysrc, channels, int(border_value), *fin, outside, column, acc)

    # One band per thread and plane: the loop streams rows (no band buffer to keep in cache), and
    # every call costs the dispatcher's argument checks.
    run_bands(band, row_bands(height, n, planes=planes, target=-(-height // host_threads()) * n))
    return out.reshape(img.shape)
