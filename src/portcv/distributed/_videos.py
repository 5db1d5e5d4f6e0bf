"""Many videos: one task per file (or per keyframe-aligned segment), decoded on the worker.

A pipeline spec is a small picklable, host-only object (:func:`motion`, :func:`faces`, or any
picklable callable ``fn(frames, backend) -> value``); the worker builds the real detector from it
once per process. Frames never leave the worker (PyAV frames do not pickle, and a video's frames
are far larger than its results): only the small results come back, or are written to ``out``.

Segments split a long file at keyframes (sync samples, which closed-GOP encoders such as
libx264's defaults make IDR frames): a task seeks to its keyframe and decodes forward, so its
pixels equal a decode from the start. Face detection is per frame (segments need no overlap);
motion compares consecutive frames, so a motion segment also decodes the first frame of the next
segment (one frame of overlap) and the segments' frame pairs join into the whole file's.
"""

from __future__ import annotations

import bisect
import os
import pickle
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

from ..backends import to_numpy
from ._tiles import _bar, _default_client, backend_scope

ERRORS = ("keep", "raise")


@dataclass
class VideoRun:
    """The result of one video file (or the merged segments of one)."""

    #: The path as given.
    path: Any
    #: The spec's result (``None`` after an error; the ``.npz``/``.pkl`` path when written to ``out``).
    value: Any = None
    #: Frames the spec processed.
    frames: int = 0
    #: Task seconds (decode and compute, summed over segments).
    seconds: float = 0.0
    #: ``"ExceptionType: message"`` when the file failed (``errors='keep'``), else None.
    error: str | None = None
    #: Tasks the file ran as.
    segments: int = 1


# --------------------------------------------------------------------------------------------
# Decoding (PyAV directly: seeking to a keyframe needs the container)
# --------------------------------------------------------------------------------------------
def _av() -> Any:
    try:
        import av
    except ImportError:
        from ..video import VideoError

        raise VideoError("video files need PyAV: pip install 'portcv[io]'") from None
    return av


def _decode_threads() -> int:
    """Decoder threads per task: 1 inside a dask worker (workers already fill the cores), else auto (0)."""
    try:
        from distributed import get_worker

        get_worker()
        return 1
    except (ImportError, ValueError):
        return 0


def frame_table(path: Any) -> tuple[list[int], list[int]]:
    """Demux only: every frame's timestamp in presentation order, and the keyframes' indices."""
    av = _av()
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        pts, keys = [], []
        for packet in container.demux(stream):
            if packet.pts is None:  # the flush packet
                continue
            pts.append(packet.pts)
            keys.append(bool(packet.is_keyframe))
    order = sorted(range(len(pts)), key=pts.__getitem__)
    rank = {i: r for r, i in enumerate(order)}
    return [pts[i] for i in order], sorted(rank[i] for i, k in enumerate(keys) if k)


def decode(path: Any, start: int | None = None, stop: int | None = None, *,
           table: tuple[list[int], list[int]] | None = None) -> Iterator[np.ndarray]:
    """Frames ``[start, stop)`` of a file as ``(H, W, 3)`` uint8 RGB, seeking to a keyframe for ``start``."""
    from ..video import VideoError

    av = _av()
    path = str(path)
    if not os.path.isfile(path):
        raise VideoError(f"cannot read video {path!r}: no such file")
    try:
        with av.open(path) as container:
            stream = container.streams.video[0]
            stream.thread_count = _decode_threads()
            stream.thread_type = "AUTO"
            times = None
            if start:
                times = (table or frame_table(path))[0]
                container.seek(times[start], stream=stream, backward=True, any_frame=False)
            index = -1
            for frame in container.decode(stream):
                if times is not None:
                    index = bisect.bisect_left(times, frame.pts)
                else:
                    index += 1
                if start and index < start:
                    continue
                if stop is not None and index >= stop:
                    return
                yield frame.to_ndarray(format="rgb24")
    except (GeneratorExit, VideoError):
        raise
    except Exception as exc:  # FFmpeg's errors: not a video, truncated, unknown codec
        raise VideoError(f"cannot read video {path!r}: {type(exc).__name__}: {exc}") from None


# --------------------------------------------------------------------------------------------
# Pipeline specs
# --------------------------------------------------------------------------------------------
_DETECTORS: dict[Any, Any] = {}


@dataclass(frozen=True)
class MotionSpec:
    """Edge-based motion per file: ``regions (pairs, rows, cols)`` bool and ``density`` int32."""

    params: tuple = ()
    #: Frames a segment reads past its end (the next segment's first frame).
    overlap: int = field(default=1, init=False)

    def __call__(self, frames: Any, backend: str | None = None) -> dict:
        from ..motion import MotionDetector

        kwargs = dict(self.params)
        detector = MotionDetector(**kwargs)
        regions, density = [], []
        with backend_scope(backend):
            for frame in frames:
                result = detector.update(frame)
                if result is not None:
                    regions.append(to_numpy(result.regions))
                    density.append(to_numpy(result.density))
        rows, cols = detector.grid
        return {"regions": np.stack(regions) if regions else np.zeros((0, rows, cols), bool),
                "density": np.stack(density) if density else np.zeros((0, rows, cols), np.int32)}

    @staticmethod
    def merge(parts: list[dict]) -> dict:
        return {key: np.concatenate([p[key] for p in parts]) for key in ("regions", "density")}


@dataclass(frozen=True)
class FacesSpec:
    """Cascade detection per frame: a list of ``(frame index, boxes (n, 4), neighbours (n,))``."""

    cascade: str = "haarcascade_frontalface_default.xml"
    params: tuple = ()
    overlap: int = field(default=0, init=False)

    def detector(self) -> Any:
        key = ("faces", self.cascade)
        if key not in _DETECTORS:  # once per worker process: parsing a cascade costs ~0.1 s
            from ..detect import CascadeDetector, MCTDetector, load_mct_cascade

            if self.cascade.endswith(".npz"):  # an MCT cascade file (portcv faces --detector mct)
                _DETECTORS[key] = MCTDetector(load_mct_cascade(self.cascade))
            else:
                _DETECTORS[key] = CascadeDetector.from_opencv(self.cascade)
        return _DETECTORS[key]

    def __call__(self, frames: Any, backend: str | None = None, first: int = 0) -> list:
        from ..detect import detect_video

        with backend_scope(backend):
            return [(first + i, to_numpy(boxes), to_numpy(neighbours))
                    for i, boxes, neighbours in detect_video(self.detector(), frames, **dict(self.params))]

    @staticmethod
    def merge(parts: list[list]) -> list:
        return [item for part in parts for item in part]


def motion(**params: Any) -> MotionSpec:
    """A picklable motion-detection spec: :class:`portcv.motion.MotionDetector`'s parameters.

    Per file it gives ``{"regions": (T-1, rows, cols) bool, "density": (T-1, rows, cols) int32}``,
    one entry per pair of consecutive frames.

    Examples
    --------
    >>> import portcv.distributed as pdist
    >>> spec = pdist.motion(t_low=70, t_high=80, grid=(2, 2))
    >>> import pickle; pickle.loads(pickle.dumps(spec)) == spec
    True
    """
    from ..motion import MotionDetector

    MotionDetector(**params)  # the parameters fail here, not on every worker
    return MotionSpec(tuple(sorted((k, _hashable(v)) for k, v in params.items())))


def faces(cascade: str = "haarcascade_frontalface_default.xml", **params: Any) -> FacesSpec:
    """A picklable face-detection spec: a cascade name or path and ``CascadeDetector.detect``'s parameters.

    An ``.npz`` cascade (``"mct_frontalface_24.npz"``, the bundled one, or a path) runs
    :class:`portcv.detect.MCTDetector`; anything else is an OpenCV cascade.

    Per file it gives a list of ``(frame index, boxes (n, 4) int32, neighbours (n,) int32)``. The
    worker loads the cascade once per process; the spec itself holds only its name.

    Examples
    --------
    >>> import portcv.distributed as pdist
    >>> pdist.faces(min_neighbors=5).cascade
    'haarcascade_frontalface_default.xml'
    """
    return FacesSpec(str(cascade), tuple(sorted((k, _hashable(v)) for k, v in params.items())))


def _hashable(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


# --------------------------------------------------------------------------------------------
# The engine-neutral core, and the per-task wrapper
# --------------------------------------------------------------------------------------------
def process_video(path: Any, spec: Callable, *, backend: str | None = None, start: int | None = None,
                  stop: int | None = None) -> Any:
    """Run a pipeline spec over frames ``[start, stop)`` of one video file, here.

    The engine-neutral core of :func:`map_videos`: a plain function that any engine can call
    (``client.submit``, ``ray.remote(num_gpus=1)(process_video)``, a process pool).

    Parameters
    ----------
    path : str or Path
        A video file any FFmpeg build decodes.
    spec : MotionSpec, FacesSpec or callable
        :func:`motion`, :func:`faces`, or ``fn(frames_iterator, backend) -> value``.
    backend : str, optional
        The backend to compute on (default: the active one).
    start, stop : int, optional
        Frame range; ``start`` should be a keyframe (see :func:`frame_table`) for a fast seek.
        A motion spec also reads frame ``stop`` (its pairs end at ``stop``).

    Returns
    -------
    The spec's value.

    Examples
    --------
    >>> import tempfile, os, portcv, portcv.distributed as pdist
    >>> path = os.path.join(tempfile.mkdtemp(), "clip.mp4")
    >>> portcv.video.write_video(path, portcv.data.moving_shapes(4, 48, 64))
    4
    >>> pdist.process_video(path, pdist.motion(t_low=70, t_high=80, grid=(2, 2)))["regions"].shape
    (3, 2, 2)
    """
    return _process(path, spec, backend, start, stop, None)


def _process(path: Any, spec: Callable, backend: str | None, start: int | None, stop: int | None,
             table: tuple[list[int], list[int]] | None) -> Any:
    """:func:`process_video` with the file's :func:`frame_table` when the caller has it already
    (a segment's plan read it): a seek then needs no second pass over the file."""
    overlap = getattr(spec, "overlap", 0)
    end = None if stop is None else stop + overlap
    frames = decode(path, start, end, table=table)
    if isinstance(spec, FacesSpec):
        return spec(frames, backend, first=start or 0)
    return spec(frames, backend)


def _count(value: Any) -> int:
    if isinstance(value, dict) and "regions" in value:
        return int(value["regions"].shape[0]) + 1 if value["regions"].shape[0] else 0
    if isinstance(value, list):
        return len(value)
    return 0


def _save(value: Any, target: Path) -> str:
    target.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(value, dict) and all(isinstance(v, np.ndarray) for v in value.values()):
        path = target.with_suffix(".npz")
        np.savez(path, **value)
    elif isinstance(value, list) and all(isinstance(v, tuple) and len(v) == 3 for v in value):
        path = target.with_suffix(".npz")
        index = np.array([v[0] for v in value], np.int64)
        counts = np.array([len(v[1]) for v in value], np.int64)
        boxes = np.concatenate([v[1] for v in value]) if value else np.zeros((0, 4), np.int32)
        neighbours = np.concatenate([v[2] for v in value]) if value else np.zeros((0,), np.int32)
        np.savez(path, frame=index, count=counts, boxes=boxes, neighbours=neighbours)
    else:
        path = target.with_suffix(".pkl")
        with open(path, "wb") as fh:
            pickle.dump(value, fh)
    return str(path)


def _video_task(job: tuple) -> dict:
    """One task: a file or a segment; never raises (the error is the result), so others go on."""
    path, spec, backend, start, stop, out, table = job
    t0 = time.perf_counter()
    try:
        value = _process(path, spec, backend, start, stop, table)
        frames = _count(value)
        if out is not None:
            value = _save(value, Path(out))
        return {"value": value, "frames": frames, "seconds": time.perf_counter() - t0, "error": None}
    except Exception as exc:  # noqa: BLE001 - recorded per file (errors='keep')
        return {"value": None, "frames": 0, "seconds": time.perf_counter() - t0,
                "error": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc(limit=4)}


def _plan_task(job: tuple) -> dict:
    """Split points of one file: keyframes at least ``segment_frames`` apart."""
    path, segment_frames = job
    try:
        times, keys = frame_table(path)
    except Exception as exc:  # noqa: BLE001 - the file fails alone
        return {"error": f"{type(exc).__name__}: {exc}", "bounds": []}
    total = len(times)
    if total == 0:
        return {"error": f"VideoError: cannot read video {str(path)!r}: it holds no video frames", "bounds": []}
    starts = [0]
    for k in keys:
        if k - starts[-1] >= segment_frames and total - k >= 1:
            starts.append(k)
    ends = starts[1:] + [total]
    return {"error": None, "bounds": list(zip(starts, ends)), "table": (times, keys)}


def segment_bounds(path: Any, segment_frames: int) -> list[tuple[int, int]]:
    """``[start, stop)`` frame ranges of about ``segment_frames`` each, starting at keyframes.

    Examples
    --------
    >>> import tempfile, os, portcv, portcv.distributed as pdist
    >>> path = os.path.join(tempfile.mkdtemp(), "clip.mp4")
    >>> portcv.video.write_video(path, portcv.data.moving_shapes(6, 48, 64))
    6
    >>> pdist.segment_bounds(path, 100)
    [(0, 6)]
    """
    plan = _plan_task((path, segment_frames))
    if plan["error"]:
        from ..video import VideoError

        raise VideoError(plan["error"])
    return plan["bounds"]


# --------------------------------------------------------------------------------------------
# map_videos
# --------------------------------------------------------------------------------------------
def map_videos(spec: Callable, paths: Any, *, client: Any = None, segment_frames: int | None = None,
               out: Any = None, errors: str = "keep", backend: str | None = None, progress: bool = True,
               timeout: float | None = None) -> Iterator[VideoRun]:
    """Run a pipeline spec over many video files on a dask cluster; results as they complete.

    One task per file, or per segment of about ``segment_frames`` frames split at keyframes.
    Each task opens its file on the worker, decodes it there, and sends back only the results.

    Parameters
    ----------
    spec : MotionSpec, FacesSpec or callable
        :func:`motion`, :func:`faces`, or any picklable ``fn(frames_iterator, backend) -> value``
        (whole files only).
    paths : iterable of str or Path
        Files every worker can read (a shared file system on several hosts).
    client : distributed.Client, optional
        Default: the current client; without one the files run here, one after the other.
    segment_frames : int, optional
        Split files longer than this at keyframes (motion and faces specs); the segments'
        results are joined, equal to the whole file's.
    out : str or Path, optional
        A folder: each file's result is written there (``<stem>.npz``, or ``.pkl`` for other
        values; ``<stem>-2`` for a second file of the same stem) and ``VideoRun.value`` is that
        path. Without segments the worker writes it.
    errors : {'keep', 'raise'}
        ``'keep'``: a file that fails gives a :class:`VideoRun` with ``error`` set, the others go
        on. ``'raise'``: the first failure raises ``RuntimeError`` naming the file.
    backend : str, optional
        Backend of each task (default: the worker's, set by :class:`PortcvWorker`).
    progress : bool
        A tqdm progress bar over files (default True).
    timeout : float, optional
        Seconds to wait for all results (a ``TimeoutError`` after).

    Yields
    ------
    VideoRun
        One per file, in completion order.
    """
    if errors not in ERRORS:
        raise ValueError(f"errors must be one of {ERRORS}, got {errors!r}")
    if segment_frames is not None:
        if not isinstance(spec, (MotionSpec, FacesSpec)):
            raise ValueError("segment_frames needs a motion() or faces() spec (their results join across segments)")
        if int(segment_frames) < 2:
            raise ValueError(f"segment_frames must be at least 2, got {segment_frames}")
    paths = list(paths)
    targets = _targets(paths, out)
    client = _default_client(client)
    bar = _bar(len(paths), "videos") if progress else None
    try:
        runs = (_serial(spec, paths, segment_frames, targets, backend) if client is None
                else _on_cluster(client, spec, paths, segment_frames, targets, backend, timeout))
        for run in runs:
            if bar is not None:
                bar.update(1)
            if run.error is not None and errors == "raise":
                raise RuntimeError(f"{run.path}: {run.error}")
            yield run
    finally:
        if bar is not None:
            bar.close()


def _targets(paths: list, out: Any) -> list:
    """Per file, where its result goes (``out/<stem>``, ``out/<stem>-<n>`` for a repeated stem), or None."""
    if out is None:
        return [None] * len(paths)
    seen: dict[str, int] = {}
    targets = []
    for path in paths:
        stem = Path(str(path)).stem
        seen[stem] = seen.get(stem, 0) + 1
        targets.append(str(Path(out) / (stem if seen[stem] == 1 else f"{stem}-{seen[stem]}")))
    return targets


def _finish(path: Any, spec: Any, parts: list[dict], out: Any, merged_here: bool) -> VideoRun:
    failed = [p for p in parts if p["error"]]
    seconds = sum(p["seconds"] for p in parts)
    if failed:
        return VideoRun(path, None, 0, seconds, failed[0]["error"], len(parts))
    # One part is the whole value; several join here. Segment tasks save nothing themselves
    # (merged_here), so the joined value, even of a single segment, is saved here.
    value = parts[0]["value"] if len(parts) == 1 else spec.merge([p["value"] for p in parts])
    frames = parts[0]["frames"] if len(parts) == 1 else _count(value)
    if out is not None and merged_here:
        value = _save(value, Path(out))
    return VideoRun(path, value, frames, seconds, None, len(parts))


def _serial(spec: Any, paths: list, segment_frames: Any, targets: list, backend: Any) -> Iterator[VideoRun]:
    for path, out in zip(paths, targets):
        if segment_frames is None:
            yield _finish(path, spec, [_video_task((path, spec, backend, None, None, out, None))], out, False)
            continue
        plan = _plan_task((path, segment_frames))
        if plan["error"]:
            yield VideoRun(path, None, 0, 0.0, plan["error"], 0)
            continue
        parts = [_video_task((path, spec, backend, s, e, None, plan["table"])) for s, e in plan["bounds"]]
        yield _finish(path, spec, parts, out, True)


def _on_cluster(client: Any, spec: Any, paths: list, segment_frames: Any, targets: list, backend: Any,
                timeout: Any) -> Iterator[VideoRun]:
    from distributed import as_completed

    owner: dict[str, tuple] = {}  # future key -> (file number, segment number or None)
    if segment_frames is None:
        futures = client.map(_video_task, [(p, spec, backend, None, None, t, None) for p, t in zip(paths, targets)],
                             pure=False, retries=1)
        for i, f in enumerate(futures):
            owner[f.key] = ("run", i, 0)
        pending = {i: 1 for i in range(len(paths))}
    else:
        futures = client.map(_plan_task, [(p, segment_frames) for p in paths], pure=False, retries=1)
        for i, f in enumerate(futures):
            owner[f.key] = ("plan", i, 0)
        pending = {}
    parts: dict[int, dict[int, dict]] = {i: {} for i in range(len(paths))}
    queue = as_completed(futures, timeout=timeout)  # the timeout counts from here, for all results
    for future in queue:
        kind, i, k = owner.pop(future.key)
        result = future.result()
        if kind == "plan":
            if result["error"]:
                yield VideoRun(paths[i], None, 0, 0.0, result["error"], 0)
                continue
            jobs = [(paths[i], spec, backend, s, e, None, result["table"]) for s, e in result["bounds"]]
            pending[i] = len(jobs)
            for j, f in enumerate(client.map(_video_task, jobs, pure=False, retries=1)):
                owner[f.key] = ("run", i, j)
                queue.add(f)
            continue
        parts[i][k] = result
        if len(parts[i]) == pending[i]:
            ordered = [parts[i][j] for j in range(pending[i])]
            yield _finish(paths[i], spec, ordered, targets[i], segment_frames is not None)
            parts[i] = {}
