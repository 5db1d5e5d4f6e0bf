"""Border handling in one place: the modes, their CUDA codes, and the index rule.

``backends/common.cuh``'s ``remap()`` is the same rule on the device; keep the two together.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _validate
from .backends import owner_of

#: Border modes, named as in OpenCV (``BORDER_REFLECT_101``, ``BORDER_REPLICATE``, ``BORDER_CONSTANT``).
BORDERS = ("reflect101", "replicate", "constant")
#: The ``Border`` enum of ``backends/common.cuh``.
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

    Static slices joined by one ``concat`` (reflect101: reversed slices ``x[before:0:-1]`` and
    ``x[n-2:n-2-after:-1]``; replicate: the edge slice broadcast; constant: a block of ``value``
    in ``x``'s dtype). A reflect101 pad longer than ``n - 1`` reflects more than once: that rare
    case falls back to one gather (``xp.take``) of :func:`border_indices`.

    A backend may join the pieces its own faster way (``Backend.join_padded``: JAX ORs
    ``lax.pad``-ed pieces instead of concatenating them).
    """
    axis = axis % x.ndim
    n = x.shape[axis]
    if before == 0 and after == 0:
        return x

    def part(start: int, stop: int) -> Any:
        index = [slice(None)] * x.ndim
        index[axis] = slice(start, stop)
        return x[tuple(index)]

    def block(source: Any, length: int) -> Any:  # ``source`` (length 1 along axis) repeated
        shape = list(x.shape)
        shape[axis] = length
        return xp.broadcast_to(source, tuple(shape))

    if border == "reflect101" and n > 1:
        if before > n - 1 or after > n - 1:  # reflects more than once: gather
            idx = border_indices(n, before, after, border)
            return xp.take(x, xp.asarray(idx.astype(np.int32)), axis=axis)
        # dcb|abcd|cba: the `before` elements after the first, the `after` elements before the last, reversed.
        left = xp.flip(part(1, before + 1), axis=axis) if before else None
        right = xp.flip(part(n - 1 - after, n - 1), axis=axis) if after else None
    elif border == "constant":
        fill = xp.full((1,) * x.ndim, value, dtype=x.dtype)
        left = block(fill, before) if before else None
        right = block(fill, after) if after else None
    else:  # replicate, and reflect101 of a single element (it reflects onto itself)
        left = block(part(0, 1), before) if before else None
        right = block(part(n - 1, n), after) if after else None
    owner = owner_of(x)
    joined = None if owner is None else owner.join_padded(x, axis, left, right, border, value)
    if joined is not None:
        return joined
    return xp.concat([p for p in (left, x, right) if p is not None], axis=axis)
