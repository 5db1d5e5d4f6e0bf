"""portcv.video.VideoWriter: the streaming writer behind write_video and ``portcv stream view --out``.

Round trips through PyAV are lossy (H.264 / MPEG-4), so pictures are compared by their mean
error; shapes, counts, frame rates and errors are exact. Skipped without imageio and PyAV.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import portcv
from portcv.video import VideoError, VideoWriter, read_video
from portcv.video._io import video_fps

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("av") is None or importlib.util.find_spec("imageio") is None,
    reason="video files need imageio and PyAV (pip install 'portcv[io]')",
)


@pytest.fixture(scope="module")
def clip():
    return portcv.data.moving_shapes(6, 48, 64, seed=3)


def test_writer_streams_frames_from_any_backend(tmp_path, clip, backend):
    path = tmp_path / "sub" / "clip.mp4"  # the folder is created
    with portcv.using(backend):
        frames = [portcv.asarray(f) for f in clip]
    with VideoWriter(path, fps=12) as out:
        assert out.count == 0 and not path.exists()  # nothing is opened before the first frame
        for k, frame in enumerate(frames, 1):
            out.write(frame)
            assert out.count == k
    back = read_video(path)
    assert back.shape == clip.shape and back.dtype == np.uint8
    assert np.abs(back.astype(int) - clip).mean() < 12
    assert video_fps(path) == 12 and out.fps == 12.0


@pytest.mark.slow
def test_writer_expands_gray_frames_to_rgb(tmp_path, clip):
    gray = portcv.to_numpy(portcv.color.rgb_to_gray(clip))
    path = tmp_path / "gray.mp4"
    with VideoWriter(path) as out:
        for frame in gray:
            out.write(frame)
    back = read_video(path).astype(int)
    assert back.shape == gray.shape + (3,)
    assert np.abs(back - gray[..., None]).mean() < 12
    assert np.abs(back[..., 0] - back[..., 1]).max() <= 8  # gray in, gray out (chroma rounding only)


@pytest.mark.slow
def test_writer_odd_sizes_and_explicit_codec(tmp_path, clip):
    odd = tmp_path / "odd.mp4"  # H.264 needs even sizes: the default falls back to MPEG-4
    with VideoWriter(odd) as out:
        for frame in clip[:3, :47, :63]:
            out.write(frame)
    assert read_video(odd).shape == (3, 47, 63, 3)
    named = tmp_path / "mpeg4.mp4"
    with VideoWriter(named, codec="mpeg4") as out:
        out.write(clip[0])
    assert out.codec == "mpeg4" and read_video(named).shape == (1, 48, 64, 3)


@pytest.mark.slow
def test_writer_rejects_bad_frames_and_arguments(tmp_path, clip):
    with pytest.raises(ValueError, match="fps must be > 0"):
        VideoWriter(tmp_path / "x.mp4", fps=0)
    with pytest.raises(TypeError, match="fps"):
        VideoWriter(tmp_path / "x.mp4", fps="30")
    path = tmp_path / "bad.mp4"
    with VideoWriter(path) as out:
        with pytest.raises(ValueError, match="uint8"):
            out.write(clip[0].astype(np.float32))
        with pytest.raises(ValueError, match=r"\(H, W, 3\) or \(H, W\)"):
            out.write(np.zeros((48, 64, 4), np.uint8))
        out.write(clip[0])
        with pytest.raises(ValueError, match=r"every frame must have shape \(48, 64, 3\)"):
            out.write(clip[1, :32])
        out.write(clip[1])  # the writer still works after a rejected frame
    assert out.count == 2 and read_video(path).shape == (2, 48, 64, 3)


@pytest.mark.slow
def test_writer_close_is_idempotent_and_errors_are_video_errors(tmp_path, clip):
    out = VideoWriter(tmp_path / "never.mp4")
    out.close()  # nothing written: nothing to flush, no file
    assert not (tmp_path / "never.mp4").exists()
    out = VideoWriter(tmp_path / "twice.mp4")
    out.write(clip[0])
    out.close()
    out.close()
    with pytest.raises(VideoError, match="cannot write video"):  # no container for this extension
        with VideoWriter(tmp_path / "clip.notavideo") as bad:
            bad.write(clip[0])
    assert issubclass(VideoError, ValueError)


@pytest.mark.slow
def test_writer_abandons_the_file_on_an_exception(tmp_path, clip):
    """An interrupted write leaves the file that was there as it was, and nothing else (the
    writer wrote straight into the file: it was truncated at the first frame)."""
    path = tmp_path / "abandoned.mp4"
    path.write_bytes(b"the previous take")
    with pytest.raises(RuntimeError, match="stop"):
        with VideoWriter(path) as out:
            out.write(clip[0])
            assert path.read_bytes() == b"the previous take"  # the new file is written aside
            raise RuntimeError("stop")
    assert path.read_bytes() == b"the previous take"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["abandoned.mp4"]


def test_writer_replaces_a_file_only_once_complete(tmp_path, clip):
    path = tmp_path / "take.mp4"
    path.write_bytes(b"the previous take")
    with VideoWriter(path, fps=10) as out:
        for frame in clip[:3]:
            out.write(frame)
        assert path.read_bytes() == b"the previous take"
    assert read_video(path).shape == (3,) + clip.shape[1:]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["take.mp4"]


@pytest.mark.parametrize("call, error, message", [
    (lambda: portcv.video.fps_statistics(None), TypeError, "seconds must be an iterable of numbers, got NoneType"),
    (lambda: portcv.video.fps_statistics(["a"]), TypeError, "seconds must hold numbers, got str"),
    (lambda: portcv.video.read_video(None), TypeError, "path must be a file path"),
    (lambda: portcv.video.iter_frames(None), TypeError, "path must be a file path"),  # at the call, not at next()
    (lambda: portcv.data.synthetic_rgb(seed=float("nan")), TypeError, "seed must be an integer"),
    (lambda: portcv.data.synthetic_rgb(seed="0"), TypeError, "seed must be an integer"),
    (lambda: portcv.data.synthetic_rgb(10**12, 64), ValueError, r"height must be in \[1, 2147483647\]"),
    (lambda: portcv.data.moving_shapes(10**12, 48, 64), ValueError, r"frames must be in \[1, 2147483647\]"),
    (lambda: portcv.data.moving_shapes(5000, 5000, 5000), ValueError, "frames, height, width: the requested shape"),
    # PyAV's OverflowError mid-write before; the file's folder is not touched
    (lambda: portcv.video.VideoWriter("/nonexistent/x.mp4", fps=1e12), ValueError, "fps must be <= 1000000.0"),
    (lambda: portcv.video.VideoWriter("/nonexistent/x.mp4", codec=264), TypeError, "codec must be an FFmpeg encoder"),
    (lambda: portcv.video.run_motion([], backend="numpy", detector={"t_low": 1, "t_high": 2}, warmup="no"),
     TypeError, "warmup must be a bool"),
    (lambda: portcv.video.run_motion([], backend="numpy", detector=None), TypeError, "detector must be a dict"),
    (lambda: portcv.video.run_motion([], backend="numpy", detector={"t_low": 1, "t_high": 2}, on_result=3),
     TypeError, "on_result must be a function"),
])
def test_bad_arguments_get_clear_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()
