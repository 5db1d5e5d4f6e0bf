"""`portcv faces` (the command line) and `portcv.detect.detect_video` (detection over a video)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import numpy as np
import pytest

import portcv
from portcv import cli
from portcv.detect import CascadeDetector, detect_video

cv2 = pytest.importorskip("cv2")  # the cascade files ship with OpenCV (cv2.data.haarcascades)
skdata = pytest.importorskip("skimage.data")

needs_io = pytest.mark.skipif(
    importlib.util.find_spec("av") is None or importlib.util.find_spec("imageio") is None,
    reason="image and video files need imageio and PyAV (pip install 'portcv[io]')",
)
DEFAULT = "haarcascade_frontalface_default.xml"
FAST = dict(scale_factor=1.2, min_neighbors=3, min_size=(24, 24))  # few pyramid levels: fast on NumPy


@pytest.fixture(scope="module")
def detector() -> CascadeDetector:
    return CascadeDetector.from_opencv(DEFAULT)


@pytest.fixture(scope="module")
def lbp_detector() -> CascadeDetector:
    """scikit-image's LBP face cascade: JAX compiles it in about half the time of the Haar one."""
    return CascadeDetector.from_opencv("lbpcascade_frontalface_opencv.xml")


@pytest.fixture(scope="module")
def astronaut_small() -> np.ndarray:
    """skimage's astronaut at 256x256 (RGB): one face, about 52 pixels wide."""
    with portcv.using("numpy"):
        return portcv.to_numpy(portcv.transform.resize(skdata.astronaut(), size=(256, 256)))


@pytest.fixture(scope="module")
def face_frames() -> list[np.ndarray]:
    """Three 128x128 RGB frames of the astronaut's face region moving right (JAX compiles once per size)."""
    with portcv.using("numpy"):
        face = portcv.to_numpy(portcv.transform.resize(skdata.astronaut()[0:260, 100:360], size=(128, 128)))
    return [face, np.roll(face, 5, axis=1), np.roll(face, 11, axis=1)]


@pytest.fixture(scope="module")
def files(tmp_path_factory, astronaut_small) -> dict:
    pytest.importorskip("imageio")
    pytest.importorskip("av")
    import imageio.v3 as iio

    folder = tmp_path_factory.mktemp("faces")
    image = folder / "astronaut.png"
    iio.imwrite(image, astronaut_small)
    with portcv.using("numpy"):
        face = portcv.to_numpy(portcv.transform.resize(skdata.astronaut()[0:260, 100:360], size=(160, 160)))
    clip = folder / "clip.mp4"
    portcv.video.write_video(clip, [np.roll(face, 3 * t, axis=1) for t in range(6)], fps=10)
    (folder / "notes.txt").write_text("not a picture")
    (folder / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n but not really")
    return {"image": image, "clip": clip, "folder": folder}


# --------------------------------------------------------------------------------------------
# portcv faces
# --------------------------------------------------------------------------------------------
@pytest.mark.slow
@needs_io
def test_cli_image_prints_the_face_and_writes_the_annotated_file(files, astronaut_small, detector, capsys):
    import imageio.v3 as iio

    out = files["folder"] / "annotated.png"
    assert cli.main(["faces", str(files["image"]), "--scale-factor", "1.2", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    boxes, neighbours = detector.detect(astronaut_small, scale_factor=1.2, min_neighbors=5, min_size=(30, 30))
    assert len(boxes) == 1  # the astronaut's face
    x, y, w, h = boxes[0].tolist()
    assert 70 < x < 100 and 20 < y < 45 and 45 < w < 60
    printed = [[int(v) for v in line.split()] for line in text.splitlines() if line.split()[:1] != [] and
               line.split()[0].isdigit()]
    assert printed == [[x, y, w, h, int(neighbours[0])]]  # x y w h neighbours
    assert "1 box" in text and f"wrote {out}" in text
    annotated = iio.imread(out)
    with portcv.using("numpy"):
        expected = portcv.to_numpy(portcv.draw.boxes(astronaut_small, boxes, thickness=2))
    np.testing.assert_array_equal(annotated, expected)
    assert tuple(annotated[y, x + w // 2]) == (255, 0, 0)  # the top edge is red


@needs_io
def test_cli_image_without_out_only_prints(files, capsys):
    assert cli.main(["faces", str(files["image"]), "--scale-factor", "1.2", "--min-size", "200",
                     "--cascade", DEFAULT]) == 0
    text = capsys.readouterr().out
    assert "0 boxes" in text and "wrote" not in text


@pytest.mark.slow
@needs_io
def test_cli_video_writes_every_frame_and_the_timing_table(files, detector, capsys):
    out = files["folder"] / "annotated.mp4"
    args = ["faces", str(files["clip"]), "--scale-factor", "1.2", "--min-neighbors", "3", "--out", str(out),
            "--no-progress"]
    assert cli.main(args) == 0
    text = capsys.readouterr().out
    back = portcv.video.read_video(out)
    assert back.shape == (6, 160, 160, 3)
    assert f"wrote {out} (6 frames" in text
    row = [line.split() for line in text.splitlines() if line.startswith("numpy")]
    assert len(row) == 1 and row[0][2] == "6"  # backend, device, frames, average, ...
    assert all(key in text for key in ("average", "median", "throughput"))
    assert "decoded on the CPU (PyAV)" in text  # the numpy backend: "auto" decodes on the CPU
    # The boxes drawn are detect()'s on the decoded frames (H.264 is lossy: compare red pixels).
    source = portcv.video.read_video(files["clip"])
    boxes, _ = detector.detect(source[0], scale_factor=1.2, min_neighbors=3, min_size=(30, 30))
    assert len(boxes) == 1
    x, y, w, h = boxes[0].tolist()
    top = back[0, y, x + 2 : x + w - 2].astype(int)
    assert (top[:, 0] > 180).all() and (top[:, 1] < 90).all()


@pytest.mark.slow
@needs_io
def test_cli_video_frames_limit_in_a_fresh_process(files):
    out = files["folder"] / "first3.mkv"
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    run = subprocess.run([sys.executable, "-m", "portcv", "faces", str(files["clip"]), "--frames", "3",
                          "--scale-factor", "1.3", "--out", str(out)], cwd=files["folder"], env=env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert portcv.video.read_video(out).shape == (3, 160, 160, 3)
    assert "frames" in run.stdout and "Traceback" not in run.stderr


@needs_io
@pytest.mark.parametrize("case", ["missing", "broken_image", "text_file", "unknown_cascade", "bad_cascade",
                                  "unknown_backend", "scale_factor", "min_neighbors", "thickness",
                                  "out_kind_image", "out_kind_video"])
def test_cli_errors_exit_2_naming_the_problem(files, case, capsys):
    folder = files["folder"]
    image, clip = str(files["image"]), str(files["clip"])
    args, expect = {
        "missing": ([str(folder / "nope.png")], "nope.png"),
        "broken_image": ([str(folder / "broken.png")], "broken.png"),
        "text_file": ([str(folder / "notes.txt")], "notes.txt"),
        "unknown_cascade": ([image, "--cascade", "no_such_cascade.xml"], "no_such_cascade.xml"),
        "bad_cascade": ([image, "--cascade", str(folder / "notes.txt")], "notes.txt"),
        "unknown_backend": ([image, "--backend", "no-such-backend"], "no-such-backend"),
        "scale_factor": ([image, "--scale-factor", "1.0"], "--scale-factor"),
        "min_neighbors": ([image, "--min-neighbors", "-1"], "--min-neighbors"),
        "thickness": ([image, "--thickness", "0"], "--thickness"),
        "out_kind_image": ([image, "--out", str(folder / "x.mp4")], "--out"),
        "out_kind_video": ([clip, "--out", str(folder / "x.png")], "--out"),
    }[case]
    assert cli.main(["faces", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("portcv faces: error:") and expect in err


@pytest.mark.parametrize("bad", [["--min-size", "big"], ["--frames", "0"], ["--scale-factor", "fast"]])
def test_cli_argument_syntax_errors_exit_2(bad, capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(["faces", "whatever.png", *bad])
    assert info.value.code == 2
    assert bad[0] in capsys.readouterr().err


# --------------------------------------------------------------------------------------------
# detect_video
# --------------------------------------------------------------------------------------------
def test_detect_video_equals_detect_frame_by_frame(backend, lbp_detector, face_frames):
    with portcv.using(backend):
        expected = [lbp_detector.detect(f, **FAST) for f in face_frames]
        assert any(len(boxes) for boxes, _ in expected)  # the face is found: the comparison has content
        for streams in (True, False) if backend == "cupy" else (True,):  # elsewhere `streams` changes nothing
            run = detect_video(lbp_detector, iter(face_frames), streams=streams, **FAST)
            assert isinstance(run, portcv.detect.VideoDetections)
            got = list(run)
            assert [i for i, _, _ in got] == [0, 1, 2]
            for (_, boxes, neighbours), (eb, en) in zip(got, expected):
                assert boxes.dtype == np.int32 and neighbours.dtype == np.int32
                np.testing.assert_array_equal(boxes, eb)
                np.testing.assert_array_equal(neighbours, en)
            assert run.overlapped == (streams and backend == "cupy")
            assert len(run.seconds) == 3 and all(s > 0 for s in run.seconds)
            stats = run.statistics()
            assert stats["pairs"] == 3 and stats["throughput"] > 0
        # One array, on the host or already on the device: the same results.
        stack = np.stack(face_frames)
        for frames in (stack, portcv.asarray(stack)):
            got = list(detect_video(lbp_detector, frames, **FAST))
            for (_, boxes, neighbours), (eb, en) in zip(got, expected, strict=True):
                np.testing.assert_array_equal(boxes, eb)
                np.testing.assert_array_equal(neighbours, en)


def test_detect_video_frames_of_changing_size_and_gray(backend, lbp_detector, face_frames):
    if backend == "jax":
        pytest.skip("JAX compiles per frame size (seconds each); the streams bookkeeping this checks is CuPy's")
    gray = portcv.to_numpy(portcv.color.rgb_to_gray(face_frames[0]))
    frames = [face_frames[0], gray, face_frames[1][:80, :90], face_frames[2], np.zeros((20, 20), np.uint8)]
    with portcv.using(backend):
        expected = [lbp_detector.detect(f, **FAST) for f in frames]
        got = list(detect_video(lbp_detector, frames, **FAST))
    assert len(got) == len(frames)
    for (_, boxes, neighbours), (eb, en) in zip(got, expected):
        np.testing.assert_array_equal(boxes, eb)
        np.testing.assert_array_equal(neighbours, en)


def test_detect_video_is_lazy_and_runs_on_its_own_backend(lbp_detector, face_frames):
    pulled = []

    def source():
        for f in face_frames:
            pulled.append(len(pulled))
            yield f

    with portcv.using("numpy"):
        run = detect_video(lbp_detector, source(), **FAST)
    assert pulled == [] and run.backend == "numpy"
    first = next(run)  # iterated outside the `using` block: still NumPy
    assert first[0] == 0 and len(pulled) <= 2
    assert len(list(run)) == 2
    with pytest.raises(StopIteration):
        next(run)


def test_detect_video_rejects_bad_arguments(lbp_detector):
    frames = np.zeros((2, 32, 32), np.uint8)
    with pytest.raises(TypeError, match="detector"):
        detect_video("haarcascade_frontalface_default.xml", frames)
    with pytest.raises(TypeError, match="unknown keyword"):
        detect_video(lbp_detector, frames, scalefactor=1.2)
    with pytest.raises(ValueError, match="scale_factor"):
        detect_video(lbp_detector, frames, scale_factor=1.0)  # checked now, not at the first frame
    with pytest.raises(ValueError, match="min_size"):
        detect_video(lbp_detector, frames, min_size=30)
    with pytest.raises(TypeError, match="streams"):
        detect_video(lbp_detector, frames, streams="yes")
    with pytest.raises(TypeError, match="frames"):
        detect_video(lbp_detector, 5)
    with pytest.raises(TypeError, match="frames"):
        detect_video(lbp_detector, "clip.mp4")
    with pytest.raises(ValueError, match="frames"):
        detect_video(lbp_detector, np.zeros((32, 32), np.uint8))
    with pytest.raises(ValueError, match="no frames"):
        detect_video(lbp_detector, frames).statistics()
    bad = detect_video(lbp_detector, [np.zeros((32, 32), np.float32)])
    with pytest.raises(TypeError, match="uint8"):
        next(bad)  # a frame detect() refuses: its own error, at that frame


def test_detect_video_stream_schedule_with_a_stand_in_for_cupy(monkeypatch, face_frames):
    """The CuPy schedule (CI has no GPU): a stand-in ``cupy`` logs every stream operation.

    Frame ``t + 1``'s upload must be enqueued before frame ``t`` is detected; a detection waits
    for its frame's upload event; a device buffer is overwritten only after the copy stream has
    waited for the detection that read it; a pinned buffer is refilled only after its last upload.
    """
    import types

    log: list[tuple] = []
    counter = iter(range(10**6))

    class Event:
        def __init__(self, disable_timing=False):
            self.id = next(counter)

        def record(self, stream=None):
            log.append(("record", self.id, stream.name if stream is not None else "caller"))

        def synchronize(self):
            log.append(("host_waits", self.id))

    class Stream:
        def __init__(self, non_blocking=False):
            self.name = f"stream{next(counter)}"

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return None

        def wait_event(self, event):
            log.append(("wait", self.name, event.id))

        def synchronize(self):
            pass

    class Device(np.ndarray):
        def set(self, array, stream=None):
            assert stream is not None and array.flags.c_contiguous
            self[...] = array
            log.append(("upload", stream.name, self.ctypes.data))

    fake_cupy = types.SimpleNamespace(
        ndarray=type("NoCupyArray", (), {}), cuda=types.SimpleNamespace(Stream=Stream, Event=Event),
        empty=lambda shape, dtype: np.empty(shape, dtype).view(Device))
    fake_cupyx = types.SimpleNamespace(empty_pinned=lambda shape, dtype: np.empty(shape, dtype))
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy)
    monkeypatch.setitem(sys.modules, "cupyx", fake_cupyx)

    det = CascadeDetector.from_opencv("lbpcascade_frontalface_opencv.xml")
    frames = [face_frames[t % 3] for t in range(5)]
    with portcv.using("numpy"):
        expected = [det.detect(f, **FAST) for f in frames]
    real_detect = det.detect

    def detect(image, **kwargs):
        log.append(("detect", image.ctypes.data))
        return real_detect(np.asarray(image), **kwargs)

    monkeypatch.setattr(det, "detect", detect)
    with portcv.using("numpy"):
        run = detect_video(det, frames, **FAST)
        log.clear()  # detect_video's check of the options (a 1x1 probe) is no frame
        run._run = run._overlapped()  # the CuPy path, on the stand-in
        got = list(run)
    for (_, boxes, neighbours), (eb, en) in zip(got, expected, strict=True):
        np.testing.assert_array_equal(boxes, eb)
        np.testing.assert_array_equal(neighbours, en)

    uploads = [i for i, e in enumerate(log) if e[0] == "upload"]
    detects = [i for i, e in enumerate(log) if e[0] == "detect"]
    assert len(uploads) == len(detects) == 5
    copy_stream = log[uploads[0]][1]
    buffers = [log[i][2] for i in uploads]
    assert buffers[0] != buffers[1] and buffers[2:] == [buffers[0], buffers[1], buffers[0]]  # two slots
    for t in range(5):
        assert log[detects[t]][1] == buffers[t]  # frame t is detected from the buffer it was uploaded to
        if t + 1 < 5:
            assert uploads[t + 1] < detects[t]  # the next upload is already queued: the overlap
        uploaded = log[uploads[t] + 1]
        assert uploaded[0] == "record" and uploaded[2] == copy_stream
        waits = [e for e in log[detects[t - 1] if t else 0 : detects[t]] if e[0] == "wait" and e[1] != copy_stream]
        assert ("wait", waits[-1][1], uploaded[1]) == waits[-1]  # the compute stream waits for that upload
        if t >= 2:  # slot reuse: the detection of frame t - 2 read it
            consumed = log[detects[t - 2] + 1]
            assert consumed[0] == "record" and consumed[2] != copy_stream
            before = log[detects[t - 2] : uploads[t]]
            assert ("wait", copy_stream, consumed[1]) in before
            assert ("host_waits", log[uploads[t - 2] + 1][1]) in before
