"""``portcv motion VIDEO|synthetic``."""

from __future__ import annotations

from typing import Any, Iterator

import numpy as np

from .. import _validate
from ..video import VideoError, VideoWriter, fps_statistics, iter_frames, run_motion
from ..video import video_fps
from ._cluster import add_cluster_options, run_on_cluster, sources
from ._common import (
    DECODE_AHEAD,
    DECODERS,
    backend_names,
    non_negative_int,
    parse_size,
    positive_float,
    positive_int,
    print_table,
    progress_total,
    with_progress,
)


def _parse_grid(text: str) -> tuple[int, int]:
    import argparse

    try:
        rows, cols = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"grid must look like 6x10 (rows x cols), got {text!r}") from None
    return rows, cols


def _add_motion_command(sub: Any) -> None:
    """Register ``portcv motion`` on the CLI's subparsers."""

    p = sub.add_parser(
        "motion",
        help="edge-based motion detection on a video file (or a generated one): annotated video + FPS statistics",
        description="Run Del Vecchio et al.'s motion detector frame by frame, draw the motion cells over the "
        "frames, and print the paper's Table VII frame-rate statistics per backend.",
    )
    p.add_argument("source", nargs="+",
                   help="a video file, or 'synthetic' for generated moving shapes over sensor noise; several files "
                        "with --cluster")
    p.add_argument("--backend", default="numpy", help="backend, or a comma-separated list to compare (default numpy)")
    p.add_argument("--out", default=None, help="write the annotated video here, .mp4, .mkv, ... (default: none)")
    p.add_argument("--frames", type=positive_int, default=None, help="process at most N frames (default: the whole file; synthetic: 60)")
    p.add_argument("--size", type=parse_size, default=(640, 480), help="synthetic frame size WIDTHxHEIGHT (default 640x480)")
    p.add_argument("--seed", type=non_negative_int, default=0, help="seed of the synthetic video, >= 0 (default 0)")
    p.add_argument("--fps", type=positive_float, default=None, help="frame rate of --out, > 0 (default: the source's, or 30)")
    p.add_argument("--t-low", type=float, default=70, help="low gradient threshold of the edge detector (default 70)")
    p.add_argument("--t-high", type=float, default=80, help="high gradient threshold of the edge detector (default 80)")
    p.add_argument("--alpha", type=int, default=2, help="selective-thresholding apron of the edge detector (default 2)")
    p.add_argument("--beta", type=int, default=12, help="movement tolerance in pixels (default 12)")
    p.add_argument("--grid", type=_parse_grid, default=(6, 10), help="density cells ROWSxCOLS (default 6x10)")
    p.add_argument("--gamma", type=float, default=0.01, help="motion threshold: fraction of a cell (default 0.01)")
    p.add_argument("--variant", default="pseudocode", help="'pseudocode' (default) or 'listing'")
    p.add_argument("--thickness", type=int, default=2, help="outline width of the drawn motion cells (default 2)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_cluster_options(p)
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

    names = backend_names(args.backend, "--backend")  # a typo fails now, not inside a cluster's workers
    detector = _detector_args(args)
    portcv.motion.MotionDetector(**detector)  # the parameters, checked before a long run or a cluster
    thickness = _validate.integer(args.thickness, "--thickness", low=1, high=64)
    if sources(args):
        import portcv.distributed as pdist

        return run_on_cluster(args, pdist.motion(**detector), "motion")
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

        decoders = ["generated frames"]
        fps = args.fps or 30.0
        label = f"synthetic {width}x{height}, {total} frames, seed {args.seed}"
    else:
        first = next(iter_frames(args.source, frames=1))  # a clear error now for an unreadable file
        total = progress_total(args.source, args.frames)

        decoders = []

        def source() -> Iterator[np.ndarray]:  # called inside the backend: "auto" picks NVDEC for a GPU one
            reader = iter_frames(args.source, frames=args.frames, prefetch=DECODE_AHEAD)
            decoders.append(DECODERS[reader.decoder])
            return reader

        fps = args.fps or video_fps(args.source)
        label = f"{args.source} ({first.shape[1]}x{first.shape[0]})"

    rows = []
    cells: list[int] = []  # motion cells of each frame pair (first backend: all backends agree bit for bit)
    for k, name in enumerate(names):
        writer = VideoWriter(args.out, fps=fps) if args.out is not None and k == 0 else None

        def keep(frame: np.ndarray, result: Any, writer: Any = writer, count: bool = k == 0) -> None:
            if result is not None and count:
                cells.append(int(np.count_nonzero(portcv.to_numpy(result.regions))))
            if writer is None:
                return
            frame = portcv.to_numpy(frame)  # a GPU-decoded frame comes to the host to be drawn and written
            if result is not None:
                with portcv.using("numpy"):
                    frame = portcv.motion.draw_regions(frame, result.regions, variant=args.variant, thickness=thickness)
            writer.write(frame)

        with portcv.using(name):
            frames = source()
        frames = with_progress(frames, total=total, desc=f"motion [{name}]", enabled=not args.no_progress)
        try:
            times = run_motion(frames, backend=name, detector=detector, on_result=keep)
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
        rows.append((name, portcv.backends.get(name).device, decoders[-1], stats))

    print(f"portcv motion: {label}; beta={args.beta}, grid={args.grid[0]}x{args.grid[1]}, gamma={args.gamma}, "
          f"variant={args.variant}")
    print(motion_summary(cells, args.grid))
    print("FPS per frame pair (Del Vecchio et al.'s Table VII):")
    print_table(("backend", "device", "decoder", "pairs", "average", "median", "min", "max", "std"), [
        (name, device, decoder, str(s["pairs"])) + tuple(f"{s[key]:.2f}" for key in ("average", "median", "min", "max", "std"))
        for name, device, decoder, s in rows
    ])
    return 0


def motion_summary(cells: list[int], grid: tuple[int, int], shown: int = 60) -> str:
    """Motion cells per frame pair and a summary line, so that a run that found nothing says so."""
    total = grid[0] * grid[1]
    per_pair = " ".join(map(str, cells[:shown])) + (f" ... ({len(cells) - shown} more)" if len(cells) > shown else "")
    moving = sum(1 for c in cells if c)
    lines = [f"motion cells per frame pair (of {total}): {per_pair}"]
    if moving:
        lines.append(f"motion in {moving} of {len(cells)} frame pairs, at most {max(cells)} cells")
    else:
        lines.append(f"no motion detected in any of the {len(cells)} frame pairs; for a real video try lower "
                     "--t-low/--t-high (edge thresholds), a smaller --gamma or a larger --beta")
    return "\n".join(lines)
