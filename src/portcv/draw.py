"""The webcam report's visualizers: heat map (section 4), noise map (section 5), text overlay (section 3);
and the Rice paper's face annotations (section IV.C): box outlines and scaled mask overlays.

All are exact on every backend: the heat map's sines become a colour table built once on
the host, the noise map is integer compares, the text comes from a bitmap glyph atlas
(Pillow's built-in 6x11 font, embedded here) blitted with integer scaling, box outlines are an
integer distance rule whose pixels are scattered, and masks are blended in integers. The portable
array-API code runs on NumPy, JAX (under ``jit``) and CuPy alike; there is no hand-written CUDA
for these (each is one elementwise pass, which CuPy's generated kernels already fuse well).
"""

from __future__ import annotations

import base64
import functools
import math
from typing import Any

import numpy as np

from . import _validate
from ._kernel import kernel
from .backends import asarray, owner_of

__all__ = ["heatmap", "heatmap_colors", "noise_map", "noise_map_from_positions", "text_overlay", "glyph_atlas",
           "boxes", "mask_overlay"]


# ---- heat map -------------------------------------------------------------------------------

@functools.lru_cache(maxsize=8)
def _heatmap_table(normalizer: int) -> tuple[int, ...]:
    out = []
    for d in range(766):
        x = d / normalizer  # float64 on the host, once
        for phase in (-math.pi / 2.0, 0.0, math.pi / 2.0):  # red, green, blue
            v = math.sin(math.pi * x + phase) * 255.0
            out.append(int(min(max(v, 0.0), 255.0)))  # C's double -> int: truncation
    return tuple(out)


def heatmap_colors(*, normalizer: int = 765) -> np.ndarray:
    """The heat map's colour table: ``(766, 3)`` uint8 RGB for every channel-difference sum.

    ``table[d] = trunc(clip(255 sin(pi x + phase), 0, 255))`` with ``x = d / normalizer`` and
    phases ``-pi/2`` (red), ``0`` (green), ``+pi/2`` (blue): the report's three phase-shifted
    sines (section 4.1), computed once in float64.

    Examples
    --------
    >>> t = heatmap_colors()
    >>> t.shape, t[0].tolist(), t[765].tolist()
    ((766, 3), [0, 0, 255], [255, 0, 0])
    """
    normalizer = _normalizer(normalizer)
    return np.array(_heatmap_table(normalizer), np.uint8).reshape(766, 3)


def _normalizer(value: Any) -> int:
    return _validate.integer(value, "normalizer", low=1, high=765)


@kernel("heatmap")
def _heatmap_kernel(xp: Any, previous: Any, current: Any, table: Any) -> Any:
    """Portable heat map: ``table[sum_c |previous - current|]`` per pixel, (..., H, W, 3) RGB."""
    diff = xp.abs(xp.astype(previous, xp.int16) - xp.astype(current, xp.int16))
    d = xp.sum(xp.astype(diff, xp.int32), axis=-1, dtype=xp.int32)  # <= 765
    colours = xp.take(table, xp.reshape(d, (-1,)), axis=0)
    return xp.reshape(colours, tuple(d.shape) + (3,))


def _rgb_pair(previous: Any, current: Any) -> tuple[Any, Any]:
    previous = _validate.image(previous, "previous", min_ndim=3, channels=(3,))
    current = _validate.image(current, "current", min_ndim=3, channels=(3,))
    if tuple(previous.shape) != tuple(current.shape):
        raise ValueError(f"previous and current must have the same shape, got {tuple(previous.shape)} "
                         f"and {tuple(current.shape)}")
    return previous, current


def heatmap(previous: Any, current: Any, *, normalizer: int = 765) -> Any:
    """Heat map of the change between two RGB frames: blue (none) to green to red (black <-> white).

    Parameters
    ----------
    previous, current : (..., H, W, 3) uint8 arrays
        Two frames of the same shape (RGB, or any 3-channel layout: the sum does not care).
    normalizer : int in [1, 765]
        ``x = d / normalizer`` with ``d = |dR| + |dG| + |dB|`` in ``[0, 765]``. 765 (default) is
        the report's text and CUDA kernel (``pixelDiff / (255*3.0)``, so ``x`` spans [0, 1]);
        its CPU code divides by ``255.0 * 2.0`` (510), which sends the largest changes past red
        and back towards blue. Pass 510 to reproduce the CPU code.

    Returns
    -------
    (..., H, W, 3) uint8 RGB array: ``heatmap_colors(normalizer=...)[d]``.

    Notes
    -----
    The webcam report, section 4 (``getHeatPixel`` and the CUDA kernel of 4.2.1):
    ``R = sin(pi x - pi/2)``, ``G = sin(pi x)``, ``B = sin(pi x + pi/2)``, each times 255,
    clamped to [0, 255] and truncated to an integer. The report evaluates the sines per pixel
    (``sin`` on the CPU, ``sinf`` on the GPU, which differ); portcv evaluates them once per
    possible ``d`` on the host in float64 (766 entries), so every backend returns the same bits.
    The report writes B, G, R into an OpenCV BGR image; portcv's output is RGB.

    Examples
    --------
    >>> import numpy as np, portcv
    >>> a = np.zeros((1, 3, 3), np.uint8)
    >>> b = np.array([[[0, 0, 0], [255, 0, 0], [255, 255, 255]]], np.uint8)
    >>> portcv.to_numpy(portcv.draw.heatmap(a, b))
    array([[[  0,   0, 255],
            [  0, 220, 127],
            [255,   0,   0]]], dtype=uint8)
    """
    previous, current = _rgb_pair(previous, current)
    table = asarray(heatmap_colors(normalizer=normalizer))
    return _heatmap_kernel(previous, current, table)


# ---- noise map ------------------------------------------------------------------------------

_BACKGROUNDS = ("black", "current", "previous")


def _set_red(xp: Any, image: Any, mark: Any) -> Any:
    """``image`` with channel 0 set to 255 where ``mark`` (..., H, W) holds."""
    red = xp.where(mark[..., None], xp.asarray(255, dtype=xp.uint8), image[..., 0:1])
    return xp.concat([red, image[..., 1:]], axis=-1)


@kernel("noise_map")
def _noise_map_kernel(xp: Any, previous: Any, current: Any, *, threshold: int, background: str) -> Any:
    """Portable noise map: red channel 255 where any channel changed by more than ``threshold``."""
    changed = (xp.maximum(previous, current) - xp.minimum(previous, current)) > threshold
    mark = xp.any(changed, axis=-1)
    if background == "black":
        base = xp.zeros_like(current)
    else:
        base = current if background == "current" else previous
    return _set_red(xp, base, mark)


def noise_map(previous: Any, current: Any, *, threshold: int = 20, background: str = "black") -> Any:
    """Paint red the pixels where any channel changed by more than ``threshold`` (the report's noise map).

    Parameters
    ----------
    previous, current : (..., H, W, C) uint8 arrays
        Two frames of the same shape, channels last; channel 0 is red.
    threshold : int in [0, 255]
        The delta coder's threshold (the report uses the same 20 as its ``LR_THRESHOLDS``).
    background : {'black', 'current', 'previous'}
        ``'black'``: the report's black-and-red map (sections 5.0.1-5.0.4); a marked pixel is
        ``(255, 0, 0)``. ``'current'`` / ``'previous'``: the overlay variant (5.0.5): that frame
        with its red channel set to 255 at marked pixels, other channels kept, exactly as the
        report's kernel writes only the red byte. (The report paints over the previous frame's
        buffer because it is discarded anyway; the current frame is what a viewer shows.)

    Returns
    -------
    (..., H, W, C) uint8 array.

    Notes
    -----
    The webcam report, section 5, ``abs(a - b) > LR_THRESHOLDS`` on any channel. Exact integer
    compares on every backend. The report's vectorized kernels carry the "changed" flag from
    byte to byte inside a 16-byte chunk, which loses it for pixels straddling two chunks; portcv
    implements the CPU loop's per-pixel rule. :func:`noise_map_from_positions` draws the same map
    from the delta encoder's positions (section 5.0.6).

    Examples
    --------
    >>> import numpy as np, portcv
    >>> a = np.full((1, 2, 3), 100, np.uint8)
    >>> b = np.array([[[100, 130, 100], [110, 90, 100]]], np.uint8)
    >>> portcv.to_numpy(portcv.draw.noise_map(a, b, threshold=20))
    array([[[255,   0,   0],
            [  0,   0,   0]]], dtype=uint8)
    >>> portcv.to_numpy(portcv.draw.noise_map(a, b, background="current"))
    array([[[255, 130, 100],
            [110,  90, 100]]], dtype=uint8)
    """
    previous = _validate.image(previous, "previous", min_ndim=3)
    current = _validate.image(current, "current", min_ndim=3)
    if tuple(previous.shape) != tuple(current.shape):
        raise ValueError(f"previous and current must have the same shape, got {tuple(previous.shape)} "
                         f"and {tuple(current.shape)}")
    threshold = _validate.integer(threshold, "threshold", low=0, high=255)
    background = _validate.choice(background, "background", _BACKGROUNDS)
    return _noise_map_kernel(previous, current, threshold=threshold, background=background)


@kernel("noise_map_from_positions")
def _noise_map_positions_kernel(xp: Any, image: Any, positions: Any, count: Any) -> Any:
    """Portable: mark the pixels holding any of ``positions[:count]`` (flat byte indices)."""
    import array_api_extra as xpx

    n = math.prod(image.shape)
    capacity = positions.shape[0]
    p = xp.astype(positions, xp.int64)
    valid = (xp.arange(capacity, dtype=xp.int64) < xp.astype(count, xp.int64)) & (p >= 0) & (p < n)
    dest = xp.where(valid, p, n)  # slot n is a dump slot
    marks = xpx.at(xp.zeros(n + 1, dtype=xp.bool), dest).set(True)[:n]
    mark = xp.any(xp.reshape(marks, tuple(image.shape)), axis=-1)
    return _set_red(xp, image, mark)


def noise_map_from_positions(image: Any, positions: Any, count: Any) -> Any:
    """The noise map drawn from the delta encoder's output (the report's section 5.0.6).

    Parameters
    ----------
    image : (..., H, W, C) uint8 array
        What to paint on: the frame for the overlay variant, zeros for the black map.
    positions : (capacity,) integer array
        Flat byte positions, as :func:`portcv.codec.delta_encode` returns them (entries outside
        the image are ignored).
    count : int or 0-d integer array
        Number of valid entries.

    Returns
    -------
    (..., H, W, C) uint8 array: ``image`` with channel 0 set to 255 in every pixel holding one of
    ``positions[:count]``; the report's ``noise_visualization[xs[i] + (2 - xs[i] % 3)] = 255``
    for RGB (its red byte is the third of a BGR pixel, ours the first of an RGB one).

    Notes
    -----
    With the encoder's positions for ``delta_encode(current, previous, threshold=t)`` (and no
    capacity overflow) this equals ``noise_map(previous, current, threshold=t,
    background='current')`` on ``image=current``: the encoder already found the changed bytes,
    so the map costs one scatter of ``count`` entries.

    Examples
    --------
    >>> import numpy as np, portcv
    >>> img = np.zeros((1, 2, 3), np.uint8)
    >>> portcv.to_numpy(portcv.draw.noise_map_from_positions(img, np.array([4, 0], np.int32), 1))
    array([[[  0,   0,   0],
            [255,   0,   0]]], dtype=uint8)
    """
    from .codec import _count_argument

    image = _validate.image(image, "image", min_ndim=3)
    if owner_of(positions) is None:
        raise TypeError(f"positions must be an array (NumPy, CuPy or JAX), got {type(positions).__name__}")
    if len(positions.shape) != 1 or not np.issubdtype(np.dtype(positions.dtype), np.integer):
        raise TypeError(f"positions must be a 1-D integer array, got shape {tuple(positions.shape)} dtype {positions.dtype}")
    count = _count_argument(count)
    count = asarray(np.asarray(count, np.int64)) if isinstance(count, int) else asarray(count)
    return _noise_map_positions_kernel(image, asarray(positions), count)


# ---- text overlay ---------------------------------------------------------------------------

#: Pillow's built-in bitmap font (``ImageFont.load_default_imagefont()``), characters 32..126,
#: 11 rows of 6 pixels each, one byte per row (bit 5 = leftmost pixel). Embedded so the glyphs
#: cannot change with the Pillow version; tests/test_draw.py checks them against Pillow.
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
GLYPH_WIDTH, GLYPH_HEIGHT = 6, 11
_FIRST, _LAST = 32, 126


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
    return xpx.at(image, box).set(xp.where(m, fg, bg))


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
    The webcam report renders each character of its alphabet once with OpenCV's ``putText``
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
        return img
    height, width = (img.shape[-3], img.shape[-2]) if has_channels else (img.shape[-2], img.shape[-1])
    mask = _text_mask(text, scale)
    # Clip the box to the image on the host: the kernel sees a static, in-bounds box.
    top, left = max(y, 0), max(x, 0)
    bottom, right = min(y + mask.shape[0], height), min(x + mask.shape[1], width)
    if top >= bottom or left >= right:
        return img
    visible = np.ascontiguousarray(mask[top - y : bottom - y, left - x : right - x])
    return _text_overlay_kernel(img, asarray(visible), y0=top, x0=left, color=color, background=background,
                               has_channels=has_channels)


# ---- boxes ----------------------------------------------------------------------------------

#: The thickest outline :func:`boxes` draws (its candidate pixels grow with the thickness).
MAX_THICKNESS = 255
# Box coordinates are clamped to this range before any arithmetic: far enough outside any image
# (< 2**31 pixels a side) that no visible pixel changes, small enough that x + w - 1 and
# x * x stay inside int64.
_COORD_LIMIT = 2**61


def _boxes_argument(boxes: Any) -> Any:
    """``boxes`` as an ``(N, 4)`` integer array (any backend; a list of 4-sequences or ``()`` too)."""
    if owner_of(boxes) is None:
        if not isinstance(boxes, (list, tuple)):
            raise TypeError(f"boxes must be an (N, 4) integer array or a list of (x, y, w, h), "
                            f"got {type(boxes).__name__}")
        try:
            boxes = np.asarray(boxes)
        except (TypeError, ValueError) as exc:  # ragged lists
            raise ValueError(f"boxes must be an (N, 4) array of (x, y, w, h), got {boxes!r} ({exc})") from None
        if boxes.size == 0:
            boxes = np.zeros((0, 4), np.int64)  # () is what cv2's detectMultiScale returns for no faces
    shape = tuple(boxes.shape)
    if len(shape) != 2 or shape[1] != 4:
        raise ValueError(f"boxes must have shape (N, 4) of (x, y, w, h), got shape {shape}")
    dtype = np.dtype(boxes.dtype)
    if dtype == np.bool_ or not np.issubdtype(dtype, np.integer):
        raise TypeError(f"boxes must hold integers, got dtype {dtype}")
    return boxes


def _default_colour(value: Any, channels: int) -> Any:
    """``None`` -> red: ``(255, 0, 0)`` for RGB, ``(255, 0, 0, 255)`` for RGBA, 255 otherwise."""
    if value is not None:
        return value
    return {3: (255, 0, 0), 4: (255, 0, 0, 255)}.get(channels, 255)


@kernel("draw_boxes")
def _boxes_kernel(xp: Any, image: Any, boxes: Any, *, color: tuple, radius: int, has_channels: bool) -> Any:
    """Portable: paint ``color`` on every pixel of every box outline (one scatter of candidates)."""
    import array_api_extra as xpx

    height, width = (image.shape[-3], image.shape[-2]) if has_channels else (image.shape[-2], image.shape[-1])
    r = radius
    b = xp.astype(boxes, xp.int64)
    b = xp.minimum(xp.maximum(b, xp.asarray(-_COORD_LIMIT, dtype=xp.int64)), xp.asarray(_COORD_LIMIT, dtype=xp.int64))
    x0, y0 = b[:, 0:1], b[:, 1:2]  # (N, 1)
    x1, y1 = x0 + b[:, 2:3] - 1, y0 + b[:, 3:4] - 1
    valid = (b[:, 2:3] >= 1) & (b[:, 3:4] >= 1)
    k = xp.arange(-r, r + 1, dtype=xp.int64)[None, :]  # (1, 2r+1)
    # Every outline pixel lies within r of an edge line: in the rows y0 + k or y1 + k, or in the
    # columns x0 + k or x1 + k. Those bands are the candidates (a static number per box); the
    # exact rule below decides each one.
    band_rows = xp.concat([y0 + k, y1 + k], axis=1)[:, :, None]  # (N, 2(2r+1), 1)
    band_cols = xp.concat([x0 + k, x1 + k], axis=1)[:, :, None]
    all_cols = xp.arange(width, dtype=xp.int64)[None, None, :]
    all_rows = xp.arange(height, dtype=xp.int64)[None, None, :]
    bx0, bx1, by0, by1, bvalid = (v[:, :, None] for v in (x0, x1, y0, y1, valid))  # (N, 1, 1)

    def outline(px: Any, py: Any) -> Any:
        # cv2.rectangle's pixels (LINE_8), measured: the pixels within Chebyshev distance r of
        # the outline inside the box, within Euclidean distance r of it outside (round outer
        # corners: dx^2 + dy^2 <= r^2). dx, dy are clamped to r + 1 so the squares stay small.
        lim = xp.asarray(r + 1, dtype=xp.int64)
        zero = xp.asarray(0, dtype=xp.int64)
        dx = xp.minimum(xp.maximum(xp.maximum(bx0 - px, px - bx1), zero), lim)
        dy = xp.minimum(xp.maximum(xp.maximum(by0 - py, py - by1), zero), lim)
        inside = (dx == 0) & (dy == 0)
        edge = xp.minimum(xp.minimum(px - bx0, bx1 - px), xp.minimum(py - by0, by1 - py))
        on = xp.where(inside, edge <= r, dx * dx + dy * dy <= r * r)
        seen = (px >= 0) & (px < width) & (py >= 0) & (py < height)
        hit = on & seen & bvalid
        flat = xp.minimum(xp.maximum(py, zero), xp.asarray(height - 1, dtype=xp.int64)) * width + \
            xp.minimum(xp.maximum(px, zero), xp.asarray(width - 1, dtype=xp.int64))
        return xp.reshape(xp.where(hit, flat, xp.asarray(height * width, dtype=xp.int64)), (-1,))

    dest = xp.concat([outline(all_cols, band_rows), outline(band_cols, all_rows)])
    # Scatter the colour straight into the frames, (B, H*W + 1, C) with a dump pixel at H*W:
    # only the candidates are written (duplicates write the same colour), not every pixel.
    channels = image.shape[-1] if has_channels else 1
    lead = tuple(image.shape[:-3] if has_channels else image.shape[:-2])
    frames = xp.reshape(image, (math.prod(lead), height * width, channels))
    padded = xp.concat([frames, xp.zeros((frames.shape[0], 1, channels), dtype=xp.uint8)], axis=1)
    painted = xpx.at(padded, (slice(None), dest)).set(xp.asarray(color[:channels], dtype=xp.uint8))
    return xp.reshape(painted[:, : height * width, :], tuple(image.shape))


def boxes(image: Any, boxes: Any, *, color: Any = None, thickness: int = 2, channel_axis: Any = "auto") -> Any:
    """Draw rectangle outlines, pixel for pixel as ``cv2.rectangle`` draws them.

    Parameters
    ----------
    image : (..., H, W) or (..., H, W, C) uint8 array
        Every frame of a batch gets the same boxes.
    boxes : (N, 4) integer array (any backend), or a list of ``(x, y, w, h)``
        Boxes as a cascade detector returns them: top-left corner ``(x, y)``, width and height
        in pixels. Boxes may lie partly or wholly outside the image (they are clipped). A box
        with ``w < 1`` or ``h < 1`` draws nothing, so a fixed-capacity buffer padded with zero
        rows can be passed as it is. ``()`` or an empty array: nothing is drawn.
    color : None, int or tuple of C ints in [0, 255]
        ``None`` (default): red, ``(255, 0, 0)`` on RGB, ``(255, 0, 0, 255)`` on RGBA, 255 on
        single-channel images.
    thickness : int in [1, 255]
        Line thickness as OpenCV counts it (see Notes).
    channel_axis : {'auto', None, -1}
        As in :func:`portcv.color.histogram`.

    Returns
    -------
    uint8 array, the shape of ``image``: a new array (also when nothing is drawn).

    Notes
    -----
    The Rice paper, section IV.C: "with the returned positions, we can draw a basic rectangle
    of the detected facial regions" (its Fig. 24, drawn with OpenCV). Each box is drawn as
    ``cv2.rectangle(img, (x, y), (x + w - 1, y + h - 1), color, thickness)`` (``LINE_8``), bit
    for bit; the rule below was measured on OpenCV 4.13 (20,000 random boxes, thickness 1 to
    255, all equal) and is implemented from that description, in integers. With ``r = 0`` for
    ``thickness == 1`` and ``r = (thickness + 1) // 2`` otherwise, and the box spanning columns
    ``x0 = x .. x1 = x + w - 1`` and rows ``y0 .. y1``, a pixel ``(px, py)`` is drawn when

    - it lies inside the box and ``min(px - x0, x1 - px, py - y0, y1 - py) <= r`` (the band
      reaches ``r`` pixels into the box), or
    - it lies outside and ``dx^2 + dy^2 <= r^2``, with ``dx = max(x0 - px, px - x1, 0)`` and
      ``dy`` likewise: the band reaches ``r`` pixels out, with round outer corners (OpenCV
      draws thick lines as polygons with round caps).

    So thickness 2 draws a 3-pixel band and 3 and 4 a 5-pixel band, as OpenCV does. Every
    outline pixel lies within ``r`` rows of ``y0`` or ``y1`` or within ``r`` columns of ``x0`` or
    ``x1``: those ``N * 2(2r+1) * (W + H)`` candidates are tested with the rule, and the colour
    is scattered into a copy of the frame at the ones that pass (every write is the same colour,
    so the order of duplicate writes cannot matter). The boxes stay on the device; nothing is
    read on the host, and under ``jit`` only the number of boxes is static.
    Where OpenCV's ``w = 0`` or ``h = 0`` would still draw a line, portcv draws nothing.

    Examples
    --------
    >>> import numpy as np, portcv
    >>> out = portcv.draw.boxes(np.zeros((5, 6), np.uint8), [(1, 1, 4, 3)], thickness=1)
    >>> portcv.to_numpy(out) // 255
    array([[0, 0, 0, 0, 0, 0],
           [0, 1, 1, 1, 1, 0],
           [0, 1, 0, 0, 1, 0],
           [0, 1, 1, 1, 1, 0],
           [0, 0, 0, 0, 0, 0]], dtype=uint8)
    """
    from .backends import backend

    img = _validate.image(image)
    box_array = _boxes_argument(boxes)
    has_channels = _validate.has_channels(img, channel_axis)
    channels = img.shape[-1] if has_channels else 1
    color = _colour(_default_colour(color, channels), "color", channels)
    thickness = _validate.integer(thickness, "thickness", low=1, high=MAX_THICKNESS)
    if box_array.shape[0] == 0:
        return backend().xp.asarray(img, copy=True)
    radius = 0 if thickness == 1 else (thickness + 1) // 2
    return _boxes_kernel(img, asarray(box_array), color=color, radius=radius, has_channels=has_channels)


# ---- mask overlay ---------------------------------------------------------------------------

@kernel("mask_alpha")
def _mask_alpha_kernel(xp: Any, mask: Any, *, key: tuple | None, has_alpha: bool) -> Any:
    """Portable: ``(h, w, C + 1)`` colour + alpha; alpha 0 where the colour equals ``key``."""
    colour = mask[:, :, :-1] if has_alpha else mask
    alpha = mask[:, :, -1:] if has_alpha else xp.full(tuple(mask.shape[:2]) + (1,), 255, dtype=xp.uint8)
    if key is not None:
        keyed = xp.all(colour == xp.asarray(key, dtype=xp.uint8), axis=-1, keepdims=True)
        alpha = xp.where(keyed, xp.asarray(0, dtype=xp.uint8), alpha)
    return xp.concat([colour, alpha], axis=-1)


@kernel("mask_overlay")
def _mask_overlay_kernel(xp: Any, image: Any, patch: Any, *, y0: int, x0: int, opacity: int,
                         has_channels: bool) -> Any:
    """Portable blend of ``patch`` (h, w, C + 1: colour + alpha) into the box at (y0, x0)."""
    import array_api_extra as xpx

    h, w = patch.shape[0], patch.shape[1]
    wide = xp.astype(patch, xp.int32)
    a = wide[:, :, -1:]
    if opacity != 255:
        a = (a * opacity + 127) // 255  # round(a * opacity / 255): 255 is odd, so no ties
    if has_channels:
        box = (..., slice(y0, y0 + h), slice(x0, x0 + w), slice(None))
        colour = wide[:, :, :-1]
    else:
        box = (..., slice(y0, y0 + h), slice(x0, x0 + w))
        colour, a = wide[:, :, 0], a[:, :, 0]
    under = xp.astype(image[box], xp.int32)
    # round((a m + (255 - a) u) / 255); the sum is at most 255 * 255 + 127 (int32 is plenty).
    blended = (a * colour + (255 - a) * under + 127) // 255
    return xpx.at(image, box).set(xp.astype(blended, xp.uint8))


def mask_overlay(image: Any, mask: Any, boxes: Any, *, alpha: int | None = None, key: Any = None,
                 interpolation: str = "bilinear", channel_axis: Any = "auto") -> Any:
    """Paste a mask image onto every box, scaled to the box (the Rice paper's Daft Punk masks).

    Parameters
    ----------
    image : (..., H, W) or (..., H, W, C) uint8 array
        Every frame of a batch gets the same masks.
    mask : (h, w), (h, w, C) or (h, w, C + 1) uint8 array
        The overlay picture: ``C`` channels like ``image`` (opaque), or ``C + 1`` with an alpha
        channel last (RGBA on RGB frames, gray + alpha on gray ones; 0 = transparent).
    boxes : (N, 4) integer array (any backend), or a list of ``(x, y, w, h)``
        Where to paste, as for :func:`boxes`; pasted in order (later boxes on top). Boxes may
        lie partly outside the image; boxes with ``w < 1`` or ``h < 1`` are skipped.
    alpha : None or int in [0, 255]
        Overall opacity, multiplied into the mask's alpha (``None``: 255, fully opaque).
    key : None, int or tuple of C ints in [0, 255]
        A key colour: mask pixels of exactly this colour are transparent (a mask drawn on a
        plain background, e.g. ``key=(0, 0, 0)`` or ``key=(0, 255, 0)``).
    interpolation : {'bilinear', 'bilinear_exact', 'nearest'}
        How the mask is scaled to each box: :func:`portcv.transform.resize` (``'bilinear'`` is
        ``cv2.resize``'s default, what the paper's OpenCV code gets).
    channel_axis : {'auto', None, -1}
        As in :func:`portcv.color.histogram`.

    Returns
    -------
    uint8 array, the shape of ``image``: a new array.

    Notes
    -----
    The Rice paper, section IV.C and Fig. 25: "scale-invariant Daft Punk masks applied to
    detected facial regions in real-time". The paper shows the result only, so portcv spells
    out the usual way to do it. Per box: the key colour (if any) becomes alpha 0 on the mask
    as given, the colour + alpha mask is resized to ``w x h`` with
    ``transform.resize(..., size=(w, h), interpolation=interpolation)`` (bit-equal to
    ``cv2.resize``), the part inside the image is blended over the frame in integers:

        a = round(a_mask * alpha / 255)          (only when alpha is given)
        out = (a * mask + (255 - a) * frame + 127) // 255

    which is exact (``a = 255`` pastes the mask, ``a = 0`` keeps the frame). Keying before the
    resize gives a bilinear mask soft edges instead of a fringe of nearly-key colours.

    The box sizes decide the shapes of the resized masks, so ``boxes`` is read on the host (a
    device array of boxes costs one small copy and a synchronization); the loop over boxes is
    one resize and one box-sized blend per box, each vectorized over pixels.

    Examples
    --------
    >>> import numpy as np, portcv
    >>> mask = np.array([[[255, 255, 255, 255], [0, 0, 0, 0]]], np.uint8)  # white | transparent
    >>> out = portcv.draw.mask_overlay(np.zeros((2, 5, 3), np.uint8), mask, [(1, 0, 4, 2)],
    ...                                interpolation="nearest")
    >>> portcv.to_numpy(out)[..., 0]
    array([[  0, 255, 255,   0,   0],
           [  0, 255, 255,   0,   0]], dtype=uint8)
    """
    from .backends import backend, to_numpy
    from .transform import INTERPOLATIONS, resize

    img = _validate.image(image)
    has_channels = _validate.has_channels(img, channel_axis)
    channels = img.shape[-1] if has_channels else 1
    m = _validate.image(mask, "mask")
    if m.ndim == 2:
        m = backend().xp.reshape(m, tuple(m.shape) + (1,))
    if m.ndim != 3 or m.shape[-1] not in (channels, channels + 1):
        raise ValueError(f"mask must be (h, w, {channels}) or (h, w, {channels + 1}) with alpha last for an image "
                         f"with {channels} channel(s), got shape {tuple(mask.shape)}")
    box_array = _boxes_argument(boxes)
    opacity = 255 if alpha is None else _validate.integer(alpha, "alpha", low=0, high=255)
    key = None if key is None else _colour(key, "key", channels)
    interpolation = _validate.choice(interpolation, "interpolation", INTERPOLATIONS)
    out = backend().xp.asarray(img, copy=True)
    if box_array.shape[0] == 0:
        return out
    height, width = (img.shape[-3], img.shape[-2]) if has_channels else (img.shape[-2], img.shape[-1])
    rgba = _mask_alpha_kernel(m, key=key, has_alpha=m.shape[-1] == channels + 1)
    for x, y, w, h in np.asarray(to_numpy(box_array)).astype(np.int64).tolist():
        top, left, bottom, right = max(y, 0), max(x, 0), min(y + h, height), min(x + w, width)
        if w < 1 or h < 1 or top >= bottom or left >= right:
            continue
        if w * h * (channels + 1) > _validate.MAX_ELEMENTS:
            raise ValueError(f"boxes: a {w}x{h} box is too large to scale the mask to")
        scaled = resize(rgba, size=(w, h), interpolation=interpolation, channel_axis=-1)
        visible = scaled[top - y : bottom - y, left - x : right - x, :]
        out = _mask_overlay_kernel(out, visible, y0=top, x0=left, opacity=opacity, has_channels=has_channels)
    return out
