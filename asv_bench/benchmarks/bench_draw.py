"""portcv.draw: the webcam report's heat map (section 4), noise map (5) and text overlay (3).

Inputs are two consecutive frames of :func:`portcv.stream.synthetic_source`. The report's
figures for 1920x1080 (a Jetson Nano, copies included): heat map about 50 ms (4.2.1), noise map
7.6 ms in its best overlay kernel and 0.9 ms drawn from the encoder's positions (5.0.5, 5.0.6),
text overlay about 2 us per character (3.1.2).
"""

from __future__ import annotations

import functools

import portcv
from portcv import codec, draw

from ._common import BACKENDS, SIZE_NAMES, Benchmark, Operation
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
