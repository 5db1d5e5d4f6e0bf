"""Helpers of the distributed tests: video files written with PyAV, result comparison."""

from __future__ import annotations

import numpy as np

import portcv.distributed as pdist

#: Motion with a small beta, so the synthetic clips show motion in most frame pairs.
SPEC = pdist.motion(t_low=70, t_high=80, beta=2, grid=(3, 4))


def write_clip(path, frames, gop=None):
    """An H.264 (or MPEG-4) file written with PyAV; ``gop``: a keyframe every ``gop`` frames."""
    height, width = frames.shape[1:3]
    import av

    with av.open(str(path), "w") as container:
        codec = "libx264" if "libx264" in av.codecs_available else "mpeg4"
        stream = container.add_stream(codec, rate=25)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        if gop is not None:
            stream.options = {"g": str(gop), "keyint_min": str(gop), "sc_threshold": "0"}
        for frame in frames:
            for packet in stream.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return str(path)


def same_value(a, b):
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) and a[k].dtype == b[k].dtype for k in a)
    return len(a) == len(b) and all(x[0] == y[0] and np.array_equal(x[1], y[1]) and np.array_equal(x[2], y[2])
                                    for x, y in zip(a, b))
