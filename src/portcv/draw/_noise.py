"""Noise maps: the changed pixels of a frame pair, or of a delta's positions, in red."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import _validate
from .._kernel import kernel
from ..backends import asarray, owner_of, to_numpy
from ._heatmap import _BACKGROUNDS


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
    The Webcam Streaming & Filters report, section 5, ``abs(a - b) > LR_THRESHOLDS`` on any channel. Exact integer
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


def noise_map_from_positions(image: Any, positions: Any, count: Any, *, check: bool = True) -> Any:
    """The noise map drawn from the delta encoder's output (the report's section 5.0.6).

    Parameters
    ----------
    image : (..., H, W, C) uint8 array
        What to paint on: the frame for the overlay variant, zeros for the black map.
    positions : (capacity,) integer array
        Flat byte positions, as :func:`portcv.codec.delta_encode` returns them.
    count : int or 0-d integer array
        Number of valid entries.
    check : bool
        ``True`` (default): ``count`` must be in ``[0, len(positions)]`` and ``positions[:count]``
        in ``[0, image.size)``, else ``ValueError`` (this reads them back to the host, as
        :func:`portcv.codec.delta_decode` does). ``False``: no host round trip; entries outside
        the image are then ignored.

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

    image = _validate.image(image, "image", min_ndim=3)
    if owner_of(positions) is None:
        raise TypeError(f"positions must be an array (NumPy, CuPy or JAX), got {type(positions).__name__}")
    if len(positions.shape) != 1 or not np.issubdtype(np.dtype(positions.dtype), np.integer):
        raise TypeError(f"positions must be a 1-D integer array, got shape {tuple(positions.shape)} dtype {positions.dtype}")
    if positions.shape[0] > _validate.MAX_ELEMENTS:
        raise ValueError(f"positions holds {positions.shape[0]} entries; at most {_validate.MAX_ELEMENTS} are supported")
    count = _validate.count(count)
    check = _validate.boolean(check, "check")
    if check:
        k = count if isinstance(count, int) else int(to_numpy(count))
        capacity = positions.shape[0]
        if not 0 <= k <= capacity:
            raise ValueError(f"count must be in [0, {capacity}] (the length of positions), got {k}")
        p = to_numpy(positions)[:k].astype(np.int64)
        size = math.prod(image.shape)
        if k and (p.min() < 0 or p.max() >= size):
            raise ValueError(f"positions[:count] must be in [0, {size}) (the image's bytes); got values "
                             f"from {p.min()} to {p.max()}")
    count = asarray(np.asarray(count, np.int64)) if isinstance(count, int) else asarray(count)
    return _noise_map_positions_kernel(image, asarray(positions), count)
