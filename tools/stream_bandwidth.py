"""Bytes per frame of portcv.stream's payload encodings on a generated video (docs/stream.md).

    python tools/stream_bandwidth.py [--size 640x480] [--frames 60] [--noise 4] [--prefilters]

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
        for name, pf in options:
            size, count = measure(frames, "compact", pf)
            print(f"| {name} | {count:.0f} | {size:.0f} | {100 * (1 - size / raw):.2f} % |")


if __name__ == "__main__":
    main()
