"""portcv.video's colour on the CPU: OpenCV's BT.601 conversion of the decoded 4:2:0 planes.

The CPU reader decodes each frame to its planes (PyAV's ``yuv420p``, no conversion) and converts
them with :func:`portcv.color.i420_to_rgb`, the arithmetic the GPU path applies to NVDEC's NV12
(``test_gpu_decode.py`` checks the two decoders' colour against each other). Checked here on
clips written by the tests, against ``cv2.cvtColor(planes, cv2.COLOR_YUV2RGB_I420)`` of PyAV's
own planes; the layouts that conversion does not define (other chroma, 10-bit, odd sizes) are
FFmpeg's ``rgb24``, documented as such.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import portcv
from portcv.video import VideoReader, frame_table, iter_frames, read_video

from .test_gpu_decode import write_clip

pytestmark = pytest.mark.skipif(importlib.util.find_spec("av") is None,
                                reason="video files need PyAV (pip install 'portcv[io]')")


def pyav_frames(path):
    """Every frame of ``path`` as PyAV decodes it: (format name, packed planes, FFmpeg's rgb24)."""
    import av

    def planes(f):
        if f.format.name in ("yuv420p", "yuvj420p") and f.width % 2 == 0 and f.height % 2 == 0:
            return f.to_ndarray()  # (3H/2, W): Y, then the U and V planes packed row after row
        return None  # a layout cv2.cvtColor's I420 codes do not take

    with av.open(str(path)) as container:
        return [(f.format.name, planes(f), f.to_ndarray(format="rgb24")) for f in container.decode(video=0)]


#: (name, codec, pix_fmt, (frames, height, width), encoder options): 8-bit 4:2:0 at even sizes.
PORTABLE = [
    ("h264-gop8-b2", "libx264", "yuv420p", (23, 48, 64), {"g": "8", "bf": "2"}),
    ("h264-66x50", "libx264", "yuv420p", (7, 50, 66), {}),  # W/2 odd: a U row ends mid-row in the packing
    ("mpeg4-48x64", "mpeg4", "yuv420p", (7, 48, 64), {}),
    ("h264-full-range", "libx264", "yuvj420p", (7, 48, 64), {}),  # the same planes, tagged full range
]

#: Layouts OpenCV's conversion does not define: FFmpeg's rgb24 (NVDEC does not take them in colour).
FALLBACK = [
    ("mpeg4-47x63", "mpeg4", "yuv420p", (5, 47, 63)),
    ("h264-yuv444p", "libx264", "yuv444p", (5, 48, 64)),
    ("h264-yuv422p", "libx264", "yuv422p", (5, 48, 64)),
    ("h264-10bit", "libx264", "yuv420p10le", (5, 48, 64)),
]


def _clip(tmp_path_factory, name, codec, pix_fmt, shape, options=None):
    import av

    if codec not in av.codecs_available:
        pytest.skip(f"PyAV here cannot encode {codec}")
    frames = portcv.data.moving_shapes(*shape, seed=7)
    return write_clip(tmp_path_factory.mktemp("colour") / f"{name}.mp4", frames, codec=codec,
                      options=options, pix_fmt=pix_fmt)


@pytest.fixture(scope="module", params=PORTABLE, ids=[c[0] for c in PORTABLE])
def portable_clip(request, tmp_path_factory):
    name, codec, pix_fmt, shape, options = request.param
    return _clip(tmp_path_factory, name, codec, pix_fmt, shape, options), pix_fmt


@pytest.fixture(scope="module", params=FALLBACK, ids=[c[0] for c in FALLBACK])
def fallback_clip(request, tmp_path_factory):
    name, codec, pix_fmt, shape = request.param
    return _clip(tmp_path_factory, name, codec, pix_fmt, shape), pix_fmt


def test_cpu_colour_is_opencv_on_the_decoded_planes(portable_clip, backend):
    cv2 = pytest.importorskip("cv2")
    path, pix_fmt = portable_clip
    decoded = pyav_frames(path)
    assert {name for name, _, _ in decoded} == {pix_fmt}
    with portcv.using(backend):  # CPU frames are NumPy arrays, whatever backend is active
        video = read_video(path, device="cpu")
    assert isinstance(video, np.ndarray) and video.dtype == np.uint8 and len(video) == len(decoded)
    for k, (_, planes, _) in enumerate(decoded):
        np.testing.assert_array_equal(video[k], cv2.cvtColor(planes, cv2.COLOR_YUV2RGB_I420), err_msg=f"frame {k}")
        np.testing.assert_array_equal(video[k], portcv.to_numpy(portcv.color.i420_to_rgb(planes)))
    # not FFmpeg's conversion of the same planes (whose arithmetic, and range handling, differ)
    assert (video != np.stack([rgb for _, _, rgb in decoded])).any()


def test_colour_with_start_stop_and_seeks_is_the_whole_decodes(portable_clip):
    path, _ = portable_clip
    whole = read_video(path, device="cpu")
    last = len(whole) - 1
    np.testing.assert_array_equal(read_video(path, start=2, stop=last, device="cpu"), whole[2:last])
    with VideoReader(path, device="cpu") as reader:
        for index in (last, 1, 4):
            reader.seek(index)
            np.testing.assert_array_equal(next(reader), whole[index], err_msg=f"frame {index}")


def test_gray_stays_the_y_plane(portable_clip):
    path, _ = portable_clip
    decoded = pyav_frames(path)
    gray = read_video(path, gray=True, device="cpu")
    height = gray.shape[1]
    np.testing.assert_array_equal(gray, np.stack([planes[:height] for _, planes, _ in decoded]))


def test_other_layouts_and_odd_sizes_are_ffmpegs_rgb24(fallback_clip):
    path, pix_fmt = fallback_clip
    decoded = pyav_frames(path)
    assert {name for name, _, _ in decoded} == {pix_fmt}
    video = read_video(path, device="cpu")
    np.testing.assert_array_equal(video, np.stack([rgb for _, _, rgb in decoded]))
    gray = read_video(path, gray=True, device="cpu")
    assert gray.shape == video.shape[:3] and gray.dtype == np.uint8


def test_threads_and_a_known_frame_table_give_the_same_frames(portable_clip):
    path, _ = portable_clip
    whole = read_video(path, device="cpu")
    table = frame_table(path)
    one = VideoReader(path, start=3, device="cpu", threads=1, table=table)
    assert one.threads == 1
    np.testing.assert_array_equal(np.stack(list(one)), whole[3:])
    with VideoReader(path, device="cpu", table=(list(table[0]), list(table[1]))) as reader:
        reader.seek(len(whole) - 1)
        np.testing.assert_array_equal(next(reader), whole[-1])


@pytest.mark.parametrize("kwargs, error, match", [
    ({"threads": -1}, ValueError, "threads must be in"), ({"threads": 1.5}, TypeError, "threads must be an integer"),
    ({"table": "frames"}, TypeError, "table must be frame_table"), ({"table": ([0], [0], [0])}, TypeError, "table"),
    ({"table": ([0.5], [0])}, TypeError, "table must hold integers"),
])
def test_bad_threads_and_tables(portable_clip, kwargs, error, match):
    path, _ = portable_clip
    with pytest.raises(error, match=match):
        VideoReader(path, device="cpu", **kwargs)

