"""LBP face recognition: exact local binary patterns, regional histograms, an exact weighted
chi-square distance and its nearest neighbour (the recognizer of Tek's GPU face-recognition
thesis, after Ahonen, Hadid & Pietikäinen).

Codes are computed in decimal fixed point and distances in integer fixed point, so every backend
returns the same bits.
"""

from __future__ import annotations

from .. import _tiled_nearest_cuda  # noqa: F401  (registers the CuPy override of the tiles' merge)
from ._chi_square import AHONEN_WEIGHTS_7X7, chi_square, nearest
from ._histograms import lbp_histograms
from ._lbp import METHODS, local_binary_pattern
from ._recognizer import LBPFaceRecognizer
from . import _recognizer_cuda  # noqa: F401  (registers the CuPy overrides of the kernels above)

__all__ = ["AHONEN_WEIGHTS_7X7", "LBPFaceRecognizer", "METHODS", "chi_square", "lbp_histograms", "local_binary_pattern", "nearest"]
