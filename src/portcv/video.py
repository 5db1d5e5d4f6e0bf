"""Video files in and out, and the real-time motion pipeline of the Rice paper (section V-E).

Frames are read and written with imageio's PyAV plugin (``pip install 'portcv[io]'``); imageio
and PyAV are imported only when a file is opened. :func:`run_motion` feeds frames one at a time
to a :class:`portcv.motion.MotionDetector` on a chosen backend, times every frame pair and
reports the paper's Table VII statistics (:func:`fps_statistics`); ``portcv motion`` is its
command line.
"""

from __future__ import annotations

import math
import statistics
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import numpy as np

from . import _validate

__all__ = ["VideoError", "VideoWriter", "iter_frames", "read_video", "write_video", "fps_statistics", "run_motion"]


class VideoError(ValueError):
    """A video file cannot be read or written (missing, not a video, unsupported, no PyAV)."""


def _imageio() -> Any:
    try:
        import av  # noqa: F401  (imageio's pyav plugin needs it)
        import imageio.v3 as iio
    except ImportError as exc:
        raise VideoError(f"video files need imageio and PyAV ({exc}); pip install 'portcv[io]'") from None
    return iio


def iter_frames(path: Any, *, frames: int | None = None) -> Iterator[np.ndarray]:
    """Decode a video file frame by frame: ``(H, W, 3)`` uint8 RGB NumPy arrays.

    Parameters
    ----------
    path : str or Path
        Any container and codec FFmpeg (through PyAV) decodes.
    frames : int, optional
        Stop after this many frames (at least 1).

    Raises
    ------
    VideoError
        The file is missing or cannot be decoded (a ``ValueError``).

    Examples
    --------
    >>> import tempfile, os, portcv
    >>> path = os.path.join(tempfile.mkdtemp(), "clip.mp4")
    >>> portcv.video.write_video(path, portcv.data.moving_shapes(3, 48, 64))
    3
    >>> [f.shape for f in portcv.video.iter_frames(path, frames=2)]
    [(48, 64, 3), (48, 64, 3)]
    """
    if frames is not None:
        frames = _validate.integer(frames, "frames", low=1)
    path = Path(path)
    if not path.is_file():
        raise VideoError(f"cannot read video {str(path)!r}: no such file")
    iio = _imageio()
    count = 0
    try:
        for frame in iio.imiter(path, plugin="pyav"):
            yield np.asarray(frame)
            count += 1
            if frames is not None and count >= frames:
                return
    except GeneratorExit:
        raise
    except Exception as exc:  # FFmpeg's and imageio's errors: not a video, truncated, unknown codec
        raise VideoError(f"cannot read video {str(path)!r}: {type(exc).__name__}: {exc}") from None
    if count == 0:
        raise VideoError(f"cannot read video {str(path)!r}: it holds no video frames")


def read_video(path: Any, *, frames: int | None = None) -> np.ndarray:
    """Decode a whole video file (or its first ``frames`` frames): ``(T, H, W, 3)`` uint8 RGB.

    Examples
    --------
    >>> import tempfile, os, portcv
    >>> path = os.path.join(tempfile.mkdtemp(), "clip.mp4")
    >>> portcv.video.write_video(path, portcv.data.moving_shapes(4, 48, 64))
    4
    >>> portcv.video.read_video(path).shape
    (4, 48, 64, 3)
    """
    return np.stack(list(iter_frames(path, frames=frames)))


def video_fps(path: Any, default: float = 30.0) -> float:
    """The frame rate stored in a video file's metadata, or ``default``."""
    iio = _imageio()
    try:
        fps = float(iio.immeta(Path(path), plugin="pyav").get("fps", default))
    except Exception:  # noqa: BLE001 - metadata is optional
        return default
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
    >>> path = os.path.join(tempfile.mkdtemp(), "clip.mp4")
    >>> with portcv.video.VideoWriter(path, fps=10) as out:
    ...     for frame in portcv.data.moving_shapes(3, 48, 64):
    ...         out.write(frame)
    >>> out.count
    3
    """

    def __init__(self, path: Any, *, fps: float = 30.0, codec: str | None = None) -> None:
        self.path = Path(path)
        self.fps = _validate.real(fps, "fps", positive=True)
        self.codec = codec
        self.count = 0
        self._shape: tuple | None = None
        self._writer: Any = None
        self._iio = _imageio()

    def write(self, frame: Any) -> None:
        """Append one (H, W, 3) RGB or (H, W) gray uint8 frame (any backend's array)."""
        from .backends import to_numpy

        f = np.asarray(to_numpy(frame))
        if f.dtype != np.uint8 or f.ndim not in (2, 3) or (f.ndim == 3 and f.shape[-1] != 3):
            raise ValueError(f"frames must be (H, W, 3) or (H, W) uint8, got {f.dtype} {f.shape}")
        if f.ndim == 2:
            f = np.repeat(f[..., None], 3, axis=-1)
        try:
            if self._writer is None:
                import av

                self._shape = f.shape
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._writer = self._iio.imopen(self.path, "w", plugin="pyav")
                self._writer.init_video_stream(self.codec or _codec(av, f.shape[0], f.shape[1]), fps=self.fps)
            elif f.shape != self._shape:
                raise ValueError(f"every frame must have shape {self._shape}, got {f.shape}")
            self._writer.write_frame(np.ascontiguousarray(f))
        except ValueError:
            raise
        except Exception as exc:  # FFmpeg's errors: unknown container or codec, unwritable path
            self._abandon()
            raise VideoError(f"cannot write video {str(self.path)!r}: {type(exc).__name__}: {exc}") from None
        self.count += 1

    def close(self) -> None:
        """Flush the encoder and close the file."""
        if self._writer is None:
            return
        writer, self._writer = self._writer, None
        try:
            writer.close()
        except Exception as exc:  # noqa: BLE001
            raise VideoError(f"cannot write video {str(self.path)!r}: {type(exc).__name__}: {exc}") from None

    def _abandon(self) -> None:
        writer, self._writer = self._writer, None
        if writer is not None:
            try:
                writer.close()
            except Exception:  # noqa: BLE001 - already failing
                pass

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
        Frame rate stored in the file (> 0).
    codec : str, optional
        An FFmpeg encoder name. Default: ``libx264`` for even frame sizes, else ``mpeg4``.

    Examples
    --------
    >>> import tempfile, os, portcv
    >>> path = os.path.join(tempfile.mkdtemp(), "clip.mp4")
    >>> portcv.video.write_video(path, portcv.data.moving_shapes(2, 48, 64), fps=10)
    2
    """
    with VideoWriter(path, fps=fps, codec=codec) as out:
        for frame in frames:
            out.write(frame)
    return out.count


def fps_statistics(seconds: Iterable[float]) -> dict[str, float]:
    """The Rice paper's Table VII statistics of per-frame-pair processing times.

    Each pair's frame rate is ``1 / seconds``; the result holds the ``average`` (mean of those
    rates), ``median``, ``min``, ``max`` and ``std`` (population standard deviation) of the
    rates, plus ``pairs`` and ``throughput`` (pairs divided by the total time).

    Examples
    --------
    >>> stats = fps_statistics([0.1, 0.1, 0.05])
    >>> stats["average"], stats["median"], stats["max"], stats["pairs"]
    (13.333333333333334, 10.0, 20.0, 3)
    """
    times = [float(s) for s in seconds]
    if not times:
        raise ValueError("seconds must hold at least one time")
    if any(not math.isfinite(s) or s <= 0 for s in times):
        raise ValueError("seconds must be finite and > 0")
    rates = [1.0 / s for s in times]
    return {
        "average": statistics.fmean(rates),
        "median": statistics.median(rates),
        "min": min(rates),
        "max": max(rates),
        "std": statistics.pstdev(rates),
        "pairs": len(rates),
        "throughput": len(rates) / sum(times),
    }


def run_motion(
    frames: Iterable[Any],
    *,
    backend: str,
    detector: dict[str, Any],
    on_result: Callable[[np.ndarray, Any], None] | None = None,
    warmup: bool = True,
) -> list[float]:
    """Run the motion chain over a stream of host frames on ``backend``; return each pair's seconds.

    Every frame is moved to the device, its edges computed and compared with the previous
    frame's (:class:`portcv.motion.MotionDetector`), and the pair's motion regions copied back
    to the host; a pair's time runs from the decoded host frame to its regions on the host, so
    decoding, drawing and encoding are not counted. ``warmup`` first runs the chain once on a
    copy of the first frame (compiling kernels, tracing JAX) outside the timed loop.

    Parameters
    ----------
    frames : iterable of (H, W) or (H, W, 3) uint8 NumPy arrays
    backend : str
        A portcv backend name (``'numpy'``, ``'cupy'``, ``'jax'``).
    detector : dict
        Keyword arguments of :class:`portcv.motion.MotionDetector` (``t_low``, ``t_high``, ...).
    on_result : callable, optional
        Called as ``on_result(frame, result)`` after every frame (``result`` is None for the
        first), outside the timed region: draw, write, display.
    warmup : bool

    Returns
    -------
    list of float
        Seconds per frame pair (one fewer than the frames).

    Examples
    --------
    >>> import portcv
    >>> video = portcv.data.moving_shapes(4, 48, 64)
    >>> times = portcv.video.run_motion(video, backend="numpy", detector={"t_low": 70, "t_high": 80, "grid": (2, 2)})
    >>> len(times)
    3
    """
    import portcv
    from .motion import MotionDetector

    b = portcv.backends.get(backend)
    times: list[float] = []
    with portcv.using(b.name):
        motion = MotionDetector(**detector)
        first = True
        for frame in frames:
            if first and warmup:  # the same calls as the timed ones, so nothing compiles later
                motion.update(portcv.asarray(frame))
                portcv.to_numpy(motion.update(portcv.asarray(frame)).regions)
                motion.reset()
            first = False
            t0 = time.perf_counter()
            result = motion.update(portcv.asarray(frame))
            if result is not None:
                regions = portcv.to_numpy(result.regions)  # waits for the device
                times.append(time.perf_counter() - t0)
            else:
                regions = None
            if on_result is not None:
                on_result(frame, None if result is None else result._replace(regions=regions))
    return times


# --------------------------------------------------------------------------------------------
# `portcv motion`
# --------------------------------------------------------------------------------------------
def _with_progress(frames: Iterable[Any], *, total: int | None, desc: str, enabled: bool = True) -> Iterable[Any]:
    """``frames`` behind a tqdm progress bar (the CLI commands' bar), unless disabled or tqdm is missing."""
    if not enabled:
        return frames
    try:
        from tqdm import tqdm
    except ImportError:
        return frames
    return tqdm(frames, total=total, desc=desc, unit="frame", leave=False)


def _print_table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> None:
    """The CLI commands' timing table: columns padded to fit, the first two left-aligned."""
    table = [header, *rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    for r in table:
        print("  ".join(v.ljust(w) if i < 2 else v.rjust(w) for i, (v, w) in enumerate(zip(r, widths))).rstrip())


def _parse_grid(text: str) -> tuple[int, int]:
    import argparse

    try:
        rows, cols = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"grid must look like 6x10 (rows x cols), got {text!r}") from None
    return rows, cols


def _add_motion_command(sub: Any) -> None:
    """Register ``portcv motion`` on the CLI's subparsers."""
    from .cli import _parse_size

    p = sub.add_parser(
        "motion",
        help="edge-based motion detection on a video file (or a generated one): annotated video + FPS statistics",
        description="Run the Rice paper's motion detector frame by frame, draw the motion cells over the "
        "frames, and print the paper's Table VII frame-rate statistics per backend.",
    )
    p.add_argument("source", help="a video file, or 'synthetic' for generated moving shapes over sensor noise")
    p.add_argument("--backend", default="numpy", help="backend, or a comma-separated list to compare (default numpy)")
    p.add_argument("--out", default=None, help="write the annotated video here (.mp4, .mkv, ...)")
    p.add_argument("--frames", type=int, default=None, help="process at most N frames (synthetic: default 60)")
    p.add_argument("--size", type=_parse_size, default=(640, 480), help="synthetic frame size WIDTHxHEIGHT (default 640x480)")
    p.add_argument("--seed", type=int, default=0, help="seed of the synthetic video")
    p.add_argument("--fps", type=float, default=None, help="frame rate of --out (default: the source's, or 30)")
    p.add_argument("--t-low", type=float, default=70, help="low gradient threshold of the edge detector")
    p.add_argument("--t-high", type=float, default=80, help="high gradient threshold of the edge detector")
    p.add_argument("--alpha", type=int, default=2, help="selective-thresholding apron of the edge detector")
    p.add_argument("--beta", type=int, default=12, help="movement tolerance in pixels (default 12)")
    p.add_argument("--grid", type=_parse_grid, default=(6, 10), help="density cells ROWSxCOLS (default 6x10)")
    p.add_argument("--gamma", type=float, default=0.01, help="motion threshold: fraction of a cell (default 0.01)")
    p.add_argument("--variant", default="pseudocode", help="'pseudocode' (default) or 'listing'")
    p.add_argument("--thickness", type=int, default=2, help="outline width of the drawn motion cells")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=_motion_command)


def _detector_args(args: Any) -> dict[str, Any]:
    def number(v: float) -> Any:
        return int(v) if float(v).is_integer() else v

    return {
        "t_low": number(args.t_low), "t_high": number(args.t_high), "alpha": args.alpha, "beta": args.beta,
        "grid": args.grid, "gamma": args.gamma, "variant": args.variant,
    }


def _motion_command(args: Any) -> int:
    """``portcv motion SOURCE``: annotated video and Table VII statistics per backend."""
    import sys

    import portcv

    names = [n.strip() for n in args.backend.split(",") if n.strip()]
    if not names:
        raise ValueError("--backend must name at least one backend")
    for name in names:  # fail before decoding anything
        try:
            portcv.backends.get(name)
        except portcv.BackendUnavailableError as exc:
            print(f"portcv motion: error: {exc}", file=sys.stderr)
            return 2
    synthetic = args.source == "synthetic"
    if args.frames is not None and args.frames < 2:
        raise ValueError(f"--frames must be at least 2, got {args.frames}")
    if synthetic:
        width, height = args.size
        total = args.frames or 60
        video = portcv.data.moving_shapes(total, height, width, seed=args.seed)

        def source() -> Iterator[np.ndarray]:
            return iter(video)

        fps = args.fps or 30.0
        label = f"synthetic {width}x{height}, {total} frames, seed {args.seed}"
    else:
        first = next(iter_frames(args.source, frames=1))  # a clear error now for an unreadable file
        total = args.frames

        def source() -> Iterator[np.ndarray]:
            return iter_frames(args.source, frames=args.frames)

        fps = args.fps or video_fps(args.source)
        label = f"{args.source} ({first.shape[1]}x{first.shape[0]})"
    detector = _detector_args(args)
    portcv.motion.MotionDetector(**detector)  # validate the parameters before the long run
    thickness = _validate.integer(args.thickness, "--thickness", low=1, high=64)

    rows = []
    for k, name in enumerate(names):
        writer = VideoWriter(args.out, fps=fps) if args.out is not None and k == 0 else None

        def keep(frame: np.ndarray, result: Any) -> None:
            if result is not None:
                with portcv.using("numpy"):
                    frame = portcv.motion.draw_regions(frame, result.regions, variant=args.variant, thickness=thickness)
            writer.write(frame)

        frames = _with_progress(source(), total=total, desc=f"motion [{name}]", enabled=not args.no_progress)
        try:
            times = run_motion(frames, backend=name, detector=detector, on_result=keep if writer else None)
        except BaseException:
            if writer is not None:
                writer._abandon()
            raise
        if not times:
            raise VideoError(f"{label}: needs at least 2 frames to detect motion")
        if writer is not None:
            writer.close()
            print(f"wrote {args.out} ({writer.count} frames, motion cells outlined)")
        stats = fps_statistics(times)
        rows.append((name, portcv.backends.get(name).device, stats))

    print(f"portcv motion: {label}; beta={args.beta}, grid={args.grid[0]}x{args.grid[1]}, gamma={args.gamma}, "
          f"variant={args.variant}; FPS per frame pair (the Rice paper's Table VII)")
    _print_table(("backend", "device", "pairs", "average", "median", "min", "max", "std"), [
        (name, device, str(s["pairs"])) + tuple(f"{s[key]:.2f}" for key in ("average", "median", "min", "max", "std"))
        for name, device, s in rows
    ])
    return 0
