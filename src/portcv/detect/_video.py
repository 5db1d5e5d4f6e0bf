"""Cascade detection over a video: frame after frame, with upload and detection overlapped on CuPy.

:func:`detect_video` feeds frames to :meth:`CascadeDetector.detect` one at a time and yields
each frame's result. On CuPy it double-buffers the frames: while frame ``t`` is detected on a
compute stream, frame ``t + 1`` is copied into a pinned host buffer and uploaded on a second
(copy) stream, so the PCIe transfer runs under the detection kernels; CUDA events order the
two streams (a frame is detected only after its upload, a device buffer is overwritten only
after the detection that read it). The detections are the same calls on the same pixels as
``detect(frame)``, so the results are identical. On NumPy and JAX the loop is sequential.
"""

from __future__ import annotations

import time
from typing import Any, Iterable, Iterator

import numpy as np

from .. import _validate
from ..backends import backend as active_backend
from ..backends import owner_of
from ._cascade._detector import CascadeDetector
from ._mct._detector import MCTDetector

#: ``CascadeDetector.detect``'s keyword arguments that :func:`detect_video` passes on.
DETECT_KEYWORDS = ("scale_factor", "min_neighbors", "min_size", "max_size", "split_stage", "raw", "channel_axis")
#: ``MCTDetector.detect``'s keyword arguments: the same plus the window ``step`` and ``devices``.
MCT_DETECT_KEYWORDS = DETECT_KEYWORDS + ("step", "devices")


class VideoDetections:
    """Iterator of ``(index, boxes, neighbours)`` per frame, with the time each result took.

    Made by :func:`detect_video`; see there. Attributes: ``seconds`` (a list: the time spent
    producing each result so far, the source's own time excluded), ``backend`` (its name),
    ``overlapped`` (whether CUDA streams overlap upload and detection).
    """

    def __init__(self, detector: Any, frames: Any, params: dict[str, Any], *, streams: bool) -> None:
        self.detector = detector
        self.backend = active_backend().name
        self.overlapped = bool(streams) and active_backend().overlaps_uploads
        self.seconds: list[float] = []
        self._params = params
        self._source = _frame_source(frames)
        self._source_seconds = 0.0
        self._run = self._overlapped() if self.overlapped else self._sequential()

    def __iter__(self) -> "VideoDetections":
        return self

    def __next__(self) -> tuple[int, np.ndarray, np.ndarray]:
        import portcv

        with portcv.using(self.backend):  # the backend it was made under, wherever it is iterated
            self._source_seconds = 0.0
            t0 = time.perf_counter()
            item = next(self._run)
            self.seconds.append(max(time.perf_counter() - t0 - self._source_seconds, 1e-9))
        return item

    def statistics(self) -> dict[str, float]:
        """:func:`portcv.video.fps_statistics` of :attr:`seconds` (``pairs`` counts frames here).

        ``average``, ``median``, ``min``, ``max`` and ``std`` of the per-frame rates, and
        ``throughput``: frames per second over the whole run.
        """
        from ..video import fps_statistics

        if not self.seconds:
            raise ValueError("no frames detected yet: iterate over the detections first")
        return fps_statistics(self.seconds)

    # ---------------------------------------------------------------------------------------
    def _pull(self) -> Any:
        """The next source frame, or None at the end; its time is not the detector's."""
        t0 = time.perf_counter()
        try:
            return next(self._source)
        except StopIteration:
            return None
        finally:
            self._source_seconds += time.perf_counter() - t0

    def _sequential(self) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
        index = 0
        while (frame := self._pull()) is not None:
            boxes, neighbours = self.detector.detect(frame, **self._params)
            yield index, boxes, neighbours
            index += 1

    def _overlapped(self) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
        import cupy

        # Blocking streams: they also wait for work on the legacy default stream, where a
        # caller's device frames may still be being written.
        copy_stream = cupy.cuda.Stream()
        compute_stream = cupy.cuda.Stream()
        slots: list[_Slot | None] = [None, None]

        def stage(frame: Any, k: int) -> Any:
            """Start the upload of a host frame into slot ``k``; other frames pass as they are."""
            if not (isinstance(frame, np.ndarray) and frame.dtype == np.uint8 and frame.ndim in (2, 3)
                    and frame.size > 0):
                return frame  # a device array, or one detect() will refuse with its own message
            slot = slots[k]
            if slot is None or slot.shape != frame.shape:
                slot = slots[k] = _Slot(cupy, frame.shape, copy_stream)
            slot.upload(frame, copy_stream)
            return slot

        current = stage(self._pull(), 0)
        index = 0
        while current is not None:
            following = self._pull()
            upcoming = None if following is None else stage(following, (index + 1) % 2)
            caller = cupy.cuda.Event(disable_timing=True)
            caller.record()  # the consumer's current stream: its device frames are written before we read them
            compute_stream.wait_event(caller)
            with compute_stream:
                if isinstance(current, _Slot):
                    compute_stream.wait_event(current.uploaded)
                    image = current.device
                else:
                    image = current
                boxes, neighbours = self.detector.detect(image, **self._params)  # host arrays
                if isinstance(current, _Slot):
                    current.release(compute_stream)
            yield index, boxes, neighbours
            current = upcoming
            index += 1
        compute_stream.synchronize()
        copy_stream.synchronize()


class _Slot:
    """A pinned host buffer, its device twin and the events that guard them (one frame in flight)."""

    def __init__(self, cupy: Any, shape: tuple, copy_stream: Any) -> None:
        import cupyx

        self.shape = tuple(shape)
        self.pinned = cupyx.empty_pinned(self.shape, np.uint8)
        with copy_stream:
            self.device = cupy.empty(self.shape, np.uint8)
        self.uploaded = cupy.cuda.Event(disable_timing=True)
        self.consumed = cupy.cuda.Event(disable_timing=True)
        self._uploading = self._reading = False

    def upload(self, frame: np.ndarray, copy_stream: Any) -> None:
        if self._uploading:
            self.uploaded.synchronize()  # the pinned buffer's last upload has left it
        np.copyto(self.pinned, frame)
        if self._reading:
            copy_stream.wait_event(self.consumed)  # the device buffer's last detection has read it
        self.device.set(self.pinned, stream=copy_stream)  # asynchronous: the source is pinned
        self.uploaded.record(copy_stream)
        self._uploading = True

    def release(self, compute_stream: Any) -> None:
        self.consumed.record(compute_stream)
        self._reading = True


def _frame_source(frames: Any) -> Iterator[Any]:
    if owner_of(frames) is not None:  # one array: a (T, H, W) or (T, H, W, C) batch
        if frames.ndim not in (3, 4):
            raise ValueError(f"frames must be a (T, H, W) or (T, H, W, C) array or an iterable of frames, "
                             f"got shape {tuple(frames.shape)}")
        return (frames[t] for t in range(frames.shape[0]))
    if isinstance(frames, (str, bytes)) or not isinstance(frames, Iterable):
        raise TypeError(f"frames must be an iterable of frames or a (T, H, W[, C]) array, got {type(frames).__name__}")
    return iter(frames)


def detect_video(detector: Any, frames: Any, *, streams: bool = True, **detect_kwargs: Any) -> VideoDetections:
    """Detect objects in every frame of a video: ``(index, boxes, neighbours)`` per frame, as they come.

    Parameters
    ----------
    detector : CascadeDetector or MCTDetector
        The detector (:meth:`CascadeDetector.from_opencv`, :meth:`MCTDetector.default`).
    frames : iterable of (H, W[, C]) uint8 arrays, or a (T, H, W[, C]) array
        Host (NumPy) or device frames: a list, a generator such as
        :func:`portcv.video.iter_frames` (read lazily, one frame ahead), or one array whose
        first axis is time (a 3-D array is ``(T, H, W)`` gray frames). Frames may change size.
    streams : bool
        On CuPy, overlap the upload of frame ``t + 1`` with the detection of frame ``t`` (CUDA
        streams, pinned host buffers). ``False``: plain sequential, for comparison. Ignored on
        the other backends, which are always sequential.
    **detect_kwargs
        :meth:`CascadeDetector.detect`'s options (``scale_factor``, ``min_neighbors``,
        ``min_size``, ``max_size``, ``split_stage``, ``raw``, ``channel_axis``; an
        :class:`MCTDetector` also ``step`` and ``devices``), checked now.

    Returns
    -------
    VideoDetections
        An iterator of ``(index, boxes, neighbours)``: the frame's position in ``frames`` and
        exactly what ``detector.detect(frame, **detect_kwargs)`` returns for it (``(N, 4)`` and
        ``(N,)`` int32 NumPy arrays). Its ``seconds`` list grows by each result's time (the
        source's own time, e.g. decoding, excluded) and ``statistics()`` gives the frame-rate
        statistics of :func:`portcv.video.fps_statistics` (``throughput`` = frames per second).
        It runs on the backend active when it was made.

    Notes
    -----
    The issue's video mode, after the streaming structure of Pertsau and Uvarov
    (``docs/references.md``: transfers hidden under computation). On CuPy each host frame
    is copied into one of two pinned buffers and uploaded on a copy stream (``ndarray.set``
    with ``stream=``), an event marks the upload, the compute stream waits for that event and
    runs ``detect`` on the device copy, and a second event marks when the detection has read the
    buffer, before the copy stream may overwrite it. So frame ``t + 1`` crosses PCIe while frame
    ``t`` is detected. ``detect`` itself reads its few result values back (the plan count, the
    final statuses, then the host grouping), so the download is part of each detection.
    Every result equals ``detector.detect(frame, **detect_kwargs)`` bit for bit: the same calls
    on the same pixels, on any backend.

    Examples
    --------
    >>> import numpy as np, portcv
    >>> det = portcv.detect.CascadeDetector.from_opencv("haarcascade_frontalface_default.xml")  # doctest: +SKIP
    >>> video = np.zeros((3, 48, 64), np.uint8)
    >>> run = portcv.detect.detect_video(det, video, min_neighbors=3)                          # doctest: +SKIP
    >>> [(i, boxes.shape) for i, boxes, n in run]                                               # doctest: +SKIP
    [(0, (0, 4)), (1, (0, 4)), (2, (0, 4))]
    >>> run.statistics()["pairs"]                                                               # doctest: +SKIP
    3
    """
    if not isinstance(detector, (CascadeDetector, MCTDetector)):
        raise TypeError(f"detector must be a portcv.detect.CascadeDetector or MCTDetector, got {type(detector).__name__}")
    keywords = MCT_DETECT_KEYWORDS if isinstance(detector, MCTDetector) else DETECT_KEYWORDS
    streams = _validate.boolean(streams, "streams")
    unknown = sorted(set(detect_kwargs) - set(keywords))
    if unknown:
        raise TypeError(f"detect_video got unknown keyword argument(s) {unknown}; "
                        f"{type(detector).__name__}.detect takes {list(keywords)}")
    import portcv

    probe = np.zeros((1, 1, 3) if detect_kwargs.get("channel_axis") == -1 else (1, 1), np.uint8)
    with portcv.using("numpy"):  # check the options now (a 1x1 image is smaller than any window: no work)
        detector.detect(probe, **detect_kwargs)
    return VideoDetections(detector, frames, dict(detect_kwargs), streams=streams)
