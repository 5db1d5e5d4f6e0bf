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
