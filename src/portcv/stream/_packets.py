"""The stream's wire format: the 52-byte versioned header, keyframe, delta and end packets, and
their parser (``parse_header``).
"""

from __future__ import annotations

import dataclasses
import math
import struct
import zlib
from typing import Any

import numpy as np

from .. import _validate
from ..backends import owner_of, to_numpy

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


def _pack(flags: int, encoding: int, index: int, shape: tuple[int, ...], count: int, payload: bytes) -> bytes:
    dims = tuple(shape) + (0,) * (4 - len(shape))
    head = _HEADER.pack(MAGIC, VERSION, flags, encoding, 0, index, len(shape), *dims, count, len(payload),
                        zlib.crc32(payload))
    return head + struct.pack("<I", zlib.crc32(head)) + payload


def _check_shape(shape: Any, name: str = "shape") -> tuple[int, ...]:
    if not isinstance(shape, (tuple, list)):
        raise TypeError(f"{name} must be a tuple of 1 to 4 ints (a frame's shape), got {type(shape).__name__}")
    if not 1 <= len(shape) <= 4:
        raise ValueError(f"{name} must have 1 to 4 positive dimensions below 2**32 (a frame's shape), got {tuple(shape)}")
    return tuple(_validate.integer(s, name, low=1, high=2**32 - 1) for s in shape)


def check_limit(value: Any, name: str) -> int:
    """A byte limit of the decoder: a positive integer (``max_frame_bytes``, ``max_payload``)."""
    return _validate.integer(value, name, low=1)


def _entries(value: Any, name: str, count: int) -> np.ndarray:
    """The first ``count`` entries of a 1-D integer array of any backend, on the host."""
    if owner_of(value) is None:
        raise TypeError(f"{name} must be a 1-D integer array (NumPy, CuPy or JAX), got {type(value).__name__}")
    if len(value.shape) != 1 or not np.issubdtype(np.dtype(value.dtype), np.integer):
        raise TypeError(f"{name} must be a 1-D integer array, got shape {tuple(value.shape)} dtype {value.dtype}")
    if value.shape[0] < count:
        raise ValueError(f"count is {count} but {name} holds {value.shape[0]} entries")
    return np.asarray(to_numpy(value[:count]))


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
    >>> from portcv.stream import HEADER_SIZE, StreamDecoder, encode_delta, encode_keyframe, parse_header
    >>> packet = encode_keyframe(np.zeros((2, 3), np.uint8), 7)
    >>> len(packet) - HEADER_SIZE, StreamDecoder().decode(packet)[0]
    (6, 7)
    """
    if owner_of(frame) is None:
        frame = _validate.image(frame, "frame", min_ndim=1)  # lists: named errors (ragged, dtype)
    if np.dtype(frame.dtype) != np.uint8:
        raise TypeError(f"frame must have dtype uint8, got {frame.dtype}")
    shape = _check_shape(tuple(frame.shape), "frame shape")
    if math.prod(shape) > _validate.MAX_ELEMENTS:  # before the host copy below
        raise ValueError(f"frame has {math.prod(shape)} bytes; at most {_validate.MAX_ELEMENTS} are supported")
    frame = np.ascontiguousarray(to_numpy(frame))
    code = _check_encoding(encoding)
    data = frame.tobytes()
    payload = zlib.compress(data, 1) if code == ENCODINGS["compact+zlib"] else data
    return _pack(FLAG_KEYFRAME, code, _check_index(index), shape, 0, payload)


def encode_end(index: int) -> bytes:
    """The end-of-stream packet (no payload): after it, a decoder refuses further packets.

    Examples
    --------
    >>> from portcv.stream import HEADER_SIZE, encode_end, parse_header
    >>> packet = encode_end(41)
    >>> len(packet) == HEADER_SIZE, parse_header(packet).index
    (True, 41)
    """
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
    >>> from portcv.stream import HEADER_SIZE, StreamDecoder, encode_delta, encode_keyframe, parse_header
    >>> dec = StreamDecoder()
    >>> _ = dec.decode(encode_keyframe(np.zeros((2, 3), np.uint8), 0))
    >>> packet = encode_delta((2, 3), 1, 2, np.array([50, -56], np.int8), np.array([1, 5], np.int32))
    >>> dec.decode(packet)
    (1, array([[  0,  50,   0],
           [  0,   0, 200]], dtype=uint8))
    """
    shape = _check_shape(shape)
    code = _check_encoding(encoding)
    if math.prod(shape) > 2**32:  # positions travel as 32-bit integers
        raise ValueError(f"shape {shape} has more than 2**32 bytes; a delta packet addresses at most 2**32")
    count = _validate.integer(count, "count", low=0, high=math.prod(shape))
    d = _entries(diffs, "diffs", count)
    if d.dtype not in (np.int8, np.uint8):  # the coder's bytes; wider values would be cut to 8 bits
        raise TypeError(f"diffs must be int8 (the delta coder's bytes; uint8 also), got dtype {d.dtype}")
    d = np.ascontiguousarray(d.view(np.int8))
    p = _entries(positions, "positions", count).astype(np.int64)
    if count and (p.min() < 0 or p.max() >= math.prod(shape) or (np.diff(p) <= 0).any()):
        raise ValueError(f"positions[:count] must ascend strictly in [0, {math.prod(shape)}) (the frame's bytes)")
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
    >>> from portcv.stream import HEADER_SIZE, StreamDecoder, encode_delta, encode_keyframe, parse_header
    >>> parse_header(encode_keyframe(np.zeros((4, 5, 3), np.uint8), 9)).shape
    (4, 5, 3)
    >>> from portcv.stream import StreamError
    >>> try:
    ...     parse_header(b"GIF89a" + bytes(60))
    ... except StreamError as exc:
    ...     print(exc)
    bad magic b'GIF8' (not a portcv stream)
    """
    max_frame_bytes = check_limit(max_frame_bytes, "max_frame_bytes")
    max_payload = 5 * max_frame_bytes + 64 if max_payload is None else check_limit(max_payload, "max_payload")
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"data must be bytes, got {type(data).__name__}")
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
