"""The Rice paper's Tables III-V (section V): speedup over the CPU against image size, per backend.

Table III is the separable 3x3 Gaussian, Table IV the edge detector (gradients, NMS and selective
thresholding), Table V motion-area estimation (difference, density, regions and motion-area
image from two edge maps). Square gray frames of the paper's sides; times are synchronized wall
times per call with the data already on the backend's device (the paper's GPU times also include
host copies). NumPy is the CPU column.

    python -m tools.measure rice-tables --json rice_tables.json          # on the CUDA machine
    python -m tools.measure rice-tables --plot rice_tables.json docs/img/rice_tables_speedup.png
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")


SIDES = (100, 500, 1000, 2000, 3000)
TABLES = {
    "III": "separable Gaussian 3x3",
    "IV": "edge detection (NMS + selective thresholding)",
    "V": "motion-area estimation",
}


def _ops():
    import portcv
    from portcv import edges, filters, motion

    def table_v(pair):
        e1, e2 = pair
        d = motion.difference(e1, e2, beta=12)
        cells = motion.regions(motion.density(d, grid=(6, 10)), shape=e1.shape, gamma=0.01)
        return motion.area_image(e2, cells)

    return {
        "III": lambda x: filters.gaussian_blur(x[0], ksize=3, sigma=0.8),
        "IV": lambda x: edges.detect(x[0], 70, 80),
        "V": table_v,
    }, portcv


def _time(fn, sync, budget_s=1.0, max_calls=50):
    def call():
        out = fn()
        getattr(out, "block_until_ready", lambda: None)()  # JAX dispatches asynchronously
        sync()

    call()
    times = []
    while len(times) < 3 or (len(times) < max_calls and sum(times) < budget_s):
        t0 = time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def measure(backends):
    ops, portcv = _ops()
    rows = []
    for side in SIDES:
        frames = portcv.color.rgb_to_gray(portcv.data.moving_shapes(2, side, side, seed=0))
        with portcv.using("numpy"):
            pair = tuple(portcv.edges.detect(f, 70, 80) for f in frames)
        for table, fn in ops.items():
            row = {"table": table, "side": side}
            for name in backends:
                with portcv.using(name):
                    be = portcv.backend()
                    data = [portcv.asarray(a) for a in (pair if table == "V" else frames)]
                    row[f"{name}_s"] = _time(lambda: fn(data), be.synchronize)
            rows.append(row)
            print(row, flush=True)
    return rows


def plot(rows, out):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    for ax, (table, title) in zip(axes, TABLES.items()):
        mine = [r for r in rows if r["table"] == table]
        pixels = [r["side"] ** 2 for r in mine]
        for name in ("cupy", "jax"):
            if f"{name}_s" in mine[0]:
                ax.plot(pixels, [r["numpy_s"] / r[f"{name}_s"] for r in mine], "o-", label=f"{name} (H100)")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("pixels")
        ax.set_title(f"Table {table}: {title}", fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("speedup over NumPy (CPU)")
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--json")
    parser.add_argument("--backends", default="numpy,cupy,jax")
    parser.add_argument("--plot", nargs=2, metavar=("JSON", "PNG"))
    args = parser.parse_args()
    if args.plot:
        with open(args.plot[0]) as f:
            plot(json.load(f)["rows"], args.plot[1])
        return
    rows = measure(args.backends.split(","))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
