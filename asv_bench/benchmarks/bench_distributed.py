"""portcv.distributed: the tiling engine and the per-file core, in one process (no timing of clusters
against each other here: scaling over workers is ``tools/measurements/scaleout_bench.py``'s job, run by hand on
a quiet machine).

- :class:`Halo`: ``halo`` of an op and of a chain (pure Python on parameters).
- :class:`FilterImage`: ``filter_image`` computed with dask's synchronous scheduler, 512-pixel
  chunks, per backend x size; ``track_overhead_ratio`` is the tiled time over one call's.
- :class:`FilterStore`: ``filter_store`` zarr to zarr in this process (``client=None``), 2048^2.
- :class:`Videos`: ``process_video`` (``MotionSpec`` from ``motion``, ``FacesSpec`` from
  ``faces``), ``map_videos`` of two clips without a cluster (``VideoRun`` per file),
  ``frame_table`` and ``segment_bounds`` (demux only).
- :class:`Cluster`: ``local_cluster`` start and close with one worker (``PortcvWorker`` set-up
  included), and ``worker_backend`` on it.

Every class skips (``NotImplementedError`` in ``setup``) when dask, zarr or PyAV is missing.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
import time

import numpy as np

import portcv

from ._common import BACKENDS, SIZES, Benchmark, gray_image, require

CHAIN = [("filters.gaussian_blur", {"ksize": 5, "sigma": 0}), ("edges.detect", {"t_low": 70, "t_high": 80})]


def _need(*modules: str) -> None:
    for name in modules:
        if importlib.util.find_spec(name) is None:
            raise NotImplementedError(f"{name} not installed (pip install 'portcv[distributed]')")


class Halo(Benchmark):
    """``halo(op, **params)`` and the halo of a two-stage chain."""

    def setup(self):
        _need("dask")
        import portcv.distributed as pdist

        self.pdist = pdist

    def time_halo_op(self):
        self.pdist.halo("edges.detect", t_low=70, t_high=80, alpha=2)

    def time_halo_chain(self):
        self.pdist.halo(CHAIN)


class FilterImage(Benchmark):
    """``filter_image(dask_array, chain).compute()`` (synchronous scheduler, 512^2 chunks)."""

    params = [BACKENDS, ["1920x1080", "3840x2160"]]
    param_names = ["backend", "size"]

    def setup(self, backend, size):
        _need("dask")
        require(backend)
        import dask
        import dask.array as da

        import portcv.distributed as pdist

        self.dask = dask
        self.gray = gray_image(size)
        self.lazy = pdist.filter_image(da.from_array(self.gray, chunks=512), CHAIN, backend=backend)
        self.backend = backend
        self.compute()  # compile per tile shape (JAX), load kernels (CuPy)

    def compute(self):
        with self.dask.config.set(scheduler="synchronous"):
            return self.lazy.compute()

    def time_filter_image(self, backend, size):
        self.compute()

    def track_overhead_ratio(self, backend, size):
        """Tiled time / one call's time, on the same backend (above 1: the tiling's cost)."""
        from portcv.distributed._ops import resolve_chain
        from portcv.distributed._tiles import run_chain

        stages = resolve_chain(CHAIN)

        def whole():
            with portcv.using(self.backend) as b:
                return portcv.to_numpy(b.block(run_chain(stages, [self.gray], False)[0]))

        whole()
        t0 = time.perf_counter()
        whole()
        one = time.perf_counter() - t0
        t0 = time.perf_counter()
        self.compute()
        return round((time.perf_counter() - t0) / one, 3)

    track_overhead_ratio.unit = "ratio"


class FilterStore(Benchmark):
    """``filter_store`` of a 2048^2 zarr store (512^2 chunks) to zarr, tiles of 1024, in this process."""

    params = [BACKENDS]
    param_names = ["backend"]

    def setup(self, backend):
        _need("dask", "zarr")
        require(backend)
        import zarr

        import portcv.distributed as pdist

        self.pdist = pdist
        self.dir = tempfile.mkdtemp(prefix="portcv_bench_store_")
        self.src = os.path.join(self.dir, "in.zarr")
        self.dst = os.path.join(self.dir, "out.zarr")
        image = zarr.create_array(self.src, shape=(2048, 2048), chunks=(512, 512), dtype="uint8")
        tile = gray_image("1920x1080")[:1024, :1024]
        for y in (0, 1024):
            for x in (0, 1024):
                image[y:y + 1024, x:x + 1024] = tile
        self.backend = backend
        self.run()

    def teardown(self, backend):
        if hasattr(self, "dir"):  # setup may have skipped (no CuPy) before making it
            shutil.rmtree(self.dir, ignore_errors=True)

    def run(self):
        self.pdist.filter_store(self.src, self.dst, CHAIN, tile=1024, client=None, backend=self.backend)

    def time_filter_store(self, backend):
        self.run()


class Videos(Benchmark):
    """One clip of 12 frames, 320x240, through the per-file core and ``map_videos`` without a cluster."""

    def setup(self):
        _need("dask", "av")
        import portcv.distributed as pdist

        self.pdist = pdist
        self.dir = tempfile.mkdtemp(prefix="portcv_bench_videos_")
        self.paths = []
        for i in range(2):
            path = os.path.join(self.dir, f"clip{i}.mp4")
            portcv.video.write_video(path, portcv.data.moving_shapes(12, 240, 320, seed=i))
            self.paths.append(path)
        self.motion = pdist.motion(t_low=70, t_high=80, grid=(6, 10))  # a MotionSpec
        if importlib.util.find_spec("cv2") is not None:  # faces() loads its cascade, which comes with opencv
            self.faces = pdist.faces(min_neighbors=3, min_size=(30, 30))  # a FacesSpec
            pdist.process_video(self.paths[0], self.faces, backend="numpy")  # parse the cascade once

    def teardown(self):
        if hasattr(self, "dir"):  # setup may have skipped (no dask or PyAV) before making it
            shutil.rmtree(self.dir, ignore_errors=True)

    def time_process_video_motion(self):
        self.pdist.process_video(self.paths[0], self.motion, backend="numpy")

    def time_process_video_faces(self):
        if importlib.util.find_spec("cv2") is None:
            raise NotImplementedError("the cascade files come with opencv")
        self.pdist.process_video(self.paths[0], self.faces, backend="numpy")

    def time_map_videos_serial(self):
        runs = list(self.pdist.map_videos(self.motion, self.paths, client=None, progress=False, backend="numpy"))
        assert all(isinstance(r, self.pdist.VideoRun) and r.error is None for r in runs)

    def time_frame_table(self):
        self.pdist.frame_table(self.paths[0])

    def time_segment_bounds(self):
        self.pdist.segment_bounds(self.paths[0], 4)

    def time_motion_spec(self):
        self.pdist.motion(t_low=70, t_high=80)


class Cluster(Benchmark):
    """``local_cluster('numpy', n_workers=1)`` start to close (the ``PortcvWorker`` set-up included)."""

    timeout = 300
    number = 1
    repeat = 3

    def setup(self):
        _need("distributed")
        import portcv.distributed as pdist

        self.pdist = pdist

    def time_local_cluster_start_and_close(self):
        from distributed import Client

        with self.pdist.local_cluster("numpy", n_workers=1, dashboard_address=None) as cluster, \
                Client(cluster) as client:
            assert set(client.run(self.pdist.worker_backend).values()) == {"numpy"}

    def time_portcv_worker_setup(self):
        self.pdist.PortcvWorker("numpy").setup()
