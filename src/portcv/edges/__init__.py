"""Edge detection: Del Vecchio et al.'s detector (NMS with selective thresholding) and Canny.

Images are gray ``(..., H, W)`` uint8 frames (leading axes are a batch); convert colour frames
with :func:`portcv.color.rgb_to_gray` first. Every step is integer arithmetic, so every backend
returns the same bits: gradients are OpenCV's Sobel sums, magnitudes are compared squared (or
rooted with an exact integer square root), gradient sectors are exact integer predicates
instead of ``atan2``. The paper: Del Vecchio, Lin and Natarajan, "GPU Acceleration of Edge-Based
Motion Detection and Machine Learning-Aided Facial Recognition with NVIDIA CUDA",
section II; ``docs/edges.md`` records every choice made where its pseudocode and listings differ.
"""

from __future__ import annotations

from ._canny import canny
from ._detect import detect
from ._edges import (
    SECTOR_DIAGONAL_45,
    SECTOR_DIAGONAL_135,
    SECTOR_HORIZONTAL,
    SECTOR_NONE,
    SECTOR_VERTICAL,
)
from ._gradient import direction_sector, gradient, magnitude
from .. import _derivatives_cuda, _separable_pass_cuda  # noqa: F401  (the CuPy overrides of the core kernels edges run)
from . import _edges_cuda  # noqa: F401  (registers the edge kernels' CuPy overrides)

__all__ = [
    "gradient",
    "magnitude",
    "direction_sector",
    "detect",
    "canny",
    "SECTOR_HORIZONTAL",
    "SECTOR_DIAGONAL_45",
    "SECTOR_VERTICAL",
    "SECTOR_DIAGONAL_135",
    "SECTOR_NONE",
]
