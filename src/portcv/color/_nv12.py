"""YUV 4:2:0 (NV12, NV21, I420, YV12) to RGB/BGR in OpenCV's fixed point: the portable kernel.

``_nv12_cuda.py`` holds the CuPy override (``_nv12_cuda.cu``); the package imports it. The NumPy
override below is the same arithmetic in bands of rows: compiled with Numba (``_nv12_numba.py``)
where the ``cpu`` extra is installed, else vectorized NumPy.

The arithmetic is OpenCV's ``cvtColor`` for ``COLOR_YUV2RGB_NV12`` and its siblings
(``modules/imgproc/src/color_yuv.simd.hpp``): BT.601 limited range in Q20,

    y = max(0, Y - 16) * 1220542
    R = sat((y + 2**19 + 1673527 (V - 128)) >> 20)
    G = sat((y + 2**19 - 852492 (V - 128) - 409993 (U - 128)) >> 20)
    B = sat((y + 2**19 + 2116026 (U - 128)) >> 20)

with an arithmetic shift (floor) and saturation to [0, 255]. Each 2 x 2 block of luma takes the
one chroma sample at its block's position (no interpolation). Every intermediate is below 2**30
in magnitude (239 * 1220542 + 2**19 + 127 * 2116026 < 5.7e8), so int32 holds it on every backend.
"""

from __future__ import annotations

from typing import Any

from .. import _validate
from .._kernel import kernel

#: OpenCV's ITUR_BT_601_* constants of the YUV 4:2:0 -> RGB conversion (Q20).
CY, CUB, CUG, CVG, CVR, SHIFT = 1220542, 2116026, -409993, -852492, 1673527, 20
ROUND = 1 << (SHIFT - 1)

_LAYOUTS = ("nv12", "i420")
_CHROMA_ORDERS = ("uv", "vu")
_CHANNEL_ORDERS = ("rgb", "bgr")


def _chroma_planes(xp: Any, yuv: Any, *, layout: str, chroma_order: str) -> tuple[Any, Any]:
    """The ``(..., H/2, W/2)`` U and V planes of a ``(..., 3H/2, W)`` frame."""
    rows, w = yuv.shape[-2], yuv.shape[-1]
    h = rows * 2 // 3
    lead = tuple(yuv.shape[:-2])
    chroma = yuv[..., h:, :]  # (..., H/2, W): interleaved pairs (NV12) or two planes in a row (I420)
    if layout == "nv12":
        pairs = xp.reshape(chroma, lead + (h // 2, w // 2, 2))
        first, second = pairs[..., 0], pairs[..., 1]
    else:
        # I420 is three planes one after the other: (H/2 * W/2) U bytes, then as many V bytes,
        # read through the frame's W-wide rows (a chroma row may start mid-row when W/2 is odd).
        flat = xp.reshape(chroma, lead + (h // 2 * w,))
        quarter = h // 2 * (w // 2)
        first = xp.reshape(flat[..., :quarter], lead + (h // 2, w // 2))
        second = xp.reshape(flat[..., quarter:], lead + (h // 2, w // 2))
    return (first, second) if chroma_order == "uv" else (second, first)


@kernel("yuv420_to_rgb")
def _yuv420_to_rgb_kernel(xp: Any, yuv: Any, *, layout: str, chroma_order: str, channel_order: str) -> Any:
    rows, w = yuv.shape[-2], yuv.shape[-1]
    h = rows * 2 // 3
    lead = tuple(yuv.shape[:-2])
    u, v = _chroma_planes(xp, yuv, layout=layout, chroma_order=chroma_order)
    uu = xp.astype(u, xp.int32) - 128
    vv = xp.astype(v, xp.int32) - 128
    # The chroma terms once per 2 x 2 block, as OpenCV's uvToRGBuv, then broadcast over the block.
    ruv = (ROUND + CVR * vv)[..., :, None, :, None]
    guv = (ROUND + CVG * vv + CUG * uu)[..., :, None, :, None]
    buv = (ROUND + CUB * uu)[..., :, None, :, None]
    luma = xp.reshape(yuv[..., :h, :], lead + (h // 2, 2, w // 2, 2))
    y = xp.maximum(xp.astype(luma, xp.int32) - 16, 0) * CY
    r = xp.clip((y + ruv) >> SHIFT, 0, 255)
    g = xp.clip((y + guv) >> SHIFT, 0, 255)
    b = xp.clip((y + buv) >> SHIFT, 0, 255)
    channels = (r, g, b) if channel_order == "rgb" else (b, g, r)
    out = xp.astype(xp.stack(channels, axis=-1), xp.uint8)
    return xp.reshape(out, lead + (h, w, 3))


@_yuv420_to_rgb_kernel.override("numpy", supports="every input (bands of block rows on the host's threads)")
def _yuv420_to_rgb_numpy(yuv: Any, *, layout: str, chroma_order: str, channel_order: str) -> Any:
    import numpy as np

    from ..backends.numpy import compiled, row_bands, run_bands

    rows, w = yuv.shape[-2], yuv.shape[-1]
    h = rows * 2 // 3
    frames = np.ascontiguousarray(yuv).reshape(-1, rows, w)
    out = np.empty((frames.shape[0], h, w, 3), np.uint8)
    if compiled():
        from ._nv12_numba import yuv420_block_rows

        flat, dst = frames.reshape(-1), out.reshape(-1)
        nv12, swap, bgr = layout == "nv12", chroma_order == "vu", channel_order == "bgr"
        q20 = (CY, CUB, CUG, CVG, CVR, ROUND, SHIFT)
        # Bands of block rows of about 2**18 luma pixels (8 per 1080p frame), shared by the threads.
        run_bands(lambda band: yuv420_block_rows(flat, dst, h, w, band[0], band[1], band[2], nv12, swap, bgr, q20),
                  row_bands(h // 2, 2 * w, planes=frames.shape[0], target=1 << 18))
        return out.reshape(tuple(yuv.shape[:-2]) + (h, w, 3))
    # The portable version's broadcast of a block's terms over (..., 2, W/2, 2) runs NumPy's inner
    # loops two elements at a time; here the terms are repeated along the row first (inner loops
    # of W), and bands of block rows keep the int32 temporaries in the core's cache.
    order = (0, 1, 2) if channel_order == "rgb" else (2, 1, 0)

    def convert(band: tuple[int, int, int]) -> None:
        f, j0, j1 = band
        frame = frames[f]
        if layout == "nv12":
            pairs = frame[h + j0: h + j1].reshape(j1 - j0, w // 2, 2)
            first, second = pairs[..., 0], pairs[..., 1]
        else:
            chroma = frame[h:].reshape(2, h // 2, w // 2)
            first, second = chroma[0, j0:j1], chroma[1, j0:j1]
        u, v = (first, second) if chroma_order == "uv" else (second, first)
        uu = np.repeat(u.astype(np.int32) - 128, 2, axis=-1)[:, None]  # (band, 1, W)
        vv = np.repeat(v.astype(np.int32) - 128, 2, axis=-1)[:, None]
        y = frame[2 * j0: 2 * j1].reshape(j1 - j0, 2, w).astype(np.int32)
        y -= 16
        np.maximum(y, 0, out=y)
        y *= CY
        dst = out[f, 2 * j0: 2 * j1].reshape(j1 - j0, 2, w, 3)
        t = np.empty_like(y)
        terms = (ROUND + CVR * vv, ROUND + CVG * vv + CUG * uu, ROUND + CUB * uu)
        for channel, term in zip(order, terms):
            np.add(y, term, out=t)
            t >>= SHIFT
            np.clip(t, 0, 255, out=t)
            dst[..., channel] = t

    run_bands(convert, row_bands(h // 2, 2 * w, planes=frames.shape[0], target=1 << 16))
    return out.reshape(tuple(yuv.shape[:-2]) + (h, w, 3))


def _frames(yuv: Any, name: str) -> Any:
    """Check a ``(..., 3H/2, W)`` uint8 4:2:0 frame (or batch) and move it to the active backend."""
    x = _validate.image(yuv, name, min_ndim=2)
    rows, w = x.shape[-2], x.shape[-1]
    if rows % 3 or w % 2:
        raise ValueError(
            f"{name} must be a YUV 4:2:0 frame of shape (..., 3H/2, W) with even H and W (rows a multiple "
            f"of 3, even width), got shape {tuple(x.shape)}; as in cv2.cvtColor, odd frame sizes are not defined")
    return x


def _convert(yuv: Any, name: str, layout: str, chroma_order: str, channel_order: str) -> Any:
    x = _frames(yuv, name)
    chroma_order = _validate.choice(chroma_order, "chroma_order", _CHROMA_ORDERS)
    return _yuv420_to_rgb_kernel(x, layout=layout, chroma_order=chroma_order, channel_order=channel_order)


def nv12_to_rgb(nv12: Any, *, chroma_order: str = "uv") -> Any:
    """Convert an NV12 frame (NVDEC's and most hardware decoders' output) to RGB.

    Equal bit for bit to ``cv2.cvtColor(nv12, cv2.COLOR_YUV2RGB_NV12)``: BT.601 limited range in
    OpenCV's Q20 fixed point, each 2 x 2 block of pixels sharing its one chroma pair.

    Parameters
    ----------
    nv12 : (..., 3H/2, W) uint8 array
        One NV12 frame of H x W pixels as a decoder hands it (and as ``cv2.cvtColor`` takes
        it): H rows of luma, then H/2 rows of interleaved U, V pairs (one pair per 2 x 2
        block). H and W must be even. Leading axes are a batch of frames. An array of any
        backend; views and read-only arrays are fine; it is not modified.
    chroma_order : {'uv', 'vu'}
        ``'uv'`` (NV12, the default); ``'vu'``: NV21, V before U (``COLOR_YUV2RGB_NV21``).

    Returns
    -------
    (..., H, W, 3) uint8 array on the active backend, in RGB order.

    Raises
    ------
    TypeError
        ``nv12`` is not a uint8 array.
    ValueError
        ``nv12`` has fewer than 2 dimensions or is empty, its rows are not a multiple of 3 or
        its width is odd (OpenCV does not define odd frame sizes either); ``chroma_order`` is
        unknown.

    Examples
    --------
    >>> import numpy as np, portcv
    >>> nv12 = np.array([[16, 235], [126, 81], [128, 128]], np.uint8)  # 2 x 2 luma, then one U, V pair
    >>> portcv.to_numpy(portcv.color.nv12_to_rgb(nv12))  # U = V = 128: grays
    array([[[  0,   0,   0],
            [255, 255, 255]],
    <BLANKLINE>
           [[128, 128, 128],
            [ 76,  76,  76]]], dtype=uint8)
    """
    return _convert(nv12, "nv12", "nv12", chroma_order, "rgb")


def nv12_to_bgr(nv12: Any, *, chroma_order: str = "uv") -> Any:
    """Convert an NV12 frame to BGR (OpenCV's channel order).

    Equal bit for bit to ``cv2.cvtColor(nv12, cv2.COLOR_YUV2BGR_NV12)``; the arithmetic of
    :func:`nv12_to_rgb`, the channels written blue first.

    Parameters
    ----------
    nv12 : (..., 3H/2, W) uint8 array
        One NV12 frame of H x W pixels as a decoder hands it (and as ``cv2.cvtColor`` takes
        it): H rows of luma, then H/2 rows of interleaved U, V pairs (one pair per 2 x 2
        block). H and W must be even. Leading axes are a batch of frames. An array of any
        backend; views and read-only arrays are fine; it is not modified.
    chroma_order : {'uv', 'vu'}
        ``'uv'`` (NV12, the default); ``'vu'``: NV21, V before U (``COLOR_YUV2RGB_NV21``).

    Returns
    -------
    (..., H, W, 3) uint8 array on the active backend, in BGR order.

    Raises
    ------
    TypeError
        ``nv12`` is not a uint8 array.
    ValueError
        ``nv12`` has fewer than 2 dimensions or is empty, its rows are not a multiple of 3 or
        its width is odd (OpenCV does not define odd frame sizes either); ``chroma_order`` is
        unknown.

    Examples
    --------
    >>> import numpy as np, portcv
    >>> nv12 = np.array([[81, 81], [81, 81], [90, 240]], np.uint8)  # BT.601 red
    >>> portcv.to_numpy(portcv.color.nv12_to_bgr(nv12))[0, 0]
    array([  0,   0, 254], dtype=uint8)
    """
    return _convert(nv12, "nv12", "nv12", chroma_order, "bgr")


def i420_to_rgb(yuv: Any, *, chroma_order: str = "uv") -> Any:
    """Convert an I420 frame (FFmpeg's and PyAV's ``yuv420p``) to RGB.

    Equal bit for bit to ``cv2.cvtColor(yuv, cv2.COLOR_YUV2RGB_I420)``; the arithmetic of
    :func:`nv12_to_rgb`. PyAV's ``frame.to_ndarray()`` of a ``yuv420p`` frame is this layout.

    Parameters
    ----------
    yuv : (..., 3H/2, W) uint8 array
        One I420 frame of H x W pixels as a decoder hands it (and as ``cv2.cvtColor`` takes
        it): H rows of luma, then the H/2 x W/2 U plane and then the V plane, packed row
        after row. H and W must be even. Leading axes are a batch of frames. An array of any
        backend; views and read-only arrays are fine; it is not modified.
    chroma_order : {'uv', 'vu'}
        ``'uv'`` (I420, the default); ``'vu'``: YV12, the V plane first (``COLOR_YUV2RGB_YV12``).

    Returns
    -------
    (..., H, W, 3) uint8 array on the active backend, in RGB order.

    Raises
    ------
    TypeError
        ``yuv`` is not a uint8 array.
    ValueError
        ``yuv`` has fewer than 2 dimensions or is empty, its rows are not a multiple of 3 or
        its width is odd (OpenCV does not define odd frame sizes either); ``chroma_order`` is
        unknown.

    Examples
    --------
    >>> import numpy as np, portcv
    >>> yuv = np.array([[81, 81], [81, 81], [90, 240]], np.uint8)  # 2 x 2 luma, then U, then V
    >>> portcv.to_numpy(portcv.color.i420_to_rgb(yuv))[0, 0]
    array([254,   0,   0], dtype=uint8)
    """
    return _convert(yuv, "yuv", "i420", chroma_order, "rgb")


def i420_to_bgr(yuv: Any, *, chroma_order: str = "uv") -> Any:
    """Convert an I420 frame to BGR (OpenCV's channel order).

    Equal bit for bit to ``cv2.cvtColor(yuv, cv2.COLOR_YUV2BGR_I420)``; the arithmetic of
    :func:`nv12_to_rgb`, the channels written blue first.

    Parameters
    ----------
    yuv : (..., 3H/2, W) uint8 array
        One I420 frame of H x W pixels as a decoder hands it (and as ``cv2.cvtColor`` takes
        it): H rows of luma, then the H/2 x W/2 U plane and then the V plane, packed row
        after row. H and W must be even. Leading axes are a batch of frames. An array of any
        backend; views and read-only arrays are fine; it is not modified.
    chroma_order : {'uv', 'vu'}
        ``'uv'`` (I420, the default); ``'vu'``: YV12, the V plane first (``COLOR_YUV2RGB_YV12``).

    Returns
    -------
    (..., H, W, 3) uint8 array on the active backend, in BGR order.

    Raises
    ------
    TypeError
        ``yuv`` is not a uint8 array.
    ValueError
        ``yuv`` has fewer than 2 dimensions or is empty, its rows are not a multiple of 3 or
        its width is odd (OpenCV does not define odd frame sizes either); ``chroma_order`` is
        unknown.

    Examples
    --------
    >>> import numpy as np, portcv
    >>> yuv = np.array([[81, 81], [81, 81], [90, 240]], np.uint8)
    >>> portcv.to_numpy(portcv.color.i420_to_bgr(yuv))[0, 0]
    array([  0,   0, 254], dtype=uint8)
    """
    return _convert(yuv, "yuv", "i420", chroma_order, "bgr")
