"""Reading video files frame by frame, on the CPU (PyAV, FFmpeg) or the GPU (NVDEC).

Both decoders count frames the same way: indices in presentation order from the first frame of
the file. The CPU path seeks to the keyframe at or before ``start`` and decodes forward; the GPU
path decodes from the start of the file and drops the frames before ``start``. Either way the
frames are the file's frames ``[start, stop)``, so the two paths give the same frames at the same
indices (the Y planes byte for byte: the codec standards define every decoded sample).

Colour is one conversion on both decoders: the decoded 4:2:0 planes through OpenCV's BT.601
fixed point (:func:`portcv.color.i420_to_rgb` for PyAV's I420 planes,
:func:`portcv.color.nv12_to_rgb` for NVDEC's NV12 surfaces: the same samples in another order),
so equal planes give equal RGB bits. FFmpeg's own RGB conversion (swscale) is not used for
those frames: its arithmetic is not OpenCV's, and it depends on the FFmpeg build.
"""

from __future__ import annotations

import bisect
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from .. import _validate
from ._io import VideoError, _av, _video_path, frame_table

DEVICES = ("cpu", "gpu", "auto")
MAX_PREFETCH = 64
#: 8-bit YUV formats whose first plane is the luma as decoded: gray frames are that plane.
_YUV8 = ("yuv420p", "yuvj420p", "yuv422p", "yuvj422p", "yuv444p", "yuvj444p", "nv12", "nv21", "yuv411p", "yuv410p")
#: Decoded layouts whose colour portcv converts itself (even sizes only), by PyAV's format name:
#: the conversion of each (``yuvj420p`` is ``yuv420p`` tagged full range: the same planes).
_PORTABLE = {"yuv420p": "i420_to_rgb", "yuvj420p": "i420_to_rgb", "nv12": "nv12_to_rgb"}


class VideoReader:
    """Frames of a video file, decoded on the CPU (PyAV) or on the GPU (NVDEC), from any index.

    An iterator (and a context manager) over frames ``[start, stop)``; :meth:`seek` moves to any
    frame index. Colour frames are ``(H, W, 3)`` uint8 RGB, gray frames ``(H, W)`` uint8: the
    decoded luma (Y) plane itself, equal on both decoders.

    Colour is OpenCV's BT.601 conversion of the decoded planes on both decoders, bit for bit
    ``cv2.cvtColor(planes, cv2.COLOR_YUV2RGB_I420)`` (:func:`portcv.color.i420_to_rgb` on the
    CPU, :func:`portcv.color.nv12_to_rgb` on the GPU): the same frames on every decoder,
    backend and machine. It is limited-range BT.601 whatever the file's colour tags say (a
    BT.709 or full-range tag is not applied, as ``cv2.cvtColor`` does not apply it). Frames that
    are not 8-bit 4:2:0 with an even width and height (4:2:2 or 4:4:4 chroma, 10-bit samples,
    RGB codecs, odd sizes, which OpenCV's conversion does not define) are converted on the CPU
    by FFmpeg (PyAV's ``rgb24``), whose bits depend on the FFmpeg build; NVDEC does not take
    them (``device="auto"`` reads them on the CPU).

    Parameters
    ----------
    path : str or Path
        A video file (any container and codec FFmpeg decodes on the CPU; H.264, HEVC and the
        other codecs NVDEC takes on the GPU).
    start : int
        Index of the first frame (presentation order, 0 is the file's first frame).
    stop : int, optional
        Index one past the last frame (default: the end of the file); greater than ``start``.
    gray : bool
        Yield the Y plane instead of RGB.
    device : {"auto", "cpu", "gpu"}
        Which decoder runs. ``"cpu"``: PyAV, frames are NumPy arrays. ``"gpu"``: NVDEC through
        PyNvVideoCodec (``pip install 'portcv[video-gpu]'``), frames are arrays of the active
        backend, which must keep its arrays on a GPU (CuPy, or JAX on a GPU); colour frames are
        converted by :func:`portcv.color.nv12_to_rgb` (OpenCV's NV12 -> RGB, bit for bit).
        ``"auto"`` (default): the GPU when the active backend is a GPU backend and
        PyNvVideoCodec is installed, else the CPU; it also falls back to the CPU when NVDEC
        cannot take the file (its codec or pixel format, or no NVDEC on this machine).
    threads : int
        Decoder threads of the CPU decoder (FFmpeg's); 0 (default): FFmpeg picks (one per
        core). One thread suits many readers running at once (one per worker process). The
        decoded frames do not depend on it. NVDEC ignores it.
    table : (list of int, list of int), optional
        The file's :func:`frame_table`, where the caller has it already: a CPU seek then needs no
        pass over the file to find its keyframe. Default: read when a seek first needs it
        (once per reader).
    prefetch : int
        Decode up to this many frames ahead in a background thread (0, the default: decode in
        the caller's ``next()``), so decoding overlaps the caller's work on the last frame; both
        decoders release the GIL while they decode. The frames and their order do not change.
        At most 64; each frame waiting costs its memory (a 1080p RGB frame is 6 MB).

    Attributes
    ----------
    decoder : str
        ``"cpu"`` or ``"gpu"``: the decoder that runs (``"auto"`` resolved).
    position : int
        Index of the frame the next ``next()`` returns.

    Raises
    ------
    VideoError
        The file is missing or cannot be decoded; ``device="gpu"`` without PyNvVideoCodec, on a
        codec NVDEC does not take, on frames it does not hand out exactly (not NV12, or of an
        odd width or height), or on a machine without NVDEC (a ``ValueError``).
    ValueError
        ``device`` is not one of the three, or ``device="gpu"`` with a host backend (NumPy, JAX
        on the CPU); ``threads`` is negative.
    TypeError
        ``threads`` is not an integer, or ``table`` is not a pair of lists of integers.

    Examples
    --------
    >>> import tempfile, os, portcv
    >>> folder = tempfile.TemporaryDirectory()
    >>> path = os.path.join(folder.name, "clip.mp4")
    >>> portcv.video.write_video(path, portcv.data.moving_shapes(6, 48, 64))
    6
    >>> with portcv.video.VideoReader(path, start=2, gray=True, device="cpu") as reader:
    ...     first = next(reader)
    ...     reader.seek(5)
    ...     last = next(reader)
    >>> first.shape, reader.decoder, reader.position
    ((48, 64), 'cpu', 6)
    >>> folder.cleanup()
    """

    def __init__(self, path: Any, *, start: int = 0, stop: int | None = None, gray: bool = False,
                 device: str = "auto", threads: int = 0, table: tuple[list[int], list[int]] | None = None,
                 prefetch: int = 0) -> None:
        self.path = _video_path(path)
        self.start = _validate.integer(start, "start", low=0)
        self.stop = None if stop is None else _validate.integer(stop, "stop", low=self.start + 1)
        self.gray = _validate.boolean(gray, "gray")
        self.device = _validate.choice(device, "device", DEVICES)
        self.threads = _validate.integer(threads, "threads", low=0)
        self.prefetch = _validate.integer(prefetch, "prefetch", low=0, high=MAX_PREFETCH)
        self._table = _frame_table(table)
        if not self.path.is_file():
            raise VideoError(f"cannot read video {str(self.path)!r}: no such file")
        self.decoder, self._backend = _resolve(self.device)
        self.position = self.start
        self._frames: Iterator[Any] | None = None
        self._fresh = False  # no frame has come from the current decode yet

    def seek(self, index: int) -> None:
        """Make frame ``index`` the next one (at least ``start``, below ``stop``)."""
        index = _validate.integer(index, "index", low=self.start,
                                  high=None if self.stop is None else self.stop - 1)
        if index != self.position or self._frames is None:
            self._close_decode()
            self.position = index

    def __iter__(self) -> "VideoReader":
        return self

    def __next__(self) -> Any:
        if self.stop is not None and self.position >= self.stop:
            self._close_decode()
            raise StopIteration
        if self._frames is None:
            self._frames, self._fresh = self._open(self.position), True
        try:
            frame = next(self._frames)
        except StopIteration:
            self._frames = None
            raise
        except VideoError as exc:
            from ._nvdec import NvdecUnavailable

            if not (isinstance(exc, NvdecUnavailable) and self.device == "auto" and self._fresh):
                raise
            self.decoder, self._backend = "cpu", None  # NVDEC cannot take this file here
            self._frames = self._open(self.position)
            frame = next(self._frames)
        self._fresh = False
        self.position += 1
        return frame

    def _open(self, index: int) -> Iterator[Any]:
        frames = self._decode(index)
        if self.prefetch:
            from ._prefetch import Prefetched

            return Prefetched(frames, self.prefetch)
        return frames

    def _decode(self, index: int) -> Iterator[Any]:
        if self.decoder == "gpu":
            from . import _nvdec

            return _nvdec.frames(self.path, index, self.gray, self._backend)
        if index and self._table is None:
            self._table = frame_table(self.path)
        return _pyav_frames(self.path, index, self.gray, threads=self.threads, table=self._table)

    def _close_decode(self) -> None:
        frames, self._frames = self._frames, None
        if frames is not None:
            frames.close()  # type: ignore[attr-defined]

    def close(self) -> None:
        """Stop decoding and release the file (iteration then starts again at ``position``)."""
        self._close_decode()

    def __enter__(self) -> "VideoReader":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _resolve(device: str) -> tuple[str, Any]:
    """The decoder a ``device`` choice runs on now, and the backend GPU frames belong to."""
    from ..backends import backend
    from . import _nvdec

    if device == "cpu":
        return "cpu", None
    active = backend()
    on_gpu = _nvdec.is_gpu_backend(active)
    if device == "auto":
        return ("gpu", active) if on_gpu and _nvdec.installed() else ("cpu", None)
    if not on_gpu:
        raise ValueError(
            f"device='gpu' decodes into GPU memory, but the active backend {active.name!r} keeps its "
            "arrays on the host: pick a GPU backend (portcv.using('cupy'), or JAX on a GPU), "
            "or decode with device='cpu'")
    return "gpu", active


def _frame_table(table: Any) -> tuple[list[int], list[int]] | None:
    """Check a ``table=`` argument: None, or a pair (timestamps, keyframe indices) of integers."""
    if table is None:
        return None
    if (not isinstance(table, (tuple, list)) or len(table) != 2
            or not all(isinstance(part, (tuple, list)) for part in table)):
        raise TypeError(f"table must be frame_table(path)'s pair of lists (timestamps, keyframes), "
                        f"got {type(table).__name__}")
    times, keys = (list(part) for part in table)
    if not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in times + keys):
        raise TypeError("table must hold integers (frame_table(path)'s timestamps and keyframe indices)")
    return times, keys


def _pyav_frames(path: Path, start: int, gray: bool, *, threads: int = 0,
                 table: tuple[list[int], list[int]] | None = None) -> Iterator[np.ndarray]:
    """Frames ``start, start + 1, ...`` decoded by PyAV: a keyframe seek, then forward."""
    av = _av()
    count = 0
    try:
        with av.open(str(path)) as container:
            if not container.streams.video:
                raise VideoError(f"cannot read video {str(path)!r}: it has no video stream")
            stream = container.streams.video[0]
            stream.thread_count = threads
            stream.thread_type = "AUTO"
            times = None
            if start:
                times = (table or frame_table(path))[0]
                if start >= len(times):
                    raise VideoError(f"cannot read video {str(path)!r} from frame {start}: "
                                     f"it has {len(times)} frames")
                container.seek(times[start], stream=stream, backward=True, any_frame=False)
            index = -1
            for frame in container.decode(stream):
                index = bisect.bisect_left(times, frame.pts) if times is not None else index + 1
                if index < start:
                    continue
                yield _luma(frame) if gray else _rgb(frame)
                count += 1
    except (GeneratorExit, VideoError):
        raise
    except Exception as exc:  # FFmpeg's errors: not a video, truncated, unknown codec
        raise VideoError(f"cannot read video {str(path)!r}: {type(exc).__name__}: {exc}") from None
    if count == 0 and start == 0:
        raise VideoError(f"cannot read video {str(path)!r}: it holds no video frames")


def _rgb(frame: Any) -> np.ndarray:
    """A decoded frame as RGB: OpenCV's conversion of its 8-bit 4:2:0 planes (the GPU path's), or
    FFmpeg's ``rgb24`` for a layout that conversion does not define (other chroma, bit depths,
    odd sizes)."""
    conversion = _PORTABLE.get(frame.format.name)
    if conversion is None or frame.width % 2 or frame.height % 2:
        return frame.to_ndarray(format="rgb24")
    from .. import color
    from ..backends import using

    planes = frame.to_ndarray()  # no format asked: the planes as decoded, packed (3H/2, W), a copy
    with using("numpy"):  # CPU frames are NumPy arrays whatever backend is active
        return getattr(color, conversion)(planes)


def _luma(frame: Any) -> np.ndarray:
    """The decoded Y plane (8-bit YUV frames), or the Y plane of FFmpeg's conversion to yuv420p."""
    if frame.format.name not in _YUV8:
        frame = frame.reformat(format="yuv420p")
    plane = frame.planes[0]
    rows = np.frombuffer(plane, np.uint8).reshape(plane.height, plane.line_size)
    return rows[:, :plane.width].copy()  # the frame's buffer is the decoder's: copy out of it


def iter_frames(path: Any, *, frames: int | None = None, start: int = 0, stop: int | None = None,
                gray: bool = False, device: str = "auto", prefetch: int = 0) -> Iterator[Any]:
    """Decode a video file frame by frame: ``(H, W, 3)`` uint8 RGB, or ``(H, W)`` Y planes.

    Parameters
    ----------
    path : str or Path
        Any container and codec FFmpeg (through PyAV) decodes; on the GPU, the codecs NVDEC takes.
    frames : int, optional
        Stop after this many frames (at least 1).
    start, stop : int, optional
        Frame indices ``[start, stop)`` (presentation order; ``stop`` default: the end).
    gray : bool
        Yield the decoded luma (Y) plane, ``(H, W)`` uint8, instead of RGB.
    device : {"auto", "cpu", "gpu"}
        The decoder: PyAV on the CPU (NumPy frames) or NVDEC on the GPU (arrays of the active
        backend); see :class:`VideoReader`.
    prefetch : int
        Frames decoded ahead in a background thread (default 0); see :class:`VideoReader`.

    Raises
    ------
    VideoError
        The file is missing or cannot be decoded (a ``ValueError``); see :class:`VideoReader`.

    Examples
    --------
    >>> import tempfile, os, portcv
    >>> folder = tempfile.TemporaryDirectory()
    >>> path = os.path.join(folder.name, "clip.mp4")
    >>> portcv.video.write_video(path, portcv.data.moving_shapes(3, 48, 64))
    3
    >>> [f.shape for f in portcv.video.iter_frames(path, frames=2)]
    [(48, 64, 3), (48, 64, 3)]
    >>> [f.shape for f in portcv.video.iter_frames(path, start=1, gray=True, device="cpu")]
    [(48, 64), (48, 64)]
    >>> folder.cleanup()
    """
    if frames is not None:
        frames = _validate.integer(frames, "frames", low=1)
        start = _validate.integer(start, "start", low=0)
        stop = start + frames if stop is None else min(_validate.integer(stop, "stop", low=start + 1), start + frames)
    # Checks and the decoder's choice run now, not at the first next().
    return VideoReader(path, start=start, stop=stop, gray=gray, device=device, prefetch=prefetch)


def read_video(path: Any, *, frames: int | None = None, start: int = 0, stop: int | None = None,
               gray: bool = False, device: str = "auto") -> Any:
    """Decode a whole video file (or frames ``[start, stop)``): ``(T, H, W, 3)`` RGB or ``(T, H, W)`` Y.

    The arguments are :func:`iter_frames`'s; CPU-decoded videos are NumPy arrays, GPU-decoded
    ones arrays of the active backend.

    Examples
    --------
    >>> import tempfile, os, portcv
    >>> folder = tempfile.TemporaryDirectory()
    >>> path = os.path.join(folder.name, "clip.mp4")
    >>> portcv.video.write_video(path, portcv.data.moving_shapes(4, 48, 64))
    4
    >>> portcv.video.read_video(path).shape
    (4, 48, 64, 3)
    >>> portcv.video.read_video(path, stop=2, gray=True).shape
    (2, 48, 64)
    >>> folder.cleanup()
    """
    reader = iter_frames(path, frames=frames, start=start, stop=stop, gray=gray, device=device)
    with reader:
        decoded = list(reader)
    if reader.decoder == "gpu":
        return reader._backend.xp.stack(decoded)
    return np.stack(decoded)
