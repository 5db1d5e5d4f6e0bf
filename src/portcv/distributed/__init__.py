"""Scale-out on Dask: many videos and images larger than memory, bit-identical to one call.

* :func:`filter_image` maps an op or a chain over a dask array (or dask-backed xarray) tile by
  tile, each tile grown by the chain's :func:`halo`: lazy, chunk type kept.
* :func:`filter_store` does the same from a zarr store or a TIFF file to a zarr store, each task
  reading its own halo from storage; a damaged or unfinished store is a :class:`StoreError`.
* :func:`map_videos` runs a pipeline spec (:func:`motion`, :func:`faces` or any picklable
  callable) over many video files, one task per file or per keyframe-aligned segment, on a
  ``dask.distributed`` cluster; :func:`process_video` is its engine-neutral core.
* :func:`local_cluster` starts workers for a backend (one per GPU, or one per core), and the
  :class:`PortcvWorker` plugin sets each worker's backend.

Importing this package imports no dask: dask, distributed, zarr and tifffile are imported on first
use (``pip install 'portcv[distributed]'``). ``docs/distributed.md`` is the guide.
"""

from __future__ import annotations

from typing import Any

from ._cluster import local_cluster, worker_backend
from ._ops import GLOBAL_OPS, TILEABLE, halo
from ._tiles import RechunkWarning, StoreError, filter_image, filter_store
from ._videos import (
    FacesSpec,
    MotionSpec,
    VideoRun,
    faces,
    frame_table,
    map_videos,
    motion,
    process_video,
    segment_bounds,
)

__all__ = [
    "halo",
    "filter_image",
    "filter_store",
    "RechunkWarning",
    "StoreError",
    "TILEABLE",
    "GLOBAL_OPS",
    "local_cluster",
    "PortcvWorker",
    "worker_backend",
    "map_videos",
    "process_video",
    "motion",
    "faces",
    "MotionSpec",
    "FacesSpec",
    "VideoRun",
    "frame_table",
    "segment_bounds",
]


def __getattr__(name: str) -> Any:
    # PortcvWorker derives from distributed's WorkerPlugin: made (importing distributed) on first use.
    if name == "PortcvWorker":
        from . import _cluster

        return _cluster.PortcvWorker
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
