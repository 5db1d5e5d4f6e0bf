"""The CuPy cascade kernels (``cuda/cascade.cu``) against the portable versions: the same
statuses, plans and detections, bit for bit, on OpenCV's trained cascades and real images.

These tests need a CUDA device (``--backends numpy,cupy``); elsewhere they skip. The portable
kernels on the other backends are covered by ``test_cascade.py``.
"""

from __future__ import annotations

import numpy as np
import pytest

import portcv
from portcv.detect._cascade._cascade import evaluate_kernel, integrals_kernel
from portcv.detect._scan._kernels import compact_kernel

from ..helpers import assert_same_bits

cv2 = pytest.importorskip("cv2")
skdata = pytest.importorskip("skimage.data")

#: Haar without and with multi-node trees and tilted features, and scikit-image's LBP cascade.
CASCADES = [
    "haarcascade_frontalface_default.xml",
    "haarcascade_frontalface_alt_tree.xml",
    "haarcascade_upperbody.xml",
    "lbpcascade_frontalface_opencv.xml",
]


def require_cupy(backend: str) -> None:
    if backend != "cupy":
        pytest.skip("CuPy-kernel test; the portable kernels are covered by test_cascade.py")


def cascade(name: str):
    from portcv.detect._cascade._detector import load

    return load(name)


def gray_images() -> dict[str, np.ndarray]:
    astronaut = portcv.color.rgb_to_gray(skdata.astronaut())
    return {"astronaut": np.asarray(astronaut), "camera": skdata.camera()}


def tables(img: np.ndarray, tilted: bool, *, seed: int | None = None) -> tuple[np.ndarray, ...]:
    """The uint32 integral images; with ``seed``, offset by f(y) + g(x) (upright) and a constant
    (tilted) modulo 2**32: every rectangle sum is unchanged, but most corner differences wrap."""
    s, q, t = (np.asarray(a) for a in integrals_kernel(img, tilted=tilted))
    if seed is None:
        return s, q, t
    rng = np.random.default_rng(seed)
    h, w = s.shape

    def shift(a: np.ndarray, separable: bool) -> np.ndarray:
        extra = int(rng.integers(0, 2**32))
        if separable:
            extra = extra + rng.integers(0, 2**32, (h, 1)) + rng.integers(0, 2**32, (1, w))
        return ((a.astype(np.int64) + extra) % 2**32).astype(np.uint32)

    return shift(s, True), shift(q, True), shift(t, False)


def random_windows(img: np.ndarray, window: tuple[int, int], stride: int, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    W, H = window
    ys = rng.integers(0, img.shape[0] - H + 1, n)
    xs = rng.integers(0, img.shape[1] - W + 1, n)
    return (ys * stride + xs).astype(np.int32)


def evaluate(backend: str, c, s, q, t, windows, **params):
    kw = dict(feature_type=c.feature_type, window=c.window, has_tilted=c.has_tilted, stages=c.stage_layout())
    with portcv.using(backend):
        args = [portcv.asarray(a) for a in (s, q, t, windows, *c.arrays())]
        return evaluate_kernel(*args, **kw, **params)


@pytest.mark.parametrize("name", CASCADES)
@pytest.mark.parametrize("image", ["astronaut", "camera"])
@pytest.mark.parametrize("wrap", [False, True])
def test_statuses_equal_numpy(backend, name, image, wrap):
    require_cupy(backend)
    c = cascade(name)
    img = gray_images()[image]
    s, q, t = tables(img, c.has_tilted, seed=7 if wrap else None)
    windows = random_windows(img, c.window, s.shape[1], 3000, seed=len(name) + len(image))
    S = c.n_stages
    for begin, end, check in [(0, S, True), (0, 1, True), (0, 2, False), (2, S, False), (S, S, True)]:
        expected = evaluate("numpy", c, s, q, t, windows, stage_begin=begin, stage_end=end, check_variance=check)
        actual = evaluate(backend, c, s, q, t, windows, stage_begin=begin, stage_end=end, check_variance=check)
        assert_same_bits(expected, actual)


def test_statuses_cover_every_outcome(backend):
    """The windows around the astronaut's face reach every kind of status (so the equality above
    is not vacuous): variance rejects, stage-0 and later rejects, and passes."""
    require_cupy(backend)
    c = cascade("haarcascade_frontalface_default.xml")
    img = gray_images()["astronaut"][:256, :384]
    small = cv2.resize(img, (img.shape[1] // 4, img.shape[0] // 4), interpolation=cv2.INTER_LINEAR_EXACT)
    s, q, t = tables(small, False)
    ys, xs = np.mgrid[0 : small.shape[0] - 23, 0 : small.shape[1] - 23]
    windows = (ys * s.shape[1] + xs).reshape(-1).astype(np.int32)
    expected = evaluate("numpy", c, s, q, t, windows, stage_begin=0, stage_end=c.n_stages, check_variance=True)
    actual = evaluate(backend, c, s, q, t, windows, stage_begin=0, stage_end=c.n_stages, check_variance=True)
    assert_same_bits(expected, actual)
    e = np.asarray(expected)
    assert (e == 1).any() and (e == 0).any() and (e == -1).any() and (e < -1).any()


def test_count_limits_a_plan(backend):
    """With a device count, the first count windows get their statuses and the rest 0."""
    require_cupy(backend)
    import cupy

    from portcv.detect._cascade._cascade_cuda import _ARRAY_NAMES, launch_stages

    c = cascade("haarcascade_frontalface_alt_tree.xml")
    img = gray_images()["camera"]
    s, q, t = tables(img, c.has_tilted)
    windows = random_windows(img, c.window, s.shape[1], 1000, seed=3)
    full = evaluate("numpy", c, s, q, t, windows, stage_begin=1, stage_end=c.n_stages, check_variance=False)
    arrays = dict(zip(_ARRAY_NAMES, (cupy.asarray(a) for a in c.arrays())))
    for count in (0, 1, 517, 1000, 5000):
        got = launch_stages(cupy.asarray(s), cupy.asarray(q), cupy.asarray(t), cupy.asarray(windows), arrays,
                            feature_type=c.feature_type, window=c.window, has_tilted=c.has_tilted,
                            stages=c.stage_layout(), stage_begin=1, stage_end=c.n_stages, check_variance=False,
                            count=cupy.asarray(count, dtype=cupy.int32))
        k = min(count, windows.size)
        expected = np.concatenate([np.asarray(full)[:k], np.zeros(windows.size - k, np.int32)])
        np.testing.assert_array_equal(got.get(), expected)


@pytest.mark.parametrize("name", CASCADES)
@pytest.mark.parametrize("deep, lanes", [(0, 32), (3, 32), (3, 8), (5, 2), (99, 32)])
def test_plan_statuses_equal_numpy_with_lanes(backend, monkeypatch, name, deep, lanes):
    """The plan launch: one thread per window up to DEEP_STAGE, then the alive windows again
    with DEEP_LANES threads each (a resident grid looping over them); the statuses are those of
    the portable version (stages summed in any order: int64 fixed point), count-limited slots 0."""
    require_cupy(backend)
    from portcv.detect._cascade import _cascade_cuda
    from portcv.detect._cascade._cascade import plan_evaluate_kernel

    monkeypatch.setattr(_cascade_cuda, "DEEP_STAGE", deep)
    monkeypatch.setattr(_cascade_cuda, "DEEP_LANES", lanes)
    c = cascade(name)
    img = gray_images()["astronaut"]
    s, q, t = tables(img, c.has_tilted, seed=5)
    windows = random_windows(img, c.window, s.shape[1], 4000, seed=len(name))
    plan = np.random.default_rng(deep).permutation(windows.size)[:3000].astype(np.int32)
    kw = dict(feature_type=c.feature_type, window=c.window, has_tilted=c.has_tilted, stages=c.stage_layout(),
              check_variance=False)
    for begin, count in ((1, 3000), (2, 1234), (c.n_stages - 1, 17), (0, 0)):
        results = []
        for b in ("numpy", backend):
            with portcv.using(b):
                args = [portcv.asarray(a) for a in (s, q, t, windows, plan, np.int32(count), *c.arrays())]
                results.append(plan_evaluate_kernel(*args, **kw, stage_begin=begin, stage_end=c.n_stages))
        assert_same_bits(*results)


@pytest.mark.parametrize("lanes", [2, 8, 32])
def test_lanes_launch_equals_one_thread_per_window(backend, lanes):
    """launch_stages with several threads per window and no plan: every status as with one."""
    require_cupy(backend)
    import cupy

    from portcv.detect._cascade._cascade_cuda import _ARRAY_NAMES, launch_stages

    c = cascade("haarcascade_frontalface_default.xml")
    img = gray_images()["camera"]
    s, q, t = tables(img, c.has_tilted)
    windows = random_windows(img, c.window, s.shape[1], 20000, seed=lanes)
    arrays = dict(zip(_ARRAY_NAMES, (cupy.asarray(a) for a in c.arrays())))
    kw = dict(feature_type=c.feature_type, window=c.window, has_tilted=c.has_tilted, stages=c.stage_layout(),
              stage_begin=0, stage_end=c.n_stages, check_variance=True)
    dev = [cupy.asarray(a) for a in (s, q, t, windows)]
    one = launch_stages(*dev, arrays, **kw)
    many = launch_stages(*dev, arrays, **kw, lanes=lanes)
    np.testing.assert_array_equal(one.get(), many.get())
    assert (one.get() == 1).any() or (one.get() < -2).any()  # some windows go deep


def random_scan(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Statuses with runs of stage-0 rejects (the skip rule's hard case) and rows of random length."""
    rng = np.random.default_rng(seed)
    p0 = rng.choice([0.0, 0.3, 0.7, 0.95, 1.0])
    status = np.where(rng.random(n) < p0, 0, rng.choice([1, -1, -3], n)).astype(np.int32)
    row_len = int(rng.integers(1, 700))
    row_end = np.zeros(n, bool)
    row_end[row_len - 1 :: row_len] = True
    if n:
        row_end[-1] = True
    return status, row_end


@pytest.mark.parametrize("seed", range(12))
def test_compact_equals_numpy(backend, seed):
    require_cupy(backend)
    from portcv.detect._cascade._cascade_cuda import COMPACT_TILE

    rng = np.random.default_rng(seed)
    n = int(rng.choice([0, 1, 31, COMPACT_TILE - 1, COMPACT_TILE, COMPACT_TILE + 1, 40 * COMPACT_TILE + 17,
                        rng.integers(1, 3_000_000)]))
    status, row_end = random_scan(n, seed)
    for capacity in sorted({0, 1, n // 3, n, n + 5}):
        with portcv.using("numpy"):
            e_plan, e_count = compact_kernel(status, row_end, capacity=capacity)
        with portcv.using(backend):
            plan, count = compact_kernel(portcv.asarray(status), portcv.asarray(row_end), capacity=capacity)
        assert_same_bits(e_plan, plan)
        assert_same_bits(e_count, count)


def test_compact_without_skip_rule(backend):
    """``compact(status, None)`` keeps every status-1 index (plan -> plan compaction)."""
    require_cupy(backend)
    import cupy

    from portcv.detect._cascade._cascade_cuda import compact

    status, _ = random_scan(123_457, 5)
    for capacity in (0, 10, 200_000):
        plan, count = compact(cupy.asarray(status), None, capacity=capacity)
        idx = np.flatnonzero(status == 1)[:capacity]
        expected = np.zeros(capacity, np.int32)
        expected[: idx.size] = idx
        assert int(count) == idx.size
        np.testing.assert_array_equal(plan.get(), expected)


@pytest.mark.parametrize("name", ["haarcascade_frontalface_default.xml", "lbpcascade_frontalface_opencv.xml"])
@pytest.mark.parametrize("split", [1, 3])
def test_breadth_first_equals_depth_first_on_device(backend, name, split):
    """Stages [0, split) on every window, the plan, stages [split, S) on it: the survivors are the
    visited windows that pass the whole cascade in one launch (the scheduling paper's structure)."""
    require_cupy(backend)
    import cupy

    c = cascade(name)
    img = gray_images()["astronaut"]
    small = cv2.resize(img, (128, 128), interpolation=cv2.INTER_LINEAR_EXACT)  # face ~24 px: survivors
    s, q, t = tables(small, c.has_tilted)
    W, H = c.window
    ys, xs = np.mgrid[0 : small.shape[0] - H + 1, 0 : small.shape[1] - W + 1 : 2]
    windows = (ys * s.shape[1] + xs).reshape(-1).astype(np.int32)
    row_end = np.zeros(ys.shape, bool)
    row_end[:, -1] = True
    row_end = row_end.reshape(-1)
    S = c.n_stages
    with portcv.using(backend):
        depth_first = evaluate(backend, c, s, q, t, windows, stage_begin=0, stage_end=S, check_variance=True)
        first = evaluate(backend, c, s, q, t, windows, stage_begin=0, stage_end=split, check_variance=True)
        plan, count = compact_kernel(first, cupy.asarray(row_end), capacity=windows.size)
        n = int(count)
        later = evaluate(backend, c, s, q, t, windows[plan[:n].get()], stage_begin=split, stage_end=S,
                         check_variance=False)
    survivors = plan[:n].get()[later.get() == 1]
    # Depth first with the skip rule applied to the stage-0 outcome of the full evaluation.
    with portcv.using("numpy"):
        full_plan, full_count = compact_kernel(np.asarray(depth_first.get()), row_end, capacity=windows.size)
    np.testing.assert_array_equal(survivors, np.asarray(full_plan)[: int(full_count)])
    assert survivors.size > 0  # the face is found at this scale (7 windows Haar, 4 LBP on NumPy)


def cascade_path(name: str) -> str:
    from portcv.detect._cascade._detector import resolve_cascade_path

    return resolve_cascade_path(name)


@pytest.mark.parametrize("name", ["haarcascade_frontalface_default.xml", "lbpcascade_frontalface_opencv.xml"])
def test_detect_equal_across_backends(backend, name):
    """End to end (pyramid, packed integrals, breadth-first stages, grouping): the same boxes,
    neighbour counts and raw candidates on the device as on NumPy."""
    require_cupy(backend)
    from portcv.detect import CascadeDetector

    det = CascadeDetector.from_opencv(cascade_path(name))
    frames = [skdata.astronaut(), np.ascontiguousarray(np.tile(skdata.camera()[:, :, None], (1, 1, 3)))]
    for frame in frames:
        for params in (dict(scale_factor=1.1, min_neighbors=3),
                       dict(scale_factor=1.2, min_neighbors=0, min_size=(30, 30))):
            with portcv.using("numpy"):
                e_boxes, e_neigh = det.detect(frame, **params)
            with portcv.using(backend):
                boxes, neigh = det.detect(portcv.asarray(frame), **params)
            assert_same_bits(e_boxes, boxes)
            assert_same_bits(e_neigh, neigh)


def test_integrals_override_wraps_like_numpy(backend):
    """The CuPy integrals (integral.cu's int64 tables, wrapped to uint32) equal the portable
    uint32 tables, also where the squared sums pass 2**32."""
    require_cupy(backend)
    rng = np.random.default_rng(4)
    img = np.where(rng.random((333, 517)) < 0.9, 255, rng.integers(0, 256, (333, 517))).astype(np.uint8)
    with portcv.using("numpy"):
        expected = integrals_kernel(img, tilted=False)
    assert int((img.astype(np.int64) ** 2).sum()) > 2**32  # the squared sums wrap
    with portcv.using(backend):
        got = integrals_kernel(portcv.asarray(img), tilted=False)
    for e, a in zip(expected, got):
        assert_same_bits(e, a)


def test_scan_reads_back_once(backend, monkeypatch):
    """A detection reads one small array back from the device (no count read between stages):
    the candidates without grouping, the grouped boxes' head with it."""
    require_cupy(backend)
    from portcv.detect import CascadeDetector
    from portcv.detect._cascade import _scan as cascade_scan

    calls = []
    real = cascade_scan.to_numpy
    monkeypatch.setattr(cascade_scan, "to_numpy", lambda a: calls.append(a.size) or real(a))
    det = CascadeDetector.from_opencv(cascade_path("haarcascade_frontalface_default.xml"))
    gray = cv2.cvtColor(skdata.astronaut(), cv2.COLOR_RGB2GRAY)
    with portcv.using(backend):
        det.detect(portcv.asarray(gray), min_neighbors=0)
        assert calls == [cascade_scan.CANDIDATE_LIMIT + 2]
        calls.clear()
        det.detect(portcv.asarray(gray), min_neighbors=3)
        assert calls == [2 + 5 * cascade_scan.GROUP_READ]
