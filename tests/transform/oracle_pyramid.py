"""OpenCV's pyramid bookkeeping, transcribed loop by loop from cascadedetect.cpp.

``detectMultiScaleNoGrouping``: the scale list; ``FeatureEvaluator::updateScaleData``: each
level's size and its place in the packed buffer (``layer_ofs``, ``sbufSize``).
"""

from __future__ import annotations

import numpy as np


def scales_and_sizes(width, height, scale_factor, window):
    """``[(float32 factor, (w, h)), ...]`` as OpenCV computes them (no min/max object size)."""
    out = []
    factor = 1.0
    while True:
        win_w = int(np.rint(window[0] * factor))
        win_h = int(np.rint(window[1] * factor))
        if win_w > width or win_h > height:
            break
        sc = np.float32(factor)
        out.append((float(sc), (int(np.rint(np.float32(width) / sc)), int(np.rint(np.float32(height) / sc)))))
        factor *= scale_factor
    return out


def opencv_layout(sizes, gap=1):
    """``(placements, buffer width, buffer height)`` of updateScaleData, slots ``size + gap``."""
    buf_w = ((sizes[0][0] + 31) + 31) // 32 * 32  # alignSize(w0 + 31, 32)
    layer_dy = 0
    ox = oy = 0
    places = []
    for i, (w, h) in enumerate(sizes):
        sw, sh = w + gap, h + gap
        if i == 0:
            layer_dy = sh
        if ox + sw > buf_w:
            ox, oy = 0, oy + layer_dy
            layer_dy = sh
        places.append((ox, oy, w, h))
        ox += sw
    return places, buf_w, oy + layer_dy
