"""Identity-labelled faces for the recognition tests and benchmarks, fetched once, never at import.

The only identity-labelled face set found among installable packages is CSU ScrapShots
(Colorado State University; 173 frontal gray faces of 30 people with eye coordinates), shipped
inside the ``pyvision-toolkit`` 1.3.6 source distribution on the Python package index (BSD
licence, D. Bolme). :func:`csu_scrapshots` fetches that one file with ``pip download`` into a
user cache (``$PORTCV_DATA_DIR`` or ``~/.cache/portcv``), checks its pinned size and sha256,
reads the faces out of the archive with :mod:`tarfile` (the package is never installed) and
aligns them on the eyes.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from .. import _validate

PYVISION_SDIST = "pyvision_toolkit-1.3.6.tar.gz"
PYVISION_REQUIREMENT = "pyvision-toolkit==1.3.6"
PYVISION_SHA256 = "d6f49cf532e71d8130b63066fcb8424764b797df003be1d1b1688b3bec04a100"
PYVISION_SIZE = 22_939_771
_CSU = "pyvision_toolkit-1.3.6/src/pyvision/data/csuScrapShots/"


class DataUnavailableError(RuntimeError):
    """A data set is not in the cache and could not be fetched (offline, or a checksum mismatch)."""


def cache_dir() -> Path:
    """Where fetched data sets live: ``$PORTCV_DATA_DIR`` or ``~/.cache/portcv``."""
    return Path(os.environ.get("PORTCV_DATA_DIR") or Path.home() / ".cache" / "portcv")


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def pyvision_sdist(*, download: bool = True) -> Path:
    """The verified pyvision-toolkit sdist in the cache, fetched with ``pip download`` if missing."""
    target = cache_dir() / PYVISION_SDIST
    if target.exists() and target.stat().st_size == PYVISION_SIZE and _sha256(target) == PYVISION_SHA256:
        return target
    if not download:
        raise DataUnavailableError(
            f"{target} is missing: run portcv.data.csu_scrapshots(download=True) once with network access "
            f"(it runs `pip download --no-deps --no-binary :all: {PYVISION_REQUIREMENT}`)")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", PYVISION_REQUIREMENT,
               "-d", tmp]
        try:
            subprocess.run(cmd, check=True, capture_output=True, timeout=600)
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as exc:
            detail = getattr(exc, "stderr", b"") or b""
            raise DataUnavailableError(
                f"could not fetch {PYVISION_REQUIREMENT} with `{' '.join(cmd[2:])}` ({type(exc).__name__}: "
                f"{detail.decode(errors='replace').strip().splitlines()[-1:] or exc}); the CSU ScrapShots faces "
                "need it once, with network access") from exc
        got = Path(tmp) / PYVISION_SDIST
        if not got.exists() or _sha256(got) != PYVISION_SHA256:
            raise DataUnavailableError(f"{PYVISION_REQUIREMENT} fetched, but its sha256 is not the pinned "
                                       f"{PYVISION_SHA256}: refusing it")
        os.replace(got, target)
    return target


def _read_pgm(data: bytes) -> np.ndarray:
    """A binary 8-bit PGM (P5) image."""
    fields, pos = [], 0
    while len(fields) < 4:
        while data[pos:pos + 1].isspace():
            pos += 1
        if data[pos:pos + 1] == b"#":
            pos = data.index(b"\n", pos) + 1
            continue
        end = pos
        while not data[end:end + 1].isspace():
            end += 1
        fields.append(data[pos:end])
        pos = end
    if fields[0] != b"P5" or int(fields[3]) > 255:
        raise ValueError("not an 8-bit binary PGM")
    w, h = int(fields[1]), int(fields[2])
    return np.frombuffer(data, np.uint8, w * h, pos + 1).reshape(h, w)


def align_face(image: np.ndarray, left_eye: Any, right_eye: Any, *, size: tuple[int, int], eye_distance: float,
               eye_y: float) -> np.ndarray:
    """The similarity warp that puts the eyes (x, y) at ``(w/2 -+ eye_distance/2, eye_y)`` of a
    ``size = (w, h)`` crop, bilinear on the host (float64, rounded; zero outside)."""
    w, h = size
    (lx, ly), (rx, ry) = left_eye, right_eye
    src = np.array([rx - lx, ry - ly], np.float64)
    scale = np.hypot(*src) / eye_distance
    cos, sin = src / np.hypot(*src) * scale  # output unit vectors in source pixels
    yo, xo = np.mgrid[0:h, 0:w].astype(np.float64)
    u, v = xo - (w / 2 - eye_distance / 2), yo - eye_y  # relative to the output's left eye
    xs = lx + cos * u - sin * v
    ys = ly + sin * u + cos * v
    x0, y0 = np.floor(xs).astype(int), np.floor(ys).astype(int)
    fx, fy = xs - x0, ys - y0
    H, W = image.shape

    def px(yy: np.ndarray, xx: np.ndarray) -> np.ndarray:
        inside = (yy >= 0) & (yy < H) & (xx >= 0) & (xx < W)
        return np.where(inside, image[np.clip(yy, 0, H - 1), np.clip(xx, 0, W - 1)], 0).astype(np.float64)

    out = ((1 - fy) * ((1 - fx) * px(y0, x0) + fx * px(y0, x0 + 1))
           + fy * ((1 - fx) * px(y0 + 1, x0) + fx * px(y0 + 1, x0 + 1)))
    return np.clip(np.rint(out), 0, 255).astype(np.uint8)


def equalize(image: np.ndarray) -> np.ndarray:
    """Histogram equalization (the cumulative histogram scaled to 0..255, OpenCV's rule)."""
    hist = np.bincount(image.reshape(-1), minlength=256)
    cdf = np.cumsum(hist)
    first = cdf[np.flatnonzero(hist)[0]]
    if cdf[-1] == first:
        return image.copy()
    lut = np.clip(np.rint((cdf - first) * 255.0 / (cdf[-1] - first)), 0, 255).astype(np.uint8)
    return lut[image]


def csu_scrapshots(*, size: Any = (130, 150), eye_distance: float = 50.0, eye_y: float = 50.0,
                   equalize_histogram: bool = True, download: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """CSU ScrapShots: 173 eye-aligned frontal faces of 30 people, with identity labels.

    Fetched once (``pip download`` of the ``pyvision-toolkit`` 1.3.6 sdist, 22.9 MB, sha256
    pinned) into ``$PORTCV_DATA_DIR`` or ``~/.cache/portcv``; never at import.

    Parameters
    ----------
    size : (w, h) pair of int
        Crop size; the thesis's FERET crops are 130 x 150.
    eye_distance, eye_y : float
        The eyes are placed ``eye_distance`` pixels apart, centred, at row ``eye_y``.
    equalize_histogram : bool
        Histogram-equalize each crop (the usual CSU preprocessing).
    download : bool
        Fetch the sdist if it is not cached (else raise :class:`DataUnavailableError`).

    Returns
    -------
    faces : (173, h, w) uint8 NumPy array
    labels : (173,) int32 NumPy array
        The person (0..29), in file order.

    Examples
    --------
    >>> faces, labels = portcv.data.csu_scrapshots()        # doctest: +SKIP
    >>> faces.shape, len(set(labels.tolist()))              # doctest: +SKIP
    ((173, 150, 130), 30)
    """
    w, h = _validate.kernel_size(size, "size", odd=False, low=8, high=4096)
    eye_distance = _validate.real(eye_distance, "eye_distance", positive=True, high=float(w))
    eye_y = _validate.real(eye_y, "eye_y", high=float(h))
    path = pyvision_sdist(download=download)
    with tarfile.open(path) as tar:
        coords = tar.extractfile(_CSU + "coords.txt").read().decode().split("\n")
        faces, people = [], []
        for line in coords:
            parts = line.split()
            if len(parts) != 5:
                continue
            name, lx, ly, rx, ry = parts[0], *map(float, parts[1:])
            image = _read_pgm(tar.extractfile(_CSU + name + ".pgm").read())
            crop = align_face(image, (lx, ly), (rx, ry), size=(w, h), eye_distance=eye_distance, eye_y=eye_y)
            faces.append(equalize(crop) if equalize_histogram else crop)
            people.append(name[:5])
    ids = {p: i for i, p in enumerate(sorted(set(people)))}
    return np.stack(faces), np.array([ids[p] for p in people], np.int32)
