"""Regional LBP histograms: Ahonen et al.'s face descriptor, as Tek's thesis lays it out.

The labels of the valid interior (every sample inside the image) are split into rectangular
regions and counted per region; the feature vector is the region-major concatenation (bin i of
region j). Regions of ``region_size = (w, h)`` pixels are tiled from the top-left and the last
row and column of regions keep their partial size (``ceil``): on the thesis's 130 x 150 faces
this gives exactly the five feature lengths of its Table 4.2 (8496, 2891, 1475, 11907, 6075).
``grid = (gx, gy)`` gives OpenCV LBPH's cells instead (``floor(W / gx) x floor(H / gy)``
pixels, the remainder dropped). ``regions = (nx, ny)`` sizes the regions to the face, as the
thesis cuts its faces into 7 x 7: ``ceil(W / nx) x ceil(H / ny)`` pixels tiled as
``region_size`` (18 x 21 on the 126 x 146 interior of a 130 x 150 face), or, on an axis where
that tiling gives fewer than ``nx`` (``ny``) regions (on some interiors of at most
``(nx - 1)**2`` pixels, e.g. 15 or 36 for 7), ``floor`` sized cells with the remainder dropped,
as ``grid``.

Counting is exact integer work on every backend: the portable version sorts one key per pixel
(frame, region, label) and reads the counts with ``searchsorted``; NumPy uses ``np.bincount``
and JAX an integer scatter-add (integer additions commute, so any order gives the same counts).
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from .. import _validate
from .._kernel import kernel
from ..backends import backend
from ..backends.jax import jit
from ._lbp import METHODS, bin_count, check_pr, lbp_kernel

#: Output dtypes of :func:`lbp_histograms` (``"auto"``: uint8 when a region has at most 255 pixels).
HISTOGRAM_DTYPES = ("auto", "uint8", "uint16", "int32")
#: The largest region (pixels): the chi-square fixed point needs counts below 2**15.
MAX_REGION_PIXELS = 2**15 - 1


def region_layout(height: int, width: int, region_size: Any, grid: Any,
                  regions: Any = None) -> tuple[int, int, int, int]:
    """``(ny, nx, h, w)`` of the regions over an ``height x width`` label image: ``grid``'s
    cells, else ``regions`` sized to it, else tiles of ``region_size`` (module docstring)."""
    if grid is not None and regions is not None:
        raise ValueError(f"pass grid or regions, not both (got grid={grid!r}, regions={regions!r})")
    if grid is not None:
        gx, gy = _validate.kernel_size(grid, "grid", odd=False, low=1, high=4096)
        w, h = width // gx, height // gy
        if w == 0 or h == 0:
            raise ValueError(f"grid={grid!r} has more cells than the {width} x {height} label image has pixels")
        return gy, gx, h, w
    if regions is not None:
        rx, ry = _validate.kernel_size(regions, "regions", odd=False, low=1, high=4096)
        if width < rx or height < ry:
            raise ValueError(f"regions={regions!r} needs a label image (the face's interior) of at least {rx} x {ry} "
                             f"pixels; these faces give {width} x {height}: pass fewer regions")
        w, h = _region_extent(width, rx), _region_extent(height, ry)
        return ry, rx, h, w
    w, h = _validate.kernel_size(region_size, "region_size", odd=False, low=1, high=1 << 15)
    return -(-height // h), -(-width // w), h, w


def _region_extent(length: int, count: int) -> int:
    """The size of ``count`` regions over ``length >= count`` pixels: ``ceil(length / count)``
    when its tiling (the last region partial) gives ``count`` regions, else ``length // count``
    (the remainder, fewer than ``count`` pixels, dropped)."""
    size = -(-length // count)
    return size if -(-length // size) == count else length // count


def _region_keys(xp: Any, labels: Any, ny: int, nx: int, h: int, w: int, bins: int) -> tuple[Any, int]:
    """Per pixel of the regions, ``(frame * regions + region) * bins + label`` (int32 or int64), flat."""
    lead = tuple(labels.shape[:-2])
    frames = math.prod(lead)
    labels = labels[..., :min(ny * h, labels.shape[-2]), :min(nx * w, labels.shape[-1])]
    H, W = labels.shape[-2], labels.shape[-1]
    region = (np.arange(H)[:, None] // h) * nx + np.arange(W)[None, :] // w  # host, static
    n_keys = frames * ny * nx * bins
    dtype = xp.int32 if n_keys < 2**31 else xp.int64
    key = xp.astype(xp.reshape(labels, (frames, H, W)), dtype) + xp.asarray((region * bins).astype(np.int64), dtype=dtype)
    key = key + xp.reshape(xp.arange(frames, dtype=dtype) * (ny * nx * bins), (frames, 1, 1))
    return xp.reshape(key, (-1,)), n_keys


@kernel("region_histograms")
def region_histograms_kernel(xp: Any, labels: Any, *, ny: int, nx: int, h: int, w: int, bins: int, dtype: str) -> Any:
    """Counts of each label per region of every frame: ``(..., ny, nx, bins)`` in ``dtype``."""
    key, n_keys = _region_keys(xp, labels, ny, nx, h, w, bins)
    key = xp.sort(key)
    upto = xp.searchsorted(key, xp.arange(n_keys, dtype=key.dtype), side="right")
    counts = xp.concat([upto[:1], upto[1:] - upto[:-1]])
    lead = tuple(labels.shape[:-2])
    return xp.reshape(xp.astype(counts, getattr(xp, dtype)), lead + (ny, nx, bins))


@region_histograms_kernel.override("numpy", supports="every input (one np.bincount)")
def _region_histograms_numpy(labels: Any, *, ny: int, nx: int, h: int, w: int, bins: int, dtype: str) -> Any:
    key, n_keys = _region_keys(np, labels, ny, nx, h, w, bins)
    counts = np.bincount(key, minlength=n_keys)
    return counts.astype(dtype).reshape(tuple(labels.shape[:-2]) + (ny, nx, bins))


@region_histograms_kernel.override("jax", supports="every input (an integer scatter-add)")
def _region_histograms_jax(labels: Any, *, ny: int, nx: int, h: int, w: int, bins: int, dtype: str) -> Any:
    return _region_histograms_jax_compiled(ny, nx, h, w, bins, dtype)(labels)


@functools.lru_cache(maxsize=64)
def _region_histograms_jax_compiled(ny: int, nx: int, h: int, w: int, bins: int, dtype: str) -> Any:
    import jax.numpy as jnp

    def run(labels: Any) -> Any:
        key, n_keys = _region_keys(jnp, labels, ny, nx, h, w, bins)
        # Integer scatter-add: additions commute, so the counts are exact in any order.
        counts = jnp.zeros(n_keys, jnp.int32).at[key].add(1)
        return jnp.reshape(counts.astype(dtype), tuple(labels.shape[:-2]) + (ny, nx, bins))

    return jit(run)


def lbp_histograms(image: Any, *, P: int = 8, R: float = 2.0, method: str = "u2", region_size: Any = (18, 21),
                   grid: Any = None, regions: Any = None, dtype: str = "auto", channel_axis: Any = "auto") -> Any:
    """Regional LBP histograms of a face or a batch of faces (Ahonen et al.'s descriptor).

    The labels of :func:`local_binary_pattern` with ``border="valid"`` are counted per region;
    flattening the last three axes gives the feature vector of the thesis (bin i of region j,
    region-major, regions row by row).

    Parameters
    ----------
    image : (..., H, W) uint8 array
        A face or a batch of faces (leading axes), any backend's array.
    P, R : int, float
        Sample points (1 to 16) and radius of the LBP operator.
    method : {'u2', 'default', 'ror', 'uniform', 'nri_uniform'}
        Label mapping (see :func:`local_binary_pattern`); ``'u2'``: 59 bins for P = 8, 243 for 16.
    region_size : (w, h) pair of int
        Region width and height in pixels, tiled from the top-left of the valid interior; the
        last column and row of regions keep their partial size. Ahonen's 7 x 7 regions of a
        130 x 150 face are ``(18, 21)``.
    grid : (gx, gy) pair of int, optional
        Instead of ``region_size``: OpenCV LBPH's ``grid_x x grid_y`` cells of
        ``floor(W' / gx) x floor(H' / gy)`` pixels (``W', H'`` the interior), the remainder dropped.
    regions : (nx, ny) pair of int, optional
        Instead of ``region_size`` (not with ``grid``): ``nx x ny`` regions sized to the face,
        ``ceil(W' / nx) x ceil(H' / ny)`` pixels tiled as ``region_size`` does; on an axis where
        that tiling gives fewer regions (some interiors of at most ``(n - 1)**2`` pixels), cells
        of ``floor`` size with the remainder dropped. ``(7, 7)`` on a 130 x 150 face is
        ``region_size=(18, 21)``; on ORL's 92 x 112 faces, 13 x 16.
    dtype : {'auto', 'uint8', 'uint16', 'int32'}
        Count type; ``'auto'`` is uint8 when a region has at most 255 pixels, else uint16.
    channel_axis : {'auto', None}
        ``'auto'``: an array whose last axis has 3 or 4 entries is a colour image and is refused
        (convert it with :func:`portcv.color.rgb_to_gray`); ``None``: the leading axes are a batch.

    Returns
    -------
    histograms : (..., ny, nx, bins) array
        On the active backend.

    Notes
    -----
    For a 130 x 150 face at R = 2 the interior is 126 x 146; regions of 11 x 13, 18 x 21 and
    26 x 30 give 12 x 12, 7 x 7 and 5 x 5 regions, hence the feature lengths 8496, 2891, 1475
    (P = 8) and 11907, 6075 (P = 16, regions 18 x 21 and 26 x 30) of the thesis's Table 4.2.
    A region may have at most 32,767 pixels (the chi-square fixed point's bound).

    References
    ----------
    T. Ahonen, A. Hadid, M. Pietikäinen, "Face recognition with local binary patterns", ECCV
    2004, LNCS 3021, pp. 469-481, doi:10.1007/978-3-540-24670-1_36. S. C. Tek, "Fast face
    detection and recognition on graphics processing units", M.Sc. thesis, ITU, 2012, §3.2.1,
    Table 4.2.

    Examples
    --------
    >>> import numpy as np, portcv
    >>> face = np.random.default_rng(0).integers(0, 256, (150, 130), dtype=np.uint8)
    >>> h = portcv.recognize.lbp_histograms(face)
    >>> h.shape, h.dtype, int(h.sum())                  # 7 x 7 regions of 59 bins
    ((7, 7, 59), dtype('uint16'), 18396)
    >>> portcv.recognize.lbp_histograms(face, P=16, region_size=(26, 30)).size
    6075
    >>> orl = np.zeros((112, 92), np.uint8)                  # an ORL face: 88 x 108 interior
    >>> portcv.recognize.lbp_histograms(orl, regions=(7, 7)).shape
    (7, 7, 59)
    """
    image = _validate.image(image, "image")
    _validate.gray(image, "image", channel_axis)
    P, R = check_pr(P, R)
    method = _validate.choice(method, "method", METHODS)
    dtype = _validate.choice(dtype, "dtype", HISTOGRAM_DTYPES)
    c = math.ceil(R)
    H, W = image.shape[-2] - 2 * c, image.shape[-1] - 2 * c
    if H <= 0 or W <= 0:
        raise ValueError(f"image of shape {tuple(image.shape)} is too small for R={R}: its interior "
                         f"(H - 2 ceil(R), W - 2 ceil(R)) is empty")
    ny, nx, h, w = region_layout(H, W, region_size, grid, regions)
    pixels = min(h, H) * min(w, W)
    if pixels > MAX_REGION_PIXELS:
        raise ValueError(f"region_size/grid/regions give regions of {pixels} pixels; at most {MAX_REGION_PIXELS} "
                         "(the chi-square fixed point needs counts below 2**15)")
    if dtype == "auto":
        dtype = "uint8" if pixels <= 255 else "uint16"
    elif dtype == "uint8" and pixels > 255:
        raise ValueError(f"dtype='uint8' cannot hold counts of regions of {pixels} pixels; use 'uint16'")
    bins = bin_count(P, method)
    # tiny regions of a large image (or 4096 x 4096 regions) multiply the image by the bins
    _validate.output_elements(tuple(image.shape), (image.shape[-2], image.shape[-1]), (ny, nx * bins),
                              "image with these regions")
    labels = lbp_kernel(image, P=P, R=R, method=method, border="valid")
    return region_histograms_kernel(labels, ny=ny, nx=nx, h=h, w=w, bins=bins, dtype=dtype)
