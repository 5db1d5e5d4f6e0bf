"""portcv.codec: the webcam report's frame-delta encoder/decoder (section 2)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import portcv
from portcv import codec
from portcv.codec._delta import CUDA_TILE, delta_encode_kernel

from ..helpers import assert_same_bits
from . import oracle_delta as oracle


def run_on(backend, fn, *args, **kwargs):
    with portcv.using(backend):
        out = fn(*args, **kwargs)
        outs = out if isinstance(out, tuple) else (out,)
        for a in outs:
            assert portcv.backend().owns(a), f"{type(a).__name__} is not a {backend} array"
        return outs


def same_on_every_backend(backend, fn, *args, **kwargs):
    expected = run_on("numpy", fn, *args, **kwargs)
    actual = run_on(backend, fn, *args, **kwargs)
    for e, a in zip(expected, actual):
        assert_same_bits(e, a)
    return [portcv.to_numpy(e) for e in expected]


@st.composite
def frame_pairs(draw, max_side=40):
    """(frame, reference): any shape of 1 to 4 dims, sometimes a small drift, sometimes unrelated."""
    ndim = draw(st.integers(1, 4))
    sides = [draw(st.integers(1, max_side if i < 2 else 4)) for i in range(ndim)]
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    ref = rng.integers(0, 256, sides, dtype=np.uint8)
    kind = draw(st.sampled_from(["noise", "unrelated", "equal", "sparse"]))
    if kind == "noise":
        frame = np.clip(ref.astype(int) + rng.integers(-40, 41, sides), 0, 255).astype(np.uint8)
    elif kind == "unrelated":
        frame = rng.integers(0, 256, sides, dtype=np.uint8)
    elif kind == "equal":
        frame = ref.copy()
    else:
        frame = np.where(rng.random(sides) < 0.05, rng.integers(0, 256, sides), ref).astype(np.uint8)
    return frame, ref


@given(pair=frame_pairs(), threshold=st.sampled_from([0, 1, 20, 20, 127, 254, 255]), data=st.data())
def test_delta_encode_same_bits_on_every_backend(backend, pair, threshold, data):
    frame, ref = pair
    capacity = data.draw(st.one_of(st.none(), st.integers(0, frame.size)))
    count, diffs, positions, new_ref = same_on_every_backend(
        backend, codec.delta_encode, frame, ref, threshold=threshold, capacity=capacity)
    assert count.shape == () and count.dtype == np.int32
    assert diffs.dtype == np.int8 and positions.dtype == np.int32
    assert diffs.shape == positions.shape == (frame.size if capacity is None else capacity,)
    assert new_ref.shape == frame.shape and new_ref.dtype == np.uint8


@given(pair=frame_pairs(), threshold=st.sampled_from([0, 20, 200]), data=st.data())
def test_delta_decode_same_bits_on_every_backend(backend, pair, threshold, data):
    frame, ref = pair
    capacity = data.draw(st.one_of(st.none(), st.integers(0, frame.size)))
    with portcv.using("numpy"):
        count, diffs, positions, new_ref = codec.delta_encode(frame, ref, threshold=threshold, capacity=capacity)
    (decoded,) = same_on_every_backend(backend, codec.delta_decode, ref, diffs, positions, count)
    np.testing.assert_array_equal(decoded, new_ref)
    (unchecked,) = same_on_every_backend(backend, codec.delta_decode, ref, diffs, positions, int(count), check=False)
    np.testing.assert_array_equal(unchecked, new_ref)


def test_delta_encode_crosses_cuda_tiles(backend):
    """Frames of several CUDA tiles, sizes not a multiple of 16, capacity inside a tile."""
    rng = np.random.default_rng(7)
    for n, capacity in [(3 * CUDA_TILE + 5, None), (2 * CUDA_TILE - 1, 700), (5 * CUDA_TILE, 3 * CUDA_TILE // 2)]:
        ref = rng.integers(0, 256, n, dtype=np.uint8)
        frame = np.where(rng.random(n) < 0.4, rng.integers(0, 256, n), ref).astype(np.uint8)
        same_on_every_backend(backend, codec.delta_encode, frame, ref, threshold=10, capacity=capacity)
        # Views starting 1 byte into the backend's buffer: the CUDA kernel's unaligned path.
        same_on_every_backend(backend, unaligned_encode, frame, ref, threshold=10, capacity=capacity)


def unaligned_encode(frame, ref, **kwargs):
    return codec.delta_encode(portcv.asarray(frame)[1:], portcv.asarray(ref)[1:],
                              **{k: (v if k != "capacity" or v is None else min(v, frame.size - 1)) for k, v in kwargs.items()})


@given(pair=frame_pairs(max_side=9), threshold=st.sampled_from([0, 5, 20, 255]), data=st.data())
def test_delta_encode_equals_report_loop(pair, threshold, data):
    frame, ref = pair
    capacity = data.draw(st.one_of(st.none(), st.integers(0, frame.size)))
    expected = oracle.encode(frame, ref, threshold, capacity)
    count, diffs, positions, new_ref = (portcv.to_numpy(a) for a in
                                        codec.delta_encode(frame, ref, threshold=threshold, capacity=capacity))
    assert int(count) == expected[0]
    np.testing.assert_array_equal(diffs, expected[1])
    np.testing.assert_array_equal(positions, expected[2])
    np.testing.assert_array_equal(new_ref, expected[3])
    np.testing.assert_array_equal(portcv.to_numpy(codec.delta_decode(ref, diffs, positions, count)),
                                  oracle.decode(ref, diffs, positions, int(count)))


@given(pair=frame_pairs(), threshold=st.integers(0, 255), data=st.data())
def test_numpy_fast_path_equals_portable_version(pair, threshold, data):
    frame, ref = pair
    capacity = data.draw(st.integers(0, frame.size))
    with portcv.using("numpy"):
        fast = delta_encode_kernel(frame, ref, threshold=threshold, capacity=capacity)
        portable = delta_encode_kernel.portable_for(portcv.backend())(frame, ref, threshold=threshold, capacity=capacity)
    for a, b in zip(fast, portable):
        assert_same_bits(b, a)


def drifting_video(rng, shape, frames):
    """A slowly drifting scene with sensor noise, a moving block and an occasional cut."""
    base = rng.integers(0, 256, shape).astype(np.int32)
    out = []
    for t in range(frames):
        if rng.random() < 0.1:
            base = rng.integers(0, 256, shape).astype(np.int32)
        base = np.clip(base + rng.integers(-3, 4, shape), 0, 255)  # slow drift accumulates
        img = np.clip(base + rng.normal(0, 4, shape).round().astype(np.int32), 0, 255)
        y = t % shape[0]
        img[y : y + 3] = 255 - img[y : y + 3]
        out.append(img.astype(np.uint8))
    return out


@given(seed=st.integers(0, 2**32 - 1), threshold=st.sampled_from([0, 8, 20, 60]),
       shape=st.sampled_from([(9, 13, 3), (31, 17), (5, 70, 4), (1, 1)]),
       capacity_fraction=st.sampled_from([None, 1.0, 0.25, 0.02]))
def test_decoder_never_drifts_from_encoder(backend, seed, threshold, shape, capacity_fraction):
    """After any sequence of frames the decoder's picture equals the encoder's reference exactly;
    every byte is within `threshold` of the true frame unless the capacity overflowed."""
    rng = np.random.default_rng(seed)
    video = drifting_video(rng, shape, 12)
    size = int(np.prod(shape))
    capacity = None if capacity_fraction is None else int(size * capacity_fraction)
    encoder = codec.DeltaEncoder(threshold=threshold, capacity=capacity, backend=backend)
    encoder.keyframe(video[0])
    picture = video[0].copy()
    for frame in video[1:]:
        count, diffs, positions = encoder.encode_host(frame)
        with portcv.using("numpy"):
            picture = codec.delta_decode(picture, diffs, positions, count)
        reference = encoder.reference_host()
        np.testing.assert_array_equal(picture, reference)
        if capacity is None or count < capacity:  # nothing left pending
            assert np.abs(picture.astype(int) - frame.astype(int)).max() <= threshold


def test_encoder_matches_functional_calls(backend):
    rng = np.random.default_rng(3)
    video = drifting_video(rng, (23, 37, 3), 6)
    encoder = codec.DeltaEncoder(threshold=20, backend=backend)
    encoder.keyframe(video[0])
    ref = video[0]
    for frame in video[1:]:
        with portcv.using("numpy"):
            count, diffs, positions, ref = codec.delta_encode(frame, ref, threshold=20)
        k, d, p = encoder.encode_host(frame)
        assert k == int(count)
        np.testing.assert_array_equal(d, diffs[:k])
        np.testing.assert_array_equal(p, positions[:k])
        np.testing.assert_array_equal(encoder.reference_host(), ref)


def test_capacity_overflow_sends_the_rest_later():
    ref = np.zeros(100, np.uint8)
    frame = np.full(100, 100, np.uint8)
    encoder = codec.DeltaEncoder(threshold=20, capacity=30)
    encoder.keyframe(ref)
    picture = ref.copy()
    sent = []
    for _ in range(4):
        k, d, p = encoder.encode_host(frame)
        picture = portcv.to_numpy(codec.delta_decode(picture, d, p, k))
        sent.append(k)
    assert sent == [30, 30, 30, 10]
    np.testing.assert_array_equal(picture, frame)


def test_threshold_edges():
    ref = np.array([100, 100, 100, 100, 0, 255], np.uint8)
    frame = np.array([120, 121, 80, 79, 255, 0], np.uint8)
    count, diffs, positions, new_ref = (portcv.to_numpy(a) for a in codec.delta_encode(frame, ref, threshold=20))
    assert int(count) == 4  # |20| is not sent, |21| is; 255 - 0 wraps to -1 as int8
    np.testing.assert_array_equal(positions[:4], [1, 3, 4, 5])
    np.testing.assert_array_equal(diffs[:4], [21, -21, -1, 1])
    np.testing.assert_array_equal(new_ref, [100, 121, 100, 79, 255, 0])
    assert (portcv.to_numpy(codec.delta_encode(frame, ref, threshold=255)[0]) == 0).all()


def test_jax_encode_is_jittable():
    jax = pytest.importorskip("jax")
    try:
        portcv.backends.get("jax")
    except portcv.BackendUnavailableError as exc:
        pytest.skip(str(exc))
    rng = np.random.default_rng(0)
    ref = rng.integers(0, 256, (8, 8, 3), dtype=np.uint8)
    frame = rng.integers(0, 256, (8, 8, 3), dtype=np.uint8)

    @jax.jit
    def roundtrip(frame, ref):
        count, diffs, positions, new_ref = delta_encode_kernel.portable(
            jax.numpy, frame, ref, threshold=20, capacity=frame.size)
        return count, new_ref

    count, new_ref = roundtrip(frame, ref)
    expected = codec.delta_encode(frame, ref)
    assert int(count) == int(expected[0])
    np.testing.assert_array_equal(np.asarray(new_ref), expected[3])


# ---- bad input ------------------------------------------------------------------------------

GOOD = np.zeros((4, 5, 3), np.uint8)


@pytest.mark.parametrize("kwargs, exc, words", [
    (dict(frame=GOOD.astype(np.float32)), TypeError, "frame"),
    (dict(frame=np.full((4, 5, 3), np.nan)), TypeError, "frame"),
    (dict(reference=GOOD.astype(np.int16)), TypeError, "reference"),
    (dict(frame=np.zeros((0, 5), np.uint8), reference=np.zeros((0, 5), np.uint8)), ValueError, "frame"),
    (dict(frame=np.array(3, np.uint8), reference=np.array(3, np.uint8)), ValueError, "frame"),
    (dict(frame=np.uint8(3)), TypeError, "frame"),
    (dict(reference=np.zeros((4, 5), np.uint8)), ValueError, "same shape"),
    (dict(frame=[[1, 2]]), TypeError, "frame"),
    (dict(frame="abc"), TypeError, "frame"),
    (dict(threshold=-1), ValueError, "threshold"),
    (dict(threshold=256), ValueError, "threshold"),
    (dict(threshold=2.5), TypeError, "threshold"),
    (dict(threshold=True), TypeError, "threshold"),
    (dict(capacity=-1), ValueError, "capacity"),
    (dict(capacity=GOOD.size + 1), ValueError, "capacity"),
    (dict(capacity=1.0), TypeError, "capacity"),
])
def test_delta_encode_rejects_bad_input(kwargs, exc, words):
    args = dict(frame=GOOD, reference=GOOD, threshold=20, capacity=None) | kwargs
    with pytest.raises(exc, match=words):
        codec.delta_encode(args.pop("frame"), args.pop("reference"), **args)


D = np.zeros(4, np.int8)
P = np.array([0, 2, 5, 9], np.int32)


@pytest.mark.parametrize("kwargs, exc, words", [
    (dict(reference=GOOD.astype(np.float64)), TypeError, "reference"),
    (dict(diffs=D.astype(np.uint8)), TypeError, "diffs"),
    (dict(diffs=D.reshape(2, 2)), ValueError, "diffs"),
    (dict(diffs=[0, 0, 0, 0]), TypeError, "diffs"),
    (dict(positions=P.astype(np.float32)), TypeError, "positions"),
    (dict(positions=P[:3]), ValueError, "same length"),
    (dict(count=5), ValueError, "count"),
    (dict(count=-1), ValueError, "count"),
    (dict(count=2.0), TypeError, "count"),
    (dict(count=True), TypeError, "count"),
    (dict(count=np.array([2])), TypeError, "count"),
    (dict(positions=np.array([0, 2, 2, 9], np.int32)), ValueError, "ascending"),
    (dict(positions=np.array([3, 2, 5, 9], np.int32)), ValueError, "ascending"),
    (dict(positions=np.array([0, 2, 5, 60], np.int32)), ValueError, "positions"),
    (dict(positions=np.array([-1, 2, 5, 9], np.int32)), ValueError, "positions"),
])
def test_delta_decode_rejects_bad_input(kwargs, exc, words):
    args = dict(reference=GOOD, diffs=D, positions=P, count=4) | kwargs
    with pytest.raises(exc, match=words):
        codec.delta_decode(args["reference"], args["diffs"], args["positions"], args["count"])


def test_delta_decode_unchecked_skips_out_of_range(backend):
    ref = np.arange(10, dtype=np.uint8)
    diffs = np.array([1, 1, 1], np.int8)
    positions = np.array([-5, 3, 10], np.int32)
    (out,) = same_on_every_backend(backend, codec.delta_decode, ref, diffs, positions, 3, check=False)
    np.testing.assert_array_equal(out, ref + (np.arange(10) == 3))


def test_encoder_needs_a_keyframe_and_a_fixed_shape():
    encoder = codec.DeltaEncoder()
    with pytest.raises(ValueError, match="keyframe"):
        encoder.encode(GOOD)
    encoder.keyframe(GOOD)
    with pytest.raises(ValueError, match="same shape"):
        encoder.encode(np.zeros((4, 6, 3), np.uint8))
    with pytest.raises(ValueError, match="threshold"):
        codec.DeltaEncoder(threshold=300)


def test_round_trip_on_the_device(backend):
    """Encoder outputs fed straight back (count stays a device array) on one backend."""
    rng = np.random.default_rng(11)
    video = drifting_video(rng, (37, 41, 3), 5)
    with portcv.using(backend):
        picture = portcv.asarray(video[0])
        reference = picture
        for frame in video[1:]:
            count, diffs, positions, reference = codec.delta_encode(frame, reference, threshold=12)
            checked = codec.delta_decode(picture, diffs, positions, count)
            picture = codec.delta_decode(picture, diffs, positions, count, check=False)
            assert_same_bits(reference, checked)
            assert_same_bits(reference, picture)


@pytest.mark.parametrize("check", ["yes", None, 1])
def test_delta_decode_check_must_be_a_bool(check):
    ref = np.zeros((2, 3), np.uint8)
    with pytest.raises(TypeError, match="check must be a bool"):
        codec.delta_decode(ref, np.zeros(1, np.int8), np.zeros(1, np.int32), 0, check=check)
