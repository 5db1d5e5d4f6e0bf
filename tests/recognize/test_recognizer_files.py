"""LBPFaceRecognizer.save / load with untrusted files: every malformed file is a ValueError that
names it, checked before any array is allocated (forged headers, zip bombs), and save replaces a
file whole or not at all (issue 53)."""

from __future__ import annotations

import io
import json
import os
import tracemalloc
import zipfile

import numpy as np
import pytest

from portcv import recognize

from ..helpers import byte_flipped_files

#: Small faces: 3 x 3 regions of 8 x 10 over the 24 x 30 interior at R = 2 (59 bins).
FACES = np.random.default_rng(11).integers(0, 256, (3, 34, 28), dtype=np.uint8)
ROW = (3, 3, 59)


def _trained() -> recognize.LBPFaceRecognizer:
    rec = recognize.LBPFaceRecognizer(regions=(3, 3), weights=np.arange(1, 10).reshape(3, 3))
    rec.train(FACES, [4, 5, 6])
    return rec


def _members(rec: recognize.LBPFaceRecognizer, tmp_path) -> dict:
    """The arrays of a saved ``rec`` (config as a dict)."""
    rec.save(tmp_path / "good.npz")
    with np.load(tmp_path / "good.npz", allow_pickle=False) as z:
        return {"config": json.loads(str(z["config"])), "gallery": z["gallery"], "labels": z["labels"]}


def _npy(array: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array(buf, array, allow_pickle=True)
    return buf.getvalue()


def _write(path, members: dict, compression=zipfile.ZIP_STORED) -> None:
    """A zip of ``name.npy`` members: arrays, a config dict (as its JSON string) or raw bytes."""
    with zipfile.ZipFile(path, "w", compression=compression) as zf:
        for name, value in members.items():
            if isinstance(value, dict):
                value = np.array(json.dumps(value))
            zf.writestr(name + ".npy", value if isinstance(value, bytes) else _npy(value))


def _forged_header(shape, dtype="<u2", data=b"\0" * 64) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": dtype, "fortran_order": False, "shape": shape})
    return buf.getvalue() + data


def _refusal_peak_bytes(path, **kwargs) -> int:
    """Peak traced allocation (NumPy reports its buffers to tracemalloc) of a load that is refused."""
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=os.path.basename(path)):
            recognize.LBPFaceRecognizer.load(path, **kwargs)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_round_trip_and_the_old_format(tmp_path):
    rec = _trained()
    rec.save(tmp_path / "rec")  # numpy's rule: the suffix is added
    again = recognize.LBPFaceRecognizer.load(tmp_path / "rec.npz")
    for a, b in zip(rec.predict(FACES), again.predict(FACES)):
        np.testing.assert_array_equal(a, b)
    assert again.regions == (3, 3) and again.region_size is None
    # A format-1 file (always a region_size) loads as that explicitly configured recognizer.
    fixed = recognize.LBPFaceRecognizer(region_size=(8, 10), weights=None)
    fixed.train(FACES, [4, 5, 6])
    m = _members(fixed, tmp_path)
    config = {k: v for k, v in m["config"].items() if k != "regions"}
    config["format"] = "portcv.recognize.LBPFaceRecognizer/1"
    _write(tmp_path / "v1.npz", dict(m, config=config))
    old = recognize.LBPFaceRecognizer.load(tmp_path / "v1.npz")
    assert old.region_size == (8, 10) and old.regions is None
    for a, b in zip(fixed.predict(FACES), old.predict(FACES)):
        np.testing.assert_array_equal(a, b)


def _moved_count(g: np.ndarray) -> np.ndarray:
    """``g`` with one count moved from region (0, 0) to region (0, 1) of face 0 (each count in range)."""
    g = g.copy()
    b = int(np.flatnonzero(g[0, 0, 0])[0])
    g[0, 0, 0, b] -= 1
    g[0, 0, 1, b] += 1
    return g


MALFORMED = [
    "not a zip", "empty file", "missing labels", "missing config", "config not json", "config not a string",
    "config wrong format", "config missing face_shape", "config bad P", "config bad face_shape",
    "config weights of the wrong shape", "config regions too large", "labels shorter", "labels longer", "labels float", "labels 2-D",
    "gallery int32", "gallery wrong bins", "gallery empty", "gallery pickled", "gallery counts wrong",
    "gallery region sums wrong", "gallery fortran", "forged header", "header longer than the data",
]


#: What the message says, where several checks could catch the change.
MESSAGES = {"config regions too large": "regions of 99980001 pixels; at most 32767",
            "labels shorter": r"labels must be int32 of shape \(3,\)", "forged header": "header says",
            "gallery region sums wrong": r"gallery face 0, region \(0, 0\) counts 79 pixels; its region has 80",
            "gallery counts wrong": "counts .* pixels; its region has 80", "header longer than the data": "header says"}


@pytest.mark.parametrize("change", MALFORMED)
def test_malformed_files_are_value_errors_naming_the_file(tmp_path, change):
    """Before, a missing key was a raw KeyError, a bad config a JSONDecodeError, a bad zip a
    BadZipFile, and labels shorter than the gallery were accepted."""
    m = _members(_trained(), tmp_path)
    path = tmp_path / "bad.npz"
    g, labels, config = m["gallery"], m["labels"], m["config"]
    what = {
        "not a zip": None, "empty file": None,
        "missing labels": {"config": config, "gallery": g},
        "missing config": {"gallery": g, "labels": labels},
        "config not json": dict(m, config=np.array("{not json")),
        "config not a string": dict(m, config=np.arange(3)),
        "config wrong format": dict(m, config=dict(config, format="other")),
        "config missing face_shape": dict(m, config={k: v for k, v in config.items() if k != "face_shape"}),
        "config bad P": dict(m, config=dict(config, P=99)),
        "config bad face_shape": dict(m, config=dict(config, face_shape=[-3, 28])),
        "config weights of the wrong shape": dict(m, config=dict(config, weights=[[1, 2], [3, 4]])),
        "config regions too large": dict(m, config=dict(config, face_shape=[30000, 30000], weights=None)),
        "labels shorter": dict(m, labels=labels[:2]),
        "labels longer": dict(m, labels=np.r_[labels, labels]),
        "labels float": dict(m, labels=labels.astype(np.float64)),
        "labels 2-D": dict(m, labels=labels[:, None]),
        "gallery int32": dict(m, gallery=g.astype(np.int32)),
        "gallery wrong bins": dict(m, gallery=g[..., :58]),
        "gallery empty": dict(m, gallery=g[:0], labels=labels[:0]),
        "gallery pickled": dict(m, gallery=np.array([{"a": 1}], dtype=object)),
        "gallery counts wrong": dict(m, gallery=np.where(g > 0, g + 1000, g).astype(np.uint16)),
        "gallery region sums wrong": dict(m, gallery=_moved_count(g)),
        "gallery fortran": dict(m, gallery=np.asfortranarray(g)),
        "forged header": dict(m, gallery=_forged_header((3,) + ROW, data=b"\0" * 10)),
        "header longer than the data": dict(m, gallery=_npy(g)[:-7]),
    }[change]
    if change == "not a zip":
        path.write_bytes(b"this is not a zip file")
    elif change == "empty file":
        path.write_bytes(b"")
    else:
        _write(path, what)
    with pytest.raises(ValueError, match="bad.npz.*" + MESSAGES.get(change, "")):
        recognize.LBPFaceRecognizer.load(path)


def test_truncated_files_and_flipped_bytes(tmp_path):
    """Every cut of a saved file and random bit flips: a ValueError naming the file, or (a flip
    in bytes nothing reads, such as a zip timestamp) the same recognizer."""
    rec = _trained()
    rec.save(tmp_path / "good.npz")
    good = (tmp_path / "good.npz").read_bytes()
    expected = rec.predict(FACES)
    rng = np.random.default_rng(8)
    cuts = sorted(set(rng.integers(1, len(good), 24).tolist()) | {len(good) - 1, len(good) // 2, 22})
    for i, cut in enumerate(cuts):
        bad = tmp_path / f"cut{i}.npz"
        bad.write_bytes(good[:cut])
        with pytest.raises(ValueError, match=bad.name):
            recognize.LBPFaceRecognizer.load(bad)
    for bad in byte_flipped_files(good, tmp_path, rng, flips=3):
        try:
            loaded = recognize.LBPFaceRecognizer.load(bad)
        except ValueError as exc:
            assert bad.name in str(exc)
        else:
            for a, b in zip(expected, loaded.predict(FACES)):
                np.testing.assert_array_equal(a, b)


def test_a_forged_header_is_refused_before_allocating(tmp_path):
    """A gallery header claiming 1.7 GB in a file of a few KB: refused from the header (before,
    NumPy allocated the whole array and then failed to fill it)."""
    m = _members(_trained(), tmp_path)
    path = tmp_path / "forged.npz"
    _write(path, dict(m, gallery=_forged_header((300_000,) + ROW), labels=np.zeros(300_000, np.int32)[:3]))
    with pytest.raises(ValueError, match="forged.npz.*header says"):
        recognize.LBPFaceRecognizer.load(path)
    assert _refusal_peak_bytes(path) < 16 << 20


def test_a_zip_bomb_is_refused_before_inflating(tmp_path):
    """A few KB of deflated zeros that inflate to 24 MB: refused by max_bytes from the declared
    sizes, and, within max_bytes, from the header (its shape does not fit the config) after
    inflating only the header: the peak allocation stays far below the 24 MB."""
    m = _members(_trained(), tmp_path)
    n = (24 << 20) // (2 * int(np.prod(ROW)))
    path = tmp_path / "bomb.npz"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("config.npy", _npy(np.array(json.dumps(m["config"]))))
        zf.writestr("labels.npy", _npy(np.zeros(n, np.int32)))
        with zf.open("gallery.npy", "w", force_zip64=True) as fh:
            fh.write(_forged_header((n, 3, 3, 60), data=b""))  # 60 bins: not these parameters' 59
            zeros = bytes(1 << 20)
            for _ in range(n * 3 * 3 * 60 * 2 >> 20):
                fh.write(zeros)
            fh.write(bytes(n * 3 * 3 * 60 * 2 % (1 << 20)))
    assert os.path.getsize(path) < 200_000
    with pytest.raises(ValueError, match="bomb.npz.*inflates to .* more than max_bytes=1000000"):
        recognize.LBPFaceRecognizer.load(path, max_bytes=1_000_000)
    with pytest.raises(ValueError, match="bomb.npz': gallery must be uint16 of shape"):
        recognize.LBPFaceRecognizer.load(path)
    assert _refusal_peak_bytes(path) < 4 << 20


def test_the_size_limit(tmp_path):
    rec = _trained()
    rec.save(tmp_path / "rec.npz")
    size = os.path.getsize(tmp_path / "rec.npz")
    with pytest.raises(ValueError, match=f"rec.npz': {size} bytes, more than max_bytes={size - 1}"):
        recognize.LBPFaceRecognizer.load(tmp_path / "rec.npz", max_bytes=size - 1)
    assert len(recognize.LBPFaceRecognizer.load(tmp_path / "rec.npz", max_bytes=size)) == 3
    with pytest.raises(TypeError, match="max_bytes"):
        recognize.LBPFaceRecognizer.load(tmp_path / "rec.npz", max_bytes=1.5)


def test_path_arguments(tmp_path):
    rec = _trained()
    for bad in (None, 3, ["a.npz"]):
        with pytest.raises(TypeError, match="path"):
            rec.save(bad)
        with pytest.raises(TypeError, match="path"):
            recognize.LBPFaceRecognizer.load(bad)
    with pytest.raises(FileNotFoundError, match="absent.npz"):
        recognize.LBPFaceRecognizer.load(tmp_path / "absent.npz")
    with pytest.raises(ValueError, match="is a folder"):
        recognize.LBPFaceRecognizer.load(tmp_path)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        rec.save(tmp_path / "no" / "such" / "folder.npz")


def test_save_refuses_a_folder_and_writes_nothing_beside_it(tmp_path):
    """Before, save(<folder>) silently wrote <folder>.npz beside the folder."""
    folder = tmp_path / "gallery"
    folder.mkdir()
    with pytest.raises(ValueError, match="is a folder"):
        _trained().save(folder)
    (tmp_path / "named.npz").mkdir()
    with pytest.raises(ValueError, match="is a folder"):
        _trained().save(tmp_path / "named")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gallery", "named.npz"]
    assert list(folder.iterdir()) == []


def test_save_replaces_a_file_whole_or_not_at_all(tmp_path, monkeypatch):
    """A save that fails while writing leaves the previous file as it was and no temporary file;
    one that succeeds replaces it."""
    path = tmp_path / "rec.npz"
    first = _trained()
    first.save(path)
    before = path.read_bytes()
    second = recognize.LBPFaceRecognizer(regions=(3, 3), weights=None)
    second.train(FACES[:2], [7, 8])
    real_savez = np.savez

    def failing_savez(fh, **arrays):
        fh.write(b"PK partial")  # some bytes reach the temporary file, then the disk fills up
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(np, "savez", failing_savez)
    with pytest.raises(OSError, match="No space"):
        second.save(path)
    monkeypatch.setattr(np, "savez", real_savez)
    assert path.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["rec.npz"]
    second.save(path)
    assert len(recognize.LBPFaceRecognizer.load(path)) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rec.npz"]
