"""``portcv motion|faces --cluster ADDRESS|local PATHS...``: many videos on a dask cluster."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ._common import backend_names, positive_int


def add_cluster_options(p: argparse.ArgumentParser) -> None:
    """The options shared by ``portcv motion`` and ``portcv faces`` for many files."""
    p.add_argument("--cluster", default=None, metavar="ADDRESS|local",
                   help="run every SOURCE as a task on a dask cluster: a scheduler address (tcp://host:8786) or "
                        "'local' for one worker per core (or per GPU with --backend cupy); --out is then a "
                        "folder for one .npz per file (default: none, one SOURCE here; pip install 'portcv[distributed]')")
    p.add_argument("--segment-frames", type=positive_int, default=None, metavar="N",
                   help="with --cluster: split files longer than N frames at keyframes (default: one task per file)")


def sources(args: argparse.Namespace) -> bool:
    """Whether to run on a cluster; one source (``args.source`` made a string) otherwise."""
    if args.cluster is not None:
        return True
    if args.segment_frames is not None:
        raise ValueError("--segment-frames needs --cluster")
    if len(args.source) != 1:
        raise ValueError(f"{len(args.source)} sources given: several files run with --cluster ADDRESS|local")
    args.source = args.source[0]
    return False


def run_on_cluster(args: argparse.Namespace, spec: Any, command: str) -> int:
    """``map_videos`` over ``args.source`` on the cluster; one line per file; exit 1 if any failed."""
    try:
        from distributed import Client
    except ImportError:
        raise ImportError("--cluster needs dask.distributed: pip install 'portcv[distributed]'") from None
    import portcv.distributed as pdist

    (backend,) = backend_names(args.backend, "--backend with --cluster", single=True)  # every worker runs one
    if args.cluster == "local":
        cluster = pdist.local_cluster(backend, dashboard_address=":0")
        client = Client(cluster, timeout="60s")
    else:
        cluster = None
        client = Client(args.cluster, timeout="60s")
        client.register_plugin(pdist.PortcvWorker(backend))
    failed = 0
    try:
        for run in pdist.map_videos(spec, args.source, client=client, segment_frames=args.segment_frames,
                                    out=args.out, progress=not args.no_progress):
            if run.error is not None:
                failed += 1
                print(f"{run.path}: error: {run.error}")
            else:
                print(f"{run.path}: {run.frames} frames, {run.seconds:.2f} s, {_summary(run.value)}")
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    total = len(args.source)
    print(f"portcv {command}: {total - failed} of {total} files done on {args.cluster}"
          + (f", {failed} failed" if failed else ""), file=sys.stderr if failed else sys.stdout)
    return 1 if failed else 0


def _summary(value: Any) -> str:
    if isinstance(value, str):
        return f"written to {value}"
    if isinstance(value, dict) and "regions" in value:
        moving = int(value["regions"].reshape(len(value["regions"]), -1).any(axis=1).sum())
        return f"motion in {moving} of {len(value['regions'])} frame pairs"
    if isinstance(value, list):
        return f"{sum(len(boxes) for _, boxes, _ in value)} detections in {len(value)} frames"
    return type(value).__name__
