"""portcv.motion (the Rice paper's section III) and portcv.video (its real-time pipeline, section V-E)."""

from __future__ import annotations

import importlib.util
import inspect
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import portcv
from portcv import motion

from ..helpers import assert_same_bits, matches_numpy, on_backend
from . import oracle_motion as oracle

variants = st.sampled_from(motion.VARIANTS)


@st.composite
def edge_pairs(draw, *, max_h=70, max_w=90, batch=True, binary=True):
    """Two 0/255 edge maps of one shape: independent, or the second a shifted, noisy copy of the
    first (so that aprons find matches), at densities from sparse to almost all edge."""
    h, w = draw(st.integers(1, max_h)), draw(st.integers(1, max_w))
    lead = (draw(st.integers(1, 3)),) if batch and draw(st.booleans()) else ()
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    p = draw(st.sampled_from([0.02, 0.1, 0.5, 0.9, 0.99]))
    e1 = rng.random(lead + (h, w)) < p
    if draw(st.booleans()):
        dy, dx = draw(st.integers(-6, 6)), draw(st.integers(-6, 6))
        e2 = np.roll(e1, (dy, dx), axis=(-2, -1)) ^ (rng.random(e1.shape) < 0.01)
    else:
        e2 = rng.random(lead + (h, w)) < p
    if binary:
        return (e1 * 255).astype(np.uint8), (e2 * 255).astype(np.uint8)
    values = rng.integers(1, 256, e1.shape).astype(np.uint8)  # any non-zero value is an edge
    return e1 * values, e2 * values


@st.composite
def grids(draw, shape):
    h, w = shape[-2:]
    return draw(st.integers(1, min(h, 9))), draw(st.integers(1, min(w, 11)))


# ------------------------------------------------------------------------------ difference
@given(pair=edge_pairs(), beta=st.sampled_from([0, 1, 2, 5, 12, 33, 100]), variant=variants)
def test_difference_same_bits_on_every_backend(backend, pair, beta, variant):
    e1, e2 = pair
    # channel_axis=None: batches of maps 3 or 4 pixels wide are gray too
    d = matches_numpy(backend, motion.difference, e1, e2, beta=beta, variant=variant, channel_axis=None)
    assert set(np.unique(d)) <= {0, 255}


@given(pair=edge_pairs(max_h=16, max_w=22, batch=False), beta=st.integers(0, 6))
def test_difference_equals_algorithm2_loops(pair, beta):
    e1, e2 = pair
    np.testing.assert_array_equal(motion.difference(e1, e2, beta=beta), oracle.algorithm2(e1, e2, beta))


@given(pair=edge_pairs(max_h=26, max_w=30, batch=False), beta=st.integers(0, 6))
def test_difference_listing_equals_listing6_loops(pair, beta):
    e1, e2 = pair
    np.testing.assert_array_equal(
        motion.difference(e1, e2, beta=beta, variant="listing"), oracle.listing6(e1, e2, beta)
    )


@given(pair=edge_pairs(max_h=12, max_w=14, batch=False), beta=st.integers(0, 4))
def test_printed_algorithm2_is_the_plain_difference(pair, beta):
    """As printed, Algorithm 2 clears only pixels it never set: it is D0, i.e. beta = 0."""
    e1, e2 = pair
    d0 = np.where(e1 != e2, 255, 0).astype(np.uint8)
    np.testing.assert_array_equal(oracle.algorithm2_printed(e1, e2, beta), d0)
    np.testing.assert_array_equal(motion.difference(e1, e2, beta=0), d0)


@given(pair=edge_pairs(max_h=20, max_w=20, binary=False), beta=st.integers(0, 4), variant=variants)
def test_difference_binarizes_its_inputs(pair, beta, variant):
    e1, e2 = pair
    expected = motion.difference((e1 != 0) * np.uint8(255), (e2 != 0) * np.uint8(255), beta=beta, variant=variant,
                                 channel_axis=None)
    assert_same_bits(expected, motion.difference(e1, e2, beta=beta, variant=variant, channel_axis=None))


def test_difference_tolerates_a_shift_up_to_beta():
    e1 = np.zeros((40, 40), np.uint8)
    e1[10:30, 12] = 255  # a vertical edge that moves 5 pixels to the right
    e2 = np.roll(e1, 5, axis=1)
    assert not motion.difference(e1, e2, beta=5).any()
    d = portcv.to_numpy(motion.difference(e1, e2, beta=4))
    assert (d[10:30, 17] == 255).all() and d.sum() == 20 * 255  # only the appearing edge
    # An edge pixel of E1 that disappears counts only where E1 is edge everywhere around it.
    full = np.full((9, 9), 255, np.uint8)
    hole = full.copy()
    hole[4, 4] = 0
    assert portcv.to_numpy(motion.difference(full, hole, beta=2))[4, 4] == 255
    assert not motion.difference(hole, full, beta=2).any()


def test_difference_wide_beta_equals_whole_image_beta():
    rng = np.random.default_rng(3)
    e1 = ((rng.random((2, 17, 23)) < 0.97) * 255).astype(np.uint8)
    e2 = ((rng.random((2, 17, 23)) < 0.5) * 255).astype(np.uint8)
    for variant in motion.VARIANTS:
        assert_same_bits(motion.difference(e1, e2, beta=22, variant=variant),
                         motion.difference(e1, e2, beta=65535, variant=variant))


# ------------------------------------------------------------------------------ density / regions
@given(pair=edge_pairs(), data=st.data(), variant=variants, scale=st.sampled_from([None, 1, 1000]))
def test_density_same_bits_on_every_backend(backend, pair, data, variant, scale):
    d = pair[0]
    grid = data.draw(grids(d.shape))
    counts = matches_numpy(backend, motion.density, d, grid=grid, variant=variant, scale=scale, channel_axis=None)
    assert counts.shape == d.shape[:-2] + grid and counts.dtype == np.int32


@given(pair=edge_pairs(max_h=30, max_w=36, batch=False), data=st.data(),
       gamma=st.sampled_from([0.0, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0]))
def test_density_and_regions_equal_algorithm3_loops(pair, data, gamma):
    d = pair[0]
    h, w = d.shape
    grid = data.draw(grids(d.shape))
    counts, expected = oracle.algorithm3(d, gamma, *grid)
    np.testing.assert_array_equal(motion.density(d, grid=grid), counts)
    np.testing.assert_array_equal(motion.regions(counts, shape=(h, w), gamma=gamma), expected)


@given(pair=edge_pairs(max_h=30, max_w=36, batch=False), data=st.data(),
       gamma=st.sampled_from([0.0, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0]))
def test_listing_density_regions_and_area_equal_listings_7_and_8(pair, data, gamma):
    d = pair[0]
    h, w = d.shape
    grid = data.draw(grids(d.shape))
    counts = oracle.listing7(d, grid[1], grid[0])
    np.testing.assert_array_equal(motion.density(d, grid=grid, variant="listing"), counts)
    cells = motion.regions(counts, shape=(h, w), gamma=gamma, variant="listing")
    white = np.full((h, w), 255, np.uint8)
    np.testing.assert_array_equal(motion.area_image(white, cells, variant="listing", channel_axis=None),
                                  oracle.listing8(counts, h, w, gamma))


def test_density_counts_overlapping_pseudocode_cells():
    d = np.zeros((4, 6), np.uint8)
    d[2, 3] = 255  # on the shared row of the two cell rows and the shared column of the two columns
    np.testing.assert_array_equal(motion.density(d, grid=(2, 2)), [[1, 1], [1, 1]])
    np.testing.assert_array_equal(motion.density(d, grid=(2, 2), variant="listing"), [[0, 0], [0, 1]])


def test_density_scale_is_the_floored_fraction_of_a_cell():
    rng = np.random.default_rng(0)
    d = ((rng.random((3, 50, 70)) < 0.3) * 255).astype(np.uint8)
    counts = portcv.to_numpy(motion.density(d, grid=(4, 6)))
    area = (50 // 4) * (70 // 6)
    np.testing.assert_array_equal(motion.density(d, grid=(4, 6), scale=1000), (1000 * counts) // area)


@pytest.mark.parametrize("variant, strict", [("pseudocode", True), ("listing", False)])
def test_regions_threshold_ties(variant, strict):
    area = 20 * 20  # a 1 x 12 grid over 20 x 240 pixels
    counts = np.arange(0, 12, dtype=np.int32).reshape(1, 12) + 390
    for gamma in (0.0, 0.01, 0.975, 0.98, 1.0, 1 / 3, 1e-300):
        cells = portcv.to_numpy(motion.regions(counts, shape=(20, 240), gamma=gamma, variant=variant))
        expected = [oracle.exceeds(int(x), area, gamma, strict) for x in counts[0]]
        assert cells[0].tolist() == expected, gamma


@given(counts=st.lists(st.integers(0, 2000), min_size=1, max_size=12),
       gamma=st.floats(0, 1, allow_nan=False), variant=variants)
def test_regions_same_bits_on_every_backend(backend, counts, gamma, variant):
    c = np.asarray(counts, np.int32).reshape(1, -1)
    matches_numpy(backend, motion.regions, c, shape=(40, 50 * c.shape[1]), gamma=gamma, variant=variant)


# ------------------------------------------------------------------------------ area image / outlines
@st.composite
def frames_and_regions(draw, *, max_h=40, max_w=50, batch=True, channels=((), (3,), (4,))):
    h, w = draw(st.integers(1, max_h)), draw(st.integers(1, max_w))
    rows, cols = draw(st.integers(1, min(h, 7))), draw(st.integers(1, min(w, 9)))
    lead = (draw(st.integers(1, 3)),) if batch and draw(st.booleans()) else ()
    channels = draw(st.sampled_from(channels))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    image = rng.integers(0, 256, lead + (h, w) + channels, dtype=np.uint8)
    cells = rng.random(lead + (rows, cols)) < draw(st.sampled_from([0.0, 0.3, 1.0]))
    return image, cells


@given(case=frames_and_regions(), variant=variants)
def test_area_image_same_bits_on_every_backend(backend, case, variant):
    image, cells = case
    axis = -1 if image.ndim > cells.ndim else None
    matches_numpy(backend, motion.area_image, image, cells, variant=variant, channel_axis=axis)


@given(case=frames_and_regions(), variant=variants, thickness=st.integers(1, 4))
def test_draw_regions_same_bits_on_every_backend(backend, case, variant, thickness):
    image, cells = case
    axis = -1 if image.ndim > cells.ndim else None
    matches_numpy(backend, motion.draw_regions, image, cells, variant=variant, thickness=thickness, channel_axis=axis)


@given(case=frames_and_regions(max_h=24, max_w=30, batch=False, channels=((),)))
def test_pseudocode_area_image_equals_inclusive_boxes(case):
    image, cells = case
    h, w = image.shape
    white = np.full((h, w), 255, np.uint8)
    np.testing.assert_array_equal(motion.area_image(white, cells, channel_axis=None),
                                  oracle.pseudocode_area(cells, h, w))


@given(case=frames_and_regions(max_h=24, max_w=30, batch=False), variant=variants, thickness=st.integers(1, 3))
def test_draw_regions_equals_outline_loops(case, variant, thickness):
    image, cells = case
    has_channels = image.ndim == 3
    color = (10, 20, 30, 40)[: image.shape[-1]] if has_channels else 77
    bounds = motion.cell_bounds(image.shape[:2], grid=cells.shape, variant=variant)
    expected = oracle.outlines(image, cells, bounds, color, thickness)
    np.testing.assert_array_equal(
        motion.draw_regions(image, cells, variant=variant, color=color, thickness=thickness,
                            channel_axis=-1 if has_channels else None), expected
    )


def test_draw_regions_default_colors_and_broadcast():
    rgb = np.zeros((2, 6, 8, 3), np.uint8)
    out = portcv.to_numpy(motion.draw_regions(rgb, np.array([[True, False]])))  # one grid for both frames
    assert out.shape == rgb.shape
    assert out[:, 0, 0].tolist() == [[255, 0, 0], [255, 0, 0]] and not out[:, :, 5:].any()


def test_cell_bounds_partition_and_overlap():
    b = motion.cell_bounds((50, 70), grid=(4, 6), variant="listing")
    assert b[0, 0, 0] == 0 and b[-1, 0, 1] == 50 and (b[1:, 0, 0] == b[:-1, 0, 1]).all()
    p = motion.cell_bounds((50, 70), grid=(4, 6))
    assert (p[1:, 0, 0] == p[:-1, 0, 1] - 1).all() and p[-1, 0, 1] == 4 * 12 + 1  # rows 49 in no cell


# ------------------------------------------------------------------------------ pipeline
DETECTOR = {"t_low": 40, "t_high": 60, "beta": 2, "grid": (3, 4), "gamma": 0.01}


def test_motion_detector_equals_detect_motion(backend):
    video = portcv.data.moving_shapes(5, 36, 52, seed=4)
    with portcv.using(backend):
        batch = motion.detect_motion(video, **DETECTOR)
        detector = motion.MotionDetector(**DETECTOR)
        assert detector.update(video[0]) is None
        assert portcv.backend().owns(detector.previous_edges)
        for t in range(1, 5):
            step = detector.update(video[t])
            for name in motion.MotionResult._fields:
                assert_same_bits(getattr(batch, name)[t - 1], getattr(step, name))
    reference = on_backend("numpy", motion.detect_motion, video, **DETECTOR)
    for name in motion.MotionResult._fields:
        assert_same_bits(getattr(reference, name), getattr(batch, name))


@pytest.mark.parametrize("variant", motion.VARIANTS)
def test_detect_motion_chains_the_steps(variant):
    video = portcv.data.moving_shapes(4, 40, 48, seed=2)
    gray = portcv.color.rgb_to_gray(video)
    result = motion.detect_motion(gray, **DETECTOR, variant=variant)
    edges = portcv.edges.detect(gray, 40, 60, variant=variant)
    d = motion.difference(edges[:-1], edges[1:], beta=2, variant=variant)
    counts = motion.density(d, grid=(3, 4), variant=variant)
    assert_same_bits(edges[1:], result.edges)
    assert_same_bits(d, result.difference)
    assert_same_bits(counts, result.density)
    assert_same_bits(motion.regions(counts, shape=(40, 48), gamma=0.01, variant=variant), result.regions)
    from_rgb = motion.detect_motion(video, **DETECTOR, variant=variant)  # RGB frames: their gray's result
    for name in motion.MotionResult._fields:
        assert_same_bits(getattr(result, name), getattr(from_rgb, name))


def test_moving_shapes_make_motion_where_the_shapes_are():
    video = portcv.data.moving_shapes(3, 120, 160, seed=0, noise=2.0)
    result = motion.detect_motion(video, t_low=70, t_high=80, beta=3, grid=(4, 4))
    assert portcv.to_numpy(result.regions).any()
    still = np.repeat(video[:1], 3, axis=0)
    assert not portcv.to_numpy(motion.detect_motion(still, t_low=70, t_high=80, grid=(4, 4)).regions).any()


def test_motion_detector_rejects_a_new_frame_size():
    detector = motion.MotionDetector(**DETECTOR)
    detector.update(np.zeros((20, 30), np.uint8))
    with pytest.raises(ValueError, match="reset"):
        detector.update(np.zeros((20, 31), np.uint8))
    detector.reset()
    assert detector.update(np.zeros((20, 31), np.uint8)) is None


# ------------------------------------------------------------------------------ bad input
E = np.zeros((12, 16), np.uint8)
E3 = np.zeros((2, 12, 3), np.uint8)  # a colour image, not a batch of narrow maps
COUNTS = np.zeros((2, 2), np.int32)
CELLS = np.zeros((2, 2), bool)


@pytest.mark.parametrize(
    "call, error, words",
    [
        (lambda: motion.difference(E.astype(np.int16), E), TypeError, "e1 must have dtype uint8"),
        (lambda: motion.difference(E, E[:-1]), ValueError, "same shape"),
        (lambda: motion.difference(E[0], E[0]), ValueError, "e1 must have at least 2 dimensions"),
        (lambda: motion.difference(E[:0], E[:0]), ValueError, "e1 must not be empty"),
        (lambda: motion.difference(E, E, beta=-1), ValueError, "beta"),
        (lambda: motion.difference(E, E, beta=2.5), TypeError, "beta must be an integer"),
        (lambda: motion.difference(E, E, variant="paper"), ValueError, "variant"),
        (lambda: motion.difference("edges", E), TypeError, "e1 must be an array"),
        (lambda: motion.difference(E3, E3), ValueError, "e1 looks like a colour image.*rgb_to_gray"),
        (lambda: motion.difference(E, E, channel_axis=-1), ValueError, "channel_axis must be 'auto' or None"),
        (lambda: motion.density(E3), ValueError, "d looks like a colour image.*rgb_to_gray"),
        (lambda: motion.density(E, grid=(0, 2)), ValueError, "grid"),
        (lambda: motion.density(E, grid=(13, 2)), ValueError, "grid"),
        (lambda: motion.density(E, grid=6), ValueError, "grid"),
        (lambda: motion.density(E, scale=0), ValueError, "scale"),
        (lambda: motion.density(E.astype(np.float32)), TypeError, "d must have dtype uint8"),
        (lambda: motion.regions(COUNTS, shape=(12, 16), gamma=float("nan")), ValueError, "gamma must be finite"),
        (lambda: motion.regions(COUNTS, shape=(12, 16), gamma=-0.1), ValueError, "gamma"),
        (lambda: motion.regions(COUNTS, shape=(12, 16), gamma="1%"), TypeError, "gamma"),
        (lambda: motion.regions(COUNTS, shape=(12, 16), gamma=2), ValueError, "gamma must be a fraction of a cell in \\[0, 1\\]"),
        (lambda: motion.cell_bounds((3 * 10**9, 64)), ValueError, "shape must be in"),
        (lambda: motion.detect_motion(np.zeros((2, 8, 8), np.uint8), t_low=1, t_high=2, grid=(2, 2), gamma=2), ValueError, "gamma"),
        (lambda: motion.regions(COUNTS.astype(np.int64), shape=(12, 16)), TypeError, "density must have dtype int32"),
        (lambda: motion.regions(COUNTS, shape=(1, 16)), ValueError, "more cells"),
        (lambda: motion.regions(COUNTS, shape=12), ValueError, "shape"),
        (lambda: motion.area_image(E, CELLS.astype(np.uint8)), TypeError, "regions must have dtype bool"),
        (lambda: motion.area_image(E, CELLS[None]), ValueError, "leading axes"),
        (lambda: motion.area_image(np.zeros((3, 12, 16), np.uint8), np.zeros((2, 2, 2), bool)), ValueError, "leading axes"),
        (lambda: motion.area_image(E, CELLS, channel_axis=-1), ValueError, "channel_axis"),
        (lambda: motion.draw_regions(E, CELLS, thickness=0), ValueError, "thickness"),
        (lambda: motion.draw_regions(E, CELLS, color=300), ValueError, "color"),
        (lambda: motion.draw_regions(np.zeros((12, 16, 3), np.uint8), CELLS, color=(1, 2)), ValueError, "color"),
        (lambda: motion.detect_motion(np.zeros((1, 12, 16), np.uint8), t_low=1, t_high=2), ValueError, "at least 2 frames"),
        (lambda: motion.detect_motion(np.zeros((2, 12, 16, 4), np.uint8), t_low=1, t_high=2), ValueError, "video must be"),
        (lambda: motion.detect_motion(np.zeros((2, 12, 16), np.uint8), t_low=1, t_high=2, grid=(20, 2)), ValueError, "grid"),
        (lambda: motion.MotionDetector(t_low=1, t_high=2, gamma=float("inf")), ValueError, "gamma"),
        # the edge detector's parameters, at construction (they failed only at the first frame)
        (lambda: motion.MotionDetector(t_low=float("nan"), t_high=2), ValueError, "t_low must be finite"),
        (lambda: motion.MotionDetector(t_low=1, t_high="2"), TypeError, "t_high must be a real number"),
        (lambda: motion.MotionDetector(t_low=1, t_high=2, alpha=-1), ValueError, "alpha must be in"),
        (lambda: motion.MotionDetector(t_low=1, t_high=2, ksize=4), ValueError, "ksize must be odd"),
        (lambda: motion.MotionDetector(t_low=1, t_high=2, sigma=-1.0), ValueError, "sigma must be >= 0"),
        (lambda: motion.MotionDetector(t_low=1, t_high=2, beta=-3), ValueError, "beta"),
        (lambda: motion.MotionDetector(t_low=1, t_high=2, variant="x"), ValueError, "variant"),
        (lambda: motion.MotionDetector(t_low=1, t_high=2).update(np.zeros((2, 12, 16), np.uint8)), ValueError, "frame must be"),
        (lambda: portcv.data.moving_shapes(0, 10, 10), ValueError, "frames"),
        (lambda: portcv.data.moving_shapes(2, 10, 10, noise=float("nan")), ValueError, "noise"),
        (lambda: portcv.data.moving_shapes(2.0, 10, 10), TypeError, "frames"),
    ],
)
def test_motion_rejects_bad_input(call, error, words):
    with pytest.raises(error, match=words):
        call()


def test_public_functions_follow_the_conventions():
    for name in motion.__all__:
        fn = getattr(motion, name)
        if not inspect.isfunction(fn):
            continue
        for p in inspect.signature(fn).parameters.values():
            if p.default is not inspect.Parameter.empty:
                assert p.kind is inspect.Parameter.KEYWORD_ONLY, f"motion.{name}: {p.name} must be keyword-only"
        doc = inspect.getdoc(fn)
        assert "Examples" in doc and "Parameters" in doc, name
    docs = (Path(__file__).resolve().parents[2] / "docs" / "motion.md").read_text()
    missing = [n for n in motion.__all__ + ["MotionDetector.update", "fps_statistics", "moving_shapes"] if n not in docs]
    assert not missing, missing


# ------------------------------------------------------------------------------ video files and the CLI
needs_pyav = pytest.mark.skipif(
    importlib.util.find_spec("av") is None or importlib.util.find_spec("imageio") is None,
    reason="video files need imageio and PyAV (pip install 'portcv[io]')",
)


@pytest.mark.slow
@needs_pyav
def test_video_round_trip_and_statistics(tmp_path):
    video = portcv.data.moving_shapes(20, 48, 64, seed=5)
    path = tmp_path / "clip.mp4"
    assert portcv.video.write_video(path, video, fps=12) == 20
    back = portcv.video.read_video(path)
    assert back.shape == video.shape and back.dtype == np.uint8
    assert np.abs(back.astype(int) - video).mean() < 12  # lossy, but the same pictures
    assert portcv.video.video_fps(path) == 12
    assert len(list(portcv.video.iter_frames(path, frames=7))) == 7
    odd = tmp_path / "odd.mp4"  # odd sizes go through MPEG-4 (H.264 needs even ones)
    assert portcv.video.write_video(odd, video[:3, :47, :63]) == 3
    assert portcv.video.read_video(odd).shape == (3, 47, 63, 3)


@needs_pyav
def test_video_errors_are_value_errors(tmp_path):
    with pytest.raises(portcv.video.VideoError, match="no such file"):
        portcv.video.read_video(tmp_path / "missing.mp4")
    text = tmp_path / "notes.mp4"
    text.write_text("not a video")
    with pytest.raises(ValueError, match="cannot read video"):
        portcv.video.read_video(text)
    with pytest.raises(ValueError, match="uint8"):
        portcv.video.write_video(tmp_path / "x.mp4", [np.zeros((4, 4), np.float32)])


def test_fps_statistics_follow_table_vii():
    stats = portcv.video.fps_statistics([0.1, 0.05, 0.1, 0.08])
    rates = [10, 20, 10, 12.5]
    assert stats["average"] == pytest.approx(np.mean(rates)) and stats["median"] == pytest.approx(11.25)
    assert stats["min"] == 10 and stats["max"] == 20 and stats["std"] == pytest.approx(np.std(rates))
    assert stats["pairs"] == 4 and stats["throughput"] == pytest.approx(4 / 0.33)
    with pytest.raises(ValueError):
        portcv.video.fps_statistics([])


def test_run_motion_times_every_pair(backend):
    video = portcv.data.moving_shapes(6, 40, 56, seed=1)
    seen = []
    times = portcv.video.run_motion(video, backend=backend, detector=DETECTOR,
                                    on_result=lambda frame, result: seen.append(result))
    assert len(times) == 5 and all(t > 0 for t in times) and seen[0] is None
    expected = motion.detect_motion(video, **DETECTOR)
    for t, result in enumerate(seen[1:]):
        assert_same_bits(expected.regions[t], result.regions)


def _portcv(*args, cwd):
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    return subprocess.run([sys.executable, "-m", "portcv", "motion", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.slow
@needs_pyav
def test_cli_motion_on_a_generated_video_end_to_end(tmp_path):
    out = tmp_path / "annotated.mp4"
    run = _portcv("synthetic", "--frames", "20", "--size", "64x48", "--beta", "2", "--grid", "3x4",
                  "--out", str(out), "--no-progress", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "wrote" in run.stdout and "average" in run.stdout and "numpy" in run.stdout
    back = portcv.video.read_video(out)
    assert back.shape == (20, 48, 64, 3)
    # The annotated frames are the synthetic ones with red outlines drawn over some of them.
    video = portcv.data.moving_shapes(20, 48, 64, seed=0)
    diff = np.abs(back.astype(int) - video).mean(axis=-1)
    assert diff.mean() < 20


@pytest.mark.slow
@needs_pyav
def test_cli_motion_reads_a_video_file(tmp_path):
    clip = tmp_path / "clip.mp4"
    portcv.video.write_video(clip, portcv.data.moving_shapes(20, 48, 64, seed=3))
    run = _portcv(str(clip), "--frames", "10", "--beta", "2", "--grid", "3x4", "--backend", "numpy,numpy",
                  "--out", str(tmp_path / "out.mkv"), cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    table = [line for line in run.stdout.splitlines() if line.startswith("numpy")]
    # backend, device, decoder ("CPU (PyAV)": two words), pairs, then five statistics: 10 frames, 9 pairs
    assert len(table) == 2 and all("CPU (PyAV)" in line and line.split()[-6] == "9" for line in table)
    assert portcv.video.read_video(tmp_path / "out.mkv").shape == (10, 48, 64, 3)


@needs_pyav
@pytest.mark.parametrize("make", ["missing", "text", "backend", "frames"])
def test_cli_motion_errors_exit_2_without_traceback(tmp_path, make):
    args = {
        "missing": [str(tmp_path / "nope.mp4")],
        "text": [str(tmp_path / "notes.txt")],
        "backend": ["synthetic", "--backend", "no-such-backend"],
        "frames": ["synthetic", "--frames", "1"],
    }[make]
    (tmp_path / "notes.txt").write_text("hello")
    run = _portcv(*args, cwd=tmp_path)
    assert run.returncode == 2, run.stdout + run.stderr
    assert "error" in run.stderr and "Traceback" not in run.stderr


def test_detect_motion_refuses_one_colour_frame():
    """One RGB frame used to be read as a video of H frames of W x 3 ("grid must be in [1, 3]")."""
    frame = portcv.data.synthetic_rgb(48, 64)
    with pytest.raises(ValueError, match="video looks like one colour frame"):
        motion.detect_motion(frame, t_low=70, t_high=80)
    video = portcv.data.moving_shapes(3, 48, 64, seed=0)
    gray_narrow = np.ascontiguousarray(video[..., 0][:, :, :3])  # (3, 48, 3): 3 gray frames 3 wide
    out = motion.detect_motion(gray_narrow, t_low=70, t_high=80, grid=(1, 1), channel_axis=None)
    assert out.regions.shape == (2, 1, 1)
