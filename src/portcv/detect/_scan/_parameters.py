"""The scan parameters both detectors check, named once (:class:`ScanParameters`), and the gray
frame they scan."""

from __future__ import annotations

import dataclasses
from typing import Any

from ... import _validate

#: Largest ``scale_factor`` accepted.
MAX_SCALE_FACTOR = 10.0


@dataclasses.dataclass(frozen=True)
class ScanParameters:
    """A detection's checked scan parameters, as they travel together through a detector's scan.

    Attributes
    ----------
    scale_factor : float
        Ratio between pyramid scales, in (1, 10].
    min_neighbors : int
        The grouping keeps clusters of more than this many candidates; 0 (also for ``raw=True``):
        the ungrouped candidates.
    min_size, max_size : (int, int)
        Smallest / largest object ``(width, height)``; ``max_size`` None or with a 0 in it: the
        frame's size (:meth:`max_size_for`).
    split_stage : int or None
        Stages ``[0, split_stage)`` run on every window before the first compaction. The cascade
        detector resolves None to its backend's default; the MCT detector's None lets the
        backend choose its stage segments.
    step : int or None
        The MCT detector's window step at every scale; None for the cascade detector, which
        follows OpenCV's step rule.
    """

    scale_factor: float
    min_neighbors: int
    min_size: tuple[int, int]
    max_size: tuple[int, int] | None
    split_stage: int | None
    step: int | None = None

    def max_size_for(self, width: int, height: int) -> tuple[int, int]:
        """``max_size`` for a ``width x height`` frame: the frame's size where it is None or has a 0."""
        if self.max_size is None or self.max_size[0] == 0 or self.max_size[1] == 0:
            return (width, height)
        return tuple(self.max_size)


def check_size_pair(value: Any, name: str, *, allow_none: bool) -> tuple[int, int] | None:
    if value is None and allow_none:
        return None
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise ValueError(f"{name} must be a (width, height) pair of ints, got {value!r}")
    w = _validate.integer(value[0], name, low=0, high=_validate.MAX_ELEMENTS)
    h = _validate.integer(value[1], name, low=0, high=_validate.MAX_ELEMENTS)
    return w, h


def check_scale_factor(scale_factor: Any) -> float:
    factor = _validate.real(scale_factor, "scale_factor", positive=True, high=MAX_SCALE_FACTOR)
    if factor <= 1.0:
        raise ValueError(f"scale_factor must be > 1, got {scale_factor}")
    return factor


def check_min_neighbors(min_neighbors: Any) -> int:
    return _validate.integer(min_neighbors, "min_neighbors", low=0, high=2**31 - 1)


def to_gray(img: Any, channel_axis: Any) -> tuple[Any, bool]:
    """``(gray (..., H, W) uint8, batched)`` from ``(..., H, W)`` or ``(..., H, W, C)`` (C in 1, 3, 4)."""
    from ... import color

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
