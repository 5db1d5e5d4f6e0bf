"""Huge images tile by tile: ``filter_image`` (lazy, dask arrays and xarray) and ``filter_store``
(eager, zarr or TIFF in, zarr out). Both run the same chain on each tile grown by the chain's halo
and keep the core, so the result equals one call on the whole image bit for bit.

The op's own border rule must apply at the true image edge only, so tiles are never padded by
dask (dask's ``'reflect'`` repeats the edge pixel, which is not portcv's reflect-101): edge tiles
simply have no halo on their outer side (``boundary='none'``) and the op pads them itself.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import json
import math
import numbers
import os
import shutil
import time
import warnings
from typing import Any, Sequence

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
    elif layout == "planes":
        if chan:
            raise ValueError(f"{stage.name} takes (..., H, W) planes but its input has channels")
        if takes_channel_axis(stage.fn):  # the layout is decided once, globally: a batch of planes
            params["channel_axis"] = None
    if len(args) != stage.spec.inputs:
        raise ValueError(f"{stage.name} takes {stage.spec.inputs} image(s) but gets {len(args)} "
                         "(from the caller or the previous stage of the chain)")
    out = stage.fn(*args, **params)
    out_chan = chan if stage.spec.out == "same" else stage.spec.out == "rgb"
    return out, out_chan


@functools.lru_cache(maxsize=None)
def takes_channel_axis(fn: Any) -> bool:
    """Whether an op has a ``channel_axis`` parameter (plane ops that refuse colour-looking input do)."""
    return "channel_axis" in inspect.signature(fn).parameters


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
    if layout == "planes" and not forced and takes_channel_axis(stage.fn):
        _validate.gray(array, "image", given)  # the op's own rule for colour-looking planes, on the whole array
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
    from ._cluster import backend_name

    backend = backend_name(backend, optional=True)
    allow_rechunk = check_flag(allow_rechunk, "allow_rechunk")
    images = list(image) if isinstance(image, (tuple, list)) else [image]
    if not images:
        raise ValueError("image: an empty tuple; give a dask array, or a tuple of two for two-image ops")
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
#: The attribute of every array ``filter_store`` writes: ``False`` until its last tile is written.
COMPLETE_ATTR = "portcv_complete"
#: What a path destination's temporary sibling is called until it is moved into place.
UNFINISHED_TAG = ".portcv-unfinished-"
#: A file put in an abandoned temporary output: tasks still queued on the cluster skip their tile.
ABANDONED_MARK = "portcv-abandoned"
#: Seconds an abandoned run waits for its queued and running tasks before the temporary output is removed.
DRAIN_SECONDS = 60.0
MISSING_CHUNKS = ("error", "fill")


class StoreError(ValueError):
    """A store ``filter_store`` reads is damaged or incomplete: a missing or undecodable chunk of a
    zarr store or TIFF file, or an unfinished ``filter_store`` output. The message names the chunk
    and the store."""


def _is_tiff(source: Any) -> bool:
    return isinstance(source, str) and source.lower().endswith((".tif", ".tiff")) or (
        hasattr(source, "suffix") and str(source.suffix).lower() in (".tif", ".tiff"))


def _is_path(value: Any) -> bool:
    return isinstance(value, (str, os.PathLike))


def _local_root(store: Any) -> str | None:
    """A zarr ``LocalStore``'s folder (its chunks are files there), else None."""
    import zarr

    return os.fspath(store.root) if isinstance(store, zarr.storage.LocalStore) else None


def store_label(array: Any) -> str:
    """Where a zarr array lives, for messages: its folder on disk, or its store's URL."""
    root = _local_root(getattr(array, "store", None))
    if root is not None:
        return os.path.join(root, array.path) if array.path else root
    return str(getattr(array, "store_path", type(array).__name__))


def open_source(source: Any) -> Any:
    """A read-only array-like (shape, dtype, chunks, NumPy slices) over a zarr store or a TIFF file.

    Raises :class:`StoreError` for a TIFF file that cannot be parsed and for an unfinished
    ``filter_store`` output (its ``portcv_complete`` attribute is false).
    """
    import zarr

    if isinstance(source, zarr.Array):
        opened = source
    elif hasattr(source, "shape") and hasattr(source, "chunks") and hasattr(source, "__getitem__"):
        return source  # another chunked array-like (h5py, ...): read as it is, its chunks unchecked
    elif not _is_path(source):
        raise TypeError(f"src must be a path to a zarr array or a TIFF file, or a zarr.Array, "
                        f"got {type(source).__name__}")
    elif _is_tiff(source):
        import tifffile

        path = os.fspath(source)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"src {path!r}: no such TIFF file")
        try:
            opened = zarr.open(tifffile.imread(path, aszarr=True), mode="r")
        except Exception as exc:  # not a TIFF, truncated header, unsupported layout
            raise StoreError(f"src {path!r} cannot be read as a TIFF file: {_error_name(exc)}: {exc}") from None
        if isinstance(opened, zarr.Group):  # a pyramid: level 0 is the full resolution
            opened = opened[sorted(opened.array_keys())[0]]
    else:
        path = os.fspath(source)
        try:
            opened = zarr.open_array(path, mode="r")
        except FileNotFoundError:
            raise FileNotFoundError(f"src {path!r}: no zarr array there") from None
        except (ValueError, KeyError, OSError) as exc:  # a group, or damaged metadata
            raise StoreError(f"src {path!r} is not a readable zarr array: {_error_name(exc)}: {exc}") from None
    if opened.attrs.get(COMPLETE_ATTR, True) is False:
        raise StoreError(f"src {source_label(source, opened)!r} is an unfinished filter_store output (its "
                         f"{COMPLETE_ATTR!r} attribute is false: the run writing it stopped before its last tile); "
                         "run it again")
    return opened


def _error_name(exc: BaseException) -> str:
    """``RuntimeError``, ``zlib.error``: the exception's type, with its module unless a builtin."""
    module = type(exc).__module__
    return type(exc).__name__ if module == "builtins" else f"{module}.{type(exc).__name__}"


def source_label(source: Any, opened: Any) -> str:
    """The source as messages name it: the path given, or where the zarr array lives."""
    return os.fspath(source) if _is_path(source) else store_label(opened)


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


def _region_chunks(src: Any, rows: tuple[int, int], cols: tuple[int, int]) -> list[tuple[str, tuple]]:
    """The storage keys (and slices) of every chunk of a zarr array that rows x cols touches
    (every chunk of the channel axis); ``[]`` for other array-likes."""
    import itertools

    import zarr

    if not isinstance(src, zarr.Array):
        return []
    grid = tuple(src.shards or src.chunks)  # a shard is the unit stored under one key
    ranges = [range(rows[0] // grid[0], -(-rows[1] // grid[0])), range(cols[0] // grid[1], -(-cols[1] // grid[1]))]
    ranges += [range(-(-n // g)) for n, g in zip(src.shape[2:], grid[2:])]
    out = []
    for coords in itertools.product(*ranges):
        key = src.metadata.encode_chunk_key(coords)
        out.append((key, tuple(slice(c * g, min((c + 1) * g, n)) for c, g, n in zip(coords, grid, src.shape))))
    return out


def _chunk_exists(src: Any, key: str) -> bool:
    full = f"{src.path}/{key}" if src.path else key
    root = _local_root(src.store)
    if root is not None:  # a chunk is a file (a folder in its place is no chunk)
        return os.path.isfile(os.path.join(root, full))
    from zarr.core.sync import sync

    return bool(sync(src.store.exists(full)))


def read_region(src: Any, rows: tuple[int, int], cols: tuple[int, int], missing_chunks: str = "error",
                label: str | None = None) -> np.ndarray:
    """``src[rows, cols]`` as NumPy, refusing a missing chunk and naming the chunk that cannot be decoded.

    zarr reads a chunk that is not in the store as the fill value, which is right for a sparse
    store and wrong for a damaged one (a deleted chunk file, a shape edited larger): with
    ``missing_chunks='error'`` every chunk the region touches must exist. A sharded array's
    shards must exist; chunks left out inside a shard read as the fill value.
    """
    label = label or store_label(src)
    chunks = _region_chunks(src, rows, cols)
    if missing_chunks == "error":
        for key, _ in chunks:
            if not _chunk_exists(src, key):
                raise StoreError(
                    f"chunk {key!r} of {label!r} is missing (rows {rows[0]}:{rows[1]}, columns "
                    f"{cols[0]}:{cols[1]} need it). A deleted chunk reads as the fill value, so filter_store "
                    "refuses it; zarr leaves out chunks equal to the fill value when write_empty_chunks is "
                    "False, so if this store is sparse by design pass missing_chunks='fill' to read them as "
                    "the fill value")
    try:
        return np.asarray(src[rows[0]:rows[1], cols[0]:cols[1]])
    except MemoryError:
        raise
    except Exception as exc:  # codec errors (Zstd, zlib), short chunks, unreadable files
        bad = None
        for key, where in chunks:  # which chunk: each read alone (only on this error path)
            try:
                src[where]
            except Exception:  # noqa: BLE001 - the culprit
                bad = key
                break
        where = f"chunk {bad!r} of {label!r}" if bad is not None else \
            f"rows {rows[0]}:{rows[1]}, columns {cols[0]}:{cols[1]} of {label!r}"
        raise StoreError(f"cannot decode {where}: {_error_name(exc)}: {exc}") from exc


def _abandoned(output: Any) -> bool:
    """Whether a temporary output was given up (the run failed): a queued task then skips its tile."""
    return _is_path(output) and (not os.path.isdir(output) or os.path.exists(os.path.join(output, ABANDONED_MARK)))


def _store_tile(job: tuple) -> dict:
    """One ``filter_store`` task: read core + halo from the source, run the chain, write the core."""
    source, output, stages, chan, out_chan, depth, backend, core, missing_chunks = job
    import zarr

    t0 = time.perf_counter()
    if _abandoned(output):
        return {"core": core, "seconds": 0.0, "skipped": True}
    src = open_source(source)
    (y0, y1), (x0, x1) = core
    (hy0, hy1), (hx0, hx1) = depth
    shape = src.shape
    ys, ye = max(y0 - hy0, 0), min(y1 + hy1, shape[0])
    xs, xe = max(x0 - hx0, 0), min(x1 + hx1, shape[1])
    block = read_region(src, (ys, ye), (xs, xe), missing_chunks, source_label(source, src))
    with backend_scope(backend):
        out, _ = run_chain(stages, [block], chan)
        out = to_numpy(out)
    if _abandoned(output):
        return {"core": core, "seconds": time.perf_counter() - t0, "skipped": True}
    # Every chunk is written, even one equal to the fill value: the output is a valid source.
    dst = zarr.open_array(output, mode="r+").with_config({"write_empty_chunks": True})
    dst[y0:y1, x0:x1] = out[y0 - ys:out.shape[0] - (ye - y1), x0 - xs:out.shape[1] - (xe - x1)]
    return {"core": core, "seconds": time.perf_counter() - t0, "skipped": False}


def _default_client(client: Any) -> Any:
    if client is not None:
        if not hasattr(client, "map") or not hasattr(client, "submit"):
            raise TypeError(f"client must be a dask.distributed Client, got {type(client).__name__}")
        return client
    try:
        from distributed import get_client

        return get_client()
    except (ImportError, ValueError):
        return None


def _aligned(value: int, chunk: int, least: int) -> int:
    return max(chunk, chunk * math.ceil(max(value, least) / chunk))


def check_timeout(timeout: Any) -> float | None:
    """``timeout``: ``None`` or a positive number of seconds."""
    return None if timeout is None else _validate.real(timeout, "timeout", positive=True)


def check_flag(value: Any, name: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {type(value).__name__}")
    return bool(value)


def _tile_arg(tile: Any) -> Any:
    if tile is None:
        return None
    pair = tuple(tile) if isinstance(tile, (tuple, list)) else None
    if pair is None:
        return _validate.integer(tile, "tile", low=1)
    if len(pair) != 2:
        raise ValueError(f"tile must be an int or a (rows, columns) pair, got {tile!r}")
    return _validate.integer(pair[0], "tile", low=1), _validate.integer(pair[1], "tile", low=1)


def _location(obj: Any) -> tuple | None:
    """What ``obj`` (a path, a zarr array or a zarr store) occupies: ``("path", real path)`` on the
    local disk, ``("store", id(store), key prefix)`` in another store, ``None`` if unknown."""
    import zarr

    if _is_path(obj):
        return ("path", os.path.realpath(os.fspath(obj)))
    store, prefix = obj, ""
    if isinstance(obj, zarr.Array):
        store, prefix = obj.store, obj.path
    elif isinstance(obj, zarr.storage.StorePath):
        store, prefix = obj.store, obj.path
    root = getattr(store, "root", None)
    if isinstance(store, zarr.storage.LocalStore) and root is not None:
        return ("path", os.path.realpath(os.path.join(os.fspath(root), prefix)))
    if isinstance(store, zarr.abc.store.Store):
        return ("store", id(store), prefix)
    return None


def _overlaps(a: tuple | None, b: tuple | None) -> bool:
    if a is None or b is None or a[:-1] != b[:-1]:
        return False
    x, y = a[-1], b[-1]
    sep = os.sep if a[0] == "path" else "/"
    return x == y or not x or not y or x.startswith(y.rstrip(sep) + sep) or y.startswith(x.rstrip(sep) + sep)


def _is_zarr_array_folder(path: str) -> bool:
    if os.path.isfile(os.path.join(path, ".zarray")):
        return True
    try:
        with open(os.path.join(path, "zarr.json"), encoding="utf-8") as fh:
            return json.load(fh).get("node_type") == "array"
    except (OSError, ValueError, AttributeError):
        return False


def _destination(dst: Any) -> tuple[str, Any]:
    """``("path", real path)`` for a folder destination (written beside it, moved into place), or
    ``("store", store)`` for a store object (written in place)."""
    import zarr

    if hasattr(dst, "shape"):
        raise TypeError("dst must be a path or a zarr store (filter_store creates the output array), "
                        f"got {type(dst).__name__}")
    if isinstance(dst, zarr.storage.LocalStore):
        if dst.read_only:
            raise ValueError(f"dst {dst!r} is opened read-only")
        dst = dst.root
    if _is_path(dst):
        return "path", os.path.realpath(os.fspath(dst))
    if isinstance(dst, (zarr.abc.store.Store, zarr.storage.StorePath, dict)):
        return "store", dst
    raise TypeError(f"dst must be a path or a zarr store, got {type(dst).__name__}")


def _check_replaceable(where: str, dst: Any) -> None:
    """A path destination is replaced only if it is a zarr array or an empty folder."""
    if os.path.isfile(where):
        raise ValueError(f"dst {dst!r} is a file, not a zarr array: filter_store writes a zarr folder and "
                         "replaces only a zarr array")
    if os.path.isdir(where) and os.listdir(where) and not _is_zarr_array_folder(where):
        raise ValueError(f"dst {dst!r} is a folder that is not a zarr array (a group, or other files): "
                         "filter_store replaces only a zarr array; remove it or pick another dst")


def _create_output(kind: str, where: Any, shape: tuple, chunks: tuple, dtype: Any) -> Any:
    """The array the tiles are written to, marked unfinished: a temporary sibling of a path
    destination (the name says it is unfinished), or the store itself."""
    import secrets

    import zarr

    attrs = {COMPLETE_ATTR: False}
    if kind == "path":
        parent, name = os.path.split(where)
        os.makedirs(parent, exist_ok=True)
        output = os.path.join(parent, f"{name}{UNFINISHED_TAG}{secrets.token_hex(4)}")
        zarr.create_array(output, shape=shape, chunks=chunks, dtype=dtype, fill_value=0, attributes=attrs)
        return output
    zarr.create_array(where, shape=shape, chunks=chunks, dtype=dtype, fill_value=0, overwrite=True,
                      attributes=attrs)
    return where


def _finish_output(kind: str, where: Any, output: Any) -> None:
    """Mark the output complete; a path's temporary replaces the destination only now."""
    import secrets

    import zarr

    zarr.open_array(output, mode="r+").update_attributes({COMPLETE_ATTR: True})
    if kind != "path":
        return
    old = None
    if os.path.lexists(where):  # moved aside, not removed, until the new output is in place
        old = f"{where}.portcv-replaced-{secrets.token_hex(4)}"
        os.rename(where, old)
    try:
        os.rename(output, where)
    except BaseException:
        if old is not None:
            os.rename(old, where)
        raise
    if old is not None:
        try:
            shutil.rmtree(old)
        except OSError as exc:
            warnings.warn(f"filter_store wrote {where!r} but could not remove the array it replaced, now at "
                          f"{old!r}: {exc}", RuntimeWarning, stacklevel=3)


def _abandon_output(kind: str, output: Any) -> None:
    """A failed run: a path's temporary is removed (the destination was never touched); a store
    object keeps its array marked unfinished, which :func:`open_source` refuses."""
    if kind == "path":
        shutil.rmtree(output, ignore_errors=True)


def filter_store(src: Any, dst: Any, op: Any, /, *, tile: Any = None, client: Any = None,
                 backend: str | None = None, timeout: float | None = None, progress: bool = False,
                 missing_chunks: str = "error", **params: Any) -> Any:
    """An op or a chain from a zarr store or a TIFF file to a zarr store, one task per tile.

    Each task reads its tile grown by the chain's :func:`halo` (clipped to the image) straight
    from ``src``, runs the chain on its worker's backend, and writes the core to ``dst``. No halo
    passes between workers, and each task writes whole chunks of ``dst`` (its chunks are the
    tile), so tasks never race on a chunk.

    Nothing is lost on failure. A path ``dst`` is written into a temporary sibling folder
    (``<name>.portcv-unfinished-<random>``, in the same folder) that replaces ``dst`` only after
    every tile is written; on any error, timeout or ``KeyboardInterrupt`` the temporary is removed
    and an existing ``dst`` is left as it was. A store object cannot be renamed, so it is written
    in place (an array already there is overwritten at the start) and its ``portcv_complete``
    attribute stays ``False`` until the last tile: ``filter_store`` refuses such an unfinished
    array as a source. Pass a path where the old contents must survive a failure.

    Parameters
    ----------
    src : str, Path or zarr.Array
        A zarr array, or a TIFF file (read with ``tifffile``'s zarr view; a pyramid's level 0).
        ``(H, W)`` or ``(H, W, C)``.
    dst : str, Path or zarr store
        Where the zarr output goes, chunked by ``tile``; every chunk is written, so it is a valid
        source in turn. It must not be ``src`` nor overlap it (a folder inside the other). An
        existing ``dst`` must be a zarr array (it is replaced) or an empty folder.
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
        Seconds for the whole run, here or on the cluster: a ``TimeoutError`` after that (and no
        output kept).
    progress : bool
        Show a tqdm progress bar over tiles.
    missing_chunks : {'error', 'fill'}
        A chunk of ``src`` that is not in the store (or a TIFF tile with no data): ``'error'``
        (default) raises :class:`StoreError` naming it, since a damaged store reads as the fill
        value; ``'fill'`` reads it as the fill value, for stores that are sparse by design (zarr
        leaves out chunks equal to the fill value when ``write_empty_chunks`` is ``False``).
    **params
        The op's parameters (single op only).

    Returns
    -------
    zarr.Array
        The output, opened read-only.

    Raises
    ------
    StoreError
        A missing chunk (``missing_chunks='error'``) or one that cannot be decoded (naming the
        chunk and the store), a TIFF file that cannot be parsed, or an unfinished output as
        ``src``.
    ValueError
        ``dst`` is or overlaps ``src``, or is a file or a non-array folder; bad parameters.
    TimeoutError
        ``timeout`` passed before every tile was written.

    Examples
    --------
    >>> import os, tempfile, zarr, numpy as np, portcv, portcv.distributed as pdist
    >>> folder = tempfile.TemporaryDirectory()
    >>> img = portcv.data.synthetic_rgb(70, 90, seed=1)[..., 1]
    >>> src = zarr.create_array(os.path.join(folder.name, "in.zarr"), shape=img.shape, chunks=(32, 32),
    ...                         dtype="uint8")
    >>> src[:] = img
    >>> out = pdist.filter_store(src, os.path.join(folder.name, "out.zarr"), "median_filter", ksize=5, tile=32)
    >>> bool((out[:] == portcv.to_numpy(portcv.filters.median_filter(img, 5))).all())
    True
    >>> folder.cleanup()
    """
    import zarr

    from ._cluster import backend_name

    stages = resolve_chain(op, params)
    if stages[0].spec.inputs != 1:
        raise ValueError(f"filter_store takes one image; {stages[0].name} takes {stages[0].spec.inputs}")
    tile = _tile_arg(tile)
    backend = backend_name(backend, optional=True)
    timeout = check_timeout(timeout)
    progress = check_flag(progress, "progress")
    missing_chunks = _validate.choice(missing_chunks, "missing_chunks", MISSING_CHUNKS)
    client = _default_client(client)
    source = open_source(src)
    kind, where = _destination(dst)
    if _overlaps(_location(src if _is_path(src) else source), _location(where)):
        raise ValueError(f"dst {dst!r} is the source or overlaps it (src {src!r}): filter_store reads src while "
                         "it writes dst; pick a dst outside the source (and the source outside dst)")
    if kind == "path":
        _check_replaceable(where, dst)
    chunks = tuple(source.chunks) if source.chunks is not None else ()
    if len(chunks) != source.ndim or not all(isinstance(c, numbers.Integral) and c > 0 for c in chunks):
        raise TypeError(f"src must be chunked with one int per axis, got chunks {source.chunks!r}")
    chan = _first_stage_layout(stages[0], source, None)
    if source.ndim != (3 if chan else 2):
        raise ValueError(f"filter_store takes one (H, W) or (H, W, C) image, got shape {source.shape}")
    depth = chain_halo(stages)
    info = _probe(stages, [source.shape], [source.dtype], chan)
    if info["several"]:
        raise ValueError(f"the chain ends with {stages[-1].name}, which returns {info['count']} arrays; "
                         "filter_store writes one (end the chain with an op returning one array)")
    height, width = source.shape[:2]
    (ty, tx), cores = store_tiles(source.shape, chunks, depth, tile)
    out_shape = (height, width) + ((info["channels"],) if info["chan"] else ())
    out_chunks = (ty, tx) + ((info["channels"],) if info["chan"] else ())
    src_ref = os.fspath(src) if _is_path(src) else src
    output = _create_output(kind, where, out_shape, out_chunks, info["dtype"])
    try:
        jobs = [(src_ref, output, stages, chan, info["chan"], depth, backend, core, missing_chunks) for core in cores]
        _run_tiles(jobs, client, timeout, progress, output)
        _finish_output(kind, where, output)
    except BaseException:
        _abandon_output(kind, output)
        raise
    return zarr.open_array(where, mode="r")


def _run_tiles(jobs: list, client: Any, timeout: float | None, progress: bool, output: Any) -> None:
    """Every tile, on the cluster or here one by one, within ``timeout`` seconds in all.

    On a failure the cluster's queued and running tasks are drained before the caller removes the
    temporary output: a task still running would otherwise write its chunk into a removed folder
    (recreating part of it). Queued tasks see the abandoned mark and skip their tile.
    """
    bar = _bar(len(jobs), "filter_store") if progress else None
    deadline = None if timeout is None else time.monotonic() + timeout
    done = 0

    def late() -> TimeoutError:
        return TimeoutError(f"filter_store: {done} of {len(jobs)} tiles written when timeout={timeout:g} s passed; "
                            "the output is not kept")

    try:
        if client is None:
            for job in jobs:
                if deadline is not None and time.monotonic() > deadline:
                    raise late()
                _written(_store_tile(job), output)
                done += 1
                if bar is not None:
                    bar.update(1)
            return
        from distributed import as_completed

        futures = client.map(_store_tile, jobs, pure=False, retries=1)
        try:
            results = as_completed(futures, timeout=timeout)
            while True:
                try:
                    future = next(results)
                except StopIteration:
                    break
                except TimeoutError:
                    raise late() from None
                _written(future.result(), output)
                done += 1
                if bar is not None:
                    bar.update(1)
        except BaseException:
            _drain(client, futures, output)
            raise
    finally:
        if bar is not None:
            bar.close()


def _written(result: dict, output: Any) -> None:
    if result["skipped"]:  # only a run that gave up marks its output: here someone removed it
        raise StoreError(f"the temporary output {output!r} disappeared while filter_store was writing it")


def _drain(client: Any, futures: list, output: Any) -> None:
    """Mark the temporary output abandoned and wait (bounded) until no task can still write to it."""
    from distributed import wait

    if _is_path(output) and os.path.isdir(output):
        with contextlib.suppress(OSError):
            open(os.path.join(output, ABANDONED_MARK), "w").close()
    try:
        wait(futures, timeout=DRAIN_SECONDS)
    except Exception:  # noqa: BLE001 - a timeout or a lost scheduler: remove what is there
        pass
    client.cancel(futures)


def _bar(total: int, desc: str) -> Any:
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc=desc, unit="task")
