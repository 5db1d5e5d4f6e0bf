from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import portcv
from portcv import transform

from ..helpers import assert_same_bits, images, matches_numpy
from . import oracle_resize as oracle

cv2 = pytest.importorskip("cv2")

CV2_INTER = {"bilinear": cv2.INTER_LINEAR, "bilinear_exact": cv2.INTER_LINEAR_EXACT, "nearest": cv2.INTER_NEAREST}
interpolations = st.sampled_from(transform.INTERPOLATIONS)


@st.composite
def geometry(draw, max_out=64):
    """``{'size': (w, h)}`` or ``{'scale': fx | (fx, fy)}``: up, down, 2x down, 1:1, odd factors."""
    kind = draw(st.sampled_from(["size", "size", "scale", "half", "same"]))
    if kind == "size":
        return {"size": (draw(st.integers(1, max_out)), draw(st.integers(1, max_out)))}
    if kind == "half":
        return {"scale": 0.5}
    if kind == "same":
        return {"scale": 1.0}
    fx = draw(st.sampled_from([0.5, 2.0, 1 / 3, 0.25, 1.5]) | st.floats(0.1, 2.5))
    fy = draw(st.just(fx) | st.floats(0.1, 2.5))
    return {"scale": fx if fx == fy and draw(st.booleans()) else (fx, fy)}


def out_size(img, axis, geo):
    h, w = img.shape[-3:-1] if axis == -1 else img.shape[-2:]
    if "size" in geo:
        return geo["size"]
    fx, fy = geo["scale"] if isinstance(geo["scale"], tuple) else (geo["scale"],) * 2
    return round(w * fx), round(h * fy)


def opencv(img, axis, geo, interpolation):
    """cv2.resize per 2-D image of a batch."""
    per_image = img.shape[-3 if axis == -1 else -2 :]
    flat = img.reshape((-1,) + per_image)
    outs = []
    for p in flat:
        p = np.ascontiguousarray(p)
        if "size" in geo:
            r = cv2.resize(p, geo["size"], interpolation=CV2_INTER[interpolation])
        else:
            fx, fy = geo["scale"] if isinstance(geo["scale"], tuple) else (geo["scale"],) * 2
            r = cv2.resize(p, None, fx=fx, fy=fy, interpolation=CV2_INTER[interpolation])
        outs.append(r.reshape(r.shape[:2] + per_image[2:]))
    out = np.stack(outs)
    return out.reshape(img.shape[: img.ndim - len(per_image)] + out.shape[1:])


@given(data=images(), geo=geometry(), interpolation=interpolations)
def test_resize_same_bits_on_every_backend(backend, data, geo, interpolation):
    img, axis = data
    dw, dh = out_size(img, axis, geo)
    assume(dw >= 1 and dh >= 1)
    matches_numpy(backend, transform.resize, img, interpolation=interpolation, channel_axis=axis, **geo)


@given(data=images(channels=(None, 1, 2, 3, 4)), geo=geometry(max_out=120), interpolation=interpolations)
def test_resize_equals_opencv(data, geo, interpolation):
    img, axis = data
    dw, dh = out_size(img, axis, geo)
    assume(dw >= 1 and dh >= 1)
    ref = opencv(img, axis, geo, interpolation)
    assert_same_bits(ref, transform.resize(img, interpolation=interpolation, channel_axis=axis, **geo))


@pytest.mark.parametrize("interpolation", transform.INTERPOLATIONS)
@pytest.mark.parametrize("shape", [(480, 640), (241, 333, 3), (97, 131, 4)])
@pytest.mark.parametrize("geo", [{"size": (320, 240)}, {"scale": 0.5}, {"scale": 1 / 1.1}, {"size": (701, 513)},
                                 {"scale": (0.37, 1.9)}])
def test_resize_equals_opencv_on_larger_images(interpolation, shape, geo):
    img = portcv.data.synthetic_rgb(shape[0], shape[1], seed=5)
    if len(shape) == 2:
        img = img[..., 1].copy()
    elif shape[2] == 4:
        img = np.concatenate([img, img[..., :1]], axis=-1)
    axis = -1 if len(shape) == 3 else None
    assert_same_bits(opencv(img, axis, geo, interpolation),
                     transform.resize(img, interpolation=interpolation, **geo))


@given(data=images(max_h=8, max_w=9, batch=False, channels=(None, 1, 2, 3)), geo=geometry(max_out=12),
       interpolation=interpolations)
def test_resize_equals_per_pixel_transcription(data, geo, interpolation):
    img, axis = data
    dw, dh = out_size(img, axis, geo)
    assume(dw >= 1 and dh >= 1)
    scale = geo.get("scale")
    if scale is not None and not isinstance(scale, tuple):
        scale = (scale, scale)
    ref = oracle.resize(img, size=geo.get("size"), scale=scale, interpolation=interpolation,
                        has_channels=axis == -1)
    np.testing.assert_array_equal(transform.resize(img, interpolation=interpolation, channel_axis=axis, **geo), ref)


def test_resize_special_cases():
    img = np.arange(35, dtype=np.uint8).reshape(5, 7) * 7
    # Same size: a copy, even when the scale would shift coordinates (OpenCV copies too).
    same = transform.resize(img, scale=1.04)
    np.testing.assert_array_equal(same, img)
    assert same is not img
    # Exactly 2x down averages 2x2 blocks, rounding half up; odd edges average what is there.
    even = np.array([[0, 1, 2, 2], [1, 0, 2, 3]], np.uint8)
    np.testing.assert_array_equal(transform.resize(even, scale=0.5), [[1, 2]])
    np.testing.assert_array_equal(transform.resize(even, scale=0.5), cv2.resize(even, None, fx=0.5, fy=0.5))
    # A 1-pixel image stretches to a constant.
    np.testing.assert_array_equal(transform.resize(np.array([[7]], np.uint8), size=(3, 2)), np.full((2, 3), 7))


GRAY = np.zeros((6, 7), np.uint8)


@pytest.mark.parametrize(
    "call, error, words",
    [
        (lambda: transform.resize(GRAY.astype(np.int8), size=(3, 3)), TypeError, "dtype uint8"),
        (lambda: transform.resize(GRAY[0], size=(3, 3)), ValueError, "at least 2 dimensions"),
        (lambda: transform.resize(GRAY[:0], size=(3, 3)), ValueError, "empty"),
        (lambda: transform.resize(GRAY), ValueError, "exactly one of size"),
        (lambda: transform.resize(GRAY, size=(3, 3), scale=2), ValueError, "exactly one of size"),
        (lambda: transform.resize(GRAY, size=(0, 3)), ValueError, "size"),
        (lambda: transform.resize(GRAY, size=(3,)), ValueError, "size"),
        (lambda: transform.resize(GRAY, size=(3.0, 3)), TypeError, "size"),
        (lambda: transform.resize(GRAY, size=(100000, 100000)), ValueError, "size"),
        (lambda: transform.resize(GRAY, scale=0), ValueError, "scale must be > 0"),
        (lambda: transform.resize(GRAY, scale=-0.5), ValueError, "scale must be > 0"),
        (lambda: transform.resize(GRAY, scale=float("nan")), ValueError, "scale must be finite"),
        (lambda: transform.resize(GRAY, scale=(1.0, float("inf"))), ValueError, "scale must be finite"),
        (lambda: transform.resize(GRAY, scale=(1, 2, 3)), ValueError, "scale"),
        (lambda: transform.resize(GRAY, scale="2"), TypeError, "scale"),
        (lambda: transform.resize(GRAY, scale=0.01), ValueError, "scale"),
        (lambda: transform.resize(GRAY, size=(3, 3), interpolation="bicubic"), ValueError, "interpolation"),
        (lambda: transform.resize(GRAY, size=(3, 3), channel_axis=1), ValueError, "channel_axis"),
    ],
)
def test_resize_rejects_bad_input(call, error, words):
    with pytest.raises(error, match=words):
        call()
