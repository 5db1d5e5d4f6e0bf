"""Eye-aligned, identity-labelled face crops for the recognition tests, benchmarks and docs.

The only identity-labelled face set found among installable packages is CSU ScrapShots
(Colorado State University; 173 frontal gray faces of 30 people with eye coordinates), which
:func:`portcv.data.csu_scrapshots` reads from the pinned ``pyvision-toolkit`` 1.3.6 archive in the
user cache (fetched once, never at import). :func:`csu_faces` aligns those photos on the eyes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _validate


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


def csu_faces(*, size: Any = (130, 150), eye_distance: float = 50.0, eye_y: float = 50.0,
              equalize_histogram: bool = True, cache: Any = None,
              download: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """CSU ScrapShots as 173 eye-aligned frontal face crops of 30 people, with identity labels.

    The photos come from :func:`portcv.data.csu_scrapshots` (the ``pyvision-toolkit`` 1.3.6 sdist,
    22.9 MB, sha256 pinned, fetched once into ``$PORTCV_DATA`` or ``~/.cache/portcv``; never at
    import); each is warped so its eyes land at fixed places of the crop.

    Parameters
    ----------
    size : (w, h) pair of int
        Crop size; the thesis's FERET crops are 130 x 150.
    eye_distance, eye_y : float
        The eyes are placed ``eye_distance`` pixels apart, centred, at row ``eye_y``.
    equalize_histogram : bool
        Histogram-equalize each crop (the usual CSU preprocessing).
    cache : path, optional
        The data folder (:func:`portcv.data.cache_dir`).
    download : bool
        Fetch the archive if it is not cached (else raise :class:`portcv.data.DataUnavailableError`).

    Returns
    -------
    faces : (173, h, w) uint8 NumPy array
    labels : (173,) int32 NumPy array
        The person (0..29), in file-name order.

    Examples
    --------
    >>> faces, labels = portcv.data.csu_faces()        # doctest: +SKIP
    >>> faces.shape, len(set(labels.tolist()))         # doctest: +SKIP
    ((173, 150, 130), 30)
    """
    from .. import data

    for name, flag in (("equalize_histogram", equalize_histogram), ("download", download)):
        if not isinstance(flag, bool):  # download="no" would be truthy and fetch 22.9 MB
            raise TypeError(f"{name} must be a bool, got {type(flag).__name__}")
    w, h = _validate.kernel_size(size, "size", odd=False, low=8, high=4096)
    eye_distance = _validate.real(eye_distance, "eye_distance", positive=True, high=float(w))
    eye_y = _validate.real(eye_y, "eye_y", high=float(h))
    images, identities, eyes, _ = data.csu_scrapshots(cache=cache, download=download)
    faces = []
    for image, (lx, ly, rx, ry) in zip(images, eyes.tolist()):
        crop = align_face(image, (lx, ly), (rx, ry), size=(w, h), eye_distance=eye_distance, eye_y=eye_y)
        faces.append(equalize(crop) if equalize_histogram else crop)
    _, labels = np.unique(identities, return_inverse=True)
    return np.stack(faces), labels.astype(np.int32)
