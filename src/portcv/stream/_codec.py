"""Stream decoder and encoder: keyframes and frame deltas to packets and back."""

from __future__ import annotations

import math
import zlib
from typing import Any, Callable

import numpy as np

from .. import _validate
from .. import codec as _codec
from .._delta_decode import delta_decode_numpy
from ..backends import to_numpy, using
from ._packets import (
    DEFAULT_MAX_FRAME_BYTES,
    ENCODINGS,
    FLAG_END,
    FLAG_KEYFRAME,
    HEADER_SIZE,
    PacketHeader,
    StreamError,
    _check_encoding,
    _check_shape,
    _inflate,
    _read_varints,
    check_limit,
    encode_delta,
    encode_keyframe,
    parse_header,
)


class StreamDecoder:
    """The receiving side: packets in, frames out, every packet checked.

    Parameters
    ----------
    max_frame_bytes : int
        Largest frame accepted (bytes); default 3840 x 2160 x 4.
    max_payload : int, optional
        Largest payload accepted (default ``5 * max_frame_bytes + 64``).

    After a rejected packet the decoder's picture may be stale, so it refuses deltas
    (``reason='no_keyframe'``) until the next keyframe; :attr:`needs_keyframe` tells when.

    Examples
    --------
    >>> import numpy as np
    >>> from portcv.stream import StreamDecoder, StreamError, encode_keyframe
    >>> dec = StreamDecoder(max_frame_bytes=100)
    >>> try:
    ...     dec.decode(encode_keyframe(np.zeros((20, 20), np.uint8), 0))
    ... except StreamError as exc:
    ...     print(exc)
    frame of 400 bytes exceeds the limit of 100
    """

    def __init__(self, *, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES, max_payload: int | None = None) -> None:
        self.max_frame_bytes = check_limit(max_frame_bytes, "max_frame_bytes")
        self.max_payload = (5 * self.max_frame_bytes + 64 if max_payload is None
                            else check_limit(max_payload, "max_payload"))
        self.reference: np.ndarray | None = None
        self.index: int | None = None
        self.needs_keyframe = True
        self.ended = False

    def parse_header(self, data: bytes) -> PacketHeader:
        return parse_header(data, max_frame_bytes=self.max_frame_bytes, max_payload=self.max_payload)

    def decode(self, packet: bytes) -> tuple[int, np.ndarray] | None:
        """``(index, frame)`` for a keyframe or delta, ``None`` for the end-of-stream packet."""
        header = self.parse_header(packet)
        have = len(packet) - HEADER_SIZE
        if have < header.payload_length:
            raise StreamError("truncated", f"truncated payload: {have} of {header.payload_length} bytes")
        if have > header.payload_length:
            raise StreamError("truncated", f"{have - header.payload_length} bytes after the payload")
        return self.apply(header, packet[HEADER_SIZE:])

    def apply(self, header: PacketHeader, payload: bytes) -> tuple[int, np.ndarray] | None:
        """Decode a payload whose header :meth:`parse_header` accepted."""
        try:
            return self._apply(header, payload)
        except StreamError:
            self.needs_keyframe = True
            raise

    def _apply(self, header: PacketHeader, payload: bytes) -> tuple[int, np.ndarray] | None:
        if len(payload) != header.payload_length:
            raise StreamError("truncated", f"payload of {len(payload)} bytes, header says {header.payload_length}")
        if zlib.crc32(payload) != header.payload_crc:
            raise StreamError("crc", f"payload CRC32 mismatch in frame {header.index}")
        if header.flags == FLAG_END:
            self.ended = True
            return None
        n = header.frame_bytes
        zipped = header.encoding == ENCODINGS["compact+zlib"]
        if header.flags == FLAG_KEYFRAME:
            data = _inflate(payload, n) if zipped else payload
            if len(data) != n:
                raise StreamError("payload", f"keyframe holds {len(data)} bytes, its shape needs {n}")
            self.reference = np.frombuffer(data, np.uint8).reshape(header.shape).copy()
            self.reference.flags.writeable = False  # handed to callers; the decoder never writes it
            self.index = header.index
            self.needs_keyframe = False
            return header.index, self.reference
        # A delta.
        if self.needs_keyframe or self.reference is None:
            raise StreamError("no_keyframe", f"delta {header.index} before a keyframe: waiting for one")
        if header.shape != self.reference.shape:
            raise StreamError("shape", f"shape changed from {self.reference.shape} to {header.shape} without a keyframe")
        if header.index != self.index + 1:
            raise StreamError("sequence", f"delta {header.index} after frame {self.index}: frames were lost")
        count = header.count
        if header.encoding == ENCODINGS["raw"]:
            if len(payload) != 5 * count:
                raise StreamError("payload", f"raw delta of {count} entries needs {5 * count} bytes, got {len(payload)}")
            positions = np.frombuffer(payload, "<u4", count).astype(np.int64)
            diffs = np.frombuffer(payload, np.int8, count, offset=4 * count)
            if count and (positions[-1] >= n or np.any(positions[1:] <= positions[:-1])):
                raise StreamError("payload", "raw delta positions are not strictly ascending inside the frame")
        else:
            data = _inflate(payload, 6 * count) if zipped else payload
            if len(data) < count:
                raise StreamError("payload", f"compact delta of {count} entries holds only {len(data)} bytes")
            gaps = _read_varints(np.frombuffer(data, np.uint8, len(data) - count), count)
            positions = np.cumsum(gaps + np.uint64(1), dtype=np.uint64).astype(np.int64) - 1
            if count and (positions[-1] >= n or gaps.max() >= 2**32):
                raise StreamError("payload", "compact delta positions run past the frame")
            diffs = np.frombuffer(data, np.int8, count, offset=len(data) - count)
        self.reference = delta_decode_numpy(self.reference, diffs, positions, count)  # a new array
        self.reference.flags.writeable = False
        self.index = header.index
        return header.index, self.reference


class StreamEncoder:
    """Frames in, packets out: a :class:`portcv.codec.DeltaEncoder` plus keyframe policy.

    A keyframe goes out for the first frame, every ``keyframe_interval`` frames, after
    :meth:`request_keyframe`, when the shape changes, and whenever the delta's payload would be
    at least as large as a keyframe's (a scene cut). A keyframe resets the reference to the
    frame itself, which also clears the error feedback's residue.

    Examples
    --------
    >>> import numpy as np
    >>> from portcv.stream import StreamDecoder, StreamEncoder, encode_keyframe
    >>> enc, dec = StreamEncoder(threshold=20), StreamDecoder()
    >>> frames = [np.full((8, 8), v, np.uint8) for v in (0, 10, 30)]
    >>> [(dec.decode(enc.encode(f))[0], enc.last_kind) for f in frames]
    [(0, 'keyframe'), (1, 'delta'), (2, 'keyframe')]
    """

    def __init__(self, *, threshold: int = _codec.DEFAULT_THRESHOLD, encoding: str = "compact",
                 keyframe_interval: int = 300, backend: str | None = None,
                 prefilter: Callable[[Any], Any] | None = None) -> None:
        self.encoding = encoding
        _check_encoding(encoding)
        if isinstance(keyframe_interval, bool) or not isinstance(keyframe_interval, (int, np.integer)) \
                or keyframe_interval < 1:
            raise ValueError(f"keyframe_interval must be a positive integer, got {keyframe_interval!r}")
        self.keyframe_interval = int(keyframe_interval)
        if prefilter is not None and not callable(prefilter):
            raise TypeError(f"prefilter must be a function of a frame or None, got {type(prefilter).__name__}")
        self.delta = _codec.DeltaEncoder(threshold=threshold, backend=backend)
        self.prefilter = prefilter
        self.index = -1
        self.last_kind = ""
        self.last_count = 0
        self._since_keyframe = 0
        self._keyframe_wanted = True
        self._keyframe_cache: tuple[int, bytes] | None = None

    @property
    def backend_name(self) -> str:
        return self.delta.backend_name

    def request_keyframe(self) -> None:
        """Make the next :meth:`encode` send a keyframe."""
        self._keyframe_wanted = True

    def encode(self, frame: Any) -> bytes:
        """The packet for the next frame (a keyframe or a delta)."""
        with using(self.backend_name):
            if self.prefilter is not None:
                frame = self.prefilter(frame)
            # Checked before the index moves: a refused frame leaves the stream as it was.
            frame = _validate.image(frame, "frame", min_ndim=1)
            shape = _check_shape(tuple(frame.shape), "frame shape")
            self.index += 1
            ref = self.delta.reference
            if (self._keyframe_wanted or ref is None or tuple(ref.shape) != shape
                    or self._since_keyframe + 1 >= self.keyframe_interval):
                return self._keyframe(frame)
            # A raw delta takes 5 bytes per entry, a compact one at least 2: past n / factor
            # entries a keyframe is smaller, so the buffers need no more (less to zero, too).
            factor = 5 if self.encoding == "raw" else 2
            n = math.prod(shape)
            self.delta.capacity = -(-n // factor)
            count, diffs, positions = self.delta.encode_host(frame)
            if count * factor >= n:
                # Not worth it: a keyframe is smaller. The delta already moved the reference;
                # the keyframe resets it to the frame.
                return self._keyframe(frame)
            self._since_keyframe += 1
            self.last_kind, self.last_count = "delta", count
            return encode_delta(shape, self.index, count, diffs, positions, encoding=self.encoding)

    def _keyframe(self, frame: Any) -> bytes:
        ref = self.delta.keyframe(frame)
        self._keyframe_wanted = False
        self._since_keyframe = 0
        self.last_kind, self.last_count = "keyframe", 0
        packet = encode_keyframe(to_numpy(ref), self.index, encoding=self.encoding)
        self._keyframe_cache = (self.index, packet)
        return packet

    def keyframe_packet(self) -> bytes:
        """A keyframe of the current reference at the current index, for a client joining now
        (the deltas that follow apply to it); cached per frame."""
        if self._keyframe_cache is not None and self._keyframe_cache[0] == self.index:
            return self._keyframe_cache[1]
        packet = encode_keyframe(self.delta.reference_host(), self.index, encoding=self.encoding)
        self._keyframe_cache = (self.index, packet)
        return packet
