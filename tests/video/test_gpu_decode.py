"""portcv.video's decoder choice: ``device="cpu" | "gpu" | "auto"``, frame indices, ownership, errors.

CPU CI has no NVDEC, so most of these run the GPU path against a stub of PyNvVideoCodec put
into ``sys.modules``: its demuxer and decoder hand out NV12 frames made from PyAV's own decode
of a clip written here (so the GPU path's frames, order, start/stop and seeking are checked
against the CPU path's), through DLPack, into the numpy and jax backends (made to pass for GPU
backends). Its decoder writes every frame into one buffer it reuses, as a real decoder reuses
its surfaces: a frame the caller holds must not change. The tests at the end run NVDEC itself,
where PyNvVideoCodec, a GPU and CuPy exist (skipped with the reason elsewhere).
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import types
from fractions import Fraction

import numpy as np
import pytest

import portcv
from portcv.video import VideoError, VideoReader, iter_frames, read_video
from portcv.video import _nvdec

pytestmark = pytest.mark.skipif(importlib.util.find_spec("av") is None,
                                reason="video files need PyAV (pip install 'portcv[io]')")


# ------------------------------------------------------------------------------------------
# Clips and the planes PyAV decodes from them
# ------------------------------------------------------------------------------------------
def write_clip(path, frames, *, codec="libx264", options=None, pix_fmt="yuv420p"):
    """Encode RGB ``frames`` with PyAV (``options``: the encoder's, e.g. its GOP), in ``pix_fmt``."""
    import av

    with av.open(str(path), "w") as container:
        stream = container.add_stream(codec, rate=Fraction(25))
        stream.width, stream.height = frames.shape[2], frames.shape[1]
        stream.pix_fmt = pix_fmt
        stream.options = dict(options or {})
        for k, frame in enumerate(frames):
            picture = av.VideoFrame.from_ndarray(np.ascontiguousarray(frame), format="rgb24")
            picture.pts = k
            for packet in stream.encode(picture):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return path


def pyav_nv12(path):
    """Every frame of ``path`` as PyAV decodes it, laid out as NV12 ``(H * 3 / 2, W)`` uint8."""
    import av

    out = []
    with av.open(str(path)) as container:
        for frame in container.decode(video=0):
            y, u, v = (_plane(frame.planes[i]) for i in range(3))
            uv = np.empty((u.shape[0], 2 * u.shape[1]), np.uint8)
            uv[:, 0::2], uv[:, 1::2] = u, v
            out.append(np.concatenate([y, uv[:, : y.shape[1]]]))
    return out


def _plane(plane):
    rows = np.frombuffer(plane, np.uint8).reshape(plane.height, plane.line_size)
    return rows[:, : plane.width].copy()


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    """An H.264 clip of 23 frames with B-frames and a keyframe every 8 (seeks land mid-GOP)."""
    frames = portcv.data.moving_shapes(23, 48, 64, seed=5)
    return write_clip(tmp_path_factory.mktemp("gpu") / "clip.mp4", frames, options={"g": "8", "bf": "2"})


@pytest.fixture(scope="module")
def planes(clip):
    return pyav_nv12(clip)


# ------------------------------------------------------------------------------------------
# The stub of PyNvVideoCodec
# ------------------------------------------------------------------------------------------
class PyNvVCExceptionUnsupported(Exception):
    pass


class PyNvVCExceptionCuda(Exception):
    pass


class StubFrame:
    """A decoded surface: NV12 in the decoder's one buffer, exported through DLPack."""

    format = "Pixel_Format.NV12"

    def __init__(self, buffer):
        self._buffer = buffer

    def __dlpack__(self, **kwargs):
        return self._buffer.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._buffer.__dlpack_device__()


class StubDemuxer:
    def __init__(self, filename, codec):
        self.frames = pyav_nv12(filename)
        self.codec = codec

    def GetNvCodecId(self):
        return f"cudaVideoCodec.{self.codec}"

    def Height(self):
        return 2 * len(self.frames[0]) // 3

    def Width(self):
        return self.frames[0].shape[1]

    def __iter__(self):
        yield from range(len(self.frames))
        yield None  # the end of the stream: flushes the decoder


class StubDecoder:
    """One frame of latency (as with B-frames), every frame written into one reused buffer: host
    memory for host backends, CuPy memory for GPU backends (DLPack does not cross devices)."""

    def __init__(self, stub, codec):
        self.stub, self.held, self.buffer = stub, None, None
        self.codec = codec
        self.xp = np
        if not portcv.backends.get(stub.backend).runs_on_host:
            self.xp = pytest.importorskip("cupy")

    def Decode(self, packet):
        self.stub.decode_calls += 1
        demuxer = self.stub.demuxer
        ready, self.held = self.held, packet
        if ready is None:
            return []
        nv12 = self.xp.asarray(demuxer.frames[ready])
        if self.buffer is None:
            self.buffer = self.xp.empty_like(nv12)
        self.buffer[...] = nv12
        return [StubFrame(self.buffer)]


def make_stub(*, unsupported=(), no_gpu=False, codec="H264", backend="numpy"):
    stub = types.ModuleType("PyNvVideoCodec")
    stub.decode_calls, stub.backend = 0, backend
    stub.PyNvVCExceptionUnsupported = PyNvVCExceptionUnsupported
    stub.PyNvVCExceptionCuda = PyNvVCExceptionCuda

    def CreateDemuxer(filename):
        stub.demuxer = StubDemuxer(filename, codec)
        return stub.demuxer

    def CreateDecoder(gpuid, codec, cudacontext, cudastream, usedevicememory):
        assert usedevicememory
        if no_gpu:
            raise PyNvVCExceptionCuda("cuInit failed: no CUDA-capable device is detected")
        if any(name in codec for name in unsupported):
            raise PyNvVCExceptionUnsupported(f"Codec {codec} not supported on this GPU")
        return StubDecoder(stub, codec)

    stub.CreateDemuxer, stub.CreateDecoder = CreateDemuxer, CreateDecoder
    return stub


@pytest.fixture
def gpu(monkeypatch, backend):
    """The stub installed and ``backend`` taken for a GPU backend: yields the stub."""
    stub = make_stub(backend=backend)
    monkeypatch.setitem(sys.modules, "PyNvVideoCodec", stub)
    monkeypatch.setattr(_nvdec, "is_gpu_backend", lambda active: True)
    with portcv.using(backend):
        yield stub


def host(frames):
    return [portcv.to_numpy(f) for f in frames]


# ------------------------------------------------------------------------------------------
# The GPU path (stubbed) against the CPU path
# ------------------------------------------------------------------------------------------
def test_gpu_gray_frames_are_the_y_planes_of_the_cpu_decode(clip, planes, gpu, backend):
    cpu = read_video(clip, gray=True, device="cpu")
    assert isinstance(cpu, np.ndarray) and cpu.shape == (23, 48, 64)
    np.testing.assert_array_equal(cpu, np.stack([p[:48] for p in planes]))  # gray is the Y plane itself
    reader = iter_frames(clip, gray=True, device="gpu")
    frames = list(reader)
    assert reader.decoder == "gpu" and len(frames) == 23
    assert all(portcv.backends.get(backend).owns(f) for f in frames)  # arrays of the active backend
    np.testing.assert_array_equal(np.stack(host(frames)), cpu)
    video = read_video(clip, gray=True, device="gpu")
    assert portcv.backends.get(backend).owns(video)
    np.testing.assert_array_equal(portcv.to_numpy(video), cpu)


def test_frames_handed_out_are_owned(clip, planes, gpu):
    """The stub rewrites one buffer at every Decode: a frame kept by the caller must not change."""
    kept = list(iter_frames(clip, gray=True, device="gpu"))  # every frame held until the end
    assert gpu.decode_calls == 24  # 23 packets and the flush
    for frame, nv12 in zip(kept, planes):
        np.testing.assert_array_equal(portcv.to_numpy(frame), nv12[:48])
    assert len({portcv.to_numpy(f).tobytes() for f in kept}) > 1  # the clip moves: distinct frames


@pytest.mark.parametrize("start, stop", [(0, 5), (5, 13), (9, None), (22, None), (3, 40)])
def test_start_stop_are_frame_indices_as_on_the_cpu(clip, gpu, start, stop):
    cpu = read_video(clip, start=start, stop=stop, gray=True, device="cpu")
    whole = read_video(clip, gray=True, device="cpu")
    np.testing.assert_array_equal(cpu, whole[start:stop])  # the CPU path's keyframe seek
    got = read_video(clip, start=start, stop=stop, gray=True, device="gpu")
    np.testing.assert_array_equal(portcv.to_numpy(got), cpu)
    counted = read_video(clip, start=start, frames=3, gray=True, device="gpu")
    np.testing.assert_array_equal(portcv.to_numpy(counted), whole[start:start + 3])


def test_seek_moves_both_decoders_to_the_same_frame(clip, gpu):
    whole = read_video(clip, gray=True, device="cpu")
    for device in ("cpu", "gpu"):
        with VideoReader(clip, gray=True, device=device) as reader:
            got = []
            for index in (17, 4, 4, 12, 0, 22):  # backwards, repeated, forwards, the last frame
                reader.seek(index)
                got.append(portcv.to_numpy(next(reader)))
                assert reader.position == index + 1
            with pytest.raises(StopIteration):  # frame 22 was the last
                next(reader)
            reader.seek(1)
            got.append(portcv.to_numpy(next(reader)))
            got.append(portcv.to_numpy(next(reader)))  # reading on after a seek
            assert reader.position == 3
        np.testing.assert_array_equal(np.stack(got), whole[[17, 4, 4, 12, 0, 22, 1, 2]], err_msg=device)


def test_seek_stays_inside_start_and_stop(clip):
    with VideoReader(clip, start=3, stop=9, device="cpu") as reader:
        with pytest.raises(ValueError, match=r"index must be in \[3, 8\]"):
            reader.seek(9)
        with pytest.raises(ValueError, match="index"):
            reader.seek(2)
        reader.seek(8)
        assert next(reader).shape == (48, 64, 3)
        with pytest.raises(StopIteration):
            next(reader)


def test_gpu_colour_is_nv12_to_rgb_of_the_decoded_planes(clip, planes, gpu):
    convert = getattr(portcv.color, "nv12_to_rgb", None)
    if convert is None:  # the kernel lands on its own branch: until then the error says what is missing
        with pytest.raises(VideoError, match="colour GPU decode needs portcv.color.nv12_to_rgb"):
            read_video(clip, device="gpu")
        reader = iter_frames(clip, device="auto")  # auto falls back to the CPU's colour
        assert next(reader).shape == (48, 64, 3) and reader.decoder == "cpu"
        return
    got = host(iter_frames(clip, start=2, stop=9, device="gpu"))
    expected = [portcv.to_numpy(convert(p)) for p in planes[2:9]]
    np.testing.assert_array_equal(np.stack(got), np.stack(expected))
    cv2 = pytest.importorskip("cv2")
    np.testing.assert_array_equal(got[0], cv2.cvtColor(planes[2], cv2.COLOR_YUV2RGB_NV12))


def test_gpu_colour_equals_the_cpu_colour_frame_for_frame(clip, gpu, backend):
    """One colour conversion on both decoders (OpenCV's BT.601 of the decoded planes): NVDEC's
    NV12 and PyAV's I420 hold the same samples, so the RGB frames are the same bits."""
    if not hasattr(portcv.color, "nv12_to_rgb"):
        pytest.skip("colour GPU decode needs portcv.color.nv12_to_rgb")
    cpu = read_video(clip, device="cpu")
    assert isinstance(cpu, np.ndarray) and cpu.shape == (23, 48, 64, 3)
    reader = iter_frames(clip, device="gpu")
    frames = list(reader)
    assert reader.decoder == "gpu" and all(portcv.backends.get(backend).owns(f) for f in frames)
    for k, frame in enumerate(host(frames)):
        np.testing.assert_array_equal(frame, cpu[k], err_msg=f"frame {k}")
    auto = VideoReader(clip)  # a GPU backend with the extra: auto runs NVDEC, the same bits
    np.testing.assert_array_equal(np.stack(host(auto)), cpu)
    assert auto.decoder == "gpu"
    np.testing.assert_array_equal(portcv.to_numpy(read_video(clip, start=9, stop=17, device="gpu")), cpu[9:17])
    with VideoReader(clip, device="gpu") as seeking:
        for index in (14, 3, 22):
            seeking.seek(index)
            np.testing.assert_array_equal(portcv.to_numpy(next(seeking)), cpu[index], err_msg=f"frame {index}")


def test_odd_sizes_are_read_on_the_cpu(tmp_path, gpu):
    """NVDEC crops or pads the surfaces of odd-sized streams to even sizes (47 x 63 MPEG-4 decodes
    to 46 x 64 on the H200): it refuses them, in gray and colour, and auto reads the CPU's."""
    path = tmp_path / "odd.mp4"
    portcv.video.write_video(path, portcv.data.moving_shapes(5, 47, 63, seed=4))  # MPEG-4: odd sizes
    cpu, cpu_gray = read_video(path, device="cpu"), read_video(path, gray=True, device="cpu")
    assert cpu.shape == (5, 47, 63, 3)
    for gray in (False, True):
        with pytest.raises(VideoError, match=r"odd.mp4' on the GPU: its frames are 63 x 47, and NVDEC decodes "
                                             r"only even widths and heights exactly; use device='cpu'"):
            read_video(path, gray=gray, device="gpu")
    assert gpu.decode_calls == 0  # refused from the stream's header, before any decode
    reader = VideoReader(path)  # auto: NVDEC is tried, then the CPU decodes
    np.testing.assert_array_equal(np.stack(host(reader)), cpu)
    assert reader.decoder == "cpu"
    np.testing.assert_array_equal(portcv.to_numpy(read_video(path, gray=True)), cpu_gray)


def test_a_demuxer_without_the_size_still_refuses_odd_colour(tmp_path, gpu, monkeypatch):
    path = tmp_path / "odd.mp4"
    portcv.video.write_video(path, portcv.data.moving_shapes(5, 47, 63, seed=4))
    monkeypatch.delattr(StubDemuxer, "Height")
    with pytest.raises(VideoError, match=r"odd.mp4' in colour on the GPU: its frames have an odd width or "
                                         r"height \(an NV12 surface of shape \(71, 63\)\); use device='cpu'"):
        read_video(path, device="gpu")


def test_a_surface_of_another_size_than_the_stream_is_an_error(clip, gpu, monkeypatch):
    """Rows NVDEC drops or adds are never handed out as the frame."""
    monkeypatch.setattr(StubDemuxer, "Height", lambda self: 50)
    with pytest.raises(VideoError, match=r"clip.mp4' on the GPU: NVDEC returned a 64 x 48 frame of a 64 x 50 "
                                         r"stream; use device='cpu'"):
        read_video(clip, gray=True, device="gpu")


def test_surfaces_that_are_not_nv12_are_read_on_the_cpu(clip, gpu, monkeypatch):
    """4:4:4 or 10-bit surfaces (NVDEC's YUV444, P016): portcv reads NV12 on the GPU, the CPU the rest."""
    monkeypatch.setattr(StubFrame, "format", "Pixel_Format.YUV444")
    with pytest.raises(VideoError, match=r"NVDEC returned Pixel_Format.YUV444 frames; portcv reads 8-bit "
                                         r"4:2:0 video \(NV12\) there; use device='cpu'"):
        read_video(clip, gray=True, device="gpu")
    reader = VideoReader(clip, start=4, stop=9)
    np.testing.assert_array_equal(np.stack(host(reader)), read_video(clip, device="cpu")[4:9])
    assert reader.decoder == "cpu"


def test_auto_picks_the_gpu_only_on_a_gpu_backend_with_the_extra(clip, monkeypatch, backend):
    monkeypatch.setitem(sys.modules, "PyNvVideoCodec", make_stub(backend=backend))
    on_gpu = not portcv.backends.get(backend).runs_on_host
    with portcv.using(backend):
        reader = VideoReader(clip, gray=True)
        assert reader.device == "auto" and reader.decoder == ("gpu" if on_gpu else "cpu")
        assert portcv.backends.get(backend if on_gpu else "numpy").owns(next(reader))
        monkeypatch.setattr(_nvdec, "is_gpu_backend", lambda active: True)
        assert VideoReader(clip, gray=True).decoder == "gpu"
        monkeypatch.setitem(sys.modules, "PyNvVideoCodec", None)  # the extra is not installed
        assert VideoReader(clip, gray=True).decoder == "cpu"


def test_is_gpu_backend_asks_the_backend_object():
    assert not _nvdec.is_gpu_backend(portcv.backends.get("numpy"))
    fake = types.SimpleNamespace(runs_on_host=False)
    assert _nvdec.is_gpu_backend(fake)


# ------------------------------------------------------------------------------------------
# Errors
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("device", ["GPU", "cuda", "", None, 0, ("gpu",)])
def test_bad_device_values_name_device(clip, device):
    for call in (lambda: VideoReader(clip, device=device), lambda: iter_frames(clip, device=device),
                 lambda: read_video(clip, device=device)):
        with pytest.raises(ValueError, match="device must be one of"):
            call()


def test_gpu_with_a_host_backend_says_which_backend_to_pick(clip, monkeypatch):
    monkeypatch.setitem(sys.modules, "PyNvVideoCodec", make_stub())
    with portcv.using("numpy"):
        with pytest.raises(ValueError, match=r"backend 'numpy' keeps its arrays on the host: pick a GPU "
                                             r"backend \(portcv.using\('cupy'\)"):
            iter_frames(clip, device="gpu")  # at the call, not at the first frame


def test_missing_extra(clip, monkeypatch, backend):
    monkeypatch.setitem(sys.modules, "PyNvVideoCodec", None)
    monkeypatch.setattr(_nvdec, "is_gpu_backend", lambda active: True)
    with portcv.using(backend):
        with pytest.raises(VideoError, match=r"needs PyNvVideoCodec: pip install 'portcv\[video-gpu\]'"):
            read_video(clip, gray=True, device="gpu")


@pytest.mark.parametrize("failure", [
    # PyNvVideoCodec 2.2's own import checks the driver and raises this, troubleshooting steps appended
    "RuntimeError('libnvidia-encode.so.1: cannot open shared object file: No such file or directory'"
    " '\\n\\n=== TROUBLESHOOTING STEPS ===\\n...')",
    "ImportError('libnvcuvid.so.1: cannot open shared object file: No such file or directory')",
])
def test_an_installed_pynvvideocodec_without_the_driver(clip, monkeypatch, tmp_path, backend, failure):
    """The wheel is there but the driver's libraries are not (a machine without an NVIDIA driver)."""
    package = tmp_path / "site" / "PyNvVideoCodec"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(f"raise {failure}\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.delitem(sys.modules, "PyNvVideoCodec", raising=False)
    monkeypatch.setattr(_nvdec, "is_gpu_backend", lambda active: True)
    with portcv.using(backend):
        with pytest.raises(VideoError, match=rf"{clip.name}.* no usable NVDEC .*libnv.*directory\); use device='cpu'$"):
            read_video(clip, gray=True, device="gpu")
        reader = VideoReader(clip, gray=True)  # auto: installed, so the GPU is tried, then the CPU runs
        assert reader.decoder == "gpu"
        np.testing.assert_array_equal(next(reader), read_video(clip, gray=True, device="cpu")[0])
        assert reader.decoder == "cpu"


def test_a_machine_without_nvdec(clip, monkeypatch, backend):
    monkeypatch.setitem(sys.modules, "PyNvVideoCodec", make_stub(no_gpu=True))
    monkeypatch.setattr(_nvdec, "is_gpu_backend", lambda active: True)
    with portcv.using(backend):
        with pytest.raises(VideoError, match=rf"cannot decode video '.*{clip.name}' on the GPU: this machine has "
                                             r"no usable NVDEC \(PyNvVideoCodec: PyNvVCExceptionCuda: cuInit"):
            next(iter_frames(clip, device="gpu", gray=True))
        cpu = read_video(clip, start=4, stop=8, gray=True, device="cpu")
        np.testing.assert_array_equal(read_video(clip, start=4, stop=8, gray=True), cpu)  # auto: the CPU


def test_a_codec_nvdec_does_not_take(clip, monkeypatch, backend):
    monkeypatch.setitem(sys.modules, "PyNvVideoCodec", make_stub(unsupported=("AV1",), codec="AV1"))
    monkeypatch.setattr(_nvdec, "is_gpu_backend", lambda active: True)
    with portcv.using(backend):
        with pytest.raises(VideoError, match=rf"{clip.name}' on the GPU: NVDEC does not take its codec "
                                             r"\(cudaVideoCodec.AV1\).*device='cpu'"):
            read_video(clip, gray=True, device="gpu")
        reader = VideoReader(clip, start=6, gray=True)
        got = list(reader)
        assert reader.decoder == "cpu" and len(got) == 17
        np.testing.assert_array_equal(np.stack(got), read_video(clip, gray=True, device="cpu")[6:])


@pytest.mark.parametrize("codec", ["MPEG4", "MPEG2", "JPEG"])
def test_codecs_without_an_exact_decode_are_read_on_the_cpu(clip, monkeypatch, codec):
    """Where the standard leaves the inverse DCT to the decoder, NVDEC's bits are not FFmpeg's."""
    stub = make_stub(codec=codec)
    monkeypatch.setitem(sys.modules, "PyNvVideoCodec", stub)
    monkeypatch.setattr(_nvdec, "is_gpu_backend", lambda active: True)
    with pytest.raises(VideoError, match=rf"clip.mp4' on the GPU: NVDEC's decode of its codec \(cudaVideoCodec.{codec}\) "
                                         r"is not bit for bit FFmpeg's .*use device='cpu'"):
        read_video(clip, gray=True, device="gpu")
    reader = VideoReader(clip, gray=True)
    np.testing.assert_array_equal(np.stack(host(reader)), read_video(clip, gray=True, device="cpu"))
    assert reader.decoder == "cpu" and stub.decode_calls == 0


def test_file_errors_on_both_paths(tmp_path, gpu):
    not_video = tmp_path / "notes.mp4"
    not_video.write_bytes(b"not a video at all" * 10)
    for device in ("cpu", "gpu"):
        with pytest.raises(VideoError, match="no such file"):
            iter_frames(tmp_path / "missing.mp4", device=device)  # at the call
        with pytest.raises(VideoError, match="notes.mp4"):
            read_video(not_video, gray=True, device=device)


def test_start_past_the_end(clip, gpu):
    for device in ("cpu", "gpu"):
        with pytest.raises(VideoError, match=r"from frame 30: it has 23 frames"):
            read_video(clip, start=30, gray=True, device=device)


@pytest.mark.parametrize("kwargs, error, match", [
    ({"start": -1}, ValueError, "start must be in"), ({"start": 1.5}, TypeError, "start must be an integer"),
    ({"stop": 0}, ValueError, "stop must be in"), ({"start": 4, "stop": 4}, ValueError, r"stop must be in \[5"),
    ({"gray": "yes"}, TypeError, "gray must be a bool"), ({"frames": 0}, ValueError, "frames must be in"),
])
def test_bad_ranges(clip, kwargs, error, match):
    with pytest.raises(error, match=match):
        iter_frames(clip, **kwargs)


# ------------------------------------------------------------------------------------------
# Decoding ahead (prefetch) and the many-videos pipeline on the GPU decoder (stubbed)
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("device", ["cpu", "gpu"])
def test_prefetch_gives_the_same_frames_seeks_and_ownership(clip, planes, gpu, device):
    whole = read_video(clip, gray=True, device="cpu")
    with VideoReader(clip, gray=True, device=device, prefetch=3) as reader:
        kept = [next(reader) for _ in range(10)]  # held while the thread decodes ahead
        reader.seek(4)
        kept += [next(reader) for _ in range(3)]
        kept += list(reader)
    np.testing.assert_array_equal(np.stack(host(kept)), whole[list(range(10)) + list(range(4, 23))])
    colour = list(iter_frames(clip, device=device, prefetch=2, start=5, stop=9))
    np.testing.assert_array_equal(np.stack(host(colour)), read_video(clip, device="cpu", start=5, stop=9))


def test_prefetch_falls_back_to_the_cpu_as_without_it(clip, monkeypatch, backend):
    stub = make_stub(backend=backend, codec="MPEG4")
    monkeypatch.setitem(sys.modules, "PyNvVideoCodec", stub)
    monkeypatch.setattr(_nvdec, "is_gpu_backend", lambda active: True)
    with portcv.using(backend):
        reader = iter_frames(clip, gray=True, device="auto", prefetch=4)
        frames = list(reader)
        assert reader.decoder == "cpu"
        with pytest.raises(VideoError, match="MPEG4"):
            list(iter_frames(clip, gray=True, device="gpu", prefetch=4))
    np.testing.assert_array_equal(np.stack(frames), read_video(clip, gray=True, device="cpu"))


def test_prefetched_items_errors_and_close():
    from portcv.video._prefetch import Prefetched

    def failing():
        yield 1
        yield 2
        raise VideoError("truncated at frame 2")

    items = Prefetched(failing(), 1)
    assert [next(items), next(items)] == [1, 2]
    with pytest.raises(VideoError, match="truncated"):
        next(items)
    with pytest.raises(StopIteration):
        next(items)
    closed = []

    def endless():
        try:
            k = 0
            while True:
                yield k
                k += 1
        finally:
            closed.append(True)

    items = Prefetched(endless(), 2)
    assert [next(items) for _ in range(5)] == [0, 1, 2, 3, 4]
    items.close()  # stops the thread blocked on a full queue and closes the source there
    assert closed == [True] and not items._thread.is_alive()
    with pytest.raises(StopIteration):
        next(items)


@pytest.mark.parametrize("prefetch, error", [(-1, ValueError), (65, ValueError), (1.0, TypeError), (True, TypeError)])
def test_bad_prefetch_values_name_prefetch(clip, prefetch, error):
    with pytest.raises(error, match="prefetch"):
        VideoReader(clip, device="cpu", prefetch=prefetch)


def test_the_many_videos_pipeline_decodes_on_the_gpu_with_the_same_results(clip, gpu, backend):
    """process_video and map_videos take the GPU decoder on a GPU backend ("auto"), say so, and
    give the CPU decoder's results; several sessions at once too."""
    pdist = pytest.importorskip("portcv.distributed", reason="dask not installed (pip install 'portcv[distributed]')")
    spec = pdist.motion(t_low=70, t_high=80, beta=2, grid=(3, 4))
    cpu = pdist.process_video(clip, spec, decoder="cpu")
    calls = gpu.decode_calls
    auto = pdist.process_video(clip, spec)
    assert gpu.decode_calls > calls  # the stubbed NVDEC decoded them
    for key in ("regions", "density"):
        np.testing.assert_array_equal(auto[key], cpu[key])
    runs = list(pdist.map_videos(spec, [clip, clip, clip], progress=False, sessions=3, segment_frames=8))
    assert all(r.error is None and r.decoder == "gpu" for r in runs)
    for r in runs:
        for key in ("regions", "density"):
            np.testing.assert_array_equal(r.value[key], cpu[key])


def test_import_portcv_imports_no_pynvvideocodec():
    code = ("import sys, portcv, portcv.video; portcv.video.VideoReader; "
            "assert 'PyNvVideoCodec' not in sys.modules and 'portcv.video._nvdec' not in sys.modules; print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "ok", out.stderr


# ------------------------------------------------------------------------------------------
# NVDEC itself (a GPU with PyNvVideoCodec and CuPy)
# ------------------------------------------------------------------------------------------
def _nvdec_reason() -> str | None:
    if not _nvdec.installed():
        return "NVDEC tests need PyNvVideoCodec (pip install 'portcv[video-gpu]') and a GPU"
    if not portcv.backends.get("cupy").is_available():
        return "NVDEC tests need CuPy and a GPU (the cupy backend is unavailable)"
    return None


nvdec = pytest.mark.skipif(_nvdec_reason() is not None, reason=_nvdec_reason() or "")

#: (name, codec, frames, encoder options): two GOP structures of H.264 (B-frames and a keyframe
#: every 12; no B-frames and a keyframe every 5), HEVC, and 1918 x 1078 (even, not a multiple of 16).
NVDEC_CLIPS = [
    ("h264-gop12-b2", "libx264", (30, 240, 320), {"g": "12", "bf": "2"}),
    ("h264-gop5-nob", "libx264", (30, 240, 320), {"g": "5", "bf": "0"}),
    ("hevc-gop10", "libx265", (24, 240, 320), {"g": "10", "x265-params": "log-level=error"}),
    ("h264-1918x1078", "libx264", (12, 1078, 1918), {"g": "6"}),
]


@pytest.fixture(scope="module", params=NVDEC_CLIPS, ids=[c[0] for c in NVDEC_CLIPS])
def real_clip(request, tmp_path_factory):
    import av

    name, codec, (count, height, width), options = request.param
    if codec not in av.codecs_available:
        pytest.skip(f"PyAV here cannot encode {codec}")
    frames = portcv.data.moving_shapes(count, height, width, seed=11)
    return write_clip(tmp_path_factory.mktemp("nvdec") / f"{name}.mp4", frames, codec=codec, options=options)


@nvdec
def test_nvdec_y_planes_equal_pyav_for_every_frame(real_clip):
    expected = np.stack([p[: p.shape[0] * 2 // 3] for p in pyav_nv12(real_clip)])
    with portcv.using("cupy"):
        reader = VideoReader(real_clip, gray=True, device="gpu")
        frames = list(reader)  # all held until the end: ownership on the real decoder
        assert reader.decoder == "gpu"
        got = np.stack(host(frames))
    assert got.shape == expected.shape
    mismatched = np.flatnonzero((got != expected).reshape(len(got), -1).any(axis=1))
    assert mismatched.size == 0, f"frames whose Y plane differs from PyAV's: {mismatched.tolist()}"


@nvdec
def test_nvdec_into_jax_on_a_gpu(real_clip):
    """JAX gets NVDEC's frames through DLPack too, where its backend keeps arrays on a GPU."""
    jax_backend = portcv.backends.get("jax")
    if not jax_backend.is_available() or jax_backend.runs_on_host:
        pytest.skip("JAX here runs on the host: NVDEC into JAX needs JAX on a GPU")
    cpu = read_video(real_clip, stop=8, gray=True, device="cpu")
    with portcv.using("jax"):
        reader = VideoReader(real_clip, stop=8, gray=True, device="gpu")
        frames = list(reader)
        assert reader.decoder == "gpu" and all(jax_backend.owns(f) for f in frames)
    np.testing.assert_array_equal(np.stack(host(frames)), cpu)


@nvdec
def test_nvdec_start_stop_seek_equal_the_cpu(real_clip):
    cpu = read_video(real_clip, gray=True, device="cpu")
    last = len(cpu) - 1
    with portcv.using("cupy"):
        for start, stop in ((0, 4), (7, 15), (last, None)):
            got = portcv.to_numpy(read_video(real_clip, start=start, stop=stop, gray=True, device="gpu"))
            np.testing.assert_array_equal(got, cpu[start:stop])
        with VideoReader(real_clip, gray=True, device="gpu") as reader:
            for index in (9, 2, last, 0):
                reader.seek(index)
                np.testing.assert_array_equal(portcv.to_numpy(next(reader)), cpu[index])


@nvdec
def test_nvdec_colour_equals_opencv_on_the_pyav_planes(real_clip):
    if not hasattr(portcv.color, "nv12_to_rgb"):
        pytest.skip("colour GPU decode needs portcv.color.nv12_to_rgb")
    cv2 = pytest.importorskip("cv2")
    planes = pyav_nv12(real_clip)
    with portcv.using("cupy"):
        got = host(iter_frames(real_clip, stop=6, device="gpu"))
    cpu = read_video(real_clip, stop=6, device="cpu")  # the CPU path's one colour conversion, the same bits
    for k, frame in enumerate(got):
        np.testing.assert_array_equal(frame, cv2.cvtColor(planes[k], cv2.COLOR_YUV2RGB_NV12), err_msg=f"frame {k}")
        np.testing.assert_array_equal(frame, cpu[k], err_msg=f"frame {k}")


@nvdec
def test_nvdec_refuses_mpeg4_and_auto_reads_it_on_the_cpu(tmp_path):
    """MPEG-4 part 2 (portcv's writer's codec for odd sizes) leaves the inverse DCT to the decoder:
    NVDEC's frames differed from FFmpeg's by up to 2 levels, so the GPU path refuses the codec."""
    path = tmp_path / "even.mp4"
    portcv.video.write_video(path, portcv.data.moving_shapes(6, 48, 64, seed=2), codec="mpeg4")
    cpu = read_video(path, gray=True, device="cpu")
    with portcv.using("cupy"):
        with pytest.raises(VideoError, match=r"even.mp4' on the GPU: NVDEC's decode of its codec .*MPEG4"):
            read_video(path, gray=True, device="gpu")
        reader = VideoReader(path, gray=True)
        np.testing.assert_array_equal(np.stack(host(reader)), cpu)  # auto always reads it, the CPU's bits
        assert reader.decoder == "cpu"


@nvdec
def test_nvdec_refuses_odd_sizes_and_auto_reads_them_on_the_cpu(tmp_path):
    """NVDEC decodes a 47 x 63 stream to 46 x 64 surfaces: a row would be lost, so it is refused."""
    path = tmp_path / "odd.mp4"
    portcv.video.write_video(path, portcv.data.moving_shapes(6, 47, 63, seed=2))
    with portcv.using("cupy"):
        for gray in (True, False):
            with pytest.raises(VideoError, match=r"odd.mp4' on the GPU"):  # its codec or its size
                read_video(path, gray=gray, device="gpu")
            np.testing.assert_array_equal(portcv.to_numpy(read_video(path, gray=gray)),
                                          read_video(path, gray=gray, device="cpu"))


@nvdec
def test_nvdec_pipeline_results_equal_the_cpu_pipeline(tmp_path):
    """Motion regions and face boxes of the many-videos pipeline on NVDEC + CuPy, several
    sessions at once, equal the CPU decoder's on NumPy."""
    pdist = pytest.importorskip("portcv.distributed", reason="dask not installed (pip install 'portcv[distributed]')")
    frames = portcv.data.moving_shapes(40, 240, 320, seed=3)
    paths = [str(write_clip(tmp_path / f"c{k}.mp4", frames[k:], options={"g": "8", "bf": "2"})) for k in range(3)]
    spec = pdist.motion(t_low=70, t_high=80, beta=2, grid=(3, 4))
    want = {r.path: r for r in pdist.map_videos(spec, paths, progress=False, backend="numpy", decoder="cpu")}
    got = list(pdist.map_videos(spec, paths, progress=False, backend="cupy", sessions=3))
    assert all(r.error is None and r.decoder == "gpu" for r in got), [r.error for r in got]
    for r in got:
        for key in ("regions", "density"):
            np.testing.assert_array_equal(r.value[key], want[r.path].value[key])
    cv2 = pytest.importorskip("cv2")
    if not hasattr(cv2, "data"):
        pytest.skip("face boxes need OpenCV's cascade files (opencv-contrib-python-headless 4.13)")
    skdata = pytest.importorskip("skimage.data")
    photo = skdata.astronaut()  # shipped inside scikit-image: no download
    face_frames = np.stack([photo[2 * k: 2 * k + 400, 4 * k: 4 * k + 448] for k in range(8)])
    face_clip = str(write_clip(tmp_path / "faces.mp4", face_frames, options={"g": "4"}))
    faces = pdist.faces("haarcascade_frontalface_default.xml", min_neighbors=3)
    want_faces = pdist.process_video(face_clip, faces, backend="numpy", decoder="cpu")
    got_faces = pdist.process_video(face_clip, faces, backend="cupy", decoder="gpu")
    assert len(got_faces) == len(want_faces) == 8 and sum(len(b) for _, b, _ in want_faces) > 0
    for (i, b, n), (j, c, m) in zip(got_faces, want_faces):
        assert i == j and np.array_equal(b, c) and np.array_equal(n, m)
