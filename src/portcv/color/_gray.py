"""RGB to gray in OpenCV's fixed point: the portable kernel (its CuPy override: ``_gray_cuda.py``)."""

from __future__ import annotations

from typing import Any

from .. import _validate
from .._kernel import kernel
from ..backends import backend

_METHODS = ("weighted", "average")


@kernel("rgb_to_gray")
def _rgb_to_gray_kernel(xp: Any, rgb: Any, *, method: str) -> Any:
    r = xp.astype(rgb[..., 0], xp.int32)
    g = xp.astype(rgb[..., 1], xp.int32)
    b = xp.astype(rgb[..., 2], xp.int32)
    if method == "weighted":
        # OpenCV's 15-bit weights (sum 32768), round half up; max 255*32768 + 16384 fits int32.
        y = (9798 * r + 19235 * g + 3735 * b + 16384) >> 15
    else:
        # (R + G + B) // 3 as a multiply and shift: 21846 / 2^16 exceeds 1/3 by under 1.1e-5, so
        # for sums up to 765 the quotient never crosses the next integer (exact; tested on every
        # sum). XLA lowers the signed floor division to a division plus sign fix-ups, which made
        # JAX's "average" half again slower than "weighted" on a GPU.
        y = ((r + g + b) * 21846) >> 16
    return xp.astype(y, xp.uint8)


#: method -> (weights of R, G, B; rounding term; shift) of the portable version.
_FIXED_POINT = {"weighted": ((9798, 19235, 3735), 16384, 15), "average": ((21846,) * 3, 0, 16)}


@_rgb_to_gray_kernel.override("numpy", supports="uint8 images (others: the portable version)")
def _rgb_to_gray_numpy(rgb: Any, *, method: str) -> Any:
    import numpy as np

    from ..backends.numpy import run_bands

    from ..backends.numpy import compiled, run_bands

    if rgb.dtype != np.uint8 or rgb.size == 0:
        return _rgb_to_gray_kernel.portable(backend().xp, rgb, method=method)
    weights, rounding, shift = _FIXED_POINT[method]
    if compiled():
        from ._gray_numba import gray_pixels

        flat = np.ascontiguousarray(rgb).reshape(-1)
        out = np.empty(flat.size // 3, np.uint8)
        step = max(1 << 16, -(-out.size // 16))  # bands of 64 Ki pixels or more, shared by the threads
        run_bands(lambda start: gray_pixels(flat, out, start, min(start + step, out.size), weights, rounding, shift),
                  list(range(0, out.size, step)))
        return out.reshape(rgb.shape[:-1])
    # A float32 matrix-vector product is exact here: every product (<= 21846 * 255) and every
    # partial sum (<= 32768 * 255 + 16384, or 3 * 21846 * 255) is an integer below 2**24, so no
    # order of summation or FMA can round; (y + rounding) / 2**shift is exact too, and its floor
    # is the portable version's >> shift. The product reads the interleaved channels at memory
    # speed, where elementwise code would read them with a stride of 3.
    w = np.asarray(weights, np.float32)
    scale = np.float32(1.0 / (1 << shift))
    pixels = np.reshape(rgb, (-1, 3))
    out = np.empty(pixels.shape[0], np.uint8)
    band = 1 << 14  # pixels: the band's float32 copy stays in the core's cache

    def convert(start: int) -> None:
        y = pixels[start: start + band].astype(np.float32) @ w
        y += rounding
        y *= scale
        np.floor(y, out=y)
        out[start: start + band] = y

    # On the calling thread: the BLAS library may thread the product itself.
    run_bands(convert, list(range(0, pixels.shape[0], band)), threads=1)
    return out.reshape(rgb.shape[:-1])



def rgb_to_gray(image: Any, *, method: str = "weighted") -> Any:
    """Convert an RGB image to gray.

    ``weighted`` (default): ``Y = (9798 R + 19235 G + 3735 B + 2**14) >> 15``, OpenCV's
    fixed-point form of ``0.299 R + 0.587 G + 0.114 B``, equal bit-for-bit to
    ``cv2.cvtColor(img, cv2.COLOR_RGB2GRAY)``. ``average``: ``(R + G + B) // 3``, truncating as the
    Webcam Streaming & Filters report's code does (its section 7, "Grayscale Filter": average and weighted methods).

    Parameters
    ----------
    image : (..., H, W, 3) uint8 array
        RGB channel order (pass BGR images reversed, ``img[..., ::-1]``).
    method : {'weighted', 'average'}

    Returns
    -------
    (..., H, W) uint8 array on the active backend.

    Examples
    --------
    >>> import numpy as np, portcv
    >>> rgb = np.array([[[255, 0, 0], [0, 255, 0], [10, 20, 30]]], np.uint8)
    >>> portcv.to_numpy(portcv.color.rgb_to_gray(rgb))
    array([[ 76, 150,  18]], dtype=uint8)
    >>> portcv.to_numpy(portcv.color.rgb_to_gray(rgb, method="average"))
    array([[85, 85, 20]], dtype=uint8)
    """
    img = _validate.image(image, min_ndim=3, channels=(3,))
    method = _validate.choice(method, "method", _METHODS)
    return _rgb_to_gray_kernel(img, method=method)
