"""Text overlays from a built-in bitmap font."""

from __future__ import annotations

import base64
import functools
from typing import Any

import numpy as np

from .. import _validate
from .._kernel import kernel
from ..backends import asarray, backend

#: Pillow's built-in bitmap font (``ImageFont.load_default_imagefont()``), characters 32..126,
#: 11 rows of 6 pixels each, one byte per row (bit 5 = leftmost pixel). Embedded so the glyphs
#: cannot change with the Pillow version; tests/draw/test_draw.py checks them against Pillow.
GLYPH_WIDTH, GLYPH_HEIGHT = 6, 11

_FIRST, _LAST = 32, 126
_FONT_B64 = (
    "AAAAAAAAAAAAAAAAAAAYGBgYABgAAAAAABQUFAAAAAAAAAAUFD4UFD4UFAAACB4yPB4GNjwIAAAAOCo8CB4qDgAAAAAAHDAYPiw+AAAAAAwI"
    "EAAAAAAAAAAABAgYGBgYCAQAAAAQCAwMDAwIEAAAAAg8GCQAAAAAAAAAAAgIPggIAAAAAAAAAAAAAAAMCBAAAAAAAD4AAAAAAAAAAAAAAAAAGAAA"
    "AAACAgQECAgQEAAAABw2NjY2NhwAAAAADDwMDAwMPwAAAAAcNgYMGDY+AAAAABw2BhwGNhwAAAAABg4WNj8GBgAAAAA+MDw2BiY8AAAAABw2MDw2"
    "NhwAAAAAPjYGDAwYGAAAAAAcNjYcNjYcAAAAABw2Nh4GNhwAAAAAAAAAGAAAGAAAAAAAAAAYAAAYECAAAAAMGDAYDAAAAAAAAAA8ADwAAAAAAAAA"
    "GAwGDBgAAAAAAAAcJgwYABgAAAAAHDImKionMBwAAAAAPBwUPjY3AAAAAAA8Njw2NjwAAAAAAB42MDA2HAAAAAAAPDY2NjY8AAAAAAA+MDwwNj4A"
    "AAAAAD4wPDAwOAAAAAAAHDYwPjYeAAAAAAA3Nj42NjcAAAAAADwYGBgYPAAAAAAAHgwMLCw4AAAAAAA2NDg8NjsAAAAAADgwMDA2PgAAAAAAIjY2"
    "PioqAAAAAAA3Ojo2NjIAAAAAABw2NjY2HAAAAAAAPDY2PDA4AAAAAAAcNjY2NhwGAAAAADw2Njw2OwAAAAAAHjI8DiY8AAAAAAA+GhgYGDwAAAAA"
    "ADc2NjY2HAAAAAAANzYUHBwIAAAAAAArKio+HBQAAAAAADMeDAweMwAAAAAAMzMeDAweAAAAAAA+NgwYNj4AAAAAHBgYGBgYGBwAAAAgIBAQCAgE"
    "BAAAABwMDAwMDAwcAAAACBw2AAAAAAAAAAAAAAAAAAAAAD8AABgIBAAAAAAAAAAAAAAcNh42PwAAAAAwMDw2NjY8AAAAAAAAHDYwNhwAAAAADgYe"
    "NjY2HwAAAAAAABw2PjAeAAAAAA4YPhgYGD4AAAAAAAAbNjY2HgY8AAAwMDw2NjY2AAAAAAwAPAwMDD8AAAAADAA8DAwMDAw4AAAwMDY8ODw3AAAA"
    "ADwMDAwMDD8AAAAAAAA8PioqKgAAAAAAACw2NjY2AAAAAAAAHDY2NhwAAAAAAAA8NjY2PDA4AAAAABs2NjYeBg8AAAAANx0YGDwAAAAAAAAeOB4H"
    "PgAAAAAYGD4YGBsOAAAAAAAANjY2Nh8AAAAAAAA2NhwcCAAAAAAAACsqPh4UAAAAAAAAOx4MHjcAAAAAAAA3NjYUHBgwAAAAAD4sGDY+AAAAAAYM"
    "DBgMDAwGAAAAAAgICAgICAgAAAAwGBgMGBgYMAAAAAAAGiwAAAAAAA=="
)


@functools.lru_cache(maxsize=1)
def glyph_atlas() -> np.ndarray:
    """The glyphs of characters 32..126: ``(95, 11, 6)`` bool, True where the glyph is drawn.

    Examples
    --------
    >>> atlas = glyph_atlas()
    >>> atlas.shape, int(atlas[ord("I") - 32].sum()) > 0, int(atlas[0].sum())
    ((95, 11, 6), True, 0)
    """
    rows = np.frombuffer(base64.b64decode(_FONT_B64), np.uint8).reshape(_LAST - _FIRST + 1, GLYPH_HEIGHT, 1)
    bits = (rows >> np.arange(GLYPH_WIDTH - 1, -1, -1, dtype=np.uint8)) & 1
    atlas = bits.astype(bool)
    atlas.flags.writeable = False
    return atlas


@functools.lru_cache(maxsize=64)
def _text_mask(text: str, scale: int) -> np.ndarray:
    atlas = glyph_atlas()
    line = np.concatenate([atlas[ord(c) - _FIRST] for c in text], axis=1)  # (11, 6 * len)
    return np.repeat(np.repeat(line, scale, axis=0), scale, axis=1)


@kernel("text_overlay")
def _text_overlay_kernel(xp: Any, image: Any, mask: Any, *, y0: int, x0: int, color: tuple,
                        background: tuple | None, has_channels: bool) -> Any:
    """Portable blit: inside the box at (y0, x0) of mask's shape, ``color`` where mask, else background."""
    import array_api_extra as xpx

    h, w = mask.shape
    if has_channels:
        box = (..., slice(y0, y0 + h), slice(x0, x0 + w), slice(None))
        m = mask[:, :, None]
    else:
        box = (..., slice(y0, y0 + h), slice(x0, x0 + w))
        m = mask
    region = image[box]
    fg = xp.asarray(color if has_channels else color[0], dtype=xp.uint8)
    bg = region if background is None else xp.asarray(background if has_channels else background[0], dtype=xp.uint8)
    return xpx.at(image, box).set(xp.where(m, fg, bg), copy=True)  # never into the caller's array


def _colour(value: Any, name: str, channels: int) -> tuple[int, ...]:
    values = (value,) * channels if isinstance(value, (int, np.integer)) and not isinstance(value, bool) else value
    try:
        values = tuple(values)
    except TypeError:
        raise TypeError(f"{name} must be an integer or a tuple of {channels} integers, got {value!r}") from None
    if len(values) != channels:
        raise ValueError(f"{name} must have {channels} values (one per channel), got {value!r}")
    return tuple(_validate.integer(v, name, low=0, high=255) for v in values)


def text_overlay(image: Any, text: str, *, origin: tuple[int, int] = (0, 0), scale: int = 1,
                 color: Any = None, background: Any = None, channel_axis: Any = "auto") -> Any:
    """Write one line of ASCII text on a frame from a bitmap glyph atlas (the report's section 3).

    Parameters
    ----------
    image : (..., H, W) or (..., H, W, C) uint8 array
        Every frame of a batch gets the same text.
    text : str
        Printable ASCII (codes 32 to 126), one line.
    origin : (x, y) ints
        Top-left corner of the first glyph, in pixels; may lie partly or wholly outside the image
        (the text is clipped).
    scale : int in [1, 64]
        Each glyph pixel becomes a ``scale x scale`` block (nearest neighbour): glyphs are
        ``6*scale`` wide and ``11*scale`` tall.
    color : int or tuple of C ints in [0, 255], optional
        Colour of the glyph pixels (default: white, 255 in every channel).
    background : None, int or tuple of C ints
        ``None`` (default): only glyph pixels are written. A colour: the whole text box is
        filled first, as the report's glyph frames (green text on black) replace the pixels
        under them.
    channel_axis : {'auto', None, -1}
        As in :func:`portcv.color.histogram`.

    Returns
    -------
    uint8 array, the shape of ``image``.

    Notes
    -----
    The Webcam Streaming & Filters report renders each character of its alphabet once with OpenCV's ``putText``
    into a glyph frame, copies the frames to the GPU once, and blits one per character (3.1,
    with 16-byte stores in 3.1.2, constant memory tried in 3.1.3). portcv's atlas is Pillow's
    built-in 6x11 bitmap font, embedded in the package (no font rendering at run time, and the
    same pixels everywhere); the glyphs are scaled by integer replication on the host and the
    box is written in one functional update. Each glyph is exactly Pillow's rendering of that
    character alone, in its own 6x11 cell. (When Pillow draws a whole string, some glyphs
    reach one pixel into the previous cell, and a cell's last column can be overwritten by the
    next glyph; portcv's cells never overlap.)

    Examples
    --------
    >>> import numpy as np, portcv
    >>> out = portcv.to_numpy(portcv.draw.text_overlay(np.zeros((13, 14), np.uint8), "Hi", origin=(1, 1), color=255))
    >>> int(out.sum() // 255), out.shape
    (45, (13, 14))
    """
    img = _validate.image(image)
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    bad = [c for c in text if not _FIRST <= ord(c) <= _LAST]
    if bad:
        raise ValueError(f"text must be printable ASCII (codes 32-126), got {bad[0]!r}")
    if not isinstance(origin, (tuple, list)) or len(origin) != 2:
        raise ValueError(f"origin must be an (x, y) pair, got {origin!r}")
    x, y = (_validate.integer(v, "origin", low=-(2**31), high=2**31 - 1) for v in origin)
    scale = _validate.integer(scale, "scale", low=1, high=64)
    has_channels = _validate.has_channels(img, channel_axis)
    channels = img.shape[-1] if has_channels else 1
    color = _colour((255,) * channels if color is None else color, "color", channels)
    background = None if background is None else _colour(background, "background", channels)
    if not text:
        return backend().xp.asarray(img, copy=True)  # a new array, as for any other text
    height, width = (img.shape[-3], img.shape[-2]) if has_channels else (img.shape[-2], img.shape[-1])
    mask = _text_mask(text, scale)
    # Clip the box to the image on the host: the kernel sees a static, in-bounds box.
    top, left = max(y, 0), max(x, 0)
    bottom, right = min(y + mask.shape[0], height), min(x + mask.shape[1], width)
    if top >= bottom or left >= right:
        return backend().xp.asarray(img, copy=True)
    visible = np.ascontiguousarray(mask[top - y : bottom - y, left - x : right - x])
    return _text_overlay_kernel(img, asarray(visible), y0=top, x0=left, color=color, background=background,
                               has_channels=has_channels)
