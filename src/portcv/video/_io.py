"""Video files through PyAV (FFmpeg): the writer, the frame rate, the errors (``_reader.py`` reads).

PyAV directly, not imageio's PyAV plugin: that plugin runs a full ``gc.collect()`` each time a
file is closed, seconds a file in a process holding many objects (a JAX worker, say). A file
being written is a hidden sibling until it is complete, then moved into place: an existing file
of that name is never lost to a failed or interrupted write."""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from .. import _validate


class VideoError(ValueError):
    """A video file cannot be read or written (missing, not a video, unsupported, no PyAV)."""


def _av() -> Any:
    try:
        import av
    except ImportError as exc:
        raise VideoError(f"video files need PyAV ({exc}); pip install 'portcv[io]'") from None
    return av


def _video_path(path: Any) -> Path:
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a file path (str or os.PathLike), got {type(path).__name__}")
    return Path(path)


def frame_table(path: Any) -> tuple[list[int], list[int]]:
    """Demux only: every frame's timestamp in presentation order, and the keyframes' indices.

    Reading the packets without decoding them is fast; the readers seek with it (to the keyframe
    at or before a start frame), and ``portcv.distributed`` splits files at its keyframes.

    Parameters
    ----------
    path : str or os.PathLike
        The video file.

    Returns
    -------
    (list of int, list of int)
        The presentation timestamps of every frame in display order (in the stream's time base),
        and the display-order indices of the keyframes.

    Raises
    ------
    portcv.video.VideoError
        The file is missing, not a video, has no video stream, or cannot be demuxed (PyAV's
        errors are wrapped, naming the path).

    Examples
    --------
    >>> import tempfile, os, portcv
    >>> folder = tempfile.TemporaryDirectory()
    >>> path = os.path.join(folder.name, "clip.mp4")
    >>> portcv.video.write_video(path, portcv.data.moving_shapes(3, 48, 64), fps=10)
    3
    >>> times, keyframes = portcv.video.frame_table(path)
    >>> len(times), keyframes[0]
    (3, 0)
    >>> folder.cleanup()
    """
    path = str(_video_path(path))
    av = _av()
    if not os.path.isfile(path):
        raise VideoError(f"cannot read video {path!r}: no such file")
    try:
        with av.open(path) as container:
            if not container.streams.video:
                raise VideoError(f"cannot read video {path!r}: it has no video stream")
            stream = container.streams.video[0]
            pts, keys = [], []
            for packet in container.demux(stream):
                if packet.pts is None:  # the flush packet
                    continue
                pts.append(packet.pts)
                keys.append(bool(packet.is_keyframe))
    except VideoError:
        raise
    except Exception as exc:  # FFmpeg's errors: not a video, truncated, unknown container
        raise VideoError(f"cannot read video {path!r}: {type(exc).__name__}: {exc}") from None
    order = sorted(range(len(pts)), key=pts.__getitem__)
    rank = {i: r for r, i in enumerate(order)}
    return [pts[i] for i in order], sorted(rank[i] for i, k in enumerate(keys) if k)



#: The largest frame rate a file is written with (frames per second).
MAX_FPS = 1e6


def video_fps(path: Any, *, default: float = 30.0) -> float:
    """The frame rate stored in a video file's metadata, or ``default`` where it has none.

    Parameters
    ----------
    path : str or os.PathLike
        The video file.
    default : float
        Returned when the file's metadata has no usable rate (missing, zero or not finite); a
        positive finite number.

    Raises
    ------
    VideoError
        ``path`` is not a file, or not a video file PyAV can open.

    Returns
    -------
    float
        Frames per second.

    Examples
    --------
    >>> import tempfile, os, portcv
    >>> folder = tempfile.TemporaryDirectory()
    >>> path = os.path.join(folder.name, "clip.mp4")
    >>> portcv.video.write_video(path, portcv.data.moving_shapes(2, 48, 64), fps=12)
    2
    >>> portcv.video.video_fps(path)
    12.0
    >>> folder.cleanup()
    """
    default = _validate.real(default, "default", positive=True, high=MAX_FPS)
    path = _video_path(path)
    if not path.is_file():
        raise VideoError(f"cannot read video {str(path)!r}: no such file")
    av = _av()
    try:
        with av.open(str(path)) as container:
            streams = container.streams.video
            rate = streams[0].guessed_rate if streams else None
    except Exception as exc:  # noqa: BLE001 - PyAV's errors for what is not a video file
        raise VideoError(f"cannot read video {str(path)!r}: {type(exc).__name__}: {exc}") from None
    if not streams:
        raise VideoError(f"cannot read video {str(path)!r}: it has no video stream")
    fps = float(rate) if rate else default
    return fps if math.isfinite(fps) and fps > 0 else default


def _codec(av: Any, height: int, width: int) -> str:
    # H.264 (yuv420p) needs even sizes; MPEG-4 part 2 takes any size. Both ship with PyAV's wheels.
    if height % 2 == 0 and width % 2 == 0 and "libx264" in av.codecs_available:
        return "libx264"
    return "mpeg4"


class VideoWriter:
    """Encode frames into a video file one at a time (a context manager); see :func:`write_video`.

    Examples
    --------
    >>> import tempfile, os, portcv
    >>> folder = tempfile.TemporaryDirectory()
    >>> path = os.path.join(folder.name, "clip.mp4")
    >>> with portcv.video.VideoWriter(path, fps=10) as out:
    ...     for frame in portcv.data.moving_shapes(3, 48, 64):
    ...         out.write(frame)
    >>> out.count
    3
    >>> folder.cleanup()
    """

    def __init__(self, path: Any, *, fps: float = 30.0, codec: str | None = None) -> None:
        self.path = _video_path(path)
        # PyAV keeps the rate as a fraction of C longs: past about 1e11 it overflows mid-write.
        self.fps = _validate.real(fps, "fps", positive=True, high=MAX_FPS)
        if codec is not None and (not isinstance(codec, str) or not codec):
            raise TypeError(f"codec must be an FFmpeg encoder name or None, got {codec!r}")
        self.codec = codec
        self.count = 0
        self._shape: tuple | None = None
        self._container: Any = None
        self._stream: Any = None
        self._partial: Path | None = None
        self._av = _av()

    def write(self, frame: Any) -> None:
        """Append one (H, W, 3) RGB or (H, W) gray uint8 frame (any backend's array)."""
        from ..backends import to_numpy

        f = np.asarray(to_numpy(frame))
        if f.dtype != np.uint8 or f.ndim not in (2, 3) or (f.ndim == 3 and f.shape[-1] != 3):
            raise ValueError(f"frames must be (H, W, 3) or (H, W) uint8, got {f.dtype} {f.shape}")
        if f.ndim == 2:
            f = np.repeat(f[..., None], 3, axis=-1)
        if self._shape is not None and f.shape != self._shape:
            raise ValueError(f"every frame must have shape {self._shape}, got {f.shape}")
        av = self._av
        try:
            if self._container is None:
                self._open(f.shape)
            picture = av.VideoFrame.from_ndarray(np.ascontiguousarray(f), format="rgb24")
            picture.pts = self.count
            for packet in self._stream.encode(picture):  # converted to the encoder's pixel format
                self._container.mux(packet)
        except Exception as exc:  # FFmpeg's errors: unknown container or codec, unwritable path
            self._abandon()
            raise VideoError(f"cannot write video {str(self.path)!r}: {type(exc).__name__}: {exc}") from None
        self.count += 1

    def _open(self, shape: tuple) -> None:
        import tempfile
        from fractions import Fraction

        self.path.parent.mkdir(parents=True, exist_ok=True)
        # The same folder (so the final move is a rename) and the same suffix (FFmpeg picks the
        # container from it); hidden and named as unfinished.
        handle, name = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.stem}.portcv-unfinished-",
                                        suffix=self.path.suffix)
        os.close(handle)
        self._partial = Path(name)
        self._container = self._av.open(name, "w")
        rate = Fraction(self.fps).limit_denominator(65535)
        self._stream = self._container.add_stream(self.codec or _codec(self._av, shape[0], shape[1]), rate=rate)
        self._stream.width, self._stream.height = shape[1], shape[0]
        self._stream.time_base = 1 / rate
        self._shape = shape

    def close(self) -> None:
        """Flush the encoder, close the file and move it into place (replacing a file of that name)."""
        if self._container is None:
            return
        try:
            for packet in self._stream.encode():  # flush
                self._container.mux(packet)
            self._container.close()
            self._container = None
            os.replace(self._partial, self.path)
        except Exception as exc:  # noqa: BLE001
            self._abandon()
            raise VideoError(f"cannot write video {str(self.path)!r}: {type(exc).__name__}: {exc}") from None
        self._partial = None

    def _abandon(self) -> None:
        """Close and delete the unfinished file; a file already at ``path`` is left as it was."""
        container, self._container = self._container, None
        if container is not None:
            try:
                container.close()
            except Exception:  # noqa: BLE001 - already failing
                pass
        if self._partial is not None:
            self._partial.unlink(missing_ok=True)
            self._partial = None

    def __enter__(self) -> "VideoWriter":
        return self

    def __exit__(self, exc_type: Any, *rest: Any) -> None:
        if exc_type is None:
            self.close()
        else:
            self._abandon()


def write_video(path: Any, frames: Iterable[Any], *, fps: float = 30.0, codec: str | None = None) -> int:
    """Encode frames into a video file (``.mp4``, ``.mkv``, ...); returns the number of frames written.

    Parameters
    ----------
    path : str or Path
        Output file; its folder is created. The container follows the extension.
    frames : iterable of (H, W, 3) or (H, W) uint8 arrays
        RGB or gray frames of one size, any backend (moved to the host one by one).
    fps : float
        Frame rate stored in the file (> 0, at most 1e6).
    codec : str, optional
        An FFmpeg encoder name. Default: ``libx264`` for even frame sizes, else ``mpeg4``.

    Examples
    --------
    >>> import tempfile, os, portcv
    >>> folder = tempfile.TemporaryDirectory()
    >>> path = os.path.join(folder.name, "clip.mp4")
    >>> portcv.video.write_video(path, portcv.data.moving_shapes(2, 48, 64), fps=10)
    2
    >>> folder.cleanup()
    """
    with VideoWriter(path, fps=fps, codec=codec) as out:
        for frame in frames:
            out.write(frame)
    return out.count
