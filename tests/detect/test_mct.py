"""MCT detection (portcv.detect.mct, MCTCascade, MCTDetector): oracle, exhaustive codes, backends, files."""

from __future__ import annotations

import io
import itertools
import json
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import portcv
from portcv.detect import MCTCascade, MCTDetector, load_mct_cascade, mct, save_mct_cascade
from portcv.detect._mct._detector import split_levels
from portcv.detect._mct._mct import segment_alive_kernel, stage_sums_kernel
from portcv._resize_plans import pyramid_plan

from ..helpers import assert_same_bits, byte_flipped_files, images, matches_numpy
from ..oracles import mct as oracle


# --------------------------------------------------------------------------------------------
# The transform
# --------------------------------------------------------------------------------------------
def test_mct_equals_the_naive_loop_on_random_and_low_contrast_images() -> None:
    rng = np.random.default_rng(1)
    for shape, high in (((7, 9), 256), ((5, 13), 3), ((3, 3), 256), ((11, 4), 2)):
        img = rng.integers(0, high, shape, dtype=np.uint8)
        assert_same_bits(oracle.mct(img), portcv.to_numpy(mct(img)))


def test_every_code_but_511_occurs_on_the_ternary_patterns() -> None:
    # All 3^9 patterns over {0, 1, 2}, laid side by side as 3x3 tiles of one image, then the
    # valid codes at the tile centres: every code 0..510 occurs, 511 never.
    patterns = np.array(list(itertools.product(range(3), repeat=9)), np.uint8).reshape(-1, 3, 3)
    img = patterns.transpose(1, 0, 2).reshape(3, -1)  # tiles along x
    codes = portcv.to_numpy(mct(img))[0, 0::3]
    assert codes.shape == (3**9,)
    assert set(np.unique(codes).tolist()) == set(range(511))
    expected = [oracle.mct_code(p.tolist()) for p in patterns[:: 97]]
    assert codes[:: 97].tolist() == expected


def test_bit_order_is_raster_msb_and_properties_hold() -> None:
    for k in range(9):  # a single bright pixel at raster index k sets bit 8 - k only
        patch = np.zeros((3, 3), np.uint8)
        patch.flat[k] = 9
        assert int(portcv.to_numpy(mct(patch))[0, 0]) == 1 << (8 - k)
    rng = np.random.default_rng(3)
    img = rng.integers(0, 60, (12, 17), dtype=np.uint8)
    codes = portcv.to_numpy(mct(img))
    assert codes.max() <= 510
    assert not portcv.to_numpy(mct(np.full((6, 6), 77, np.uint8))).any()  # constant -> 0
    assert_same_bits(codes, portcv.to_numpy(mct((img * 3 + 20).astype(np.uint8))))  # a I + b, a > 0
    # mirroring the image mirrors the codes with the bits of each row reversed (k <-> mirrored k)
    perm = [2, 1, 0, 5, 4, 3, 8, 7, 6]
    flipped = portcv.to_numpy(mct(np.ascontiguousarray(img[:, ::-1])))
    remapped = np.zeros_like(codes)
    for k in range(9):
        remapped |= ((codes >> (8 - k)) & 1) << (8 - perm[k])
    assert_same_bits(remapped[:, ::-1], flipped)


def test_mct_borders_pad_by_one_pixel() -> None:
    img = np.arange(30, dtype=np.uint8).reshape(5, 6) * 7
    for border in ("reflect101", "replicate", "constant"):
        mode = {"reflect101": "reflect", "replicate": "edge", "constant": "constant"}[border]
        padded = np.pad(img, 1, mode=mode)
        assert_same_bits(oracle.mct(padded), portcv.to_numpy(mct(img, border=border)))


@settings(max_examples=25, deadline=None)
@given(images(channels=(None,), max_h=40, max_w=45))
def test_mct_every_backend_equals_numpy(backend: str, case: tuple) -> None:
    img, _ = case  # gray frames (a batch of frames 3 or 4 pixels wide too): channel_axis=None
    if min(img.shape[-2:]) < 3:
        with pytest.raises(ValueError, match="image"):
            mct(img, channel_axis=None)
        return
    matches_numpy(backend, mct, img, channel_axis=None)
    matches_numpy(backend, mct, img, border="replicate", channel_axis=None)


def test_mct_rejects_bad_input_and_does_not_mutate() -> None:
    with pytest.raises(TypeError, match="image"):
        mct(np.zeros((4, 4), np.float32))
    with pytest.raises(TypeError, match="image"):
        mct("not an image")
    with pytest.raises(ValueError, match="image"):
        mct(np.zeros((2, 9), np.uint8))
    with pytest.raises(ValueError, match="image"):
        mct(np.zeros((0, 9), np.uint8))
    with pytest.raises(ValueError, match="border"):
        mct(np.zeros((4, 4), np.uint8), border="wrap")
    with pytest.raises(ValueError, match="border_value"):
        mct(np.zeros((4, 4), np.uint8), border="constant", border_value=300)
    with pytest.raises(TypeError, match="border_value must be an integer"):
        mct(np.zeros((4, 4), np.uint8), border_value=float("nan"))  # checked with border='valid' too
    with pytest.raises(ValueError, match="border_value must be in"):
        mct(np.zeros((4, 4), np.uint8), border_value=-1)
    with pytest.raises(ValueError, match=r"image looks like a colour image .*rgb_to_gray.*channel_axis=None"):
        mct(np.zeros((6, 7, 3), np.uint8))
    assert mct(np.zeros((2, 6, 3), np.uint8), channel_axis=None).shape == (2, 4, 1)  # frames 3 pixels wide
    img = np.random.default_rng(0).integers(0, 256, (6, 7), dtype=np.uint8)
    before = img.copy()
    out = mct(img)
    assert_same_bits(before, img)
    assert not np.shares_memory(out, img)


# --------------------------------------------------------------------------------------------
# Cascades: random ones, the file format
# --------------------------------------------------------------------------------------------
def random_cascade(seed: int, sizes: tuple = (3, 5, 8), spread: int = 100, bias: int = 0) -> MCTCascade:
    """A cascade of random positions and LUTs; thresholds ``bias`` (0: about half the windows pass a stage)."""
    rng = np.random.default_rng(seed)
    pos = []
    for k in sizes:
        flat = rng.choice(484, k, replace=False)
        pos.append(np.stack([flat % 22 + 1, flat // 22 + 1], axis=1))
    lut = rng.integers(-spread, spread + 1, (sum(sizes), 512)).astype(np.int16)
    lut[:, 511] = 0
    return MCTCascade(np.concatenate(pos).astype(np.int16), lut, np.cumsum(sizes).astype(np.int32),
                      np.full(len(sizes), bias, np.int32), (24, 24), {"note": "random"})


def test_save_and_load_round_trip_with_identical_bytes(tmp_path) -> None:
    c = random_cascade(0)
    p1, p2 = tmp_path / "a.npz", tmp_path / "b.npz"
    save_mct_cascade(c, p1)
    save_mct_cascade(c, p2)
    assert p1.read_bytes() == p2.read_bytes()
    back = load_mct_cascade(p1)
    for name in ("positions", "lut", "stage_end", "threshold"):
        assert_same_bits(getattr(c, name), getattr(back, name))
    assert back.window == (24, 24) and back.meta["note"] == "random" and back.meta["format"] == "portcv-mct/1"
    with pytest.raises(ValueError, match="read-only"):
        back.lut[0, 0] = 1


def _write_npz(path, **arrays) -> None:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    path.write_bytes(buf.getvalue())


def _members(c: MCTCascade) -> dict:
    meta = dict(c.meta, format="portcv-mct/1", bit_order="raster-msb")
    return dict(positions=c.positions, lut=c.lut, stage_end=c.stage_end, threshold=c.threshold,
                window=np.array(c.window, np.int32), meta=np.asarray(json.dumps(meta)))


@pytest.mark.parametrize("change", [
    "missing", "pickled", "bad_dtype", "position_out", "position_zero", "repeat", "lut_min", "col511",
    "stage_end", "stage_end_short", "meta_format", "meta_json", "window", "lut_shape", "not_zip", "truncated",
    "huge",
])
def test_loader_rejects_malformed_files_naming_them(tmp_path, change: str) -> None:
    c = random_cascade(1)
    m = {k: np.array(v) for k, v in _members(c).items()}
    path = tmp_path / f"bad_{change}.npz"
    if change == "missing":
        del m["threshold"]
    elif change == "pickled":
        m["meta"] = np.array([{"a": 1}], dtype=object)
    elif change == "bad_dtype":
        m["lut"] = m["lut"].astype(np.int32)
    elif change == "position_out":
        m["positions"][0, 0] = 23
    elif change == "position_zero":
        m["positions"][2, 1] = 0
    elif change == "repeat":
        m["positions"][1] = m["positions"][0]
    elif change == "lut_min":
        m["lut"][0, 0] = -32768
    elif change == "col511":
        m["lut"][0, 511] = 1
    elif change == "stage_end":
        m["stage_end"] = np.array([3, 3, 16], np.int32)
    elif change == "stage_end_short":
        m["stage_end"] = np.array([3, 8, 15], np.int32)
    elif change == "meta_format":
        m["meta"] = np.asarray(json.dumps({"format": "other", "bit_order": "raster-msb"}))
    elif change == "meta_json":
        m["meta"] = np.asarray("{not json")
    elif change == "window":
        m["window"] = np.array([24, 24, 1], np.int32)
    elif change == "lut_shape":
        m["lut"] = m["lut"][:, :511]
    if change == "not_zip":
        path.write_bytes(b"this is not a zip file at all")
    elif change == "truncated":
        save_mct_cascade(c, path)
        path.write_bytes(path.read_bytes()[:200])
    elif change == "huge":
        path.write_bytes(b"\0" * (4 * 2**20 + 1))
    else:
        _write_npz(path, **m)
    with pytest.raises(ValueError, match=str(path.name)):
        load_mct_cascade(path)


def test_loader_survives_random_byte_flips(tmp_path) -> None:
    path = tmp_path / "good.npz"
    save_mct_cascade(random_cascade(2), path)
    good = path.read_bytes()
    rng = np.random.default_rng(5)
    for bad in byte_flipped_files(good, tmp_path, rng, flips=4):
        try:
            load_mct_cascade(bad)  # a flip in a LUT value may stay valid: then it must load
        except ValueError as exc:
            assert bad.name in str(exc)


def test_cascade_constructor_and_loader_argument_errors(tmp_path) -> None:
    c = random_cascade(3)
    with pytest.raises(ValueError, match="positions"):
        MCTCascade(c.positions.astype(np.int32), c.lut, c.stage_end, c.threshold)
    with pytest.raises(ValueError, match="meta"):
        MCTCascade(c.positions, c.lut, c.stage_end, c.threshold, (24, 24), {"x": object()})
    with pytest.raises(FileNotFoundError):
        load_mct_cascade(tmp_path / "absent.npz")
    with pytest.raises(TypeError, match="path"):
        load_mct_cascade(3)
    with pytest.raises(TypeError, match="cascade"):
        save_mct_cascade("no", tmp_path / "x.npz")
    with pytest.raises(TypeError, match="cascade"):
        MCTDetector("no")


# --------------------------------------------------------------------------------------------
# The detector
# --------------------------------------------------------------------------------------------
def oracle_candidates(c: MCTCascade, gray: np.ndarray, scale_factor: float, step: int = 1) -> list:
    """Every (level, x, y) passing the cascade: levels by resize(bilinear_exact), naive MCT and sums."""
    h, w = gray.shape
    levels = pyramid_plan(w, h, scale_factor, c.window, min_size=(24, 24), max_size=(w, h))
    found = []
    for li, (_, size) in enumerate(levels):
        level = portcv.to_numpy(portcv.transform.resize(gray, size=size, interpolation="bilinear_exact"))
        codes = oracle.mct(level)
        for y in range(0, size[1] - 23, step):
            for x in range(0, size[0] - 23, step):
                ok, _ = oracle.window_status(codes, x, y, c.positions, c.lut, c.stage_end, c.threshold)
                if ok:
                    found.append((li, x, y))
    return found


def test_candidates_equal_the_naive_scan() -> None:
    rng = np.random.default_rng(4)
    gray = rng.integers(0, 256, (41, 50), dtype=np.uint8)
    for seed, step in ((0, 1), (1, 2)):
        c = random_cascade(seed, spread=60, bias=30)
        got = MCTDetector(c).candidates(gray, scale_factor=1.2, step=step)
        assert [tuple(r) for r in got.tolist()] == oracle_candidates(c, gray, 1.2, step)
        assert len(got) > 0


def _jax_or_skip() -> None:
    """Skip unless JAX is installed and its backend loads."""
    pytest.importorskip("jax")
    try:
        portcv.backends.get("jax")
    except portcv.BackendUnavailableError as exc:
        pytest.skip(str(exc))


def test_jax_on_the_cpu_scans_with_numpy_and_its_own_scan_gives_the_same_candidates(monkeypatch) -> None:
    """JAX on the CPU hands the whole scan to NumPy (its arrays are host memory and XLA:CPU's
    gathers are several times slower), so the every-backend tests compare NumPy with NumPy
    there; with ``runs_on_host`` off, the CPU runs the XLA scan a GPU runs: same candidates."""
    _jax_or_skip()
    from portcv.backends.jax import JaxBackend
    from portcv.detect._mct import _detector as mct_detector

    gray = np.random.default_rng(4).integers(0, 256, (41, 50), dtype=np.uint8)
    det = MCTDetector(random_cascade(0, spread=60, bias=30))
    expected = det.candidates(gray, scale_factor=1.2)
    compiled_for = []
    real = mct_detector._compiled

    def spy(name, what):
        compiled_for.append(name)
        return real(name, what)

    monkeypatch.setattr(mct_detector, "_compiled", spy)
    got = {}
    for on_host in (True, False):
        monkeypatch.setattr(JaxBackend, "runs_on_host", property(lambda self, v=on_host: v))
        compiled_for.clear()
        with portcv.using("jax"):
            got[on_host] = det.candidates(portcv.asarray(gray), scale_factor=1.2)
        assert set(compiled_for) == {"numpy" if on_host else "jax"}
    assert len(expected) > 0
    assert_same_bits(expected, got[True])
    assert_same_bits(expected, got[False])


@pytest.mark.parametrize("name", ["numpy", "numpy-deferred", "jax", "cupy"])
def test_device_grouping_equals_the_hosts(monkeypatch, name: str) -> None:
    """CuPy groups the candidates on the device (group_kernel, the Haar detector's) and copies
    back only the boxes. Forced here on NumPy and on JAX's own programs (their portable C x C
    grouping, capacity 64): the host's boxes; above the capacity, the host groups.
    "numpy-deferred" scans as CuPy does (``runs_on_host`` off: no count read between segments,
    the count handed to the grouping on the device), and so does JAX on a GPU (one program)."""
    from skimage import data as skdata

    from portcv.backends.numpy import NumpyBackend
    from portcv.detect._mct import _detector as mct_detector

    if name == "cupy":
        try:
            portcv.backends.get("cupy")
        except portcv.BackendUnavailableError as exc:
            pytest.skip(str(exc))
    if name == "numpy-deferred":
        name = "numpy"
        deferred = True
    else:
        deferred = False
    if name == "jax":
        pytest.importorskip("jax")
        from portcv.backends.jax import JaxBackend

        try:
            portcv.backends.get("jax")
        except portcv.BackendUnavailableError as exc:
            pytest.skip(str(exc))
        monkeypatch.setattr(JaxBackend, "runs_on_host", property(lambda self: False))  # its own scan
    gray = portcv.to_numpy(portcv.color.rgb_to_gray(skdata.astronaut()))  # 24 candidates, one face
    det = MCTDetector.default()
    expected = {mn: det.detect(gray, min_neighbors=mn) for mn in (1, 3, 20)}
    assert len(expected[3][0]) == 1 and len(expected[20][0]) == 0
    monkeypatch.setattr(mct_detector, "_groups_on_device", lambda b: True)
    if deferred:
        monkeypatch.setattr(NumpyBackend, "runs_on_host", False)
    with portcv.using(name) as b:  # JAX on a GPU: one program a frame, the count on the device
        deferred = deferred or mct_detector.whole_plan_scan(b)
    grouped = []
    real = MCTDetector._read_group

    def spy(*device_output):
        out = real(*device_output)
        grouped.append(out is not None)
        return out

    monkeypatch.setattr(MCTDetector, "_read_group", staticmethod(spy))
    for capacity, on_device in ((64, True), (8, False)):
        monkeypatch.setattr(mct_detector, "GROUP_CAPACITY", capacity)
        monkeypatch.setattr(mct_detector, "WHOLE_SCAN_GROUP_CAPACITY", capacity)
        for mn, (boxes, neighbours) in expected.items():
            grouped.clear()
            with portcv.using(name):
                got_boxes, got_neighbours = det.detect(portcv.asarray(gray), min_neighbors=mn)
            # Above the capacity a scan that holds its count on the device asks and the kernel
            # declines; the others know the count and do not ask.
            assert grouped == ([True] if on_device else [False] if deferred or name == "cupy" else [])
            assert_same_bits(boxes, got_boxes)
            assert_same_bits(neighbours, got_neighbours)


def test_a_scan_without_count_reads_between_segments_gives_the_same_candidates(monkeypatch) -> None:
    """CuPy's scan (no host read of the survivors' count between stage segments: each segment
    reads it on the device and ignores the plan's stale slots past it), run on NumPy by turning
    ``runs_on_host`` off, against NumPy's own scan, for cascades that keep and drop windows at
    every segment (window 0 included, whose index fills the stale slots)."""
    from portcv.backends.numpy import NumpyBackend

    rng = np.random.default_rng(5)
    img = rng.integers(0, 256, (61, 77), dtype=np.uint8)
    for seed in range(8):
        det = MCTDetector(random_cascade(seed, sizes=(3, 4, 5, 6), spread=50, bias=20 * (seed % 3)))
        expected = det.candidates(img, scale_factor=1.2)
        with monkeypatch.context() as m:
            m.setattr(NumpyBackend, "runs_on_host", False)
            for split in (1, 2, 3):
                assert_same_bits(expected, det.candidates(img, scale_factor=1.2, split_stage=split))


def _recording_frames() -> list:
    """Five gray 512 x 512 frames of one geometry: the astronaut (one face), mirrored, shifted,
    noisier, and flat (no face)."""
    from skimage import data as skdata

    gray = portcv.to_numpy(portcv.color.rgb_to_gray(skdata.astronaut()))
    noisy = np.clip(gray.astype(np.int16) + np.random.default_rng(1).integers(-12, 13, gray.shape), 0, 255)
    return [gray, gray[:, ::-1].copy(), np.roll(gray, (17, -9), axis=(0, 1)), noisy.astype(np.uint8),
            np.full_like(gray, 90)]


class _HostRecording:
    """A stand-in for CuPy's CUDA-graph recording on NumPy: every replay copies the values into
    the inputs and runs ``fn`` again, so the detector's recorded path (launches only, reads after
    the replay) runs on the host."""

    def __init__(self, fn, inputs):
        import threading

        self.fn, self.inputs, self.lock, self.outputs = fn, inputs, threading.Lock(), None
        self.recorded = 0

    def replay(self, *values):
        for dst, src in zip(self.inputs, values, strict=True):
            dst[...] = src
        self.outputs = self.fn()
        self.recorded += 1
        return self.outputs


def test_the_default_detector_is_one_instance_that_keeps_its_geometries() -> None:
    """``MCTDetector.default()`` is the same object each call, so a frame loop written as
    ``MCTDetector.default().detect(frame)`` keeps what the first frame built (on CuPy: the
    recorded scan)."""
    det = MCTDetector.default()
    assert MCTDetector.default() is det
    frame = np.full((60, 70), 40, np.uint8)
    MCTDetector.default().detect(frame)
    assert any(key[:2] == (70, 60) for key in det._geometry)


def _record_on_numpy(monkeypatch, recorder=_HostRecording) -> list:
    """NumPy with CuPy's scan settings (grouping on the device, no count reads) and a backend
    that records launches through ``recorder(fn, inputs)``; returns the list of recordings made."""
    from portcv.backends.numpy import NumpyBackend
    from portcv.detect._mct import _detector as mct_detector

    made: list = []

    def record(self, fn, *inputs):
        made.append(recorder(fn, inputs))
        return made[-1]

    monkeypatch.setattr(mct_detector, "_groups_on_device", lambda b: True)
    monkeypatch.setattr(NumpyBackend, "runs_on_host", False)
    monkeypatch.setattr(NumpyBackend, "records_launches", True)
    monkeypatch.setattr(NumpyBackend, "record", record)
    return made


def test_a_recorded_scan_gives_the_same_boxes(monkeypatch) -> None:
    """The detector's path for a backend that records launches (CuPy: one CUDA graph per
    geometry), run on NumPy with a host stand-in recorder and CuPy's settings (grouping on the
    device, no count reads): the first frame of a geometry runs as usual, the second records, the
    rest replay; boxes equal the usual scan's for frames with and without faces, for each
    min_neighbors, and above the grouping's capacity (the recorded kernel declines, the host
    groups the survivors)."""
    from portcv.detect._mct import _detector as mct_detector

    frames = _recording_frames()
    det = MCTDetector(MCTDetector.default().cascade)  # a detector of its own: no recordings yet
    expected = {mn: [det.detect(f, min_neighbors=mn) for f in frames] for mn in (1, 3)}
    made = _record_on_numpy(monkeypatch)
    for capacity in (64, 8):  # 8: the astronaut's 24 candidates are more than the kernel groups
        monkeypatch.setattr(mct_detector, "GROUP_CAPACITY", capacity)
        for mn, boxes in expected.items():
            for frame, (eb, en) in zip(frames, boxes):
                gb, gn = det.detect(frame, min_neighbors=mn)
                assert_same_bits(eb, gb)
                assert_same_bits(en, gn)
    assert len(made) == 4 and all(r.recorded == len(frames) - 1 for r in made)
    assert len(expected[3][0][0]) == 1 and len(expected[3][4][0]) == 0


@pytest.mark.slow
def test_a_geometry_keeps_its_last_recordings_only(monkeypatch) -> None:
    """Each min_neighbors is a recording of its own; a geometry keeps RECORDINGS_KEPT of them
    (here 1), the oldest dropped and recorded again when asked for again: the same boxes."""
    from portcv.detect._mct import _detector as mct_detector

    frames = _recording_frames()[:2]
    det = MCTDetector(MCTDetector.default().cascade)
    expected = {mn: [det.detect(f, min_neighbors=mn) for f in frames] for mn in (1, 3)}
    monkeypatch.setattr(mct_detector, "RECORDINGS_KEPT", 1)
    made = _record_on_numpy(monkeypatch)
    det = MCTDetector(det.cascade)
    for rnd in range(3):
        for mn in (1, 3):
            for frame, (eb, en) in zip(frames, expected[mn]):
                gb, gn = det.detect(frame, min_neighbors=mn)
                assert_same_bits(eb, gb)
                assert_same_bits(en, gn)
    (_, geos), = det._geometry.values()
    held = [v for k, v in geos[0]._device.items() if k[1] == "recorded" and isinstance(v, _HostRecording)]
    assert len(held) == 1 and held[0] is made[-1] and len(made) == 6  # 2 in the first round, then 2 a round


def test_a_scan_that_cannot_be_recorded_warns_once_and_runs_its_launches(monkeypatch) -> None:
    """A backend whose recording fails (a driver without graph capture) gets one RuntimeWarning
    per geometry and the usual launches from then on: the same boxes."""
    import warnings

    frames = _recording_frames()[:3]
    det = MCTDetector(MCTDetector.default().cascade)
    expected = [det.detect(f) for f in frames]
    tries = []

    def record(fn, inputs):
        tries.append(1)
        raise RuntimeError("stream capture is not supported")

    _record_on_numpy(monkeypatch, record)
    det = MCTDetector(det.cascade)
    got = []
    with pytest.warns(RuntimeWarning, match="could not be recorded .*stream capture is not supported"):
        got += [det.detect(f) for f in frames[:2]]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got += [det.detect(frames[2])]
    assert len(tries) == 1
    for (eb, en), (gb, gn) in zip(expected, got, strict=True):
        assert_same_bits(eb, gb)
        assert_same_bits(en, gn)


@pytest.mark.parametrize("where", ["host", "device"])
def test_cupy_replays_its_recorded_scan_with_numpys_boxes(where: str) -> None:
    """On CuPy the second frame of a geometry records the scan as a CUDA graph and later frames
    replay it: host and device frames, one after another and as a batch, give NumPy's boxes;
    the recording is kept on the geometry."""
    try:
        cupy_backend = portcv.backends.get("cupy")
    except portcv.BackendUnavailableError as exc:
        pytest.skip(str(exc))
    frames = _recording_frames()
    det = MCTDetector(MCTDetector.default().cascade)  # a detector of its own: no recordings yet
    expected = [det.detect(f) for f in frames]
    import cupy

    from portcv.backends import cupy as cupy_module

    with portcv.using("cupy"):
        inputs = frames if where == "host" else [portcv.asarray(f) for f in frames]
        for rnd in range(2):
            if rnd == 1:  # the tables the recording reads leave the cache; their memory is reused
                cupy_module._constant_cache.cache_clear()
                junk = [cupy.full(1 << 16, -1, dtype=cupy.int32) for _ in range(64)]
                cupy.cuda.get_current_stream().synchronize()
                del junk
            for frame, (eb, en) in zip(inputs, expected):
                gb, gn = det.detect(frame)
                assert_same_bits(eb, gb)
                assert_same_bits(en, gn)
        batch = det.detect(np.stack(frames) if where == "host" else portcv.asarray(np.stack(frames)))
    for (eb, en), (gb, gn) in zip(expected, batch, strict=True):
        assert_same_bits(eb, gb)
        assert_same_bits(en, gn)
    (_, geos), = det._geometry.values()
    kept = [v for k, v in geos[0]._device.items() if k[1] == "recorded"]
    assert kept and all(type(v).__name__ == "RecordedLaunches" and v.kept for v in kept)
    assert cupy_backend.records_launches


@settings(max_examples=12, deadline=None)
@given(images(channels=(None, 3), max_h=70, max_w=80), st.integers(0, 3), st.integers(0, 3))
def test_detector_every_backend_equals_numpy(backend: str, case: tuple, seed: int, split: int) -> None:
    img, axis = case
    det = MCTDetector(random_cascade(seed, spread=50, bias=40))

    def run(**kw):
        with portcv.using(backend):
            return det.detect(img, channel_axis=axis, **kw)

    for kw in ({"min_neighbors": 0}, {"min_neighbors": 2, "split_stage": split}):
        with portcv.using("numpy"):
            expected = det.detect(img, channel_axis=axis, **kw)
        got = run(**kw)
        if isinstance(expected, list):
            assert len(got) == len(expected)
            pairs = list(zip(expected, got))
        else:
            pairs = [(expected, got)]
        for (eb, en), (gb, gn) in pairs:
            assert_same_bits(eb, gb)
            assert_same_bits(en, gn)


def test_stage_sums_every_backend_equal_numpy_at_the_extremes(backend: str) -> None:
    # LUT entries of +-32767 at 484 positions: |H| < 2**24, exact in int32 everywhere.
    rng = np.random.default_rng(9)
    codes = rng.integers(0, 511, 5000).astype(np.uint16)
    offsets = rng.integers(0, 4000, 700).astype(np.int32)
    pos_off = rng.integers(0, 999, 484).astype(np.int32)
    lut = np.where(rng.random((484, 512)) < 0.5, -32767, 32767).astype(np.int16)
    lut[:, 511] = 0
    lut = lut.reshape(-1)

    def sums():
        return stage_sums_kernel(portcv.asarray(codes), portcv.asarray(offsets), portcv.asarray(pos_off),
                                 portcv.asarray(lut), begin=3, end=484)

    expected = matches_numpy(backend, sums)
    naive = [sum(int(lut[k * 512 + int(codes[int(o) + int(pos_off[k])])]) for k in range(3, 484)) for o in offsets[:20]]
    assert portcv.to_numpy(expected)[:20].tolist() == naive


def test_segment_alive_every_backend_equal_numpy_and_naive(backend: str) -> None:
    # Three stages over a plan whose last slots are past count: a window dies at its first failed
    # stage on CUDA and ANDs every stage in the portable version; the same 0/1 either way.
    rng = np.random.default_rng(11)
    codes = rng.integers(0, 511, 6000).astype(np.uint16)
    offsets = rng.integers(0, 5000, 900).astype(np.int32)
    plan = np.sort(rng.choice(900, 600, replace=False)).astype(np.int32)
    pos_off = rng.integers(0, 999, 40).astype(np.int32)
    lut = rng.integers(-300, 300, (40, 512)).astype(np.int16).reshape(-1)
    thresholds = np.array([50, 0, -20], np.int32)
    stages = ((0, (0, 5)), (1, (5, 17)), (2, (17, 40)))
    count = 550

    def alive():
        return segment_alive_kernel(*(portcv.asarray(a) for a in (codes, offsets, plan)),
                                    portcv.asarray(np.asarray(count, np.int32)),
                                    *(portcv.asarray(a) for a in (pos_off, lut, thresholds)), stages=stages)

    got = portcv.to_numpy(matches_numpy(backend, alive))
    naive = [int(i < count and all(
        sum(int(lut[k * 512 + int(codes[int(offsets[w]) + int(pos_off[k])])]) for k in range(b, e)) <= thresholds[j]
        for j, (b, e) in stages)) for i, w in enumerate(plan)]
    assert got.dtype == np.int32 and got.tolist() == naive
    assert 0 < sum(naive) < count  # some windows pass, some fail


def _segment_case(seed: int) -> tuple:
    """Codes, offsets, a sorted plan, positions, LUT and thresholds of a three-stage segment."""
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, 511, 6000).astype(np.uint16)
    offsets = rng.integers(0, 5000, 900).astype(np.int32)
    plan = np.sort(rng.choice(900, 600, replace=False)).astype(np.int32)
    pos_off = rng.integers(0, 999, 40).astype(np.int32)
    lut = rng.integers(-300, 300, (40, 512)).astype(np.int16).reshape(-1)
    return codes, offsets, plan, pos_off, lut


@pytest.mark.parametrize(("count", "unroll"), [(0, 1), (1, 3), (255, 1), (256, 4), (550, 3), (600, 1)])
def test_pallas_segment_equals_the_portable_code_in_interpret_mode(count: int, unroll: int) -> None:
    """The JAX backend's GPU segment (Pallas), run by Pallas' interpreter on the CPU: the portable
    flags for counts at, inside and past a program's block, thresholds that leave whole blocks
    dead before the last stage (so the stage is skipped there), an empty stage, and stages whose
    positions are and are not a multiple of the loop's unrolling."""
    pytest.importorskip("jax")
    pytest.importorskip("jax.experimental.pallas.triton")
    from portcv.detect._mct import _mct_pallas

    codes, offsets, plan, pos_off, lut = _segment_case(11)
    for thresholds, stages in [
        (np.array([50, 0, -20], np.int32), ((0, (0, 5)), (1, (5, 17)), (2, (17, 40)))),
        (np.array([-700, 3000, 3000, 0], np.int32), ((0, (0, 3)), (1, (3, 3)), (2, (3, 30)), (3, (30, 40)))),
        (np.array([2**30], np.int32), ((0, (0, 40)),)),  # every slot below the count passes
    ]:
        args = (codes, offsets, plan, np.asarray(count, np.int32), pos_off, lut, thresholds)
        want = segment_alive_kernel.portable(np, *args, stages=stages)
        run = _mct_pallas.pallas_segment(plan.shape[0], stages, block=128, unroll=unroll, interpret=True)
        with portcv.using("jax") as b:
            got = run(*(b.xp.asarray(a) for a in args))
        assert_same_bits(want, got)


def test_jax_whole_plan_scan_in_interpret_mode_gives_numpys_candidates(monkeypatch) -> None:
    """JAX's one-program scan of a GPU (every segment over the full-length plan, one read of the
    count and the first survivors), its Pallas segments run by the interpreter on the CPU: NumPy's
    candidates for every split, with the survivors past the one read's head (all, just all, one
    fewer, a few) read from the plan; and its boxes, grouped in the program or, past the
    grouping's capacity, on the host."""
    _jax_or_skip()
    pytest.importorskip("jax.experimental.pallas.triton")
    import functools

    from portcv.backends.jax import JaxBackend
    from portcv.detect._mct import _detector as mct_detector
    from portcv.detect._mct import _mct_pallas

    img = np.random.default_rng(5).integers(0, 256, (45, 52), dtype=np.uint8)
    det = MCTDetector(random_cascade(2, sizes=(3, 4, 5), spread=50, bias=20))
    expected = det.candidates(img, scale_factor=1.2)
    monkeypatch.setattr(JaxBackend, "runs_on_host", property(lambda self: False))
    monkeypatch.setattr(JaxBackend, "pallas_usable", property(lambda self: True))
    monkeypatch.setattr(_mct_pallas, "pallas_segment", functools.partial(_mct_pallas.pallas_segment, interpret=True))
    assert 10 < len(expected)
    for head in (4096, len(expected), len(expected) - 1, 3):
        monkeypatch.setattr(mct_detector, "WHOLE_SCAN_HEAD", head)
        with portcv.using("jax") as b:
            assert mct_detector.whole_plan_scan(b)
            for split in (None, 1, 3):
                got = det.candidates(b.xp.asarray(img), scale_factor=1.2, split_stage=split)
                assert_same_bits(expected, got)
    # A batch in one program (the frame's program mapped over the frames), one read for all.
    frames = np.stack([img, img[::-1].copy(), np.full_like(img, 90)])
    for mn in (0, 2):
        want = [det.detect(f, scale_factor=1.2, min_neighbors=mn) for f in frames]
        for head, capacity in ((4096, 4096), (3, 4096), (4096, 3)):  # survivors or boxes past the read
            monkeypatch.setattr(mct_detector, "WHOLE_SCAN_HEAD", head)
            monkeypatch.setattr(mct_detector, "WHOLE_SCAN_GROUP_CAPACITY", capacity)
            with portcv.using("jax") as b:
                got = det.detect(b.xp.asarray(frames), scale_factor=1.2, min_neighbors=mn)
            assert len(got) == len(want)
            for (wb, wn), (gb, gn) in zip(want, got):
                assert_same_bits(wb, gb)
                assert_same_bits(wn, gn)
    monkeypatch.setattr(mct_detector, "WHOLE_SCAN_HEAD", 3)
    # The grouping in the same program; above its capacity it declines and the host groups.
    boxes = {mn: det.detect(img, scale_factor=1.2, min_neighbors=mn) for mn in (1, 2)}
    assert len(boxes[1][0]) > 0
    for capacity in (4096, len(expected), len(expected) - 1):
        monkeypatch.setattr(mct_detector, "WHOLE_SCAN_GROUP_CAPACITY", capacity)
        for mn, (want_boxes, want_neighbours) in boxes.items():
            with portcv.using("jax") as b:
                got_boxes, got_neighbours = det.detect(b.xp.asarray(img), scale_factor=1.2, min_neighbors=mn)
            assert_same_bits(want_boxes, got_boxes)
            assert_same_bits(want_neighbours, got_neighbours)


def test_device_split_equals_one_group(backend: str) -> None:
    rng = np.random.default_rng(6)
    gray = rng.integers(0, 256, (120, 150), dtype=np.uint8)
    det = MCTDetector(random_cascade(5, spread=40, bias=-25))
    with portcv.using(backend):
        one = det.candidates(gray, scale_factor=1.1)
        assert len(one) > 0
        for devices in ([0, 0], [0, 0, 0]):
            assert_same_bits(one, det.candidates(gray, scale_factor=1.1, devices=devices))
            a = det.detect(gray, scale_factor=1.1, min_neighbors=1)
            b = det.detect(gray, scale_factor=1.1, min_neighbors=1, devices=devices)
            assert_same_bits(a[0], b[0])
    assert np.all(np.diff(one[:, 0]) >= 0)  # canonical (level, y, x) order
    key = one[:, 0].astype(np.int64) * 2**40 + one[:, 2].astype(np.int64) * 2**20 + one[:, 1]
    assert np.all(np.diff(key) > 0)


def test_split_levels_is_contiguous_and_balanced() -> None:
    counts = [100, 80, 60, 40, 20, 10, 5]
    assert split_levels(counts, 1) == [(0, 7)]
    two = split_levels(counts, 2)
    assert two[0][0] == 0 and two[-1][1] == 7 and len(two) == 2 and two[0][1] == two[1][0]
    assert split_levels([5], 3) == [(0, 1)]


def test_detector_argument_errors() -> None:
    det = MCTDetector(random_cascade(0))
    img = np.zeros((30, 30), np.uint8)
    for kw, exc, name in (({"scale_factor": 1.0}, ValueError, "scale_factor"),
                          ({"min_neighbors": -1}, ValueError, "min_neighbors"),
                          ({"min_size": (1,)}, ValueError, "min_size"),
                          ({"step": 0}, ValueError, "step"),
                          ({"split_stage": 9}, ValueError, "split_stage"),
                          ({"raw": 1}, TypeError, "raw"),
                          ({"devices": []}, ValueError, "devices"),
                          ({"devices": "0"}, TypeError, "devices"),
                          ({"devices": [-1]}, ValueError, "devices")):
        with pytest.raises(exc, match=name):
            det.detect(img, **kw)
    with pytest.raises(TypeError, match="image"):
        det.detect(img.astype(np.float32))
    with pytest.raises(ValueError, match="devices"):
        det.detect(np.full((40, 40), 9, np.uint8), devices=[1])  # NumPy has device 0 only
    assert det.detect(np.zeros((10, 10), np.uint8))[0].shape == (0, 4)  # smaller than the window


def test_detect_video_and_cli_take_the_mct_detector() -> None:
    det = MCTDetector(random_cascade(7, spread=40, bias=30))
    rng = np.random.default_rng(2)
    frames = rng.integers(0, 256, (3, 50, 60), dtype=np.uint8)
    got = list(portcv.detect.detect_video(det, frames, min_neighbors=0))
    for (i, boxes, n), frame in zip(got, frames):
        eb, en = det.detect(frame, min_neighbors=0)
        assert_same_bits(eb, boxes)
        assert_same_bits(en, n)


# --------------------------------------------------------------------------------------------
# Training
# --------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tiny_training() -> tuple:
    """A 3-stage cascade trained in about a second on scikit-image's LFW faces and face-free images."""
    pytest.importorskip("skimage")
    from portcv.detect import train_mct_cascade

    faces, _ = portcv.data.lfw_subset()
    faces24 = np.asarray(portcv.transform.resize(faces[:60], size=(24, 24), interpolation="bilinear_exact"))
    faces24 = np.concatenate([faces24, faces24[:, :, ::-1]])
    negatives = portcv.data.skimage_negatives()[:5]
    kw = dict(stage_positions=(5, 10, 30), negatives_per_stage=3000, max_rounds=(15, 25, 40),
              validation=faces24[::3], seed=3)
    return train_mct_cascade(faces24, negatives, **kw), faces24, negatives, kw


def test_tiny_cascade_finds_the_faces_it_was_trained_on(tiny_training) -> None:
    cascade, faces, negatives, _ = tiny_training
    assert cascade.n_stages == 3 and cascade.window == (24, 24)
    for record in cascade.meta["stages"]:
        assert record["negative_pass_rate"] <= 0.5 and record["negatives"] > 0
    # Paste 12 training faces at scale 1 into a face-free image: each window passes the cascade.
    scene = np.ascontiguousarray(negatives[3][:120, :200])
    spots = [(8 + 30 * (k % 6), 10 + 50 * (k // 6)) for k in range(12)]
    for (x, y), face in zip(spots, faces[::10]):
        scene[y : y + 24, x : x + 24] = face
    found = {tuple(r) for r in MCTDetector(cascade).candidates(scene, scale_factor=1.2).tolist()}
    hits = sum((0, x, y) in found for x, y in spots)
    assert hits >= 10, (hits, len(found))
    boxes, _ = MCTDetector(cascade).detect(scene, scale_factor=1.2, min_neighbors=0)
    assert len(boxes) >= hits


def test_training_is_deterministic_and_quantized_before_tuning(tiny_training, tmp_path) -> None:
    from portcv.detect import train_mct_cascade
    from portcv.detect._mct._train import _integer_sums, _window_codes

    cascade, faces, negatives, kw = tiny_training
    again = train_mct_cascade(faces, negatives, **kw)
    a, b = tmp_path / "a.npz", tmp_path / "b.npz"
    save_mct_cascade(cascade, a)
    save_mct_cascade(again, b)
    assert a.read_bytes() == b.read_bytes()
    # The thresholds keep the hit rate of the validation faces on the shipped integer sums.
    val = _window_codes(faces[::3])
    for j, (s0, s1) in enumerate(cascade.stage_ranges()):
        pos = cascade.positions[s0:s1].astype(np.int64)
        keys = list((pos[:, 1] - 1) * 22 + pos[:, 0] - 1)
        sums = _integer_sums(val, keys, [cascade.lut[k] for k in range(s0, s1)])
        assert np.mean(sums <= cascade.threshold[j]) >= 0.995 - 1e-9
        val = val[sums <= cascade.threshold[j]]


def test_training_argument_errors() -> None:
    from portcv.detect import train_mct_cascade

    faces = np.zeros((4, 24, 24), np.uint8)
    neg = [np.zeros((40, 40), np.uint8)]
    with pytest.raises(ValueError, match="positives"):
        train_mct_cascade(faces.astype(np.float32), neg)
    with pytest.raises(ValueError, match="positives"):
        train_mct_cascade(np.zeros((4, 20, 20), np.uint8), neg)
    with pytest.raises(TypeError, match="negative_images"):
        train_mct_cascade(faces, np.zeros((40, 40), np.uint8))
    with pytest.raises(ValueError, match="negative_images"):
        train_mct_cascade(faces, [np.zeros((10, 10), np.uint8)])
    with pytest.raises(ValueError, match="stage_positions"):
        train_mct_cascade(faces, neg, stage_positions=(0,))
    with pytest.raises(ValueError, match="max_rounds"):
        train_mct_cascade(faces, neg, stage_positions=(2, 3), max_rounds=(1, 2, 3))
    with pytest.raises(ValueError, match="validation"):
        train_mct_cascade(faces, neg, validation=np.zeros((0, 24, 24), np.uint8))
    with pytest.raises(ValueError, match="stage_hit_rate"):
        train_mct_cascade(faces, neg, stage_positions=(2, 3), stage_hit_rate=(0.9, 0.9, 0.9))
    with pytest.raises(ValueError, match="stage_hit_rate"):
        train_mct_cascade(faces, neg, stage_hit_rate=1.5)
    with pytest.raises(TypeError, match="positives must be a .* NumPy array, got list"):
        train_mct_cascade([faces[0], faces[1, :3]], neg)  # ragged: NumPy's message before


def test_cascade_arrays_and_rectangles_name_their_bad_arguments() -> None:
    c = MCTDetector.default().cascade
    fields = dict(positions=c.positions, lut=c.lut, stage_end=c.stage_end, threshold=c.threshold, window=c.window)
    for name in ("positions", "lut", "stage_end", "threshold"):
        with pytest.raises(ValueError, match=f"{name} must be a rectangular array"):
            MCTCascade(**{**fields, name: [[1, 2], [3]]})
    with pytest.raises(ValueError, match="window must hold two integers"):
        MCTCascade(**{**fields, "window": (24.5, 24)})  # was truncated to 24
    with pytest.raises(ValueError, match="rects must be an .* ragged"):
        portcv.detect.group_rectangles([[1, 2, 3, 4], [1, 2]], 1)
    with pytest.raises(ValueError, match=r"rects must be an \(N, 4\) array"):
        portcv.detect.group_rectangles(np.zeros((3, 0), np.int32), 1)  # three rectangles without coordinates
    assert portcv.detect.group_rectangles([], 1)[0].shape == (0, 4)
    with pytest.raises(TypeError, match="raw must be a bool"):
        MCTDetector.default().detect(np.zeros((30, 30), np.uint8), raw=1)
    assert MCTDetector.default().detect(np.zeros((30, 30), np.uint8), raw=np.bool_(True))[0].shape[1] == 4


# --------------------------------------------------------------------------------------------
# Data loaders (the pyvision archive is optional: absent, those tests skip saying so)
# --------------------------------------------------------------------------------------------
def _pyvision_cached() -> bool:
    return os.path.isfile(os.path.join(portcv.data.cache_dir(), portcv.data.PYVISION_ARCHIVE))


needs_pyvision = pytest.mark.skipif(not _pyvision_cached(), reason="pyvision-toolkit 1.3.6 sdist not in the portcv "
                                    "data cache: run python -c 'import portcv.data as d; d.fetch_pyvision()'")


def test_loaders_without_the_archive_say_what_to_run(tmp_path) -> None:
    with pytest.raises(portcv.data.DataUnavailableError, match="pip download"):
        portcv.data.csu_scrapshots(cache=tmp_path, download=False)
    with pytest.raises(portcv.data.DataUnavailableError, match="fetch_pyvision"):
        portcv.data.nonface_images(cache=tmp_path, download=False)
    with pytest.raises(ValueError, match="split"):
        portcv.data.nonface_images(split="nope", cache=tmp_path, download=False)


@needs_pyvision
def test_csu_scrapshots_and_nonface_images_load() -> None:
    images, ids, eyes, names = portcv.data.csu_scrapshots(download=False)
    assert len(images) == 173 and len(set(ids.tolist())) == 30 and eyes.shape == (173, 4)
    assert all(im.dtype == np.uint8 and im.ndim == 2 and im.shape[1] == 200 for im in images)
    assert names[0] == "00001aa"
    test = portcv.data.nonface_images(split="test", download=False)
    assert len(test) == 8 and all(t.dtype == np.uint8 and t.shape[2] == 3 for t in test)


@needs_pyvision
def test_face_scenes_have_known_boxes_and_are_seeded() -> None:
    a = portcv.data.face_scenes(seed=4, count=2, download=False)
    b = portcv.data.face_scenes(seed=4, count=2, download=False)
    for (ga, ta), (gb, tb) in zip(a, b):
        assert ga.shape == (480, 640) and ga.dtype == np.uint8 and 3 <= ta.shape[0] <= 8
        assert_same_bits(ga, gb)
        assert_same_bits(ta, tb)
        assert np.all(ta[:, 2] >= 24) and np.all(ta[:, 0] >= -ta[:, 2]) and np.all(ta[:, 2] == ta[:, 3])
    big = portcv.data.face_scenes(seed=1, count=1, size=(1920, 1080), download=False)
    assert big[0][0].shape == (1080, 1920)


def test_face_box_geometry() -> None:
    box = portcv.data.face_box((10, 20, 30, 20))  # eyes 20 px apart, level
    assert np.allclose(box, [20 - 0.49 * 50.8, 20 - 0.38 * 50.8, 50.8, 50.8])


def test_lfw_subset_and_skimage_negatives_are_uint8() -> None:
    pytest.importorskip("skimage")
    faces, nonfaces = portcv.data.lfw_subset()
    assert faces.shape == nonfaces.shape == (100, 25, 25) and faces.dtype == np.uint8
    negs = portcv.data.skimage_negatives()
    assert len(negs) == len(portcv.data.SKIMAGE_NEGATIVES)
    assert all(n.dtype == np.uint8 and n.ndim == 2 for n in negs)


def test_bundled_cascade_loads_and_detects_on_every_backend(backend: str) -> None:
    det = MCTDetector.default()
    assert det.cascade.meta["name"] == "mct_frontalface_24" and det.cascade.n_stages == 5
    rng = np.random.default_rng(0)
    img = np.clip(rng.normal(128, 40, (90, 110)), 0, 255).astype(np.uint8)
    with portcv.using("numpy"):
        expected = det.detect(img, min_neighbors=0)
    with portcv.using(backend):
        got = det.detect(img, min_neighbors=0)
    assert_same_bits(expected[0], got[0])


def test_cli_faces_with_the_mct_detector(tmp_path, capsys) -> None:
    iio = pytest.importorskip("imageio.v3")
    from portcv import cli

    img = np.full((60, 80), 90, np.uint8)
    path = tmp_path / "flat.png"
    iio.imwrite(path, img)
    assert cli.main(["faces", str(path), "--detector", "mct"]) == 0
    assert "0 boxes" in capsys.readouterr().out
    assert cli.main(["faces", str(path), "--detector", "mct", "--cascade", str(tmp_path / "none.npz")]) == 2
