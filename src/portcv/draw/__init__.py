"""The Webcam Streaming & Filters report's visualizers: heat map (section 4), noise map (section 5), text overlay (section 3);
and Del Vecchio et al.'s face annotations (section IV.C): box outlines and scaled mask overlays.

All are exact on every backend: the heat map's sines become a colour table built once on
the host, the noise map is integer compares, the text comes from a bitmap glyph atlas
(Pillow's built-in 6x11 font, embedded here) blitted with integer scaling, box outlines are an
integer distance rule whose pixels are scattered, and masks are blended in integers. The portable
array-API code runs on NumPy, JAX (under ``jit``) and CuPy alike; there is no hand-written CUDA
for these (each is one elementwise pass, which CuPy's generated kernels already fuse well).
"""

from __future__ import annotations

from ._boxes import boxes, mask_overlay
from ._heatmap import heatmap, heatmap_colors
from ._noise import noise_map, noise_map_from_positions
from ._text import glyph_atlas, text_overlay

__all__ = [
    "heatmap",
    "heatmap_colors",
    "noise_map",
    "noise_map_from_positions",
    "text_overlay",
    "glyph_atlas",
    "boxes",
    "mask_overlay",
]
