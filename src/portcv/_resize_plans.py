"""OpenCV's resize and cascade-pyramid plans, host tables shared by ``portcv.transform`` and
``portcv.detect``: the output size and arithmetic of ``cv::resize`` (:func:`plan`), one axis's
source indices and integer weights (:func:`axis_table`), the cascade scan's scale list
(:func:`pyramid_plan`) and the shelf placement of packed levels (:func:`pack_layout`)."""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import numpy as np
_DBL_EPSILON = float(np.finfo(np.float64).eps)


class AxisTable(NamedTuple):
    """Per output index: source indices ``i0``, ``i1`` (clamped) and integer weights ``w0``, ``w1``."""

    i0: np.ndarray
    i1: np.ndarray
    w0: np.ndarray
    w1: np.ndarray


def plan(src_wh: tuple[int, int], size: tuple[int, int] | None, scale: tuple[float, float] | None,
         interpolation: str, channels: int) -> tuple[str, tuple[int, int], tuple[float, float]]:
    """OpenCV's choice of output size, inverse scales and arithmetic (``cv::resize`` + ``hal::resize``).

    Returns ``(arith, (dw, dh), (inv_scale_x, inv_scale_y))``; ``arith`` is ``"copy"`` when the
    output size equals the input size (OpenCV copies then, whatever the scale).
    """
    w, h = src_wh
    if size is not None:
        dw, dh = size
        inv_x, inv_y = dw / w, dh / h
    else:
        inv_x, inv_y = scale
        # saturate_cast<int>(double) is cvRound: round half to even (Python's round on floats).
        dw, dh = round(w * inv_x), round(h * inv_y)
    if (dw, dh) == (w, h):
        return "copy", (dw, dh), (inv_x, inv_y)
    scale_x, scale_y = 1.0 / inv_x, 1.0 / inv_y
    iscale_x, iscale_y = round(scale_x), round(scale_y)
    area_2x = (abs(scale_x - iscale_x) < _DBL_EPSILON and abs(scale_y - iscale_y) < _DBL_EPSILON
               and iscale_x == 2 and iscale_y == 2)
    if interpolation == "nearest":
        arith = "nearest"
    elif area_2x and (interpolation == "bilinear" or channels != 2):
        # Both bilinear modes switch to the area average at exactly 2x down (INTER_LINEAR_EXACT
        # not for 2 channels). Its (s + 2) >> 2 form is used for 1, 3, 4 channels; otherwise
        # OpenCV's scalar code rounds s * 0.25f half to even.
        arith = "area2_up" if channels in (1, 3, 4) else "area2_even"
    elif interpolation == "bilinear":
        arith = "linear"
    else:
        arith = "exact"
    return arith, (dw, dh), (inv_x, inv_y)


@functools.lru_cache(maxsize=512)
def axis_table(arith: str, axis: str, n_src: int, n_dst: int, inv_scale: float) -> AxisTable:
    """The table of one axis (``axis`` is ``"x"`` or ``"y"``: INTER_LINEAR clamps only x weights)."""
    d = np.arange(n_dst)
    if arith == "nearest":
        # resizeNN: sx = min(cvFloor(dx * (1 / inv_scale)), n - 1), in float64.
        i = np.minimum(np.floor(d * (1.0 / inv_scale)).astype(np.int64), n_src - 1)
        return _table(i, i, np.ones_like(i), np.zeros_like(i))
    if arith.startswith("area2"):
        # resizeAreaFast: source pixels 2d and 2d+1; the second is missing at an odd edge.
        i0 = 2 * d
        full = i0 + 1 < n_src
        return _table(i0, np.where(full, i0 + 1, i0), np.ones_like(i0), full.astype(np.int64))
    if arith == "linear":
        # fx = (float)((dx + 0.5) * scale - 0.5) in float64 then float32; sx = floor(fx); fx -= sx
        # (exact in float32); weights saturate_cast<short>(float32 * 2048) = round half even.
        f = ((d + 0.5) * (1.0 / inv_scale) - 0.5).astype(np.float32)
        s = np.floor(f).astype(np.int64)
        f = f - s.astype(np.float32)
        if axis == "x":  # out-of-range columns replicate the edge pixel with weight 1
            edge = (s < 0) | (s >= n_src - 1)
            f = np.where(edge, np.float32(0), f)
            s = np.clip(s, 0, n_src - 1)
            i0, i1 = s, np.minimum(s + 1, n_src - 1)
        else:  # rows: indices clipped, weights kept (OpenCV does not clamp fy)
            i0, i1 = np.clip(s, 0, n_src - 1), np.clip(s + 1, 0, n_src - 1)
        w0 = np.rint((np.float32(1) - f) * np.float32(2048)).astype(np.int64)
        w1 = np.rint(f * np.float32(2048)).astype(np.int64)
        return _table(i0, i1, w0, w1)
    # exact: interpolationLinear (softdouble = IEEE float64, not fused): f = scale*(d+0.5) - 0.5;
    # i = floor(f); inside: w1 = cvRound((f - i) * 256) (half even), w0 = 256 - w1; outside (or a
    # 1-pixel axis) the edge pixel with weight 256.
    f = (1.0 / inv_scale) * (d + 0.5) - 0.5
    fi = np.floor(f)
    i = fi.astype(np.int64)
    inside = (i >= 0) & (i < n_src - 1)
    w1 = np.where(inside, np.rint((f - fi) * 256.0).astype(np.int64), 0)
    i0 = np.where(inside, i, np.where(i < 0, 0, n_src - 1))
    return _table(i0, np.where(inside, i + 1, i0), 256 - w1, w1)


def _table(i0: Any, i1: Any, w0: Any, w1: Any) -> AxisTable:
    arrays = [np.ascontiguousarray(a, dtype=np.int32) for a in (i0, i1, w0, w1)]
    for a in arrays:
        a.flags.writeable = False  # cached: shared by every call
    return AxisTable(*arrays)


#: The most pyramid levels :func:`pyramid_plan` makes (``portcv.transform.pyramid``, the detectors;
#: a scale very close to 1 is refused).
MAX_PYRAMID_LEVELS = 1000


def pyramid_plan(
    width: int, height: int, scale: float, window: tuple[int, int], *,
    min_size: tuple[int, int] = (0, 0), max_size: tuple[int, int] | None = None, name: str = "scale",
) -> list[tuple[float, tuple[int, int]]]:
    """OpenCV's scale list and level sizes for ``CascadeClassifier::detectMultiScale``.

    ``factor`` starts at 1.0 and is multiplied by ``scale`` in float64; the scan stops when the
    window scaled by the factor, ``(rint(win_w * factor), rint(win_h * factor))``, is larger
    than the image or than ``max_size`` (``maxSize``), and a level is kept when that scaled
    window is at least ``min_size`` (``minSize``). Its factor is stored as float32 and the level
    is ``rint(float32(W) / factor) x rint(float32(H) / factor)`` (cascadedetect.cpp:
    ``detectMultiScaleNoGrouping`` and ``FeatureEvaluator::updateScaleData``). Returns
    ``[(float32 factor, (w, h)), ...]``; used by :func:`pyramid` and ``portcv.detect``. More than
    ``MAX_PYRAMID_LEVELS`` levels is a ValueError naming the caller's argument ``name``.
    """
    max_w, max_h = (width, height) if max_size is None else (min(width, max_size[0]), min(height, max_size[1]))
    levels = []
    factor = 1.0
    while True:
        # cvRound(double) rounds half to even, as Python's round does.
        win_w, win_h = round(window[0] * factor), round(window[1] * factor)
        if win_w > max_w or win_h > max_h:
            break
        if win_w >= min_size[0] and win_h >= min_size[1]:
            f32 = np.float32(factor)
            w = int(np.rint(np.float32(width) / f32))  # float32 division, cvRound(float)
            h = int(np.rint(np.float32(height) / f32))
            levels.append((float(f32), (w, h)))
            if len(levels) > MAX_PYRAMID_LEVELS:
                raise ValueError(
                    f"{name}: {scale} would make more than {MAX_PYRAMID_LEVELS} pyramid levels; use a larger scale"
                )
        factor *= scale
    return levels


def pack_layout(sizes: list[tuple[int, int]], width: int, gap: int) -> tuple[list[tuple[int, int]], int]:
    """Shelf placement of ``(w, h)`` levels in a ``width``-wide image: ``([(x, y), ...], height)``.

    OpenCV's ``FeatureEvaluator::updateScaleData``: each level takes a ``(w + gap) x (h + gap)``
    slot, left to right; a slot that would cross ``width`` starts a new shelf below the
    current one, whose height is its tallest slot (the first, for a decreasing pyramid).
    """
    placements = []
    x = y = shelf = 0
    for w, h in sizes:
        sw, sh = w + gap, h + gap
        if x + sw > width and x > 0:
            y, x, shelf = y + shelf, 0, 0
        placements.append((x, y))
        x += sw
        shelf = max(shelf, sh)
    return placements, y + shelf
