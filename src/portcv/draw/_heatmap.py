"""The heat map of the change between two frames, from a host-built colour table."""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from .. import _validate
from .._kernel import kernel
from ..backends import asarray


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
    The Webcam Streaming & Filters report, section 4 (``getHeatPixel`` and the CUDA kernel of 4.2.1):
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


_BACKGROUNDS = ("black", "current", "previous")




