"""Video files in and out, and the real-time motion pipeline of Del Vecchio et al. (section V-E).

Frames are read and written with imageio's PyAV plugin (``pip install 'portcv[io]'``); imageio
and PyAV are imported only when a file is opened. :func:`run_motion` feeds frames one at a time
to a :class:`portcv.motion.MotionDetector` on a chosen backend, times every frame pair and
reports the paper's Table VII statistics (:func:`fps_statistics`); ``portcv motion`` is its
command line.
"""

from __future__ import annotations

from ._io import VideoError, VideoWriter, iter_frames, read_video, video_fps, write_video
from ._run import fps_statistics, run_motion

__all__ = [
    "VideoError",
    "VideoWriter",
    "iter_frames",
    "read_video",
    "write_video",
    "video_fps",
    "fps_statistics",
    "run_motion",
]
