"""portcv.draw: the webcam report's heat map, noise map and text overlay."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import portcv
from portcv import codec, draw

from ..helpers import assert_same_bits, images, matches_numpy
from . import oracle_draw as oracle


@st.composite
def frame_pairs(draw_, channels=(3,), max_h=40, max_w=50):
    img, _ = draw_(images(channels=channels, max_h=max_h, max_w=max_w))
    rng = np.random.default_rng(draw_(st.integers(0, 2**32 - 1)))
    kind = draw_(st.sampled_from(["noise", "unrelated", "extremes"]))
    if kind == "noise":
        other = np.clip(img.astype(int) + rng.integers(-40, 41, img.shape), 0, 255).astype(np.uint8)
    elif kind == "unrelated":
        other = rng.integers(0, 256, img.shape, dtype=np.uint8)
    else:
        other = np.where(rng.random(img.shape) < 0.5, 255 - img, img).astype(np.uint8)
    return img, other


# ---- heat map -------------------------------------------------------------------------------

@given(pair=frame_pairs(), normalizer=st.sampled_from([765, 510, 1, 300]))
def test_heatmap_same_bits_on_every_backend(backend, pair, normalizer):
    out = matches_numpy(backend, draw.heatmap, *pair, normalizer=normalizer)
    assert out.shape == pair[0].shape and out.dtype == np.uint8


@given(pair=frame_pairs(max_h=6, max_w=7), normalizer=st.sampled_from([765, 510]))
def test_heatmap_equals_report_loop(pair, normalizer):
    expected = oracle.heatmap(*pair, normalizer=float(normalizer))
    np.testing.assert_array_equal(portcv.to_numpy(draw.heatmap(*pair, normalizer=normalizer)), expected)


def test_heatmap_colour_scale():
    t = draw.heatmap_colors()
    assert t[0].tolist() == [0, 0, 255]  # no change: blue
    assert t[765].tolist() == [255, 0, 0]  # black <-> white: red
    assert t[382].tolist() == [0, 254, 0]  # the middle: green (255 sin(pi/2 - eps) truncates to 254)
    assert (np.diff(t[:, 0].astype(int)) >= 0).all() and (np.diff(t[:, 2].astype(int)) <= 0).all()
    t510 = draw.heatmap_colors(normalizer=510)
    assert t510[510].tolist() == [255, 0, 0] and t510[765].tolist() == [0, 0, 0]  # past red: the CPU code's wrap


# ---- noise map ------------------------------------------------------------------------------

@given(pair=frame_pairs(channels=(1, 3, 4)), threshold=st.sampled_from([0, 20, 20, 254, 255]),
       background=st.sampled_from(["black", "current", "previous"]))
def test_noise_map_same_bits_on_every_backend(backend, pair, threshold, background):
    matches_numpy(backend, draw.noise_map, *pair, threshold=threshold, background=background)


@given(pair=frame_pairs(max_h=6, max_w=7), threshold=st.sampled_from([0, 20, 100]),
       background=st.sampled_from(["black", "current", "previous"]))
def test_noise_map_equals_report_loop(pair, threshold, background):
    prev, cur = pair
    base = {"black": None, "current": cur, "previous": prev}[background]
    expected = oracle.noise_map(prev, cur, threshold, base)
    np.testing.assert_array_equal(
        portcv.to_numpy(draw.noise_map(prev, cur, threshold=threshold, background=background)), expected)


@given(pair=frame_pairs(channels=(3, 4)), threshold=st.sampled_from([0, 20, 60]))
def test_noise_map_from_encoder_positions(backend, pair, threshold):
    """Section 5.0.6: the map drawn from the delta encoder's positions is the same map."""
    prev, cur = pair
    with portcv.using(backend):
        count, _, positions, _ = codec.delta_encode(cur, prev, threshold=threshold)
        overlay = draw.noise_map_from_positions(cur, positions, count)
        black = draw.noise_map_from_positions(np.zeros_like(cur), positions, count)
    assert_same_bits(draw.noise_map(prev, cur, threshold=threshold, background="current"), overlay)
    assert_same_bits(draw.noise_map(prev, cur, threshold=threshold), black)


def test_noise_map_from_positions_ignores_entries_past_count_or_outside(backend):
    img = np.zeros((2, 3, 3), np.uint8)
    positions = np.array([-1, 17, 18, 3], np.int32)
    out = matches_numpy(backend, draw.noise_map_from_positions, img, positions, 3, check=False)
    expected = np.zeros_like(img)
    expected[1, 2, 0] = 255  # byte 17 = pixel 5; 18 is outside, -1 too, 3 is past count
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("positions, count, message", [
    (np.array([1, 2], np.int32), -1, r"count must be in \[0, 2\]"),
    (np.array([1, 2], np.int32), 10**12, r"count must be in \[0, 2\]"),
    (np.array([-1, 2], np.int32), 2, r"positions\[:count\] must be in \[0, 18\)"),
    (np.array([1, 18], np.int32), 2, r"positions\[:count\] must be in \[0, 18\)"),
])
def test_noise_map_from_positions_checks_count_and_positions(positions, count, message):
    """It used to accept these silently; check=True (the default) refuses them, as delta_decode does."""
    with pytest.raises(ValueError, match=message):
        draw.noise_map_from_positions(np.zeros((2, 3, 3), np.uint8), positions, count)
    with pytest.raises(TypeError, match="check must be a bool"):
        draw.noise_map_from_positions(np.zeros((2, 3, 3), np.uint8), positions[:1], 0, check="yes")


def test_boxes_refuse_negative_sizes():
    """A negative width or height used to draw nothing silently (cv2.rectangle would normalize it)."""
    rgb = np.zeros((20, 30, 3), np.uint8)
    with pytest.raises(ValueError, match=r"width and height >= 0 .* box 1 is \(10, 10, -5, 5\)"):
        draw.boxes(rgb, [[0, 0, 3, 3], [10, 10, -5, 5]])


# ---- text overlay ---------------------------------------------------------------------------

PRINTABLE = st.text(st.characters(min_codepoint=32, max_codepoint=126), min_size=0, max_size=6)


@given(data=images(channels=(None, 1, 3, 4), max_h=40, max_w=60), text=PRINTABLE, x=st.integers(-20, 60),
       y=st.integers(-20, 40), scale=st.integers(1, 3), seed=st.integers(0, 2**32 - 1), boxed=st.booleans())
def test_text_overlay_same_bits_on_every_backend(backend, data, text, x, y, scale, seed, boxed):
    img, axis = data
    channels = img.shape[-1] if axis == -1 else 1
    rng = np.random.default_rng(seed)
    color = tuple(int(v) for v in rng.integers(0, 256, channels))
    background = tuple(int(v) for v in rng.integers(0, 256, channels)) if boxed else None
    matches_numpy(backend, draw.text_overlay, img, text, origin=(x, y), scale=scale, color=color,
                  background=background, channel_axis=axis)


@given(text=PRINTABLE, x=st.integers(-8, 20), y=st.integers(-8, 20), scale=st.integers(1, 2),
       boxed=st.booleans(), channels=st.sampled_from([None, 3]))
def test_text_overlay_equals_pixel_loop(text, x, y, scale, boxed, channels):
    shape = (17, 23) + (() if channels is None else (channels,))
    img = np.random.default_rng(0).integers(0, 256, shape, dtype=np.uint8)
    color, background = (10, 200, 30), ((1, 2, 3) if boxed else None)
    c = 3 if channels else 1
    expected = oracle.text_overlay(img, draw.glyph_atlas(), text, x, y, scale, color[:c],
                                   None if background is None else background[:c])
    out = draw.text_overlay(img, text, origin=(x, y), scale=scale, color=color[:c],
                            background=None if background is None else background[:c])
    np.testing.assert_array_equal(portcv.to_numpy(out), expected)


def test_glyph_atlas_is_pillows_builtin_font():
    ImageFont = pytest.importorskip("PIL.ImageFont")
    font = ImageFont.load_default_imagefont()
    atlas = draw.glyph_atlas()
    for code in range(32, 127):
        mask = font.getmask(chr(code))
        glyph = np.array(mask, dtype=np.uint8).reshape(mask.size[1], mask.size[0]) > 0
        np.testing.assert_array_equal(atlas[code - 32], glyph, err_msg=repr(chr(code)))


def test_text_overlay_single_glyph_equals_pillow():
    """One character drawn by Pillow (its built-in bitmap font) and by portcv: the same pixels."""
    Image = pytest.importorskip("PIL.Image")
    ImageDraw = pytest.importorskip("PIL.ImageDraw")
    ImageFont = pytest.importorskip("PIL.ImageFont")
    font = ImageFont.load_default_imagefont()
    base = np.random.default_rng(5).integers(0, 256, (16, 12, 3), dtype=np.uint8)
    for code in range(32, 127):
        im = Image.fromarray(base, "RGB")
        ImageDraw.Draw(im).text((3, 2), chr(code), font=font, fill=(250, 20, 90))
        out = draw.text_overlay(base, chr(code), origin=(3, 2), color=(250, 20, 90))
        np.testing.assert_array_equal(portcv.to_numpy(out), np.array(im), err_msg=repr(chr(code)))


def test_text_overlay_outside_or_empty_returns_the_image():
    img = np.full((5, 5, 3), 7, np.uint8)
    for text, origin in [("abc", (100, 0)), ("abc", (0, -20)), ("", (0, 0))]:
        np.testing.assert_array_equal(portcv.to_numpy(draw.text_overlay(img, text, origin=origin)), img)


# ---- boxes (the Rice paper, section IV.C) -----------------------------------------------------

@st.composite
def box_lists(draw_, height, width, max_n=4, dtype=np.int32):
    """(N, 4) boxes near, across and outside the image; some degenerate (w or h = 0)."""
    n = draw_(st.integers(0, max_n))
    rng = np.random.default_rng(draw_(st.integers(0, 2**32 - 1)))
    xy = np.stack([rng.integers(-25, width + 5, n), rng.integers(-25, height + 5, n)], axis=1)
    wh = rng.integers(1, max(height, width) + 30, (n, 2))
    if n and draw_(st.booleans()):
        wh[rng.integers(0, n), rng.integers(0, 2)] = 0  # degenerate (w or h = 0): drawn as nothing
    return np.concatenate([xy, wh], axis=1).astype(dtype)


@given(data=images(channels=(None, 1, 3, 4), max_h=40, max_w=50), thickness=st.sampled_from([1, 1, 2, 3, 4, 7]),
       seed=st.integers(0, 2**32 - 1), dtype=st.sampled_from([np.int32, np.int64, np.int16]), data_=st.data())
def test_boxes_same_bits_on_every_backend(backend, data, thickness, seed, dtype, data_):
    img, axis = data
    h, w = (img.shape[-3], img.shape[-2]) if axis == -1 else (img.shape[-2], img.shape[-1])
    bx = data_.draw(box_lists(h, w, dtype=dtype))
    channels = img.shape[-1] if axis == -1 else 1
    color = tuple(int(v) for v in np.random.default_rng(seed).integers(0, 256, channels))
    out = matches_numpy(backend, draw.boxes, img, bx, color=color, thickness=thickness, channel_axis=axis)
    assert out.shape == img.shape and out.dtype == np.uint8


@given(thickness=st.integers(1, 40), channels=st.sampled_from([None, 3]), data_=st.data())
def test_boxes_equal_cv2_rectangle(thickness, channels, data_):
    """Peer: cv2.rectangle(img, (x, y), (x + w - 1, y + h - 1), color, thickness), every pixel."""
    cv2 = pytest.importorskip("cv2")
    h, w = data_.draw(st.integers(1, 45)), data_.draw(st.integers(1, 55))
    img = np.random.default_rng(h * 100 + w).integers(0, 256, (h, w) + (() if channels is None else (3,)), np.uint8)
    bx = data_.draw(box_lists(h, w, max_n=5))
    bx = bx[(bx[:, 2] >= 1) & (bx[:, 3] >= 1)]  # cv2 draws a line for w or h = 0; portcv draws nothing
    color = (250, 20, 90) if channels else (250,)
    expected = img.copy()
    for x, y, bw, bh in bx.tolist():
        cv2.rectangle(expected, (x, y), (x + bw - 1, y + bh - 1), color if channels else color[0], thickness)
    np.testing.assert_array_equal(portcv.to_numpy(draw.boxes(img, bx, color=color, thickness=thickness)), expected)


@given(thickness=st.integers(1, 6), channels=st.sampled_from([None, 3]), data_=st.data())
def test_boxes_equal_pixel_loop(thickness, channels, data_):
    img = np.random.default_rng(1).integers(0, 256, (13, 17) + (() if channels is None else (3,)), np.uint8)
    bx = data_.draw(box_lists(13, 17))
    color = (1, 2, 3) if channels else (1,)
    expected = oracle.box_outlines(img, bx.tolist(), color, thickness)
    np.testing.assert_array_equal(portcv.to_numpy(draw.boxes(img, bx, color=color, thickness=thickness)), expected)


def test_boxes_default_colour_and_no_boxes(backend):
    rgb = np.zeros((6, 7, 3), np.uint8)
    with portcv.using(backend):
        out = portcv.to_numpy(draw.boxes(rgb, [(1, 1, 3, 3)], thickness=1))
        assert out[1, 1].tolist() == [255, 0, 0] and out[2, 2].tolist() == [0, 0, 0]
        assert portcv.to_numpy(draw.boxes(rgb[..., 0], [(1, 1, 3, 3)]))[1, 1] == 255
        rgba = portcv.to_numpy(draw.boxes(np.zeros((4, 4, 4), np.uint8), [(0, 0, 2, 2)]))
        assert rgba[0, 0].tolist() == [255, 0, 0, 255]
        for none in [(), [], np.zeros((0, 4), np.int32)]:
            same = draw.boxes(rgb, none)
            assert portcv.backend().owns(same)
            np.testing.assert_array_equal(portcv.to_numpy(same), rgb)
        far = [(-10**12, 3, 10**12 + 2, 2), (2**40, 2**40, 5, 5)]  # huge coordinates: clipped, no overflow
        expected = np.zeros_like(rgb)
        expected[3:5, 0:2] = [255, 0, 0]
        np.testing.assert_array_equal(portcv.to_numpy(draw.boxes(rgb, np.array(far, np.int64), thickness=1)), expected)


# ---- mask overlay -----------------------------------------------------------------------------

@st.composite
def masks(draw_, channels, alpha):
    mh, mw = draw_(st.integers(1, 12)), draw_(st.integers(1, 12))
    rng = np.random.default_rng(draw_(st.integers(0, 2**32 - 1)))
    c = channels + (1 if alpha else 0)
    m = rng.integers(0, 256, (mh, mw, c), np.uint8)
    if alpha:
        m[..., -1] = rng.choice(np.array([0, 255, 128, 1, 254], np.uint8), (mh, mw))
    else:  # some pixels of a key colour
        m = np.where(rng.random((mh, mw, 1)) < 0.3, np.uint8(7), m).astype(np.uint8)
    return m


@given(data=images(channels=(None, 3, 4), max_h=30, max_w=40), with_alpha=st.booleans(), keyed=st.booleans(),
       opacity=st.sampled_from([None, 0, 128, 255]),
       interpolation=st.sampled_from(["bilinear", "nearest", "bilinear_exact"]),
       data_=st.data())
def test_mask_overlay_same_bits_on_every_backend(backend, data, with_alpha, keyed, opacity, interpolation, data_):
    img, axis = data
    channels = img.shape[-1] if axis == -1 else 1
    h, w = (img.shape[-3], img.shape[-2]) if axis == -1 else (img.shape[-2], img.shape[-1])
    mask = data_.draw(masks(channels, with_alpha))
    bx = data_.draw(box_lists(h, w, max_n=3))
    key = (7,) * channels if keyed else None
    out = matches_numpy(backend, draw.mask_overlay, img, mask, bx, alpha=opacity, key=key,
                        interpolation=interpolation, channel_axis=axis)
    assert out.shape == img.shape and out.dtype == np.uint8


@given(channels=st.sampled_from([1, 3]), with_alpha=st.booleans(), keyed=st.booleans(),
       opacity=st.sampled_from([None, 100]), interpolation=st.sampled_from(["bilinear", "nearest"]), data_=st.data())
def test_mask_overlay_equals_cv2_resize_and_pixel_loop(channels, with_alpha, keyed, opacity, interpolation, data_):
    """Oracle + peer: each mask scaled by cv2.resize, then blended pixel by pixel, box by box."""
    cv2 = pytest.importorskip("cv2")
    shape = (15, 19) if channels == 1 else (15, 19, 3)
    img = np.random.default_rng(3).integers(0, 256, shape, np.uint8)
    mask = data_.draw(masks(channels, with_alpha))
    bx = data_.draw(box_lists(15, 19, max_n=3))
    key = (7,) * channels if keyed else None
    rgba = mask if with_alpha else np.concatenate([mask, np.full(mask.shape[:2] + (1,), 255, np.uint8)], axis=-1)
    if key is not None:
        rgba = rgba.copy()
        rgba[(mask[..., :channels] == 7).all(axis=-1), -1] = 0
    flag = {"bilinear": cv2.INTER_LINEAR, "nearest": cv2.INTER_NEAREST}[interpolation]
    kept = [b for b in bx.tolist() if b[2] >= 1 and b[3] >= 1]
    scaled = [cv2.resize(rgba, (bw, bh), interpolation=flag).reshape(bh, bw, channels + 1) for _, _, bw, bh in kept]
    expected = oracle.mask_overlay(img, scaled, kept, 255 if opacity is None else opacity)
    out = draw.mask_overlay(img, mask[..., 0] if channels == 1 and not with_alpha else mask, bx, alpha=opacity,
                            key=key, interpolation=interpolation)
    np.testing.assert_array_equal(portcv.to_numpy(out), expected)


def test_mask_overlay_opaque_paste_and_no_boxes(backend):
    img = np.zeros((6, 8, 3), np.uint8)
    mask = np.full((2, 2, 3), 200, np.uint8)
    with portcv.using(backend):
        out = portcv.to_numpy(draw.mask_overlay(img, mask, [(2, 1, 4, 3)]))
        expected = img.copy()
        expected[1:4, 2:6] = 200
        np.testing.assert_array_equal(out, expected)
        np.testing.assert_array_equal(portcv.to_numpy(draw.mask_overlay(img, mask, [(2, 1, 4, 3)], alpha=0)), img)
        same = draw.mask_overlay(img, mask, ())
        assert portcv.backend().owns(same)
        np.testing.assert_array_equal(portcv.to_numpy(same), img)


# ---- bad input ------------------------------------------------------------------------------

RGB = np.zeros((4, 5, 3), np.uint8)


@pytest.mark.parametrize("call, exc, words", [
    (lambda: draw.heatmap(RGB.astype(np.float32), RGB), TypeError, "previous"),
    (lambda: draw.heatmap(RGB, RGB[..., :2]), ValueError, "current"),
    (lambda: draw.heatmap(RGB, RGB[:3]), ValueError, "same shape"),
    (lambda: draw.heatmap(RGB[..., 0], RGB[..., 0]), ValueError, "previous"),
    (lambda: draw.heatmap(RGB, RGB, normalizer=0), ValueError, "normalizer"),
    (lambda: draw.heatmap(RGB, RGB, normalizer=766), ValueError, "normalizer"),
    (lambda: draw.heatmap(RGB, RGB, normalizer=1.5), TypeError, "normalizer"),
    (lambda: draw.noise_map(RGB, np.full((4, 5, 3), np.nan)), TypeError, "current"),
    (lambda: draw.noise_map(RGB, RGB, threshold=256), ValueError, "threshold"),
    (lambda: draw.noise_map(RGB, RGB, background="white"), ValueError, "background"),
    (lambda: draw.noise_map(RGB, RGB[:, :4]), ValueError, "same shape"),
    (lambda: draw.noise_map(np.zeros((0, 5, 3), np.uint8), np.zeros((0, 5, 3), np.uint8)), ValueError, "previous"),
    (lambda: draw.noise_map_from_positions(RGB, [1, 2], 2), TypeError, "positions"),
    (lambda: draw.noise_map_from_positions(RGB, np.broadcast_to(np.int32(0), (2**31,)), 2), ValueError,
     "positions holds 2147483648 entries"),  # a 16 GiB int64 copy before
    (lambda: draw.noise_map_from_positions(RGB, np.zeros(3, np.float32), 2), TypeError, "positions"),
    (lambda: draw.noise_map_from_positions(RGB, np.zeros(3, np.int32), 2.0), TypeError, "count"),
    (lambda: draw.text_overlay(RGB, "é"), ValueError, "ASCII"),
    (lambda: draw.text_overlay(RGB, b"abc"), TypeError, "text"),
    (lambda: draw.text_overlay(RGB, "a", origin=(1,)), ValueError, "origin"),
    (lambda: draw.text_overlay(RGB, "a", origin=(1.5, 2)), TypeError, "origin"),
    (lambda: draw.text_overlay(RGB, "a", scale=0), ValueError, "scale"),
    (lambda: draw.text_overlay(RGB, "a", color=(1, 2)), ValueError, "color"),
    (lambda: draw.text_overlay(RGB, "a", color=(1, 2, 300)), ValueError, "color"),
    (lambda: draw.text_overlay(RGB, "a", color="red"), TypeError, "color"),
    (lambda: draw.text_overlay(RGB, "a", background=3.5), TypeError, "background"),
    (lambda: draw.text_overlay(RGB.astype(np.int16), "a"), TypeError, "image"),
    (lambda: draw.boxes(RGB, np.zeros((2, 3), np.int32)), ValueError, "boxes"),
    (lambda: draw.boxes(RGB, np.zeros((4,), np.int32)), ValueError, "boxes"),
    (lambda: draw.boxes(RGB, [(1, 2, 3)]), ValueError, "boxes"),
    (lambda: draw.boxes(RGB, [(1, 2, 3, 4), (1, 2)]), ValueError, "boxes"),
    (lambda: draw.boxes(RGB, np.zeros((1, 4), np.float32)), TypeError, "boxes"),
    (lambda: draw.boxes(RGB, np.zeros((1, 4), bool)), TypeError, "boxes"),
    (lambda: draw.boxes(RGB, "0 0 2 2"), TypeError, "boxes"),
    (lambda: draw.boxes(RGB, [(0, 0, 2, 2)], color=(1, 2)), ValueError, "color"),
    (lambda: draw.boxes(RGB, [(0, 0, 2, 2)], color=(1, 2, 256)), ValueError, "color"),
    (lambda: draw.boxes(RGB, [(0, 0, 2, 2)], color=(1, 2, -1)), ValueError, "color"),
    (lambda: draw.boxes(RGB, [(0, 0, 2, 2)], color=(1.0, 2, 3)), TypeError, "color"),
    (lambda: draw.boxes(RGB, [(0, 0, 2, 2)], thickness=0), ValueError, "thickness"),
    (lambda: draw.boxes(RGB, [(0, 0, 2, 2)], thickness=-1), ValueError, "thickness"),
    (lambda: draw.boxes(RGB, [(0, 0, 2, 2)], thickness=256), ValueError, "thickness"),
    (lambda: draw.boxes(RGB, [(0, 0, 2, 2)], thickness=2.0), TypeError, "thickness"),
    (lambda: draw.boxes(RGB.astype(np.float32), [(0, 0, 2, 2)]), TypeError, "image"),
    (lambda: draw.mask_overlay(RGB, RGB[..., :2], [(0, 0, 2, 2)]), ValueError, "mask"),
    (lambda: draw.mask_overlay(RGB, RGB.astype(np.int16), [(0, 0, 2, 2)]), TypeError, "mask"),
    (lambda: draw.mask_overlay(RGB, RGB[0], [(0, 0, 2, 2)]), ValueError, "mask"),
    (lambda: draw.mask_overlay(RGB, RGB, np.zeros((1, 5), np.int32)), ValueError, "boxes"),
    (lambda: draw.mask_overlay(RGB, RGB, np.zeros((1, 4), np.float64)), TypeError, "boxes"),
    (lambda: draw.mask_overlay(RGB, RGB, [(0, 0, 2, 2)], alpha=256), ValueError, "alpha"),
    (lambda: draw.mask_overlay(RGB, RGB, [(0, 0, 2, 2)], alpha=0.5), TypeError, "alpha"),
    (lambda: draw.mask_overlay(RGB, RGB, [(0, 0, 2, 2)], key=(1, 2)), ValueError, "key"),
    (lambda: draw.mask_overlay(RGB, RGB, [(0, 0, 2, 2)], interpolation="cubic"), ValueError, "interpolation"),
    (lambda: draw.mask_overlay(RGB, RGB, [(0, 0, 2**20, 2**20)]), ValueError, "boxes"),
])
def test_bad_input(call, exc, words):
    with pytest.raises(exc, match=words):
        call()


def test_text_overlay_default_color_is_white_on_gray_and_rgb():
    gray = portcv.to_numpy(draw.text_overlay(np.zeros((13, 8), np.uint8), "H"))
    rgb = portcv.to_numpy(draw.text_overlay(np.zeros((13, 8, 3), np.uint8), "H"))
    assert gray.max() == 255 and (rgb[..., 0] == gray).all() and (rgb == rgb[..., :1]).all()
