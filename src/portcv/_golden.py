"""Golden cases: small deterministic calls of every public array op, and how their outputs are hashed.

Each :class:`GoldenCase` builds its inputs from fixed seeds (``portcv.data`` generators and
``numpy.random.default_rng``) and calls one public function. The SHA-256 of its output on the
NumPy reference is committed in ``_golden.json`` (written by ``tools/generators/golden.py``);
:func:`portcv.verify` reruns the cases on other backends, thread counts and builds and compares.
Sizes are small and few (JAX compiles per shape), except a handful of ``banded`` cases large
enough that the NumPy overrides split them into several row bands (Canny's hysteresis: one band
per thread), so the thread count matters.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

import portcv

#: The committed table: case name -> SHA-256 of the NumPy reference's output.
TABLE_PATH = Path(__file__).with_name("_golden.json")

#: Public functions of the walked domains that have no golden case, and why.
EXCLUDED: dict[str, str] = {
    "data.fetch_pyvision": "downloads a data set into the user cache",
    "data.csu_scrapshots": "reads a downloaded data set",
    "data.csu_faces": "reads a downloaded data set",
    "data.nonface_images": "reads a downloaded data set",
    "data.lfw_subset": "reads scikit-image's data files (an optional dependency)",
    "data.skimage_negatives": "reads scikit-image's data files (an optional dependency)",
    "data.face_scenes": "pastes faces from a downloaded data set",
    "detect.load_cascade": "reads an XML file into a Cascade object (no array); its detector has a case",
    "detect.load_mct_cascade": "reads a file into an MCTCascade object (no array)",
    "detect.save_mct_cascade": "writes a file, returns nothing",
    "detect.train_mct_cascade": "trains for minutes on downloaded faces",
}
#: Domains left out whole: I/O on files, sockets and clusters, not array operations.
EXCLUDED_DOMAINS: dict[str, str] = {
    "distributed": "maps the other ops over Dask clusters and stores",
    "stream": "bytes on sockets; its frames come from codec.delta_encode, which has a case",
    "video": "reads and writes video files",
}


@dataclass(frozen=True)
class GoldenCase:
    """One deterministic call: ``run()`` returns the op's output on the active backend.

    Attributes
    ----------
    name : str
        ``"<domain>.<function>[<variant>]"``, unique.
    op : str
        The public function it covers, ``"<domain>.<function>"`` (a class's method counts for
        its class: ``"detect.CascadeDetector"``).
    run : callable
        Takes nothing, calls the op on inputs it builds from fixed seeds.
    banded : bool
        Large enough that the NumPy overrides split it into several bands of rows (its
        output may then depend on the thread count, if a kernel races).
    """

    name: str
    op: str
    run: Callable[[], Any]
    banded: bool = False


# -- inputs: built once per process, NumPy arrays (each op moves them to the active backend) ---
H, W = 37, 53


@functools.cache
def rgb(seed: int = 1, height: int = H, width: int = W) -> np.ndarray:
    return portcv.data.synthetic_rgb(height, width, seed=seed)


@functools.cache
def gray(seed: int = 1, height: int = H, width: int = W) -> np.ndarray:
    return np.ascontiguousarray(rgb(seed, height, width)[..., 1])


@functools.cache
def video(frames: int = 4) -> np.ndarray:
    return portcv.data.moving_shapes(frames, H, W, seed=3)


@functools.cache
def noise(shape: tuple[int, ...], seed: int, high: int = 256, dtype: str = "uint8") -> np.ndarray:
    return np.random.default_rng(seed).integers(0, high, shape).astype(dtype)


def _m(domain: str) -> Any:
    return getattr(portcv, domain)


def _cases() -> list[GoldenCase]:
    color, filters, transform, edges = _m("color"), _m("filters"), _m("transform"), _m("edges")
    motion, codec, draw, detect = _m("motion"), _m("codec"), _m("draw"), _m("detect")
    volume, distance, depth, recognize, data = _m("volume"), _m("distance"), _m("depth"), _m("recognize"), _m("data")
    big = (520, 640)  # 332,800 pixels: at least two bands of the NumPy overrides (2**18 elements each)
    c: list[tuple[str, str, Callable[[], Any]] | tuple[str, str, Callable[[], Any], bool]] = [
        # data: the generators every case's inputs come from
        ("data.synthetic_rgb", "", lambda: data.synthetic_rgb(H, W, seed=5)),
        ("data.moving_shapes", "", lambda: data.moving_shapes(3, H, W, seed=5)),
        ("data.face_box", "", lambda: data.face_box((20.0, 30.0, 44.0, 31.0))),
        # color
        ("color.rgb_to_gray", "", lambda: color.rgb_to_gray(rgb())),
        ("color.rgb_to_gray", "average", lambda: color.rgb_to_gray(rgb(), method="average")),
        ("color.gray_to_rgb", "", lambda: color.gray_to_rgb(gray())),
        ("color.rgb_to_bgr", "", lambda: color.rgb_to_bgr(rgb())),
        ("color.bgr_to_rgb", "", lambda: color.bgr_to_rgb(rgb())),
        ("color.histogram", "", lambda: color.histogram(gray())),
        ("color.threshold_two_peaks", "", lambda: color.threshold_two_peaks(color.histogram(gray()))),
        ("color.threshold_otsu", "", lambda: color.threshold_otsu(gray())),
        ("color.binarize", "", lambda: color.binarize(gray(), 100)),
        ("color.binarize_auto", "", lambda: color.binarize_auto(gray())),
        ("color.nv12_to_rgb", "", lambda: color.nv12_to_rgb(noise((54, 64), 11))),
        ("color.nv12_to_bgr", "", lambda: color.nv12_to_bgr(noise((54, 64), 11))),
        ("color.i420_to_rgb", "", lambda: color.i420_to_rgb(noise((54, 64), 12))),
        ("color.i420_to_bgr", "", lambda: color.i420_to_bgr(noise((54, 64), 12))),
        # filters
        ("filters.sep_filter", "", lambda: filters.sep_filter(gray(), [1, 2, 1], [1, 4, 6, 4, 1], 6)),
        ("filters.gaussian_blur", "k5", lambda: filters.gaussian_blur(gray(), ksize=5, sigma=1.2)),
        ("filters.gaussian_blur", "rgb-k7", lambda: filters.gaussian_blur(rgb(), ksize=7, sigma=0)),
        ("filters.gaussian_blur", "banded", lambda: filters.gaussian_blur(gray(2, *big), ksize=5, sigma=1.2), True),
        ("filters.gaussian_taps_q8", "", lambda: filters.gaussian_taps_q8(7, 1.5)),
        ("filters.box_blur", "", lambda: filters.box_blur(gray(), 5)),
        ("filters.box_blur", "banded", lambda: filters.box_blur(gray(2, *big), 5), True),
        ("filters.convolve2d", "", lambda: filters.convolve2d(gray(), np.array([[0, 1, 0], [1, 4, 1], [0, 1, 0]]), 3)),
        ("filters.mean_filter", "", lambda: filters.mean_filter(gray(), 3)),
        ("filters.gaussian_kernel", "", lambda: filters.gaussian_kernel(1.5)),
        ("filters.sobel", "dx", lambda: filters.sobel(gray(), 1, 0)),
        ("filters.sobel", "dy-k5", lambda: filters.sobel(gray(), 0, 1, ksize=5)),
        ("filters.sobel", "banded", lambda: filters.sobel(gray(2, *big), 1, 0), True),
        ("filters.gradients", "", lambda: filters.gradients(gray())),
        ("filters.median_filter", "k3", lambda: filters.median_filter(gray(), 3)),
        ("filters.median_filter", "k5", lambda: filters.median_filter(gray(), 5)),
        ("filters.median_filter", "banded", lambda: filters.median_filter(gray(2, *big), 3), True),
        ("filters.joint_bilateral", "", lambda: filters.joint_bilateral(gray(3), gray(), 5, 20.0, 3.0)),
        # transform
        ("transform.integral", "", lambda: transform.integral(gray())),
        ("transform.integral", "squared", lambda: transform.integral(gray(), squared=True, dtype="int64")),
        ("transform.resize", "bilinear", lambda: transform.resize(gray(), size=(29, 19))),
        ("transform.resize", "nearest", lambda: transform.resize(rgb(), scale=1.5, interpolation="nearest")),
        ("transform.pyramid", "", lambda: transform.pyramid(gray(), scale=1.25, min_size=(12, 12))),
        ("transform.pack_pyramid", "", lambda: transform.pack_pyramid(transform.pyramid(gray(), scale=1.25, min_size=(12, 12)))),
        ("transform.spline_filter", "", lambda: transform.spline_filter(gray())),
        ("transform.zoom", "", lambda: transform.zoom(gray(), 1.5)),
        # edges
        ("edges.gradient", "", lambda: edges.gradient(gray())),
        ("edges.magnitude", "", lambda: edges.magnitude(*edges.gradient(gray()))),
        ("edges.direction_sector", "", lambda: edges.direction_sector(*edges.gradient(gray()))),
        ("edges.detect", "", lambda: edges.detect(gray(), 40, 80)),
        ("edges.canny", "", lambda: edges.canny(gray(), 50, 150)),
        ("edges.canny", "k5-l2", lambda: edges.canny(gray(), 400, 1200, ksize=5, l2gradient=True)),
        # hysteresis runs in bands of at least 64 rows, one per thread: 520 rows make several
        ("edges.canny", "banded", lambda: edges.canny(gray(2, *big), 50, 150), True),
        # motion
        ("motion.difference", "", lambda: motion.difference(gray(1), gray(4))),
        ("motion.density", "", lambda: motion.density(motion.difference(gray(1), gray(4)), grid=(3, 4))),
        ("motion.regions", "", lambda: motion.regions(motion.density(motion.difference(gray(1), gray(4)), grid=(3, 4)),
                                                      shape=(H, W))),
        ("motion.area_image", "", lambda: motion.area_image(gray(), np.array([[True, False, True, False]] * 3))),
        ("motion.draw_regions", "", lambda: motion.draw_regions(rgb(), np.array([[True, False, False, True]] * 3))),
        ("motion.cell_bounds", "", lambda: motion.cell_bounds((H, W), grid=(3, 4))),
        ("motion.MotionDetector", "", _motion_detector),
        ("motion.detect_motion", "", lambda: motion.detect_motion(video(), t_low=40, t_high=80, grid=(3, 4))),
        # codec
        ("codec.delta_encode", "", lambda: codec.delta_encode(video()[1], video()[0], threshold=10)),
        ("codec.delta_decode", "", lambda: codec.delta_decode(video()[0], *_delta()[1:3], _delta()[0])),
        ("codec.DeltaEncoder", "", _delta_encoder),
        # draw
        ("draw.heatmap", "", lambda: draw.heatmap(video()[0], video()[1])),
        ("draw.heatmap_colors", "", lambda: draw.heatmap_colors()),
        ("draw.noise_map", "", lambda: draw.noise_map(video()[0], video()[1])),
        ("draw.noise_map_from_positions", "", lambda: draw.noise_map_from_positions(video()[1], _delta()[2], _delta()[0])),
        ("draw.text_overlay", "", lambda: draw.text_overlay(rgb(), "portcv 59", origin=(2, 3))),
        ("draw.glyph_atlas", "", lambda: draw.glyph_atlas()),
        ("draw.boxes", "", lambda: draw.boxes(rgb(), [(3, 4, 20, 15), (30, 10, 50, 36)], thickness=2)),
        ("draw.mask_overlay", "", lambda: draw.mask_overlay(rgb(), noise((8, 9, 4), 13), [(3, 4, 20, 15), (30, 10, 17, 20)])),
        # detect
        ("detect.group_rectangles", "", lambda: detect.group_rectangles(
            np.array([[10, 10, 20, 20], [11, 10, 20, 21], [12, 11, 19, 20], [40, 5, 10, 10]]), 1)),
        ("detect.mct", "", lambda: detect.mct(gray())),
        ("detect.CascadeDetector", "", _cascade_detector),
        ("detect.MCTDetector", "", _mct_detector),
        ("detect.detect_video", "", lambda: list(detect.detect_video(  # (index, boxes, neighbours) per frame
            detect.MCTDetector.default(), np.stack([cartoon_face(), cartoon_face()[:, ::-1]]), min_neighbors=0))),
        # volume
        ("volume.convolve3d", "direct", lambda: volume.convolve3d(video()[..., 0], noise((3, 3, 3), 14, 5, "int32"), shift=4,
                                                                  method="direct")),
        ("volume.convolve3d", "fft", lambda: volume.convolve3d(video()[..., 0], noise((3, 3, 3), 14, 5, "int32"), shift=4,
                                                               method="fft")),
        ("volume.fft_error_bound", "", lambda: volume.fft_error_bound((4, H, W), np.uint8, noise((3, 3, 3), 14, 5, "int32"))),
        ("volume.quantize_kernel", "", lambda: volume.quantize_kernel(np.linspace(-1.0, 1.0, 27).reshape(3, 3, 3))),
        ("volume.gabor_kernel3d", "", lambda: volume.gabor_kernel3d((3, 5, 5), 1.5, 4.0, speed=0.5)),
        ("volume.Convolver3D", "", _convolver3d),
        # distance
        ("distance.cdist", "", lambda: distance.cdist(noise((5, 16), 15), noise((7, 16), 16), "sqeuclidean")),
        ("distance.nearest", "", lambda: distance.nearest(noise((5, 16), 15), noise((7, 16), 16), k=2)),
        ("distance.quantize_features", "", lambda: distance.quantize_features(np.linspace(0.0, 1.0, 40).reshape(5, 8), 200.0)),
        ("distance.sqeuclidean", "", lambda: distance.sqeuclidean(noise((5, 16), 15), noise((7, 16), 16))),
        # depth
        ("depth.dcbf", "", lambda: depth.dcbf(_depth_map(), gray(), 5)),
        ("depth.propagate", "", lambda: depth.propagate(_depth_map(), *_cameras(), (H, W))),
        ("depth.propagate_color", "", lambda: depth.propagate_color(_depth_map(), rgb(), *_cameras(), (H, W))),
        ("depth.warp_disparity", "", lambda: depth.warp_disparity(noise((H, W), 17, 64))),
        # recognize
        ("recognize.local_binary_pattern", "", lambda: recognize.local_binary_pattern(gray(), 8, 1.0)),
        ("recognize.lbp_histograms", "", lambda: recognize.lbp_histograms(gray(), region_size=(12, 10))),
        ("recognize.chi_square", "", lambda: recognize.chi_square(*_lbp_pair())),
        ("recognize.nearest", "", lambda: recognize.nearest(*_lbp_pair(), k=2)),
        ("recognize.LBPFaceRecognizer", "", _lbp_recognizer),
    ]
    cases = []
    for entry in c:
        op, variant, run = entry[:3]
        banded = bool(entry[3]) if len(entry) > 3 else False
        cases.append(GoldenCase(f"{op}[{variant}]" if variant else op, op, run, banded))
    return cases


def _delta() -> tuple[np.ndarray, ...]:
    """``(count, diffs, positions, new_reference)`` of the second frame against the first, on the host."""
    with portcv.using("numpy"):
        return tuple(portcv.to_numpy(a) for a in _m("codec").delta_encode(video()[1], video()[0], threshold=10))


def _depth_map() -> np.ndarray:
    d = 800 + noise((H, W), 18, 400, "uint16")
    return np.where(noise((H, W), 19, 10) == 0, 0, d).astype(np.uint16)  # a tenth unknown (0)


def _cameras() -> tuple[np.ndarray, np.ndarray, np.ndarray, list[float]]:
    K = np.array([[60.0, 0.0, W / 2], [0.0, 60.0, H / 2], [0.0, 0.0, 1.0]])
    c, s = np.cos(0.05), np.sin(0.05)
    R = np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])
    return K, K, R, [-30.0, 5.0, 0.0]


def _lbp_pair() -> tuple[Any, Any]:
    recognize = _m("recognize")
    query = recognize.lbp_histograms(gray(1), region_size=(12, 10))
    gallery = np.stack([portcv.to_numpy(recognize.lbp_histograms(gray(s), region_size=(12, 10))) for s in (2, 3, 4)])
    return portcv.to_numpy(query), gallery


def _motion_detector() -> list[Any]:
    detector = _m("motion").MotionDetector(t_low=40, t_high=80, grid=(3, 4))
    results = [detector.update(frame) for frame in video()]
    return [r for r in results if r is not None]


def _delta_encoder() -> list[Any]:
    encoder = _m("codec").DeltaEncoder(threshold=10)
    encoder.keyframe(video()[0])
    return [encoder.encode(frame) for frame in video()[1:]]


class CaseUnavailable(Exception):
    """A case cannot run here for a reason outside portcv (an optional package's data is missing)."""


@functools.cache
def cartoon_face(height: int = 72, width: int = 96) -> np.ndarray:
    """A drawn face (ellipse, dark eyes, nose, mouth), smoothed: both face detectors find it,
    so their cases hash boxes, not an empty list."""
    y, x = np.mgrid[0:height, 0:width].astype(np.float64)
    cy, cx, r = height / 2, width / 2, height * 0.42
    img = np.full((height, width), 60, np.int32)
    img[((y - cy) / r) ** 2 + ((x - cx) / (0.8 * r)) ** 2 < 1] = 190
    for ex in (cx - 0.35 * r, cx + 0.35 * r):
        img[((y - (cy - 0.2 * r)) / (0.09 * r)) ** 2 + ((x - ex) / (0.18 * r)) ** 2 < 1] = 40
    img[((y - (cy + 0.45 * r)) / (0.07 * r)) ** 2 + ((x - cx) / (0.3 * r)) ** 2 < 1] = 70
    img[(abs(x - cx) < 0.06 * r) & (y > cy - 0.05 * r) & (y < cy + 0.25 * r)] = 150
    for axis in (0, 1, 0, 1):  # [1, 2, 1] / 4 smoothing twice per axis, edges replicated, in integers
        p = np.pad(img, [(1, 1) if a == axis else (0, 0) for a in range(2)], mode="edge")
        lo, mid, hi = (np.take(p, range(k, k + img.shape[axis]), axis=axis) for k in range(3))
        img = (lo + 2 * mid + hi + 2) >> 2
    return img.astype(np.uint8)


def _cascade_detector() -> Any:
    detect = _m("detect")
    try:  # OpenCV's cascade files come with the cv2 wheel
        cascade = detect.load_cascade("haarcascade_frontalface_default.xml")
    except (OSError, ValueError, ImportError) as exc:
        raise CaseUnavailable(f"OpenCV's cascade file is not installed here ({str(exc).splitlines()[0]})") from exc
    return detect.CascadeDetector(cascade).detect(cartoon_face(), min_neighbors=1)


def _mct_detector() -> Any:
    return _m("detect").MCTDetector.default().detect(cartoon_face(), min_neighbors=0)


def _convolver3d() -> list[Any]:
    conv = _m("volume").Convolver3D(noise((3, 3, 3), 14, 5, "int32"), (H, W), shift=4)
    pushed = [conv.push(frame) for frame in video()[..., 0]]
    return [out for out in pushed if out is not None] + conv.flush()


def _lbp_recognizer() -> Any:
    recognize = _m("recognize")
    model = recognize.LBPFaceRecognizer(region_size=(12, 10), weights=None)
    model.train([gray(s) for s in (2, 3, 4)], [0, 1, 1])
    return model.predict(gray(1))


@functools.cache
def cases() -> tuple[GoldenCase, ...]:
    """Every golden case, in a fixed order.

    Returns
    -------
    tuple of GoldenCase

    Examples
    --------
    >>> from portcv._golden import cases
    >>> len({case.name for case in cases()}) == len(cases())
    True
    """
    out = tuple(_cases())
    names = [case.name for case in out]
    if len(set(names)) != len(names):  # a programming error in the table above
        raise AssertionError(f"duplicate golden case names: {sorted(n for n in names if names.count(n) > 1)}")
    return out


# -- hashing ---------------------------------------------------------------------------------
def arrays_of(result: Any) -> list[np.ndarray]:
    """The arrays of an op's result, in a fixed order, on the host.

    Tuples and lists give their items in order, dicts their values by sorted key, dataclasses
    and named tuples their fields in order; bytes become a uint8 array, ``None`` an empty one,
    Python scalars 0-d bool, int64 or float64 arrays, anything else the host copy of the array.

    Examples
    --------
    >>> import numpy as np
    >>> [a.tolist() for a in arrays_of((np.arange(2), [3, (4, 5)]))]
    [[0, 1], 3, 4, 5]
    """
    if result is None:
        return [np.zeros(0, np.uint8)]
    if isinstance(result, (bytes, bytearray)):
        return [np.frombuffer(bytes(result), np.uint8)]
    if dataclasses.is_dataclass(result) and not isinstance(result, type):
        return [a for f in dataclasses.fields(result) for a in arrays_of(getattr(result, f.name))]
    if isinstance(result, dict):
        return [a for k in sorted(result) for a in arrays_of(result[k])]
    if isinstance(result, (tuple, list)):
        return [a for item in result for a in arrays_of(item)]
    if isinstance(result, (bool, int, float)):  # Python scalars: one dtype on every platform (not NumPy 1's C long)
        return [np.asarray(result, dtype=bool if isinstance(result, bool) else np.int64 if isinstance(result, int) else np.float64)]
    array = np.asarray(result) if isinstance(result, (np.generic, np.ndarray)) else portcv.to_numpy(result)
    if array.dtype.hasobject:  # its bytes would be pointers: a result type this function must learn
        raise TypeError(f"cannot hash a result of type {type(result).__name__} (an object array)")
    return [array]


def digest(result: Any) -> str:
    """SHA-256 (hex) of an op's result: each array's dtype, shape and C-order bytes, in order.

    Examples
    --------
    >>> import numpy as np
    >>> digest(np.zeros(3, np.uint8)) == digest(np.zeros(3, np.int8))  # the dtype counts
    False
    """
    h = hashlib.sha256()
    for a in arrays_of(result):
        a = np.ascontiguousarray(a)
        h.update(f"{a.dtype.str}{a.shape};".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def load_table(path: Path | None = None) -> dict[str, str]:
    """The committed table: case name -> expected SHA-256 (``{}`` if it was never written)."""
    path = TABLE_PATH if path is None else Path(path)
    if not path.is_file():
        return {}
    return dict(json.loads(path.read_text())["cases"])


def compute_table() -> dict[str, Any]:
    """The table the code makes now: every case run on the NumPy reference, one thread."""
    import os

    saved = os.environ.get("PORTCV_NUMPY_THREADS")
    os.environ["PORTCV_NUMPY_THREADS"] = "1"
    try:
        with portcv.using("numpy"):
            hashes = {case.name: digest(case.run()) for case in cases()}
    finally:
        if saved is None:
            os.environ.pop("PORTCV_NUMPY_THREADS", None)
        else:
            os.environ["PORTCV_NUMPY_THREADS"] = saved
    return {"format": 1, "hash": "sha256 of dtype.str, shape and C-order bytes of each output array, in order",
            "cases": hashes}


def render_table(table: dict[str, Any]) -> str:
    """The JSON text of a table, as committed (sorted, one case a line)."""
    return json.dumps(table, indent=1, sort_keys=True) + "\n"
