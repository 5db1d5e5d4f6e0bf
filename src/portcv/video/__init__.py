"""Video files in and out, and the real-time motion pipeline of Del Vecchio et al. (section V-E).

Frames are read and written with PyAV (``pip install 'portcv[io]'``), or decoded on the GPU by
NVDEC through PyNvVideoCodec (``device="gpu"``, ``pip install 'portcv[video-gpu]'``); both are
imported only when a file is opened. :func:`run_motion` feeds frames one at a time
to a :class:`portcv.motion.MotionDetector` on a chosen backend, times every frame pair and
reports the paper's Table VII statistics (:func:`fps_statistics`); ``portcv motion`` is its
command line.
"""

from __future__ import annotations

from ._io import VideoError, VideoWriter, frame_table, video_fps, write_video
from ._reader import VideoReader, iter_frames, read_video
from ._run import fps_statistics, run_motion

__all__ = [
    "VideoError",
    "VideoReader",
    "VideoWriter",
    "iter_frames",
    "read_video",
    "write_video",
    "video_fps",
    "frame_table",
    "fps_statistics",
    "run_motion",
]
