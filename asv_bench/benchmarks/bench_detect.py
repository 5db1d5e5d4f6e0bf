"""portcv.detect: OpenCV-compatible cascade face detection over backend x frame size, cv2 as the peer.

:class:`Detect` is the whole ``CascadeDetector.detect`` (gray conversion, pyramid, packed
integrals, breadth-first stages, compaction, grouping) with ``haarcascade_frontalface_default``,
scale 1.1, min_neighbors 3, min_size 30x30 -- the issue's target setting (under 3 ms per 1080p
frame on CuPy; cv2 on 2 CPU threads takes ~56 ms for the 512x512 astronaut). The frame is a
synthetic scene with faces pasted in (scikit-image's astronaut when it is installed), so the late
stages have work to do. :class:`SplitStage` moves the breadth-first / plan split point (the
scheduling paper chose it by measurement; the MCT thesis found after stage 2 best).
:class:`DetectVideo` is ``detect_video`` over 8 host frames of 640x480 in frames per second, with
and without the CUDA-stream overlap of upload and detection on CuPy.
"""

from __future__ import annotations

import functools

import numpy as np

import portcv

from ._common import (
    BACKENDS,
    OPENCV,
    SIZES,
    Benchmark,
    Operation,
    not_supported,
    peer_module,
    require,
    rgb_image,
)

CASCADE = "haarcascade_frontalface_default.xml"
DETECT_SIZES = ["640x480", "1920x1080"]
PARAMS = dict(scale_factor=1.1, min_neighbors=3, min_size=(30, 30))


@functools.lru_cache(maxsize=4)
def face_scene(size: str) -> np.ndarray:
    """Gray ``size`` frame: the synthetic scene with four faces pasted at 1/8 .. 1/2 of its height."""
    h, w = SIZES[size]
    rgb = rgb_image(size).copy()
    try:
        from skimage import data

        face = data.astronaut()[30:210, 140:320]
    except ImportError:  # pragma: no cover - the bench still runs, with fewer late-stage windows
        face = None
    if face is not None:
        with portcv.using("numpy"):
            for i, frac in enumerate((0.125, 0.2, 0.3, 0.5)):
                side = int(h * frac)
                patch = portcv.to_numpy(portcv.transform.resize(face, size=(side, side)))
                x = int((w - side) * (i + 0.5) / 4)
                y = int((h - side) * ((i * 37) % 10) / 10)
                rgb[y : y + side, x : x + side] = patch
    with portcv.using("numpy"):
        return portcv.to_numpy(portcv.color.rgb_to_gray(rgb))


def _detector() -> portcv.detect.CascadeDetector:
    try:
        return portcv.detect.CascadeDetector.from_opencv(CASCADE)
    except FileNotFoundError as exc:  # needs cv2.data for the cascade file
        raise NotImplementedError(f"cascade {CASCADE} not available: {exc}") from exc


class Detect(Benchmark):
    params = [BACKENDS + [OPENCV], DETECT_SIZES]
    param_names = ["backend", "size"]

    def setup(self, backend, size):
        gray = face_scene(size)
        if backend == OPENCV:
            cv2 = peer_module(OPENCV)
            cc = cv2.CascadeClassifier(cv2.data.haarcascades + CASCADE)
            fn = functools.partial(cc.detectMultiScale2, scaleFactor=PARAMS["scale_factor"],
                                   minNeighbors=PARAMS["min_neighbors"], minSize=PARAMS["min_size"])
        else:
            fn = functools.partial(_detector().detect, **PARAMS)
        self.op = Operation(backend, fn, gray)

    def time_detect(self, backend, size):
        self.op()


class DetectMemory(Benchmark):
    """Peak memory of ``CascadeDetector.detect`` on a 1920 x 1080 frame, per backend (the issue's
    bound: under 1.5 GB; JAX on the CPU needed 12.3 GB at 512 x 512). asv measures the whole
    process, so the figure includes the interpreter and the backend's framework; ``setup``
    builds the detector and the frame, and the measured calls are the first two detections
    (compilations included: the second frame may compile the capacities learned from the first)."""

    params = [BACKENDS]
    param_names = ["backend"]
    timeout = 600

    def setup(self, backend):
        require(backend)
        self.gray = face_scene("1920x1080")
        self.det = _detector()

    def peakmem_detect(self, backend):
        with portcv.using(backend):
            for _ in range(2):
                self.det.detect(portcv.asarray(self.gray), **PARAMS)


class SplitStage(Benchmark):
    params = [BACKENDS, [1, 2, 3, 5]]
    param_names = ["backend", "split_stage"]

    def setup(self, backend, split_stage):
        det = _detector()
        self.op = Operation(backend, functools.partial(det.detect, split_stage=split_stage, **PARAMS),
                            face_scene("640x480"))

    def time_detect_split(self, backend, split_stage):
        self.op()


class LoadCascade(Benchmark):
    """``load_cascade``: parsing the 930 kB default cascade XML into a ``Cascade`` (loads are
    cached per file: this times a miss)."""

    params = [["host"]]
    param_names = ["where"]

    def setup(self, where):
        from portcv.detect._cascade._detector import resolve_cascade_path

        try:
            self.path = resolve_cascade_path(CASCADE)
        except FileNotFoundError as exc:
            raise NotImplementedError(str(exc)) from exc

    def time_load_cascade(self, where):
        from portcv.detect._cascade._detector import _load_cached

        _load_cached.cache_clear()  # a miss, as a first load is
        portcv.detect.load_cascade(self.path)


class GroupRectangles(Benchmark):
    """``group_rectangles`` on 2,000 raw candidates around 40 objects."""

    params = [["host"]]
    param_names = ["where"]

    def setup(self, where):
        rng = np.random.default_rng(0)
        centres = rng.integers(0, 1800, (40, 2))
        side = rng.integers(30, 200, 40)
        k = rng.integers(0, 40, 2000)
        jitter = rng.integers(-5, 6, (2000, 2))
        self.rects = np.c_[centres[k] + jitter, side[k], side[k]].astype(np.int32)

    def time_group_rectangles(self, where):
        portcv.detect.group_rectangles(self.rects, 3)


class DetectVideo(Benchmark):
    """``detect_video`` over 8 host frames of 640x480 (the face scene moving right), frames per second:
    the whole iteration of the ``VideoDetections`` it returns.

    ``streams``: on CuPy the upload of frame ``t + 1`` (pinned buffer, copy stream) overlaps the
    detection of frame ``t``; ``sequential`` is the same loop without streams (CuPy only: on the
    other backends ``detect_video`` is always sequential, so that value is skipped there).
    """

    params = [BACKENDS, ["streams", "sequential"]]
    param_names = ["backend", "mode"]
    frames = 8
    number = 1
    repeat = (1, 5, 60.0)
    warmup_time = 0

    def setup(self, backend, mode):
        b = require(backend)
        if mode == "sequential" and b.name != "cupy":
            not_supported(backend, "separate sequential mode (detect_video is always sequential there)")
        scene = face_scene("640x480")
        self.video = [np.roll(scene, 4 * t, axis=1) for t in range(self.frames)]  # host frames
        self.backend = b.name
        self.det = _detector()
        self.streams = mode == "streams"
        self._run()  # compile (CuPy kernels, JAX traces for every plan capacity these frames need)

    def _run(self) -> float:
        with portcv.using(self.backend):
            run = portcv.detect.detect_video(self.det, self.video, streams=self.streams, **PARAMS)
            for _ in run:
                pass
        return run.statistics()["throughput"]

    def time_detect_video(self, backend, mode):
        self._run()

    def track_frames_per_second(self, backend, mode):
        rates = [self._run() for _ in range(1 if self.backend == "numpy" else 3)]
        return round(float(np.median(rates)), 1)

    track_frames_per_second.unit = "frames/s"


# --------------------------------------------------------------------------------------------
# MCT detection (issue 21): the thesis's detector with portcv's own cascade
# --------------------------------------------------------------------------------------------
#: The thesis's scan: scale 1.15, window step 1, faces from 24x24 (its starting scale 1).
MCT_PARAMS = dict(scale_factor=1.15, min_neighbors=3, min_size=(24, 24))
LBP_CASCADE = "lbpcascade_frontalface_opencv.xml"
MCT_BATCH = 16


class MCT(Benchmark):
    """``MCTDetector.default().detect`` (gray frame: pyramid, MCT codes, 5 LUT stages breadth-first
    with compaction, grouping) at the thesis's settings; the peer is cv2's LBP face cascade at the
    same scale factor and minimum size (issue 21: NumPy within 3x of it on the CPU). Targets on
    the H100 with CuPy: <= 0.6 ms at 640x480, <= 1.5 ms at 1080p (thesis 5.84 / 28.52 ms)."""

    params = [BACKENDS + [OPENCV], DETECT_SIZES]
    param_names = ["backend", "size"]
    timeout = 600

    def setup(self, backend, size):
        gray = face_scene(size)
        if backend == OPENCV:
            cv2 = peer_module(OPENCV)
            from portcv.detect._cascade._detector import resolve_cascade_path

            import tempfile

            try:
                text = open(resolve_cascade_path(LBP_CASCADE), "rb").read()
            except FileNotFoundError as exc:
                raise NotImplementedError(str(exc)) from exc
            fixed = tempfile.mktemp(suffix=".xml")  # scikit-image's copy misspells featureParams: cv2 refuses it
            with open(fixed, "wb") as fh:
                fh.write(text.replace(b"featuhreParams", b"featureParams"))
            cc = cv2.CascadeClassifier(fixed)
            fn = functools.partial(cc.detectMultiScale2, scaleFactor=MCT_PARAMS["scale_factor"],
                                   minNeighbors=MCT_PARAMS["min_neighbors"], minSize=MCT_PARAMS["min_size"])
        else:
            fn = functools.partial(portcv.detect.MCTDetector.default().detect, **MCT_PARAMS)
        self.op = Operation(backend, fn, gray)

    def time_detect(self, backend, size):
        self.op()


class MCTBatch(Benchmark):
    """``MCTDetector.default().detect`` per frame of a batch of 16 gray frames (the scene, its
    mirror and two shifts, so the frames' survivors differ), one call; NumPy one frame a call (its
    per-frame time does not depend on the batch). GPU backends are judged by this per-frame time
    (issue 21: JAX within 3x of CuPy); :class:`MCT` is the single synchronized call beside it."""

    params = [BACKENDS, DETECT_SIZES]
    param_names = ["backend", "size"]
    timeout = 600

    def setup(self, backend, size):
        gray = face_scene(size)
        self.frames = 1 if backend == "numpy" else MCT_BATCH
        variants = [gray, np.ascontiguousarray(gray[:, ::-1]), np.roll(gray, 9, axis=1), np.roll(gray, 5, axis=0)]
        batch = np.stack([variants[t % 4] for t in range(self.frames)])
        self.op = Operation(backend, functools.partial(portcv.detect.MCTDetector.default().detect, **MCT_PARAMS),
                            batch)

    def track_detect_ms_per_frame(self, backend, size):
        return round(1e3 * self.op.median_s(min_calls=5, budget_s=2.0) / self.frames, 4)

    track_detect_ms_per_frame.unit = "ms"


class MCTTransform(Benchmark):
    """``portcv.detect.mct`` of a gray frame (uint8 in, uint16 codes out), with its GB/s of
    compulsory traffic (3 bytes per pixel) against the device's copy bandwidth."""

    params = [BACKENDS, DETECT_SIZES]
    param_names = ["backend", "size"]

    def setup(self, backend, size):
        self.op = Operation(backend, portcv.detect.mct, face_scene(size))

    def time_mct(self, backend, size):
        self.op()

    def track_bandwidth(self, backend, size):
        return self.op.bandwidth_gbs()

    track_bandwidth.unit = "GB/s"


class MCTCascadeFile(Benchmark):
    """``load_mct_cascade`` / ``save_mct_cascade`` of the bundled cascade (npz with range checks)
    and the ``MCTCascade`` constructor's checks."""

    params = [["host"]]
    param_names = ["where"]

    def setup(self, where):
        import tempfile

        self.cascade = portcv.detect.load_mct_cascade("mct_frontalface_24.npz")
        self.path = tempfile.mktemp(suffix=".npz")
        portcv.detect.save_mct_cascade(self.cascade, self.path)

    def time_load_mct_cascade(self, where):
        portcv.detect.load_mct_cascade(self.path)

    def time_save_mct_cascade(self, where):
        portcv.detect.save_mct_cascade(self.cascade, self.path)

    def time_construct_mct_cascade(self, where):
        c = self.cascade  # MCTCascade's own range and size checks and read-only copies
        portcv.detect.MCTCascade(c.positions, c.lut, c.stage_end, c.threshold, c.window, c.meta)


class TrainMCT(Benchmark):
    """``train_mct_cascade`` on the tests' tiny problem: 120 LFW faces (scikit-image, with mirrors)
    against 5 face-free sample images, 3 stages (5/10/30 positions) -- the boosting rounds and the
    negative mining with the NumPy ``MCTDetector``. The bundled cascade's full training time is in
    ``docs/detect.md``."""

    params = [["numpy"]]
    param_names = ["backend"]
    timeout = 300
    number = 1
    repeat = (1, 3, 60.0)

    def setup(self, backend):
        try:
            faces, _ = portcv.data.lfw_subset()
            self.negatives = portcv.data.skimage_negatives()[:5]
        except ImportError as exc:
            raise NotImplementedError(f"scikit-image needed: {exc}") from exc
        with portcv.using("numpy"):
            f24 = np.asarray(portcv.transform.resize(faces[:60], size=(24, 24), interpolation="bilinear_exact"))
        self.faces = np.concatenate([f24, f24[:, :, ::-1]])

    def time_train_mct_cascade(self, backend):
        portcv.detect.train_mct_cascade(self.faces, self.negatives, stage_positions=(5, 10, 30),
                                        negatives_per_stage=3000, max_rounds=(15, 25, 40), seed=3)


class FaceData(Benchmark):
    """The face data loaders of ``portcv.data``: ``lfw_subset`` and ``skimage_negatives``
    (scikit-image's files), ``csu_scrapshots`` and ``nonface_images`` (decoding from the cached
    pyvision archive; skipped when it is not cached), ``fetch_pyvision`` (the checksum of a cached
    archive), ``face_box`` (173 eye pairs to boxes), ``face_scenes`` (two composited 640x480 scenes)."""

    params = [["lfw_subset", "skimage_negatives", "csu_scrapshots", "nonface_images", "fetch_pyvision", "face_box",
               "face_scenes"]]
    param_names = ["loader"]
    number = 1

    def setup(self, loader):
        import os

        if loader not in ("lfw_subset", "skimage_negatives", "face_box") and not os.path.isfile(
                os.path.join(portcv.data.cache_dir(), portcv.data.PYVISION_ARCHIVE)):
            raise NotImplementedError("pyvision-toolkit archive not cached (portcv.data.fetch_pyvision())")
        self.fn = {"lfw_subset": portcv.data.lfw_subset, "skimage_negatives": portcv.data.skimage_negatives,
                   "csu_scrapshots": lambda: portcv.data.csu_scrapshots(download=False),
                   "nonface_images": lambda: portcv.data.nonface_images(split="test", download=False),
                   "fetch_pyvision": portcv.data.fetch_pyvision,
                   "face_box": lambda: [portcv.data.face_box((70 + k % 9, 116, 122, 114 + k % 5)) for k in range(173)],
                   "face_scenes": lambda: portcv.data.face_scenes(seed=0, count=2, download=False)}[loader]

    def time_load(self, loader):
        self.fn()
