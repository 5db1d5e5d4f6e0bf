"""The cascade detector's driver: pyramid, packed integrals, breadth-first stages, grouping."""

from __future__ import annotations

import functools
import math
import os
from typing import Any

import numpy as np

from .. import _validate
from .._cascade import compact_kernel, evaluate_kernel, integrals_kernel
from ..backends import backend, to_numpy
from ._group import group_rectangles_impl
from ._xml import Cascade, read_cascade

#: scikit-image's copy of OpenCV's LBP frontal-face cascade (with its tag typo).
SKIMAGE_LBP_NAME = "lbpcascade_frontalface_opencv.xml"
#: Largest ``scale_factor`` accepted.
MAX_SCALE_FACTOR = 10.0
#: Smallest plan capacity on backends that compile per shape (JAX): capacities are powers of two.
MIN_CAPACITY = 256


def resolve_cascade_path(path_or_name: Any) -> str:
    """A file path, or a cascade name found in ``cv2.data.haarcascades`` / scikit-image's data."""
    if not isinstance(path_or_name, (str, os.PathLike)):
        raise TypeError(f"path_or_name must be a path or a cascade name, got {type(path_or_name).__name__}")
    path = os.fspath(path_or_name)
    if os.path.isfile(path):
        return path
    name = os.path.basename(path)
    if name == path:  # a bare name: look in the known cascade folders
        for folder in _cascade_folders():
            candidate = os.path.join(folder, name)
            if os.path.isfile(candidate):
                return candidate
    raise FileNotFoundError(
        f"cascade {path!r} not found: give a file path, or a name from cv2.data.haarcascades (OpenCV installed) "
        f"or {SKIMAGE_LBP_NAME!r} (scikit-image installed)"
    )


def _cascade_folders() -> list[str]:
    folders = []
    try:
        import cv2

        folders.append(cv2.data.haarcascades)
    except (ImportError, AttributeError):
        pass
    try:
        import importlib.util

        spec = importlib.util.find_spec("skimage")
        if spec is not None and spec.submodule_search_locations:
            folders.append(os.path.join(list(spec.submodule_search_locations)[0], "data"))
    except (ImportError, ValueError):
        pass
    return folders


@functools.lru_cache(maxsize=32)
def _load_cached(path: str, mtime: float, size: int) -> Cascade:
    return read_cascade(path)


def load(path_or_name: Any) -> Cascade:
    path = resolve_cascade_path(path_or_name)
    st = os.stat(path)
    return _load_cached(os.path.abspath(path), st.st_mtime, st.st_size)


# --------------------------------------------------------------------------------------------
# Scan geometry (host, cached per image size and parameters)
# --------------------------------------------------------------------------------------------
def scale_plan(width: int, height: int, window: tuple[int, int], scale_factor: float,
               min_size: tuple[int, int], max_size: tuple[int, int]) -> list[tuple[float, tuple[int, int]]]:
    """OpenCV's scale list: ``[(float32 factor, (level w, level h)), ...]``.

    ``factor = 1.0; loop: win = rint(window * factor); stop if win > max_size or win > image;
    keep float32(factor) if win >= min_size; factor *= scale_factor``; level size
    ``rint(float32(W) / factor)`` (cascadedetect.cpp, ``detectMultiScaleNoGrouping``).
    """
    out = []
    factor = 1.0
    while len(out) <= 10_000:
        ww, wh = round(window[0] * factor), round(window[1] * factor)
        if ww > max_size[0] or wh > max_size[1] or ww > width or wh > height:
            break
        if ww >= min_size[0] and wh >= min_size[1]:
            f32 = np.float32(factor)
            lw = int(np.rint(np.float32(width) / f32))
            lh = int(np.rint(np.float32(height) / f32))
            out.append((float(f32), (lw, lh)))
        factor *= scale_factor
    return out


class ScanGrid:
    """Every window of every level on its step grid, as flat offsets into the packed integrals."""

    def __init__(self, levels: tuple, placements: tuple, window: tuple[int, int], stride: int) -> None:
        W, H = window
        offs, row_end, level_id, xs, ys = [], [], [], [], []
        for li, ((factor, _), (px, py, w, h)) in enumerate(zip(levels, placements)):
            step = 1 if factor >= 2 else 2
            gx = np.arange(0, w - W + 1, step, dtype=np.int64)
            gy = np.arange(0, h - H + 1, step, dtype=np.int64)
            if gx.size == 0 or gy.size == 0:
                continue
            yy, xx = np.meshgrid(gy, gx, indexing="ij")
            offs.append(((py + yy) * stride + px + xx).reshape(-1))
            end = np.zeros(yy.shape, bool)
            end[:, -1] = True
            row_end.append(end.reshape(-1))
            level_id.append(np.full(yy.size, li, np.int32))
            xs.append(xx.reshape(-1))
            ys.append(yy.reshape(-1))
        cat = (lambda a, dt: np.concatenate(a).astype(dt)) if offs else (lambda a, dt: np.zeros(0, dt))
        self.windows = cat(offs, np.int32)
        self.row_end = cat(row_end, bool)
        self.level = cat(level_id, np.int32)
        self.x = cat(xs, np.int64)
        self.y = cat(ys, np.int64)
        self.factors = np.array([f for f, _ in levels], np.float32)
        self.size = int(self.windows.shape[0])


@functools.lru_cache(maxsize=16)
def _scan_grid(levels: tuple, placements: tuple, window: tuple[int, int], stride: int) -> ScanGrid:
    return ScanGrid(levels, placements, window, stride)


def candidates_to_rects(grid: ScanGrid, index: np.ndarray, window: tuple[int, int]) -> np.ndarray:
    """Image rects of windows ``index``: ``rint(x * factor)`` etc. (OpenCV's mapping)."""
    f = grid.factors[grid.level[index]]  # float32
    x = np.rint(grid.x[index].astype(np.float32) * f)  # float32 products, as OpenCV
    y = np.rint(grid.y[index].astype(np.float32) * f)
    w = np.rint(np.float32(window[0]) * f)
    h = np.rint(np.float32(window[1]) * f)
    return np.stack([x, y, w, h], axis=1).astype(np.int32)


def clip_rects(rects: np.ndarray, neighbours: np.ndarray, width: int, height: int) -> tuple[np.ndarray, np.ndarray]:
    """``rect & Rect(0, 0, W, H)``; empty intersections are dropped."""
    r = rects.astype(np.int64)
    x0 = np.maximum(r[:, 0], 0)
    y0 = np.maximum(r[:, 1], 0)
    x1 = np.minimum(r[:, 0] + r[:, 2], width)
    y1 = np.minimum(r[:, 1] + r[:, 3], height)
    keep = (x1 > x0) & (y1 > y0)
    out = np.stack([x0, y0, x1 - x0, y1 - y0], axis=1)[keep]
    return out.astype(np.int32).reshape(-1, 4), neighbours[keep].astype(np.int32)


# --------------------------------------------------------------------------------------------
# Argument checks
# --------------------------------------------------------------------------------------------
def check_size_pair(value: Any, name: str, *, allow_none: bool) -> tuple[int, int] | None:
    if value is None and allow_none:
        return None
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise ValueError(f"{name} must be a (width, height) pair of ints, got {value!r}")
    w = _validate.integer(value[0], name, low=0, high=_validate.MAX_ELEMENTS)
    h = _validate.integer(value[1], name, low=0, high=_validate.MAX_ELEMENTS)
    return w, h


def check_params(scale_factor: Any, min_neighbors: Any, min_size: Any, max_size: Any, split_stage: Any,
                 n_stages: int) -> tuple:
    sf = _validate.real(scale_factor, "scale_factor", positive=True, high=MAX_SCALE_FACTOR)
    if sf <= 1.0:
        raise ValueError(f"scale_factor must be > 1, got {scale_factor}")
    mn = _validate.integer(min_neighbors, "min_neighbors", low=0, high=2**31 - 1)
    mins = check_size_pair(min_size, "min_size", allow_none=False)
    maxs = check_size_pair(max_size, "max_size", allow_none=True)
    split = _validate.integer(split_stage, "split_stage", low=1, high=max(1, n_stages))
    return sf, mn, mins, maxs, split


def to_gray(img: Any, channel_axis: Any) -> tuple[Any, bool]:
    """``(gray (..., H, W) uint8, batched)`` from ``(..., H, W)`` or ``(..., H, W, C)`` (C in 1, 3, 4)."""
    from .. import color

    has_channels = _validate.has_channels(img, channel_axis)
    if has_channels:
        c = img.shape[-1]
        if c == 1:
            gray = img[..., 0]
        elif c in (3, 4):
            gray = color.rgb_to_gray(img[..., :3])
        else:
            raise ValueError(f"image must have 1, 3 or 4 channels (RGB order), got shape {tuple(img.shape)}")
    else:
        gray = img
    if gray.ndim > 3:
        raise ValueError(f"image must be (H, W[, C]) or a batch (T, H, W[, C]), got shape {tuple(img.shape)}")
    return gray, gray.ndim == 3


def next_capacity(count: int, limit: int) -> int:
    cap = MIN_CAPACITY
    while cap < count:
        cap *= 2
    return max(1, min(cap, limit))
