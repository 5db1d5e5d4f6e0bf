"""Convolver3D (live video through a ring of frames), quantize_kernel and gabor_kernel3d."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import portcv
from portcv import volume

from ..helpers import assert_same_bits, on_backend


def _stream(conv, clip):
    outs = [o for o in (conv.push(f) for f in clip) if o is not None]
    return outs + conv.flush()


@given(t=st.integers(1, 9), kt=st.sampled_from([1, 3, 5]), bank=st.booleans(),
       border=st.sampled_from(["reflect101", "replicate", "constant"]), time_mode=st.sampled_from(["valid", "same"]),
       method=st.sampled_from(["direct", "hybrid"]), seed=st.integers(0, 2**32 - 1))
@settings(max_examples=40)
def test_streamed_frames_equal_the_batch_call(backend, t, kt, bank, border, time_mode, method, seed):
    rng = np.random.default_rng(seed)
    clip = rng.integers(0, 256, (t, 7, 11), dtype=np.uint8)
    kernel = rng.integers(-5, 6, ((2,) if bank else ()) + (kt, 3, 3))
    if time_mode == "valid" and t < kt:
        return

    def both():
        conv = volume.Convolver3D(kernel, (7, 11), border=border, border_value=9, time_mode=time_mode,
                                  method=method, shift=2, out_dtype="int16")
        streamed = _stream(conv, clip)
        again = _stream(conv, clip)  # flush() reset the ring: a second clip streams the same
        batch = volume.convolve3d(clip, kernel, border=border, border_value=9, time_mode=time_mode,
                                  method=method, shift=2, out_dtype="int16")
        return streamed, again, batch

    streamed, again, batch = on_backend(backend, both)
    batch = portcv.to_numpy(batch)
    frames_axis = -3
    assert len(streamed) == batch.shape[frames_axis] == len(again)
    for i, (a, b) in enumerate(zip(streamed, again)):
        expected = np.take(batch, i, axis=frames_axis)
        assert_same_bits(expected, a)
        assert_same_bits(expected, b)


def test_convolver3d_refuses_bad_frames_and_options():
    k = np.ones((3, 3, 3), int)
    conv = volume.Convolver3D(k, (4, 5))
    with pytest.raises(ValueError, match=r"frame must have shape \(4, 5\)"):
        conv.push(np.zeros((5, 4), np.uint8))
    with pytest.raises(TypeError, match="frame must have dtype uint8"):
        conv.push(np.zeros((4, 5), np.int16))
    with pytest.raises(ValueError, match="frame_shape"):
        volume.Convolver3D(k, (4, 5, 3))
    with pytest.raises(ValueError, match="method"):
        volume.Convolver3D(k, (4, 5), method="magic")
    with pytest.raises(ValueError, match="dtype"):
        volume.Convolver3D(k, (4, 5), dtype="float32")
    with pytest.raises(ValueError, match="odd"):
        volume.Convolver3D(np.ones((2, 3, 3), int), (4, 5))
    with pytest.raises(ValueError, match="shift"):
        volume.Convolver3D(k, (4, 5), shift=40)
    with pytest.raises(ValueError, match=r"frame looks like a colour image .*rgb_to_gray\(frame\)$"):
        conv.push(np.zeros((4, 5, 3), np.uint8))  # one frame: no batch to declare
    with pytest.raises(ValueError, match="dtype must be one of .* got 'bogus'"):
        volume.Convolver3D(k, (4, 5), dtype="bogus")


@pytest.mark.parametrize("frame_shape, error, match", [
    ((10**6, 10**6), ValueError, r"frame_shape: .* 3000000000000 elements .* at most 2147483647"),
    ((1e6, 1e6), TypeError, "frame_shape must be an integer"),
    ((2**31, 1), ValueError, r"frame_shape must be in \[1, 2147483647\]"),
    ((0, 5), ValueError, r"frame_shape must be in \[1,"),
    ((True, 5), TypeError, "frame_shape must be an integer"),
    (None, ValueError, r"frame_shape must be \(H, W\)"),
])
def test_convolver3d_checks_frame_shape_before_allocating(frame_shape, error, match):
    """A frame shape whose ring of kt frames would not be an array convolve3d takes is refused
    before the trial clip is allocated (10**6 x 10**6 frames tried a 2.7 TiB allocation)."""
    with pytest.raises(error, match=match):
        volume.Convolver3D(np.ones((3, 3, 3), int), frame_shape)


def test_convolver3d_takes_frames_three_pixels_wide():
    """frame_shape declares the frames gray: a ring of (kt, H, 3) frames is no colour image."""
    frames = np.random.default_rng(2).integers(0, 256, (4, 6, 3), dtype=np.uint8)
    conv = volume.Convolver3D(np.ones((3, 3, 3), int), (6, 3))
    outs = [o for o in (conv.push(f) for f in frames) if o is not None]
    assert_same_bits(volume.convolve3d(frames, np.ones((3, 3, 3), int), channel_axis=None), np.stack(outs))


@given(shape=st.sampled_from([(3, 3, 3), (5, 3, 7), (2, 3, 3, 3)]), bits=st.integers(4, 23), seed=st.integers(0, 2**32 - 1),
       smoothing=st.booleans())
@example(shape=(3, 3, 3), bits=22, seed=4101, smoothing=True)  # its float sum is 4 ulps off 2**22
def test_quantize_kernel_keeps_the_scale_and_the_sum(shape, bits, seed, smoothing):
    rng = np.random.default_rng(seed)
    real = rng.random(shape) if smoothing else rng.standard_normal(shape)
    if smoothing:
        real = real / real.sum(axis=(-3, -2, -1), keepdims=True)  # each kernel sums to 1
    taps, shift = volume.quantize_kernel(real, bits=bits)
    assert taps.dtype == np.int32 and taps.shape == real.shape
    l1 = np.abs(taps.reshape((-1,) + shape[-3:])).sum(axis=(1, 2, 3)).max()
    if shift > 0:  # at shift 0 a kernel with sum|k| > 2**bits keeps its own scale
        assert l1 <= 2**bits + taps[0].size  # the rounding adds at most half a unit per tap
    assert np.abs(taps - real * 2.0**shift).max() <= 1.0  # round half even, then at most one unit of correction
    if smoothing:
        assert (taps.reshape((-1,) + shape[-3:]).sum(axis=(1, 2, 3)) == 2**shift).all()


def test_quantize_kernel_refuses_bad_input():
    with pytest.raises(ValueError, match="finite"):
        volume.quantize_kernel(np.full((3, 3, 3), np.nan))
    with pytest.raises(ValueError, match="3-D"):
        volume.quantize_kernel(np.ones((3, 3)))
    with pytest.raises(ValueError, match="bits"):
        volume.quantize_kernel(np.ones((3, 3, 3)), bits=30)
    with pytest.raises(TypeError, match="kernel must hold real numbers, got dtype complex128"):
        volume.quantize_kernel(np.full((3, 3, 3), 1 + 1j))  # was made real, the imaginary part dropped
    with pytest.raises(TypeError, match="kernel must hold real numbers, got dtype object"):
        volume.quantize_kernel(None)
    with pytest.raises(TypeError, match="kernel must hold real numbers"):
        volume.quantize_kernel("box")
    with pytest.raises(ValueError, match="kernel must be a rectangular array"):
        volume.quantize_kernel([[[1.0, 2.0], [1.0]]])
    with pytest.raises(ValueError, match="kernel has 12884901888 values"):
        volume.quantize_kernel(np.broadcast_to(1.0, (3, 2**16, 2**16)))  # a 96 GiB float64 copy before


def test_gabor_bank_is_zero_mean_theta_major_and_refuses_bad_input():
    bank, shift = volume.gabor_kernel3d((5, 7, 9), 2.0, 5.0, theta=[0.0, 1.0, 2.0], speed=[0.0, 1.0])
    assert bank.shape == (6, 5, 7, 9) and bank.dtype == np.int32
    assert (bank.sum(axis=(1, 2, 3)) == 0).all()
    single, shift1 = volume.gabor_kernel3d((5, 7, 9), 2.0, 5.0, theta=1.0, speed=1.0)
    assert single.shape == (5, 7, 9)
    # theta-major: bank[2 * 1 + 1] is theta = 1.0, speed = 1.0 (shifts may differ: compare shapes of the real filter)
    assert np.corrcoef(bank[3].ravel(), single.ravel())[0, 1] > 0.999
    flat = np.zeros((5, 16, 16), np.uint8) + 77
    assert not portcv.to_numpy(volume.convolve3d(flat, single, shift=shift1)).any()  # zero mean: flat -> 0
    with pytest.raises(ValueError, match="odd"):
        volume.gabor_kernel3d(4, 2.0, 5.0)
    with pytest.raises(ValueError, match="sigma"):
        volume.gabor_kernel3d(5, 0.0, 5.0)
    with pytest.raises(ValueError, match="wavelength"):
        volume.gabor_kernel3d(5, 1.0, -5.0)
    with pytest.raises(TypeError, match="theta"):
        volume.gabor_kernel3d(5, 1.0, 5.0, theta="north")
    with pytest.raises(TypeError, match="zero_mean must be a bool"):
        volume.gabor_kernel3d(5, 1.0, 5.0, zero_mean="yes")
    with pytest.raises(TypeError, match="zero_mean must be a bool"):
        volume.gabor_kernel3d(5, 1.0, 5.0, zero_mean=0)
    with pytest.raises(ValueError, match="speed must be a number or a non-empty sequence"):
        volume.gabor_kernel3d(5, 1.0, 5.0, speed=[])
    with pytest.raises(ValueError, match="sigma must be <= 1000000.0"):
        volume.gabor_kernel3d(5, 1e300, 5.0)  # an OverflowError of sigma**2 before
    with pytest.raises(ValueError, match="sigma_time must be >= 1e-06"):
        volume.gabor_kernel3d(5, 1.0, 5.0, sigma_time=1e-200)  # 0 / 0 in the envelope: NaN taps
