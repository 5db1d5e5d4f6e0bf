"""portcv.draw: the webcam report's heat map, noise map and text overlay."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import portcv
from portcv import codec, draw

from .helpers import assert_same_bits, images, matches_numpy
from .oracles import draw as oracle


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
    out = matches_numpy(backend, draw.noise_map_from_positions, img, positions, 3)
    expected = np.zeros_like(img)
    expected[1, 2, 0] = 255  # byte 17 = pixel 5; 18 is outside, -1 too, 3 is past count
    np.testing.assert_array_equal(out, expected)


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
])
def test_bad_input(call, exc, words):
    with pytest.raises(exc, match=words):
        call()
