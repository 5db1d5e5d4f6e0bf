"""portcv.codec: the webcam report's frame-delta encoder (section 2) and decoder, and the wire format.

Inputs are two consecutive frames of :func:`portcv.stream.synthetic_source` (a static scene with
sensor noise of sigma 4 and a moving square): with the report's threshold of 20 about 0.1 % of
the bytes change, the case the report tuned its kernels for. The issue's target: encode a
1920x1080x3 frame (flag, compact, update the reference) in under 50 us with CuPy; the report's
best kernel took 3.4 ms on a Jetson Nano (section 2.2.4, Table 9). ``track_*_bandwidth`` counts
the compulsory traffic (both frames read, the new reference and the full-capacity buffers
written) over the median time.

There is no OpenCV peer (OpenCV has no delta coder); ``DeltaEncodeCupyxPeer`` is the same
result written with plain CuPy array operations (``cupy.flatnonzero``), as a GPU baseline.
"""

from __future__ import annotations

import functools

import numpy as np

import portcv
from portcv import codec, stream

from ._common import (
    BACKENDS,
    SIZE_NAMES,
    SIZES,
    Benchmark,
    Operation,
    prepare,
    require,
    run,
)

CUPY_ARRAYS = "cupy-arrays"


@functools.lru_cache(maxsize=4)
def frame_pair(size: str) -> tuple[np.ndarray, np.ndarray]:
    h, w = SIZES[size]
    a, b = stream.synthetic_source(h, w, frames=2, seed=0)
    return b, a


class DeltaEncode(Benchmark):
    """``delta_encode(frame, reference)`` (threshold 20, full capacity) over backend x frame size."""

    params = [BACKENDS, SIZE_NAMES]
    param_names = ["backend", "size"]

    def setup(self, backend, size):
        self.op = Operation(backend, functools.partial(codec.delta_encode, threshold=20), *frame_pair(size))

    def time_delta_encode(self, backend, size):
        self.op()

    def track_delta_encode_bandwidth(self, backend, size):
        return self.op.bandwidth_gbs()

    track_delta_encode_bandwidth.unit = "GB/s"


class DeltaEncoderStep(Benchmark):
    """The stream's path: ``DeltaEncoder.encode`` (reference kept on the device, updated in place
    on CuPy) alternating between two frames, over backend x frame size."""

    params = [BACKENDS, SIZE_NAMES]
    param_names = ["backend", "size"]

    def setup(self, backend, size):
        b = require(backend)
        frame, ref = frame_pair(size)
        self.frames = [prepare(backend, frame), prepare(backend, ref)]
        self.encoder = codec.DeltaEncoder(threshold=20, backend=b.name)
        self.encoder.keyframe(self.frames[1])
        self.backend = backend
        self.i = 0
        self.time_encoder_step(backend, size)  # compile / warm up

    def time_encoder_step(self, backend, size):
        self.i ^= 1
        run(self.backend, self.encoder.encode, self.frames[self.i])


class DeltaEncodeCupyxPeer(Benchmark):
    """The same encode in plain CuPy array code (flatnonzero + fancy indexing): the GPU baseline."""

    params = [[CUPY_ARRAYS], SIZE_NAMES]
    param_names = ["backend", "size"]

    def setup(self, backend, size):
        require("cupy")
        import cupy

        def encode(frame, ref):
            f, r = frame.reshape(-1), ref.reshape(-1)
            idx = cupy.flatnonzero(cupy.abs(f.astype(cupy.int16) - r.astype(cupy.int16)) > 20).astype(cupy.int32)
            positions = cupy.zeros(f.size, cupy.int32)
            positions[: idx.size] = idx
            diffs = cupy.zeros(f.size, cupy.int8)
            diffs[: idx.size] = (f[idx] - r[idx]).view(cupy.int8)
            new_ref = r.copy()
            new_ref[idx] = f[idx]
            return idx.size, diffs, positions, new_ref

        self.op = Operation("cupy", encode, *frame_pair(size))

    def time_delta_encode(self, backend, size):
        self.op()


class DeltaDecode(Benchmark):
    """``delta_decode`` of one encoded frame (full-capacity buffers, count on the device)."""

    params = [BACKENDS, SIZE_NAMES]
    param_names = ["backend", "size"]

    def setup(self, backend, size):
        frame, ref = frame_pair(size)
        with portcv.using("numpy"):
            count, diffs, positions, _ = codec.delta_encode(frame, ref, threshold=20)
        self.op = Operation(backend, functools.partial(codec.delta_decode, check=False), ref, diffs, positions,
                            np.asarray(count, np.int64))

    def time_delta_decode(self, backend, size):
        self.op()


class StreamPacket(Benchmark):
    """Host side of the wire: build and decode one delta packet, per payload encoding (NumPy)."""

    params = [list(stream.ENCODINGS), SIZE_NAMES]
    param_names = ["encoding", "size"]

    def setup(self, encoding, size):
        frame, ref = frame_pair(size)
        with portcv.using("numpy"):
            count, diffs, positions, _ = codec.delta_encode(frame, ref, threshold=20)
        self.args = (frame.shape, 1, int(count), diffs, positions)
        self.encoding = encoding
        self.packet = stream.encode_delta(*self.args, encoding=encoding)
        self.decoder = stream.StreamDecoder()
        self.decoder.decode(stream.encode_keyframe(ref, 0, encoding=encoding))

    def time_encode_delta_packet(self, encoding, size):
        stream.encode_delta(*self.args, encoding=self.encoding)

    def time_decode_delta_packet(self, encoding, size):
        self.decoder.index = 0  # the decoder's picture stays the keyframe: decoding makes a new array
        self.decoder.decode(self.packet)

    def track_delta_packet_bytes(self, encoding, size):
        return len(self.packet)

    track_delta_packet_bytes.unit = "bytes"
