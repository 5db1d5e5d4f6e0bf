"""Channel-layout kernels: gray to RGB (replicate) and RGB <-> BGR (reverse, alpha kept last).

Pure data movement, exact by construction; the portable versions are single stacks
of channel planes, which CuPy and JAX run as one copy each, so there is no CUDA override.
"""

from __future__ import annotations

from typing import Any

from .. import _validate
from .._kernel import kernel


@kernel("gray_to_rgb")
def gray_to_rgb_kernel(xp: Any, gray: Any) -> Any:
    """``(..., H, W)`` -> ``(..., H, W, 3)`` with the value in every channel (cv2.COLOR_GRAY2RGB)."""
    return xp.stack([gray, gray, gray], axis=-1)


@kernel("swap_red_blue")
def swap_red_blue_kernel(xp: Any, img: Any) -> Any:
    """Channels 0 and 2 exchanged, a 4th (alpha) channel kept last (cv2.COLOR_RGBA2BGRA).

    A copy (``stack``; NumPy stacks channel planes faster than it gathers with ``take``), never a
    view of the input: the result may be written without touching it.
    """
    order = (2, 1, 0) if img.shape[-1] == 3 else (2, 1, 0, 3)
    return xp.stack([img[..., c] for c in order], axis=-1)


# --------------------------------------------------------------------------------------------
# Channel layout (cv2.COLOR_GRAY2RGB, COLOR_RGB2BGR, COLOR_RGBA2BGRA)
# --------------------------------------------------------------------------------------------
def gray_to_rgb(image: Any, *, channel_axis: Any = "auto") -> Any:
    """Replicate a gray image into three equal channels, like ``cv2.COLOR_GRAY2RGB``.

    The Webcam Streaming & Filters report keeps gray frames on three channels with "the same value" in each
    (section 7.1); this is that layout, for display or for RGB-only consumers.

    Parameters
    ----------
    image : (..., H, W) uint8 array, or (..., H, W, 1) with ``channel_axis=-1``
    channel_axis : {'auto', None, -1}
        ``'auto'`` (default): as ``-1`` when ``ndim >= 3`` and the last axis has at most 4
        entries; it must then be 1 (a colour image is refused, not replicated). ``None``: every
        axis is an image or batch axis, a gray image has no channel axis. ``-1``: the last axis
        is a single channel, replaced by three.

    Returns
    -------
    (..., H, W, 3) uint8 array on the active backend.

    Examples
    --------
    >>> import numpy as np, portcv
    >>> portcv.to_numpy(portcv.color.gray_to_rgb(np.array([[0, 7]], np.uint8)))
    array([[[0, 0, 0],
            [7, 7, 7]]], dtype=uint8)
    """
    img = _validate.image(image)
    if _validate.has_channels(img, channel_axis):
        if img.shape[-1] != 1:
            _validate.gray(img, "image", "auto")  # 3 or 4 channels: the colour rule's message
            raise ValueError(f"image must be gray: its last axis has {img.shape[-1]} channels (shape "
                             f"{tuple(img.shape)}); pass channel_axis=None if it is a batch of gray frames "
                             f"{img.shape[-1]} pixels wide")
        img = img[..., 0]
    return gray_to_rgb_kernel(img)


def rgb_to_bgr(image: Any) -> Any:
    """Reverse the colour channels, keeping alpha last: OpenCV's ``COLOR_RGB2BGR`` / ``COLOR_RGBA2BGRA``.

    Parameters
    ----------
    image : (..., H, W, 3) or (..., H, W, 4) uint8 array
        RGB or RGBA. The result is a new array (never a view of ``image``).

    Returns
    -------
    array of the same shape: BGR or BGRA, on the active backend.

    Notes
    -----
    The same permutation converts both ways; :func:`bgr_to_rgb` is its other name.

    Examples
    --------
    >>> import numpy as np, portcv
    >>> portcv.to_numpy(portcv.color.rgb_to_bgr(np.array([[[1, 2, 3, 4]]], np.uint8)))
    array([[[3, 2, 1, 4]]], dtype=uint8)
    """
    img = _validate.image(image, min_ndim=3, channels=(3, 4))
    return swap_red_blue_kernel(img)


def bgr_to_rgb(image: Any) -> Any:
    """Reverse the colour channels, keeping alpha last: OpenCV's ``COLOR_BGR2RGB`` / ``COLOR_BGRA2RGBA``.

    Parameters
    ----------
    image : (..., H, W, 3) or (..., H, W, 4) uint8 array
        BGR or BGRA (as ``cv2.imread`` and ``cv2.VideoCapture`` return them).

    Returns
    -------
    array of the same shape: RGB or RGBA, on the active backend.

    Examples
    --------
    >>> import numpy as np, portcv
    >>> portcv.to_numpy(portcv.color.bgr_to_rgb(np.array([[[10, 20, 30]]], np.uint8)))
    array([[[30, 20, 10]]], dtype=uint8)
    """
    img = _validate.image(image, min_ndim=3, channels=(3, 4))
    return swap_red_blue_kernel(img)
