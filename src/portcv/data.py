"""Sample images: generated ones (no files, no network) and the offline face data of the MCT detector.

The generators (:func:`synthetic_rgb`, :func:`moving_shapes`) make demos, tests and benchmarks
reproducible. The face loaders (:func:`csu_scrapshots`, :func:`nonface_images`,
:func:`lfw_subset`, :func:`skimage_negatives`) read data that exists offline as installable
packages: the ``pyvision-toolkit`` 1.3.6 source archive from the Python package index (fetched
once into a user cache with ``pip download``, pinned by version and sha256, never at import) and
scikit-image's sample data.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _validate

__all__ = ["synthetic_rgb", "moving_shapes", "fetch_pyvision", "csu_scrapshots", "csu_faces", "nonface_images", "lfw_subset",
           "skimage_negatives", "face_box", "face_scenes", "DataUnavailableError"]


def synthetic_rgb(height: int = 480, width: int = 640, *, seed: int = 0) -> np.ndarray:
    """A deterministic RGB test scene: colour gradients, a few filled shapes and sensor-like noise.

    Parameters
    ----------
    height, width : int
        Image size in pixels (each at least 1).
    seed : int
        Seed of the noise and of the shapes' placement.

    Returns
    -------
    (height, width, 3) uint8 NumPy array.

    Examples
    --------
    >>> img = synthetic_rgb(48, 64, seed=1)
    >>> img.shape, img.dtype
    ((48, 64, 3), dtype('uint8'))
    """
    height, width = _dimension(height, "height"), _dimension(width, "width")
    _check_size(height * width * 3, f"({height}, {width}, 3)")
    rng = np.random.default_rng(_seed(seed))
    y, x = np.mgrid[0:height, 0:width].astype(np.float64)
    fy, fx = y / max(height - 1, 1), x / max(width - 1, 1)
    img = np.stack([200 * fx + 30, 160 * fy + 40, 120 * (1 - fx) * (1 - fy) + 60], axis=-1)
    for _ in range(6):
        cy, cx = rng.uniform(0, height), rng.uniform(0, width)
        radius = rng.uniform(0.05, 0.2) * min(height, width) + 1
        colour = rng.uniform(0, 255, 3)
        if rng.random() < 0.5:
            mask = (y - cy) ** 2 + (x - cx) ** 2 < radius**2
        else:
            mask = (np.abs(y - cy) < radius) & (np.abs(x - cx) < 1.5 * radius)
        img[mask] = colour
    img += rng.normal(0, 6, img.shape)
    return np.clip(np.rint(img), 0, 255).astype(np.uint8)


def moving_shapes(
    frames: int,
    height: int = 480,
    width: int = 640,
    *,
    seed: int = 0,
    shapes: int = 3,
    noise: float = 3.0,
) -> np.ndarray:
    """A deterministic RGB video: shapes moving over a static scene, with fresh sensor-like noise per frame.

    The static scene is a colour gradient with a few fixed shapes (edges that must not count as
    motion). ``shapes`` filled rectangles and discs then move at constant velocity (3 to 6 % of
    the smaller side per frame), bouncing off the borders; every frame gets its own Gaussian
    noise. Made for the motion detector's demos, tests and benchmarks (``portcv motion
    synthetic``).

    Parameters
    ----------
    frames : int
        Number of frames ``T`` (at least 1).
    height, width : int
        Frame size in pixels (each at least 1).
    seed : int
        Seed of the scene, the shapes' paths and the noise.
    shapes : int
        Number of moving shapes (0 .. 32).
    noise : float
        Standard deviation of the per-frame Gaussian noise, in grey levels (0 .. 64).

    Returns
    -------
    (frames, height, width, 3) uint8 NumPy array.

    Examples
    --------
    >>> video = moving_shapes(5, 48, 64, seed=1)
    >>> video.shape, video.dtype
    ((5, 48, 64, 3), dtype('uint8'))
    >>> bool((video[0] != video[1]).any())
    True
    """
    frames, height, width = _dimension(frames, "frames"), _dimension(height, "height"), _dimension(width, "width")
    shapes = _validate.integer(shapes, "shapes", low=0, high=32)
    if isinstance(noise, bool) or not isinstance(noise, (int, float, np.integer, np.floating)) or not 0 <= noise <= 64:
        raise ValueError(f"noise must be a number in [0, 64], got {noise!r}")
    _check_size(frames * height * width * 3, f"({frames}, {height}, {width}, 3)")
    rng = np.random.default_rng(_seed(seed))
    y = np.arange(height, dtype=np.float32)[:, None]
    x = np.arange(width, dtype=np.float32)[None, :]
    fy, fx = y / max(height - 1, 1), x / max(width - 1, 1)
    scene = np.stack(
        np.broadcast_arrays(150 * fx + 40, 120 * fy + 50, 80 * (1 - fx) * (1 - fy) + 70), axis=-1
    ).astype(np.float32)
    side = min(height, width)
    for _ in range(3):  # fixed shapes: edges that do not move
        cy, cx = rng.uniform(0, height), rng.uniform(0, width)
        r = rng.uniform(0.04, 0.12) * side + 1
        scene[(np.abs(y - cy) < r) & (np.abs(x - cx) < r)] = rng.uniform(0, 255, 3)
    movers = []
    for _ in range(shapes):
        r = rng.uniform(0.06, 0.14) * side + 1
        pos = np.array([rng.uniform(0, height), rng.uniform(0, width)])
        speed = rng.uniform(0.03, 0.06) * side + 0.5
        angle = rng.uniform(0, 2 * np.pi)
        movers.append((r, pos, speed * np.array([np.sin(angle), np.cos(angle)]), rng.uniform(0, 255, 3),
                       bool(rng.random() < 0.5)))
    video = np.empty((frames, height, width, 3), np.uint8)
    for t in range(frames):
        frame = scene.copy()
        for r, pos, vel, colour, disc in movers:
            cy, cx = pos + t * vel
            # Bounce: fold the straight path back into [0, H) x [0, W).
            cy = abs((cy + height) % (2 * height) - height) if height > 1 else 0.0
            cx = abs((cx + width) % (2 * width) - width) if width > 1 else 0.0
            y0, y1 = max(int(cy - r), 0), min(int(cy + r) + 2, height)
            x0, x1 = max(int(cx - r), 0), min(int(cx + r) + 2, width)
            yy, xx = y[y0:y1], x[:, x0:x1]
            if disc:
                mask = (yy - cy) ** 2 + (xx - cx) ** 2 < r * r
            else:
                mask = (np.abs(yy - cy) < r) & (np.abs(xx - cx) < 1.4 * r)
            frame[y0:y1, x0:x1][mask] = colour
        if noise > 0:
            frame += np.float32(noise) * rng.standard_normal(frame.shape, dtype=np.float32)
        video[t] = np.clip(np.rint(frame), 0, 255).astype(np.uint8)
    return video


#: The largest image these generators make (uint8 bytes): 2**31, as the kernels' indices allow.
MAX_BYTES = 2**31 - 1


def _dimension(value: Any, name: str) -> int:
    """A frame count or side: an integer from 1 to MAX_BYTES (the product is checked next)."""
    return _validate.integer(value, name, low=1, high=MAX_BYTES)


def _check_size(nbytes: int, shape: str) -> None:
    """Refuse a size before allocating it (the generators work in float: several times more)."""
    if nbytes > MAX_BYTES:
        raise ValueError(f"frames, height, width: the requested shape {shape} is {nbytes} bytes; "
                         f"at most {MAX_BYTES} are supported")


def _seed(seed: Any) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be an integer, got {type(seed).__name__}")
    if seed < 0:
        raise ValueError(f"seed must be >= 0, got {seed}")
    return int(seed)


# --------------------------------------------------------------------------------------------
# Offline face data (the MCT detector's training and evaluation sets)
# --------------------------------------------------------------------------------------------
#: The pinned source archive: pyvision-toolkit 1.3.6 (D. Bolme, BSD), an sdist on the package index.
PYVISION_VERSION = "1.3.6"
PYVISION_ARCHIVE = f"pyvision_toolkit-{PYVISION_VERSION}.tar.gz"
PYVISION_SHA256 = "d6f49cf532e71d8130b63066fcb8424764b797df003be1d1b1688b3bec04a100"
PYVISION_BYTES = 22_939_771
_PYVISION_DATA = f"pyvision_toolkit-{PYVISION_VERSION}/src/pyvision/data/"


class DataUnavailableError(RuntimeError):
    """A data set is not in the cache and could not be fetched (offline, or a checksum mismatch);
    the message says what to run."""


def cache_dir(path: Any = None) -> str:
    """The folder of downloaded data: ``path``, else ``$PORTCV_DATA``, else ``~/.cache/portcv``."""
    import os

    if path is not None:
        return os.fspath(path)
    return os.environ.get("PORTCV_DATA") or os.path.join(os.path.expanduser("~"), ".cache", "portcv")


def _fetch_command(folder: str) -> str:
    return (f"python -m pip download --no-deps --no-binary :all: pyvision-toolkit=={PYVISION_VERSION} "
            f"-d {folder}")


def fetch_pyvision(*, cache: Any = None) -> str:
    """Download the pinned ``pyvision-toolkit`` sdist into the cache once; return its path.

    Runs ``python -m pip download --no-deps --no-binary :all: pyvision-toolkit==1.3.6 -d CACHE``
    (pip prepares the package's metadata, which runs its ``setup.py``: it only lists its data
    folder) and checks the archive's size and sha256. The package is never installed: its
    images are read from the archive with :mod:`tarfile`. Nothing is downloaded when the
    checked archive is already there.

    Raises
    ------
    DataUnavailableError
        pip failed (offline, say) or the archive does not match the pinned checksum; the
        message gives the command to run by hand.

    Examples
    --------
    >>> import portcv
    >>> path = portcv.data.fetch_pyvision()   # doctest: +SKIP
    >>> path.endswith("pyvision_toolkit-1.3.6.tar.gz")   # doctest: +SKIP
    True
    """
    import hashlib
    import os
    import subprocess
    import sys

    folder = cache_dir(cache)
    path = os.path.join(folder, PYVISION_ARCHIVE)
    if not os.path.isfile(path):
        os.makedirs(folder, exist_ok=True)
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
               f"pyvision-toolkit=={PYVISION_VERSION}", "-d", folder]
        try:  # bounded: an unreachable index must not hang the caller
            run = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
            said = run.stderr.strip()[-300:] if run.returncode != 0 else "no archive"
        except (subprocess.TimeoutExpired, OSError) as exc:
            run, said = None, f"{type(exc).__name__}: {exc}"
        if run is None or run.returncode != 0 or not os.path.isfile(path):
            raise DataUnavailableError(f"could not download pyvision-toolkit {PYVISION_VERSION} (pip said: "
                                       f"{said}); run `{_fetch_command(folder)}` where the package "
                                       "index is reachable and copy the archive into that folder")
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    if digest.hexdigest() != PYVISION_SHA256:
        raise DataUnavailableError(f"{path} has sha256 {digest.hexdigest()}, not the pinned {PYVISION_SHA256}; "
                                   f"delete it and run `{_fetch_command(folder)}`")
    return path


def _pyvision_archive(cache: Any, download: bool) -> Any:
    """The opened, checked archive (a ``tarfile.TarFile``)."""
    import os
    import tarfile

    folder = cache_dir(cache)
    path = os.path.join(folder, PYVISION_ARCHIVE)
    if not os.path.isfile(path) and not download:
        raise DataUnavailableError(f"the face data is not in the cache ({path}); run "
                                f"`python -c 'import portcv.data as d; d.fetch_pyvision()'` or "
                                f"`{_fetch_command(folder)}`")
    return tarfile.open(fetch_pyvision(cache=cache), "r:gz")


def _decode(data: bytes, name: str) -> np.ndarray:
    """A PGM (parsed here) or a JPEG (through imageio, the ``io`` extra) as uint8."""
    if data[:2] == b"P5":
        return _read_pgm(data, name)
    try:
        import imageio.v3 as iio
    except ImportError:
        raise ImportError(f"reading {name} needs imageio: pip install 'portcv[io]'") from None
    return np.asarray(iio.imread(data, extension="." + name.rsplit(".", 1)[-1]), dtype=np.uint8)


def _read_pgm(data: bytes, name: str) -> np.ndarray:
    """Binary 8-bit PGM (P5): header fields separated by whitespace, ``#`` comments."""
    fields: list[bytes] = []
    pos = 2
    while len(fields) < 3:
        while data[pos : pos + 1].isspace():
            pos += 1
        if data[pos : pos + 1] == b"#":
            pos = data.index(b"\n", pos) + 1
            continue
        end = pos
        while not data[end : end + 1].isspace():
            end += 1
        fields.append(data[pos:end])
        pos = end
    width, height, maxval = (int(f) for f in fields)
    if maxval > 255:
        raise ValueError(f"{name}: 16-bit PGM is not supported")
    pixels = np.frombuffer(data, np.uint8, count=width * height, offset=pos + 1)
    return pixels.reshape(height, width).copy()


def csu_scrapshots(*, cache: Any = None, download: bool = True) -> tuple[list, np.ndarray, np.ndarray, list]:
    """CSU ScrapShots: 173 gray frontal face photos of 30 people with eye coordinates.

    From the ``pyvision-toolkit`` 1.3.6 archive (:func:`fetch_pyvision`): old scanned portraits,
    200 px wide, 188-313 px tall.

    Parameters
    ----------
    cache : path, optional
        The data folder (:func:`cache_dir`).
    download : bool
        Fetch the archive when it is not cached (False: raise DataUnavailableError instead).

    Returns
    -------
    images : list of (H, W) uint8 arrays
    identities : (173,) int32
        The person (1..30, the file name's number), for identity-disjoint splits.
    eyes : (173, 4) int32
        ``(left x, left y, right x, right y)`` of the eye centres (``coords.txt``).
    names : list of str
        The file names without extension (``'00001aa'``, ...), sorted.

    Examples
    --------
    >>> import portcv
    >>> images, identities, eyes, names = portcv.data.csu_scrapshots()   # doctest: +SKIP
    >>> len(images), len(set(identities.tolist())), eyes.shape            # doctest: +SKIP
    (173, 30, (173, 4))
    """
    with _pyvision_archive(cache, download) as tar:
        base = _PYVISION_DATA + "csuScrapShots/"
        coords = {}
        for line in tar.extractfile(base + "coords.txt").read().decode().splitlines():
            parts = line.split()
            if len(parts) == 5:
                coords[parts[0]] = [int(v) for v in parts[1:]]
        names = sorted(coords)
        images = [_decode(tar.extractfile(base + n + ".pgm").read(), n + ".pgm") for n in names]
    identities = np.array([int(n[:5]) for n in names], np.int32)
    eyes = np.array([coords[n] for n in names], np.int32)
    return images, identities, eyes, names


#: ``nonface_images`` splits of the 51 photos (1-based numbers): train, validation, test.
NONFACE_SPLITS = {"train": range(1, 36), "validation": range(36, 44), "test": range(44, 52)}


def nonface_images(*, split: str = "all", cache: Any = None, download: bool = True) -> list:
    """pyvision's 51 face-free colour photos (640x480 or 480x640, nature and buildings), RGB uint8.

    ``split``: ``'train'`` (photos 1-35), ``'validation'`` (36-43), ``'test'`` (44-51) or
    ``'all'``; in photo-number order. Needs imageio (``pip install 'portcv[io]'``) for the JPEGs.

    Examples
    --------
    >>> import portcv
    >>> photos = portcv.data.nonface_images(split="test")   # doctest: +SKIP
    >>> len(photos), photos[0].shape                         # doctest: +SKIP
    (8, (480, 640, 3))
    """
    if split not in ("all", *NONFACE_SPLITS):
        raise ValueError(f"split must be one of {('all', *NONFACE_SPLITS)}, got {split!r}")
    numbers = range(1, 52) if split == "all" else NONFACE_SPLITS[split]
    with _pyvision_archive(cache, download) as tar:
        out = []
        for k in numbers:
            name = f"NONFACE_{k}.jpg"
            img = _decode(tar.extractfile(_PYVISION_DATA + "nonface/" + name).read(), name)
            out.append(img if img.ndim == 3 else np.repeat(img[..., None], 3, axis=-1))
    return out


def lfw_subset() -> tuple[np.ndarray, np.ndarray]:
    """scikit-image's LFW subset as uint8: ``(faces (100, 25, 25), non-faces (100, 25, 25))``.

    scikit-image stores float64 in [0, 1] (not uint8, whatever its docstring says); portcv
    quantizes with ``rint(x * 255)``. The faces are tight crops (eyebrows to chin) without
    identity labels; the non-faces are mostly flat or edge backgrounds.

    Examples
    --------
    >>> import portcv
    >>> faces, nonfaces = portcv.data.lfw_subset()
    >>> faces.shape, faces.dtype
    ((100, 25, 25), dtype('uint8'))
    """
    from skimage import data as skdata

    x = np.rint(np.asarray(skdata.lfw_subset(), np.float64) * 255.0).astype(np.uint8)
    return x[:100].copy(), x[100:].copy()


#: scikit-image sample images without faces (chelsea, a cat, is a hard negative).
SKIMAGE_NEGATIVES = ("brick", "grass", "gravel", "coins", "coffee", "rocket", "horse", "moon", "page", "text",
                     "hubble_deep_field", "immunohistochemistry", "retina", "cell", "clock", "logo",
                     "microaneurysms", "chelsea", "motorcycle")


def skimage_negatives() -> list:
    """Gray uint8 versions of scikit-image's face-free sample images (``SKIMAGE_NEGATIVES``; RGB
    through portcv's ``rgb_to_gray``, alpha dropped, bool and float images scaled to 0..255).

    Examples
    --------
    >>> import portcv
    >>> negatives = portcv.data.skimage_negatives()
    >>> len(negatives) == len(portcv.data.SKIMAGE_NEGATIVES), negatives[0].dtype
    (True, dtype('uint8'))
    """
    from skimage import data as skdata

    from . import color

    out = []
    for name in SKIMAGE_NEGATIVES:
        if name == "motorcycle":
            img = skdata.stereo_motorcycle()[0]
        else:
            img = getattr(skdata, name)()
        img = np.asarray(img)
        if img.dtype == bool:
            img = img.astype(np.uint8) * 255
        elif img.dtype != np.uint8:
            img = np.rint(np.clip(img.astype(np.float64), 0, 1) * 255).astype(np.uint8)
        if img.ndim == 3:
            img = np.asarray(color.rgb_to_gray(np.ascontiguousarray(img[..., :3])))
        out.append(np.ascontiguousarray(img))
    return out


def face_box(eyes: Any) -> np.ndarray:
    """The face box ``[x, y, w, h]`` (float64) of eye centres ``(lx, ly, rx, ry)``: cv2's Haar
    default box geometry measured on CSU ScrapShots (``w = 2.54 x`` the eye distance, eye midpoint at
    ``(0.49 w, 0.38 w)``), the geometry the MCT cascade is trained with.

    Examples
    --------
    >>> import portcv
    >>> [round(float(v), 2) for v in portcv.data.face_box((10, 20, 30, 20))]
    [-4.89, 0.7, 50.8, 50.8]
    """
    from ._face_geometry import BOX_PER_EYE_DISTANCE, EYE_MID

    centres = _validate.real_array(eyes, "eyes", max_size=4)
    if centres.shape != (4,) or not np.isfinite(centres).all():
        raise ValueError(f"eyes must be 4 finite numbers (lx, ly, rx, ry), got {np.asarray(eyes)!r:.80}")
    lx, ly, rx, ry = (float(v) for v in centres)
    w = BOX_PER_EYE_DISTANCE * float(np.hypot(rx - lx, ry - ly))
    return np.array([(lx + rx) / 2 - EYE_MID[0] * w, (ly + ry) / 2 - EYE_MID[1] * w, w, w])


def face_scenes(*, seed: int = 0, count: int = 12, size: tuple[int, int] = (640, 480), face_sizes: tuple = (24, 120),
                cache: Any = None, download: bool = True) -> list:
    """Composited test scenes with known face boxes (the MCT evaluation's T2): ``[(gray, boxes)]``.

    Faces of the CSU ScrapShots identities held out of training (``id % 5 == 0``), cut with a
    margin of 0.3 x the face box on each side (so the paste edge stays outside the face window),
    resized (``bilinear``) to a face width drawn from ``face_sizes`` (scaled with the scene
    height relative to 480) and pasted without overlap into pyvision's test face-free photos
    44-51 (gray; resized to ``size`` when it differs from theirs, a portrait photo transposed).
    3 to 8 faces per scene; ``boxes`` is ``(n, 4)`` float64 ``[x, y, w, h]``. Seeded.

    Examples
    --------
    >>> import portcv
    >>> scenes = portcv.data.face_scenes(seed=0, count=2)   # doctest: +SKIP
    >>> scenes[0][0].shape, scenes[0][1].shape[1]          # doctest: +SKIP
    ((480, 640), 4)
    """
    from . import color, transform

    rng = np.random.default_rng(_seed(seed))
    images, ids, eyes, _ = csu_scrapshots(cache=cache, download=download)
    faces = [(images[i], eyes[i]) for i in range(len(ids)) if ids[i] % 5 == 0]
    backgrounds = []
    for p in nonface_images(split="test", cache=cache, download=download):
        g = np.asarray(color.rgb_to_gray(p))
        g = g if g.shape[0] <= g.shape[1] else np.ascontiguousarray(g.T)
        if (g.shape[1], g.shape[0]) != tuple(size):
            g = np.asarray(transform.resize(g, size=tuple(size), interpolation="bilinear"))
        backgrounds.append(g)
    w, h = size
    grow = h / 480.0
    out = []
    for k in range(count):
        canvas = backgrounds[k % len(backgrounds)].copy()
        placed: list = []
        truth: list = []
        want = int(rng.integers(3, 9))
        for _ in range(400):
            if len(truth) >= want:
                break
            img, e = faces[int(rng.integers(len(faces)))]
            side = int(round(int(rng.integers(face_sizes[0], face_sizes[1] + 1)) * grow))
            box = face_box(e)
            margin = 0.3 * box[2]
            x0, y0 = max(int(round(box[0] - margin)), 0), max(int(round(box[1] - margin)), 0)
            x1 = min(int(round(box[0] + box[2] + margin)), img.shape[1])
            y1 = min(int(round(box[1] + box[3] + margin)), img.shape[0])
            f = side / box[2]
            cw, ch = max(1, int(round((x1 - x0) * f))), max(1, int(round((y1 - y0) * f)))
            if cw >= w or ch >= h:
                continue
            px, py = int(rng.integers(0, w - cw)), int(rng.integers(0, h - ch))
            if any(px < bx + bw and bx < px + cw and py < by + bh and by < py + ch for bx, by, bw, bh in placed):
                continue
            crop = np.ascontiguousarray(img[y0:y1, x0:x1])
            canvas[py : py + ch, px : px + cw] = np.asarray(transform.resize(crop, size=(cw, ch),
                                                                             interpolation="bilinear"))
            placed.append((px, py, cw, ch))
            truth.append([px + (box[0] - x0) * f, py + (box[1] - y0) * f, side, side])
        out.append((canvas, np.array(truth, np.float64).reshape(-1, 4)))
    return out


# Eye-aligned, identity-labelled crops of the same faces: portcv.recognize's test, benchmark and docs data.
def _align_face(image: np.ndarray, left_eye: Any, right_eye: Any, *, size: tuple[int, int], eye_distance: float,
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


def _equalize(image: np.ndarray) -> np.ndarray:
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
    for name, flag in (("equalize_histogram", equalize_histogram), ("download", download)):
        if not isinstance(flag, bool):  # download="no" would be truthy and fetch 22.9 MB
            raise TypeError(f"{name} must be a bool, got {type(flag).__name__}")
    w, h = _validate.kernel_size(size, "size", odd=False, low=8, high=4096)
    eye_distance = _validate.real(eye_distance, "eye_distance", positive=True, high=float(w))
    eye_y = _validate.real(eye_y, "eye_y", high=float(h))
    images, identities, eyes, _ = csu_scrapshots(cache=cache, download=download)
    faces = []
    for image, (lx, ly, rx, ry) in zip(images, eyes.tolist()):
        crop = _align_face(image, (lx, ly), (rx, ry), size=(w, h), eye_distance=eye_distance, eye_y=eye_y)
        faces.append(_equalize(crop) if equalize_histogram else crop)
    _, labels = np.unique(identities, return_inverse=True)
    return np.stack(faces), labels.astype(np.int32)
