"""The one colour rule, for every public image and video op of every domain (walked from each
package's ``__all__``, so a new name cannot be missed).

An op either handles channels (``channel_axis``, processed per channel, or a documented colour
operation such as a conversion, a drawing or a detector that converts to gray), or takes gray
frames and refuses an array whose last axis has 3 or 4 entries with the conversion hint
(``_validate.image(gray=True)``), unless ``channel_axis=None`` declares a batch of gray frames.
Ops whose input is not an image are listed, each with its reason, in :data:`NOT_IMAGES`.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

import numpy as np
import pytest

import portcv

from .helpers import assert_same_bits

#: The conversion hint every gray op gives for a colour input.
HINT = r"looks like a colour image .*portcv\.color\.rgb_to_gray"

RGB = portcv.data.synthetic_rgb(20, 24, seed=6)
GRAY = np.ascontiguousarray(RGB[..., 1])
VIDEO = portcv.data.moving_shapes(4, 12, 14, seed=1)  # (T, H, W, 3) RGB
FACES = portcv.data.synthetic_rgb(48, 56, seed=2)
K = np.array([[10.0, 0, 11.5], [0, 10.0, 9.5], [0, 0, 1]])
GEOMETRY = (K, K, np.eye(3), np.array([0.5, 0.0, 0.0]), (20, 24))

#: Public callables whose input is not an image or a video, and why.
NOT_IMAGES = {
    "color.threshold_two_peaks": "a histogram",
    "detect.Cascade": "cascade data (load_cascade makes it)",
    "detect.load_cascade": "a file name",
    "detect.group_rectangles": "rectangles",
    "detect.VideoDetections": "made by detect_video (walked)",
    "detect.MCTCascade": "cascade data",
    "detect.load_mct_cascade": "a file name",
    "detect.save_mct_cascade": "a cascade and a file name",
    "distance.cdist": "feature matrices", "distance.nearest": "feature matrices",
    "distance.sqeuclidean": "feature matrices", "distance.quantize_features": "float features",
    "draw.heatmap_colors": "a normalizer", "draw.glyph_atlas": "no input",
    "filters.gaussian_kernel": "a sigma", "filters.gaussian_taps_q8": "a kernel size",
    "motion.regions": "a density grid (counts per cell)", "motion.cell_bounds": "a shape",
    "motion.MotionResult": "a result record",
    "recognize.chi_square": "histograms", "recognize.nearest": "histograms",
    "stream.PacketHeader": "a packet header",
    "stream.encode_delta": "a frame shape and the delta coder's output",
    "stream.encode_end": "a frame index", "stream.parse_header": "bytes", "stream.StreamDecoder": "bytes",
    "stream.StreamClient": "a network address", "stream.synthetic_source": "sizes (it makes frames)",
    "stream.StreamServer": "a network server: its frames go through StreamEncoder (walked)",
    "video.iter_frames": "a file name", "video.read_video": "a file name",
    "video.fps_statistics": "timings", "video.video_fps": "a file name", "video.frame_table": "a file name",
    "video.VideoReader": "a file name",
    "volume.fft_error_bound": "a shape", "volume.quantize_kernel": "a kernel", "volume.gabor_kernel3d": "sizes",
    "data.*": "the data loaders make images from sizes and files",
    "distributed.halo": "an op name", "distributed.filter_store": "store paths",
    "distributed.local_cluster": "cluster options",
    "distributed.PortcvWorker": "a worker plugin", "distributed.worker_backend": "no input",
    "distributed.map_videos": "file names", "distributed.process_video": "a file name",
    "distributed.motion": "a spec's parameters", "distributed.faces": "a spec's parameters",
    "distributed.MotionSpec": "a spec", "distributed.FacesSpec": "a spec", "distributed.VideoRun": "a result record",
    "distributed.frame_table": "a file name", "distributed.segment_bounds": "a file name",
}


# --------------------------------------------------------------------------------------------
# The checks
# --------------------------------------------------------------------------------------------
def refused(call: Callable, colour: np.ndarray, *, batches: bool = True) -> None:
    """A gray op: colour refused with the hint; with ``batches``, ``channel_axis=None`` declares the
    same array a batch of gray frames (each the op's result on its own)."""
    with pytest.raises(ValueError, match=HINT):
        call(colour)
    if batches:
        whole = call(colour, channel_axis=None)
        first = call(colour[0], channel_axis=None)
        for w, f in zip(*(o if isinstance(o, tuple) else (o,) for o in (whole, first)), strict=True):
            assert_same_bits(f, portcv.to_numpy(w)[0])


def per_channel(call: Callable, colour: np.ndarray = RGB, pick: Callable = lambda out, c: out[..., c]) -> None:
    """A channel op: channel ``c`` of the colour result (``pick``) is the result on channel ``c``."""
    whole = call(colour)
    for c in range(colour.shape[-1]):
        alone = call(np.ascontiguousarray(colour[..., c]))
        if isinstance(whole, (tuple, list)):
            for w, a in zip(whole, alone, strict=True):
                assert_same_bits(a, pick(portcv.to_numpy(w), c))
        else:
            assert_same_bits(alone, pick(portcv.to_numpy(whole), c))


def _equal(a: Any, b: Any) -> None:
    if isinstance(a, (tuple, list)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _equal(x, y)
    else:
        assert_same_bits(a, b)


def as_gray(call: Callable, colour: np.ndarray) -> None:
    """A colour op that converts to gray first (detectors): the result on the gray frames."""
    _equal(call(colour), call(portcv.color.rgb_to_gray(colour)))


def _yuv420(to_rgb: Callable, to_bgr: Callable) -> None:
    """A YUV 4:2:0 frame (luma rows, then chroma) in, colour out: the BGR result is the RGB one
    reversed, and neutral chroma (U = V = 128) gives gray pixels (R = G = B)."""
    yuv = np.concatenate([GRAY, np.full((GRAY.shape[0] // 2, GRAY.shape[1]), 128, np.uint8)])
    rgb = portcv.to_numpy(to_rgb(yuv))
    assert_same_bits(rgb[..., ::-1], to_bgr(yuv))
    assert rgb.shape == GRAY.shape + (3,) and (rgb == rgb[..., :1]).all()


def _round_trip_codec() -> None:
    later = RGB ^ np.uint8(16)
    count, diffs, positions, _ = portcv.codec.delta_encode(later, RGB, threshold=0)
    assert_same_bits(later, portcv.codec.delta_decode(RGB, diffs, positions, count))


def _round_trip_encoder() -> None:
    enc = portcv.codec.DeltaEncoder(threshold=0)
    enc.keyframe(RGB)
    count, diffs, positions = enc.encode(RGB ^ np.uint8(16))
    assert_same_bits(RGB ^ np.uint8(16), portcv.codec.delta_decode(RGB, diffs, positions, count))


def _round_trip_stream() -> None:
    enc, dec = portcv.stream.StreamEncoder(threshold=0), portcv.stream.StreamDecoder()
    for frame in (RGB, RGB ^ np.uint8(16)):
        assert_same_bits(frame, dec.decode(enc.encode(frame))[1])
    assert_same_bits(RGB, dec.decode(portcv.stream.encode_keyframe(RGB, 7))[1])


def _heatmap() -> None:
    """RGB frames in, an RGB map out; equal frames are the map's zero colour everywhere."""
    out = portcv.to_numpy(portcv.draw.heatmap(RGB, RGB))
    assert_same_bits(np.broadcast_to(portcv.draw.heatmap_colors()[0], RGB.shape), out)
    with pytest.raises(ValueError, match="previous must have at least 3 dimensions"):
        portcv.draw.heatmap(GRAY, GRAY)


def _mask_overlay() -> None:
    mask = np.random.default_rng(1).integers(0, 256, (5, 6, 3), dtype=np.uint8)
    whole = portcv.to_numpy(portcv.draw.mask_overlay(RGB, mask, [(2, 3, 9, 7)], interpolation="nearest"))
    for c in range(3):
        alone = portcv.draw.mask_overlay(np.ascontiguousarray(RGB[..., c]), np.ascontiguousarray(mask[..., c]),
                                         [(2, 3, 9, 7)], interpolation="nearest")
        assert_same_bits(alone, whole[..., c])


def _drawn_per_channel(draw: Callable) -> None:
    """A drawing in colour (r, g, b): channel c is the drawing in c's value on that channel."""
    colours = (10, 200, 77)
    whole = portcv.to_numpy(draw(RGB, colours))
    for c in range(3):
        assert_same_bits(draw(np.ascontiguousarray(RGB[..., c]), colours[c]), whole[..., c])


def _propagate_color() -> None:
    depth = (40 + GRAY // 8).astype(np.uint16)
    refused(lambda x: portcv.depth.propagate_color(x, RGB, *GEOMETRY), RGB.astype(np.uint16), batches=False)
    per_channel(lambda x: portcv.depth.propagate_color(depth, x, *GEOMETRY)[1])


def _warp_disparity() -> None:
    refused(lambda x: portcv.depth.warp_disparity(x), RGB, batches=False)
    per_channel(lambda x: portcv.depth.warp_disparity(GRAY // 16, color=x)[1])


def _dcbf() -> None:
    depth = (40 + GRAY // 8).astype(np.uint16)
    refused(lambda x: portcv.depth.dcbf(x, RGB, ksize=3), RGB.astype(np.uint16), batches=False)
    # The colour guide steers the weights (one set for the whole pixel): the output is the depth map's.
    assert portcv.to_numpy(portcv.depth.dcbf(depth, RGB, ksize=3)).shape == depth.shape


def _cascade() -> None:
    det = portcv.detect.CascadeDetector(portcv.detect.load_cascade("haarcascade_frontalface_default.xml").truncated(2))
    as_gray(lambda x: det.detect(x, min_neighbors=0, scale_factor=1.3), FACES)


def _mct_detector() -> None:
    det = portcv.detect.MCTDetector.default()
    as_gray(lambda x: det.detect(x, min_neighbors=0, scale_factor=1.3), FACES)
    refused(lambda x: det.candidates(x, scale_factor=1.3), FACES, batches=False)


def _detect_video() -> None:
    det = portcv.detect.MCTDetector.default()
    frames = np.stack([FACES, FACES[::-1]])
    as_gray(lambda x: [r[1:] for r in portcv.detect.detect_video(det, x, min_neighbors=0, scale_factor=1.3)], frames)


def _train_mct() -> None:
    faces = np.stack([FACES[:24, :24], FACES[10:34, 5:29]])
    refused(lambda x: portcv.detect.train_mct_cascade(x, [GRAY]), faces, batches=False)
    refused(lambda x: portcv.detect.train_mct_cascade(faces[..., 0], [x]), FACES, batches=False)


def _motion_detector() -> None:
    def run(video: np.ndarray) -> list:
        det = portcv.motion.MotionDetector(t_low=20, t_high=40, grid=(2, 2))
        return [det.edges(video[0])] + [tuple(det.update(f) or ()) for f in video]

    as_gray(run, VIDEO)


def _run_motion() -> None:
    def run(video: np.ndarray) -> list:
        results: list = []
        portcv.video.run_motion(list(video), backend="numpy", detector=dict(t_low=20, t_high=40, grid=(2, 2)),
                                on_result=lambda frame, result: results.append(result and tuple(result)),
                                warmup=False)
        return [r for r in results if r is not None]

    as_gray(run, VIDEO)


def _video_writer(tmp_path: Any) -> None:
    """Colour frames written and read back as colour frames of the same shape (lossy codec)."""
    pytest.importorskip("av", reason="video files need PyAV (the io extra)")
    path = tmp_path / "clip.mp4"
    portcv.video.write_video(path, VIDEO, fps=5)
    assert portcv.video.read_video(path).shape == VIDEO.shape
    with portcv.video.VideoWriter(tmp_path / "one.mp4", fps=5) as writer:
        writer.write(VIDEO[0])
    assert portcv.video.read_video(tmp_path / "one.mp4").shape == VIDEO[:1].shape


def _lbp_recognizer() -> None:
    rec = portcv.recognize.LBPFaceRecognizer(region_size=(6, 6), weights=None)
    faces = np.stack([RGB[:18, :18], RGB[2:, 6:]])
    refused(lambda x: rec.train(x, [0, 1]), faces, batches=False)


def _filter_image() -> None:
    da = pytest.importorskip("dask.array")
    per_channel(lambda x: portcv.distributed.filter_image(
        da.from_array(x, chunks=(10, 12) + x.shape[2:]), "filters.gaussian_blur", sigma=1.0).compute())
    refused(lambda x, **kw: portcv.distributed.filter_image(
        da.from_array(x, chunks=x.shape), "edges.detect", t_low=10, t_high=20, **kw).compute(), RGB,
            batches=False)


F = portcv.filters
T = portcv.transform
CHECKS: dict[str, Callable[..., None]] = {
    # codec and stream: frames are bytes of any layout, each byte coded on its own
    "codec.delta_encode": _round_trip_codec,
    "codec.delta_decode": _round_trip_codec,
    "codec.DeltaEncoder": _round_trip_encoder,
    "stream.encode_keyframe": _round_trip_stream,
    "stream.StreamEncoder": _round_trip_stream,
    # color
    "color.rgb_to_gray": lambda: assert_same_bits(
        portcv.color.rgb_to_gray(RGB),
        ((RGB.astype(np.int64) @ np.array([9798, 19235, 3735]) + 16384) >> 15).astype(np.uint8)),
    "color.gray_to_rgb": lambda: refused(portcv.color.gray_to_rgb, RGB),
    "color.rgb_to_bgr": lambda: assert_same_bits(portcv.color.rgb_to_bgr(RGB), RGB[..., ::-1]),
    "color.bgr_to_rgb": lambda: assert_same_bits(portcv.color.bgr_to_rgb(RGB), RGB[..., ::-1]),
    "color.histogram": lambda: per_channel(portcv.color.histogram, pick=lambda out, c: out[c]),
    "color.threshold_otsu": lambda: per_channel(portcv.color.threshold_otsu, pick=lambda out, c: out[c]),
    "color.binarize": lambda: per_channel(lambda x: portcv.color.binarize(x, 100)),
    "color.binarize_auto": lambda: as_gray(portcv.color.binarize_auto, RGB),  # the report's first step: gray
    # YUV 4:2:0 frames (decoder output) to colour
    "color.nv12_to_rgb": lambda: _yuv420(portcv.color.nv12_to_rgb, portcv.color.nv12_to_bgr),
    "color.nv12_to_bgr": lambda: _yuv420(portcv.color.nv12_to_rgb, portcv.color.nv12_to_bgr),
    "color.i420_to_rgb": lambda: _yuv420(portcv.color.i420_to_rgb, portcv.color.i420_to_bgr),
    "color.i420_to_bgr": lambda: _yuv420(portcv.color.i420_to_rgb, portcv.color.i420_to_bgr),
    # depth
    "depth.dcbf": _dcbf,
    "depth.propagate": lambda: refused(lambda x: portcv.depth.propagate(x, *GEOMETRY), RGB.astype(np.uint16),
                                       batches=False),
    "depth.propagate_color": _propagate_color,
    "depth.warp_disparity": _warp_disparity,
    # detect
    "detect.CascadeDetector": _cascade,
    "detect.MCTDetector": _mct_detector,
    "detect.detect_video": _detect_video,
    "detect.mct": lambda: refused(portcv.detect.mct, RGB),
    "detect.train_mct_cascade": _train_mct,
    # draw
    "draw.heatmap": _heatmap,
    "draw.noise_map": lambda: assert_same_bits(
        portcv.draw.noise_map(RGB, RGB ^ np.uint8(64), threshold=20)[..., 0],
        np.where((RGB ^ np.uint8(64)).any(-1), 255, 0).astype(np.uint8)),
    "draw.noise_map_from_positions": lambda: assert_same_bits(
        portcv.draw.noise_map_from_positions(np.zeros_like(RGB), np.array([3 * 25 + 2], np.int32), 1)[1, 1],
        np.array([255, 0, 0], np.uint8)),
    "draw.text_overlay": lambda: _drawn_per_channel(lambda x, colour: portcv.draw.text_overlay(x, "Hi", color=colour)),
    "draw.boxes": lambda: _drawn_per_channel(lambda x, colour: portcv.draw.boxes(x, [(2, 3, 9, 7)], color=colour)),
    "draw.mask_overlay": _mask_overlay,
    # edges
    "edges.gradient": lambda: refused(portcv.edges.gradient, RGB),
    "edges.magnitude": lambda: per_channel(lambda x: portcv.edges.magnitude(*F.gradients(x))),
    "edges.direction_sector": lambda: per_channel(lambda x: portcv.edges.direction_sector(*F.gradients(x))),
    "edges.detect": lambda: refused(lambda x, **kw: portcv.edges.detect(x, 20, 60, **kw), RGB),
    "edges.canny": lambda: assert_same_bits(  # OpenCV's colour Canny: equal channels give the gray edges
        portcv.edges.canny(GRAY, 40, 120), portcv.edges.canny(np.repeat(GRAY[..., None], 3, -1), 40, 120)),
    # filters
    "filters.sep_filter": lambda: per_channel(lambda x: F.sep_filter(x, (1, 2, 1), (1, 2, 1), 4)),
    "filters.gaussian_blur": lambda: per_channel(lambda x: F.gaussian_blur(x, sigma=1.0)),
    "filters.box_blur": lambda: per_channel(lambda x: F.box_blur(x, 3)),
    "filters.convolve2d": lambda: per_channel(lambda x: F.convolve2d(x, np.array([[0, -1, 2], [5, -9, 1]]), 2,
                                                                     dtype="int16")),
    "filters.mean_filter": lambda: per_channel(lambda x: F.mean_filter(x, 3)),
    "filters.sobel": lambda: per_channel(lambda x: F.sobel(x, 1, 0)),
    "filters.gradients": lambda: per_channel(F.gradients),
    "filters.median_filter": lambda: per_channel(lambda x: F.median_filter(x, 3)),
    "filters.joint_bilateral": lambda: per_channel(lambda x: F.joint_bilateral(GRAY, x, 5, 20.0, 3.0)),
    # motion
    "motion.difference": lambda: refused(lambda x, **kw: portcv.motion.difference(x, x, **kw), RGB),
    "motion.density": lambda: refused(lambda x, **kw: portcv.motion.density(x, grid=(2, 2), **kw), RGB),
    "motion.area_image": lambda: per_channel(lambda x: portcv.motion.area_image(x, np.eye(6, 10, dtype=bool))),
    "motion.draw_regions": lambda: _drawn_per_channel(
        lambda x, colour: portcv.motion.draw_regions(x, np.eye(6, 10, dtype=bool), color=colour)),
    "motion.MotionDetector": _motion_detector,
    "motion.detect_motion": lambda: as_gray(
        lambda v: tuple(portcv.motion.detect_motion(v, t_low=20, t_high=40, grid=(2, 2), channel_axis=None
                                                    if v.ndim == 3 else "auto")), VIDEO),
    # recognize
    "recognize.LBPFaceRecognizer": _lbp_recognizer,
    "recognize.lbp_histograms": lambda: refused(lambda x, **kw: portcv.recognize.lbp_histograms(
        x, region_size=(6, 6), **kw), RGB, batches=False),
    "recognize.local_binary_pattern": lambda: refused(lambda x, **kw: portcv.recognize.local_binary_pattern(
        x, 8, 1.0, **kw), RGB, batches=False),
    # transform
    "transform.integral": lambda: per_channel(T.integral),
    "transform.resize": lambda: per_channel(lambda x: T.resize(x, size=(17, 13))),
    "transform.pyramid": lambda: per_channel(lambda x: T.pyramid(x, min_size=(8, 8))),
    "transform.pack_pyramid": lambda: per_channel(lambda x: T.pack_pyramid(T.pyramid(x, min_size=(8, 8))),
                                                  pick=lambda out, c: out[..., c] if out.dtype == np.uint8 else out),
    "transform.spline_filter": lambda: per_channel(T.spline_filter),
    "transform.zoom": lambda: per_channel(lambda x: T.zoom(x, 1.5)),
    # video
    "video.VideoWriter": _video_writer,
    "video.write_video": _video_writer,
    "video.run_motion": _run_motion,
    # volume
    "volume.convolve3d": lambda: refused(lambda x, **kw: portcv.volume.convolve3d(x, np.ones((3, 3, 3), np.int32),
                                                                                 **kw), VIDEO),
    "volume.Convolver3D": lambda: refused(lambda x: portcv.volume.Convolver3D(np.ones((3, 3, 3), np.int32),
                                                                              (12, 14)).push(x), VIDEO[0],
                                          batches=False),
    # distributed (tile by tile: the tiled op's own rule)
    "distributed.filter_image": _filter_image,
}



def _public_callables() -> list[str]:
    names = []
    modules = [getattr(portcv, d) for d in portcv.DOMAINS]
    for mod in modules:
        domain = mod.__name__.split(".")[1]
        for name in getattr(mod, "__all__", []):
            obj = getattr(mod, name)
            if inspect.isclass(obj) and issubclass(obj, BaseException):
                continue  # errors and warnings take no image
            if callable(obj):
                names.append(f"{domain}.{name}")
    return names


PUBLIC = _public_callables()


def test_every_public_callable_is_walked_or_listed():
    """Each public callable has a colour check or a reason in NOT_IMAGES, and nothing else is listed."""
    listed = set(CHECKS) | {n for n in NOT_IMAGES if not n.endswith(".*")}
    wildcard = {n[:-2] for n in NOT_IMAGES if n.endswith(".*")}
    missing = [n for n in PUBLIC if n not in listed and n.split(".")[0] not in wildcard]
    assert not missing, f"public callables with no colour check and no reason: {missing}"
    stale = sorted(listed - set(PUBLIC))
    assert not stale, f"listed but not public: {stale}"
    assert len(NOT_IMAGES) < len(CHECKS)


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_colour_input_is_processed_per_channel_or_refused_with_the_hint(name: str, tmp_path: Any) -> None:
    check = CHECKS[name]
    with portcv.using("numpy"):
        if "tmp_path" in inspect.signature(check).parameters:
            check(tmp_path)
        else:
            check()


#: The gray ops' refusals, on every backend (they happen before any compilation).
GRAY_OPS = {
    "detect.mct": (portcv.detect.mct, RGB),
    "edges.detect": (lambda x: portcv.edges.detect(x, 20, 60), RGB),
    "motion.difference": (lambda x: portcv.motion.difference(x, x), RGB),
    "motion.density": (portcv.motion.density, RGB),
    "volume.convolve3d": (lambda x: portcv.volume.convolve3d(x, np.ones((3, 3, 3), np.int32)), VIDEO),
    "depth.propagate": (lambda x: portcv.depth.propagate(x, *GEOMETRY), RGB.astype(np.uint16)),
}


@pytest.mark.parametrize("name", sorted(GRAY_OPS))
def test_gray_ops_refuse_colour_on_every_backend(backend: str, name: str) -> None:
    call, colour = GRAY_OPS[name]
    with portcv.using(backend), pytest.raises(ValueError, match=HINT):
        call(portcv.asarray(colour) if backend != "numpy:readonly" else colour)
