"""The separable-filter kernel: exact integer horizontal + vertical taps, then one rounding.

Shared by every filter that is a separable correlation (Gaussian, box, Sobel, user taps): the
portable array-API version (NumPy reference, JAX under jit) and its CuPy override, which runs
``cuda/filters.cu``. The Rice paper's separable convolution (section II-A, eq. 2-3).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._border import BORDER_CODE, pad_axis
from ._kernel import kernel

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


def _finish(xp: Any, acc: Any, finish: tuple) -> Any:
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
        # The webcam report's truncating mean: floor(acc / p0), p0 > 0, exact integer division.
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
    return _finish(xp, acc, finish)


@separable_filter_kernel.override("cupy")
def _separable_filter_cupy(
    img: Any, *, kx: tuple, ky: tuple, has_channels: bool, border: str, border_value: int, finish: tuple
) -> Any:
    import cupy

    from .backends.cupy import cuda_function, device_constant

    channels = img.shape[-1] if has_channels else 1
    if not 1 <= channels <= 4 or len(kx) > MAX_TAPS or len(ky) > MAX_TAPS:
        return NotImplemented
    mode, p0, p1, out_name = finish
    # 32-row tiles halve the vertical halo's share; big kernels use 16 to stay under 48 KB of shared memory.
    tile_h = 16 if len(ky) > 15 or len(kx) * channels > 64 else 32
    fn = cuda_function(
        "filters.cu",
        f"portcv_separable_filter<{len(kx)},{len(ky)},{channels},{_CUDA_TYPE[out_name]},{_FINISH_CODE[mode]},{tile_h}>",
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
