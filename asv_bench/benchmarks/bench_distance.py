"""portcv.distance: sqeuclidean (the m x n matrix) and nearest (1-NN, no matrix), with SciPy's
``cdist(..., "sqeuclidean")`` as the CPU peer in the same run.

Two problem sizes (m queries x n database rows x l features, uint8, random):

- ``4096x16384x128``: SIFT-like matching (128-D descriptors), 8.6 G multiply-adds; the H100
  targets are <= 150 us for the int32 matrix (268 MB, write-bound) and <= 60 us for ``nearest``.
- ``lbp 64x20000x11907``: a batch of 64 faces against an LBP gallery of 20,000 histograms of
  11,907 bins (15.2 G multiply-adds).

:class:`QuantizeFeatures` times the float-to-uint8 step (16,384 x 128 float32).

``track_gmacs`` is ``m * n * l / median call time`` in G multiply-adds per second, the unit that
compares runs of different sizes and the article's per-frame figure (Lin et al., Table 3:
5,036 ms on one Opteron core -> 176 ms on a GT200, sizes not given). ``track_bandwidth`` of
``sqeuclidean`` counts the inputs read once and the matrix written once.

The SciPy peer (``scipy`` backend value: float64 ``cdist`` on the host, then ``argmin`` for
``nearest``) would take over 10 s per call at these sizes on 2 cores and 2 GB of float64 copies
at the LBP size, so it runs on fewer rows: 512 queries at 4096x16384x128 and 8 queries x 5,000
database rows at the LBP size (:data:`SCIPY_ROWS`); compare it through ``track_gmacs``. The
portcv backends (NumPy included: 0.2-0.6 s and about 2.5 s per call on 2 cores) run the full
sizes. On CuPy, 8-bit features run portcv's int8 tensor-core kernel (``_sqeuclidean_cuda.cu``;
``nearest`` fused with the argmin, no matrix written).
"""

from __future__ import annotations

import functools
import statistics
from collections.abc import Callable
from typing import Any

import numpy as np

import portcv

from ._common import BACKENDS, Benchmark, Operation, not_supported, require
from ._common import timing
from ._common import gpu_timing as _timing  # the same module, as a function; the name GpuTime.setup used: asv versions a benchmark by its source

SCIPY = "scipy"
#: name -> (m, n, l)
SIZES = {"4096x16384x128": (4096, 16384, 128), "lbp 64x20000x11907": (64, 20000, 11907)}
#: The SciPy peer's (m, n) at each size (l unchanged): see the module docstring.
SCIPY_ROWS = {"4096x16384x128": (512, 16384), "lbp 64x20000x11907": (8, 5000)}


@functools.lru_cache(maxsize=2)
def features(size: str) -> tuple[np.ndarray, np.ndarray]:
    """Seeded uint8 ``(F, D)`` of ``size`` (read-only, made once per process)."""
    m, n, length = SIZES[size]
    rng = np.random.default_rng(2009)
    F, D = rng.integers(0, 256, (m, length), dtype=np.uint8), rng.integers(0, 256, (n, length), dtype=np.uint8)
    F.flags.writeable = D.flags.writeable = False
    return F, D


def scipy_cdist() -> Callable:
    try:
        from scipy.spatial.distance import cdist
    except ImportError as exc:
        raise NotImplementedError(f"peer 'scipy' needs scipy ({exc})") from exc
    return cdist


def operation(backend: str, size: str, what: str) -> tuple[Operation, int]:
    """The benchmarked call (``what``: ``"sqeuclidean"`` or ``"nearest"``) bound to its inputs
    on ``backend``, and its number of multiply-adds."""
    F, D = features(size)
    if backend == SCIPY:
        cdist = scipy_cdist()
        m, n = SCIPY_ROWS[size]
        F, D = F[:m].astype(np.float64), D[:n].astype(np.float64)
        fn: Callable[..., Any] = (lambda f, d: cdist(f, d, "sqeuclidean")) if what == "sqeuclidean" else (
            lambda f, d: np.argmin(cdist(f, d, "sqeuclidean"), axis=1))
        return Operation("numpy", fn, F, D), F.shape[0] * D.shape[0] * F.shape[1]
    fn = portcv.distance.sqeuclidean if what == "sqeuclidean" else portcv.distance.nearest
    return Operation(backend, fn, F, D), F.shape[0] * D.shape[0] * F.shape[1]


def gmacs(op: Operation, macs: int, *, min_calls: int = 3, budget_s: float = 2.0) -> float:
    """``macs`` / median synchronized call time, in G multiply-adds per second."""
    times = timing.synced_s(op, min_calls=min_calls, max_calls=50, budget_s=budget_s)
    return round(macs / statistics.median(times) / 1e9, 3)


class Sqeuclidean(Benchmark):
    """``sqeuclidean(F, D)``: the whole int32 distance matrix (eq. (3))."""

    params = [BACKENDS + [SCIPY], list(SIZES)]
    param_names = ["backend", "size"]
    timeout = 600

    def setup(self, backend, size):
        self.op, self.macs = operation(backend, size, "sqeuclidean")

    def time_sqeuclidean(self, backend, size):
        self.op()

    def track_gmacs(self, backend, size):
        return gmacs(self.op, self.macs)

    track_gmacs.unit = "GMAC/s"

    def track_bandwidth(self, backend, size):
        return self.op.bandwidth_gbs(budget_s=2.0)

    track_bandwidth.unit = "GB/s"


class Nearest(Benchmark):
    """``nearest(F, D)`` (k = 1): the distance tiles reduced to (index, distance) per query."""

    params = [BACKENDS + [SCIPY], list(SIZES)]
    param_names = ["backend", "size"]
    timeout = 600

    def setup(self, backend, size):
        self.op, self.macs = operation(backend, size, "nearest")

    def time_nearest(self, backend, size):
        self.op()

    def track_gmacs(self, backend, size):
        return gmacs(self.op, self.macs)

    track_gmacs.unit = "GMAC/s"


class QueuedCalls(Benchmark):
    """Microseconds per call of back-to-back calls waited for once (``Operation.queued_s``): the
    GPU's time per call where the host's dispatch keeps ahead of it, the issue's per-call figure
    (``time_*`` above waits for every call, so it adds the host's dispatch and the wait). On the
    host, one call a round."""

    params = [BACKENDS, list(SIZES), ["sqeuclidean", "nearest"]]
    param_names = ["backend", "size", "call"]
    timeout = 600

    def setup(self, backend, size, call):
        self.op = operation(backend, size, call)[0]
        self.calls = 1 if backend == "numpy" or require(backend).runs_on_host else 20

    def track_us_per_call(self, backend, size, call):
        return round(1e6 * self.op.queued_s(calls=self.calls, rounds=3 if self.calls == 1 else 5), 1)

    track_us_per_call.unit = "us"


class GpuTime(Benchmark):
    """Microseconds of GPU time per call on CuPy with the host's dispatch hidden
    (``portcv._timing``'s ``device_ms``: a spinning kernel holds the GPU while 30 calls are
    queued behind it, CUDA events around them): the kernels' own cost, which a host slower than
    the GPU hides from :class:`QueuedCalls`. CuPy only (n/a elsewhere)."""

    params = [BACKENDS, list(SIZES), ["sqeuclidean", "nearest"]]
    param_names = ["backend", "size", "call"]
    timeout = 600

    def setup(self, backend, size, call):
        if backend != "cupy":
            not_supported(backend, "GPU time with CUDA events")
        self.op = operation(backend, size, call)[0]
        self.device_ms = _timing().device_ms

    def track_gpu_us_per_call(self, backend, size, call):
        with portcv.using("cupy"):
            ms = self.device_ms(lambda: self.op.fn(*self.op.arrays), calls=30, rounds=3)
        return None if ms is None else round(1e3 * ms, 1)

    track_gpu_us_per_call.unit = "us"


class SpeedupOverScipy(Benchmark):
    """How many times more multiply-adds per second than SciPy's ``cdist`` a portcv backend
    does, both measured in this process (SciPy on its reduced rows, :data:`SCIPY_ROWS`)."""

    params = [BACKENDS, list(SIZES), ["sqeuclidean", "nearest"]]
    param_names = ["backend", "size", "call"]
    timeout = 900

    def setup(self, backend, size, call):
        self.ours = operation(backend, size, call)
        self.peer = operation(SCIPY, size, call)

    def track_speedup_over_scipy(self, backend, size, call):
        return round(gmacs(*self.ours) / gmacs(*self.peer), 2)

    track_speedup_over_scipy.unit = "x"


class QuantizeFeatures(Benchmark):
    """``quantize_features(x, 255)``: 16,384 float32 descriptors of 128 values in [0, 1] to uint8."""

    params = [BACKENDS]
    param_names = ["backend"]

    def setup(self, backend):
        x = np.random.default_rng(7).random((16384, 128), dtype=np.float32)
        self.op = Operation(backend, lambda v: portcv.distance.quantize_features(v, 255.0), x)

    def time_quantize_features(self, backend):
        self.op()
