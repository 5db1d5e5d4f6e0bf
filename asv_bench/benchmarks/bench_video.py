"""portcv.video: video files in and out (PyAV) and the real-time motion loop.

The clips are :func:`portcv.data.moving_shapes` videos (moving shapes over sensor noise, the
source of ``portcv motion synthetic``), written once per ``asv run`` by this module's
``setup_cache`` as H.264 ``.mp4`` files in asv's working directory: :data:`CLIP_FRAMES` frames
per size (fewer at 1080p: generating the shapes takes about 0.4 s per 1080p frame).

- :class:`WriteVideo`: ``write_video`` of the decoded clip (H.264 encode and mux);
  ``track_frames_per_second`` is frames / median seconds.
- :class:`VideoWriterFrame`: one ``VideoWriter.write`` call on an open writer (the encoder's
  per-frame cost as ``portcv stream view --out`` pays it; H.264 buffers a few frames).
- :class:`ReadVideo`: ``read_video``, ``iter_frames`` (frames consumed one at a time, none kept),
  ``video_fps`` (the container's metadata), ``VideoReader`` (a seek to the middle, then gray
  frames to the end; CPU decode); ``track_frames_per_second`` decodes with ``iter_frames``.
- :class:`RunMotion`: ``run_motion`` over the decoded clip per backend x size (the Rice paper's
  section V-E loop, warm-up included, as ``portcv motion`` calls it);
  ``track_pairs_per_second`` is the throughput of its timed pairs (``fps_statistics``).
- :class:`FpsStatistics`: ``fps_statistics`` of ``n`` per-pair times (host Python).

Every class skips (``NotImplementedError`` in ``setup``) when imageio or PyAV is missing,
except :class:`FpsStatistics`, which needs neither. The exception class has no benchmark.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import statistics
import tempfile
import time

import numpy as np

import portcv
from portcv import video

from ._common import BACKENDS, SIZES, Benchmark, require

VIDEO_SIZES = ["640x480", "1920x1080"]
CLIP_FRAMES = {"640x480": 30, "1920x1080": 10}
FPS = 30.0
#: The motion detector of ``portcv motion`` (the paper's Fig. 12 thresholds, beta 12, 6 x 10 cells).
DETECTOR = {"t_low": 70, "t_high": 80, "beta": 12, "grid": (6, 10)}


def have_pyav() -> bool:
    return importlib.util.find_spec("av") is not None and importlib.util.find_spec("imageio") is not None


def require_pyav() -> None:
    if not have_pyav():
        raise NotImplementedError("video files need imageio and PyAV (pip install 'portcv[io]')")


def _clip_path(size: str) -> str:
    return os.path.abspath(f"portcv_bench_clip_{size}.mp4")


def _write_clip(size: str) -> str:
    h, w = SIZES[size]
    path = _clip_path(size)
    video.write_video(path, portcv.data.moving_shapes(CLIP_FRAMES[size], h, w, seed=0), fps=FPS)
    return path


def clip(size: str) -> str:
    """The clip of ``size``: the cached file, or written now."""
    path = _clip_path(size)
    return path if os.path.exists(path) else _write_clip(size)


class _VideoBenchmark(Benchmark):
    """Shares one setup cache: the clips of every size (nothing when PyAV is missing)."""

    def setup_cache(self) -> None:
        if have_pyav():
            for size in VIDEO_SIZES:
                _write_clip(size)

    setup_cache.timeout = 300


class WriteVideo(_VideoBenchmark):
    """``write_video(path, frames, fps=30)`` of the decoded clip to a new H.264 .mp4."""

    params = [VIDEO_SIZES]
    param_names = ["size"]

    def setup(self, size):
        require_pyav()
        self.frames = video.read_video(clip(size))
        self.dir = tempfile.mkdtemp(prefix="portcv_bench_")
        self.path = os.path.join(self.dir, "out.mp4")

    def teardown(self, size):
        if hasattr(self, "dir"):  # setup skips without PyAV before making it
            shutil.rmtree(self.dir, ignore_errors=True)

    def time_write_video(self, size):
        video.write_video(self.path, self.frames, fps=FPS)

    def track_frames_per_second(self, size):
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            video.write_video(self.path, self.frames, fps=FPS)
            times.append(time.perf_counter() - t0)
        return round(len(self.frames) / statistics.median(times), 1)

    track_frames_per_second.unit = "frames/s"


class VideoWriterFrame(_VideoBenchmark):
    """One ``VideoWriter.write(frame)`` on an open writer, cycling through the decoded clip."""

    params = [VIDEO_SIZES]
    param_names = ["size"]

    def setup(self, size):
        require_pyav()
        self.frames = video.read_video(clip(size))
        self.dir = tempfile.mkdtemp(prefix="portcv_bench_")
        self.writer = video.VideoWriter(os.path.join(self.dir, "out.mp4"), fps=FPS)
        self.writer.write(self.frames[0])  # opens the file and the encoder outside the timed calls
        self.t = 0

    def teardown(self, size):
        if hasattr(self, "writer"):  # setup skips without PyAV before opening it
            self.writer.close()
        if hasattr(self, "dir"):
            shutil.rmtree(self.dir, ignore_errors=True)

    def time_write_frame(self, size):
        self.t = (self.t + 1) % len(self.frames)
        self.writer.write(self.frames[self.t])


class ReadVideo(_VideoBenchmark):
    """Decoding the clip: ``read_video``, ``iter_frames`` and ``video_fps``."""

    params = [VIDEO_SIZES]
    param_names = ["size"]

    def setup(self, size):
        require_pyav()
        self.path = clip(size)
        self.frames = CLIP_FRAMES[size]

    def time_read_video(self, size):
        video.read_video(self.path)

    def time_iter_frames(self, size):
        for _ in video.iter_frames(self.path):
            pass

    def time_video_fps(self, size):
        video._io.video_fps(self.path)

    def time_reader_seek_gray(self, size):
        # VideoReader: a keyframe seek to the clip's middle, then its Y planes to the end.
        with video.VideoReader(self.path, gray=True, device="cpu") as reader:
            reader.seek(self.frames // 2)
            for _ in reader:
                pass

    def track_frames_per_second(self, size):
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            n = sum(1 for _ in video.iter_frames(self.path))
            times.append(time.perf_counter() - t0)
        if n != self.frames:
            raise RuntimeError(f"decoded {n} frames, the clip holds {self.frames}")
        return round(n / statistics.median(times), 1)

    track_frames_per_second.unit = "frames/s"


class RunMotion(_VideoBenchmark):
    """``run_motion(frames, backend=..., detector=DETECTOR)`` over the decoded clip (all its pairs)."""

    params = [BACKENDS, VIDEO_SIZES]
    param_names = ["backend", "size"]

    def setup(self, backend, size):
        require_pyav()
        self.backend = require(backend).name
        self.frames = list(video.read_video(clip(size)))
        self.times = video.run_motion(self.frames, backend=self.backend, detector=DETECTOR)  # compile

    def time_run_motion(self, backend, size):
        video.run_motion(self.frames, backend=self.backend, detector=DETECTOR)

    def track_pairs_per_second(self, backend, size):
        times = video.run_motion(self.frames, backend=self.backend, detector=DETECTOR)
        return round(video.fps_statistics(times)["throughput"], 1)

    track_pairs_per_second.unit = "pairs/s"


class FpsStatistics(Benchmark):
    """``fps_statistics(seconds)`` of ``n`` per-pair times (Table VII's statistics, host Python)."""

    params = [[100, 10_000]]
    param_names = ["n"]

    def setup(self, n):
        self.seconds = list(np.random.default_rng(0).uniform(0.08, 0.12, n))

    def time_fps_statistics(self, n):
        video.fps_statistics(self.seconds)
