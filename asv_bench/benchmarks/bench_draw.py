"""portcv.draw: the webcam report's heat map (section 4), noise map (5) and text overlay (3); the
Rice paper's box outlines and mask overlays (section IV.C).

Inputs are two consecutive frames of :func:`portcv.stream.synthetic_source`. The report's
figures for 1920x1080 (a Jetson Nano, copies included): heat map about 50 ms (4.2.1), noise map
7.6 ms in its best overlay kernel and 0.9 ms drawn from the encoder's positions (5.0.5, 5.0.6),
text overlay about 2 us per character (3.1.2). The Rice paper gives no timing for its face
annotations; ``Boxes`` is compared with ``cv2.rectangle`` in a loop over the boxes.
"""

from __future__ import annotations

import functools

import numpy as np

import portcv
from portcv import codec, draw

from ._common import (
    BACKENDS,
    OPENCV,
    SIZE_NAMES,
    SIZES,
    Benchmark,
    Operation,
    peer_module,
)
from .bench_codec import frame_pair


class Heatmap(Benchmark):
    params = [BACKENDS, SIZE_NAMES]
    param_names = ["backend", "size"]

    def setup(self, backend, size):
        self.op = Operation(backend, draw.heatmap, *frame_pair(size))

    def time_heatmap(self, backend, size):
        self.op()


class NoiseMap(Benchmark):
    params = [BACKENDS, SIZE_NAMES, ["black", "current"]]
    param_names = ["backend", "size", "background"]

    def setup(self, backend, size, background):
        frame, ref = frame_pair(size)
        self.op = Operation(backend, functools.partial(draw.noise_map, threshold=20, background=background), ref, frame)

    def time_noise_map(self, backend, size, background):
        self.op()


class NoiseMapFromPositions(Benchmark):
    params = [BACKENDS, SIZE_NAMES]
    param_names = ["backend", "size"]

    def setup(self, backend, size):
        frame, ref = frame_pair(size)
        with portcv.using("numpy"):
            count, _, positions, _ = codec.delta_encode(frame, ref, threshold=20)
        self.op = Operation(backend, lambda img, p: draw.noise_map_from_positions(img, p, int(count)), frame, positions)

    def time_noise_map_from_positions(self, backend, size):
        self.op()


class TextOverlay(Benchmark):
    params = [BACKENDS, SIZE_NAMES]
    param_names = ["backend", "size"]

    def setup(self, backend, size):
        frame, _ = frame_pair(size)
        self.op = Operation(backend, functools.partial(draw.text_overlay, text="fps 29.97  6.2 MB/s", origin=(16, 16),
                                                       scale=3, color=(0, 255, 0)), frame)

    def time_text_overlay(self, backend, size):
        self.op()


def face_boxes(size: str, n: int) -> np.ndarray:
    """``n`` face-sized boxes (x, y, w, h) spread over a frame of ``size``, a few crossing its edge."""
    h, w = SIZES[size]
    rng = np.random.default_rng(0)
    side = rng.integers(h // 12, h // 4, n)
    x = rng.integers(-side // 4, w - side + side // 4)
    y = rng.integers(-side // 4, h - side + side // 4)
    return np.stack([x, y, side, side], axis=1).astype(np.int32)


def _cv2_boxes(thickness: int):
    cv2 = peer_module(OPENCV)

    def draw_all(frame, boxes):
        out = frame.copy()
        for x, y, w, h in boxes.tolist():
            cv2.rectangle(out, (x, y), (x + w - 1, y + h - 1), (255, 0, 0), thickness)
        return out

    return draw_all


class Boxes(Benchmark):
    """``boxes(frame, boxes)``: 1 or 16 face boxes, thickness 2; the peer is cv2.rectangle per box."""

    params = [BACKENDS + [OPENCV], SIZE_NAMES, [1, 16]]
    param_names = ["backend", "size", "n_boxes"]

    def setup(self, backend, size, n_boxes):
        frame, _ = frame_pair(size)
        fn = _cv2_boxes(2) if backend == OPENCV else functools.partial(draw.boxes, thickness=2)
        self.op = Operation(backend, fn, frame, face_boxes(size, n_boxes))

    def time_boxes(self, backend, size, n_boxes):
        self.op()


class MaskOverlay(Benchmark):
    """``mask_overlay(frame, rgba_mask, boxes)``: a 256x256 RGBA mask scaled onto 4 face boxes."""

    params = [BACKENDS, SIZE_NAMES, ["bilinear", "nearest"]]
    param_names = ["backend", "size", "interpolation"]

    def setup(self, backend, size, interpolation):
        frame, _ = frame_pair(size)
        rng = np.random.default_rng(1)
        mask = rng.integers(0, 256, (256, 256, 4), dtype=np.uint8)
        mask[..., 3] = np.where(rng.random((256, 256)) < 0.4, 0, 255)
        boxes = face_boxes(size, 4)
        self.op = Operation(backend, lambda img, m: draw.mask_overlay(img, m, boxes, interpolation=interpolation),
                            frame, mask)

    def time_mask_overlay(self, backend, size, interpolation):
        self.op()


class HeatmapColors:
    """``heatmap_colors()``: the 766-entry colour table, built on the host (cold) or from the cache."""

    def time_heatmap_colors_cold(self):
        draw._heatmap._heatmap_table.cache_clear()
        draw.heatmap_colors(normalizer=765)

    def time_heatmap_colors_cached(self):
        draw.heatmap_colors(normalizer=765)


class GlyphAtlas:
    """``glyph_atlas()``: decoding the embedded 6x11 font (cold) and the cached lookup."""

    def time_glyph_atlas_cold(self):
        draw.glyph_atlas.cache_clear()
        draw.glyph_atlas()

    def time_glyph_atlas_cached(self):
        draw.glyph_atlas()
