"""Huge images tile by tile: ``filter_image`` (lazy, dask arrays and xarray) and ``filter_store``
(eager, zarr or TIFF in, zarr out). Both run the same chain on each tile grown by the chain's halo
and keep the core, so the result equals one call on the whole image bit for bit.

The op's own border rule must apply at the true image edge only, so tiles are never padded by
dask (dask's ``'reflect'`` repeats the edge pixel, which is not portcv's reflect-101): edge tiles
simply have no halo on their outer side (``boundary='none'``) and the op pads them itself.
"""

from __future__ import annotations

import contextlib
import math
import time
import warnings
from typing import Any, Iterator, Sequence

import numpy as np

from .. import _validate
from ..backends import backend as backend_now
from ..backends import owner_of, to_numpy, using
from ._ops import Halo, Stage, chain_halo, resolve_chain

#: xarray dim names read as the channel axis.
CHANNEL_DIMS = ("band", "bands", "channel", "channels", "c")


class RechunkWarning(UserWarning):
    """``filter_image`` merged chunks smaller than the halo (the output's chunks differ from the input's)."""


# --------------------------------------------------------------------------------------------
# One tile: the chain with the channel layout resolved once, from the whole image
# --------------------------------------------------------------------------------------------
def _call_stage(stage: Stage, args: Sequence[Any], chan: bool) -> tuple[Any, bool]:
    params = dict(stage.params)
    layout = stage.spec.layout
    if layout == "channel_axis":
        params["channel_axis"] = -1 if chan else None
    elif layout == "gray":
        if chan:
            raise ValueError(f"{stage.name} takes gray frames but its input has channels; "
                             "put color.rgb_to_gray before it in the chain")
        params["channel_axis"] = None
    elif layout == "rgb" and not chan:
        raise ValueError(f"{stage.name} takes (..., H, W, 3) images but its input has no channel axis")
    elif layout == "planes" and chan:
        raise ValueError(f"{stage.name} takes (..., H, W) planes but its input has channels")
    if len(args) != stage.spec.inputs:
        raise ValueError(f"{stage.name} takes {stage.spec.inputs} image(s) but gets {len(args)} "
                         "(from the caller or the previous stage of the chain)")
    out = stage.fn(*args, **params)
    out_chan = chan if stage.spec.out == "same" else stage.spec.out == "rgb"
    return out, out_chan


def backend_scope(backend: str | None) -> Any:
    """``portcv.using(backend)``, or no change of backend for ``None`` (the worker's active one)."""
    return using(backend) if backend is not None else contextlib.nullcontext()


def run_chain(stages: list[Stage], arrays: Sequence[Any], chan: bool) -> tuple[Any, bool]:
    """The chain on ``arrays`` (on the active backend): its output(s) and whether they have channels."""
    args: Sequence[Any] = arrays
    out: Any = None
    for stage in stages:
        out, chan = _call_stage(stage, args, chan)
        args = tuple(out) if isinstance(out, tuple) else (out,)
    return out, chan


def _spatial(ndim: int, chan: bool) -> tuple[int, int]:
    return (ndim - 3, ndim - 2) if chan else (ndim - 2, ndim - 1)


def _trim(array: Any, chan: bool, cut: tuple[tuple[int, int], tuple[int, int]]) -> Any:
    index = [slice(None)] * array.ndim
    for axis, (before, after) in zip(_spatial(array.ndim, chan), cut):
        index[axis] = slice(before, array.shape[axis] - after)
    return array[tuple(index)]


def _probe(stages: list[Stage], shapes: Sequence[tuple[int, ...]], dtypes: Sequence[Any], chan: bool) -> dict:
    """Run the chain once on small zero images (NumPy) for the output's structure and dtype.

    The channel layout is explicit, so a small probe decides nothing a large image would not.
    """
    arrays = []
    for shape, dtype in zip(shapes, dtypes):
        sy, sx = _spatial(len(shape), chan)
        small = [1] * len(shape)
        small[sy], small[sx] = min(shape[sy], 16), min(shape[sx], 16)
        if chan:
            small[-1] = shape[-1]
        arrays.append(np.zeros(small, dtype))
    with using("numpy"):
        out, out_chan = run_chain(stages, arrays, chan)
    outs = out if isinstance(out, tuple) else (out,)
    outs = [np.asarray(to_numpy(o)) for o in outs]
    dtypes_out = {o.dtype for o in outs}
    if len(dtypes_out) != 1:
        raise ValueError(f"the chain returns arrays of several dtypes ({sorted(map(str, dtypes_out))})")
    return {"several": isinstance(out, tuple), "count": len(outs), "dtype": outs[0].dtype, "chan": out_chan,
            "channels": outs[0].shape[-1] if out_chan else None, "ndim": outs[0].ndim}


def _tile(*blocks: Any, stages: list[Stage], chan: bool, out_chan: bool, several: bool, depth: Halo,
          backend: str | None, block_info: Any = None) -> Any:
    """One dask block: the chain on the overlapped block, the core kept, in the block's array type."""
    info = block_info[0]
    ndim = blocks[0].ndim
    cut = []
    for axis, (before, after) in zip(_spatial(ndim, chan), depth):
        i, n = info["chunk-location"][axis], info["num-chunks"][axis]
        cut.append((before if i > 0 else 0, after if i < n - 1 else 0))
    owner = owner_of(blocks[0])
    if backend is None and owner is not None and not isinstance(blocks[0], np.ndarray) \
            and not backend_now().owns(blocks[0]):
        backend = owner.name  # device chunks (CuPy) compute where they are, not through the host
    with backend_scope(backend):
        out, _ = run_chain(stages, blocks, chan)
    outs = out if isinstance(out, tuple) else (out,)
    kept = [_trim(o, out_chan, tuple(cut)) for o in outs]  # type: ignore[arg-type]
    kept = [owner.asarray(k) if owner is not None else to_numpy(k) for k in kept]
    if several:
        xp = owner.xp if owner is not None else np
        return xp.stack(kept)
    return kept[0]


# --------------------------------------------------------------------------------------------
# filter_image: dask arrays and dask-backed xarray
# --------------------------------------------------------------------------------------------
def _is_dask(array: Any) -> bool:
    return type(array).__module__.split(".")[0] == "dask" and hasattr(array, "chunks")


def _is_xarray(array: Any) -> bool:
    return type(array).__module__.split(".")[0] == "xarray" and hasattr(array, "dims")


def _merged_chunks(chunks: tuple[int, ...], least: int) -> tuple[int, ...]:
    """``chunks`` with neighbours joined until each holds at least ``least`` (the last joins its left)."""
    out: list[int] = []
    run = 0
    for c in chunks:
        run += c
        if run >= least:
            out.append(run)
            run = 0
    if run:
        if out:
            out[-1] += run
        else:
            out.append(run)
    return tuple(out)


def _first_stage_layout(stage: Stage, array: Any, forced: bool | None) -> bool:
    """Whether the input has a channel axis, decided once from the whole array's shape."""
    layout = stage.spec.layout
    given = stage.params.get("channel_axis", "auto")
    if layout == "channel_axis":
        if forced is not None:
            return forced
        return _validate.has_channels(array, given)
    if layout == "gray":
        if forced:
            raise ValueError(f"{stage.name} takes gray frames but the image has a channel dim")
        _validate.gray(array, "image", given)
        return False
    if layout == "rgb":
        return True
    return bool(forced)


def filter_image(image: Any, op: Any, /, *, backend: str | None = None, allow_rechunk: bool = True,
                 **params: Any) -> Any:
    """An op or a chain over a dask array tile by tile (lazy), bit-identical to one call.

    Each chunk is grown by the chain's :func:`halo` from its neighbours (``map_overlap`` with
    ``boundary='none'``), the chain runs on it, and its core is kept. Chunks on the image's edge
    get no halo on their outer side, so the op's own border rule (reflect-101, replicate,
    constant) applies there and nowhere else.

    Parameters
    ----------
    image : dask.array.Array or xarray.DataArray (dask-backed), or a tuple of them
        ``(..., H, W)`` or ``(..., H, W, C)``: leading axes are a batch (any chunks); the last two
        spatial axes may be chunked at will; a channel axis is joined into one chunk. An xarray
        dim named ``band``, ``channel`` or ``c`` is the channel axis; its dims, coords and attrs
        are kept. Two-image ops (``edges.magnitude``, ``motion.difference``) take a tuple.
    op : str, function or list
        A tileable op (:data:`TILEABLE`) or a chain (a list of ops and ``(op, params)`` pairs),
        fused into one task per tile: intermediates never leave the worker.
    backend : str, optional
        Backend the chain runs on inside each task (default: the active backend where the task
        runs, i.e. the worker's ``portcv.use`` default; device chunks such as CuPy's run on their
        own backend). The result keeps the chunk type: NumPy chunks give NumPy chunks, CuPy
        chunks CuPy chunks.
    allow_rechunk : bool
        Chunks smaller than the halo (or than 2 pixels) along a spatial axis are joined with
        their neighbours, with a :class:`RechunkWarning`; ``False`` raises instead.
    **params
        The op's parameters (single op only). ``channel_axis='auto'`` is resolved once from the
        whole array's shape, never per tile.

    Returns
    -------
    dask.array.Array or xarray.DataArray (a tuple for ops that return several arrays)

    Raises
    ------
    ValueError
        A global op (:data:`GLOBAL_OPS`), or chunks too small with ``allow_rechunk=False``.
    TypeError
        ``image`` is not a dask array.

    Examples
    --------
    >>> import dask.array as da, numpy as np, portcv, portcv.distributed as pdist
    >>> img = portcv.data.synthetic_rgb(64, 80, seed=0)[..., 0]
    >>> tiles = pdist.filter_image(da.from_array(img, chunks=(20, 24)), "gaussian_blur", ksize=5, sigma=1.2)
    >>> whole = portcv.filters.gaussian_blur(img, ksize=5, sigma=1.2)
    >>> bool((tiles.compute(scheduler="synchronous") == portcv.to_numpy(whole)).all())
    True
    """
    images = list(image) if isinstance(image, (tuple, list)) else [image]
    template = images[0]
    dims = None
    forced: bool | None = None
    if _is_xarray(template):
        dims = tuple(template.dims)
        channel_dims = [d for d in dims if str(d).lower() in CHANNEL_DIMS]
        if channel_dims:
            images = [im.transpose(*[d for d in dims if d != channel_dims[0]], channel_dims[0]) for im in images]
        forced = bool(channel_dims)
        arrays = [im.data for im in images]
    else:
        arrays = images
    for a in arrays:
        if not _is_dask(a):
            raise TypeError(f"filter_image takes dask arrays (or dask-backed xarray), got {type(a).__name__}; "
                            "wrap an in-memory image with dask.array.from_array, or open a store with "
                            "dask.array.from_zarr")
    if len({a.shape for a in arrays}) != 1:
        raise ValueError(f"the images must have one shape, got {[a.shape for a in arrays]}")
    stages = resolve_chain(op, params)
    if len(arrays) != stages[0].spec.inputs:
        raise ValueError(f"{stages[0].name} takes {stages[0].spec.inputs} image(s), got {len(arrays)}")
    x = arrays[0]
    chan = _first_stage_layout(stages[0], x, forced)
    if x.ndim < (3 if chan else 2):
        raise ValueError(f"image must be (..., H, W) or (..., H, W, C), got shape {x.shape}")
    depth = chain_halo(stages)
    return _filter_arrays(arrays, stages, chan, depth, backend, allow_rechunk, template, dims, forced)


def _filter_arrays(arrays: list[Any], stages: list[Stage], chan: bool, depth: Halo, backend: str | None,
                   allow_rechunk: bool, template: Any = None, dims: Any = None, forced: Any = None) -> Any:
    """``filter_image`` after validation, with the halo given (the tests shorten it to see it fail)."""
    import dask.array as da
    from dask.array.utils import meta_from_array

    x = arrays[0]
    ndim = x.ndim
    axes = _spatial(ndim, chan)
    chunks = list(x.chunks)
    if chan:
        chunks[-1] = (x.shape[-1],)
    used = []
    for axis, (before, after) in zip(axes, depth):
        need = max(before, after)
        if need == 0:
            used.append((0, 0))
            continue
        merged = _merged_chunks(chunks[axis], max(need, 2))
        if merged != chunks[axis] and not allow_rechunk:
            raise ValueError(f"chunks {chunks[axis]} along axis {axis} are smaller than the halo ({need} pixels, "
                             "at least 2); rechunk the image, or pass allow_rechunk=True")
        chunks[axis] = merged
        used.append((0, 0) if len(merged) == 1 else (before, after))
    chunks_t = tuple(chunks)
    if chunks_t != tuple(x.chunks) and any(chunks_t[a] != x.chunks[a] for a in axes):
        warnings.warn(f"filter_image joined chunks smaller than the halo {depth}: the output's chunks differ "
                      "from the input's", RechunkWarning, stacklevel=3)
    arrays = [a.rechunk(chunks_t) if a.chunks != chunks_t else a for a in arrays]
    info = _probe(stages, [a.shape for a in arrays], [a.dtype for a in arrays], chan)
    out_chan = info["chan"]
    overlap_depth = {axis: d for axis, d in zip(axes, used)}
    if any(d != (0, 0) for d in used):
        grown = [da.overlap.overlap(a, depth=overlap_depth, boundary={ax: "none" for ax in axes}) for a in arrays]
    else:
        grown = arrays
    out_chunks = list(chunks_t)
    drop_axis: list[int] = []
    new_axis: list[int] = []
    if chan and not out_chan:
        out_chunks = out_chunks[:-1]
        drop_axis = [ndim - 1]
    elif out_chan and not chan:
        out_chunks = out_chunks + [(info["channels"],)]
        new_axis = [ndim]
    elif chan:
        out_chunks[-1] = (info["channels"],)
    if info["several"]:
        out_chunks = [(info["count"],)] + out_chunks
        new_axis = [0] + [a + 1 for a in new_axis]
    meta = meta_from_array(x._meta, ndim=len(out_chunks), dtype=info["dtype"])
    result = da.map_blocks(
        _tile, *grown, stages=stages, chan=chan, out_chan=out_chan, several=info["several"], depth=tuple(used),
        backend=backend, chunks=tuple(out_chunks), dtype=info["dtype"], meta=meta,
        drop_axis=drop_axis or None, new_axis=new_axis or None, name="portcv-" + stages[-1].name.replace(".", "-"),
    )
    outs = [result[k] for k in range(info["count"])] if info["several"] else [result]
    if dims is not None:
        outs = [_as_xarray(o, template, chan, out_chan) for o in outs]
    return tuple(outs) if info["several"] else outs[0]


def _as_xarray(data: Any, template: Any, chan: bool, out_chan: bool) -> Any:
    import xarray as xr

    dims = list(template.dims)
    channel_dims = [d for d in dims if str(d).lower() in CHANNEL_DIMS]
    if channel_dims:
        dims = [d for d in dims if d != channel_dims[0]] + [channel_dims[0]]
    if chan and not out_chan:
        dims = dims[:-1]
    elif out_chan and not chan:
        dims = dims + ["channel"]
    coords = {name: c for name, c in template.coords.items()
              if set(c.dims) <= set(dims) and all(c.sizes[d] == data.shape[dims.index(d)] for d in c.dims)}
    out = xr.DataArray(data, dims=dims, coords=coords, attrs=dict(template.attrs), name=template.name)
    if channel_dims and out_chan and chan:
        out = out.transpose(*template.dims)
    return out


# --------------------------------------------------------------------------------------------
# filter_store: zarr / TIFF in, zarr out, each task reading its own halo from the store
# --------------------------------------------------------------------------------------------
def _is_tiff(source: Any) -> bool:
    return isinstance(source, str) and source.lower().endswith((".tif", ".tiff")) or (
        hasattr(source, "suffix") and str(source.suffix).lower() in (".tif", ".tiff"))


def open_source(source: Any) -> Any:
    """A read-only array-like (shape, dtype, chunks, NumPy slices) over a zarr store or a TIFF file."""
    import zarr

    if hasattr(source, "shape") and hasattr(source, "chunks") and hasattr(source, "__getitem__"):
        return source
    if _is_tiff(source):
        import tifffile

        store = tifffile.imread(str(source), aszarr=True)
        opened = zarr.open(store, mode="r")
        if isinstance(opened, zarr.Group):  # a pyramid: level 0 is the full resolution
            opened = opened[sorted(opened.array_keys())[0]]
        return opened
    return zarr.open_array(str(source), mode="r")


def _tile_starts(n: int, tile: int, least: int) -> list[tuple[int, int]]:
    """``[start, stop)`` cores of ``tile`` pixels along an axis; a last one shorter than ``least`` joins its left."""
    bounds = [(s, min(s + tile, n)) for s in range(0, n, tile)]
    if len(bounds) > 1 and bounds[-1][1] - bounds[-1][0] < least:
        last = bounds.pop()
        bounds[-1] = (bounds[-1][0], last[1])
    return bounds


def store_tiles(shape: tuple, chunks: tuple, depth: Halo, tile: Any) -> tuple[tuple[int, int], list]:
    """``filter_store``'s tile size (whole source chunks, at least the halo, at most the image)
    and its tiles' cores ``((y0, y1), (x0, x1))``."""
    height, width = shape[:2]
    cy, cx = chunks[:2]
    ty, tx = (tile, tile) if isinstance(tile, int) else (tile or (2048, 2048))
    least_y, least_x = max(*depth[0], 2), max(*depth[1], 2)
    ty, tx = min(_aligned(ty, cy, least_y), height), min(_aligned(tx, cx, least_x), width)
    cores = [(ys, xs) for ys in _tile_starts(height, ty, least_y) for xs in _tile_starts(width, tx, least_x)]
    return (ty, tx), cores


def _store_tile(job: tuple) -> dict:
    """One ``filter_store`` task: read core + halo from the source, run the chain, write the core."""
    source, destination, stages, chan, out_chan, depth, backend, core = job
    import zarr

    t0 = time.perf_counter()
    src = open_source(source)
    dst = destination if hasattr(destination, "shape") else zarr.open_array(str(destination), mode="r+")
    (y0, y1), (x0, x1) = core
    (hy0, hy1), (hx0, hx1) = depth
    shape = src.shape
    ys, ye = max(y0 - hy0, 0), min(y1 + hy1, shape[0])
    xs, xe = max(x0 - hx0, 0), min(x1 + hx1, shape[1])
    block = np.asarray(src[ys:ye, xs:xe])
    with backend_scope(backend):
        out, _ = run_chain(stages, [block], chan)
        out = to_numpy(out)
    dst[y0:y1, x0:x1] = out[y0 - ys:out.shape[0] - (ye - y1), x0 - xs:out.shape[1] - (xe - x1)]
    return {"core": core, "seconds": time.perf_counter() - t0}


def _default_client(client: Any) -> Any:
    if client is not None:
        return client
    try:
        from distributed import get_client

        return get_client()
    except (ImportError, ValueError):
        return None


def _aligned(value: int, chunk: int, least: int) -> int:
    return max(chunk, chunk * math.ceil(max(value, least) / chunk))


def filter_store(src: Any, dst: Any, op: Any, /, *, tile: Any = None, client: Any = None,
                 backend: str | None = None, timeout: float | None = None, progress: bool = False,
                 **params: Any) -> Any:
    """An op or a chain from a zarr store or a TIFF file to a zarr store, one task per tile.

    Each task reads its tile grown by the chain's :func:`halo` (clipped to the image) straight
    from ``src``, runs the chain on its worker's backend, and writes the core to ``dst``. No halo
    passes between workers, and each task writes whole chunks of ``dst`` (its chunks are the
    tile), so tasks never race on a chunk.

    Parameters
    ----------
    src : str, Path or zarr array
        A zarr array, or a TIFF file (read with ``tifffile``'s zarr view; a pyramid's level 0).
        ``(H, W)`` or ``(H, W, C)``.
    dst : str, Path or zarr store
        Where the zarr output is created (overwritten), chunked by ``tile``.
    op : str, function or list
        A tileable op or chain, as :func:`filter_image` takes it; it must return one array.
    tile : int or (int, int), optional
        Core size of a task, rounded up to a multiple of ``src``'s chunks and to at least the
        halo (default: ``src``'s chunks grown to about 2048 pixels a side).
    client : dask.distributed.Client, optional
        Default: the current client if there is one, else the tiles run one by one here.
    backend : str, optional
        Backend each task runs the chain on (default: the worker's active backend).
    timeout : float, optional
        Seconds to wait for the results (a ``TimeoutError`` after that).
    progress : bool
        Show a tqdm progress bar over tiles.
    **params
        The op's parameters (single op only).

    Returns
    -------
    zarr.Array
        The output, opened read-only.

    Examples
    --------
    >>> import os, tempfile, zarr, numpy as np, portcv, portcv.distributed as pdist
    >>> folder = tempfile.mkdtemp()
    >>> img = portcv.data.synthetic_rgb(70, 90, seed=1)[..., 1]
    >>> src = zarr.create_array(os.path.join(folder, "in.zarr"), shape=img.shape, chunks=(32, 32), dtype="uint8")
    >>> src[:] = img
    >>> out = pdist.filter_store(src, os.path.join(folder, "out.zarr"), "median_filter", ksize=5, tile=32)
    >>> bool((out[:] == portcv.to_numpy(portcv.filters.median_filter(img, 5))).all())
    True
    """
    import zarr

    stages = resolve_chain(op, params)
    if stages[0].spec.inputs != 1:
        raise ValueError(f"filter_store takes one image; {stages[0].name} takes {stages[0].spec.inputs}")
    source = open_source(src)
    chan = _first_stage_layout(stages[0], source, None)
    if source.ndim != (3 if chan else 2):
        raise ValueError(f"filter_store takes one (H, W) or (H, W, C) image, got shape {source.shape}")
    depth = chain_halo(stages)
    info = _probe(stages, [source.shape], [source.dtype], chan)
    if info["several"]:
        raise ValueError(f"the chain ends with {stages[-1].name}, which returns {info['count']} arrays; "
                         "filter_store writes one (end the chain with an op returning one array)")
    height, width = source.shape[:2]
    (ty, tx), cores = store_tiles(source.shape, source.chunks, depth, tile)
    out_shape = (height, width) + ((info["channels"],) if info["chan"] else ())
    out_chunks = (ty, tx) + ((info["channels"],) if info["chan"] else ())
    if hasattr(dst, "shape"):
        raise TypeError("dst must be a path or a zarr store (filter_store creates the output array)")
    target = zarr.create_array(dst if not hasattr(dst, "__fspath__") else str(dst), shape=out_shape,
                               chunks=out_chunks, dtype=info["dtype"], overwrite=True, fill_value=0)
    src_ref = src if not hasattr(src, "__fspath__") else str(src)
    dst_ref = dst if not hasattr(dst, "__fspath__") else str(dst)
    jobs = [(src_ref, dst_ref, stages, chan, info["chan"], depth, backend, core) for core in cores]
    for _ in _run_jobs(_store_tile, jobs, _default_client(client), timeout, progress, "filter_store"):
        pass
    return zarr.open_array(target.store, mode="r")


def _run_jobs(fn: Any, jobs: list, client: Any, timeout: float | None, progress: bool, desc: str) -> Iterator[Any]:
    """``fn`` over ``jobs`` on the cluster (in completion order), or here one by one."""
    bar = _bar(len(jobs), desc) if progress else None
    try:
        if client is None:
            for job in jobs:
                yield fn(job)
                if bar is not None:
                    bar.update(1)
            return
        from distributed import as_completed

        futures = client.map(fn, jobs, pure=False, retries=1)
        for future in as_completed(futures, timeout=timeout):
            yield future.result()
            if bar is not None:
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()


def _bar(total: int, desc: str) -> Any:
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc=desc, unit="task")
