"""The ``portcv`` command line."""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

import portcv


def _parse_size(text: str) -> tuple[int, int]:
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"size must look like 1920x1080, got {text!r}") from None
    if w < 1 or h < 1 or w * h > 8192 * 8192:
        raise argparse.ArgumentTypeError(f"size must be between 1x1 and 8192x8192 pixels, got {text!r}")
    return w, h


def _time_calls(b: portcv.Backend, fn: Callable[[], Any], repeat: int) -> tuple[float, list[float], Any]:
    """First call (includes compilation) and ``repeat`` timed calls, each waited for on the device."""
    t0 = time.perf_counter()
    out = b.block(fn())
    first = time.perf_counter() - t0
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = b.block(fn())
        times.append(time.perf_counter() - t0)
    return first, times, out


def demo(args: argparse.Namespace) -> int:
    """gray + Gaussian blur on every available backend; check bit-equality; time; write a PNG."""
    width, height = args.size
    rgb = portcv.data.synthetic_rgb(height, width, seed=args.seed)
    names = args.backends.split(",") if args.backends else portcv.backends.registered_backends()

    def pipeline(image: Any) -> Any:
        gray = portcv.color.rgb_to_gray(image)
        return portcv.filters.gaussian_blur(gray, ksize=args.ksize, sigma=args.sigma)

    print(f"portcv {portcv.__version__} demo: rgb_to_gray + gaussian_blur(ksize={args.ksize}, sigma={args.sigma}) "
          f"on a {width}x{height} synthetic image, {args.repeat} timed runs per backend")
    rows, reference, failures = [], None, 0
    for name in names:
        try:
            b = portcv.backends.get(name)
        except (portcv.BackendUnavailableError, ValueError) as exc:
            rows.append((name, "-", "-", "-", f"skipped: {str(exc).split(';')[0]}"))
            continue
        with portcv.using(name):
            image = portcv.asarray(rgb)
            b.block(image)
            first, times, out = _time_calls(b, lambda: pipeline(image), args.repeat)
        result = portcv.to_numpy(out)
        if reference is None:
            reference, verdict = result, "reference"
        else:
            same = result.dtype == reference.dtype and np.array_equal(result, reference)
            verdict = "bit-exact" if same else f"DIFFERS in {int((result != reference).sum())} pixels"
            failures += not same
        rows.append((name, b.device, f"{first * 1e3:.1f}", f"{statistics.median(times) * 1e3:.2f}", verdict))
    header = ("backend", "device", "first call ms", "median ms", "vs first backend")
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
    for row in [header] + rows:
        print("  ".join(str(v).ljust(w) for v, w in zip(row, widths)).rstrip())
    if reference is not None and args.out:
        _write_png(Path(args.out), reference)
        print(f"wrote {args.out}")
    return 1 if failures else 0


def _write_png(path: Path, image: np.ndarray) -> None:
    try:
        import imageio.v3 as iio
    except ImportError:
        raise SystemExit("writing PNG files needs imageio: pip install 'portcv[io]'") from None
    path.parent.mkdir(parents=True, exist_ok=True)
    iio.imwrite(path, image)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="portcv", description="portcv: computer vision bit-exact on NumPy, CuPy and JAX")
    parser.add_argument("--version", action="version", version=f"portcv {portcv.__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("demo", help="run gray + blur on every backend, check they agree, time them")
    p.add_argument("--size", type=_parse_size, default=(1920, 1080), help="WIDTHxHEIGHT (default 1920x1080)")
    p.add_argument("--backends", default=None, help="comma-separated (default: every registered backend; unavailable ones are listed as skipped)")
    p.add_argument("--ksize", type=int, default=5)
    p.add_argument("--sigma", type=float, default=1.2)
    p.add_argument("--repeat", type=int, default=5, help="timed runs per backend")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="portcv_demo.png", help="output PNG (empty to skip)")
    p.set_defaults(func=demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, TypeError) as exc:
        print(f"portcv {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
