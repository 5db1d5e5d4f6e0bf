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

import contextvars
import os
import pickle
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

from .. import _validate
from ..backends import to_numpy, using
from ..video import VideoReader, frame_table
from ._cluster import backend_name
from ._tiles import _bar, _default_client, backend_scope, check_flag, check_timeout

ERRORS = ("keep", "raise")
#: The ``decoder=`` choices: :class:`portcv.video.VideoReader`'s ``device``, passed on to it.
DECODERS = ("auto", "cpu", "gpu")
#: Frames a GPU decoder decodes ahead of the spec, in a thread of its own (VideoReader's
#: ``prefetch``): decode overlaps the kernels. The CPU decoder runs in the caller's thread:
#: workers and sessions already fill the cores.
GPU_PREFETCH = 4
#: The most decoder sessions one serial run starts at once.
MAX_SESSIONS = 64


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
    #: The decoder that ran: ``"cpu"`` (PyAV) or ``"gpu"`` (NVDEC); ``"cpu+gpu"`` where segments
    #: differed; None where nothing was decoded (an error before the first frame).
    decoder: str | None = None


# --------------------------------------------------------------------------------------------
# Decoding (portcv.video's reader: one decoder, and one colour conversion, in the project)
# --------------------------------------------------------------------------------------------
def _decode_threads() -> int:
    """Decoder threads per task: 1 inside a dask worker (workers already fill the cores), else auto (0)."""
    try:
        from distributed import get_worker

        get_worker()
        return 1
    except (ImportError, ValueError):
        return 0


def _video_path(path: Any, name: str = "path") -> str:
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{name} must be a video file path (str or Path), got {type(path).__name__}")
    return os.fspath(path)


def decode(path: Any, start: int | None = None, stop: int | None = None, *,
           table: tuple[list[int], list[int]] | None = None, device: str = "cpu") -> Iterator[Any]:
    """Frames ``[start, stop)`` of a file as ``(H, W, 3)`` uint8 RGB, seeking to a keyframe for ``start``.

    A :class:`portcv.video.VideoReader` (``device`` is its decoder choice): the frames (their
    colour included) are those ``portcv.video.read_video(path, device=device)`` returns, equal
    on both decoders. ``table`` is the file's :func:`frame_table` where the caller has it (a
    segment's plan read it). A GPU decoder decodes :data:`GPU_PREFETCH` frames ahead.
    """
    first = start or 0
    if stop is not None and stop <= first:
        return iter(())  # an empty range (process_video takes start == stop)
    reader = VideoReader(path, start=first, stop=stop, device=device, threads=_decode_threads(), table=table)
    if reader.decoder == "gpu":  # resolved by the reader: "auto" on a GPU backend with NVDEC's extra
        reader.prefetch = GPU_PREFETCH  # before the first frame: the decode ahead starts with it
    return reader


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
        if key not in _DETECTORS:  # once per worker process: parsing a cascade is costly
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

    Every parameter is checked here, by the detector's own validators (the edge detector's
    ``t_low``, ``t_high``, ``alpha``, ``ksize``, ``sigma`` on a 1 x 1 frame, on NumPy), so a bad
    one fails in the caller, not as an error per file.

    Raises
    ------
    ValueError, TypeError
        A bad or unknown parameter, named.

    Examples
    --------
    >>> import portcv.distributed as pdist
    >>> spec = pdist.motion(t_low=70, t_high=80, grid=(2, 2))
    >>> import pickle; pickle.loads(pickle.dumps(spec)) == spec
    True
    """
    from ..motion import MotionDetector

    detector = MotionDetector(**params)  # the parameters fail here, not on every worker
    with using("numpy"):  # the edge detector's parameters are checked when it first runs
        detector.edges(np.zeros((1, 1), np.uint8))
    return MotionSpec(tuple(sorted((k, _hashable(v)) for k, v in params.items())))


def faces(cascade: str = "haarcascade_frontalface_default.xml", **params: Any) -> FacesSpec:
    """A picklable face-detection spec: a cascade name or path and ``CascadeDetector.detect``'s parameters.

    An ``.npz`` cascade (``"mct_frontalface_24.npz"``, the bundled one, or a path) runs
    :class:`portcv.detect.MCTDetector`; anything else is an OpenCV cascade.

    Per file it gives a list of ``(frame index, boxes (n, 4) int32, neighbours (n,) int32)``. The
    worker loads the cascade once per process; the spec itself holds only its name.

    The cascade is loaded here too (once per process) and the parameters are checked by the
    detector's own validators (``portcv.detect.detect_video``), so a missing cascade or a bad
    parameter fails in the caller, not as an error per file. The cascade must therefore be
    readable here as well as on the workers.

    Raises
    ------
    FileNotFoundError
        The cascade is neither a file nor a known cascade name.
    ValueError, TypeError
        A bad or unknown parameter, named.

    Examples
    --------
    >>> import portcv.distributed as pdist
    >>> pdist.faces("mct_frontalface_24.npz", min_neighbors=3).cascade
    'mct_frontalface_24.npz'
    """
    from ..detect import detect_video

    if not isinstance(cascade, (str, os.PathLike)):
        raise TypeError(f"cascade must be a cascade name or a file path, got {type(cascade).__name__}")
    spec = FacesSpec(os.fspath(cascade), tuple(sorted((k, _hashable(v)) for k, v in params.items())))
    detect_video(spec.detector(), [], **params)  # checks the keywords and their values on a 1 x 1 frame
    return spec


def _hashable(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


# --------------------------------------------------------------------------------------------
# The engine-neutral core, and the per-task wrapper
# --------------------------------------------------------------------------------------------
def process_video(path: Any, spec: Callable, *, backend: str | None = None, start: int | None = None,
                  stop: int | None = None, decoder: str = "auto") -> Any:
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
        Frame range, ``0 <= start <= stop``; ``start`` should be a keyframe (see
        :func:`frame_table`) for a fast seek. A motion spec also reads frame ``stop`` (its pairs
        end at ``stop``).
    decoder : {"auto", "cpu", "gpu"}
        :class:`portcv.video.VideoReader`'s ``device``: ``"auto"`` (default) decodes with NVDEC
        on a GPU backend where PyNvVideoCodec is installed and takes the file, else with PyAV
        on the CPU. Both give the same frames, so the result does not depend on it.

    Returns
    -------
    The spec's value.

    Raises
    ------
    TypeError, ValueError
        A bad ``path``, ``spec``, ``backend``, ``start`` or ``stop`` (named).
    portcv.video.VideoError
        The file cannot be read, or ``start`` is past its end.

    Examples
    --------
    >>> import tempfile, os, portcv, portcv.distributed as pdist
    >>> folder = tempfile.TemporaryDirectory()
    >>> path = os.path.join(folder.name, "clip.mp4")
    >>> portcv.video.write_video(path, portcv.data.moving_shapes(4, 48, 64))
    4
    >>> pdist.process_video(path, pdist.motion(t_low=70, t_high=80, grid=(2, 2)))["regions"].shape
    (3, 2, 2)
    >>> folder.cleanup()
    """
    path = _video_path(path)
    _check_spec(spec)
    backend = backend_name(backend, optional=True)
    if start is not None:
        start = _validate.integer(start, "start", low=0)
    if stop is not None:
        stop = _validate.integer(stop, "stop", low=0)
    if start is not None and stop is not None and start > stop:
        raise ValueError(f"start must be <= stop, got start={start}, stop={stop}")
    decoder = _validate.choice(decoder, "decoder", DECODERS)
    return _process(path, spec, backend, start, stop, None, decoder=decoder)[0]


def _check_spec(spec: Any) -> None:
    if not callable(spec):
        raise TypeError(f"spec must be motion(...), faces(...) or a picklable callable fn(frames, backend), "
                        f"got {type(spec).__name__}")


class _Deadline(TimeoutError):
    """A serial ``map_videos`` run passed its ``timeout`` (raised between frames, never recorded per file)."""


def _until(frames: Iterator[np.ndarray], deadline: float | None) -> Iterator[np.ndarray]:
    for frame in frames:
        if deadline is not None and time.monotonic() > deadline:
            raise _Deadline
        yield frame


def _process(path: Any, spec: Callable, backend: str | None, start: int | None, stop: int | None,
             table: tuple[list[int], list[int]] | None, deadline: float | None = None,
             decoder: str = "auto") -> tuple[Any, str | None]:
    """:func:`process_video` with the file's :func:`frame_table` when the caller has it already
    (a segment's plan read it): a seek then needs no second pass over the file. ``deadline``
    (``time.monotonic()``) stops a serial run between frames. Returns the spec's value and the
    decoder that ran (None where nothing was decoded)."""
    overlap = getattr(spec, "overlap", 0)
    end = None if stop is None else stop + overlap
    with backend_scope(backend):  # the reader's "auto" asks the backend the spec computes on
        reader = decode(path, start, end, table=table, device=decoder)
    frames = reader if deadline is None else _until(reader, deadline)
    try:
        if isinstance(spec, FacesSpec):
            value = spec(frames, backend, first=start or 0)
        else:
            value = spec(frames, backend)
    finally:
        close = getattr(reader, "close", None)
        if close is not None:
            close()  # a spec that stopped early leaves no decoder (nor its thread) running
    return value, getattr(reader, "decoder", None)


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


def _video_task(job: tuple, deadline: float | None = None) -> dict:
    """One task: a file or a segment; never raises (the error is the result), so others go on.
    Only a serial run's ``deadline`` passing raises."""
    path, spec, backend, start, stop, out, table, decoder = job
    t0 = time.perf_counter()
    try:
        value, ran = _process(path, spec, backend, start, stop, table, deadline, decoder)
        frames = _count(value)
        if out is not None:
            value = _save(value, Path(out))
        return {"value": value, "frames": frames, "seconds": time.perf_counter() - t0, "error": None,
                "decoder": ran}
    except _Deadline:
        raise
    except Exception as exc:  # noqa: BLE001 - recorded per file (errors='keep')
        return {"value": None, "frames": 0, "seconds": time.perf_counter() - t0,
                "error": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc(limit=4), "decoder": None}


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


def _segment_frames(value: Any) -> int:
    """``segment_frames``: an int >= 2 (a motion segment needs a pair of frames)."""
    return _validate.integer(value, "segment_frames", low=2)


def segment_bounds(path: Any, segment_frames: int) -> list[tuple[int, int]]:
    """``[start, stop)`` frame ranges of about ``segment_frames`` each, starting at keyframes.

    The split :func:`map_videos` makes with the same ``segment_frames`` (an int >= 2): the
    ranges do not overlap and cover every frame.

    Examples
    --------
    >>> import tempfile, os, portcv, portcv.distributed as pdist
    >>> folder = tempfile.TemporaryDirectory()
    >>> path = os.path.join(folder.name, "clip.mp4")
    >>> portcv.video.write_video(path, portcv.data.moving_shapes(6, 48, 64))
    6
    >>> pdist.segment_bounds(path, 100)
    [(0, 6)]
    >>> folder.cleanup()
    """
    plan = _plan_task((_video_path(path), _segment_frames(segment_frames)))
    if plan["error"]:
        from ..video import VideoError

        raise VideoError(plan["error"])
    return plan["bounds"]


# --------------------------------------------------------------------------------------------
# map_videos
# --------------------------------------------------------------------------------------------
def map_videos(spec: Callable, paths: Any, *, client: Any = None, segment_frames: int | None = None,
               out: Any = None, errors: str = "keep", backend: str | None = None, progress: bool = True,
               timeout: float | None = None, decoder: str = "auto", sessions: int = 1) -> Iterator[VideoRun]:
    """Run a pipeline spec over many video files on a dask cluster; results as they complete.

    One task per file, or per segment of about ``segment_frames`` frames split at keyframes.
    Each task opens its file on the worker, decodes it there, and sends back only the results.
    Every argument is checked in the call, before any work: a bad ``spec`` or ``backend`` raises
    here instead of coming back as an error per file.

    Parameters
    ----------
    spec : MotionSpec, FacesSpec or callable
        :func:`motion`, :func:`faces`, or any picklable ``fn(frames_iterator, backend) -> value``
        (whole files only).
    paths : str, Path, or iterable of them
        Files every worker can read (a shared file system on several hosts). A single path is
        one file (a string is never read as a sequence of one-character paths): with
        ``segment_frames`` it spreads one long file's segments over the cluster.
    client : distributed.Client, optional
        Default: the current client; without one the files run here, one after the other.
    segment_frames : int, optional
        Split files longer than this (an int >= 2) at keyframes (motion and faces specs); the
        segments' results are joined, equal to the whole file's.
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
        Seconds for all results, from this call: a ``TimeoutError`` after. On a cluster it bounds
        the wait for results; in a serial run (no client) the run stops between frames.
    decoder : {"auto", "cpu", "gpu"}
        Each task's decoder (:func:`process_video`'s): ``"auto"`` (default) decodes with NVDEC
        on GPU workers where PyNvVideoCodec is installed, else with PyAV. ``VideoRun.decoder``
        says which ran. The results do not depend on it.
    sessions : int
        Without a client: how many files run at once here, each in a thread with its own
        decoder session (default 1: one after the other). A GPU has several NVDEC engines; on
        the H200, 8 threads reach about 750 fps of 1080p H.264 with motion, where one Python
        process's kernel launches stop them (docs/video.md has the figures). On a cluster the
        workers' threads decide (``local_cluster(threads_per_worker=...)``); ``sessions`` must
        then be 1.

    Yields
    ------
    VideoRun
        One per file, in completion order.

    Raises
    ------
    TypeError, ValueError
        A bad argument (named), at the call.
    TimeoutError
        ``timeout`` passed before every file was done.
    """
    _check_spec(spec)
    errors = _validate.choice(errors, "errors", ERRORS)
    if segment_frames is not None:
        if not isinstance(spec, (MotionSpec, FacesSpec)):
            raise ValueError("segment_frames needs a motion() or faces() spec (their results join across segments)")
        segment_frames = _segment_frames(segment_frames)
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    elif isinstance(paths, bytes) or not hasattr(paths, "__iter__"):
        raise TypeError(f"paths must be a video file path or an iterable of paths, got {type(paths).__name__}")
    paths = list(paths)
    for i, path in enumerate(paths):
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"paths must hold file paths (str or Path), got {type(path).__name__} at position {i}")
    if out is not None and not isinstance(out, (str, os.PathLike)):
        raise TypeError(f"out must be a folder path (str or Path), got {type(out).__name__}")
    backend = backend_name(backend, optional=True)
    progress = check_flag(progress, "progress")
    timeout = check_timeout(timeout)
    decoder = _validate.choice(decoder, "decoder", DECODERS)
    sessions = _validate.integer(sessions, "sessions", low=1, high=MAX_SESSIONS)
    client = _default_client(client)
    if client is not None and sessions != 1:
        raise ValueError(f"sessions={sessions} sets how many files run at once without a cluster; on a cluster its "
                         "workers' threads decide (local_cluster(threads_per_worker=...)): leave sessions=1")
    return _map_videos(spec, paths, client, segment_frames, _targets(paths, out), errors, backend, progress, timeout,
                       decoder, sessions)


def _map_videos(spec: Any, paths: list, client: Any, segment_frames: Any, targets: list, errors: str,
                backend: Any, progress: bool, timeout: float | None, decoder: str = "auto",
                sessions: int = 1) -> Iterator[VideoRun]:
    """:func:`map_videos`' results, after its checks (a generator: nothing runs until iterated)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    bar = _bar(len(paths), "videos") if progress else None
    done = 0
    try:
        runs = (_serial(spec, paths, segment_frames, targets, backend, deadline, decoder, sessions) if client is None
                else _on_cluster(client, spec, paths, segment_frames, targets, backend, timeout, decoder))
        while True:
            try:
                run = next(runs)
            except StopIteration:
                return
            except TimeoutError:  # the deadline here, or as_completed's on the cluster (tasks never raise)
                raise TimeoutError(f"map_videos: {done} of {len(paths)} files done when timeout={timeout:g} s "
                                   "passed") from None
            done += 1
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
    ran = sorted({p.get("decoder") for p in parts} - {None})
    decoder = "+".join(ran) if ran else None
    if failed:
        return VideoRun(path, None, 0, seconds, failed[0]["error"], len(parts), decoder)
    # One part is the whole value; several join here. Segment tasks save nothing themselves
    # (merged_here), so the joined value, even of a single segment, is saved here.
    value = parts[0]["value"] if len(parts) == 1 else spec.merge([p["value"] for p in parts])
    frames = parts[0]["frames"] if len(parts) == 1 else _count(value)
    if out is not None and merged_here:
        value = _save(value, Path(out))
    return VideoRun(path, value, frames, seconds, None, len(parts), decoder)


def _serial(spec: Any, paths: list, segment_frames: Any, targets: list, backend: Any,
            deadline: float | None, decoder: str = "auto", sessions: int = 1) -> Iterator[VideoRun]:
    def one_file(path: Any, out: Any) -> VideoRun:
        _in_time(deadline)
        if segment_frames is None:
            return _finish(path, spec, [_video_task((path, spec, backend, None, None, out, None, decoder), deadline)],
                           out, False)
        plan = _plan_task((path, segment_frames))
        if plan["error"]:
            return VideoRun(path, None, 0, 0.0, plan["error"], 0)
        parts = []
        for s, e in plan["bounds"]:
            _in_time(deadline)
            parts.append(_video_task((path, spec, backend, s, e, None, plan["table"], decoder), deadline))
        return _finish(path, spec, parts, out, True)

    if sessions == 1:
        for path, out in zip(paths, targets):
            yield one_file(path, out)
        return
    yield from _in_sessions(one_file, list(zip(paths, targets)), sessions)


def _in_time(deadline: float | None) -> None:
    if deadline is not None and time.monotonic() > deadline:
        raise _Deadline


def _in_sessions(one_file: Callable, files: list, sessions: int) -> Iterator[VideoRun]:
    """``one_file(path, out)`` for every file, ``sessions`` at once in threads (each decodes with
    its own decoder session), in completion order. Each thread runs in a copy of this context,
    so the active backend is the caller's. A passed deadline stops the files not yet started
    and is raised here once the running ones have stopped (between frames)."""
    from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

    pool = ThreadPoolExecutor(max_workers=sessions, thread_name_prefix="portcv-session")
    try:
        running = {pool.submit(contextvars.copy_context().run, one_file, path, out) for path, out in files}
        while running:
            done, running = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                yield future.result()  # _Deadline (the only exception a file raises) stops the run
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _on_cluster(client: Any, spec: Any, paths: list, segment_frames: Any, targets: list, backend: Any,
                timeout: Any, decoder: str = "auto") -> Iterator[VideoRun]:
    from distributed import as_completed

    owner: dict[str, tuple] = {}  # future key -> (file number, segment number or None)
    if segment_frames is None:
        futures = client.map(_video_task, [(p, spec, backend, None, None, t, None, decoder)
                                           for p, t in zip(paths, targets)],
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
            jobs = [(paths[i], spec, backend, s, e, None, result["table"], decoder) for s, e in result["bounds"]]
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
