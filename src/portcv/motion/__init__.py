"""Edge-based motion detection (Del Vecchio et al., section III), exact on every backend.

Two frames' edge maps (``portcv.edges.detect``, section II) give a thresholded **difference
matrix** ``D`` (Algorithm 2: a pixel where one map has an edge and the other not, kept only when
the other map holds no matching pixel within ``beta``), a **spatial difference density map**
``D'`` over an m x n grid of cells (Algorithm 3: difference pixels per cell), the **motion
regions** (cells whose density exceeds the motion threshold Gamma) and the **motion-area image**
(the frame shown only inside the motion cells). :class:`MotionDetector` runs the chain one frame
at a time and keeps the previous frame's edges on the device; :func:`detect_motion` runs it over
a whole ``(T, H, W[, 3])`` video at once.

Where the paper's pseudocode and its CUDA listings differ, ``variant="pseudocode"`` (default)
follows the pseudocode and ``variant="listing"`` the listings; ``docs/motion.md`` lists every
difference.
"""

from __future__ import annotations

from ._detector import MotionDetector, MotionResult, detect_motion
from ._motion import VARIANTS
from ._steps import area_image, cell_bounds, density, difference, draw_regions, regions
from . import _motion_cuda  # noqa: F401  (registers the motion kernels' CuPy overrides)

__all__ = [
    "VARIANTS",
    "difference",
    "density",
    "regions",
    "area_image",
    "draw_regions",
    "cell_bounds",
    "MotionResult",
    "MotionDetector",
    "detect_motion",
]
