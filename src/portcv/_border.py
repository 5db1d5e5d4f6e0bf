"""Border handling in one place: the modes, their CUDA codes, and the index rule.

``cuda/common.cuh``'s ``remap()`` is the same rule on the device; keep the two together.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _validate

#: Border modes, named as in OpenCV (``BORDER_REFLECT_101``, ``BORDER_REPLICATE``, ``BORDER_CONSTANT``).
BORDERS = ("reflect101", "replicate", "constant")
#: The ``Border`` enum of ``cuda/common.cuh``.
BORDER_CODE = {name: i for i, name in enumerate(BORDERS)}


def check(border: Any, border_value: Any) -> tuple[str, int]:
    """Validate a ``border=`` / ``border_value=`` pair of a public function."""
    border = _validate.choice(border, "border", BORDERS)
    border_value = _validate.integer(border_value, "border_value", low=0, high=255)
    return border, border_value


def border_indices(n: int, before: int, after: int, border: str) -> np.ndarray:
    """Source index for each of the ``before + n + after`` padded positions; -1 = constant.

    reflect101 reflects without repeating the edge (``dcb|abcd|cba``) and keeps reflecting when
    the padding is longer than the axis (period ``2(n-1)``), like ``np.pad(mode="reflect")``.
    """
    i = np.arange(-before, n + after)
    inside = (i >= 0) & (i < n)
    if border == "reflect101":
        if n == 1:
            return np.zeros_like(i)
        period = 2 * (n - 1)
        m = np.mod(i, period)
        return np.where(m < n, m, period - m)
    if border == "replicate":
        return np.clip(i, 0, n - 1)
    return np.where(inside, i, -1)


def pad_axis(xp: Any, x: Any, axis: int, before: int, after: int, border: str, value: int) -> Any:
    """``x`` extended by ``before`` and ``after`` positions along ``axis`` by the border rule.

    One gather (``xp.take``) with a host-built index table; for ``constant``, the gather reads
    one appended slice of ``value`` (in ``x``'s dtype).
    """
    axis = axis % x.ndim
    n = x.shape[axis]
    idx = border_indices(n, before, after, border)
    if border == "constant":
        pad_shape = list(x.shape)
        pad_shape[axis] = 1
        x = xp.concat([x, xp.full(tuple(pad_shape), value, dtype=x.dtype)], axis=axis)
        idx = np.where(idx < 0, n, idx)
    return xp.take(x, xp.asarray(idx.astype(np.int32)), axis=axis)
