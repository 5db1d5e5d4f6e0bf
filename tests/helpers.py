"""Shared test helpers: random inputs from a seed and cross-backend comparison."""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator

import numpy as np
from hypothesis import strategies as st

import portcv

#: Every border mode of portcv's neighbourhood filters.
borders = st.sampled_from(portcv.filters.BORDERS)


def byte_flipped_files(good: bytes, folder: Any, rng: np.random.Generator, *, flips: int,
                       trials: int = 40, suffix: str = ".npz") -> Iterator[Any]:
    """``trials`` copies of a file's bytes, copy ``i`` with ``1 + i % flips`` random bits flipped,
    written into ``folder`` as ``flip<i><suffix>``: for loader tests, where each must load or
    raise a ValueError naming the file."""
    for trial in range(trials):
        data = bytearray(good)
        for i in rng.integers(0, len(data), 1 + trial % flips):
            data[i] ^= 1 << int(rng.integers(0, 8))
        bad = folder / f"flip{trial}{suffix}"
        bad.write_bytes(bytes(data))
        yield bad


def cv2_borders(cv2: Any) -> dict[str, int]:
    """portcv's border names -> OpenCV's constants (``cv2`` as the test module imported it)."""
    return {"reflect101": cv2.BORDER_REFLECT_101, "replicate": cv2.BORDER_REPLICATE, "constant": cv2.BORDER_CONSTANT}


def assert_same_bits(expected: Any, actual: Any) -> None:
    """dtype, shape and every element equal (the cross-backend contract)."""
    e, a = portcv.to_numpy(expected), portcv.to_numpy(actual)
    assert a.dtype == e.dtype, f"dtype {a.dtype} != {e.dtype}"
    assert a.shape == e.shape, f"shape {a.shape} != {e.shape}"
    if not np.array_equal(a, e):
        bad = np.argwhere(a != e)
        raise AssertionError(f"{len(bad)} of {e.size} elements differ; first at {tuple(bad[0])}: {a[tuple(bad[0])]} != {e[tuple(bad[0])]}")


def on_backend(backend: str, fn: Callable, *args: Any, **kwargs: Any) -> Any:
    with portcv.using(backend):
        out = fn(*args, **kwargs)
        assert portcv.backend().owns(out) if not isinstance(out, tuple) else True
        return out


@contextlib.contextmanager
def jax_without_x64() -> Iterator[None]:
    """The JAX backend with ``jax_enable_x64`` turned off inside the block (a user's mistake the
    backend's ``require_dtype`` checks must catch); skips where JAX or its scoped switch is missing."""
    import pytest

    jax = pytest.importorskip("jax")
    try:
        portcv.backends.get("jax")
    except portcv.BackendUnavailableError as exc:
        pytest.skip(str(exc))
    if not hasattr(jax, "enable_x64"):
        pytest.skip("this JAX has no scoped jax.enable_x64")
    with portcv.using("jax"), jax.enable_x64(False):
        yield


def matches_numpy(backend: str, fn: Callable, *args: Any, **kwargs: Any) -> Any:
    """Run ``fn`` on NumPy and on ``backend``; assert the same bits; return the NumPy result."""
    expected = on_backend("numpy", fn, *args, **kwargs)
    assert_same_bits(expected, on_backend(backend, fn, *args, **kwargs))
    return expected


@contextlib.contextmanager
def runs_its_overrides(*kernel_names: str) -> Iterator[None]:
    """Fail if, inside the block, a backend's override of one of ``kernel_names`` declines (and
    the portable version runs instead): a same-bits test then proves the override itself."""
    from portcv import _kernel

    before = _kernel.fallback_counts()
    yield
    declined = {key: n - before.get(key, 0) for key, n in _kernel.fallback_counts().items()
                if key[0] in kernel_names and n > before.get(key, 0)}
    assert not declined, f"overrides declined (the portable version ran): {declined}"


@st.composite
def images(
    draw: st.DrawFn,
    *,
    channels: tuple = (None, 1, 3),
    max_h: int = 70,
    max_w: int = 90,
    batch: bool = True,
) -> tuple[np.ndarray, Any]:
    """``(image, channel_axis)``: uint8 images ``(H, W)``, ``(H, W, C)`` or batches of them, 1x1 up to odd non-multiple-of-32 sizes.

    Pixels come from a seeded generator (fast for big arrays); a third of the examples are
    low-contrast so that rounding ties and small sums are common.
    """
    h = draw(st.integers(1, max_h))
    w = draw(st.integers(1, max_w))
    c = draw(st.sampled_from(channels))
    lead = (draw(st.integers(1, 3)),) if batch and draw(st.booleans()) else ()
    shape = lead + (h, w) + (() if c is None else (c,))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    high = draw(st.sampled_from([256, 256, 4]))
    img = rng.integers(0, high, shape, dtype=np.uint8) * np.uint8(64 if high == 4 else 1)
    return img, (None if c is None else -1)
