"""The frame-delta kernels of the Webcam Streaming & Filters report (section 2): encode with error feedback, decode.

``delta_encode``: a byte is *changed* when ``|frame - reference| > threshold``. Changed bytes
are listed in ascending flat (C-order) position: ``positions[k]`` is the flat index of the
``k``-th changed byte and ``diffs[k] = (frame - reference) mod 256`` stored as int8, exactly the
report's ``h_xs`` / ``h_diff``; ``count`` is the report's ``h_pos``. The buffers have a fixed
``capacity`` (static under ``jit``); slots ``count..capacity-1`` hold zeros. The first
``capacity`` changed bytes are *sent*; the new reference takes the frame's value where a byte is
sent and keeps the old reference elsewhere (the report's error feedback, ``pvs.data[i] -= df``):
a byte that drifts slowly keeps its old value until the drift crosses the threshold, and a
changed byte that did not fit stays pending for the next frame. So the decoder's picture,
``reference + diffs`` at ``positions``, equals the encoder's new reference exactly.

Three implementations, one result: the portable array-API version (flags -> inclusive
``cumulative_sum`` -> ranks -> scatter into ``capacity + 1`` slots, the last a dump slot for
bytes that are not sent; it is what JAX traces under ``jit`` and what ``numpy:readonly`` runs),
a NumPy override (``flatnonzero``; the same result, much faster than the scatter on the host,
checked against the portable version by the test suite) and a CuPy override (``_delta_cuda.py``)
running ``_delta_cuda.cu``: a counting pass,
a single-block scan of the per-block counts and a compaction pass, all with 16-byte vectors,
no atomics.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import _validate
from .._delta_decode import delta_decode_kernel
from .._kernel import kernel
from ..backends import asarray, get, owner_of, to_numpy, using
from ..backends import backend as active_backend

#: Bytes one CUDA thread handles (one uint4) and threads per block: a block compacts a 4 KiB tile.
CUDA_VECTOR = 16
CUDA_BLOCK = 256
CUDA_TILE = CUDA_VECTOR * CUDA_BLOCK
#: Threads of the single-block scan over the per-tile counts.
CUDA_SCAN_THREADS = 1024


def _changed(xp: Any, f: Any, r: Any, threshold: int) -> Any:
    """``|f - r| > threshold`` on uint8 without widening: max - min cannot wrap."""
    return (xp.maximum(f, r) - xp.minimum(f, r)) > threshold


@kernel("delta_encode")
def delta_encode_kernel(xp: Any, frame: Any, reference: Any, *, threshold: int, capacity: int,
                        donate_reference: bool = False) -> Any:
    """Portable delta encoder: ``(count, diffs, positions, new_reference)`` (see the module docstring).

    ``donate_reference`` is a hint that the caller will not read ``reference`` again, so an
    override may update it in place (the CUDA kernel then writes only the 16-byte vectors that
    hold a sent byte); the portable version never writes its inputs.
    """
    n = math.prod(frame.shape)
    f = xp.reshape(frame, (-1,))
    r = xp.reshape(reference, (-1,))
    changed = _changed(xp, f, r, threshold)
    # rank = how many changed bytes come before this one; n < 2**31, so int32 cannot wrap.
    rank = xp.cumulative_sum(xp.astype(changed, xp.int32)) - 1
    sent = changed & (rank < capacity)
    dest = xp.where(sent, rank, capacity)  # slot `capacity` is the dump slot, sliced off below
    index = xp.arange(n, dtype=xp.int32)
    # (f - r) mod 256 as int8, spelled out in int16: ((d + 128) & 255) - 128 in [-128, 127].
    d = xp.astype(f, xp.int16) - xp.astype(r, xp.int16)
    d8 = xp.astype(((d + 128) & 255) - 128, xp.int8)
    import array_api_extra as xpx

    positions = xpx.at(xp.zeros(capacity + 1, dtype=xp.int32), dest).set(index)[:capacity]
    diffs = xpx.at(xp.zeros(capacity + 1, dtype=xp.int8), dest).set(d8)[:capacity]
    # xp.asarray: NumPy reductions return scalars; the count is a 0-d array on every backend.
    count = xp.asarray(xp.minimum(xp.sum(xp.astype(changed, xp.int32), dtype=xp.int32), capacity), dtype=xp.int32)
    new_reference = xp.reshape(xp.where(sent, f, r), frame.shape)
    return count, diffs, positions, new_reference


@delta_encode_kernel.override("numpy")
def _delta_encode_numpy(frame: Any, reference: Any, *, threshold: int, capacity: int,
                        donate_reference: bool = False) -> Any:
    # The host fast path: flatnonzero instead of a full-size scatter. The numpy:readonly test
    # backend runs the portable version, and the tests require the two to agree bit for bit.
    f = np.ascontiguousarray(frame).reshape(-1)
    r = np.ascontiguousarray(reference).reshape(-1)
    index = np.flatnonzero(_changed(np, f, r, threshold))[:capacity]
    k = index.size
    positions = np.zeros(capacity, np.int32)
    positions[:k] = index
    diffs = np.zeros(capacity, np.int8)
    diffs[:k] = (f[index] - r[index]).view(np.int8)  # uint8 subtraction wraps: (f - r) mod 256
    new_reference = r.copy()
    new_reference[index] = f[index]
    return np.asarray(k, dtype=np.int32), diffs, positions, new_reference.reshape(frame.shape)



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
    The Webcam Streaming & Filters report, section 2.1 (CPU loop) and 2.2 (CUDA kernels). The report orders the
    changed bytes by the arrival of ``atomicInc``; portcv orders them by position, through
    prefix-sum compaction, so every backend returns the same bits. Only integer compares and
    wrap-around subtraction per byte; no rounding. The portable version ranks the changed
    bytes with a cumulative sum and scatters them into ``capacity + 1`` slots (the last one a
    dump slot), so it runs under ``jax.jit``; the CuPy kernel (``_delta_cuda.cu``) counts the
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
    The receiving side of the Webcam Streaming & Filters report (section 2): ``frame[h_xs[k]] += h_diff[k]``.
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
    count = _validate.count(count)
    capacity = diffs.shape[0]
    check = _validate.boolean(check, "check")
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
    """The sending side of the Webcam Streaming & Filters report's stream: the reference stays on the device.

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
        b = get(self.backend_name)
        host_d = self._pinned_buffer(b, "diffs", diffs.shape[0], np.int8)
        host_p = self._pinned_buffer(b, "positions", positions.shape[0], np.int32)
        if host_d is None or host_p is None:  # no page-locked memory on this backend
            k = int(to_numpy(count))
            # Slice to a power of two >= k first: a jit framework compiles each slice shape once.
            m = min(diffs.shape[0], max(1024, 1 << max(k - 1, 0).bit_length()))
            d, p = to_numpy(diffs[:m]), to_numpy(positions[:m])
            return k, np.array(d[:k]), np.array(p[:k], dtype=np.int32)
        k = int(to_numpy(count))  # 4 bytes back; the one synchronization per frame
        if k:
            b.copy_to_host(diffs[:k], host_d[:k])
            b.copy_to_host(positions[:k], host_p[:k])
        return k, host_d[:k].copy(), host_p[:k].copy()

    def _pinned_buffer(self, b: Any, name: str, size: int, dtype: Any) -> np.ndarray | None:
        buf = self._pinned.get(name)
        if buf is None or buf.shape[0] < size:
            buf = b.empty_pinned((max(size, 1),), dtype)
            if buf is None:
                return None
            self._pinned[name] = buf
        return buf

    def reference_host(self) -> np.ndarray:
        """The reference as a NumPy array (what a keyframe carries)."""
        if self.reference is None:
            raise ValueError("the encoder has no reference yet; send a keyframe first")
        return np.array(to_numpy(self.reference))
