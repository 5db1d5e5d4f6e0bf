"""``LBPFaceRecognizer``: OpenCV ``cv2.face.LBPHFaceRecognizer``'s interface over portcv's exact
LBP histograms and weighted chi-square 1-NN (Ahonen et al.; Tek's thesis, chapter 3.2)."""

from __future__ import annotations

import json
import math
import os
import uuid
import zipfile
from typing import Any

import numpy as np

from .. import _validate
from ..backends import asarray, backend, to_numpy
from ._chi_square import AHONEN_WEIGHTS_7X7, check_distance_args, frac_bits, nearest_rows
from ._histograms import MAX_REGION_PIXELS, lbp_histograms, region_layout
from ._lbp import METHODS, bin_count, check_pr

#: The format :meth:`LBPFaceRecognizer.save` writes (2: ``regions`` added, ``region_size`` may be null).
_FORMAT = "portcv.recognize.LBPFaceRecognizer/2"
#: The formats :meth:`LBPFaceRecognizer.load` reads.
_FORMATS = ("portcv.recognize.LBPFaceRecognizer/1", _FORMAT)
#: The regions of a recognizer given neither ``region_size``, ``grid`` nor ``regions``: the thesis's 7 x 7.
DEFAULT_REGIONS = (7, 7)
#: Largest file :meth:`LBPFaceRecognizer.load` reads by default (bytes): a gallery of 20,000
#: (16, 2)u2 faces of 7 x 7 regions is 476 MB.
MAX_FILE_BYTES = 1 << 30
#: Largest config member (bytes): the JSON of the parameters, a 4096 x 4096 weight matrix at most.
MAX_CONFIG_BYTES = 96 << 20
#: Largest face side a saved config may name (a sanity bound, checked before any layout is computed).
MAX_FACE_SIDE = 1 << 15


class LBPFaceRecognizer:
    """Face recognition by regional LBP histograms and the nearest neighbour under the exact
    weighted chi-square distance, with ``cv2.face.LBPHFaceRecognizer``'s train/update/predict.

    Parameters
    ----------
    P, R, method
        The descriptor, as in :func:`lbp_histograms` (OpenCV's ``neighbors``, ``radius`` are
        ``P``, ``R``).
    region_size, grid, regions
        The regions, as in :func:`lbp_histograms`: fixed ``(w, h)`` tiles, OpenCV's
        ``grid_x x grid_y`` cells, or ``(nx, ny)`` regions sized to the face (not with
        ``grid``; ``grid`` wins over ``region_size``). Default (none of them): 7 x 7 regions
        sized to the face, as the thesis cuts its faces, so any face size works; on the
        thesis's 130 x 150 faces that is ``region_size=(18, 21)``, on ORL's 92 x 112 13 x 16.
    weights : 'ahonen7x7', None or (ny, nx) array of int in [0, 255]
        Region weights: Ahonen et al.'s 7 x 7 matrix (:data:`AHONEN_WEIGHTS_7X7`; needs 7 x 7
        regions, which the default regions give), none (all 1), or your own.
    threshold : float, optional
        Predictions farther than this (chi-square units) get the label -1, as OpenCV's
        ``threshold``.

    Notes
    -----
    The gallery of histograms stays on the active backend's device; every backend predicts the
    same labels and distances (the distances are exact fixed point, ties go to the earliest
    trained image). :meth:`save` writes an ``.npz`` without pickled objects, whole or not at
    all; :meth:`load` checks a file completely before it allocates its arrays.

    References
    ----------
    T. Ahonen, A. Hadid, M. Pietikäinen, "Face description with local binary patterns:
    application to face recognition", IEEE TPAMI 28(12), 2006, doi:10.1109/TPAMI.2006.244.
    S. C. Tek, M.Sc. thesis, ITU, 2012, §2.2, §3.2.

    Examples
    --------
    >>> import numpy as np, portcv
    >>> rng = np.random.default_rng(0)
    >>> faces = rng.integers(0, 256, (4, 112, 92), dtype=np.uint8)   # ORL's face size
    >>> rec = portcv.recognize.LBPFaceRecognizer()                  # 7 x 7 regions of 13 x 16
    >>> rec.train(faces, [10, 11, 12, 13])
    >>> label, distance = rec.predict(faces[2])
    >>> label, distance
    (12, 0.0)
    """

    def __init__(self, *, P: int = 8, R: float = 2.0, method: str = "u2", region_size: Any = None,
                 grid: Any = None, regions: Any = None, weights: Any = "ahonen7x7",
                 threshold: float | None = None) -> None:
        self.P, self.R = check_pr(P, R)
        self.method = _validate.choice(method, "method", METHODS)
        self.region_size = None if region_size is None else tuple(
            _validate.kernel_size(region_size, "region_size", odd=False, low=1, high=1 << 15))
        self.grid = None if grid is None else tuple(_validate.kernel_size(grid, "grid", odd=False, low=1, high=4096))
        if regions is not None and (region_size is not None or grid is not None):
            raise ValueError(f"pass one of region_size, grid and regions, got regions={regions!r} with "
                             f"{'grid' if grid is not None else 'region_size'}")
        if regions is None and region_size is None and grid is None:
            regions = DEFAULT_REGIONS
        self.regions = None if regions is None else tuple(
            _validate.kernel_size(regions, "regions", odd=False, low=1, high=4096))
        self.weights = self._check_weights(weights)
        self.threshold = None if threshold is None else _validate.real(threshold, "threshold", positive=True)
        self._gallery: Any = None
        self._labels = np.zeros(0, np.int32)
        self._face_shape: tuple[int, int] | None = None

    @staticmethod
    def _check_weights(weights: Any) -> Any:
        if isinstance(weights, str):
            return _validate.choice(weights, "weights", ("ahonen7x7",))
        if weights is None:
            return None
        try:
            w = np.asarray(to_numpy(weights) if not isinstance(weights, (list, tuple, np.ndarray)) else weights)
        except (TypeError, ValueError):  # ragged nested lists, objects NumPy cannot read
            raise ValueError(f"weights must be 'ahonen7x7', None or a 2-D (ny, nx) array of integers in [0, 255], "
                             f"got a {type(weights).__name__} that is no rectangular array") from None
        if not np.issubdtype(w.dtype, np.integer) or w.ndim != 2 or w.size == 0 or w.min() < 0 or w.max() > 255:
            raise ValueError(f"weights must be 'ahonen7x7', None or a 2-D (ny, nx) array of integers in [0, 255], "
                             f"got {w.dtype} of shape {w.shape}")
        return w.astype(np.int64)

    # -- the descriptor ------------------------------------------------------------------------
    def _faces(self, images: Any, name: str = "images") -> Any:
        if isinstance(images, (list, tuple)) and not images:
            raise ValueError(f"{name} must not be empty: pass (n, H, W) uint8 faces, got an empty "
                             f"{type(images).__name__}")
        if isinstance(images, (list, tuple)) and all(hasattr(i, "shape") for i in images):
            faces = [_validate.image(i, name) for i in images]  # each on the active backend, checked
            shapes = {tuple(i.shape) for i in faces}
            if len(shapes) != 1:
                raise ValueError(f"{name} must all have one size, got {sorted(shapes)}")
            images = backend().xp.stack(faces) if len(faces) > 1 else faces[0][None]
        images = _validate.image(images, name)
        _validate.gray(images, name, "auto")  # a colour face is not a batch of faces 3 or 4 pixels wide
        if images.ndim == 2:
            images = images[None]
        if images.ndim != 3:
            raise ValueError(f"{name} must be one (H, W) face or (n, H, W) faces, got shape {tuple(images.shape)}")
        if self._face_shape is not None and tuple(images.shape[1:]) != self._face_shape:
            raise ValueError(f"{name} are {tuple(images.shape[1:])} but the recognizer was trained on "
                             f"{self._face_shape} faces (mismatched histogram lengths)")
        return images

    def _histograms(self, faces: Any) -> Any:
        # region_size is unused when grid or regions is given (lbp_histograms' default stands in);
        # regions is None when either of the others is given (__init__)
        fixed = {} if self.region_size is None else {"region_size": self.region_size}
        return lbp_histograms(faces, P=self.P, R=self.R, method=self.method, grid=self.grid, regions=self.regions,
                              dtype="uint16", channel_axis=None, **fixed)

    def _layout(self, shape: tuple[int, int]) -> tuple[int, int, int, int, int, int]:
        """``(ny, nx, h, w, H, W)``: the regions over the interior ``H x W`` of ``shape`` faces."""
        c = math.ceil(self.R)
        H, W = shape[0] - 2 * c, shape[1] - 2 * c
        if H <= 0 or W <= 0:
            raise ValueError(f"faces of shape {shape} are too small for R={self.R}: their interior is empty")
        return region_layout(H, W, self.region_size, self.grid, self.regions) + (H, W)

    def _max_count(self, shape: tuple[int, int]) -> int:
        _, _, h, w, H, W = self._layout(shape)
        return min(h, H) * min(w, W)

    def _region_pixels(self, shape: tuple[int, int]) -> np.ndarray:
        """(ny, nx) pixels of each region of ``shape`` faces (the sum of its histogram)."""
        ny, nx, h, w, H, W = self._layout(shape)
        rows = np.minimum(h, H - h * np.arange(ny))
        cols = np.minimum(w, W - w * np.arange(nx))
        return rows[:, None] * cols[None, :]

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
        try:
            lab = np.asarray(to_numpy(labels) if hasattr(labels, "shape") and not isinstance(labels, np.ndarray)
                             else labels)
        except ValueError:  # NumPy's "inhomogeneous shape" message names no argument
            raise ValueError(f"labels must be one integer per image ({n}); got a ragged nested "
                             f"{type(labels).__name__}") from None
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
        # No count check: the histograms are this recognizer's, each count at most its region's pixels.
        Q, G, W, params, _ = check_distance_args(hist, asarray(self._gallery), self._weights(tuple(hist.shape[1:3])),
                                                 most, counts=False)
        idx, D = nearest_rows(Q, G, W, params, k)
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
        """Write the parameters, gallery histograms and labels to an ``.npz`` (no pickle).

        ``path`` gets the suffix ``.npz`` if it has none (as :func:`numpy.savez`). The file is
        written beside its destination under a temporary name and moved into place when it is
        complete, so an existing file is replaced whole or not at all. A folder is refused.
        """
        if self._gallery is None:
            raise ValueError("nothing to save: the recognizer has no gallery (train it first)")
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"path must be a str or os.PathLike, got {type(path).__name__}")
        path = os.fspath(path)
        if os.path.isdir(path):
            raise ValueError(f"path {path!r} is a folder: pass a file name (e.g. {os.path.join(path, 'faces.npz')!r})")
        target = path if path.endswith(".npz") else path + ".npz"
        if os.path.isdir(target):
            raise ValueError(f"path {path!r} would be written as {target!r}, which is a folder")
        folder = os.path.dirname(os.path.abspath(target))
        if not os.path.isdir(folder):
            raise FileNotFoundError(f"cannot save to {target!r}: the folder {folder!r} does not exist")
        config = {"format": _FORMAT, "P": self.P, "R": self.R, "method": self.method,
                  "region_size": None if self.region_size is None else list(self.region_size),
                  "grid": None if self.grid is None else list(self.grid),
                  "regions": None if self.regions is None else list(self.regions),
                  "weights": self.weights if self.weights is None or isinstance(self.weights, str) else
                  self.weights.tolist(), "threshold": self.threshold, "face_shape": list(self._face_shape)}
        # A new file beside the target (same file system, so the replace is atomic), with the
        # permissions a plain open would give it (mkstemp's would be 0600).
        temporary = f"{target}.{uuid.uuid4().hex[:12]}.tmp"
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
        try:
            with os.fdopen(fd, "wb") as fh:
                np.savez(fh, config=np.array(json.dumps(config)), gallery=to_numpy(self._gallery),
                         labels=self._labels)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(temporary, target)
        except BaseException:
            if os.path.exists(temporary):
                os.remove(temporary)
            raise

    @classmethod
    def load(cls, path: Any, *, max_bytes: int = MAX_FILE_BYTES) -> "LBPFaceRecognizer":
        """A recognizer written by :meth:`save`, its gallery on the active backend.

        Parameters
        ----------
        path : str or os.PathLike
            The ``.npz`` file.
        max_bytes : int
            The largest file, and the largest uncompressed arrays, accepted (default 1 GiB; a
            gallery of 20,000 (16, 2)u2 faces of 7 x 7 regions is 476 MB).

        Raises
        ------
        FileNotFoundError
            No such file.
        ValueError
            Not a saved recognizer, naming the file and what is wrong: larger than
            ``max_bytes``, not a zip, a missing or pickled array, a config that is not JSON or
            names bad parameters, array headers whose dtype or shape disagree with the config,
            labels not one int32 per face, histograms whose regions do not sum to their pixel
            counts. Every header is read and checked before any array is allocated.
        """
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"path must be a str or os.PathLike, got {type(path).__name__}")
        max_bytes = _validate.integer(max_bytes, "max_bytes", low=1)
        path = os.fspath(path)
        where = f"LBPFaceRecognizer file {path!r}"
        if os.path.isdir(path):
            raise ValueError(f"{where} is a folder, not a file written by LBPFaceRecognizer.save")
        if not os.path.isfile(path):
            raise FileNotFoundError(f"{where} not found")
        size = os.path.getsize(path)
        if size > max_bytes:
            raise ValueError(f"{where}: {size} bytes, more than max_bytes={max_bytes} (pass a larger max_bytes "
                             "if the file is trusted)")
        try:
            with zipfile.ZipFile(path) as zf:
                rec = _read_config(zf, where, cls)
                gallery, labels = _read_arrays(zf, where, rec, max_bytes)
        except Exception as exc:  # noqa: BLE001 - any failure to parse an untrusted file (zip, zlib, CRC, npy)
            if isinstance(exc, ValueError) and str(exc).startswith(where):  # ours: it names the file already
                raise
            raise ValueError(f"{where}: not a readable npz ({type(exc).__name__}: {exc})") from None
        rec._gallery, rec._labels = asarray(gallery), labels
        return rec

    @property
    def labels(self) -> np.ndarray:
        """The trained labels, in training order."""
        return self._labels.copy()

    def __len__(self) -> int:
        return len(self._labels)


# -- reading a saved recognizer --------------------------------------------------------------
def _member(zf: zipfile.ZipFile, name: str, where: str, max_bytes: int) -> zipfile.ZipInfo:
    """The zip entry ``name.npy``, its declared (uncompressed) size within ``max_bytes``."""
    try:
        info = zf.getinfo(name + ".npy")
    except KeyError:
        raise ValueError(f"{where}: not a saved LBPFaceRecognizer (no array {name!r}; it has "
                         f"{sorted(n.removesuffix('.npy') for n in zf.namelist())})") from None
    if info.file_size > max_bytes:
        raise ValueError(f"{where}: array {name!r} inflates to {info.file_size} bytes, more than max_bytes={max_bytes}")
    return info


def _header(zf: zipfile.ZipFile, info: zipfile.ZipInfo, where: str) -> tuple[tuple, np.dtype, int]:
    """``(shape, dtype, header bytes)`` of an npy member, read without its data."""
    name = info.filename.removesuffix(".npy")
    with zf.open(info) as fh:
        try:
            version = np.lib.format.read_magic(fh)
            read = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
            if version not in read:
                raise ValueError(f"npy version {version}")
            shape, fortran, dtype = read[version](fh, max_header_size=10000)
            offset = fh.tell()
        except ValueError as exc:
            raise ValueError(f"{where}: array {name!r} has no valid npy header ({exc})") from None
    if dtype.hasobject:
        raise ValueError(f"{where}: array {name!r} holds Python objects ({dtype}); portcv never unpickles")
    if fortran and len(shape) > 1:
        raise ValueError(f"{where}: array {name!r} is in Fortran order; save writes C order")
    if info.file_size != offset + math.prod(shape) * dtype.itemsize:
        raise ValueError(f"{where}: array {name!r}'s header says {dtype} {shape} ({math.prod(shape) * dtype.itemsize} "
                         f"bytes) but the member holds {info.file_size - offset} bytes of data")
    return tuple(shape), dtype, offset


def _array(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> np.ndarray:
    """The npy member's array (its header checked by :func:`_header`)."""
    with zf.open(info) as fh:
        return np.lib.format.read_array(fh, allow_pickle=False, max_header_size=10000)


def _read_config(zf: zipfile.ZipFile, where: str, cls: type) -> "LBPFaceRecognizer":
    """The recognizer the saved config describes (no gallery yet), every parameter checked."""
    info = _member(zf, "config", where, MAX_CONFIG_BYTES)
    shape, dtype, _ = _header(zf, info, where)
    if dtype.kind != "U" or shape != ():
        raise ValueError(f"{where}: config must be a JSON string, got {dtype} of shape {shape}")
    try:
        config = json.loads(str(_array(zf, info)))
    except ValueError as exc:
        raise ValueError(f"{where}: config is not JSON ({exc})") from None
    if not isinstance(config, dict) or config.get("format") not in _FORMATS:
        found = config.get("format") if isinstance(config, dict) else type(config).__name__
        raise ValueError(f"{where} is not a saved LBPFaceRecognizer (format {found!r}; expected one of {_FORMATS})")
    keys = {"P", "R", "method", "region_size", "grid", "weights", "threshold", "face_shape"}
    if config["format"] == _FORMAT:
        keys.add("regions")
    missing = sorted(keys - set(config))
    if missing:
        raise ValueError(f"{where}: config lacks {missing}")

    def pair(name: str) -> Any:
        value = config[name]
        if value is not None and not (isinstance(value, list) and len(value) == 2):
            raise ValueError(f"{name} must be null or a pair, got {value!r}")
        return None if value is None else tuple(value)

    try:
        w = config["weights"]
        if isinstance(w, list):
            w = np.asarray(w)
            if not np.issubdtype(w.dtype, np.integer):
                raise ValueError(f"weights must be 'ahonen7x7', null or an integer matrix, got {w.dtype}")
        region_size, grid, regions = pair("region_size"), pair("grid"), config.get("regions")
        if config["format"] != _FORMAT and region_size is None:  # format 1 always had a region size
            raise ValueError("region_size must be a pair in format 1")
        rec = cls(P=config["P"], R=config["R"], method=config["method"], region_size=region_size, grid=grid,
                  regions=None if regions is None else pair("regions"), weights=w, threshold=config["threshold"])
        face = config["face_shape"]
        if not (isinstance(face, list) and len(face) == 2):
            raise ValueError(f"face_shape must be a (H, W) pair, got {face!r}")
        rec._face_shape = tuple(_validate.integer(v, "face_shape", low=1, high=MAX_FACE_SIDE) for v in face)
        regions_shape = rec._layout(rec._face_shape)[:2]
        rec._weights(regions_shape)  # weights that fit the regions
        if rec._max_count(rec._face_shape) > MAX_REGION_PIXELS:  # what lbp_histograms refuses to make
            raise ValueError(f"regions of {rec._max_count(rec._face_shape)} pixels; at most {MAX_REGION_PIXELS}")
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{where}: config names bad parameters ({exc})") from None
    return rec


def _read_arrays(zf: zipfile.ZipFile, where: str, rec: "LBPFaceRecognizer",
                 max_bytes: int) -> tuple[np.ndarray, np.ndarray]:
    """The gallery (uint16 histograms) and int32 labels, every header checked before either is read."""
    g_info, l_info = _member(zf, "gallery", where, max_bytes), _member(zf, "labels", where, max_bytes)
    if g_info.file_size + l_info.file_size > max_bytes:
        raise ValueError(f"{where}: its arrays inflate to {g_info.file_size + l_info.file_size} bytes, more than "
                         f"max_bytes={max_bytes}")
    ny, nx = rec._layout(rec._face_shape)[:2]
    row = (ny, nx, bin_count(rec.P, rec.method))
    g_shape, g_dtype, _ = _header(zf, g_info, where)
    if g_dtype != np.dtype(np.uint16) or len(g_shape) != 4 or g_shape[1:] != row or g_shape[0] < 1:
        raise ValueError(f"{where}: gallery must be uint16 of shape (n >= 1, *{row}) for {rec._face_shape} faces "
                         f"and these parameters, got {g_dtype} {g_shape}")
    l_shape, l_dtype, _ = _header(zf, l_info, where)
    if l_dtype != np.dtype(np.int32) or l_shape != g_shape[:1]:
        raise ValueError(f"{where}: labels must be int32 of shape ({g_shape[0]},), one per gallery face, got "
                         f"{l_dtype} {l_shape}")
    gallery, labels = _array(zf, g_info), _array(zf, l_info)
    pixels = rec._region_pixels(rec._face_shape)
    sums = gallery.sum(axis=-1, dtype=np.int64)
    bad = np.argwhere(sums != pixels)
    if len(bad):
        face, y, x = (int(v) for v in bad[0])
        raise ValueError(f"{where}: gallery face {face}, region ({y}, {x}) counts {int(sums[face, y, x])} pixels; "
                         f"its region has {int(pixels[y, x])} (not histograms of {rec._face_shape} faces)")
    return gallery, labels
