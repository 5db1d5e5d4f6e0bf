"""Sample images, generated (no files, no network) so demos, tests and benchmarks are reproducible."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["synthetic_rgb", "moving_shapes", "csu_scrapshots", "DataUnavailableError"]


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
    if not (isinstance(height, (int, np.integer)) and isinstance(width, (int, np.integer))):
        raise TypeError(f"height and width must be integers, got {type(height).__name__}, {type(width).__name__}")
    if height < 1 or width < 1:
        raise ValueError(f"height and width must be >= 1, got ({height}, {width})")
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
    for name, value in (("frames", frames), ("height", height), ("width", width), ("shapes", shapes)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    if frames < 1 or height < 1 or width < 1:
        raise ValueError(f"frames, height and width must be >= 1, got ({frames}, {height}, {width})")
    if not 0 <= shapes <= 32:
        raise ValueError(f"shapes must be in [0, 32], got {shapes}")
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


def _check_size(nbytes: int, shape: str) -> None:
    """Refuse a size before allocating it (the generators work in float: several times more)."""
    if nbytes > MAX_BYTES:
        raise ValueError(f"the requested shape {shape} is {nbytes} bytes; at most {MAX_BYTES} are supported")


def _seed(seed: Any) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be an integer, got {type(seed).__name__}")
    if seed < 0:
        raise ValueError(f"seed must be >= 0, got {seed}")
    return int(seed)


# Identity-labelled faces (fetched once into a user cache, never at import): portcv.recognize's data.
from .recognize._faces_data import DataUnavailableError, csu_scrapshots  # noqa: E402
