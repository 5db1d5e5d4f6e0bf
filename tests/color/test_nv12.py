"""portcv.color's YUV 4:2:0 conversions (NV12/NV21, I420/YV12 to RGB/BGR): every backend equals
NumPy, NumPy equals a naive oracle and ``cv2.cvtColor`` on random planes, on every (Y, U, V)
triple, on a real photograph and on frames decoded by PyAV; odd sizes and bad inputs refused."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import portcv
from portcv import color

from ..helpers import assert_same_bits, matches_numpy, on_backend, runs_its_overrides
from . import oracle_nv12 as oracle

cv2 = pytest.importorskip("cv2")

#: (function, chroma_order) -> (layout, channel order, OpenCV's code name).
CONVERSIONS = {
    (color.nv12_to_rgb, "uv"): ("nv12", "rgb", "COLOR_YUV2RGB_NV12"),
    (color.nv12_to_bgr, "uv"): ("nv12", "bgr", "COLOR_YUV2BGR_NV12"),
    (color.nv12_to_rgb, "vu"): ("nv12", "rgb", "COLOR_YUV2RGB_NV21"),
    (color.nv12_to_bgr, "vu"): ("nv12", "bgr", "COLOR_YUV2BGR_NV21"),
    (color.i420_to_rgb, "uv"): ("i420", "rgb", "COLOR_YUV2RGB_I420"),
    (color.i420_to_bgr, "uv"): ("i420", "bgr", "COLOR_YUV2BGR_I420"),
    (color.i420_to_rgb, "vu"): ("i420", "rgb", "COLOR_YUV2RGB_YV12"),
    (color.i420_to_bgr, "vu"): ("i420", "bgr", "COLOR_YUV2BGR_YV12"),
}
KEYS = list(CONVERSIONS)
IDS = [CONVERSIONS[k][2] for k in KEYS]
#: Frame sizes (H, W) of the cross-backend tests: few, so JAX compiles few shapes. 34: W/2 odd
#: (an I420 chroma row starts mid-row); 2 x 2: one block.
BACKEND_SIZES = [(2, 2), (4, 6), (6, 34), (16, 20)]


def opencv(yuv: np.ndarray, code_name: str) -> np.ndarray:
    """``cv2.cvtColor`` of one frame or, frame by frame, of a batch."""
    code = getattr(cv2, code_name)
    frames = np.ascontiguousarray(yuv).reshape((-1,) + yuv.shape[-2:])
    out = np.stack([cv2.cvtColor(f, code) for f in frames])
    return out.reshape(yuv.shape[:-2] + out.shape[1:])


def planes(rng: np.random.Generator, shape: tuple, kind: str) -> np.ndarray:
    """uint8 frames of ``shape``: uniform, the extremes (0, 255, 16, 15, 128, 235, 240), or dark
    (luma below 16, where ``max(0, Y - 16)`` clamps)."""
    if kind == "uniform":
        return rng.integers(0, 256, shape, dtype=np.uint8)
    if kind == "extremes":
        return rng.choice(np.array([0, 255, 16, 15, 128, 235, 240, 1, 254], np.uint8), shape)
    return rng.integers(0, 20, shape, dtype=np.uint8)


@st.composite
def frames(draw: st.DrawFn, sizes: list | None = None, max_h: int = 40, max_w: int = 60) -> np.ndarray:
    """``(3H/2, W)`` frames or batches of them, even H and W (from ``sizes`` when given)."""
    if sizes is None:
        h, w = 2 * draw(st.integers(1, max_h // 2)), 2 * draw(st.integers(1, max_w // 2))
    else:
        h, w = draw(st.sampled_from(sizes))
    lead = draw(st.sampled_from([(), (), (2,)]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    return planes(rng, lead + (h * 3 // 2, w), draw(st.sampled_from(["uniform", "extremes", "dark"])))


@given(yuv=frames(BACKEND_SIZES), key=st.sampled_from(KEYS))
def test_every_backend_equals_numpy(backend, yuv, key):
    fn, chroma_order = key
    with runs_its_overrides("yuv420_to_rgb"):
        out = matches_numpy(backend, fn, yuv, chroma_order=chroma_order)
    h, w = yuv.shape[-2] * 2 // 3, yuv.shape[-1]
    assert out.shape == yuv.shape[:-2] + (h, w, 3) and out.dtype == np.uint8


@given(yuv=frames(max_h=8, max_w=10), key=st.sampled_from(KEYS))
def test_numpy_equals_the_oracle(yuv, key):
    fn, chroma_order = key
    layout, channel_order, _ = CONVERSIONS[key]
    frames_ = yuv.reshape((-1,) + yuv.shape[-2:])
    expected = np.stack([oracle.yuv420_to_rgb(f, layout=layout, chroma_order=chroma_order,
                                              channel_order=channel_order) for f in frames_])
    assert_same_bits(expected.reshape(yuv.shape[:-2] + expected.shape[1:]), fn(yuv, chroma_order=chroma_order))


@given(yuv=frames(), key=st.sampled_from(KEYS))
def test_numpy_equals_opencv_on_random_planes(yuv, key):
    fn, chroma_order = key
    assert_same_bits(opencv(yuv, CONVERSIONS[key][2]), fn(yuv, chroma_order=chroma_order))


def every_yuv_triple() -> np.ndarray:
    """64 NV12 frames of 512 x 512 holding every (Y, U, V) triple once: block (j, i) of frame f
    has U = j, V = i and luma 4 f + (0, 1, 2, 3)."""
    f = np.arange(64)[:, None, None, None, None]
    dy, dx = np.arange(2)[:, None, None], np.arange(2)
    luma = np.broadcast_to(4 * f + 2 * dy + dx, (64, 256, 2, 256, 2)).reshape(64, 512, 512)
    u, v = np.meshgrid(np.arange(256), np.arange(256), indexing="ij")
    chroma = np.broadcast_to(np.stack([u, v], axis=-1).reshape(256, 512), (64, 256, 512))
    return np.concatenate([luma, chroma], axis=1).astype(np.uint8)


@pytest.mark.slow
@pytest.mark.parametrize("key", [k for k in KEYS if k[1] == "uv"], ids=[i for k, i in zip(KEYS, IDS) if k[1] == "uv"])
def test_every_yuv_triple_equals_opencv(backend, key):
    """All 2**24 (Y, U, V) triples, on every backend (the CUDA kernel's exhaustive proof on CuPy)."""
    fn, _ = key
    nv12 = every_yuv_triple()
    if CONVERSIONS[key][0] == "i420":  # the same samples in I420's packed planes
        pairs = nv12[:, 512:].reshape(64, 256 * 256, 2)
        nv12 = np.concatenate([nv12[:, :512], np.moveaxis(pairs, -1, 1).reshape(64, 256, 512)], axis=1)
    with runs_its_overrides("yuv420_to_rgb"):
        for start in range(0, 64, 16):
            batch = nv12[start:start + 16]
            assert_same_bits(opencv(batch, CONVERSIONS[key][2]), on_backend(backend, fn, batch))


def test_every_yuv_triple_is_covered():
    nv12 = every_yuv_triple()
    y = nv12[:, :512].reshape(64, 256, 2, 256, 2).astype(np.int64)
    uv = nv12[:, 512:].reshape(64, 256, 256, 2).astype(np.int64)
    codes = (y << 16) + (uv[:, :, None, :, None, 0] << 8) + uv[:, :, None, :, None, 1]
    seen = np.zeros(1 << 24, bool)
    seen[codes.ravel()] = True
    assert codes.size == 1 << 24 and seen.all()


def rgb_to_i420(rgb: np.ndarray) -> np.ndarray:
    return cv2.cvtColor(np.ascontiguousarray(rgb), cv2.COLOR_RGB2YUV_I420)


def i420_to_nv12(yuv: np.ndarray) -> np.ndarray:
    """The same samples in NV12's layout: the U and V planes interleaved into pairs."""
    rows, w = yuv.shape
    h = rows * 2 // 3
    chroma = yuv[h:].reshape(2, h // 2 * (w // 2))
    return np.concatenate([yuv[:h], chroma.T.reshape(h // 2, w)])


@pytest.mark.parametrize("image", ["astronaut", "coffee", "chelsea"])
def test_real_photographs_equal_opencv(image):
    data = pytest.importorskip("skimage.data")
    rgb = getattr(data, image)()
    rgb = rgb[: rgb.shape[0] // 2 * 2, : rgb.shape[1] // 2 * 2]  # cv2's RGB2YUV_I420 wants even sizes
    yuv = rgb_to_i420(rgb)
    nv12 = i420_to_nv12(yuv)
    assert_same_bits(cv2.cvtColor(yuv, cv2.COLOR_YUV2RGB_I420), color.i420_to_rgb(yuv))
    assert_same_bits(cv2.cvtColor(yuv, cv2.COLOR_YUV2BGR_I420), color.i420_to_bgr(yuv))
    assert_same_bits(cv2.cvtColor(nv12, cv2.COLOR_YUV2RGB_NV12), color.nv12_to_rgb(nv12))
    assert_same_bits(cv2.cvtColor(nv12, cv2.COLOR_YUV2BGR_NV12), color.nv12_to_bgr(nv12))
    assert_same_bits(color.i420_to_rgb(yuv), color.nv12_to_rgb(nv12))  # one image, two layouts
    # The round trip is close (4:2:0 chroma and limited range lose a little), not exact.
    assert np.abs(portcv.to_numpy(color.i420_to_rgb(yuv)).astype(int) - rgb).mean() < 8


def decoded_frames(tmp_path, size: tuple[int, int], codec: str = "libx264") -> list[np.ndarray]:
    """Write a short clip of a real photograph panning, with PyAV, and decode it back as PyAV's
    ``yuv420p`` arrays (the decoder's own planes, no conversion)."""
    av = pytest.importorskip("av", reason="video files need PyAV (the io extra)")
    data = pytest.importorskip("skimage.data")
    h, w = size
    photo = data.astronaut()
    path = tmp_path / f"clip_{w}x{h}.mp4"
    with av.open(str(path), "w") as out:
        stream = out.add_stream(codec, rate=10)
        stream.width, stream.height, stream.pix_fmt = w, h, "yuv420p"
        for t in range(6):
            frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(photo[5 * t: 5 * t + h, 7 * t: 7 * t + w]),
                                               format="rgb24")
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    with av.open(str(path)) as src:
        decoded = [f.to_ndarray() for f in src.decode(video=0)]  # yuv420p: (3H/2, W)
    assert decoded and all(f.shape == (h * 3 // 2, w) and f.dtype == np.uint8 for f in decoded)
    return decoded


@pytest.mark.slow
@pytest.mark.parametrize("size", [(240, 320), (90, 126)], ids=["320x240", "126x90"])
def test_frames_decoded_by_pyav_equal_opencv(tmp_path, size):
    """The decoder path: PyAV's yuv420p planes through i420_to_rgb, and through nv12_to_rgb after
    interleaving them as NVDEC lays them out, equal cv2.cvtColor of the same planes. 126 x 90:
    W/2 = 63 is odd and W is no multiple of 16 (the decoder's padding is cropped away)."""
    frames_ = decoded_frames(tmp_path, size)
    batch = np.stack(frames_)
    assert_same_bits(opencv(batch, "COLOR_YUV2RGB_I420"), color.i420_to_rgb(batch))
    assert_same_bits(opencv(batch, "COLOR_YUV2BGR_I420"), color.i420_to_bgr(batch))
    nv12 = np.stack([i420_to_nv12(f) for f in frames_])
    assert_same_bits(opencv(nv12, "COLOR_YUV2RGB_NV12"), color.nv12_to_rgb(nv12))
    assert_same_bits(color.i420_to_rgb(batch), color.nv12_to_rgb(nv12))


def test_views_read_only_and_batches(backend):
    rng = np.random.default_rng(4)
    big = planes(rng, (3, 30, 52), "uniform")  # 3 frames of 20 x 52
    expected = opencv(big, "COLOR_YUV2RGB_NV12")
    before = big.copy()
    view = np.zeros((3, 30, 104), np.uint8)
    view[..., ::2] = big
    readonly = big.copy()
    readonly.flags.writeable = False
    for x in (big, view[..., ::2], readonly, np.asfortranarray(big[1])):
        want = expected if x.ndim == 3 else expected[1]
        assert_same_bits(want, on_backend(backend, color.nv12_to_rgb, x))
    assert_same_bits(before, big)  # the input is never written
    assert_same_bits(expected[None], on_backend(backend, color.nv12_to_rgb, big[None]))  # any number of lead axes


def test_takes_arrays_of_other_backends(backend):
    yuv = planes(np.random.default_rng(5), (12, 8), "uniform")
    with portcv.using(backend):
        moved = portcv.asarray(yuv)
    assert_same_bits(color.i420_to_rgb(yuv), color.i420_to_rgb(moved))  # numpy active, input moved back


@pytest.mark.parametrize("fn, name", [(color.nv12_to_rgb, "nv12"), (color.nv12_to_bgr, "nv12"),
                                      (color.i420_to_rgb, "yuv"), (color.i420_to_bgr, "yuv")])
@pytest.mark.parametrize(
    "bad, error, words",
    [
        (np.zeros((6, 4), np.float32), TypeError, "dtype uint8"),
        (np.zeros((6, 4), np.int16), TypeError, "dtype uint8"),
        (np.zeros(12, np.uint8), ValueError, "at least 2 dimensions"),
        (np.zeros((0, 4), np.uint8), ValueError, "empty"),
        (np.zeros((6, 3), np.uint8), ValueError, "even width"),  # odd W
        (np.zeros((6, 5), np.uint8), ValueError, "even width"),
        (np.zeros((4, 4), np.uint8), ValueError, "multiple of 3"),  # not 3H/2 rows
        (np.zeros((5, 4), np.uint8), ValueError, "multiple of 3"),
        (np.zeros((2, 7, 6), np.uint8), ValueError, "multiple of 3"),
        ([[16, 16], [16, 16], [128, 128]], TypeError, "dtype uint8"),  # a list becomes int64
        ("frame.yuv", TypeError, "must be an array"),
    ],
)
def test_rejects_bad_frames_naming_the_argument(fn, name, bad, error, words):
    with pytest.raises(error, match=f"{name} .*{words}|{name} must .*{words}"):
        fn(bad)


@pytest.mark.parametrize("shape", [(6, 3), (4, 4), (9, 5)])
def test_refuses_what_opencv_refuses(shape):
    """Sizes OpenCV's cvtColor does not define (odd width, rows not a multiple of 3) raise in both."""
    x = np.zeros(shape, np.uint8)
    with pytest.raises(cv2.error):
        cv2.cvtColor(x, cv2.COLOR_YUV2RGB_NV12)
    with pytest.raises(ValueError, match="nv12 must be a YUV 4:2:0 frame"):
        color.nv12_to_rgb(x)


def test_rejects_unknown_chroma_order():
    with pytest.raises(ValueError, match="chroma_order"):
        color.nv12_to_rgb(np.zeros((3, 2), np.uint8), chroma_order="yuv")
