"""Frame-delta video streaming over TCP: the webcam report's client and server (section 2).

Three layers:

- **Wire format**: a 52-byte versioned header (magic, version, flags keyframe/delta/end,
  payload encoding, dtype, frame index, shape, count, payload length, payload CRC32, header
  CRC32) and a payload. :func:`encode_keyframe` / :func:`encode_delta` build packets;
  :func:`parse_header` and :class:`StreamDecoder` check every field and raise
  :class:`StreamError` (a ``ValueError``) for truncated packets, wrong magic or version, sizes
  beyond the configured limits, CRC mismatches, a shape change without a keyframe or a gap in
  the frame indices. Nothing is allocated before its size has been checked against the limits.
- **Encoder**: :class:`StreamEncoder` turns frames into packets with a
  :class:`portcv.codec.DeltaEncoder` (on any backend): periodic keyframes, keyframes on
  demand, and a keyframe instead of a delta whenever the delta would be larger.
- **Transport**: :class:`StreamServer` (asyncio; capture -> encode -> send stages joined by
  bounded queues, the report's three threads) and :class:`StreamClient`; the ``portcv stream
  serve`` / ``portcv stream view`` commands. A new or reconnecting client first gets a keyframe;
  a client too slow for the stream has its queue replaced by a keyframe instead of growing it; a
  client that sees a damaged packet asks for a keyframe with a tiny control message.

See ``docs/stream.md`` for the byte layout and the measured bytes per frame.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import math
import socket
import struct
import time
import zlib
from typing import Any, Callable, Iterable, Iterator

import numpy as np

from . import codec as _codec
from ._delta import _delta_decode_numpy
from .backends import to_numpy, using

__all__ = [
    "StreamError", "PacketHeader", "MAGIC", "VERSION", "HEADER_SIZE", "ENCODINGS",
    "encode_keyframe", "encode_delta", "encode_end", "parse_header", "StreamDecoder", "StreamEncoder",
    "StreamServer", "StreamClient", "synthetic_source", "RAW_1080P30_MBITS",
]

MAGIC = b"PCVS"
CONTROL_MAGIC = b"PCVC"
VERSION = 1

FLAG_KEYFRAME = 1
FLAG_DELTA = 2
FLAG_END = 4
_KINDS = {FLAG_KEYFRAME: "keyframe", FLAG_DELTA: "delta", FLAG_END: "end"}

#: Payload encodings. raw: delta = uint32 LE positions then int8 diffs (the report's h_xs,
#: h_diff), keyframe = the frame's bytes. compact: delta = LEB128 varints of the gaps between
#: positions then the diffs; keyframe = raw. compact+zlib: the compact payload (or the
#: keyframe's bytes) through zlib.
ENCODINGS = {"raw": 0, "compact": 1, "compact+zlib": 2}
_ENCODING_NAMES = {v: k for k, v in ENCODINGS.items()}
DTYPES = {0: np.dtype(np.uint8)}

# magic, version, flags, encoding, dtype, index, ndim, shape[4], count, payload length,
# payload CRC32, then the CRC32 of the 48 bytes before it.
_HEADER = struct.Struct("<4sBBBBQB3x4IIII")
HEADER_SIZE = _HEADER.size + 4
_CONTROL = struct.Struct("<4sB3x")
CONTROL_KEYFRAME = 1

#: Default limits of a decoder: a frame of at most 3840 x 2160 x 4 bytes, and the largest
#: payload such a frame can need (a raw delta of every byte: 5 bytes each).
DEFAULT_MAX_FRAME_BYTES = 3840 * 2160 * 4
#: The report's figure for raw RGB 1080p at 30 fps, in Mbit/s (3 * 1920 * 1080 * 30 * 8 / 2**20).
RAW_1080P30_MBITS = 1492


class StreamError(ValueError):
    """A packet that cannot be used. ``reason`` says why; ``framing_lost`` is True when the
    header itself cannot be trusted (the byte stream must be resynchronized: reconnect)."""

    FRAMING = frozenset({"truncated", "magic", "version", "header_crc", "limits"})

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason

    @property
    def framing_lost(self) -> bool:
        return self.reason in self.FRAMING


@dataclasses.dataclass(frozen=True)
class PacketHeader:
    """The fixed header of a packet (see :data:`HEADER_SIZE`)."""

    flags: int
    encoding: int
    index: int
    shape: tuple[int, ...]
    count: int
    payload_length: int
    payload_crc: int
    version: int = VERSION

    @property
    def kind(self) -> str:
        return _KINDS[self.flags]

    @property
    def frame_bytes(self) -> int:
        return math.prod(self.shape) if self.shape else 0


# ---- packets --------------------------------------------------------------------------------

def _pack(flags: int, encoding: int, index: int, shape: tuple[int, ...], count: int, payload: bytes) -> bytes:
    dims = tuple(shape) + (0,) * (4 - len(shape))
    head = _HEADER.pack(MAGIC, VERSION, flags, encoding, 0, index, len(shape), *dims, count, len(payload),
                        zlib.crc32(payload))
    return head + struct.pack("<I", zlib.crc32(head)) + payload


def _check_shape(shape: Any) -> tuple[int, ...]:
    shape = tuple(int(s) for s in shape)
    if not 1 <= len(shape) <= 4 or min(shape) < 1 or max(shape) >= 2**32:
        raise ValueError(f"frame shape must have 1 to 4 positive dimensions below 2**32, got {shape}")
    return shape


def _check_encoding(encoding: str) -> int:
    if encoding not in ENCODINGS:
        raise ValueError(f"encoding must be one of {tuple(ENCODINGS)}, got {encoding!r}")
    return ENCODINGS[encoding]


def _check_index(index: Any) -> int:
    if isinstance(index, bool) or not isinstance(index, (int, np.integer)) or not 0 <= int(index) < 2**64:
        raise ValueError(f"index must be an integer in [0, 2**64), got {index!r}")
    return int(index)


def encode_keyframe(frame: Any, index: int, *, encoding: str = "compact") -> bytes:
    """A keyframe packet: the whole frame (uint8, 1 to 4 dims), zlib-compressed for 'compact+zlib'.

    Examples
    --------
    >>> import numpy as np
    >>> packet = encode_keyframe(np.zeros((2, 3), np.uint8), 7)
    >>> len(packet) - HEADER_SIZE, StreamDecoder().decode(packet)[0]
    (6, 7)
    """
    frame = np.ascontiguousarray(to_numpy(frame))
    if frame.dtype != np.uint8:
        raise TypeError(f"frame must have dtype uint8, got {frame.dtype}")
    shape = _check_shape(frame.shape)
    code = _check_encoding(encoding)
    data = frame.tobytes()
    payload = zlib.compress(data, 1) if code == ENCODINGS["compact+zlib"] else data
    return _pack(FLAG_KEYFRAME, code, _check_index(index), shape, 0, payload)


def encode_end(index: int) -> bytes:
    """The end-of-stream packet (no payload)."""
    return _pack(FLAG_END, 0, _check_index(index), (1,), 0, b"")


def _varint_bytes(values: np.ndarray) -> np.ndarray:
    """LEB128 (7 bits per byte, high bit = more follows) of each uint32, vectorized."""
    v = values.astype(np.uint64)
    nbytes = np.ones(v.shape, np.int64)
    for k in (7, 14, 21, 28):
        nbytes += v >= (1 << k)
    ends = np.cumsum(nbytes)
    out = np.empty(int(ends[-1]) if v.size else 0, np.uint8)
    starts = ends - nbytes
    for k in range(5):
        m = nbytes > k
        if not m.any():
            break
        byte = (v[m] >> np.uint64(7 * k)) & np.uint64(0x7F)
        more = (nbytes[m] > k + 1).astype(np.uint64) << np.uint64(7)
        out[starts[m] + k] = (byte | more).astype(np.uint8)
    return out


def _read_varints(data: np.ndarray, count: int) -> np.ndarray:
    """Inverse of :func:`_varint_bytes` for exactly ``count`` values filling ``data``."""
    ends = np.flatnonzero(data < 0x80)
    if ends.size != count or (count and ends[-1] != data.size - 1) or (not count and data.size):
        raise StreamError("payload", f"compact payload: expected {count} varints in {data.size} bytes")
    starts = np.empty_like(ends)
    starts[:1] = 0
    starts[1:] = ends[:-1] + 1
    lengths = ends - starts + 1
    if count and lengths.max() > 5:
        raise StreamError("payload", "compact payload: a varint is longer than 5 bytes")
    values = np.zeros(count, np.uint64)
    for k in range(5):
        m = lengths > k
        if not m.any():
            break
        values[m] |= (data[starts[m] + k] & 0x7F).astype(np.uint64) << np.uint64(7 * k)
    return values


def encode_delta(shape: Any, index: int, count: int, diffs: Any, positions: Any, *,
                 encoding: str = "compact") -> bytes:
    """A delta packet from :func:`portcv.codec.delta_encode`'s outputs (first ``count`` entries).

    Examples
    --------
    >>> import numpy as np
    >>> dec = StreamDecoder()
    >>> _ = dec.decode(encode_keyframe(np.zeros((2, 3), np.uint8), 0))
    >>> packet = encode_delta((2, 3), 1, 2, np.array([50, -56], np.int8), np.array([1, 5], np.int32))
    >>> dec.decode(packet)
    (1, array([[  0,  50,   0],
           [  0,   0, 200]], dtype=uint8))
    """
    shape = _check_shape(shape)
    code = _check_encoding(encoding)
    count = int(count)
    d = np.ascontiguousarray(to_numpy(diffs)[:count], dtype=np.int8)
    p = np.asarray(to_numpy(positions)[:count]).astype(np.int64)
    if d.size != count or p.size != count:
        raise ValueError(f"count is {count} but diffs / positions hold {d.size} / {p.size} entries")
    if code == ENCODINGS["raw"]:
        payload = p.astype("<u4").tobytes() + d.tobytes()
    else:
        gaps = np.diff(p, prepend=-1) - 1  # >= 0: positions ascend strictly
        payload = _varint_bytes(gaps).tobytes() + d.tobytes()
        if code == ENCODINGS["compact+zlib"]:
            payload = zlib.compress(payload, 1)
    return _pack(FLAG_DELTA, code, _check_index(index), shape, count, payload)


def parse_header(data: bytes, *, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
                 max_payload: int | None = None) -> PacketHeader:
    """Check and unpack the first :data:`HEADER_SIZE` bytes of a packet.

    Raises :class:`StreamError` for a short header, wrong magic or version, a header CRC
    mismatch, an unknown flag, encoding or dtype, or a frame or payload beyond the limits
    (``max_payload`` defaults to ``5 * max_frame_bytes + 64``, a raw delta of every byte).

    Examples
    --------
    >>> import numpy as np
    >>> parse_header(encode_keyframe(np.zeros((4, 5, 3), np.uint8), 9)).shape
    (4, 5, 3)
    >>> parse_header(b"GIF89a" + bytes(60))
    Traceback (most recent call last):
    ...
    portcv.stream.StreamError: bad magic b'GIF8' (not a portcv stream)
    """
    max_payload = 5 * max_frame_bytes + 64 if max_payload is None else max_payload
    if len(data) < HEADER_SIZE:
        raise StreamError("truncated", f"truncated header: {len(data)} of {HEADER_SIZE} bytes")
    fields = _HEADER.unpack_from(data)
    magic, version, flags, encoding, dtype, index, ndim = fields[:7]
    dims, count, length, payload_crc = fields[7:11], fields[11], fields[12], fields[13]
    if magic != MAGIC:
        raise StreamError("magic", f"bad magic {bytes(magic)!r} (not a portcv stream)")
    if version != VERSION:
        raise StreamError("version", f"unsupported stream version {version} (this decoder reads {VERSION})")
    (header_crc,) = struct.unpack_from("<I", data, _HEADER.size)
    if zlib.crc32(data[: _HEADER.size]) != header_crc:
        raise StreamError("header_crc", "header CRC32 mismatch (damaged header)")
    if flags not in _KINDS or encoding not in _ENCODING_NAMES or dtype not in DTYPES:
        raise StreamError("limits", f"unknown flags {flags}, encoding {encoding} or dtype {dtype}")
    if not 1 <= ndim <= 4 or min(dims[:ndim]) < 1 or any(dims[ndim:]):
        raise StreamError("limits", f"bad shape: ndim {ndim}, dims {dims}")
    shape = tuple(dims[:ndim])
    n = math.prod(shape)
    if n > max_frame_bytes:
        raise StreamError("limits", f"frame of {n} bytes exceeds the limit of {max_frame_bytes}")
    if length > max_payload:
        raise StreamError("limits", f"payload of {length} bytes exceeds the limit of {max_payload}")
    if count > n:
        raise StreamError("limits", f"count {count} exceeds the frame's {n} bytes")
    return PacketHeader(flags, encoding, index, shape, count, length, payload_crc, version)


def _inflate(payload: bytes, limit: int) -> bytes:
    """zlib-decompress at most ``limit`` bytes; more, or a broken stream, is a StreamError."""
    d = zlib.decompressobj()
    try:
        out = d.decompress(payload, limit)
    except zlib.error as exc:
        raise StreamError("payload", f"zlib payload does not decompress ({exc})") from None
    if d.unconsumed_tail or not d.eof:
        raise StreamError("payload", f"zlib payload is longer than {limit} bytes or incomplete")
    return out


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
    >>> dec = StreamDecoder(max_frame_bytes=100)
    >>> dec.decode(encode_keyframe(np.zeros((20, 20), np.uint8), 0))
    Traceback (most recent call last):
    ...
    portcv.stream.StreamError: frame of 400 bytes exceeds the limit of 100
    """

    def __init__(self, *, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES, max_payload: int | None = None) -> None:
        self.max_frame_bytes = int(max_frame_bytes)
        self.max_payload = 5 * self.max_frame_bytes + 64 if max_payload is None else int(max_payload)
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
        self.reference = _delta_decode_numpy(self.reference, diffs, positions, count)  # a new array
        self.reference.flags.writeable = False
        self.index = header.index
        return header.index, self.reference


# ---- encoder --------------------------------------------------------------------------------

class StreamEncoder:
    """Frames in, packets out: a :class:`portcv.codec.DeltaEncoder` plus keyframe policy.

    A keyframe goes out for the first frame, every ``keyframe_interval`` frames, after
    :meth:`request_keyframe`, when the shape changes, and whenever the delta's payload would be
    at least as large as a keyframe's (a scene cut). A keyframe resets the reference to the
    frame itself, which also clears the error feedback's residue.

    Examples
    --------
    >>> import numpy as np
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
        if isinstance(keyframe_interval, bool) or not isinstance(keyframe_interval, int) or keyframe_interval < 1:
            raise ValueError(f"keyframe_interval must be a positive integer, got {keyframe_interval!r}")
        self.keyframe_interval = keyframe_interval
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
            self.index += 1
            ref = self.delta.reference
            shape = tuple(frame.shape)
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


def synthetic_source(height: int = 480, width: int = 640, *, frames: int | None = None, seed: int = 0,
                     noise: float = 4.0, variants: int = 8) -> Iterator[np.ndarray]:
    """Generated RGB video for streaming: a static scene with sensor noise and a moving square.

    ``variants`` noisy copies of :func:`portcv.data.synthetic_rgb`'s scene (Gaussian noise of
    standard deviation ``noise``) are made once and cycled, so frames come fast even at 1080p;
    a square of a third of the height moves across it. ``frames=None`` never ends.

    Examples
    --------
    >>> frames = list(synthetic_source(24, 32, frames=3))
    >>> len(frames), frames[0].shape, frames[0].dtype
    (3, (24, 32, 3), dtype('uint8'))
    """
    from .data import synthetic_rgb

    rng = np.random.default_rng(seed)
    scene = synthetic_rgb(height, width, seed=seed).astype(np.float32)
    bank = [np.clip(np.rint(scene + np.float32(noise) * rng.standard_normal(scene.shape, np.float32)), 0, 255)
            .astype(np.uint8) for _ in range(max(1, variants))]
    side = max(1, height // 3)
    colour = np.array([230, 60, 40], np.uint8)
    t = 0
    while frames is None or t < frames:
        frame = bank[t % len(bank)].copy()
        x = (t * max(1, width // 60)) % max(1, width - side + 1)
        y = (height - side) // 2
        frame[y : y + side, x : x + side] = colour
        yield frame
        t += 1


# ---- transport ------------------------------------------------------------------------------

@dataclasses.dataclass
class StreamStats:
    """Counters of a server or client; ``rate()`` gives frames/s, bytes/s and the saving."""

    frames: int = 0
    keyframes: int = 0
    deltas: int = 0
    payload_bytes: int = 0
    wire_bytes: int = 0
    raw_bytes: int = 0
    started: float = dataclasses.field(default_factory=time.perf_counter)
    stopped: float | None = None

    def stop(self) -> None:
        """Freeze the clock (rates then cover the time until now only)."""
        if self.stopped is None:
            self.stopped = time.perf_counter()

    def add(self, packet_len: int, frame_bytes: int, kind: str) -> None:
        self.frames += 1
        self.wire_bytes += packet_len
        self.payload_bytes += packet_len - HEADER_SIZE
        self.raw_bytes += frame_bytes
        if kind == "keyframe":
            self.keyframes += 1
        else:
            self.deltas += 1

    def rate(self) -> dict[str, float]:
        elapsed = max((self.stopped or time.perf_counter()) - self.started, 1e-9)
        return {
            "fps": self.frames / elapsed,
            "bytes_per_s": self.wire_bytes / elapsed,
            "saved": 1.0 - self.wire_bytes / self.raw_bytes if self.raw_bytes else 0.0,
            "bytes_per_frame": self.wire_bytes / self.frames if self.frames else 0.0,
        }

    def line(self, who: str) -> str:
        r = self.rate()
        return (f"{who}: {self.frames} frames ({self.keyframes} keyframes), {r['fps']:.1f} fps, "
                f"{r['bytes_per_s'] * 8 / 1e6:.2f} Mbit/s ({r['bytes_per_frame'] / 1e3:.1f} kB/frame), "
                f"{100 * r['saved']:.1f}% saved vs raw RGB")


_END_OF_SOURCE = object()


class _Client:
    """The server's view of one connection: a bounded queue of packets and its sender task."""

    def __init__(self, cid: int, writer: asyncio.StreamWriter, maxsize: int) -> None:
        self.id = cid
        self.writer = writer
        self.queue: asyncio.Queue[bytes] = asyncio.Queue(maxsize)
        self.needs_keyframe = True
        self.lag_keyframes = 0
        self.requested_keyframes = 0
        self.sent_packets = 0
        self.closed = False

    def replace_queue_with(self, packet: bytes) -> None:
        while not self.queue.empty():
            self.queue.get_nowait()
        self.queue.put_nowait(packet)


class StreamServer:
    """Serve a frame source to any number of TCP clients (asyncio, 127.0.0.1 by default).

    Stages, joined by bounded queues (the report's capture / elaborate / send threads):
    *capture* pulls frames from ``source`` in a worker thread (``capture_queue`` frames at most
    wait), *encode* runs a :class:`StreamEncoder` in another worker thread, and one *send*
    task per client writes its queue (``client_queue`` packets at most) to the socket.

    Every new connection is first sent a keyframe of the current reference. When a client's
    queue is full (it reads slower than the stream), its queued packets are dropped and
    replaced by one keyframe: memory stays bounded and the client resumes exactly. A client's
    keyframe request (a :data:`CONTROL_KEYFRAME` control message) is honoured at the next frame.
    Capture starts when the first client connects (``wait_for_client``); when the source ends,
    every client gets an end-of-stream packet.

    Parameters
    ----------
    source : iterable of uint8 arrays
        Frames, all of one shape (a change of shape sends a keyframe).
    host, port : str, int
        Where to listen; port 0 picks a free one (see :attr:`port` after :meth:`start`).
    backend, threshold, encoding, keyframe_interval, prefilter
        Passed to :class:`StreamEncoder`.
    fps : float
        Pace the capture at this rate (0: as fast as the pipeline goes).
    capture_queue, client_queue : int
        Bounds of the frame queue between capture and encode, and of each client's packet queue.
    send_buffer : int, optional
        Kernel send buffer and asyncio write-buffer limit per client, in bytes (default: the
        system's and 64 KiB): how much a client may lag before its queue fills.
    on_encoded : callable, optional
        ``on_encoded(index, reference)`` after each frame, ``reference`` the NumPy picture
        every client will show for that index (tests compare clients against it).
    """

    def __init__(self, source: Iterable[Any], *, host: str = "127.0.0.1", port: int = 0, backend: str | None = None,
                 threshold: int = _codec.DEFAULT_THRESHOLD, encoding: str = "compact", keyframe_interval: int = 300,
                 prefilter: Callable[[Any], Any] | None = None, fps: float = 0.0, capture_queue: int = 4,
                 client_queue: int = 8, wait_for_client: bool = True, send_buffer: int | None = None,
                 on_encoded: Callable[[int, np.ndarray], None] | None = None,
                 log: Callable[[str], None] | None = None, stats_every: float = 2.0) -> None:
        self.source = source
        self.host, self.port = host, port
        self.encoder = StreamEncoder(threshold=threshold, encoding=encoding, keyframe_interval=keyframe_interval,
                                     backend=backend, prefilter=prefilter)
        self.fps = float(fps)
        self.capture_queue_size = capture_queue
        self.client_queue_size = client_queue
        self.wait_for_client = wait_for_client
        self.send_buffer = send_buffer
        self.on_encoded = on_encoded
        self.log = log or (lambda msg: None)
        self.stats_every = stats_every
        self.stats = StreamStats()
        self.clients: dict[int, _Client] = {}
        self.max_client_queue = 0
        self.max_capture_queue = 0
        self.dropped_to_keyframe = 0
        self.connections = 0
        self._next_id = 0
        self._server: asyncio.base_events.Server | None = None
        self._first_client = asyncio.Event()
        self._pool = concurrent.futures.ThreadPoolExecutor(2, thread_name_prefix="portcv-stream")

    async def start(self) -> int:
        """Listen; return the port."""
        self._server = await asyncio.start_server(self._accept, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        return self.port

    async def run(self) -> StreamStats:
        """Serve until the source ends and every client got the end packet (or left)."""
        if self._server is None:
            await self.start()
        frames: asyncio.Queue[Any] = asyncio.Queue(self.capture_queue_size)
        try:
            if self.wait_for_client:
                await self._first_client.wait()
            self.stats = StreamStats()
            capture = asyncio.create_task(self._capture(frames))
            try:
                await self._encode_loop(frames)
            finally:
                self.stats.stop()
                capture.cancel()
                await asyncio.gather(capture, return_exceptions=True)
            end = encode_end(max(self.encoder.index + 1, 0))
            for c in list(self.clients.values()):
                if c.closed:
                    continue
                if c.queue.full():
                    c.replace_queue_with(end)
                else:
                    c.queue.put_nowait(end)
            deadline = time.perf_counter() + 5.0
            while any(not c.closed and not c.queue.empty() for c in self.clients.values()):
                if time.perf_counter() > deadline:
                    break
                await asyncio.sleep(0.01)
        finally:
            await self.close()
        self.log(self.stats.line("serve"))
        return self.stats

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            for c in list(self.clients.values()):
                self._drop(c)
            try:
                await asyncio.wait_for(self._server.wait_closed(), 2.0)
            except (asyncio.TimeoutError, Exception):  # noqa: BLE001 - closing anyway
                pass
            self._server = None
        self._pool.shutdown(wait=False, cancel_futures=True)

    # -- stages -------------------------------------------------------------------------------
    async def _capture(self, frames: asyncio.Queue) -> None:
        loop = asyncio.get_running_loop()
        it = iter(self.source)
        done = _END_OF_SOURCE
        period = 1.0 / self.fps if self.fps > 0 else 0.0
        next_time = time.perf_counter()
        while True:
            frame = await loop.run_in_executor(self._pool, next, it, done)
            if period:
                next_time += period
                delay = next_time - time.perf_counter()
                if delay > 0:
                    await asyncio.sleep(delay)
            await frames.put(frame)
            self.max_capture_queue = max(self.max_capture_queue, frames.qsize())
            if frame is done:
                return

    async def _encode_loop(self, frames: asyncio.Queue) -> None:
        loop = asyncio.get_running_loop()
        last_log = time.perf_counter()
        while True:
            frame = await frames.get()
            if frame is _END_OF_SOURCE:
                return
            if self.stats.frames == 0:
                self.stats = StreamStats()  # rates count from the first frame
            packet, reference = await loop.run_in_executor(self._pool, self._encode, frame)
            index = self.encoder.index
            self.stats.add(len(packet), int(math.prod(frame.shape)), self.encoder.last_kind)
            if self.on_encoded is not None:
                self.on_encoded(index, reference)
            for c in list(self.clients.values()):
                self._offer(c, packet)
            now = time.perf_counter()
            if self.stats_every and now - last_log >= self.stats_every:
                last_log = now
                self.log(self.stats.line("serve") + f", {len(self.clients)} client(s)")

    def _encode(self, frame: Any) -> tuple[bytes, np.ndarray | None]:
        packet = self.encoder.encode(frame)
        reference = self.encoder.delta.reference_host() if self.on_encoded is not None else None
        return packet, reference

    def _offer(self, c: _Client, packet: bytes) -> None:
        if c.closed:
            return
        if self.encoder.last_kind == "keyframe":
            c.needs_keyframe = False
            if c.queue.full():
                c.replace_queue_with(packet)
            else:
                c.queue.put_nowait(packet)
        elif c.needs_keyframe:
            c.needs_keyframe = False
            c.replace_queue_with(self.encoder.keyframe_packet())
        elif c.queue.full():
            c.lag_keyframes += 1
            self.dropped_to_keyframe += 1
            c.replace_queue_with(self.encoder.keyframe_packet())
        else:
            c.queue.put_nowait(packet)
        self.max_client_queue = max(self.max_client_queue, c.queue.qsize())

    # -- connections --------------------------------------------------------------------------
    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self.send_buffer:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, self.send_buffer)
        if self.send_buffer:  # asyncio's own buffer too (64 KiB by default) before drain() waits
            writer.transport.set_write_buffer_limits(high=self.send_buffer)
        cid = self._next_id
        self._next_id += 1
        self.connections += 1
        c = _Client(cid, writer, self.client_queue_size)
        self.clients[cid] = c
        self.log(f"serve: client {cid} connected from {writer.get_extra_info('peername')}")
        self._first_client.set()
        sender = asyncio.create_task(self._send(c))
        try:
            while True:
                try:
                    data = await reader.readexactly(_CONTROL.size)
                except (asyncio.IncompleteReadError, ConnectionError):
                    break
                magic, kind = _CONTROL.unpack(data)
                if magic != CONTROL_MAGIC:
                    self.log(f"serve: client {cid} sent a bad control message; closing it")
                    break
                if kind == CONTROL_KEYFRAME:
                    c.requested_keyframes += 1
                    c.needs_keyframe = True
        finally:
            self._drop(c)
            sender.cancel()
            await asyncio.gather(sender, return_exceptions=True)
            self.clients.pop(cid, None)
            self.log(f"serve: client {cid} left ({c.sent_packets} packets sent, {c.lag_keyframes} lag keyframes)")

    async def _send(self, c: _Client) -> None:
        try:
            while True:
                packet = await c.queue.get()
                c.writer.write(packet)
                await c.writer.drain()
                c.sent_packets += 1
                if packet[5:6] == bytes([FLAG_END]) and packet[:4] == MAGIC:
                    c.writer.close()
                    c.closed = True
                    return
        except (ConnectionError, OSError):
            self._drop(c)

    def _drop(self, c: _Client) -> None:
        if not c.closed:
            c.closed = True
            c.writer.close()
        while not c.queue.empty():
            c.queue.get_nowait()


class StreamClient:
    """Receive a stream, check every packet, reconstruct the frames.

    Damaged payloads (CRC mismatch, impossible contents) make the client ask for a keyframe
    (at most one request per ``keyframe_retry`` seconds while it waits); a damaged header means
    the byte stream cannot be trusted, so the client reconnects (and gets a keyframe). Lost
    connections are retried until no packet has arrived for ``reconnect_timeout`` seconds.

    Parameters
    ----------
    host, port : str, int
        The server.
    on_frame : callable, optional
        ``on_frame(index, frame)`` for every frame reconstructed (a read-only NumPy array that
        the client never changes afterwards; it may be a coroutine function).
    frames : int, optional
        Stop after this many frames.
    max_frame_bytes : int
        The decoder's limit (see :class:`StreamDecoder`).
    recv_buffer : int, optional
        Socket receive buffer and reader buffer size in bytes (default: the system's); small
        values make a slow client felt by the server sooner.
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, on_frame: Callable[[int, np.ndarray], Any] | None = None,
                 frames: int | None = None, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
                 reconnect_timeout: float = 5.0, keyframe_retry: float = 0.5, recv_buffer: int | None = None,
                 log: Callable[[str], None] | None = None, stats_every: float = 2.0) -> None:
        self.host, self.port = host, port
        self.recv_buffer = recv_buffer
        self.on_frame = on_frame
        self.frames = frames
        self.decoder = StreamDecoder(max_frame_bytes=max_frame_bytes)
        self.reconnect_timeout = reconnect_timeout
        self.keyframe_retry = keyframe_retry
        self.log = log or (lambda msg: None)
        self.stats_every = stats_every
        self.stats = StreamStats()
        self.errors: dict[str, int] = {}
        self.keyframe_requests = 0
        self.connections = 0
        self.skipped = 0
        self._writer: asyncio.StreamWriter | None = None
        self._stop = False
        self._last_request = -math.inf
        self._awaiting_keyframe = False

    def stop(self) -> None:
        self._stop = True
        if self._writer is not None:
            self._writer.close()

    def disconnect(self) -> None:
        """Drop the current connection (the client reconnects): for tests and demos."""
        if self._writer is not None:
            self._writer.close()

    async def run(self) -> StreamStats:
        """Receive until the end packet, ``frames`` frames, :meth:`stop` or a lost server."""
        self.stats = StreamStats()
        last_log = time.perf_counter()
        # Give up when no packet arrived for reconnect_timeout seconds, whether connecting fails
        # or connections succeed but deliver nothing (a dead server behind a live proxy).
        progress = time.perf_counter()
        first = True
        while not self._stop and not self.decoder.ended:
            if not first:
                if time.perf_counter() - progress > self.reconnect_timeout:
                    self.log(f"view: nothing from {self.host}:{self.port} for {self.reconnect_timeout} s; giving up")
                    break
                await asyncio.sleep(0.05)
            first = False
            try:
                reader, writer = await self._connect()
            except OSError:
                continue
            self.connections += 1
            self._writer = writer
            self.decoder.needs_keyframe = True  # a new connection starts with a keyframe
            try:
                while not self._stop:
                    try:
                        head = await reader.readexactly(HEADER_SIZE)
                        header = self.decoder.parse_header(head)
                        payload = await reader.readexactly(header.payload_length)
                        progress = time.perf_counter()
                    except StreamError as exc:
                        self._count(exc)
                        self.log(f"view: {exc}; reconnecting")
                        break
                    except (asyncio.IncompleteReadError, ConnectionError, OSError):
                        break
                    try:
                        out = self.decoder.apply(header, payload)
                    except StreamError as exc:
                        self._count(exc)
                        if exc.reason == "no_keyframe":
                            self.skipped += 1
                        await self._ask_keyframe(writer)
                        continue
                    if out is None:  # end of stream
                        break
                    if header.kind == "keyframe":
                        self._awaiting_keyframe = False
                    index, frame = out
                    if self.stats.frames == 0:
                        self.stats = StreamStats()  # rates count from the first frame
                    self.stats.add(HEADER_SIZE + len(payload), frame.size, header.kind)
                    if self.on_frame is not None:
                        result = self.on_frame(index, frame)
                        if asyncio.iscoroutine(result):
                            await result
                    if self.frames is not None and self.stats.frames >= self.frames:
                        self._stop = True
                    now = time.perf_counter()
                    if self.stats_every and now - last_log >= self.stats_every:
                        last_log = now
                        self.log(self.stats.line("view"))
            finally:
                writer.close()
                self._writer = None
        self.log(self.stats.line("view") + (f"; {sum(self.errors.values())} bad packets {self.errors}" if self.errors else ""))
        return self.stats

    async def _connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        if not self.recv_buffer:
            return await asyncio.open_connection(self.host, self.port)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self.recv_buffer)
            sock.setblocking(False)
            await asyncio.get_running_loop().sock_connect(sock, (self.host, self.port))
        except OSError:
            sock.close()
            raise
        return await asyncio.open_connection(sock=sock, limit=self.recv_buffer)

    def _count(self, exc: StreamError) -> None:
        self.errors[exc.reason] = self.errors.get(exc.reason, 0) + 1

    async def _ask_keyframe(self, writer: asyncio.StreamWriter) -> None:
        # Ask at once; while waiting (deltas in flight keep failing), ask again only after
        # keyframe_retry seconds, in case the request or its answer was lost.
        now = time.perf_counter()
        if self._awaiting_keyframe and now - self._last_request < self.keyframe_retry:
            return
        self._awaiting_keyframe = True
        self._last_request = now
        self.keyframe_requests += 1
        try:
            writer.write(_CONTROL.pack(CONTROL_MAGIC, CONTROL_KEYFRAME))
            await writer.drain()
        except (ConnectionError, OSError):
            pass


# ---- command line ---------------------------------------------------------------------------

def _prefilter(spec: str | None, backend: str) -> Callable[[Any], Any] | None:
    """'gaussian:K' (cv2.GaussianBlur with OpenCV's sigma for K) or 'mean:K' (the report's mean)."""
    if not spec:
        return None
    from . import filters

    name, _, size = spec.partition(":")
    try:
        k = int(size)
    except ValueError:
        raise ValueError(f"--prefilter must look like gaussian:5 or mean:3, got {spec!r}") from None
    if name == "gaussian":
        sigma = 0.3 * ((k - 1) * 0.5 - 1) + 0.8  # OpenCV's sigma for a given ksize
        filters.gaussian_blur(np.zeros((k, k, 3), np.uint8), ksize=k, sigma=sigma)  # checks k now
        return lambda frame: filters.gaussian_blur(frame, ksize=k, sigma=sigma)
    if name == "mean":
        filters.mean_filter(np.zeros((k, k, 3), np.uint8), k)
        return lambda frame: filters.mean_filter(frame, k)
    raise ValueError(f"--prefilter must be gaussian:K or mean:K, got {spec!r}")


def _source(spec: str, size: tuple[int, int], frames: int | None, seed: int) -> tuple[Iterable[np.ndarray], float]:
    if spec == "synthetic":
        w, h = size
        return synthetic_source(h, w, frames=frames, seed=seed), 30.0
    from . import video

    return video.iter_frames(spec, frames=frames), video.video_fps(spec)


def _serve_command(args: Any) -> int:
    source, _ = _source(args.source, args.size, args.frames or None, args.seed)
    log = (lambda msg: print(msg, flush=True)) if not args.quiet else None
    server = StreamServer(
        source, host=args.host, port=args.port, backend=args.backend, threshold=args.threshold,
        encoding=args.encoding, keyframe_interval=args.keyframe_interval,
        prefilter=_prefilter(args.prefilter, args.backend), fps=args.fps, log=log,
    )

    async def main() -> None:
        port = await server.start()
        print(f"serve: listening on {args.host}:{port} (backend {server.encoder.backend_name}, threshold "
              f"{args.threshold}, {args.encoding}); waiting for a client", flush=True)
        await server.run()

    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        print(server.stats.line("serve"))
    else:
        if args.quiet:
            print(server.stats.line("serve"))
    return 0


def _view_command(args: Any) -> int:
    writer = None
    if args.out:
        from . import video

        writer = video.VideoWriter(args.out, fps=args.fps)

    def on_frame(index: int, frame: np.ndarray) -> None:
        if writer is not None:
            writer.write(frame if frame.ndim == 2 or frame.shape[-1] == 3 else frame[..., :3])

    log = (lambda msg: print(msg, flush=True)) if not args.quiet else None
    client = StreamClient(args.host, args.port, on_frame=on_frame, frames=args.frames or None,
                          reconnect_timeout=args.timeout, log=log)
    try:
        stats = asyncio.run(client.run())
    except KeyboardInterrupt:
        stats = client.stats
    finally:
        if writer is not None:
            writer.close()
    if args.quiet:
        print(stats.line("view"))
    if writer is not None:
        print(f"view: wrote {writer.count} frames to {args.out}")
    raw = stats.raw_bytes
    if raw:
        print(f"view: {stats.wire_bytes} bytes received for {raw} raw bytes ({100 * (1 - stats.wire_bytes / raw):.1f}% "
              f"saved); raw RGB 1080p at 30 fps would need {RAW_1080P30_MBITS} Mbit/s")
    return 0 if stats.frames else 1


def _add_stream_command(sub: Any) -> None:
    """Register ``portcv stream serve`` and ``portcv stream view`` on the CLI's subparsers."""
    from .cli import _parse_size

    p = sub.add_parser("stream", help="frame-delta video streaming over TCP (the webcam report's client and server)")
    ss = p.add_subparsers(dest="stream_command", required=True)
    s = ss.add_parser("serve", help="encode a video (or a generated one) and serve it to TCP clients")
    s.add_argument("--source", default="synthetic", help="a video file, or 'synthetic' (default)")
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--port", type=int, default=8765)
    s.add_argument("--backend", default="numpy", help="backend of the encoder (numpy, jax, cupy)")
    s.add_argument("--threshold", type=int, default=_codec.DEFAULT_THRESHOLD, help="send bytes changed by more (default 20)")
    s.add_argument("--prefilter", default=None, help="denoise before encoding: gaussian:K or mean:K")
    s.add_argument("--encoding", default="compact", choices=tuple(ENCODINGS), help="payload encoding (default compact)")
    s.add_argument("--keyframe-interval", type=int, default=300, help="a keyframe every N frames (default 300)")
    s.add_argument("--fps", type=float, default=0.0, help="pace the source at this rate (default 0: as fast as possible)")
    s.add_argument("--frames", type=int, default=0, help="stop after N frames (default 0: the whole source; synthetic never ends)")
    s.add_argument("--size", type=_parse_size, default=(640, 480), help="synthetic frame size WIDTHxHEIGHT (default 640x480)")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--quiet", action="store_true", help="no progress lines")
    s.set_defaults(func=_serve_command)
    v = ss.add_parser("view", help="receive a stream, check it, reconstruct the frames (and write a video)")
    v.add_argument("--host", default="127.0.0.1")
    v.add_argument("--port", type=int, default=8765)
    v.add_argument("--out", default=None, help="write the received frames to this video file (.mp4, .mkv, ...)")
    v.add_argument("--frames", type=int, default=0, help="stop after N frames (default 0: until the stream ends)")
    v.add_argument("--fps", type=float, default=30.0, help="frame rate of --out (default 30)")
    v.add_argument("--timeout", type=float, default=5.0, help="give up after this many seconds without a connection")
    v.add_argument("--quiet", action="store_true", help="no progress lines")
    v.set_defaults(func=_view_command)

