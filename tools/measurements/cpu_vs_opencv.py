"""NumPy backend against OpenCV on the host: portable code, NumPy overrides and cv2, interleaved.

    python -m tools.measure cpu-vs-opencv [--rounds 15] [--threads 2] [--jax]

One process, one 1920x1080 frame (``portcv.data.synthetic_rgb`` and its gray), each round runs
every side of every op in turn (``timing.interleaved_ms``): the portable version (a NumPy backend
of its own family, so no override runs: what ``numpy`` ran before its overrides), the ``numpy``
backend (its overrides) and ``cv2`` with ``cv2.setNumThreads(threads)``. Prints a Markdown table
of median ms and ratios to OpenCV, and the geometric means (docs/benchmarks.md, "CPU backends
against OpenCV"). ``--jax`` adds JAX on the CPU (the frame already on its device, each call
waited for) as a fourth side.
"""

from __future__ import annotations

import argparse
import math

import numpy as np

import portcv
from portcv._timing import interleaved_ms
from portcv.backends import register
from portcv.backends.numpy import NumpyBackend

#: Ops of the filters domain: the family whose geometric mean the target bounds.
FILTERS = ("gaussian_blur k5", "box_blur k5", "median_filter k5", "sobel dx k3")


class PortableNumpyBackend(NumpyBackend):
    """NumPy with a family of its own: no NumPy override runs, only the portable versions."""

    name = "numpy:portable"
    family = "numpy:portable"


def ops(cv2):
    """op -> (input kind, portcv call, the same op in cv2)."""
    pf = portcv.filters
    return {
        "rgb_to_gray": ("rgb", lambda x: portcv.color.rgb_to_gray(x), lambda x: cv2.cvtColor(x, cv2.COLOR_RGB2GRAY)),
        "gaussian_blur k5": ("gray", lambda x: pf.gaussian_blur(x, ksize=5, sigma=1.2),
                             lambda x: cv2.GaussianBlur(x, (5, 5), 1.2, sigmaY=1.2, borderType=cv2.BORDER_REFLECT_101)),
        "box_blur k5": ("gray", lambda x: pf.box_blur(x, 5), lambda x: cv2.blur(x, (5, 5), borderType=cv2.BORDER_REFLECT_101)),
        "median_filter k5": ("gray", lambda x: pf.median_filter(x, 5), lambda x: cv2.medianBlur(x, 5)),
        "sobel dx k3": ("gray", lambda x: pf.sobel(x, 1, 0), lambda x: cv2.Sobel(x, cv2.CV_16S, 1, 0, ksize=3)),
        "histogram": ("gray", lambda x: portcv.color.histogram(x), lambda x: cv2.calcHist([x], [0], None, [256], [0, 256])),
        "integral": ("gray", lambda x: portcv.transform.integral(x), lambda x: cv2.integral(x)),
        "resize 1/2 bilinear": ("gray", lambda x: portcv.transform.resize(x, scale=0.5),
                                lambda x: cv2.resize(x, None, fx=0.5, fy=0.5, interpolation=cv2.INTER_LINEAR)),
        "canny 50/150": ("gray", lambda x: portcv.edges.canny(x, 50, 150), lambda x: cv2.Canny(x, 50, 150)),
    }


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--threads", type=int, default=2, help="cv2.setNumThreads")
    parser.add_argument("--only", default="", help="comma-separated op names (default: all)")
    parser.add_argument("--jax", action="store_true", help="also time the jax backend on the CPU")
    args = parser.parse_args()
    import cv2

    cv2.setNumThreads(args.threads)
    register(PortableNumpyBackend(), replace=True)
    if args.jax:
        import jax

        if jax.default_backend() != "cpu":
            raise SystemExit(f"--jax times JAX on the CPU; JAX's default backend is {jax.default_backend()} "
                             "(run with JAX_PLATFORMS=cpu)")
    rgb = portcv.data.synthetic_rgb(1080, 1920)
    frames = {"rgb": rgb, "gray": cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)}
    table = ops(cv2)
    wanted = [o for o in args.only.split(",") if o] or list(table)
    rows = {}
    for op in wanted:
        kind, call, peer = table[op]
        x = frames[kind]

        def on(backend, call=call, x=x):
            def run():
                with portcv.using(backend):
                    return call(x)
            return run

        same = np.array_equal(portcv.to_numpy(on("numpy")()), portcv.to_numpy(on("numpy:portable")()))
        sides = {"portable": on("numpy:portable"), "numpy": on("numpy"), "cv2": lambda: peer(x)}
        if args.jax:
            with portcv.using("jax"):
                xj = portcv.asarray(x)

            def on_jax(call=call, xj=xj):
                with portcv.using("jax"):
                    return portcv.backend().block(call(xj))

            same = same and np.array_equal(portcv.to_numpy(on_jax()), portcv.to_numpy(on("numpy")()))
            sides["jax"] = on_jax
        rows[op] = interleaved_ms(sides, rounds=args.rounds), same
    print(f"1920x1080, median of {args.rounds} interleaved rounds; cv2 {cv2.__version__} on {args.threads} threads\n")
    jax_head, jax_rule = (" jax ms | jax / cv2 |", "---:|---:|") if args.jax else ("", "")
    same_head = "numpy = portable" + (" = jax" if args.jax else "")
    print(f"| op | portable ms | numpy ms | cv2 ms | portable / cv2 | numpy / cv2 |{jax_head} {same_head} |")
    print(f"|---|---:|---:|---:|---:|---:|{jax_rule}---|")
    for op, (t, same) in rows.items():
        jax_cells = f" {t['jax']:.2f} | {t['jax'] / t['cv2']:.1f}x |" if args.jax else ""
        print(f"| {op} | {t['portable']:.2f} | {t['numpy']:.2f} | {t['cv2']:.2f} | "
              f"{t['portable'] / t['cv2']:.1f}x | {t['numpy'] / t['cv2']:.1f}x |{jax_cells} {same} |")
    for label, names in (("filters", [o for o in FILTERS if o in rows]), ("all ops", list(rows))):
        if names:
            before = geomean([rows[o][0]["portable"] / rows[o][0]["cv2"] for o in names])
            after = geomean([rows[o][0]["numpy"] / rows[o][0]["cv2"] for o in names])
            jax = geomean([rows[o][0]["jax"] / rows[o][0]["cv2"] for o in names]) if args.jax else None
            jax_text = f", jax {jax:.1f}x" if args.jax else ""
            print(f"\ngeometric mean, {label} ({len(names)} ops): portable {before:.1f}x, numpy {after:.1f}x{jax_text} OpenCV")


if __name__ == "__main__":
    main()
