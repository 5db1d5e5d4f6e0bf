"""``portcv faces IMAGE_OR_VIDEO``: cascade face detection from the command line.

An image (PNG, JPEG, ... read with imageio) gets its boxes printed and, with ``--out``, drawn
(:func:`portcv.draw.boxes`); a video (read with PyAV through :mod:`portcv.video`) is detected
frame by frame with :func:`portcv.detect.detect_video` (CUDA streams on CuPy), shows a progress
bar, can be written annotated with ``--out``, and ends with Del Vecchio et al.'s Table VII-style
frame-rate summary (:func:`portcv.video.fps_statistics`).
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from ._cluster import add_cluster_options, run_on_cluster, sources
from ._common import DECODE_AHEAD, DECODERS, backend_names, positive_float, positive_int

#: File name endings read as still images; everything else is opened as a video.
IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tif", ".tiff", ".webp", ".pgm", ".ppm", ".pnm"}
DEFAULT_CASCADE = "haarcascade_frontalface_default.xml"
#: ``--detector cascade``'s defaults: OpenCV's face-detection tutorial's values (``detectMultiScale``'s
#: own are 3 and no minimum size). ``--detector mct`` takes :meth:`portcv.detect.MCTDetector.detect`'s,
#: read from its signature (the thesis's).
CASCADE_DEFAULTS = {"cascade": DEFAULT_CASCADE, "scale_factor": 1.1, "min_neighbors": 5, "min_size": (30, 30)}
MCT_CASCADE = "mct_frontalface_24.npz"


class _CommandError(Exception):
    """A user error: printed as ``portcv faces: error: ...``, exit code 2."""


def _parse_min_size(text: str) -> tuple[int, int]:
    try:
        parts = [int(v) for v in text.lower().split("x")]
    except ValueError:
        parts = []
    if len(parts) == 1:
        parts = parts * 2
    if len(parts) != 2 or min(parts) < 0:
        raise argparse.ArgumentTypeError(f"min size must be a pixel count like 30 or WIDTHxHEIGHT like 30x40, "
                                         f"got {text!r}")
    return parts[0], parts[1]




def _add_faces_command(sub: Any) -> None:
    """Register ``portcv faces`` on the CLI's subparsers."""
    p = sub.add_parser(
        "faces",
        help="cascade face detection (OpenCV's trained cascades) on an image or a video: boxes, annotated output, FPS",
        description="Detect faces (or any OpenCV cascade's objects) as cv2.CascadeClassifier.detectMultiScale "
        "does, on the chosen backend. An image: print the boxes. A video: progress bar and per-frame timing "
        "statistics. --out writes the input with the boxes drawn.",
    )
    p.add_argument("source", nargs="+",
                   help="an image (.png, .jpg, ...) or a video file (.mp4, .mkv, ...); several videos with --cluster")
    p.add_argument("--detector", choices=("cascade", "mct"), default="cascade",
                   help="cascade: an OpenCV cascade (default); mct: portcv's MCT detector (Tek's thesis) with "
                   "its own trained cascade, scale 1.15 by default")
    p.add_argument("--cascade", default=None,
                   help=f"a cascade XML path, or a name in cv2.data.haarcascades (default {DEFAULT_CASCADE}); "
                   "with --detector mct an MCT .npz (default: the bundled mct_frontalface_24.npz)")
    p.add_argument("--backend", default="numpy", help="numpy (default), cupy or jax")
    p.add_argument("--scale-factor", type=float, default=None,
                   help="pyramid scale step, > 1 (default 1.1; 1.15 with --detector mct)")
    p.add_argument("--min-neighbors", type=int, default=None,
                   help="candidates a box needs (default 5; 3 with --detector mct)")
    p.add_argument("--min-size", type=_parse_min_size, default=None,
                   help="smallest object: 30 or WIDTHxHEIGHT (default 30; 24 with --detector mct)")
    p.add_argument("--thickness", type=int, default=2, help="outline width of the drawn boxes (default 2)")
    p.add_argument("--out", default=None, help="write the annotated image (.png, .jpg) or video (.mp4, .mkv) here (default: none)")
    p.add_argument("--frames", type=positive_int, default=None, help="video: process at most N frames (default: all)")
    p.add_argument("--fps", type=positive_float, default=None, help="video: frame rate of --out, > 0 (default: the source's)")
    p.add_argument("--no-progress", action="store_true", help="video: no progress bar")
    add_cluster_options(p)
    p.set_defaults(func=_faces_command)


def _detector_defaults(args: argparse.Namespace) -> bool:
    """Fill the options left out with the chosen detector's defaults; whether it is the MCT detector.

    An option given on the command line always wins.
    """
    mct = getattr(args, "detector", "cascade") == "mct"
    defaults = _mct_defaults() if mct else CASCADE_DEFAULTS
    for name, value in defaults.items():
        if getattr(args, name, None) is None:
            setattr(args, name, value)
    return mct


def _mct_defaults() -> dict[str, Any]:
    import inspect

    from ..detect import MCTDetector

    signature = inspect.signature(MCTDetector.detect).parameters
    defaults = {name: signature[name].default for name in ("scale_factor", "min_neighbors", "min_size")}
    return {"cascade": MCT_CASCADE, **defaults}


def _faces_command(args: argparse.Namespace) -> int:
    backend_names(args.backend, "--backend", single=True)  # a typo fails now, not inside a cluster's workers
    mct = _detector_defaults(args)
    try:
        if sources(args):
            import portcv.distributed as pdist

            _load_detector(args, mct)  # a bad cascade or option fails here, not once per file on the workers
            spec = pdist.faces(args.cascade, scale_factor=args.scale_factor, min_neighbors=args.min_neighbors,
                               min_size=args.min_size)
            return run_on_cluster(args, spec, "faces")
        return _run(args, mct)
    except _CommandError as exc:
        print(f"portcv faces: error: {exc}", file=sys.stderr)
        return 2


def _load_detector(args: argparse.Namespace, mct: bool) -> tuple[Any, dict[str, Any]]:
    """The detector ``--detector``/``--cascade`` name and its checked ``detect`` options."""
    import portcv

    try:
        if mct:
            detector = portcv.detect.MCTDetector(portcv.detect.load_mct_cascade(args.cascade))
        else:
            detector = portcv.detect.CascadeDetector.from_opencv(args.cascade)
    except FileNotFoundError as exc:
        raise _CommandError(f"--cascade: {exc}") from None
    except ValueError as exc:
        raise _CommandError(f"--cascade {args.cascade!r}: {exc}") from None
    params = {"scale_factor": args.scale_factor, "min_neighbors": args.min_neighbors, "min_size": args.min_size}
    try:
        with portcv.using("numpy"):  # the options, checked before any decoding
            detector.detect(np.zeros((1, 1), np.uint8), **params)
    except (ValueError, TypeError) as exc:
        raise _CommandError(str(exc).replace("scale_factor", "--scale-factor").replace(
            "min_neighbors", "--min-neighbors").replace("min_size", "--min-size")) from None
    return detector, params


def _run(args: argparse.Namespace, mct: bool) -> int:
    import portcv

    from .. import _validate

    source = Path(args.source)
    if not source.is_file():
        raise _CommandError(f"cannot read {str(source)!r}: no such file")
    try:
        b = portcv.backends.get(args.backend)
    except (portcv.BackendUnavailableError, ValueError, TypeError) as exc:
        raise _CommandError(f"--backend: {exc}") from None
    detector, params = _load_detector(args, mct)
    try:
        thickness = _validate.integer(args.thickness, "--thickness", low=1, high=255)
    except (ValueError, TypeError) as exc:
        raise _CommandError(str(exc)) from None
    is_image = source.suffix.lower() in IMAGE_SUFFIXES
    if args.out is not None:
        out_is_image = Path(args.out).suffix.lower() in IMAGE_SUFFIXES
        if out_is_image != is_image:
            want = "an image file (.png, .jpg, ...)" if is_image else "a video file (.mp4, .mkv, ...)"
            raise _CommandError(f"--out {args.out!r}: the input is {'an image' if is_image else 'a video'}, "
                                f"so --out must be {want}")
    label = f"{args.cascade}, scale {args.scale_factor}, min neighbours {args.min_neighbors}, " \
            f"min size {args.min_size[0]}x{args.min_size[1]}"
    if is_image:
        return _image(source, args, b, detector, params, thickness, label)
    return _video(source, args, b, detector, params, thickness, label)


def _read_image(path: Path) -> np.ndarray:
    try:
        import imageio.v3 as iio
    except ImportError:
        raise _CommandError("reading images needs imageio: pip install 'portcv[io]'") from None
    try:
        image = np.asarray(iio.imread(path))
    except Exception as exc:  # noqa: BLE001 - imageio raises many kinds for a bad file
        raise _CommandError(f"cannot read image {str(path)!r}: {type(exc).__name__}: {exc}") from None
    if image.dtype != np.uint8:
        raise _CommandError(f"image {str(path)!r} has {image.dtype} pixels; 8-bit images only")
    if image.ndim == 3 and image.shape[-1] == 1:
        image = image[..., 0]
    if not (image.ndim == 2 or (image.ndim == 3 and image.shape[-1] in (3, 4))):
        raise _CommandError(f"image {str(path)!r} has shape {image.shape}; expected gray, RGB or RGBA")
    return image


def _write_image(path: Path, image: np.ndarray) -> None:
    import imageio.v3 as iio

    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        iio.imwrite(path, image)
    except Exception as exc:  # noqa: BLE001
        raise _CommandError(f"cannot write {str(path)!r}: {type(exc).__name__}: {exc}") from None


def _draw(frame: np.ndarray, boxes: np.ndarray, thickness: int) -> np.ndarray:
    import portcv

    with portcv.using("numpy"):  # a GPU-decoded frame comes to the host to be drawn and written
        return portcv.to_numpy(portcv.draw.boxes(portcv.to_numpy(frame), boxes, thickness=thickness))


def _image(source: Path, args: argparse.Namespace, b: Any, detector: Any, params: dict, thickness: int,
           label: str) -> int:
    import portcv

    image = _read_image(source)
    with portcv.using(b.name):
        t0 = time.perf_counter()
        boxes, neighbours = detector.detect(portcv.asarray(image), **params)
        seconds = time.perf_counter() - t0
    n = len(boxes)
    print(f"portcv faces: {source} ({image.shape[1]}x{image.shape[0]}), {label}, backend {b.name}: "
          f"{n} {'box' if n == 1 else 'boxes'} in {seconds * 1e3:.1f} ms"
          + (" (first call, compilation included)" if b.first_call_compiles else ""))
    if n:
        header = ("x", "y", "w", "h", "neighbours")
        rows = [header] + [tuple(str(int(v)) for v in (*box, k)) for box, k in zip(boxes, neighbours)]
        widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
        for r in rows:
            print("  " + "  ".join(v.rjust(w) for v, w in zip(r, widths)))
    if args.out is not None:
        _write_image(Path(args.out), _draw(image, boxes, thickness))
        print(f"wrote {args.out}")
    return 0


def _video(source: Path, args: argparse.Namespace, b: Any, detector: Any, params: dict, thickness: int,
           label: str) -> int:
    import portcv

    from ..video import VideoWriter, iter_frames
    from ..video import video_fps
    from ._common import print_table, progress_total, with_progress

    try:
        first = next(iter_frames(source, frames=1))  # a clear error now for an unreadable file
    except ValueError as exc:  # VideoError
        raise _CommandError(str(exc)) from None
    with portcv.using(b.name):  # warm up (kernel compilation, JAX tracing) outside the timed frames
        detector.detect(portcv.asarray(first), **params)
    with portcv.using(b.name):  # the decoder's "auto": NVDEC into a GPU backend's arrays where it can
        reader = iter_frames(source, frames=args.frames, prefetch=DECODE_AHEAD)
    frames = with_progress(reader, total=progress_total(source, args.frames), desc=f"faces [{b.name}]",
                           enabled=not args.no_progress)
    writer = None
    if args.out is not None:
        fps = args.fps if args.fps is not None else video_fps(source)
        writer = VideoWriter(args.out, fps=fps)
    counts = []
    try:
        with portcv.using(b.name):
            kept: collections.deque = collections.deque()  # detect_video reads a frame ahead

            def keep(frames: Any) -> Any:
                for frame in frames:
                    kept.append(frame)
                    yield frame

            run = portcv.detect.detect_video(detector, keep(frames), **params)
            for _, boxes, _ in run:
                frame = kept.popleft()
                counts.append(len(boxes))
                if writer is not None:
                    writer.write(_draw(frame, boxes, thickness))
    except ValueError as exc:  # a frame that cannot be decoded or written
        if writer is not None:
            writer._abandon()
        raise _CommandError(str(exc)) from None
    except BaseException:
        if writer is not None:
            writer._abandon()
        raise
    if writer is not None:
        writer.close()
        print(f"wrote {args.out} ({writer.count} frames, boxes drawn)")
    stats = run.statistics()
    overlap = "; upload overlapped with CUDA streams" if run.overlapped else ""
    print(f"portcv faces: {source} ({first.shape[1]}x{first.shape[0]}), {label}; {len(counts)} frames, "
          f"boxes per frame min {min(counts)} / mean {sum(counts) / len(counts):.2f} / max {max(counts)}; "
          f"decoded on the {DECODERS[reader.decoder]}; FPS per frame (Del Vecchio et al.'s Table VII){overlap}")
    print_table(("backend", "device", "frames", "average", "median", "min", "max", "std", "throughput"), [
        (b.name, b.device, str(stats["pairs"])) + tuple(
            f"{stats[k]:.2f}" for k in ("average", "median", "min", "max", "std", "throughput"))])
    return 0

