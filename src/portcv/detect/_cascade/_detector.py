"""The cascade detector: a cascade (found by name and loaded once), its compiled scans per frame
geometry, and detection per frame."""

from __future__ import annotations

import dataclasses
import functools
import os
from typing import Any

import numpy as np

from ... import _validate
from .._scan._group import group_and_clip
from .._scan._parameters import ScanParameters, to_gray
from ._scan import candidates_to_rects, check_params, run_scan
from ._xml import Cascade, parse_cascade, read_cascade

#: scikit-image's copy of OpenCV's LBP frontal-face cascade (with its tag typo).
SKIMAGE_LBP_NAME = "lbpcascade_frontalface_opencv.xml"


def resolve_cascade_path(path_or_name: Any) -> str:
    """A file path, or a cascade name found in ``cv2.data.haarcascades`` / scikit-image's data."""
    if not isinstance(path_or_name, (str, os.PathLike)):
        raise TypeError(f"path_or_name must be a path or a cascade name, got {type(path_or_name).__name__}")
    path = os.fspath(path_or_name)
    if os.path.isfile(path):
        return path
    name = os.path.basename(path)
    if name == path:  # a bare name: look in the known cascade folders
        for folder in _cascade_folders():
            candidate = os.path.join(folder, name)
            if os.path.isfile(candidate):
                return candidate
    raise FileNotFoundError(
        f"cascade {path!r} not found: give a file path, or a name from cv2.data.haarcascades (OpenCV installed) "
        f"or {SKIMAGE_LBP_NAME!r} (scikit-image installed)"
    )


def _cascade_folders() -> list[str]:
    folders = []
    try:
        import cv2

        folders.append(cv2.data.haarcascades)
    except (ImportError, AttributeError):
        pass
    try:
        import importlib.util

        spec = importlib.util.find_spec("skimage")
        if spec is not None and spec.submodule_search_locations:
            folders.append(os.path.join(list(spec.submodule_search_locations)[0], "data"))
    except (ImportError, ValueError):
        pass
    return folders


@functools.lru_cache(maxsize=32)
def _load_cached(path: str, mtime: float, size: int) -> Cascade:
    return read_cascade(path)


def load(path_or_name: Any) -> Cascade:
    path = resolve_cascade_path(path_or_name)
    st = os.stat(path)
    return _load_cached(os.path.abspath(path), st.st_mtime, st.st_size)


class CascadeDetector:
    """Multi-scale cascade detector with OpenCV ``CascadeClassifier`` semantics.

    Parameters
    ----------
    cascade : Cascade
        From :func:`load_cascade`; or use :meth:`from_opencv`.

    Examples
    --------
    >>> import numpy as np, portcv
    >>> det = portcv.detect.CascadeDetector.from_opencv("haarcascade_frontalface_default.xml")  # doctest: +SKIP
    >>> boxes, neighbours = det.detect(np.zeros((64, 64), np.uint8))                            # doctest: +SKIP
    >>> boxes.shape, neighbours.shape                                                           # doctest: +SKIP
    ((0, 4), (0,))
    """

    def __init__(self, cascade: Cascade) -> None:
        if not isinstance(cascade, Cascade):
            raise TypeError(f"cascade must be a portcv.detect.Cascade, got {type(cascade).__name__}")
        self.cascade = cascade
        self._device: dict[Any, tuple] = {}  # cascade arrays per device
        self._grids: dict[tuple, int] = {}  # plan capacities learned per frame geometry (JAX)

    @classmethod
    def from_opencv(cls, path_or_name: Any) -> "CascadeDetector":
        """A detector for an OpenCV cascade XML file (a path, or a name; see :func:`load_cascade`).

        Examples
        --------
        >>> import portcv
        >>> det = portcv.detect.CascadeDetector.from_opencv("haarcascade_eye.xml")  # doctest: +SKIP
        >>> det.cascade.window                                                      # doctest: +SKIP
        (20, 20)
        """
        return cls(load(path_or_name))

    @classmethod
    def from_xml(cls, data: bytes) -> "CascadeDetector":
        """A detector from cascade XML bytes (same checks as :func:`load_cascade`)."""
        if not isinstance(data, (bytes, bytearray)):
            raise TypeError(f"data must be bytes, got {type(data).__name__}")
        return cls(parse_cascade(bytes(data)))

    def __repr__(self) -> str:
        c = self.cascade
        return (f"<CascadeDetector {c.feature_type} {c.window[0]}x{c.window[1]}, {c.n_stages} stages, "
                f"{c.n_trees} trees>")

    def detect(self, image: Any, *, scale_factor: float = 1.1, min_neighbors: int = 3, min_size: Any = (0, 0),
               max_size: Any = None, split_stage: Any = None, raw: bool = False,
               channel_axis: Any = "auto") -> Any:
        """Detect objects at every scale, as ``cv2.CascadeClassifier.detectMultiScale2``.

        Parameters
        ----------
        image : (H, W) or (H, W, C) uint8 array, or a batch (T, H, W[, C])
            Gray, or RGB (C = 3, or 4 with alpha ignored), converted with OpenCV's fixed-point
            ``RGB2GRAY`` (:func:`portcv.color.rgb_to_gray`). Any backend.
        scale_factor : float
            Ratio between pyramid scales, in (1, 10] (``scaleFactor``).
        min_neighbors : int
            Keep clusters of more than this many candidates (``minNeighbors``); 0 returns the
            ungrouped candidates.
        min_size, max_size : (int, int)
            Smallest / largest object ``(width, height)``; ``max_size=None`` (or a 0 in it) means
            the image size (``minSize``, ``maxSize``). A ``min_size`` larger than the image gives
            no detections, not an error (as cv2).
        split_stage : int or None
            Stages ``[0, split_stage)`` run breadth-first on every window of every scale; the
            visited survivors are compacted and stages ``[split_stage, S)`` run on that plan.
            None (default): the backend's measured best (2 on CuPy and NumPy, 1 on JAX).
            Any value gives the same result; it only moves work.
        raw : bool
            Return the candidates before grouping (as ``min_neighbors=0``).
        channel_axis : {'auto', None, -1}
            As in :func:`portcv.filters.sep_filter`.

        Returns
        -------
        boxes : (N, 4) int32 NumPy array
            ``[x, y, w, h]`` in image pixels, clipped to the image.
        neighbours : (N,) int32 NumPy array
            Candidates per box (``numDetections``; ones for raw candidates).
            For a batch, a list of ``(boxes, neighbours)`` per frame.

        Notes
        -----
        OpenCV 4.13 ``CascadeClassifierImpl::detectMultiScale`` (``cascadedetect.cpp``), read
        into ``docs/opencv-arithmetic.md``; Pertsau and Uvarov's breadth-first stages
        with mask -> plan compaction; Tek's thesis (section 3.1) packed pyramid. The window
        decision is integer (see ``portcv._cascade``): variance ``100 A^2 >= nf`` instead of
        ``A / sqrt(nf) >= 0.1``, Haar nodes ``F < thr sqrt(nf)`` from signs and squares, stage
        sums in fixed point; identical on every backend, equal to OpenCV's float decision
        except at exact ties. Candidate coordinates are ``rint(x * factor)`` (half to even).
        The grouping (``groupRectangles``, eps 0.2) and the clip run on the device on CuPy and
        JAX (one small copy of the boxes comes back) and on the host on NumPy; same boxes.

        Examples
        --------
        >>> import numpy as np, portcv
        >>> det = portcv.detect.CascadeDetector.from_opencv("haarcascade_frontalface_default.xml")  # doctest: +SKIP
        >>> boxes, n = det.detect(np.full((48, 48), 128, np.uint8), min_neighbors=0)               # doctest: +SKIP
        >>> len(boxes)                                                                              # doctest: +SKIP
        0
        """
        params = check_params(scale_factor, min_neighbors, min_size, max_size, split_stage, self.cascade.n_stages)
        if _validate.boolean(raw, "raw"):
            params = dataclasses.replace(params, min_neighbors=0)  # the candidates, ungrouped
        img = _validate.image(image)
        gray, batched = to_gray(img, channel_axis)
        if batched:
            return [self._detect_one(gray[t], params) for t in range(gray.shape[0])]
        return self._detect_one(gray, params)

    def _detect_one(self, gray: Any, params: ScanParameters) -> tuple[np.ndarray, np.ndarray]:
        height, width = gray.shape
        # The cached geometry, the launches and the single read-back: _scan.run_scan.
        scanned = run_scan(self.cascade, gray, params, device_cache=self._device, state=self._grids)
        if scanned is None:
            return np.zeros((0, 4), np.int32), np.zeros(0, np.int32)
        grid, idx, grouped = scanned
        if grouped is not None:  # grouped and clipped on the device (CuPy)
            return grouped
        rects = candidates_to_rects(grid, idx, self.cascade.window)
        return group_and_clip(rects, params.min_neighbors, width, height)


def load_cascade(path_or_name: Any) -> Cascade:
    """Load an OpenCV cascade XML file into a :class:`Cascade` (flat arrays).

    Parameters
    ----------
    path_or_name : str or os.PathLike
        A file path, or a bare file name looked up in ``cv2.data.haarcascades`` (when OpenCV is
        installed) and in scikit-image's data folder (``'lbpcascade_frontalface_opencv.xml'``).

    Returns
    -------
    Cascade
        Host NumPy arrays; see ``docs/detect.md`` for the layout.

    Raises
    ------
    FileNotFoundError
        Neither a file nor a known cascade name.
    ValueError
        Malformed, truncated or unsupported XML (a DOCTYPE/ENTITY, more than 64 MB, a missing
        tag, an index out of range, a non-integer Haar weight, ...), naming the file.

    Notes
    -----
    Reads OpenCV's new (``opencv-cascade-classifier``) and old (``opencv-haar-classifier``)
    formats: Haar features with tilted rectangles and multi-node trees, LBP features with
    256-bit category sets (``cascadedetect.cpp`` / ``cascadedetect_convert.cpp`` semantics, from
    ``docs/opencv-arithmetic.md``). The stage thresholds are ``float32(xml) - 1e-5f`` as in
    OpenCV, and leaves become integers at a common binary scale ``2**k``, so a stage's decision
    is an exact int64 comparison. scikit-image's copy of the LBP face cascade misspells
    ``featureParams`` as ``featuhreParams``; it is accepted (``Cascade.notes`` says so).

    Examples
    --------
    >>> import portcv
    >>> c = portcv.detect.load_cascade("haarcascade_frontalface_default.xml")  # doctest: +SKIP
    >>> c.feature_type, c.window, c.n_stages                                   # doctest: +SKIP
    ('haar', (24, 24), 25)
    """
    return load(path_or_name)
