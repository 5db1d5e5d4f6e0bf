"""``filter_store`` never loses data and never returns garbage: real zarr stores and TIFF files on disk.

The source is never the destination; a destination is replaced only once every tile is written
(an interrupted run leaves the old one as it was and no temporary behind); a missing or
corrupted chunk is a ``StoreError`` naming the chunk and the store, never fill values. All
serial (``client=None``); the cluster cases are in test_cluster.py. Images are small (at most
70 x 90) and every case uses one tile shape, so the suite pays little for them.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import portcv

zarr = pytest.importorskip("zarr", reason="zarr not installed (pip install 'portcv[distributed]')")
tifffile = pytest.importorskip("tifffile", reason="tifffile not installed (pip install 'portcv[distributed]')")

import portcv.distributed as pdist  # noqa: E402
from portcv.distributed import _tiles  # noqa: E402

IMG = portcv.data.synthetic_rgb(70, 90, seed=1)[..., 1]
OP = {"op": "median_filter", "ksize": 3, "tile": 32}


def _median(img):
    with portcv.using("numpy"):
        return portcv.to_numpy(portcv.filters.median_filter(img, 3))


def _store(path, img=IMG, chunks=(32, 32)):
    where = str(path) if isinstance(path, os.PathLike) else path
    array = zarr.create_array(where, shape=img.shape, chunks=chunks, dtype="uint8", overwrite=True)
    array[:] = img
    return array


def _run(src, dst, **kw):
    params = {**OP, **kw}
    return pdist.filter_store(src, dst, params.pop("op"), **params)


def _listing(folder):
    return sorted(os.listdir(folder))


# --------------------------------------------------------------------------------------------
# The destination: never the source, replaced only when complete
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("where", ["same", "same-str-and-path", "inside", "parent", "array-object"])
def test_a_destination_that_is_or_overlaps_the_source_is_refused_before_anything_is_written(tmp_path, where):
    src = tmp_path / "data" / "in.zarr"
    array = _store(src)
    dst = {"same": str(src), "same-str-and-path": src, "inside": src / "out", "parent": tmp_path / "data",
           "array-object": str(src)}[where]
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    with pytest.raises(ValueError, match="dst .* overlaps"):
        _run(array if where == "array-object" else str(src), dst)
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before
    assert np.array_equal(zarr.open_array(str(src), mode="r")[:], IMG)


def test_the_same_memory_store_as_source_and_destination_is_refused():
    store = zarr.storage.MemoryStore()
    array = _store(store)
    with pytest.raises(ValueError, match="dst .* overlaps"):
        _run(array, store)
    assert np.array_equal(array[:], IMG)


@pytest.mark.parametrize("fail", ["interrupt", "error"])
def test_an_interrupted_run_leaves_the_old_destination_and_no_temporary(tmp_path, monkeypatch, fail):
    src, dst = _store(tmp_path / "in.zarr"), tmp_path / "out.zarr"
    old = zarr.create_array(str(dst), shape=(4, 5), chunks=(2, 2), dtype="uint8")
    old[:] = 7
    real = _tiles._store_tile
    calls = []

    def dies_on_the_third_tile(job):
        calls.append(job)
        if len(calls) == 3:
            raise KeyboardInterrupt if fail == "interrupt" else OSError("disk full")
        return real(job)

    monkeypatch.setattr(_tiles, "_store_tile", dies_on_the_third_tile)
    with pytest.raises(KeyboardInterrupt if fail == "interrupt" else OSError):
        _run(src, dst)
    assert len(calls) == 3  # two tiles were written into the temporary before it stopped
    assert _listing(tmp_path) == ["in.zarr", "out.zarr"]
    kept = zarr.open_array(str(dst), mode="r")
    assert kept.shape == (4, 5) and (kept[:] == 7).all()
    monkeypatch.setattr(_tiles, "_store_tile", real)
    out = _run(src, dst)  # a complete run replaces it
    assert np.array_equal(out[:], _median(IMG)) and out.attrs[_tiles.COMPLETE_ATTR] is True
    assert _listing(tmp_path) == ["in.zarr", "out.zarr"]


def test_a_timeout_in_a_serial_run_keeps_no_output(tmp_path):
    src = _store(tmp_path / "in.zarr")
    with pytest.raises(TimeoutError, match="of 9 tiles"):
        _run(src, tmp_path / "out.zarr", timeout=1e-9)
    assert _listing(tmp_path) == ["in.zarr"]


def test_a_store_object_destination_says_unfinished_until_its_last_tile(tmp_path, monkeypatch):
    src, store = _store(tmp_path / "in.zarr"), zarr.storage.MemoryStore()
    monkeypatch.setattr(_tiles, "_store_tile", lambda job: (_ for _ in ()).throw(KeyboardInterrupt))
    with pytest.raises(KeyboardInterrupt):
        _run(src, store)
    monkeypatch.undo()
    unfinished = zarr.open_array(store, mode="r")
    assert unfinished.attrs[_tiles.COMPLETE_ATTR] is False
    with pytest.raises(pdist.StoreError, match="unfinished filter_store output"):
        _run(unfinished, tmp_path / "again.zarr")
    out = _run(src, store)
    assert out.attrs[_tiles.COMPLETE_ATTR] is True and np.array_equal(out[:], _median(IMG))
    assert np.array_equal(_run(out, tmp_path / "again.zarr")[:], _median(_median(IMG)))


@pytest.mark.parametrize("kind", ["file", "folder", "group"])
def test_a_destination_that_is_not_a_zarr_array_is_never_replaced(tmp_path, kind):
    src, dst = _store(tmp_path / "in.zarr"), tmp_path / "mine"
    if kind == "file":
        dst.write_bytes(b"precious")
    elif kind == "folder":
        dst.mkdir()
        (dst / "notes.txt").write_text("precious")
    else:
        zarr.create_array(str(dst / "a"), shape=(2, 2), dtype="uint8")
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    with pytest.raises(ValueError, match="dst"):
        _run(src, dst)
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


# --------------------------------------------------------------------------------------------
# The source: every chunk a tile needs must exist and decode
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("damage", ["deleted", "folder", "larger-shape"])
def test_a_missing_chunk_is_an_error_naming_it_not_fill_values(tmp_path, damage):
    src = tmp_path / "in.zarr"
    _store(src)
    key = "c/1/2"
    if damage == "deleted":
        os.remove(src / key)
    elif damage == "folder":
        os.remove(src / key)
        os.mkdir(src / key)
    else:
        meta = json.loads((src / "zarr.json").read_text())
        meta["shape"] = [140, 90]
        (src / "zarr.json").write_text(json.dumps(meta))
        key = "c/3/0"
    with pytest.raises(pdist.StoreError, match=f"chunk '{key}' of '.*in.zarr' is missing.*missing_chunks='fill'"):
        _run(str(src), tmp_path / "out.zarr")
    assert _listing(tmp_path) == ["in.zarr"]


def test_missing_chunks_fill_reads_a_sparse_store_as_its_fill_value(tmp_path):
    sparse = IMG.copy()
    sparse[32:64, 64:] = 0  # a chunk equal to the fill value: zarr does not write it
    array = _store(tmp_path / "in.zarr", sparse)
    assert not (tmp_path / "in.zarr" / "c" / "1" / "2").exists()
    with pytest.raises(pdist.StoreError, match="missing"):
        _run(array, tmp_path / "out.zarr")
    out = _run(array, tmp_path / "out.zarr", missing_chunks="fill")
    assert np.array_equal(out[:], _median(sparse))
    with pytest.raises(ValueError, match="missing_chunks"):
        _run(array, tmp_path / "out.zarr", missing_chunks="zeros")


def test_the_output_has_every_chunk_so_it_is_a_source_in_turn(tmp_path):
    black = np.zeros_like(IMG)  # every output chunk equals the fill value
    out = _run(_store(tmp_path / "in.zarr", black, chunks=(70, 90)), tmp_path / "out.zarr", missing_chunks="fill")
    grid = [-(-n // c) for n, c in zip(out.shape, out.chunks)]
    chunk_files = [tmp_path / "out.zarr" / "c" / str(i) / str(j) for i in range(grid[0]) for j in range(grid[1])]
    assert all(f.is_file() for f in chunk_files)
    assert np.array_equal(_run(out, tmp_path / "again.zarr")[:], black)


def test_a_corrupted_zarr_chunk_is_a_store_error_naming_it(tmp_path):
    src = tmp_path / "in.zarr"
    _store(src)
    (src / "c" / "1" / "1").write_bytes(b"not zstd" * 8)
    with pytest.raises(pdist.StoreError, match=r"cannot decode chunk 'c/1/1' of '.*in.zarr': RuntimeError: Zstd"):
        _run(str(src), tmp_path / "out.zarr")
    assert _listing(tmp_path) == ["in.zarr"]


@pytest.fixture(scope="module")
def tiff_bytes():
    """A zlib-compressed tiled RGB TIFF, in memory."""
    import io

    buffer = io.BytesIO()
    tifffile.imwrite(buffer, portcv.data.synthetic_rgb(64, 64, seed=2), tile=(32, 32), photometric="rgb",
                     compression="zlib")
    return buffer.getvalue()


@pytest.mark.parametrize("damage", ["truncated", "corrupted", "not-a-tiff", "truncated-raw"])
def test_a_damaged_tiff_is_a_store_error_naming_it(tmp_path, tiff_bytes, damage):
    path = tmp_path / "scene.tif"
    if damage == "truncated":
        path.write_bytes(tiff_bytes[: len(tiff_bytes) // 2])
        match = r"cannot decode chunk '(\d\.\d\.0|c/\d/\d/0)' of '.*scene.tif': zlib.error"  # the key as zarr 3.1 / 3.4 spell it
    elif damage == "corrupted":
        data = bytearray(tiff_bytes)
        for i in range(len(data) // 3, len(data) // 3 + 100):
            data[i] ^= 0x5A
        path.write_bytes(bytes(data))
        match = r"cannot decode chunk .* of '.*scene.tif'"
    elif damage == "not-a-tiff":
        path.write_bytes(b"II*\x00 not really")
        match = r"src '.*scene.tif' cannot be read as a TIFF file"
    else:  # uncompressed: tifffile reads a short tile
        tifffile.imwrite(path, portcv.data.synthetic_rgb(64, 64, seed=2), tile=(32, 32), photometric="rgb")
        path.write_bytes(path.read_bytes()[:6000])
        match = r"cannot decode chunk .* of '.*scene.tif'"
    with pytest.raises(pdist.StoreError, match=match):
        _run(path, tmp_path / "out.zarr")
    assert _listing(tmp_path) == ["scene.tif"]


def test_store_error_is_a_value_error_that_pickles():
    import pickle

    err = pdist.StoreError("chunk 'c/0/0' of 'in.zarr' is missing")
    assert isinstance(err, ValueError) and str(pickle.loads(pickle.dumps(err))) == str(err)


# --------------------------------------------------------------------------------------------
# Arguments
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kw,exc,match", [
    ({"tile": 0}, ValueError, "tile"),
    ({"tile": "big"}, TypeError, "tile"),
    ({"tile": (32, 32, 32)}, ValueError, "tile"),
    ({"timeout": -1}, ValueError, "timeout"),
    ({"timeout": "5"}, TypeError, "timeout"),
    ({"progress": "yes"}, TypeError, "progress"),
    ({"backend": "bogus"}, ValueError, "backend"),
    ({"client": 3}, TypeError, "client"),
    ({"ksize": 4}, ValueError, "ksize"),
])
def test_filter_store_checks_its_arguments_before_writing(tmp_path, kw, exc, match):
    src = _store(tmp_path / "in.zarr")
    with pytest.raises(exc, match=match):
        _run(src, tmp_path / "out.zarr", **kw)
    assert _listing(tmp_path) == ["in.zarr"]


@pytest.mark.parametrize("src,exc,match", [
    (3, TypeError, "src"),
    ("missing.zarr", FileNotFoundError, "src"),
    ("group", pdist.StoreError, "src .* not a readable zarr array"),
])
def test_filter_store_refuses_sources_it_cannot_read(tmp_path, src, exc, match):
    zarr.open_group(str(tmp_path / "group"), mode="w")
    with pytest.raises(exc, match=match):
        _run(str(tmp_path / src) if isinstance(src, str) else src, tmp_path / "out.zarr")
