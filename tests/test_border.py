"""_border.pad_axis (static slices + concat, on JAX an OR of lax.pads, a gather only for repeated
reflection) equals the index rule _border.border_indices, on every backend, for every pad
length, axis and dtype."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import portcv
from portcv import _border

from .helpers import assert_same_bits


def gathered(x: np.ndarray, axis: int, before: int, after: int, border: str, value: int) -> np.ndarray:
    """The rule itself: ``border_indices`` gathered with NumPy (-1 = the constant)."""
    idx = _border.border_indices(x.shape[axis], before, after, border)
    fill_shape = list(x.shape)
    fill_shape[axis] = 1
    source = np.concatenate([x, np.full(fill_shape, value, x.dtype)], axis=axis)
    return np.take(source, np.where(idx < 0, x.shape[axis], idx), axis=axis)


@pytest.mark.parametrize("border", _border.BORDERS)
def test_pad_axis_equals_the_index_rule(backend, border):
    rng = np.random.default_rng(7)
    b = portcv.backends.get(backend)
    for shape, dtype in [((1, 1), np.uint8), ((1, 5), np.int32), ((4, 3), np.uint8), ((3, 4, 2), np.int32),
                         ((5, 4), np.int16), ((4, 6), np.bool_)]:
        x = rng.integers(0, 256, shape).astype(dtype)
        # pads of 0, below, at and beyond the axis length - 1 (past it, reflect101 gathers)
        cases = list(itertools.product(range(-len(shape), 0), [0, 1, 3, 11], [0, 2, 11]))

        def pad_all(a):  # one traced function per shape: JAX compiles once, not per case
            return tuple(_border.pad_axis(b.xp, a, ax, lo, hi, border, 201) for ax, lo, hi in cases)

        for (axis, before, after), actual in zip(cases, b.jit(pad_all)(b.asarray(x))):
            assert_same_bits(gathered(x, axis, before, after, border, 201), actual)
