"""Cascade object detection with OpenCV's trained cascades (Haar and LBP), exact on every backend.

:class:`CascadeDetector` runs OpenCV 4's ``CascadeClassifier.detectMultiScale`` semantics --
the same scale list, ``INTER_LINEAR_EXACT`` pyramid, window steps, stage-0 skip rule, variance
rejection, ``groupRectangles`` (eps 0.2) and clipping -- with the window decision reformulated in
integers (no per-window square root or division), so NumPy, CuPy and JAX make identical
decisions; they equal OpenCV's except at exact ties (``docs/detect.md`` measures them).

The structure is the GPU one of Pertsau and Uvarov and Tek's thesis (section
3.1): all pyramid levels packed into one image (one integral image, one launch covers every
scale), the first stages evaluated breadth-first over *all* windows, the survivors compacted
into a dense plan by a prefix sum, and the remaining stages run on the plan.

>>> import numpy as np, portcv
>>> det = portcv.detect.CascadeDetector.from_opencv("haarcascade_frontalface_default.xml")  # doctest: +SKIP
>>> boxes, neighbours = det.detect(np.zeros((120, 160), np.uint8), min_neighbors=3)         # doctest: +SKIP
>>> boxes.shape                                                                              # doctest: +SKIP
(0, 4)
"""

from __future__ import annotations

from ._cascade._detector import CascadeDetector, load_cascade
from ._cascade._xml import Cascade
from ._mct._cascade_file import MCTCascade, load_mct_cascade, save_mct_cascade
from ._mct._detector import MCTDetector
from ._mct._mct import mct
from ._mct._train import train_mct_cascade
from ._scan._group import GROUP_EPS, group_rectangles
from ._video import VideoDetections, detect_video

# The backend twins: importing one registers its overrides of the portable kernels (cheap: CuPy
# and JAX are imported when a kernel first runs on them).
from ._cascade import _cascade_cuda  # noqa: F401  (CuPy: the cascade's and the shared scan kernels)
from ._mct import _mct_cuda, _mct_pallas  # noqa: F401  (CuPy; JAX on a GPU: Pallas)

__all__ = ["Cascade", "CascadeDetector", "load_cascade", "group_rectangles", "GROUP_EPS", "detect_video",
           "VideoDetections", "mct", "MCTCascade", "load_mct_cascade", "save_mct_cascade", "MCTDetector",
           "train_mct_cascade"]
