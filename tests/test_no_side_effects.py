"""No public function modifies an input or returns an alias of a writeable input.

The read-only test backend (``numpy:readonly``) catches in-place writes in portable code, but not
a public function that writes into (or hands back) the caller's own NumPy array on the plain
NumPy backend, where arrays are writeable: this runs every public function that takes arrays on
writeable NumPy inputs and checks their checksums and ``np.shares_memory`` with every output.
"""

from __future__ import annotations

import inspect
import zlib

import numpy as np
import pytest

import portcv

RGB = portcv.data.synthetic_rgb(40, 52, seed=1)
GRAY = np.ascontiguousarray(RGB[..., 1])
YUV420 = np.ascontiguousarray(GRAY[:39])
LBP_HIST = np.random.default_rng(3).integers(0, 20, (4, 3, 3, 59)).astype(np.uint16)
GRAY2 = np.roll(GRAY, 3, axis=1)
VIDEO = portcv.data.moving_shapes(3, 40, 52, seed=2)
GX = (GRAY.astype(np.int16) - 128) * 3
GY = (GRAY2.astype(np.int16) - 128) * 5
EDGES = np.where(GRAY > 128, 255, 0).astype(np.uint8)
EDGES2 = np.roll(EDGES, 2, axis=0)
REGIONS = np.zeros((3, 4), bool)
REGIONS[1, 2] = True
HIST = np.bincount(GRAY.ravel(), minlength=256).astype(np.int32)
POSITIONS = np.array([3, 40, 41, 500], np.int32)
RECTS = np.array([[5, 5, 10, 10], [6, 5, 10, 10], [30, 20, 8, 8]], np.int32)
MASK = np.full((6, 6, 3), 255, np.uint8)
FEATURES = GRAY[:6, :16].copy()
K_CAM = np.array([[50.0, 0, 26], [0, 50.0, 20], [0, 0, 1]])


def _diffs():
    count, diffs, positions, _ = portcv.codec.delta_encode(GRAY2, GRAY)
    return count, diffs, positions


#: name -> (callable taking the inputs, the inputs). Every public function that takes arrays.
CALLS = {
    "codec.delta_encode": (lambda f, r: portcv.codec.delta_encode(f, r), (GRAY2, GRAY)),
    "codec.delta_decode": (lambda r, d, p: portcv.codec.delta_decode(r, d, p, int(np.count_nonzero(d))),
                           (GRAY, np.array([5, -5, 0, 0], np.int8), np.array([1, 9, 0, 0], np.int32))),
    "color.rgb_to_gray": (portcv.color.rgb_to_gray, (RGB,)),
    "color.gray_to_rgb": (portcv.color.gray_to_rgb, (GRAY,)),
    "color.rgb_to_bgr": (portcv.color.rgb_to_bgr, (RGB,)),
    "color.bgr_to_rgb": (portcv.color.bgr_to_rgb, (RGB,)),
    "color.histogram": (portcv.color.histogram, (RGB,)),
    # decoder layout: 26 rows of luma over 13 of chroma (26 x 52 frames)
    "color.nv12_to_rgb": (portcv.color.nv12_to_rgb, (YUV420,)),
    "color.nv12_to_bgr": (portcv.color.nv12_to_bgr, (YUV420,)),
    "color.i420_to_rgb": (portcv.color.i420_to_rgb, (YUV420,)),
    "color.i420_to_bgr": (portcv.color.i420_to_bgr, (YUV420,)),
    "color.threshold_two_peaks": (portcv.color.threshold_two_peaks, (HIST,)),
    "color.threshold_otsu": (portcv.color.threshold_otsu, (GRAY,)),
    "color.binarize": (lambda i: portcv.color.binarize(i, 100), (GRAY,)),
    "color.binarize_auto": (portcv.color.binarize_auto, (GRAY,)),
    "detect.group_rectangles": (lambda r: portcv.detect.group_rectangles(r, 1), (RECTS,)),
    "detect.mct": (portcv.detect.mct, (GRAY,)),
    "detect.train_mct_cascade": (lambda f, n: portcv.detect.train_mct_cascade(
        f, [n], stage_positions=(2,), negatives_per_stage=50, max_rounds=2),
        (np.stack([np.roll(GRAY[:24, :24], k, axis=1) for k in range(8)]), GRAY)),
    "data.face_box": (portcv.data.face_box, (np.array([10, 20, 30, 20]),)),
    "distance.sqeuclidean": (portcv.distance.sqeuclidean, (FEATURES, FEATURES[::-1].copy())),
    "distance.cdist": (lambda f, d: portcv.distance.cdist(f, d, "sqeuclidean"), (FEATURES, FEATURES[::-1].copy())),
    "distance.nearest": (lambda f, d: portcv.distance.nearest(f, d, k=2), (FEATURES, FEATURES[::-1].copy())),
    "distance.quantize_features": (lambda x: portcv.distance.quantize_features(x, 0.5), (FEATURES.astype(np.float32),)),
    "depth.dcbf": (lambda d, c: portcv.depth.dcbf(d, c, 5), (np.where(GRAY > 100, GRAY, 0).astype(np.uint8), RGB)),
    "depth.propagate": (lambda d: portcv.depth.propagate(d, K_CAM, K_CAM, np.eye(3), [-2.0, 0, 0], (40, 52)),
                        (np.maximum(GRAY, 1),)),
    "depth.propagate_color": (lambda d, c: portcv.depth.propagate_color(d, c, K_CAM, K_CAM, np.eye(3), [-2.0, 0, 0],
                                                                        (40, 52)), (np.maximum(GRAY, 1), RGB)),
    "depth.warp_disparity": (lambda d, c: portcv.depth.warp_disparity(d, color=c), (GRAY, RGB)),
    "draw.heatmap": (portcv.draw.heatmap, (RGB, np.roll(RGB, 1, axis=0))),
    "draw.noise_map": (portcv.draw.noise_map, (RGB, np.roll(RGB, 1, axis=0))),
    "draw.noise_map_from_positions": (lambda i, p: portcv.draw.noise_map_from_positions(i, p, 4), (RGB, POSITIONS)),
    "draw.text_overlay": (lambda i: portcv.draw.text_overlay(i, "portcv", origin=(2, 3)), (RGB,)),
    "draw.boxes": (portcv.draw.boxes, (RGB, RECTS)),
    "draw.mask_overlay": (lambda i, m, b: portcv.draw.mask_overlay(i, m, b, alpha=128), (RGB, MASK, RECTS[:1])),
    "edges.gradient": (portcv.edges.gradient, (GRAY,)),
    "edges.magnitude": (portcv.edges.magnitude, (GX, GY)),
    "edges.direction_sector": (portcv.edges.direction_sector, (GX, GY)),
    "edges.detect": (lambda i: portcv.edges.detect(i, 40, 80), (GRAY,)),
    "edges.canny": (lambda i: portcv.edges.canny(i, 40, 80), (RGB,)),
    "filters.sep_filter": (lambda i: portcv.filters.sep_filter(i, [1, 2, 1], [1, 2, 1], 4), (RGB,)),
    "filters.gaussian_blur": (lambda i: portcv.filters.gaussian_blur(i, sigma=1.0), (RGB,)),
    "filters.box_blur": (lambda i: portcv.filters.box_blur(i, 3), (RGB,)),
    "filters.convolve2d": (lambda i, k: portcv.filters.convolve2d(i, k, 4), (RGB, np.array([[1, 2, 1], [2, 4, 2], [1, 2, 1]]))),
    "filters.mean_filter": (lambda i: portcv.filters.mean_filter(i, 3), (GRAY,)),
    "filters.sobel": (lambda i: portcv.filters.sobel(i, 1, 0), (RGB,)),
    "filters.gradients": (portcv.filters.gradients, (RGB,)),
    "filters.median_filter": (lambda i: portcv.filters.median_filter(i, 3), (RGB,)),
    "filters.joint_bilateral": (lambda j, s: portcv.filters.joint_bilateral(j, s, 5, 20.0, 2.0), (RGB, GRAY)),
    "motion.difference": (portcv.motion.difference, (EDGES, EDGES2)),
    "motion.density": (lambda d: portcv.motion.density(d, grid=(3, 4)), (EDGES,)),
    "motion.regions": (lambda c: portcv.motion.regions(c, shape=(40, 52)), (np.arange(12, dtype=np.int32).reshape(3, 4),)),
    "motion.area_image": (portcv.motion.area_image, (RGB, REGIONS)),
    "motion.draw_regions": (portcv.motion.draw_regions, (RGB, REGIONS)),
    "motion.detect_motion": (lambda v: portcv.motion.detect_motion(v, t_low=70, t_high=80, grid=(2, 2)), (VIDEO,)),
    "recognize.local_binary_pattern": (lambda i: portcv.recognize.local_binary_pattern(i, 8, 1.5, method="u2"), (GRAY,)),
    "recognize.lbp_histograms": (lambda i: portcv.recognize.lbp_histograms(i, region_size=(9, 9)), (GRAY,)),
    "recognize.chi_square": (lambda q, g: portcv.recognize.chi_square(q, g), (LBP_HIST[:2], LBP_HIST)),
    "recognize.nearest": (lambda q, g: portcv.recognize.nearest(q, g, k=2), (LBP_HIST[:2], LBP_HIST)),
    "stream.encode_keyframe": (lambda f: portcv.stream.encode_keyframe(f, 0), (RGB,)),
    "stream.encode_delta": (lambda d, p: portcv.stream.encode_delta(GRAY.shape, 1, 2, d, p),
                            (np.array([5, -5], np.int8), np.array([1, 9], np.int32))),
    "transform.integral": (portcv.transform.integral, (RGB,)),
    "transform.resize": (lambda i: portcv.transform.resize(i, scale=0.5), (RGB,)),
    "transform.pyramid": (lambda i: portcv.transform.pyramid(i, scale=1.5), (GRAY,)),
    "transform.spline_filter": (portcv.transform.spline_filter, (RGB,)),
    "transform.zoom": (lambda i: portcv.transform.zoom(i, 1.5), (RGB,)),
    "transform.pack_pyramid": (lambda i: portcv.transform.pack_pyramid(portcv.transform.pyramid(i, scale=1.5)), (GRAY,)),
    "volume.convolve3d": (lambda v, k: portcv.volume.convolve3d(v, k, time_mode="same"), (VIDEO[..., 0], np.ones((3, 3, 3), int))),
    "volume.quantize_kernel": (portcv.volume.quantize_kernel, (np.full((3, 3, 3), 1 / 27),)),
}
#: Public functions that take no arrays (files, sizes, tables, scalars) or are iterators/classes.
NO_ARRAY_INPUT = {
    "data.synthetic_rgb", "data.moving_shapes", "detect.load_cascade", "detect.detect_video", "draw.heatmap_colors",
    "data.fetch_pyvision", "data.csu_scrapshots", "data.csu_faces", "data.nonface_images", "data.lfw_subset", "data.skimage_negatives",
    "data.face_scenes", "detect.load_mct_cascade", "detect.save_mct_cascade",
    "filters.gaussian_taps_q8", "filters.gaussian_kernel", "motion.cell_bounds",
    "stream.encode_end", "stream.parse_header", "stream.synthetic_source", "video.iter_frames", "video.read_video",
    "video.write_video", "video.video_fps", "video.frame_table", "video.fps_statistics", "video.run_motion", "volume.fft_error_bound",
    "volume.gabor_kernel3d",
    # distributed takes no NumPy arrays: dask arrays (filter_image refuses NumPy), stores, files, specs, clusters
    "distributed.halo", "distributed.filter_image", "distributed.filter_store", "distributed.local_cluster",
    "distributed.worker_backend", "distributed.map_videos", "distributed.process_video", "distributed.motion",
    "distributed.faces", "distributed.frame_table", "distributed.segment_bounds",
}


def _outputs(result):
    if isinstance(result, np.ndarray):
        yield result
    elif isinstance(result, (tuple, list)) or hasattr(result, "_fields"):
        for item in result:
            yield from _outputs(item)


def test_the_table_covers_every_public_function():
    public = {f"{d}.{n}" for d in portcv.DOMAINS for n in getattr(getattr(portcv, d), "__all__", [])
              if inspect.isfunction(vars(getattr(portcv, d)).get(n))}  # vars: lazy names (a dependency's) are no functions
    assert public == set(CALLS) | NO_ARRAY_INPUT, sorted(public ^ (set(CALLS) | NO_ARRAY_INPUT))


@pytest.mark.parametrize("name", sorted(CALLS))
def test_public_function_leaves_its_inputs_alone(name):
    fn, inputs = CALLS[name]
    inputs = tuple(np.array(a, copy=True) for a in inputs)  # writeable, owned by this test
    before = [zlib.crc32(a.tobytes()) for a in inputs]
    with portcv.using("numpy"):
        result = fn(*inputs)
    assert [zlib.crc32(a.tobytes()) for a in inputs] == before, f"{name} modified an input"
    for out in _outputs(result):
        for a in inputs:
            assert not np.shares_memory(out, a), f"{name} returned an alias of a writeable input"


@pytest.mark.parametrize("text, origin", [("", (0, 0)), ("x", (500, 500)), ("abc", (2, 3))])
def test_text_overlay_returns_a_new_array(text, origin):
    """It used to draw into the caller's array (and return the input itself for empty text or
    an off-frame box)."""
    image = np.array(RGB, copy=True)
    out = portcv.draw.text_overlay(image, text, origin=origin)
    assert out is not image and not np.shares_memory(out, image)
    np.testing.assert_array_equal(image, RGB)
