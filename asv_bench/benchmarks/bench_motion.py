"""portcv.motion: the Rice paper's motion pipeline (section III, Table V/VII) over backend x frame size.

:class:`MotionPipeline` is the full chain the issue sets targets for: the edge maps of the
frames, the difference with beta = 12, the density over the paper's 6 x 10 grid, the regions
and the motion-area image, batched over ``pairs`` consecutive frame pairs of a gray video
(``pairs + 1`` edge maps); ``track_pairs_per_second`` is its throughput (targets: 640x480 above
20,000 pairs/s and 3840x2160 above 1,000 pairs/s on CuPy, batched). :class:`MotionStream` is one
pair at a time through :class:`portcv.motion.MotionDetector` (one new edge map per pair, the
previous one kept on the device, the regions copied back to the host): the latency (target
under 0.5 ms at 640x480). :class:`Difference` and :class:`Density` time the two motion kernels
alone. :class:`DetectorUpdate` is one pair with the whole ``MotionResult`` (regions, density,
difference, edges) copied to the host; :class:`DrawRegions` times ``draw_regions`` over an RGB
frame and :class:`CellBounds` the host-side ``cell_bounds``. NumPy and JAX-on-CPU skip the large
batches (minutes per call).
"""

from __future__ import annotations

import statistics

import numpy as np

import portcv

from ._common import (
    BACKENDS,
    SIZE_NAMES,
    SIZES,
    Benchmark,
    Operation,
    require,
    rgb_image,
    timing,
)

#: Edge thresholds of the benchmark video (the paper's Fig. 12: t_l = 70, t_h = 80).
T_LOW, T_HIGH = 70, 80
BETA = 12
GRID = (6, 10)
#: Pixels x pairs above which host backends are skipped (one call would take minutes).
HOST_LIMIT = 1920 * 1080 * 4


def _video(size: str, frames: int) -> np.ndarray:
    """``frames`` gray frames alternating between two frames of moving shapes: every pair moves."""
    h, w = SIZES[size]
    two = portcv.data.moving_shapes(2, h, w, seed=0)
    with portcv.using("numpy"):
        gray = portcv.to_numpy(portcv.color.rgb_to_gray(two))
    return gray[np.arange(frames) % 2]


def _on_host(backend: str) -> bool:
    return require(backend).device.startswith("cpu")


def _median_seconds(op, *, min_calls: int = 3, max_calls: int = 100, budget_s: float = 0.5) -> float:
    """Median wall time of synchronized calls of ``op`` (at least ``min_calls``, more while under budget)."""
    return statistics.median(timing.synced_s(op, min_calls=min_calls, max_calls=max_calls, budget_s=budget_s))


def pipeline(video):
    result = portcv.motion.detect_motion(video, t_low=T_LOW, t_high=T_HIGH, beta=BETA, grid=GRID)
    return result.regions, portcv.motion.area_image(video[1:], result.regions)


class MotionPipeline(Benchmark):
    """Edges + difference (beta=12) + density + regions + area image for ``pairs`` frame pairs per call."""

    params = [BACKENDS, SIZE_NAMES, [1, 16, 64]]
    param_names = ["backend", "size", "pairs"]

    def setup(self, backend, size, pairs):
        h, w = SIZES[size]
        if _on_host(backend) and h * w * pairs > HOST_LIMIT:
            raise NotImplementedError(f"{backend} on the host: {pairs} pairs of {size} take too long")
        if h * w * pairs > 3840 * 2160 * 16:
            raise NotImplementedError("at most 16 pairs of 3840x2160 per call (device memory)")
        self.pairs = pairs
        self.op = Operation(backend, pipeline, _video(size, pairs + 1))

    def time_pipeline(self, backend, size, pairs):
        self.op()

    def track_pairs_per_second(self, backend, size, pairs):
        return round(self.pairs / _median_seconds(self.op), 1)

    track_pairs_per_second.unit = "pairs/s"


class MotionStream(Benchmark):
    """One new frame per call through a MotionDetector (the latency of one pair), regions to the host."""

    params = [BACKENDS, SIZE_NAMES]
    param_names = ["backend", "size"]

    def setup(self, backend, size):
        b = require(backend)
        frames = [portcv.backends.get(b.name).asarray(f) for f in _video(size, 2)]
        self.backend = b.name
        with portcv.using(self.backend):
            self.detector = portcv.motion.MotionDetector(t_low=T_LOW, t_high=T_HIGH, beta=BETA, grid=GRID)
            self.frames = frames
            self.t = 0
            for _ in range(3):  # compile and fill the previous edges
                self.step()

    def step(self):
        self.t += 1
        result = self.detector.update(self.frames[self.t % 2])
        return None if result is None else portcv.to_numpy(result.regions)

    def time_one_pair(self, backend, size):
        with portcv.using(self.backend):
            self.step()


class Difference(Benchmark):
    """``difference(e1, e2, beta)`` of two edge maps."""

    params = [BACKENDS, SIZE_NAMES, [2, 12, 32]]
    param_names = ["backend", "size", "beta"]

    def setup(self, backend, size, beta):
        with portcv.using("numpy"):
            edges = portcv.to_numpy(portcv.edges.detect(_video(size, 2), T_LOW, T_HIGH))
        self.op = Operation(backend, lambda a, b: portcv.motion.difference(a, b, beta=beta), edges[0], edges[1])

    def time_difference(self, backend, size, beta):
        self.op()

    def track_difference_bandwidth(self, backend, size, beta):
        return self.op.bandwidth_gbs()

    track_difference_bandwidth.unit = "GB/s"


class Density(Benchmark):
    """``density(d, grid)`` of a difference matrix over the paper's 6 x 10 grid and a fine 60 x 80 one."""

    params = [BACKENDS, SIZE_NAMES, ["6x10", "60x80"]]
    param_names = ["backend", "size", "grid"]

    def setup(self, backend, size, grid):
        h, w = SIZES[size]
        d = ((np.random.default_rng(0).random((h, w)) < 0.05) * 255).astype(np.uint8)
        rows, cols = (int(v) for v in grid.split("x"))
        self.op = Operation(backend, lambda x: portcv.motion.density(x, grid=(rows, cols)), d)

    def time_density(self, backend, size, grid):
        self.op()


class DetectorUpdate(Benchmark):
    """``MotionDetector.update(frame)`` producing a whole ``MotionResult``, all four fields to the host.

    :class:`MotionStream` copies back only the regions; this is the cost when a caller uses every
    field of the ``MotionResult`` (``regions``, ``density``, ``difference``, ``edges``).
    ``track_motion_cells`` counts the cells the result flags for the benchmark pair (a check that
    the output did not change, the same on every backend).
    """

    params = [BACKENDS, SIZE_NAMES]
    param_names = ["backend", "size"]

    def setup(self, backend, size):
        b = require(backend)
        self.backend = b.name
        with portcv.using(self.backend):
            self.frames = [portcv.asarray(f) for f in _video(size, 2)]
            self.detector = portcv.motion.MotionDetector(t_low=T_LOW, t_high=T_HIGH, beta=BETA, grid=GRID)
            self.t = 0
            self.detector.update(self.frames[0])  # the first frame: previous edges, no result
            for _ in range(2):  # compile
                self.result = self.step()

    def step(self):
        self.t += 1
        result = self.detector.update(self.frames[self.t % 2])
        return portcv.motion.MotionResult(*(portcv.to_numpy(field) for field in result))

    def time_update_to_motion_result(self, backend, size):
        with portcv.using(self.backend):
            self.step()

    def track_motion_cells(self, backend, size):
        return int(np.count_nonzero(self.result.regions))

    track_motion_cells.unit = "cells"


class DrawRegions(Benchmark):
    """``draw_regions(frame, regions, thickness=2)``: outline the flagged cells of the 6 x 10 grid over an RGB frame."""

    params = [BACKENDS, SIZE_NAMES]
    param_names = ["backend", "size"]

    def setup(self, backend, size):
        regions = np.random.default_rng(0).random(GRID) < 0.3
        self.op = Operation(backend, lambda img, reg: portcv.motion.draw_regions(img, reg, thickness=2),
                            rgb_image(size), regions)

    def time_draw_regions(self, backend, size):
        self.op()

    def track_draw_regions_bandwidth(self, backend, size):
        return self.op.bandwidth_gbs()

    track_draw_regions_bandwidth.unit = "GB/s"


class CellBounds(Benchmark):
    """``cell_bounds(shape, grid=...)``: the host-side rectangles of the density cells (per variant)."""

    params = [SIZE_NAMES, ["6x10", "60x80"], ["pseudocode", "listing"]]
    param_names = ["size", "grid", "variant"]

    def setup(self, size, grid, variant):
        self.shape = SIZES[size]
        self.grid = tuple(int(v) for v in grid.split("x"))

    def time_cell_bounds(self, size, grid, variant):
        portcv.motion.cell_bounds(self.shape, grid=self.grid, variant=variant)
