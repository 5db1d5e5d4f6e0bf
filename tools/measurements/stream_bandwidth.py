"""Bytes per frame of portcv.stream's payload encodings on a generated video (docs/stream.md).

    python -m tools.measure stream-bandwidth [--size 640x480] [--frames 60] [--noise 4] [--prefilters] [--plot PNG]

Every frame after the first keyframe is a delta (no periodic keyframes); the table gives the
mean packet size (header included) per encoding, and the fraction of the raw RGB bytes saved.
"""

from __future__ import annotations

import argparse
import statistics

import numpy as np

from portcv import stream


def measure(frames, encoding, prefilter=None, threshold=20):
    enc = stream.StreamEncoder(threshold=threshold, encoding=encoding, keyframe_interval=10**9, prefilter=prefilter)
    dec = stream.StreamDecoder()
    sizes, counts = [], []
    for f in frames:
        packet = enc.encode(f)
        dec.decode(packet)
        if enc.last_kind == "delta":
            sizes.append(len(packet))
            counts.append(enc.last_count)
    return statistics.mean(sizes), statistics.mean(counts)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", default="640x480")
    ap.add_argument("--frames", type=int, default=60)
    ap.add_argument("--noise", type=float, default=4.0)
    ap.add_argument("--prefilters", action="store_true")
    ap.add_argument("--plot", help="with --prefilters: bar chart of bytes/frame per prefilter (PNG)")
    args = ap.parse_args()
    w, h = (int(v) for v in args.size.split("x"))
    frames = list(stream.synthetic_source(h, w, frames=args.frames, noise=args.noise))
    raw = h * w * 3
    print(f"{args.size}, noise sigma {args.noise}, {args.frames} frames, threshold 20; raw RGB {raw} bytes/frame")
    print("| encoding | changed bytes/frame | bytes/frame | saved vs raw RGB |")
    print("|---|---:|---:|---:|")
    for encoding in stream.ENCODINGS:
        size, count = measure(frames, encoding)
        print(f"| {encoding} | {count:.0f} | {size:.0f} | {100 * (1 - size / raw):.2f} % |")
    if args.prefilters:
        from portcv import filters

        print("\n| prefilter | changed bytes/frame | compact bytes/frame | saved |")
        print("|---|---:|---:|---:|")
        options = [("none", None)]
        options += [(f"mean:{k}", (lambda k: lambda f: filters.mean_filter(f, k))(k)) for k in (3, 5, 7, 9)]
        options += [(f"gaussian:{k}", (lambda k: lambda f: filters.gaussian_blur(f, ksize=k, sigma=0.3 * ((k - 1) * 0.5 - 1) + 0.8))(k))
                    for k in (3, 5, 7)]
        bars = []
        for name, pf in options:
            size, count = measure(frames, "compact", pf)
            bars.append((name, count, size))
            print(f"| {name} | {count:.0f} | {size:.0f} | {100 * (1 - size / raw):.2f} % |")
        if args.plot:
            plot(bars, raw, f"{args.size}, sensor noise sigma {args.noise}, threshold 20", args.plot)


def plot(bars, raw, title, out):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [b[0] for b in bars]
    x = np.arange(len(bars))
    fig, ax = plt.subplots(figsize=(8, 3.6))
    ax.bar(x - 0.2, [b[1] / 1e3 for b in bars], 0.4, label="changed bytes per frame")
    ax.bar(x + 0.2, [b[2] / 1e3 for b in bars], 0.4, label="compact packet bytes per frame")
    ax.set_xticks(x, names)
    ax.set_ylabel("kB per frame")
    ax.set_title(f"{title}; raw RGB {raw / 1e3:.0f} kB per frame", fontsize=9)
    ax.legend()
    ax.grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


if __name__ == "__main__":
    main()
