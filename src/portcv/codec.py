"""Frame-delta coding of the webcam report (section 2): send only the bytes that changed.

The report streams video by sending, per frame, the bytes whose difference from the previous
frame exceeds a threshold (20), with *error feedback*: a byte whose change is at or below the
threshold keeps the reference's old value, so slow drifts accumulate until they cross the
threshold and are sent, and the receiver's picture never drifts from the sender's.

- :func:`delta_encode` / :func:`delta_decode`: one step, functional, on any backend, bit-exact.
- :class:`DeltaEncoder`: the stateful sender side; it keeps the reference on the device (the
  report's pointer swap becomes an in-place update of the vectors that changed) and copies only
  ``count`` entries back to the host (pinned buffers on CuPy).

The wire format, keyframes and the TCP server and client live in :mod:`portcv.stream`.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from . import _validate
from ._delta import delta_decode_kernel, delta_encode_kernel
from .backends import asarray, get, owner_of, to_numpy, using
from .backends import backend as active_backend

__all__ = ["delta_encode", "delta_decode", "DeltaEncoder", "DEFAULT_THRESHOLD"]

#: The report's LR_THRESHOLDS.
DEFAULT_THRESHOLD = 20


def _frame_pair(frame: Any, reference: Any) -> tuple[Any, Any]:
    frame = _validate.image(frame, "frame", min_ndim=1)
    reference = _validate.image(reference, "reference", min_ndim=1)
    if tuple(frame.shape) != tuple(reference.shape):
        raise ValueError(f"frame and reference must have the same shape, got {tuple(frame.shape)} and "
                         f"{tuple(reference.shape)}")
    return frame, reference


def _capacity(capacity: Any, size: int) -> int:
    if capacity is None:
        return size
    return _validate.integer(capacity, "capacity", low=0, high=size)


def delta_encode(frame: Any, reference: Any, *, threshold: int = DEFAULT_THRESHOLD,
                 capacity: int | None = None) -> tuple[Any, Any, Any, Any]:
    """Encode ``frame`` as the bytes that changed from ``reference``, with error feedback.

    Parameters
    ----------
    frame : (...) uint8 array
        The new frame, any shape (``(H, W)``, ``(H, W, C)``, a batch); it is coded as its flat
        C-order bytes.
    reference : uint8 array, same shape as ``frame``
        What the receiver shows now (the previous ``new_reference``, or a keyframe).
    threshold : int in [0, 255]
        A byte is *changed* when ``|frame - reference| > threshold`` (the report's
        ``LR_THRESHOLDS``, 20).
    capacity : int in [0, frame.size], optional
        Length of the output buffers (default ``frame.size``: everything fits). Only the first
        ``capacity`` changed bytes (in position order) are sent; the others keep their old
        reference value and are still changed, so they go out with a later frame (a bandwidth
        cap that never breaks the decoder's exactness).

    Returns
    -------
    count : 0-d int32 array
        Number of bytes sent, ``min(#changed, capacity)`` (the report's ``h_pos``).
    diffs : (capacity,) int8 array
        ``diffs[k] = (frame - reference) mod 256`` at the ``k``-th sent byte, as int8 (the report's
        ``h_diff``); zeros from ``count`` on.
    positions : (capacity,) int32 array
        Flat positions of the sent bytes, strictly ascending (the report's ``h_xs``); zeros from
        ``count`` on.
    new_reference : uint8 array, shape of ``frame``
        ``frame`` where a byte was sent, ``reference`` elsewhere. Equal to what
        :func:`delta_decode` reconstructs, and within ``threshold`` of ``frame`` everywhere
        when nothing overflowed ``capacity``.

    Notes
    -----
    The webcam report, section 2.1 (CPU loop) and 2.2 (CUDA kernels). The report orders the
    changed bytes by the arrival of ``atomicInc``; portcv orders them by position, through
    prefix-sum compaction, so every backend returns the same bits. Only integer compares and
    wrap-around subtraction per byte; no rounding. The portable version ranks the changed
    bytes with a cumulative sum and scatters them into ``capacity + 1`` slots (the last one a
    dump slot), so it runs under ``jax.jit``; the CuPy kernel (``cuda/delta.cu``) counts the
    changes of each 4 KiB tile with 16-byte loads, scans the tile counts and compacts each tile
    through shared memory, with no atomics; see ``docs/codec.md``.

    Examples
    --------
    >>> import numpy as np, portcv
    >>> ref = np.array([[10, 10, 10, 10]], np.uint8)
    >>> frame = np.array([[10, 40, 25, 250]], np.uint8)
    >>> count, diffs, positions, new_ref = portcv.codec.delta_encode(frame, ref, threshold=20)
    >>> int(count), portcv.to_numpy(positions)[:int(count)], portcv.to_numpy(diffs)[:int(count)]
    (2, array([1, 3], dtype=int32), array([ 30, -16], dtype=int8))
    >>> portcv.to_numpy(new_ref)  # byte 2 changed by 15 <= 20: it keeps the old value
    array([[ 10,  40,  10, 250]], dtype=uint8)
    """
    frame, reference = _frame_pair(frame, reference)
    threshold = _validate.integer(threshold, "threshold", low=0, high=255)
    capacity = _capacity(capacity, math.prod(frame.shape))
    return delta_encode_kernel(frame, reference, threshold=threshold, capacity=capacity)


def _count_argument(count: Any) -> Any:
    if isinstance(count, bool):
        raise TypeError("count must be an integer or a 0-d integer array, got bool")
    if isinstance(count, numbers.Integral):
        return int(count)
    if owner_of(count) is None:
        raise TypeError(f"count must be an integer or a 0-d integer array, got {type(count).__name__}")
    if tuple(count.shape) != () or not np.issubdtype(np.dtype(count.dtype), np.integer):
        raise TypeError(f"count must be a 0-d integer array, got shape {tuple(count.shape)} dtype {count.dtype}")
    return count


def delta_decode(reference: Any, diffs: Any, positions: Any, count: Any, *, check: bool = True) -> Any:
    """Apply one encoded delta: ``reference`` with ``diffs[k]`` added (mod 256) at ``positions[k]``.

    Parameters
    ----------
    reference : (...) uint8 array
        The receiver's picture before this frame.
    diffs : (capacity,) int8 array
        From :func:`delta_encode` (or the wire).
    positions : (capacity,) integer array
        Flat C-order positions, strictly ascending in ``[0, reference.size)`` for ``k < count``.
    count : int or 0-d integer array
        Number of valid entries, ``0 <= count <= capacity``.
    check : bool
        Verify ``count`` and ``positions[:count]`` (range, strictly ascending) and raise
        ``ValueError`` otherwise. On a GPU backend this reads them back (one synchronization);
        with ``check=False`` invalid entries are skipped, never written out of bounds, and
        repeated positions give an undefined result.

    Returns
    -------
    uint8 array, shape of ``reference``: the new picture, equal bit for bit to the encoder's
    ``new_reference``.

    Notes
    -----
    The receiving side of the webcam report (section 2): ``frame[h_xs[k]] += h_diff[k]``.
    uint8 addition wraps mod 256, which undoes the encoder's ``(frame - reference) mod 256``
    exactly. Portable version: a gather and a scatter over ``capacity`` slots plus a dump slot
    (jit-friendly); CuPy: one thread per entry (``portcv_delta_apply``), no atomics needed
    because positions are distinct.

    Examples
    --------
    >>> import numpy as np, portcv
    >>> ref = np.array([[10, 10, 10, 10]], np.uint8)
    >>> diffs = np.array([30, -16, 0], np.int8); positions = np.array([1, 3, 0], np.int32)
    >>> portcv.to_numpy(portcv.codec.delta_decode(ref, diffs, positions, 2))
    array([[ 10,  40,  10, 250]], dtype=uint8)
    """
    reference = _validate.image(reference, "reference", min_ndim=1)
    for value, name in ((diffs, "diffs"), (positions, "positions")):
        if owner_of(value) is None:
            raise TypeError(f"{name} must be an array (NumPy, CuPy or JAX), got {type(value).__name__}")
        if len(value.shape) != 1:
            raise ValueError(f"{name} must be 1-D, got shape {tuple(value.shape)}")
    if np.dtype(diffs.dtype) != np.int8:
        raise TypeError(f"diffs must have dtype int8, got {np.dtype(diffs.dtype)}")
    if not np.issubdtype(np.dtype(positions.dtype), np.integer):
        raise TypeError(f"positions must have an integer dtype, got {np.dtype(positions.dtype)}")
    if diffs.shape[0] != positions.shape[0]:
        raise ValueError(f"diffs and positions must have the same length, got {diffs.shape[0]} and {positions.shape[0]}")
    count = _count_argument(count)
    capacity = diffs.shape[0]
    if check:
        k = int(to_numpy(count)) if not isinstance(count, int) else count
        if not 0 <= k <= capacity:
            raise ValueError(f"count must be in [0, {capacity}] (the buffers' length), got {k}")
        p = to_numpy(positions)[:k].astype(np.int64)
        n = math.prod(reference.shape)
        if k and (p[0] < 0 or p[-1] >= n or not np.all(p[1:] > p[:-1])):
            bad = "outside [0, %d)" % n if (p.min() < 0 or p.max() >= n) else "not strictly ascending"
            raise ValueError(f"positions[:count] must be strictly ascending in [0, {n}); they are {bad}")
    xp = active_backend().xp
    count = asarray(np.asarray(count, dtype=np.int64)) if isinstance(count, int) else asarray(count)
    return delta_decode_kernel(reference, asarray(diffs), asarray(positions), xp.astype(count, xp.int64))


class DeltaEncoder:
    """The sending side of the webcam report's stream: the reference stays on the device.

    Each :meth:`encode` runs :func:`delta_encode` against the kept reference and replaces it by
    the new one; on CuPy the reference buffer is updated in place, and only the 16-byte vectors
    that hold a sent byte are written (the report's section 2.2.4 "store in global memory only
    if needed", and its current/previous pointer swap without the second buffer).
    :meth:`encode_host` also brings ``count`` entries (not ``capacity``) back to the host, via
    pinned buffers on CuPy (section 2.2.3).

    Parameters
    ----------
    threshold : int in [0, 255]
        As in :func:`delta_encode`.
    capacity : int, optional
        As in :func:`delta_encode` (default: the frame size).
    backend : str, optional
        Backend to run on (default: the active one when the encoder is made). The encoder
        switches to it inside each call, so it can be used from worker threads.

    Examples
    --------
    >>> import numpy as np, portcv
    >>> enc = portcv.codec.DeltaEncoder(threshold=20)
    >>> enc.keyframe(np.zeros((2, 3), np.uint8)).shape
    (2, 3)
    >>> count, diffs, positions = enc.encode_host(np.array([[0, 50, 5], [0, 0, 200]], np.uint8))
    >>> count, positions, diffs
    (2, array([1, 5], dtype=int32), array([ 50, -56], dtype=int8))
    >>> portcv.to_numpy(enc.reference)
    array([[  0,  50,   0],
           [  0,   0, 200]], dtype=uint8)
    """

    def __init__(self, *, threshold: int = DEFAULT_THRESHOLD, capacity: int | None = None,
                 backend: str | None = None) -> None:
        self.threshold = _validate.integer(threshold, "threshold", low=0, high=255)
        self.capacity = None if capacity is None else _validate.integer(capacity, "capacity", low=0)
        self.backend_name = get(backend).name if backend is not None else active_backend().name
        self.reference: Any = None
        self._pinned: dict[str, np.ndarray] = {}

    def keyframe(self, frame: Any) -> Any:
        """Make ``frame`` (a copy, on the encoder's backend) the reference; return it."""
        with using(self.backend_name):
            frame = _validate.image(frame, "frame", min_ndim=1)
            xp = active_backend().xp
            self.reference = xp.asarray(frame, copy=True)
            return self.reference

    def encode(self, frame: Any) -> tuple[Any, Any, Any]:
        """``(count, diffs, positions)`` of ``frame`` against the reference, which is then updated.

        Raises ``ValueError`` if there is no reference yet (call :meth:`keyframe`) or the frame's
        shape differs from it.
        """
        if self.reference is None:
            raise ValueError("frame: the encoder has no reference yet; send a keyframe first")
        with using(self.backend_name):
            frame, reference = _frame_pair(frame, self.reference)
            size = math.prod(frame.shape)
            capacity = size if self.capacity is None else min(self.capacity, size)
            count, diffs, positions, self.reference = delta_encode_kernel(
                frame, reference, threshold=self.threshold, capacity=capacity, donate_reference=True)
            return count, diffs, positions

    def encode_host(self, frame: Any) -> tuple[int, np.ndarray, np.ndarray]:
        """:meth:`encode`, then ``(count, diffs[:count], positions[:count])`` as NumPy arrays.

        Only ``count`` entries cross to the host; on CuPy they land in pinned buffers, reused
        from frame to frame, and are copied out of them (the returned arrays are yours).
        """
        count, diffs, positions = self.encode(frame)
        if self.backend_name != "cupy":
            k = int(to_numpy(count))
            # Slice to a power of two >= k first: a jit framework compiles each slice shape once.
            m = min(diffs.shape[0], max(1024, 1 << max(k - 1, 0).bit_length()))
            d, p = to_numpy(diffs[:m]), to_numpy(positions[:m])
            return k, np.array(d[:k]), np.array(p[:k], dtype=np.int32)
        k = int(count)  # 4 bytes back; the one synchronization per frame
        host_d = self._pinned_buffer("diffs", diffs.shape[0], np.int8)
        host_p = self._pinned_buffer("positions", positions.shape[0], np.int32)
        if k:
            diffs[:k].get(out=host_d[:k])
            positions[:k].get(out=host_p[:k])
        return k, host_d[:k].copy(), host_p[:k].copy()

    def _pinned_buffer(self, name: str, size: int, dtype: Any) -> np.ndarray:
        buf = self._pinned.get(name)
        if buf is None or buf.shape[0] < size:
            import cupyx

            buf = self._pinned[name] = cupyx.empty_pinned((max(size, 1),), dtype=dtype)
        return buf

    def reference_host(self) -> np.ndarray:
        """The reference as a NumPy array (what a keyframe carries)."""
        if self.reference is None:
            raise ValueError("the encoder has no reference yet; send a keyframe first")
        return np.array(to_numpy(self.reference))
