"""``LBPFaceRecognizer``: OpenCV ``cv2.face.LBPHFaceRecognizer``'s interface over portcv's exact
LBP histograms and weighted chi-square 1-NN (Ahonen et al.; Tek's thesis, chapter 3.2)."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np

from .. import _validate
from ..backends import asarray, backend, to_numpy
from ._chi_square import AHONEN_WEIGHTS_7X7, frac_bits, nearest
from ._histograms import lbp_histograms, region_layout
from ._lbp import METHODS, check_pr

_FORMAT = "portcv.recognize.LBPFaceRecognizer/1"


class LBPFaceRecognizer:
    """Face recognition by regional LBP histograms and the nearest neighbour under the exact
    weighted chi-square distance, with ``cv2.face.LBPHFaceRecognizer``'s train/update/predict.

    Parameters
    ----------
    P, R, method, region_size, grid
        The descriptor, as in :func:`lbp_histograms` (OpenCV's ``neighbors``, ``radius``,
        ``grid_x``/``grid_y`` are ``P``, ``R``, ``grid``).
    weights : 'ahonen7x7', None or (ny, nx) array of int in [0, 255]
        Region weights: Ahonen et al.'s 7 x 7 matrix (:data:`AHONEN_WEIGHTS_7X7`; needs 7 x 7
        regions), none (all 1), or your own.
    threshold : float, optional
        Predictions farther than this (chi-square units) get the label -1, as OpenCV's
        ``threshold``.

    Notes
    -----
    The gallery of histograms stays on the active backend's device; every backend predicts the
    same labels and distances (the distances are exact fixed point, ties go to the earliest
    trained image). :meth:`save` writes an ``.npz`` without pickled objects.

    References
    ----------
    T. Ahonen, A. Hadid, M. Pietikäinen, "Face description with local binary patterns:
    application to face recognition", IEEE TPAMI 28(12), 2006, doi:10.1109/TPAMI.2006.244.
    S. C. Tek, M.Sc. thesis, ITU, 2012, §2.2, §3.2.

    Examples
    --------
    >>> import numpy as np, portcv
    >>> rng = np.random.default_rng(0)
    >>> faces = rng.integers(0, 256, (4, 150, 130), dtype=np.uint8)
    >>> rec = portcv.recognize.LBPFaceRecognizer()
    >>> rec.train(faces, [10, 11, 12, 13])
    >>> label, distance = rec.predict(faces[2])
    >>> label, distance
    (12, 0.0)
    """

    def __init__(self, *, P: int = 8, R: float = 2.0, method: str = "u2", region_size: Any = (18, 21),
                 grid: Any = None, weights: Any = "ahonen7x7", threshold: float | None = None) -> None:
        self.P, self.R = check_pr(P, R)
        self.method = _validate.choice(method, "method", METHODS)
        self.region_size = tuple(_validate.kernel_size(region_size, "region_size", odd=False, low=1, high=1 << 15))
        self.grid = None if grid is None else tuple(_validate.kernel_size(grid, "grid", odd=False, low=1, high=4096))
        if isinstance(weights, str):
            _validate.choice(weights, "weights", ("ahonen7x7",))
        elif weights is not None:
            w = np.asarray(to_numpy(weights) if not isinstance(weights, (list, tuple, np.ndarray)) else weights)
            if not np.issubdtype(w.dtype, np.integer) or w.ndim != 2 or w.size == 0 or w.min() < 0 or w.max() > 255:
                raise ValueError(f"weights must be 'ahonen7x7', None or a 2-D (ny, nx) array of integers in [0, 255], "
                                 f"got {w.dtype} of shape {w.shape}")
            weights = w.astype(np.int64)
        self.weights = weights
        self.threshold = None if threshold is None else _validate.real(threshold, "threshold", positive=True)
        self._gallery: Any = None
        self._labels = np.zeros(0, np.int32)
        self._face_shape: tuple[int, int] | None = None

    # -- the descriptor ------------------------------------------------------------------------
    def _faces(self, images: Any, name: str = "images") -> Any:
        if isinstance(images, (list, tuple)) and images and all(hasattr(i, "shape") for i in images):
            shapes = {tuple(i.shape) for i in images}
            if len(shapes) != 1:
                raise ValueError(f"{name} must all have one size, got {sorted(shapes)}")
            images = backend().xp.stack([asarray(i) for i in images]) if len(images) > 1 else asarray(images[0])[None]
        images = _validate.image(images, name)
        if images.ndim == 2:
            images = images[None]
        if images.ndim != 3:
            raise ValueError(f"{name} must be one (H, W) face or (n, H, W) faces, got shape {tuple(images.shape)}")
        if self._face_shape is not None and tuple(images.shape[1:]) != self._face_shape:
            raise ValueError(f"{name} are {tuple(images.shape[1:])} but the recognizer was trained on "
                             f"{self._face_shape} faces (mismatched histogram lengths)")
        return images

    def _histograms(self, faces: Any) -> Any:
        h = lbp_histograms(faces, P=self.P, R=self.R, method=self.method, region_size=self.region_size,
                           grid=self.grid, dtype="uint16")
        return h

    def _max_count(self, shape: tuple[int, int]) -> int:
        c = math.ceil(self.R)
        H, W = shape[0] - 2 * c, shape[1] - 2 * c
        _, _, h, w = region_layout(H, W, self.region_size, self.grid)
        return min(h, H) * min(w, W)

    def _weights(self, regions: tuple[int, int]) -> Any:
        if isinstance(self.weights, str):
            if regions != (7, 7):
                raise ValueError(f"weights='ahonen7x7' needs 7 x 7 regions; these faces give {regions[0]} x "
                                 f"{regions[1]}: pass weights=None or your own (ny, nx) weights")
            return AHONEN_WEIGHTS_7X7
        if self.weights is not None and tuple(self.weights.shape) != regions:
            raise ValueError(f"weights of shape {self.weights.shape} do not match the {regions} regions")
        return self.weights

    @staticmethod
    def _label_array(labels: Any, n: int) -> np.ndarray:
        lab = np.asarray(to_numpy(labels) if hasattr(labels, "shape") and not isinstance(labels, np.ndarray) else labels)
        if not np.issubdtype(lab.dtype, np.integer):
            raise TypeError(f"labels must be integers, got {lab.dtype}")
        if lab.shape != (n,):
            raise ValueError(f"labels must have one entry per image ({n}), got shape {lab.shape}")
        if lab.min() < -(2**31) or lab.max() >= 2**31:
            raise ValueError("labels must fit int32")
        return lab.astype(np.int32)

    # -- cv2.face's interface ------------------------------------------------------------------
    def train(self, images: Any, labels: Any) -> None:
        """Replace the gallery with ``images`` ((n, H, W) uint8 faces of one size) and their labels."""
        self._gallery, self._labels, self._face_shape = None, np.zeros(0, np.int32), None
        self.update(images, labels)

    def update(self, images: Any, labels: Any) -> None:
        """Add faces (of the trained size) and their labels to the gallery."""
        faces = self._faces(images)
        labels = self._label_array(labels, faces.shape[0])
        hist = self._histograms(faces)
        self._weights(tuple(hist.shape[1:3]))  # check the weights fit before storing anything
        xp = backend().xp
        self._gallery = hist if self._gallery is None else xp.concat([asarray(self._gallery), hist], axis=0)
        self._labels = np.concatenate([self._labels, labels])
        self._face_shape = tuple(faces.shape[1:])

    def predict(self, images: Any, *, k: int = 1) -> tuple[Any, Any]:
        """Labels and chi-square distances of the nearest trained faces.

        One (H, W) face: ``(label, distance)`` as Python numbers (k = 1), as OpenCV's
        ``predict``, or two (k,) arrays. (n, H, W) faces: ``(labels, distances)`` NumPy arrays
        of shape (n,) (or (n, k) for k > 1, nearest first). Labels are -1 where the distance exceeds ``threshold``.
        """
        if self._gallery is None:
            raise ValueError("the recognizer has no gallery: call train(images, labels) first (empty gallery)")
        single = hasattr(images, "ndim") and images.ndim == 2
        faces = self._faces(images)
        k = _validate.integer(k, "k", low=1, high=len(self._labels))
        hist = self._histograms(faces)
        most = self._max_count(self._face_shape)
        idx, D = nearest(hist, asarray(self._gallery), k=k, weights=self._weights(tuple(hist.shape[1:3])),
                         max_count=most)
        F = frac_bits(most)  # the scale of chi_square's D for these counts
        idx, dist = to_numpy(idx), to_numpy(D).astype(np.float64) * 2.0**-F
        labels = self._labels[idx]
        if self.threshold is not None:
            labels = np.where(dist > self.threshold, -1, labels).astype(np.int32)
        if k == 1:
            labels, dist = labels[:, 0], dist[:, 0]
        if single:
            return (int(labels[0]), float(dist[0])) if k == 1 else (labels[0], dist[0])
        return labels, dist

    # -- persistence ---------------------------------------------------------------------------
    def save(self, path: Any) -> None:
        """Write the parameters, gallery histograms and labels to an ``.npz`` (no pickle)."""
        if self._gallery is None:
            raise ValueError("nothing to save: the recognizer has no gallery (train it first)")
        config = {"format": _FORMAT, "P": self.P, "R": self.R, "method": self.method,
                  "region_size": list(self.region_size), "grid": None if self.grid is None else list(self.grid),
                  "weights": self.weights if self.weights is None or isinstance(self.weights, str) else
                  self.weights.tolist(), "threshold": self.threshold, "face_shape": list(self._face_shape)}
        np.savez(path, config=np.array(json.dumps(config)), gallery=to_numpy(self._gallery), labels=self._labels)

    @classmethod
    def load(cls, path: Any) -> "LBPFaceRecognizer":
        """A recognizer written by :meth:`save`, its gallery on the active backend."""
        with np.load(path, allow_pickle=False) as npz:
            config = json.loads(str(npz["config"]))
            if config.get("format") != _FORMAT:
                raise ValueError(f"{path} is not a saved LBPFaceRecognizer ({config.get('format')!r})")
            gallery, labels = npz["gallery"], npz["labels"]
        w = config["weights"]
        rec = cls(P=config["P"], R=config["R"], method=config["method"], region_size=tuple(config["region_size"]),
                  grid=None if config["grid"] is None else tuple(config["grid"]),
                  weights=np.asarray(w, np.int64) if isinstance(w, list) else w, threshold=config["threshold"])
        rec._gallery, rec._labels, rec._face_shape = asarray(gallery), labels.astype(np.int32), tuple(config["face_shape"])
        return rec

    @property
    def labels(self) -> np.ndarray:
        """The trained labels, in training order."""
        return self._labels.copy()

    def __len__(self) -> int:
        return len(self._labels)
