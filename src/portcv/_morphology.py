"""Binary morphology shared by ``portcv.edges`` (the edge maps' acceptance and hysteresis
dilations) and ``portcv.motion`` (its "edge within beta" tests)."""

from __future__ import annotations

from typing import Any

from ._border import pad_axis


def box_or(xp: Any, mask: Any, ry: int, rx: int) -> Any:
    """Binary dilation of a boolean ``mask`` (last two axes) by a (2 ry + 1) x (2 rx + 1) box.

    Separable: an OR of ``2 rx + 1`` shifted copies along x, then of ``2 ry + 1`` along y, with
    False outside the image -- ``out[y, x] = any(mask[y + j, x + i], |j| <= ry, |i| <= rx)``,
    exact, O(rx + ry) work per pixel instead of O(rx * ry).
    """
    for axis, r in ((-1, rx), (-2, ry)):
        if r == 0:
            continue
        n = mask.shape[axis]
        padded = pad_axis(xp, mask, axis, r, r, "constant", 0)
        out = None
        for i in range(2 * r + 1):
            index = [slice(None)] * mask.ndim
            index[axis] = slice(i, i + n)
            window = padded[tuple(index)]
            out = window if out is None else out | window
        mask = out
    return mask
