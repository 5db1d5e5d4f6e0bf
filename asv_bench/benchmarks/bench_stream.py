"""portcv.stream: the webcam report's streaming pipeline (section 2), from packets to a loopback session.

Inputs are frames of :func:`portcv.stream.synthetic_source` (a static scene with sensor noise of
sigma 4 and a moving square), the source ``portcv stream serve --source synthetic`` uses. The
frames are generated once in ``setup`` and replayed forwards then backwards (0, 1, ..., 7, 6,
..., 1, 0, ...), so every frame follows a true neighbour and every delta is a typical one.

- :class:`Encode`: ``StreamEncoder.encode`` of one host frame (upload, delta, count entries back,
  packet bytes) per backend x size x payload encoding: the server's encode stage.
  ``track_bytes_per_frame`` is the mean packet size over the replayed frames.
- :class:`Decode`: ``StreamDecoder.decode`` of one delta packet (host only): the client's work.
- :class:`Packets`: the wire format alone (``encode_keyframe``, ``encode_delta``,
  ``encode_end``, ``parse_header``) per payload encoding x size, on the host.
- :class:`ServeView`: a real :class:`~portcv.stream.StreamServer` and
  :class:`~portcv.stream.StreamClient` on 127.0.0.1 (a free port) streaming :data:`SESSION_FRAMES`
  frames, unpaced, under a timeout of :data:`SESSION_TIMEOUT` seconds. ``time_serve_view`` is
  the whole session (start, stream, end packet, close); ``track_frames_per_second`` is the
  client's rate from its first frame to its last (the figure ``portcv stream view`` prints).
  Targets (docs/stream.md): 1080p at 60 fps or more on NumPy, above 200 fps with CuPy.

The exception class has no benchmark.
"""

from __future__ import annotations

import asyncio
import functools

import numpy as np

from portcv import codec, stream

from ._common import BACKENDS, SIZES, Benchmark, require

#: The streaming benchmarks stop at 1080p (4K frames make the synthetic source slow to build).
STREAM_SIZES = ["640x480", "1920x1080"]
ENCODINGS = list(stream.ENCODINGS)
THRESHOLD = 20
#: Distinct frames generated per size; the replay order visits them forwards then backwards.
BANK = 8
#: Frames per loopback session, and the bound on one session's wall time (seconds).
SESSION_FRAMES = 60
SESSION_TIMEOUT = 60.0


@functools.lru_cache(maxsize=2)
def frame_bank(size: str) -> tuple[np.ndarray, ...]:
    h, w = SIZES[size]
    return tuple(stream.synthetic_source(h, w, frames=BANK, seed=0))


def replay_order(n: int) -> list[int]:
    """Indices into the bank, forwards then backwards: every frame follows a neighbour."""
    cycle = list(range(BANK)) + list(range(BANK - 2, 0, -1))
    return [cycle[t % len(cycle)] for t in range(n)]


class Encode(Benchmark):
    """``StreamEncoder.encode(frame)``: one host frame to one delta packet, per backend x size x encoding.

    ``keyframe_interval`` is out of reach, so after the first frame every packet is a delta
    (the scene's deltas are far below the keyframe cut-off).
    """

    params = [BACKENDS, STREAM_SIZES, ENCODINGS]
    param_names = ["backend", "size", "encoding"]

    def setup(self, backend, size, encoding):
        b = require(backend)
        bank = frame_bank(size)
        self.frames = [bank[k] for k in replay_order(2 * (BANK - 1))]
        self.encoder = stream.StreamEncoder(threshold=THRESHOLD, encoding=encoding, keyframe_interval=2**62,
                                            backend=b.name)
        self.sizes = [len(self.encoder.encode(f)) for f in self.frames]  # keyframe, then compile / warm up
        self.t = len(self.frames) - 1

    def time_encode(self, backend, size, encoding):
        self.t = (self.t + 1) % len(self.frames)  # the order wraps from frame 1 to frame 0: a neighbour
        self.encoder.encode(self.frames[self.t])

    def track_bytes_per_frame(self, backend, size, encoding):
        deltas = self.sizes[1:]
        return round(sum(deltas) / len(deltas), 1)

    track_bytes_per_frame.unit = "bytes"


class Decode(Benchmark):
    """``StreamDecoder.decode(packet)`` of the stream's delta packets (host: the client side).

    The packets come from a NumPy ``StreamEncoder`` over the replayed frames. When the list
    wraps, the decoder's index is set back so the next delta is accepted: the delta then applies
    to a picture other than its own, which costs the same work.
    """

    params = [ENCODINGS, STREAM_SIZES]
    param_names = ["encoding", "size"]

    def setup(self, encoding, size):
        bank = frame_bank(size)
        encoder = stream.StreamEncoder(threshold=THRESHOLD, encoding=encoding, keyframe_interval=2**62,
                                       backend="numpy")
        packets = [encoder.encode(bank[k]) for k in replay_order(2 * (BANK - 1))]
        self.decoder = stream.StreamDecoder()
        self.decoder.decode(packets[0])
        self.deltas = packets[1:]
        for p in self.deltas:
            self.decoder.decode(p)
        self.t = len(self.deltas)

    def time_decode(self, encoding, size):
        if self.t == len(self.deltas):
            self.t = 0
            self.decoder.index = 0
        self.decoder.decode(self.deltas[self.t])
        self.t += 1


class Packets(Benchmark):
    """The wire format on the host: build a keyframe, a delta and an end packet; parse a delta's
    header (``parse_header`` checks the 52 bytes and returns a ``PacketHeader``)."""

    params = [ENCODINGS, STREAM_SIZES]
    param_names = ["encoding", "size"]

    def setup(self, encoding, size):
        bank = frame_bank(size)
        self.keyframe = bank[0]
        count, diffs, positions, _ = codec.delta_encode(bank[1], bank[0], threshold=THRESHOLD)
        self.delta_args = (bank[0].shape, 1, int(count), diffs, positions)
        self.encoding = encoding
        self.delta_packet = stream.encode_delta(*self.delta_args, encoding=encoding)

    def time_encode_keyframe(self, encoding, size):
        stream.encode_keyframe(self.keyframe, 0, encoding=self.encoding)

    def time_encode_delta(self, encoding, size):
        stream.encode_delta(*self.delta_args, encoding=self.encoding)

    def time_encode_end(self, encoding, size):
        stream.encode_end(2)

    def time_parse_header(self, encoding, size):
        stream.parse_header(self.delta_packet)


async def _session(frames, *, backend: str, encoding: str) -> tuple[stream._server.StreamStats, stream._server.StreamStats]:
    """One server and one client on 127.0.0.1 (port 0: a free one) until the end packet."""
    server = stream.StreamServer(iter(frames), host="127.0.0.1", port=0, backend=backend, threshold=THRESHOLD,
                                 encoding=encoding, stats_every=0)
    try:
        port = await server.start()
        client = stream.StreamClient("127.0.0.1", port, reconnect_timeout=5.0, stats_every=0)
        client_stats, server_stats = await asyncio.wait_for(asyncio.gather(client.run(), server.run()),
                                                            SESSION_TIMEOUT)
    finally:
        await server.close()
    return client_stats, server_stats


class ServeView(Benchmark):
    """``StreamServer`` -> TCP loopback -> ``StreamClient`` for ``SESSION_FRAMES`` unpaced frames."""

    params = [BACKENDS, STREAM_SIZES, ["raw", "compact"]]
    param_names = ["backend", "size", "encoding"]
    number = 1
    repeat = (1, 5, 20.0)
    warmup_time = 0

    def setup(self, backend, size, encoding):
        self.backend = require(backend).name
        self.encoding = encoding
        bank = frame_bank(size)
        self.frames = [bank[k] for k in replay_order(SESSION_FRAMES)]
        self.session(self.frames[:4])  # compile and load kernels outside the timed sessions

    def session(self, frames) -> stream._server.StreamStats:
        client, server = asyncio.run(_session(frames, backend=self.backend, encoding=self.encoding))
        if client.frames != len(frames) or server.frames != len(frames):
            raise RuntimeError(f"loopback session lost frames: client {client.frames}, server {server.frames} "
                               f"of {len(frames)}")
        return client

    def time_serve_view(self, backend, size, encoding):
        self.session(self.frames)

    def track_frames_per_second(self, backend, size, encoding):
        return round(self.session(self.frames).rate()["fps"], 1)

    track_frames_per_second.unit = "frames/s"
