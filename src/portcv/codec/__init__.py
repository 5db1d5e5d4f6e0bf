"""Frame-delta coding of the Webcam Streaming & Filters report (section 2): send only the bytes that changed.

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

from . import _delta_cuda  # noqa: F401  (registers the CuPy overrides)
from ._delta import DEFAULT_THRESHOLD, DeltaEncoder, delta_decode, delta_encode

__all__ = [
    "delta_encode",
    "delta_decode",
    "DeltaEncoder",
    "DEFAULT_THRESHOLD",
]
