"""Frame-delta video streaming over TCP: the Webcam Streaming & Filters report's client and server (section 2).

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

from ._codec import StreamDecoder, StreamEncoder
from ._packets import (
    ENCODINGS,
    HEADER_SIZE,
    MAGIC,
    RAW_1080P30_MBITS,
    VERSION,
    PacketHeader,
    StreamError,
    encode_delta,
    encode_end,
    encode_keyframe,
    parse_header,
)
from ._server import StreamClient, StreamServer, synthetic_source

__all__ = [
    "StreamError",
    "PacketHeader",
    "MAGIC",
    "VERSION",
    "HEADER_SIZE",
    "ENCODINGS",
    "encode_keyframe",
    "encode_delta",
    "encode_end",
    "parse_header",
    "StreamDecoder",
    "StreamEncoder",
    "StreamServer",
    "StreamClient",
    "synthetic_source",
    "RAW_1080P30_MBITS",
]
