"""Sample images, generated (no files, no network) so demos, tests and benchmarks are reproducible."""

from __future__ import annotations

import numpy as np

__all__ = ["synthetic_rgb"]


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
    rng = np.random.default_rng(seed)
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
