"""The bad-input sweep: every public callable of every domain and of ``portcv.distributed``.

Each callable (from its package's ``__all__``, so a new name cannot be missed) has one valid call
below; the sweep replaces one argument at a time by bad values of its kind (``tests/sweep.py``:
None, wrong types, ragged lists, 0-D/1-D/5-D, empty, NaN/inf, negative/zero/huge sizes, wrong
dtypes, corrupted files for loaders) and by valid re-spellings (non-contiguous, read-only and
Fortran-ordered views, NumPy scalars) and fails unless each bad value gets a ``ValueError`` or
``TypeError`` (or a named portcv error) naming the argument, or is a documented accept listed
with its reason, and each re-spelling returns the valid call's result. No input array may change.
Every case runs under a time limit and a memory cap.

``PORTCV_SWEEP_REPORT=FILE`` writes the counts per callable and backend as JSON lines.
"""

from __future__ import annotations

import functools
import inspect
import itertools
import json
import os
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

import portcv
from tests.sweep import Case, sweep

H, W = 24, 32
RGB = portcv.data.synthetic_rgb(H, W, seed=1)
GRAY = np.ascontiguousarray(RGB[..., 1])
GRAY2 = np.roll(GRAY, 3, axis=1)
NV12 = np.concatenate([GRAY, RGB[::2, :, 2]])  # a YUV 4:2:0 frame: H luma rows, H/2 chroma rows
VIDEO = np.ascontiguousarray(portcv.data.moving_shapes(4, H, W, seed=2)[..., 0])
EDGES = np.where(GRAY > 128, 255, 0).astype(np.uint8)
EDGES2 = np.roll(EDGES, 2, axis=0)
GX = (GRAY.astype(np.int16) - 128) * 3
GY = (GRAY2.astype(np.int16) - 128) * 5
HIST = np.bincount(GRAY.ravel(), minlength=256).astype(np.int32)
RECTS = np.array([[5, 5, 10, 10], [6, 5, 10, 10], [20, 10, 8, 8]], np.int32)
REGIONS = np.zeros((3, 4), bool)
REGIONS[1, 2] = True
DENSITY = np.arange(12, dtype=np.int32).reshape(3, 4)
MASK = np.full((6, 6, 3), 255, np.uint8)
FEATURES = np.ascontiguousarray(GRAY[:6, :16])
GALLERY = np.ascontiguousarray(GRAY2[:5, :16])
LBP_HIST = np.random.default_rng(3).integers(0, 20, (4, 59)).astype(np.uint16)
K_CAM = np.array([[50.0, 0, 16], [0, 50.0, 12], [0, 0, 1]])
DEPTH = np.maximum(GRAY, 1)
KERNEL3 = np.ones((3, 3, 3), np.int32)
SHIFT_T = np.array([-2.0, 0.0, 0.0])


def _close(obj):
    close = getattr(obj, "close", None)
    if callable(close):
        close()


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Real files the loaders and video readers take: a short video, saved cascades and recognizers."""
    folder = tmp_path_factory.mktemp("sweep-files")
    out = {"folder": folder}
    if _has("av"):
        clip = folder / "clip.mp4"
        portcv.video.write_video(clip, portcv.data.moving_shapes(6, 32, 48, seed=1), fps=10)
        out["video"] = clip
    (folder / "bad.xml").write_text("<opencv_storage><cascade>")
    mct = folder / "cascade.npz"
    portcv.detect.save_mct_cascade(portcv.detect.load_mct_cascade("mct_frontalface_24.npz"), mct)
    out["mct"] = mct
    if _has("zarr"):
        import zarr

        src = zarr.create_array(str(folder / "src.zarr"), shape=(H, W), chunks=(16, 16), dtype="uint8")
        src[:] = GRAY
        out["zarr"] = folder / "src.zarr"
    return out


#: What ``files`` holds, for collecting the case names (nothing is read then).
PLACEHOLDER_FILES = {k: Path("/nonexistent") / k for k in ("folder", "video", "mct", "zarr")}


def _has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def cases(files: dict) -> dict[str, Case]:
    """name -> the valid call. Built lazily (some need files and loaded cascades)."""
    P = portcv
    c: dict[str, Case] = {}
    # ---- color
    c["color.rgb_to_gray"] = Case(P.color.rgb_to_gray, {"image": RGB, "method": "weighted"}, batch=("image",))
    c["color.gray_to_rgb"] = Case(P.color.gray_to_rgb, {"image": GRAY}, batch=("image",))
    c["color.rgb_to_bgr"] = Case(P.color.rgb_to_bgr, {"image": RGB}, batch=("image",))
    c["color.bgr_to_rgb"] = Case(P.color.bgr_to_rgb, {"image": RGB}, batch=("image",))
    for name in ("nv12_to_rgb", "nv12_to_bgr"):
        c[f"color.{name}"] = Case(getattr(P.color, name), {"nv12": NV12, "chroma_order": "uv"}, batch=("nv12",))
    for name in ("i420_to_rgb", "i420_to_bgr"):
        c[f"color.{name}"] = Case(getattr(P.color, name), {"yuv": NV12, "chroma_order": "uv"}, batch=("yuv",))
    c["color.histogram"] = Case(P.color.histogram, {"image": GRAY, "bins": 64}, batch=("image",))
    c["color.threshold_two_peaks"] = Case(P.color.threshold_two_peaks, {"hist": HIST, "rule": "two_largest"},
                                          batch=("hist",))
    c["color.threshold_otsu"] = Case(P.color.threshold_otsu, {"image": GRAY}, batch=("image",))
    c["color.binarize"] = Case(P.color.binarize, {"image": GRAY, "threshold": 100}, batch=("image",),
                               accept={("threshold", "zero"): "every pixel above 0 is set: a valid threshold"})
    c["color.binarize_auto"] = Case(P.color.binarize_auto, {"image": GRAY, "method": "two_peaks"}, batch=("image",))
    # ---- filters
    taps = [("None", None, "error"), ("str", "121", "error"), ("empty", (), "error"), ("float", (1, 2.5, 1), "error"),
            ("ragged", [[1, 2], [1]], "error"), ("bool", (True, 2, 1), "error"), ("too-many", (1,) * 64, "error"),
            ("complex", (1, 2j, 1), "error"), ("list", [1, 2, 1], "same"), ("numpy", np.array([1, 2, 1]), "same")]
    c["filters.sep_filter"] = Case(P.filters.sep_filter, {"image": GRAY, "kx": (1, 2, 1), "ky": (1, 2, 1), "shift": 4,
                                                          "border": "reflect101"}, batch=("image",),
                                   skip=("kx", "ky"), extra={"kx": taps, "ky": taps},
                                   accept={("shift", "zero"): "no rounding shift: a valid fixed point"})
    c["filters.gaussian_blur"] = Case(P.filters.gaussian_blur, {"image": GRAY, "sigma": 1.2, "ksize": 5,
                                                                "border": "reflect101"}, batch=("image",),
                                      accept={("sigma", "zero"): "sigma 0: derived from ksize, as in OpenCV",
                                              ("ksize", "zero"): "ksize 0: derived from sigma, as in OpenCV"})
    c["filters.gaussian_taps_q8"] = Case(P.filters.gaussian_taps_q8, {"ksize": 5, "sigma": 1.2},
                                         accept={("sigma", "zero"): "sigma 0: derived from ksize, as in OpenCV",
                                                 ("sigma", "huge"): "a flat kernel: the limit of a wide Gaussian"})
    c["filters.box_blur"] = Case(P.filters.box_blur, {"image": GRAY, "ksize": 3, "border": "reflect101"},
                                 batch=("image",))
    c["filters.convolve2d"] = Case(P.filters.convolve2d, {"image": GRAY, "kernel": np.array([[1, 2, 1], [2, 4, 2],
                                                                                              [1, 2, 1]]),
                                                          "shift": 4}, batch=("image",),
                                   dtypes={"kernel": (np.int8, np.int32, np.uint8, np.uint16, np.int64)},
                                   accept={("shift", "zero"): "no rounding shift: a valid fixed point"})
    c["filters.mean_filter"] = Case(P.filters.mean_filter, {"image": GRAY, "ksize": 3, "rounding": "truncate",
                                                            "border": "constant", "border_value": 9},
                                    batch=("image",),
                                    accept={("border_value", "zero"): "a constant border of 0"})
    c["filters.gaussian_kernel"] = Case(P.filters.gaussian_kernel, {"sigma": 1.5, "ksize": 7, "rule": "opencv"},
                                        accept={("sigma", "huge"): "a flat kernel: the limit of a wide Gaussian"})
    c["filters.sobel"] = Case(P.filters.sobel, {"image": GRAY, "dx": 1, "dy": 1, "ksize": 3}, batch=("image",),
                              accept={("dx", "zero"): "the derivative in y only", ("dy", "zero"): "in x only"})
    c["filters.gradients"] = Case(P.filters.gradients, {"image": GRAY, "ksize": 3}, batch=("image",),
                                  accept={("ksize", "negative"): "ksize -1: Scharr, as in OpenCV"})
    c["filters.median_filter"] = Case(P.filters.median_filter, {"image": GRAY, "ksize": 3, "border": "replicate"},
                                      batch=("image",))
    c["filters.joint_bilateral"] = Case(P.filters.joint_bilateral, {"joint": RGB, "src": GRAY, "d": 5,
                                                                    "sigma_color": 20.0, "sigma_space": 2.0},
                                        accept={("d", "zero"): "d <= 0: the radius from sigma_space, as in OpenCV",
                                                ("d", "negative"): "d <= 0: the radius from sigma_space, as in OpenCV",
                                                ("sigma_color", "huge"): "every colour weighs alike (the exact limit)",
                                                ("sigma_space", "huge"): "every offset weighs alike (the exact limit)"})
    # ---- transform
    c["transform.integral"] = Case(P.transform.integral, {"image": GRAY, "squared": False, "dtype": "int32"},
                                   batch=("image",))
    c["transform.resize"] = Case(P.transform.resize, {"image": GRAY, "size": (16, 12),
                                                      "interpolation": "bilinear"}, batch=("image",))
    c["transform.pyramid"] = Case(P.transform.pyramid, {"image": GRAY, "scale": 1.5, "min_size": (8, 8)},
                                   batch=("image",))
    c["transform.pack_pyramid"] = Case(P.transform.pack_pyramid, {"levels": [GRAY, GRAY[:12, :16]], "gap": 1,
                                                                  "fill": 7},
                                       accept={("gap", "zero"): "levels touching", ("fill", "zero"): "black fill"})
    c["transform.spline_filter"] = Case(P.transform.spline_filter, {"image": GRAY, "order": 3}, batch=("image",),
                                        accept={("order", "zero"): "order 0 (nearest) is one of SPLINE_ORDERS"})
    c["transform.zoom"] = Case(P.transform.zoom, {"image": GRAY, "factor": 1.5, "order": 3, "prefilter": True},
                               batch=("image",), accept={("order", "zero"): "order 0 (nearest) is one of SPLINE_ORDERS"})
    # ---- edges
    c["edges.gradient"] = Case(P.edges.gradient, {"image": GRAY, "ksize": 3}, batch=("image",),
                               accept={("ksize", "negative"): "ksize -1: Scharr, as in OpenCV"})
    c["edges.magnitude"] = Case(P.edges.magnitude, {"gx": GX, "gy": GY, "kind": "l2"})
    c["edges.direction_sector"] = Case(P.edges.direction_sector, {"gx": GX, "gy": GY})
    thresholds = {("t_low", "zero"): "a threshold of 0: every gradient counts", ("t_high", "zero"): "a threshold of 0",
                 ("t_low", "huge"): "a threshold above every gradient: no edges", ("t_high", "huge"): "no edges",
                 ("t_low", "float"): "thresholds are real numbers", ("t_high", "float"): "thresholds are real numbers"}
    c["edges.detect"] = Case(P.edges.detect, {"image": GRAY, "t_low": 40.0, "t_high": 80.0, "alpha": 2},
                             batch=("image",), accept={**thresholds, ("alpha", "zero"): "no apron (0 to 16)"})
    c["edges.canny"] = Case(P.edges.canny, {"image": GRAY, "t_low": 40.0, "t_high": 80.0, "l2gradient": False},
                            batch=("image",), accept=thresholds)
    # ---- motion
    motion_thresholds = {("t_low", "zero"): "a threshold of 0", ("t_high", "zero"): "a threshold of 0",
                      ("t_low", "huge"): "no edges", ("t_high", "huge"): "no edges",
                      ("t_low", "float"): "thresholds are real numbers", ("t_high", "float"): "real thresholds"}
    c["motion.difference"] = Case(P.motion.difference, {"e1": EDGES, "e2": EDGES2, "beta": 12},
                                  accept={("beta", "zero"): "every edge change counts"})
    c["motion.density"] = Case(P.motion.density, {"d": EDGES, "grid": (3, 4)}, batch=("d",))
    c["motion.regions"] = Case(P.motion.regions, {"density": DENSITY, "shape": (H, W), "gamma": 0.01},
                                 batch=("density",),
                                 accept={("shape", "long"): "an (H, W, C) frame shape: the channels are not cells",
                                         ("gamma", "zero"): "any changed pixel marks its cell"})
    c["motion.area_image"] = Case(P.motion.area_image, {"image": RGB, "regions": REGIONS}, batch=("image",))
    c["motion.draw_regions"] = Case(P.motion.draw_regions, {"image": RGB, "regions": REGIONS, "thickness": 1},
                                      batch=("image",))
    c["motion.cell_bounds"] = Case(P.motion.cell_bounds, {"shape": (H, W), "grid": (3, 4)},
                                     accept={("shape", "long"): "an (H, W, C) frame shape: the channels are not cells"})
    c["motion.detect_motion"] = Case(P.motion.detect_motion, {"video": VIDEO, "t_low": 70, "t_high": 80,
                                                              "grid": (2, 2), "beta": 12},
                                      accept={**motion_thresholds, ("beta", "zero"): "every edge change counts"})
    c["motion.MotionDetector"] = Case(P.motion.MotionDetector, {"t_low": 70, "t_high": 80, "grid": (2, 2),
                                                                "gamma": 0.01},
                                      accept={**motion_thresholds, ("gamma", "zero"): "any changed pixel marks its cell",
                                              ("grid", "huge"): "checked against the frame when frames arrive"})
    c["motion.MotionDetector.update"] = Case(lambda frame: P.motion.MotionDetector(t_low=70, t_high=80).update(frame),
                                             {"frame": GRAY})
    # ---- codec
    c["codec.delta_encode"] = Case(P.codec.delta_encode, {"frame": GRAY2, "reference": GRAY, "threshold": 20,
                                                          "capacity": 64},
                                   accept={("threshold", "zero"): "every change is sent",
                                           ("capacity", "zero"): "nothing sent; count still counts the changes"})
    c["codec.delta_decode"] = Case(P.codec.delta_decode, {"reference": GRAY, "diffs": np.array([5, -5, 0, 0], np.int8),
                                                          "positions": np.array([1, 9, 0, 0], np.int32), "count": 2},
                                   accept={("count", "zero"): "no change: the reference itself",
                                           ("reference", "5-d"): "positions are flat: any reference shape"},
                                   names={"reference": ("positions",)})
    c["codec.DeltaEncoder"] = Case(P.codec.DeltaEncoder, {"threshold": 20, "capacity": 64},
                                   accept={("threshold", "zero"): "every change is sent",
                                           ("capacity", "zero"): "nothing sent; count still counts the changes",
                                           ("capacity", "huge"): "at most the frame's size is kept"})
    c["codec.DeltaEncoder.encode"] = Case(lambda frame: _encoder().encode(frame), {"frame": GRAY2})
    # ---- stream
    key = P.stream.encode_keyframe(GRAY, 0)
    c["stream.encode_keyframe"] = Case(P.stream.encode_keyframe, {"frame": GRAY, "index": 3, "encoding": "compact"},
                                       accept={("index", "zero"): "the first frame", ("index", "huge"): "indices are 64-bit in the header",
                                               ("frame", "1-d"): "a 1-D frame: any array of bytes streams"})
    c["stream.encode_delta"] = Case(P.stream.encode_delta, {"shape": (H, W), "index": 1, "count": 2,
                                                            "diffs": np.array([5, -5], np.int8),
                                                            "positions": np.array([1, 9], np.int32)},
                                    accept={("count", "zero"): "a frame with no change", ("index", "zero"): "frame 0",
                                            ("index", "huge"): "indices are 64-bit in the header",
                                            ("shape", "short"): "a 1-D frame's shape", ("shape", "long"): "an (H, W, C) frame",
                                            ("diffs", "huge"): "only diffs[:count] are sent"})
    c["stream.encode_end"] = Case(P.stream.encode_end, {"index": 5}, accept={("index", "zero"): "an empty stream", ("index", "huge"): "indices are 64-bit in the header"})
    c["stream.parse_header"] = Case(P.stream.parse_header, {"data": key, "max_frame_bytes": 4096},
                                    names={"data": ("header", "magic")},
                                    accept={("max_frame_bytes", "huge"): "a limit: any size up to it"},
                                    extra={"data": [("truncated", key[:10], "error"), ("garbage", b"\x00" * 64, "error")]})
    c["stream.StreamDecoder"] = Case(P.stream.StreamDecoder, {"max_frame_bytes": 4096},
                                     accept={("max_frame_bytes", "huge"): "a limit: any size up to it"})
    c["stream.StreamDecoder.decode"] = Case(lambda packet: P.stream.StreamDecoder().decode(packet), {"packet": key},
                                            names={"packet": ("header", "payload")}, extra={"packet": [("truncated", key[:-3], "error"),
                                                              ("flipped", key[:40] + bytes([key[40] ^ 1]) + key[41:],
                                                               "error")]})
    c["stream.StreamEncoder"] = Case(P.stream.StreamEncoder, {"threshold": 20, "encoding": "compact",
                                                              "keyframe_interval": 30},
                                     accept={("threshold", "zero"): "every change is sent",
                                             ("keyframe_interval", "huge"): "one keyframe, then deltas"})
    c["stream.StreamEncoder.encode"] = Case(lambda frame: P.stream.StreamEncoder().encode(frame), {"frame": GRAY},
                                            accept={("frame", "1-d"): "a 1-D frame: any array of bytes streams"})
    c["stream.StreamServer"] = Case(P.stream.StreamServer, {"source": [GRAY, GRAY2], "port": 0, "threshold": 20,
                                                            "fps": 30.0, "capture_queue": 4, "client_queue": 8},
                                    skip=("source",),  # nothing is bound before start()
                                    accept={("fps", "zero"): "fps 0: as fast as the source gives frames",
                                            ("fps", "huge"): "a pace no source reaches: as fast as it gives frames",
                                            ("threshold", "zero"): "every change is sent",
                                            ("capture_queue", "huge"): "a bound, not an allocation",
                                            ("client_queue", "huge"): "a bound, not an allocation"})
    c["stream.StreamClient"] = Case(P.stream.StreamClient, {"host": "127.0.0.1", "port": 9, "frames": 3,
                                                            "reconnect_timeout": 1.0, "keyframe_retry": 0.5},
                                    accept={("host", "bogus"): "resolved when run() connects",
                                                            ("host", "case"): "host names are case-blind",
                                                            ("frames", "huge"): "a long run",
                                                            ("reconnect_timeout", "huge"): "waits as long as asked",
                                                            ("keyframe_retry", "huge"): "asks once"})
    c["stream.synthetic_source"] = Case(lambda **kw: list(itertools.islice(P.stream.synthetic_source(**kw), 2)),
                                        {"height": H, "width": W, "frames": 2, "seed": 0, "noise": 4.0, "variants": 2},
                                        optional=("frames",),
                                        accept={("seed", "zero"): "seed 0", ("noise", "zero"): "no noise",
                                                ("frames", "zero"): "an empty source", ("frames", "huge"): "a long source",
                                                ("seed", "huge"): "any seed"})
    # ---- draw
    c["draw.heatmap"] = Case(P.draw.heatmap, {"previous": RGB, "current": np.roll(RGB, 1, axis=0), "normalizer": 765})
    c["draw.heatmap_colors"] = Case(P.draw.heatmap_colors, {"normalizer": 765})
    c["draw.noise_map"] = Case(P.draw.noise_map, {"previous": RGB, "current": np.roll(RGB, 1, axis=0),
                                                  "threshold": 20, "background": "black"},
                               accept={("threshold", "zero"): "every change is drawn"})
    c["draw.noise_map_from_positions"] = Case(P.draw.noise_map_from_positions,
                                              {"image": RGB, "positions": np.array([3, 40, 41, 500], np.int32),
                                               "count": 3},
                                              dtypes={"positions": (np.int8, np.uint8, np.int16, np.uint16, np.int64,
                                                                    np.uint64)},
                                              accept={("count", "zero"): "nothing to draw",
                                                      ("image", "5-d"): "positions are flat: any image shape"})
    c["draw.text_overlay"] = Case(P.draw.text_overlay, {"image": RGB, "text": "portcv", "origin": (2, 3), "scale": 1},
                                  batch=("image",),
                                  accept={("text", "empty"): "nothing drawn", ("text", "bogus"): "any text",
                                          ("text", "case"): "any text", ("origin", "zero"): "the top-left corner",
                                          ("origin", "negative"): "text partly off the frame is clipped, as in OpenCV",
                                          ("origin", "huge"): "text off the frame draws nothing, as in OpenCV"})
    c["draw.glyph_atlas"] = Case(P.draw.glyph_atlas, {})
    c["draw.boxes"] = Case(P.draw.boxes, {"image": RGB, "boxes": RECTS, "thickness": 2}, batch=("image",),
                           accept={("boxes", "empty"): "no boxes: the image itself"})
    c["draw.mask_overlay"] = Case(P.draw.mask_overlay, {"image": RGB, "mask": MASK, "boxes": RECTS[:1], "alpha": 128},
                                  batch=("image",), accept={("alpha", "zero"): "a transparent overlay",
                                                            ("boxes", "empty"): "no boxes: the image itself"})
    # ---- video (real files through PyAV)
    if "video" in files:
        clip = files["video"]
        c["video.iter_frames"] = Case(lambda path, frames: list(P.video.iter_frames(path, frames=frames)),
                                      {"path": clip, "frames": 3}, optional=("frames",),
                                      accept={("frames", "huge"): "at most that many: the whole clip"})
        c["video.read_video"] = Case(P.video.read_video, {"path": clip, "frames": 3},
                                     accept={("frames", "huge"): "at most that many: the whole clip"})
        c["video.VideoReader"] = Case(
            lambda path, start, stop, gray, device: list(P.video.VideoReader(path, start=start, stop=stop, gray=gray,
                                                                             device=device)),
            {"path": clip, "start": 1, "stop": 4, "gray": True, "device": "cpu"}, optional=("stop",),
            accept={("start", "zero"): "frame 0, the first", ("stop", "huge"): "to the end of the clip"},
            names={"start": ("stop",)})  # a start past stop is refused as stop's lower bound
        c["video.write_video"] = Case(lambda path, frames, fps: P.video.write_video(path, frames, fps=fps),
                                      {"path": files["folder"] / "out.mp4", "frames": [RGB, RGB], "fps": 10.0},
                                      skip=("path",))
        c["video.frame_table"] = Case(P.video.frame_table, {"path": clip})
        c["video.video_fps"] = Case(P.video.video_fps, {"path": clip, "default": 30.0}, positional=("path",))
        c["video.VideoWriter"] = Case(P.video.VideoWriter, {"path": files["folder"] / "w.mp4", "fps": 10.0},
                                      cleanup=_close, skip=("path",))
    c["video.fps_statistics"] = Case(P.video.fps_statistics, {"seconds": [0.01, 0.02, 0.015]})
    # It returns each frame's seconds: the count of them is the comparable result.
    c["video.run_motion"] = Case(lambda **kw: len(P.video.run_motion(**kw)),
                                 {"frames": [RGB, RGB, RGB], "backend": "numpy",
                                  "detector": {"t_low": 70, "t_high": 80}, "warmup": False})
    # ---- detect
    mct, mct_detector, lbp, lbp_detector = _detectors()
    scene = portcv.data.synthetic_rgb(64, 80, seed=3)[..., 0]
    c["detect.load_cascade"] = Case(portcv.detect.load_cascade, {"path_or_name": "lbpcascade_frontalface_opencv.xml"},
                                    extra={"path_or_name": [("truncated-xml", files["folder"] / "bad.xml", "error"),
                                                           ("missing", files["folder"] / "missing.xml", "error"),
                                                           ("folder", files["folder"], "error")]})
    c["detect.CascadeDetector"] = Case(portcv.detect.CascadeDetector, {"cascade": lbp}, base=False,
                                       extra={"cascade": [("None", None, "error"), ("int", 3, "error"),
                                                          ("mct", mct, "error")]})
    c["detect.CascadeDetector.detect"] = Case(lbp_detector.detect, {"image": scene, "scale_factor": 1.2,
                                                                    "min_neighbors": 3, "min_size": (24, 24)},
                                              accept={("min_neighbors", "zero"): "every raw detection kept",
                                                      ("min_size", "zero"): "no lower bound"})
    c["detect.group_rectangles"] = Case(portcv.detect.group_rectangles, {"rects": RECTS, "min_neighbors": 1,
                                                                         "eps": 0.2},
                                        accept={("min_neighbors", "zero"): "every group kept",
                                                ("rects", "empty"): "no rectangles: no groups",
                                                ("eps", "zero"): "only equal rectangles group"})
    c["detect.detect_video"] = Case(lambda detector, frames: list(portcv.detect.detect_video(detector, frames)),
                                    {"detector": mct_detector, "frames": [scene, scene]}, skip=("detector",))
    c["detect.mct"] = Case(portcv.detect.mct, {"image": GRAY, "border": "constant", "border_value": 3},
                           batch=("image",), accept={("border_value", "zero"): "a border of 0"})
    c["detect.MCTCascade"] = Case(lambda **kw: portcv.detect.MCTCascade(**kw),
                                  {"positions": mct.positions, "lut": mct.lut, "stage_end": mct.stage_end,
                                   "threshold": mct.threshold, "window": mct.window}, base=False)
    c["detect.load_mct_cascade"] = Case(portcv.detect.load_mct_cascade, {"path": files["mct"]})
    c["detect.save_mct_cascade"] = Case(lambda cascade, path: portcv.detect.save_mct_cascade(cascade, path),
                                        {"cascade": mct, "path": files["folder"] / "saved.npz"}, skip=("path",),
                                        extra={"cascade": [("None", None, "error"), ("lbp", lbp, "error")]})
    c["detect.MCTDetector"] = Case(portcv.detect.MCTDetector, {"cascade": mct}, base=False,
                                   extra={"cascade": [("None", None, "error"), ("lbp", lbp, "error")]})
    c["detect.MCTDetector.detect"] = Case(mct_detector.detect, {"image": scene, "scale_factor": 1.2,
                                                                "min_neighbors": 3, "min_size": (24, 24), "step": 1},
                                          accept={("min_neighbors", "zero"): "every raw detection kept",
                                                  ("min_size", "zero"): "no lower bound"})
    c["detect.train_mct_cascade"] = Case(
        portcv.detect.train_mct_cascade,
        {"positives": np.stack([np.roll(GRAY[:24, :24], k, axis=1) for k in range(8)]), "negative_images": [GRAY],
         "stage_positions": (2,), "negatives_per_stage": 50, "max_rounds": 2, "seed": 0},
        accept={("seed", "zero"): "seed 0", ("seed", "huge"): "any seed",
                ("stage_positions", "long"): "two stages of two positions"}, base=False)
    # ---- volume
    c["volume.convolve3d"] = Case(P.volume.convolve3d, {"video": VIDEO, "kernel": KERNEL3, "shift": 2,
                                                        "time_mode": "same", "method": "direct"}, batch=("video",),
                                  dtypes={"kernel": (np.int8, np.int16, np.int64, np.uint8)},
                                  accept={("shift", "zero"): "no rounding shift"})
    c["volume.fft_error_bound"] = Case(P.volume.fft_error_bound, {"video_shape": (4, H, W), "video_dtype": "uint8",
                                                                  "kernel": KERNEL3},
                                       accept={("video_shape", "long"): "(T, H, W, C): a colour video's bound",
                                               ("video_dtype", "bytes"): "b'uint8' is a NumPy dtype spelling"})
    c["volume.quantize_kernel"] = Case(P.volume.quantize_kernel, {"kernel": np.full((3, 3, 3), 1 / 27), "bits": 12},
                                        dtypes={"kernel": (np.float16, np.float32, np.int8, np.int32, np.int64, np.uint8,
                                                           np.uint16)})
    c["volume.gabor_kernel3d"] = Case(P.volume.gabor_kernel3d, {"ksize": 5, "sigma": 1.5, "wavelength": 4.0,
                                                                "zero_mean": True, "bits": 12},
                                      accept={("theta", "zero"): "horizontal"})
    c["volume.Convolver3D"] = Case(P.volume.Convolver3D, {"kernel": KERNEL3, "frame_shape": (H, W), "shift": 2},
                                   accept={("shift", "zero"): "no rounding shift"})
    c["volume.Convolver3D.push"] = Case(lambda frame: P.volume.Convolver3D(KERNEL3, (H, W)).push(frame),
                                        {"frame": GRAY})
    # ---- distance
    c["distance.cdist"] = Case(P.distance.cdist, {"F": FEATURES, "D": GALLERY, "metric": "sqeuclidean"})
    c["distance.nearest"] = Case(P.distance.nearest, {"F": FEATURES, "D": GALLERY, "k": 2})
    c["distance.quantize_features"] = Case(P.distance.quantize_features,
                                           {"x": FEATURES.astype(np.float32) / 255, "scale": 200.0, "dtype": "uint8"},
                                           batch=("x",), accept={("x", "0-d"): "features of any shape",
                                                                 ("x", "1-d"): "features of any shape"})
    c["distance.sqeuclidean"] = Case(P.distance.sqeuclidean, {"F": FEATURES, "D": GALLERY})
    # ---- depth
    c["depth.dcbf"] = Case(P.depth.dcbf, {"depth": np.where(GRAY > 100, GRAY, 0).astype(np.uint8), "color": RGB,
                                          "ksize": 5, "sigma_space": 3.0, "sigma_color": 20.0},
                           dtypes={"depth": (np.uint16,)},
                           accept={("sigma_color", "huge"): "every colour weighs alike (the exact limit)",
                                   ("sigma_space", "huge"): "every offset weighs alike (the exact limit)"})
    c["depth.propagate"] = Case(P.depth.propagate, {"depth": DEPTH, "K_src": K_CAM, "K_dst": K_CAM, "R": np.eye(3),
                                                    "t": SHIFT_T, "dst_shape": (H, W), "unknown": 0},
                                dtypes={"depth": (np.uint16,), "t": (np.uint8, np.uint16, np.int8)})
    c["depth.propagate_color"] = Case(P.depth.propagate_color, {"depth": DEPTH, "color": RGB, "K_src": K_CAM,
                                                                "K_dst": K_CAM, "R": np.eye(3), "t": SHIFT_T,
                                                                "dst_shape": (H, W), "fill": 5},
                                      dtypes={"depth": (np.uint16,), "t": (np.uint8, np.uint16, np.int8)},
                                      accept={("fill", "zero"): "black fill"})
    c["depth.warp_disparity"] = Case(P.depth.warp_disparity, {"disparity": GRAY, "direction": -1, "frac_bits": 4,
                                                              "color": RGB}, dtypes={"disparity": (np.uint16,)},
                                  accept={("frac_bits", "zero"): "whole-pixel disparities"})
    # ---- recognize
    c["recognize.chi_square"] = Case(P.recognize.chi_square, {"query": LBP_HIST[:2], "gallery": LBP_HIST})
    c["recognize.nearest"] = Case(P.recognize.nearest, {"query": LBP_HIST[:2], "gallery": LBP_HIST, "k": 2})
    c["recognize.lbp_histograms"] = Case(P.recognize.lbp_histograms, {"image": GRAY, "P": 8, "R": 1.5,
                                                                      "region_size": (8, 8)}, batch=("image",))
    c["recognize.local_binary_pattern"] = Case(P.recognize.local_binary_pattern, {"image": GRAY, "P": 8, "R": 1.5,
                                                                                  "method": "u2"},
                                                  batch=("image",))
    c["recognize.LBPFaceRecognizer"] = Case(P.recognize.LBPFaceRecognizer, {"P": 8, "R": 2.0, "region_size": (8, 8),
                                                                            "weights": None})
    faces = np.stack([np.roll(GRAY, k, axis=1) for k in range(4)])
    c["recognize.LBPFaceRecognizer.train"] = Case(
        lambda images, labels: P.recognize.LBPFaceRecognizer(region_size=(8, 8), weights=None).train(images, labels),
        {"images": faces, "labels": np.array([0, 0, 1, 1])})
    # ---- data
    c["data.synthetic_rgb"] = Case(P.data.synthetic_rgb, {"height": H, "width": W, "seed": 1},
                                   accept={("seed", "zero"): "seed 0", ("seed", "huge"): "any seed"})
    c["data.moving_shapes"] = Case(P.data.moving_shapes, {"frames": 3, "height": H, "width": W, "seed": 1,
                                                          "shapes": 2, "noise": 3.0},
                                   accept={("seed", "zero"): "seed 0", ("noise", "zero"): "no noise",
                                           ("shapes", "zero"): "an empty scene", ("seed", "huge"): "any seed"})
    c["data.face_box"] = Case(P.data.face_box, {"eyes": np.array([10, 20, 30, 20])})
    # ---- distributed (no cluster: each bad value must be refused before one starts)
    import portcv.distributed as pdist

    c["distributed.halo"] = Case(lambda op, **kw: pdist.halo(op, **kw), {"op": "gaussian_blur", "ksize": 5,
                                                                         "sigma": 1.2},
                                 accept={("sigma", "zero"): "sigma 0: derived from ksize, as in OpenCV",
                                         ("ksize", "zero"): "ksize 0: derived from sigma, as in OpenCV"},
                                 extra={"bogus_keyword": [("unknown-keyword", 1, "error")]})
    c["distributed.local_cluster"] = Case(pdist.local_cluster, {"backend": "numpy", "n_workers": 1,
                                                                "threads_per_worker": 1}, base=False)
    c["distributed.PortcvWorker"] = Case(lambda backend: pdist.PortcvWorker(backend), {"backend": "numpy"})
    c["distributed.motion"] = Case(lambda **kw: pdist.motion(**kw), {"t_low": 70, "t_high": 80, "grid": (2, 2)},
                                   accept={**motion_thresholds,
                                           ("grid", "huge"): "checked against each file's frame size"})
    c["distributed.faces"] = Case(lambda **kw: pdist.faces(**kw), {"min_neighbors": 3, "scale_factor": 1.2},
                                  accept={("min_neighbors", "zero"): "every raw detection kept"})
    c["distributed.worker_backend"] = Case(pdist.worker_backend, {})
    if "video" in files:
        clip = files["video"]
        c["distributed.process_video"] = Case(lambda path, spec, start, stop: pdist.process_video(
            path, spec, start=start, stop=stop), {"path": clip, "spec": pdist.motion(t_low=70, t_high=80),
                                                  "start": 1, "stop": 4},
            optional=("start", "stop"),
            accept={("start", "zero"): "from the first frame", ("stop", "huge"): "to the end of the file"})
        # Each run's result without its seconds (a timing, different on every call).
        c["distributed.map_videos"] = Case(
            lambda spec, paths, **kw: [(r.value, r.frames, r.error) for r in pdist.map_videos(spec, paths, **kw)],
            {"spec": pdist.motion(t_low=70, t_high=80), "paths": [clip], "progress": False, "timeout": 60.0},
            optional=("timeout",), accept={("timeout", "huge"): "waits as long as asked"})
        c["distributed.frame_table"] = Case(pdist.frame_table, {"path": clip})
        c["distributed.segment_bounds"] = Case(pdist.segment_bounds, {"path": clip, "segment_frames": 3},
                                               accept={("segment_frames", "huge"): "one segment: the whole file"})
    if "zarr" in files:
        c["distributed.filter_store"] = Case(
            lambda src, dst, op, **kw: pdist.filter_store(src, dst, op, **kw),
            {"src": files["zarr"], "dst": files["folder"] / "dst.zarr", "op": "median_filter",
             "ksize": 3, "tile": 16}, skip=("dst",), optional=("tile",),
            accept={("tile", "huge"): "a tile larger than the image is the whole image"})
    if _has("dask"):
        import dask.array as da

        c["distributed.filter_image"] = Case(
            lambda image, op, **kw: pdist.filter_image(image, op, **kw).compute(scheduler="synchronous"),
            {"image": da.from_array(GRAY, chunks=(12, 16)), "op": "gaussian_blur", "ksize": 5, "sigma": 1.2},
            accept={("sigma", "zero"): "sigma 0: derived from ksize, as in OpenCV",
                    ("ksize", "zero"): "ksize 0: derived from sigma, as in OpenCV"},
            extra={"image": [("numpy", GRAY, "error"), ("None", None, "error")]})
    return c


@functools.lru_cache(maxsize=1)
def _detectors():
    mct = portcv.detect.load_mct_cascade("mct_frontalface_24.npz")
    lbp = portcv.detect.load_cascade("lbpcascade_frontalface_opencv.xml")
    return mct, portcv.detect.MCTDetector(mct), lbp, portcv.detect.CascadeDetector(lbp)


def _encoder():
    enc = portcv.codec.DeltaEncoder(threshold=20, capacity=64)
    enc.keyframe(GRAY)
    return enc


#: Public callables that are not swept, with the reason: result records the library builds
#: (their constructors are not an input path). Exceptions and warnings are left out as a kind.
NOT_CALLED = {
    "stream.PacketHeader": "a record parse_header builds (swept through parse_header)",
    "motion.MotionResult": "a result record", "distributed.VideoRun": "a result record",
    "distributed.MotionSpec": "built by distributed.motion() (swept there)",
    "distributed.FacesSpec": "built by distributed.faces() (swept there)",
    "detect.VideoDetections": "built by detect.detect_video() (swept there)",
    "detect.Cascade": "built by detect.load_cascade() from a file (swept there)",
}
DATA_DOWNLOADS = {"data.fetch_pyvision", "data.csu_scrapshots", "data.csu_faces", "data.nonface_images",
                  "data.lfw_subset", "data.skimage_negatives", "data.face_scenes"}


def _public_callables() -> set[str]:
    names = set()
    for domain in portcv.DOMAINS:
        module = getattr(portcv, domain)
        for name in module.__all__:
            obj = getattr(module, name)
            if callable(obj) and not (inspect.isclass(obj) and issubclass(obj, BaseException)):
                names.add(f"{domain}.{name}")
    return names


def test_every_public_callable_is_swept(files):
    table = cases(files)
    swept = {name.rsplit(".", 1)[0] if name.count(".") == 2 else name for name in table}
    missing = _public_callables() - swept - set(NOT_CALLED) - DATA_DOWNLOADS
    if "video" not in files:
        missing = {m for m in missing if not m.startswith(("video.", "distributed."))}
    assert not missing, f"public callables with no sweep case: {sorted(missing)}"


def _report(name: str, backend: str, outcomes) -> None:
    path = os.environ.get("PORTCV_SWEEP_REPORT")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps({"name": name, "backend": backend,
                                "verdicts": Counter(o.verdict for o in outcomes)}) + "\n")


@pytest.mark.parametrize("case_name", sorted(cases(PLACEHOLDER_FILES)))
def test_public_callable_refuses_bad_input(case_name, backend, files, tmp_path):
    table = cases(files)
    if case_name not in table:
        pytest.skip(f"{case_name}: needs an optional dependency that is not installed")
    case = table[case_name]
    with portcv.using(backend):
        outcomes = sweep(case, tmp_path, new_shapes=backend.startswith("numpy"))
    _report(case_name, backend, outcomes)
    bad = [o for o in outcomes if not o.ok]
    assert not bad, "\n".join(f"{case_name}({o.param}={o.variant}): {o.verdict}: {o.detail}" for o in bad)
