"""``portcv stream serve|view``."""

from __future__ import annotations

import asyncio
from typing import Any, Callable, Iterable

import numpy as np

from .. import codec as _codec
from ..stream import (
    ENCODINGS,
    RAW_1080P30_MBITS,
    StreamClient,
    StreamServer,
    synthetic_source,
)
from ._common import backend_names, non_negative_float, non_negative_int, parse_size, port, positive_float


def _prefilter(spec: str | None, backend: str) -> Callable[[Any], Any] | None:
    """'gaussian:K' (cv2.GaussianBlur with OpenCV's sigma for K) or 'mean:K' (the report's mean)."""
    if not spec:
        return None
    from .. import filters

    name, _, size = spec.partition(":")
    try:
        k = int(size)
    except ValueError:
        raise ValueError(f"--prefilter must look like gaussian:5 or mean:3, got {spec!r}") from None
    if name == "gaussian":
        sigma = 0.3 * ((k - 1) * 0.5 - 1) + 0.8  # OpenCV's sigma for a given ksize
        filters.gaussian_blur(np.zeros((k, k, 3), np.uint8), ksize=k, sigma=sigma)  # checks k now
        return lambda frame: filters.gaussian_blur(frame, ksize=k, sigma=sigma)
    if name == "mean":
        filters.mean_filter(np.zeros((k, k, 3), np.uint8), k)
        return lambda frame: filters.mean_filter(frame, k)
    raise ValueError(f"--prefilter must be gaussian:K or mean:K, got {spec!r}")


def _source(spec: str, size: tuple[int, int], frames: int | None, seed: int) -> tuple[Iterable[np.ndarray], float]:
    if spec == "synthetic":
        w, h = size
        return synthetic_source(h, w, frames=frames, seed=seed), 30.0
    from .. import video
    from ..video import video_fps

    return video.iter_frames(spec, frames=frames), video_fps(spec)


def _serve_command(args: Any) -> int:
    backend_names(args.backend, "--backend", single=True)
    source, source_fps = _source(args.source, args.size, args.frames or None, args.seed)
    fps = source_fps if args.fps is None else args.fps  # paced like the source unless told otherwise
    log = (lambda msg: print(msg, flush=True)) if not args.quiet else None
    server = StreamServer(
        source, host=args.host, port=args.port, backend=args.backend, threshold=args.threshold,
        encoding=args.encoding, keyframe_interval=args.keyframe_interval,
        prefilter=_prefilter(args.prefilter, args.backend), fps=fps, log=log,
    )

    async def main() -> None:
        port = await server.start()
        print(f"serve: listening on {args.host}:{port} (backend {server.encoder.backend_name}, threshold "
              f"{args.threshold}, {args.encoding}, {f'{fps:g} fps' if fps > 0 else 'unpaced'}); "
              "waiting for a client", flush=True)
        await server.run()

    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        print(server.stats.line("serve"))
    else:
        if args.quiet:
            print(server.stats.line("serve"))
    return 0


def _view_command(args: Any) -> int:
    writer = None
    if args.out:
        from .. import video

        writer = video.VideoWriter(args.out, fps=args.fps)

    def on_frame(index: int, frame: np.ndarray) -> None:
        if writer is not None:
            writer.write(frame if frame.ndim == 2 or frame.shape[-1] == 3 else frame[..., :3])

    log = (lambda msg: print(msg, flush=True)) if not args.quiet else None
    client = StreamClient(args.host, args.port, on_frame=on_frame, frames=args.frames or None,
                          reconnect_timeout=args.timeout, log=log)
    try:
        stats = asyncio.run(client.run())
    except KeyboardInterrupt:
        stats = client.stats
    finally:
        if writer is not None:
            writer.close()
    if args.quiet:
        print(stats.line("view"))
    if writer is not None:
        print(f"view: wrote {writer.count} frames to {args.out}")
    raw = stats.raw_bytes
    if raw:
        print(f"view: {stats.wire_bytes} bytes received for {raw} raw bytes ({100 * (1 - stats.wire_bytes / raw):.1f}% "
              f"saved); raw RGB 1080p at 30 fps would need {RAW_1080P30_MBITS} Mbit/s")
    return 0 if stats.frames else 1


def _add_stream_command(sub: Any) -> None:
    """Register ``portcv stream serve`` and ``portcv stream view`` on the CLI's subparsers."""

    p = sub.add_parser("stream", help="frame-delta video streaming over TCP (the Webcam Streaming & Filters report's client and server)")
    ss = p.add_subparsers(dest="stream_command", required=True)
    s = ss.add_parser("serve", help="encode a video (or a generated one) and serve it to TCP clients")
    s.add_argument("--source", default="synthetic", help="a video file, or 'synthetic' (default)")
    s.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")
    s.add_argument("--port", type=port, default=8765, help="TCP port (default 8765)")
    s.add_argument("--backend", default="numpy", help="backend of the encoder: numpy, jax, cupy (default numpy)")
    s.add_argument("--threshold", type=int, default=_codec.DEFAULT_THRESHOLD, help="send bytes changed by more (default 20)")
    s.add_argument("--prefilter", default=None, help="denoise before encoding: gaussian:K or mean:K (default: none)")
    s.add_argument("--encoding", default="compact", choices=tuple(ENCODINGS), help="payload encoding (default compact)")
    s.add_argument("--keyframe-interval", type=int, default=300, help="a keyframe every N frames (default 300)")
    s.add_argument("--fps", type=non_negative_float, default=None,
                   help="pace the source at this rate, 0 for as fast as possible (default: the source's, 30 for synthetic)")
    s.add_argument("--frames", type=non_negative_int, default=0, help="stop after N frames (default 0: the whole source; synthetic never ends)")
    s.add_argument("--size", type=parse_size, default=(640, 480), help="synthetic frame size WIDTHxHEIGHT (default 640x480)")
    s.add_argument("--seed", type=non_negative_int, default=0, help="seed of the synthetic source, >= 0 (default 0)")
    s.add_argument("--quiet", action="store_true", help="no progress lines")
    s.set_defaults(func=_serve_command)
    v = ss.add_parser("view", help="receive a stream, check it, reconstruct the frames (and write a video)")
    v.add_argument("--host", default="127.0.0.1", help="server address (default 127.0.0.1)")
    v.add_argument("--port", type=port, default=8765, help="server TCP port (default 8765)")
    v.add_argument("--out", default=None, help="write the received frames to this video file, .mp4, .mkv, ... (default: none)")
    v.add_argument("--frames", type=non_negative_int, default=0, help="stop after N frames (default 0: until the stream ends)")
    v.add_argument("--fps", type=positive_float, default=30.0, help="frame rate of --out, > 0 (default 30)")
    v.add_argument("--timeout", type=non_negative_float, default=5.0, help="give up after this many seconds without a connection (default 5.0)")
    v.add_argument("--quiet", action="store_true", help="no progress lines")
    v.set_defaults(func=_view_command)
