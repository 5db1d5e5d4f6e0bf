"""The scan parameters both detectors check, and the gray frame they scan."""

from __future__ import annotations

from typing import Any

from ... import _validate

#: Largest ``scale_factor`` accepted.
MAX_SCALE_FACTOR = 10.0


def check_size_pair(value: Any, name: str, *, allow_none: bool) -> tuple[int, int] | None:
    if value is None and allow_none:
        return None
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise ValueError(f"{name} must be a (width, height) pair of ints, got {value!r}")
    w = _validate.integer(value[0], name, low=0, high=_validate.MAX_ELEMENTS)
    h = _validate.integer(value[1], name, low=0, high=_validate.MAX_ELEMENTS)
    return w, h


def check_scale_factor(scale_factor: Any) -> float:
    sf = _validate.real(scale_factor, "scale_factor", positive=True, high=MAX_SCALE_FACTOR)
    if sf <= 1.0:
        raise ValueError(f"scale_factor must be > 1, got {scale_factor}")
    return sf


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
