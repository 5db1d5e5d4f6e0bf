"""``portcv demo``: gray + Gaussian blur on every backend, checked bit-equal, timed, written as a PNG."""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Any

import numpy as np

import portcv

from .. import _timing as timing
from ._common import backend_names, non_negative_int, parse_size, positive_int


def _add_demo_command(sub: Any) -> None:
    p = sub.add_parser("demo", help="run gray + blur on every backend, check they agree, time them")
    p.add_argument("--size", type=parse_size, default=(1920, 1080), help="WIDTHxHEIGHT (default 1920x1080)")
    p.add_argument("--backends", default=None, help="comma-separated (default: every registered backend; unavailable ones are listed as skipped)")
    p.add_argument("--ksize", type=int, default=5, help="Gaussian kernel size, odd (default 5)")
    p.add_argument("--sigma", type=float, default=1.2, help="Gaussian sigma (default 1.2)")
    p.add_argument("--repeat", type=positive_int, default=5, help="timed runs per backend, >= 1 (default 5)")
    p.add_argument("--seed", type=non_negative_int, default=0, help="seed of the synthetic image, >= 0 (default 0)")
    p.add_argument("--out", default="portcv_demo.png", help="output PNG, empty to skip (default portcv_demo.png)")
    p.set_defaults(func=demo)


def demo(args: argparse.Namespace) -> int:
    """gray + Gaussian blur on every available backend; check bit-equality; time; write a PNG."""
    width, height = args.size
    rgb = portcv.data.synthetic_rgb(height, width, seed=args.seed)
    names = backend_names(args.backends, "--backends")

    def pipeline(image: Any) -> Any:
        gray = portcv.color.rgb_to_gray(image)
        return portcv.filters.gaussian_blur(gray, ksize=args.ksize, sigma=args.sigma)

    print(f"portcv {portcv.__version__} demo: rgb_to_gray + gaussian_blur(ksize={args.ksize}, sigma={args.sigma}) "
          f"on a {width}x{height} synthetic image, {args.repeat} timed runs per backend")
    rows, reference, failures = [], None, 0
    for name in names:
        try:
            b = portcv.backends.get(name)
        except portcv.BackendUnavailableError as exc:
            rows.append((name, "-", "-", "-", f"skipped: {str(exc).split(';')[0]}"))
            continue
        with portcv.using(name):
            image = portcv.asarray(rgb)
            b.block(image)
            first, times, out = timing.warm_then_synced_s(lambda: pipeline(image), b.block,
                                                          min_calls=args.repeat, max_calls=args.repeat)
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
    if reference is None:  # nothing ran, so nothing was checked: not a success
        print(f"portcv demo: error: none of the backends asked for can run here ({', '.join(names)})",
              file=sys.stderr)
        return 2
    if args.out:
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
