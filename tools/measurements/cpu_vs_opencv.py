"""NumPy backend against OpenCV on the host: portable code, the NumPy overrides and cv2, interleaved.

    python -m tools.measure cpu-vs-opencv [--rounds 15] [--threads 2] [--jax] [--only OP,OP]

One process, one 1920x1080 frame (``portcv.data.synthetic_rgb``, its gray, its I420 planes); each
round runs every side of every op in turn (``timing.interleaved_ms``): the portable version (a
NumPy backend of its own family, so no override runs), the ``numpy`` backend's vectorized
overrides (``PORTCV_NUMBA=0``: the path without numba), its compiled loops (numba installed: the
``cpu`` extra) and ``cv2`` with ``cv2.setNumThreads(threads)``; the NumPy overrides run their
bands on as many threads (``PORTCV_NUMPY_THREADS``). Prints a Markdown table of median ms and
ratios to OpenCV, the geometric means over the ops of issue 56's table, and the compiled side's
first call (its compile, or its load from Numba's on-disk cache). ``--jax`` adds JAX on the CPU
(the frame already on its device, each call waited for).
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import os
import time

import numpy as np

import portcv
from portcv._timing import interleaved_ms
from portcv.backends import register
from portcv.backends.numpy import NumpyBackend

#: Ops of the filters domain, and the ops of issue 56's table (its geometric-mean target).
FILTERS = ("gaussian_blur k5", "box_blur k5", "median_filter k5", "sobel dx k3")
TABLE = ("rgb_to_gray", *FILTERS, "histogram", "integral", "canny 50/150", "resize 1/2 bilinear")


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
        # the CPU video reader's colour conversion of every frame
        "i420_to_rgb": ("i420", lambda x: portcv.color.i420_to_rgb(x), lambda x: cv2.cvtColor(x, cv2.COLOR_YUV2RGB_I420)),
    }


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values))


def with_numba(enabled: bool, fn):
    """``fn`` run with the NumPy overrides' compiled loops on or off (``PORTCV_NUMBA``)."""
    def run():
        before = os.environ.get("PORTCV_NUMBA")
        os.environ["PORTCV_NUMBA"] = "1" if enabled else "0"
        try:
            return fn()
        finally:
            if before is None:
                del os.environ["PORTCV_NUMBA"]
            else:
                os.environ["PORTCV_NUMBA"] = before
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--threads", type=int, default=2, help="cv2.setNumThreads and PORTCV_NUMPY_THREADS")
    parser.add_argument("--only", default="", help="comma-separated op names (default: all)")
    parser.add_argument("--jax", action="store_true", help="also time the jax backend on the CPU")
    args = parser.parse_args()
    import cv2

    cv2.setNumThreads(args.threads)
    os.environ["PORTCV_NUMPY_THREADS"] = str(args.threads)
    register(PortableNumpyBackend(), replace=True)
    if args.jax:
        import jax

        if jax.default_backend() != "cpu":
            raise SystemExit(f"--jax times JAX on the CPU; JAX's default backend is {jax.default_backend()} "
                             "(run with JAX_PLATFORMS=cpu)")
    has_numba = importlib.util.find_spec("numba") is not None
    rgb = portcv.data.synthetic_rgb(1080, 1920)
    frames = {"rgb": rgb, "gray": cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY),
              "i420": cv2.cvtColor(rgb, cv2.COLOR_RGB2YUV_I420)}
    table = ops(cv2)
    wanted = [o for o in args.only.split(",") if o] or list(table)
    rows, first_ms = {}, {}
    for op in wanted:
        kind, call, peer = table[op]
        x = frames[kind]

        def on(backend, call=call, x=x):
            def run():
                with portcv.using(backend):
                    return call(x)
            return run

        sides = {"portable": on("numpy:portable"), "vectorized": with_numba(False, on("numpy"))}
        if has_numba:
            sides["compiled"] = with_numba(True, on("numpy"))
            start = time.perf_counter()
            sides["compiled"]()
            first_ms[op] = 1e3 * (time.perf_counter() - start)
        sides["cv2"] = lambda peer=peer, x=x: peer(x)
        if args.jax:
            with portcv.using("jax"):
                xj = portcv.asarray(x)

            def on_jax(call=call, xj=xj):
                with portcv.using("jax"):
                    return portcv.backend().block(call(xj))

            sides["jax"] = on_jax
        reference = portcv.to_numpy(sides["portable"]())
        same = all(np.array_equal(portcv.to_numpy(side()), reference) for name, side in sides.items()
                   if name not in ("portable", "cv2"))
        rows[op] = interleaved_ms(sides, rounds=args.rounds), same
    names = [n for n in ("portable", "vectorized", "compiled", "jax") if n in next(iter(rows.values()))[0]]
    print(f"1920x1080, median of {args.rounds} interleaved rounds; cv2 {cv2.__version__} on {args.threads} threads, "
          f"the NumPy overrides on {args.threads}\n")
    print("| op | " + " | ".join(f"{n} ms" for n in names) + " | cv2 ms | "
          + " | ".join(f"{n} / cv2" for n in names) + " | all equal the portable bits |")
    print("|---|" + "---:|" * (2 * len(names) + 1) + "---|")
    for op, (t, same) in rows.items():
        print(f"| {op} | " + " | ".join(f"{t[n]:.2f}" for n in names) + f" | {t['cv2']:.2f} | "
              + " | ".join(f"{t[n] / t['cv2']:.1f}x" for n in names) + f" | {same} |")
    for label, group in (("filters", FILTERS), ("issue 56's table", TABLE)):
        ops_in = [o for o in group if o in rows]
        if ops_in:
            means = ", ".join(f"{n} {geomean([rows[o][0][n] / rows[o][0]['cv2'] for o in ops_in]):.2f}x"
                              for n in names)
            print(f"\ngeometric mean / OpenCV, {label} ({len(ops_in)} ops): {means}")
    if first_ms:
        print("\ncompiled side's first call in this process (compile, or load from the disk cache), ms: "
              + ", ".join(f"{op} {ms:.0f}" for op, ms in first_ms.items()))


if __name__ == "__main__":
    main()
