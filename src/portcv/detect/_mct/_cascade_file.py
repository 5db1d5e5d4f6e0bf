"""MCT cascades: the in-memory form and the ``.npz`` file (format ``portcv-mct/1``)."""

from __future__ import annotations

import dataclasses
import io
import json
import os
import zipfile
from typing import Any

import numpy as np

#: The file format this module writes and reads.
MCT_FORMAT = "portcv-mct/1"
#: Largest cascade file accepted (bytes): 484 positions x 5 stages of 1 KB LUTs is ~2.5 MB.
MAX_FILE_BYTES = 4 << 20
#: Largest |LUT entry|: int16 without -32768, so that a negated entry is still int16.
LUT_LIMIT = 2**15 - 1
#: LUT columns: codes 0..510 and the unused 511 (kept 0, so a row is 1 KB).
LUT_WIDTH = 512
#: Most weak classifiers per stage: the 22 x 22 centres of a 24 x 24 window.
MAX_PER_STAGE = 484
#: The bundled cascade, package data of portcv.detect.
BUNDLED = "mct_frontalface_24.npz"


@dataclasses.dataclass(frozen=True, eq=False)
class MCTCascade:
    """An MCT cascade: per weak classifier a window position and a 511-entry cost table, per stage a threshold.

    Attributes
    ----------
    positions : (K, 2) int16
        ``(x, y)`` of each weak classifier's 3x3 centre in the window, ``1 <= x <= W - 2``,
        ``1 <= y <= H - 2``, unique within a stage.
    lut : (K, 512) int16
        ``lut[k, code]``: the cost of MCT code ``code`` at position ``k`` (low = face-like); column
        511 is 0 (the code cannot occur); ``|lut| <= 32767``.
    stage_end : (S,) int32
        Stage ``j`` holds weak classifiers ``[stage_end[j-1], stage_end[j])`` (``stage_end[-1] = K``).
    threshold : (S,) int32
        A window passes stage ``j`` iff ``sum of its costs <= threshold[j]`` (thesis eq. 2.3).
    window : (int, int)
        ``(width, height)`` of the detection window (24, 24 for the face cascade).
    meta : dict
        JSON-serializable provenance (recipe, data checksums, seed, versions).

    Notes
    -----
    A stage sum has at most 484 terms of at most 32767: ``|H| < 2**24``, exact in int32 in any
    summation order, so every backend makes the same decisions.
    """

    positions: np.ndarray
    lut: np.ndarray
    stage_end: np.ndarray
    threshold: np.ndarray
    window: tuple[int, int] = (24, 24)
    meta: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        pos, lut, end, thr = _check_arrays(self.positions, self.lut, self.stage_end, self.threshold, self.window,
                                           ValueError, "MCTCascade")
        for name, value in (("positions", pos), ("lut", lut), ("stage_end", end), ("threshold", thr)):
            value = np.array(value, copy=True)
            value.flags.writeable = False
            object.__setattr__(self, name, value)
        object.__setattr__(self, "window", (int(self.window[0]), int(self.window[1])))
        try:
            meta = json.loads(json.dumps(self.meta))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"MCTCascade meta must be JSON-serializable: {exc}") from None
        if not isinstance(meta, dict):
            raise ValueError("MCTCascade meta must be a dict")
        object.__setattr__(self, "meta", meta)

    @property
    def n_stages(self) -> int:
        return int(self.stage_end.shape[0])

    @property
    def n_weak(self) -> int:
        return int(self.positions.shape[0])

    def stage_ranges(self) -> tuple[tuple[int, int], ...]:
        """``((begin, end), ...)`` of each stage's weak classifiers."""
        ends = [int(e) for e in self.stage_end]
        return tuple(zip([0] + ends[:-1], ends))

    def __repr__(self) -> str:
        sizes = "/".join(str(e - b) for b, e in self.stage_ranges())
        return f"<MCTCascade {self.window[0]}x{self.window[1]}, {self.n_stages} stages ({sizes} positions)>"


def _check_arrays(positions: Any, lut: Any, stage_end: Any, threshold: Any, window: Any, err: type,
                  where: str) -> tuple:
    """The range and size checks of the format; raises ``err`` with ``where`` in the message."""
    def fail(msg: str) -> None:
        raise err(f"{where}: {msg}")

    if not (isinstance(window, (tuple, list, np.ndarray)) and len(window) == 2):
        fail(f"window must be a (width, height) pair, got {window!r}")
    if not all(isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) for v in window):
        fail(f"window must hold two integers, got {window!r}")  # 24.5 was truncated to 24
    ww, wh = (int(v) for v in window)
    if not (3 <= ww <= 256 and 3 <= wh <= 256):
        fail(f"window must be between 3x3 and 256x256, got {ww}x{wh}")
    arrays = {}
    for name, value, dtype, ndim in (("positions", positions, np.int16, 2), ("lut", lut, np.int16, 2),
                                     ("stage_end", stage_end, np.int32, 1), ("threshold", threshold, np.int32, 1)):
        try:
            a = np.asarray(value)
        except ValueError:  # NumPy's "inhomogeneous shape" message names no argument
            fail(f"{name} must be a rectangular array, got a ragged nested {type(value).__name__}")
        if a.dtype != dtype:
            fail(f"{name} must be {np.dtype(dtype).name}, got {a.dtype}")
        if a.ndim != ndim:
            fail(f"{name} must have {ndim} dimensions, got shape {a.shape}")
        arrays[name] = a
    pos, table, end, thr = arrays["positions"], arrays["lut"], arrays["stage_end"], arrays["threshold"]
    k = pos.shape[0]
    if pos.shape != (k, 2) or k == 0:
        fail(f"positions must be (K, 2) with K >= 1, got shape {pos.shape}")
    if table.shape != (k, LUT_WIDTH):
        fail(f"lut must be ({k}, {LUT_WIDTH}), got shape {table.shape}")
    if end.shape[0] == 0 or thr.shape != end.shape:
        fail(f"stage_end and threshold must be (S,) with S >= 1 and equal lengths, got {end.shape}, {thr.shape}")
    if np.any(pos[:, 0] < 1) or np.any(pos[:, 0] > ww - 2) or np.any(pos[:, 1] < 1) or np.any(pos[:, 1] > wh - 2):
        fail(f"positions must lie in 1..{ww - 2} (x) and 1..{wh - 2} (y)")
    if np.any(table == -(2**15)):
        fail(f"lut entries must lie in [-{LUT_LIMIT}, {LUT_LIMIT}]")
    if np.any(table[:, LUT_WIDTH - 1] != 0):
        fail("lut column 511 (an impossible code) must be 0")
    begin = np.concatenate([[0], end[:-1]]).astype(np.int64)
    if np.any(end.astype(np.int64) <= begin) or int(end[-1]) != k:
        fail(f"stage_end must increase strictly and end at K = {k}, got {end.tolist()}")
    for j, (b, e) in enumerate(zip(begin, end)):
        if e - b > (ww - 2) * (wh - 2):
            fail(f"stage {j} has {e - b} positions, more than the window's {(ww - 2) * (wh - 2)}")
        key = pos[b:e, 1].astype(np.int64) * 1024 + pos[b:e, 0]
        if np.unique(key).size != key.size:
            fail(f"stage {j} repeats a position (positions must be unique within a stage)")
    return pos, table, end, thr


def save_mct_cascade(cascade: MCTCascade, path: Any) -> None:
    """Write an :class:`MCTCascade` to an ``.npz`` file (format ``portcv-mct/1``, no pickles).

    Parameters
    ----------
    cascade : MCTCascade
    path : str or os.PathLike
        Destination file (overwritten).

    Notes
    -----
    Arrays ``positions``, ``lut``, ``stage_end``, ``threshold``, ``window`` and a JSON string
    ``meta`` holding ``format``, ``bit_order = 'raster-msb'`` and the cascade's own metadata
    (sorted keys). The zip members carry a fixed timestamp, so the same cascade gives the same
    bytes (the training's reproducibility check compares files).

    Examples
    --------
    >>> import os, tempfile, portcv
    >>> c = portcv.detect.MCTDetector.default().cascade
    >>> folder = tempfile.TemporaryDirectory()
    >>> p = os.path.join(folder.name, "c.npz")
    >>> portcv.detect.save_mct_cascade(c, p)
    >>> portcv.detect.load_mct_cascade(p).n_stages
    5
    >>> folder.cleanup()
    """
    if not isinstance(cascade, MCTCascade):
        raise TypeError(f"cascade must be a portcv.detect.MCTCascade, got {type(cascade).__name__}")
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or os.PathLike, got {type(path).__name__}")
    meta = dict(cascade.meta)
    meta.update(format=MCT_FORMAT, bit_order="raster-msb")
    members = {
        "positions": cascade.positions, "lut": cascade.lut, "stage_end": cascade.stage_end,
        "threshold": cascade.threshold, "window": np.asarray(cascade.window, np.int32),
        "meta": np.asarray(json.dumps(meta, sort_keys=True)),
    }
    with zipfile.ZipFile(os.fspath(path), "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, array in members.items():
            buf = io.BytesIO()
            np.lib.format.write_array(buf, np.asarray(array, order="C"), allow_pickle=False)
            info = zipfile.ZipInfo(name + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, buf.getvalue())


def load_mct_cascade(path: Any) -> MCTCascade:
    """Read an MCT cascade ``.npz`` written by :func:`save_mct_cascade`.

    Parameters
    ----------
    path : str or os.PathLike
        A file path, or the bundled cascade's name ``'mct_frontalface_24.npz'``.

    Returns
    -------
    MCTCascade

    Raises
    ------
    FileNotFoundError
        No such file.
    ValueError
        Not a ``portcv-mct/1`` npz: over 4 MB, not a zip, a pickled or missing array, a wrong
        dtype or shape, a position outside the window or repeated in a stage, an LUT entry of
        -32768 or a non-zero column 511, a stage_end that does not increase to K; the message
        names the file.

    Examples
    --------
    >>> import portcv
    >>> c = portcv.detect.load_mct_cascade("mct_frontalface_24.npz")
    >>> c.window, c.lut.shape[1]
    ((24, 24), 512)
    """
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or os.PathLike, got {type(path).__name__}")
    path = os.fspath(path)
    if not os.path.isfile(path) and os.path.basename(path) == path:
        bundled = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", path)  # detect/data
        if os.path.isfile(bundled):
            path = bundled
    if not os.path.isfile(path):
        raise FileNotFoundError(f"MCT cascade {path!r} not found (the bundled one is {BUNDLED!r})")
    where = f"MCT cascade {path!r}"
    size = os.path.getsize(path)
    if size > MAX_FILE_BYTES:
        raise ValueError(f"{where}: {size} bytes, more than the {MAX_FILE_BYTES} a cascade may have")
    try:
        with open(path, "rb") as fh, np.load(io.BytesIO(fh.read()), allow_pickle=False) as z:
            names = set(z.files)
            need = {"positions", "lut", "stage_end", "threshold", "window", "meta"}
            if not need <= names:
                raise ValueError(f"missing arrays {sorted(need - names)}")
            arrays = {n: z[n] for n in sorted(need)}
    except ValueError as exc:
        raise ValueError(f"{where}: not a portcv-mct npz ({exc})") from None
    except Exception as exc:  # noqa: BLE001 - any failure to parse an untrusted file (zlib, zip, npy header)
        raise ValueError(f"{where}: not a readable npz ({type(exc).__name__}: {exc})") from None
    meta_raw = arrays["meta"]
    if meta_raw.dtype.kind != "U" or meta_raw.shape != ():
        raise ValueError(f"{where}: meta must be a JSON string, got {meta_raw.dtype} {meta_raw.shape}")
    try:
        meta = json.loads(str(meta_raw))
    except ValueError as exc:
        raise ValueError(f"{where}: meta is not JSON ({exc})") from None
    if not isinstance(meta, dict) or meta.get("format") != MCT_FORMAT:
        raise ValueError(f"{where}: meta['format'] must be {MCT_FORMAT!r}")
    if meta.get("bit_order") != "raster-msb":
        raise ValueError(f"{where}: meta['bit_order'] must be 'raster-msb', got {meta.get('bit_order')!r}")
    window = arrays["window"]
    if window.dtype != np.int32 or window.shape != (2,):
        raise ValueError(f"{where}: window must be int32 (2,), got {window.dtype} {window.shape}")
    _check_arrays(arrays["positions"], arrays["lut"], arrays["stage_end"], arrays["threshold"], tuple(window.tolist()),
                  ValueError, where)
    return MCTCascade(arrays["positions"], arrays["lut"], arrays["stage_end"], arrays["threshold"],
                      (int(window[0]), int(window[1])), meta)
