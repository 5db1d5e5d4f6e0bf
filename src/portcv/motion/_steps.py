"""The motion detector's steps as public functions: the thresholded difference of two edge maps
(Algorithm 2), cell densities and regions (Algorithm 3), their pictures.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from .. import _validate
from ..backends import backend
from ._motion import (
    VARIANTS,
    area_image_kernel,
    cell_area,
    density_kernel,
    difference_kernel,
    draw_regions_kernel,
)
from ._motion import cell_bounds as _cell_bounds

#: The paper's Fig. 18: m = 10 horizontal and n = 6 vertical divisions, as (rows, cols).
DEFAULT_GRID = (6, 10)


#: The paper's Fig. 18 motion threshold: 1% of a cell's pixels.
DEFAULT_GAMMA = 0.01


#: The paper's Fig. 17 movement tolerance.
DEFAULT_BETA = 12


def _variant(variant: Any) -> str:
    return _validate.choice(variant, "variant", VARIANTS)


def _edge_map(value: Any, name: str, channel_axis: Any) -> Any:
    return _validate.image(value, name, gray=True, channel_axis=channel_axis)


def _grid(grid: Any, height: int, width: int) -> tuple[int, int]:
    if not isinstance(grid, (tuple, list)) or len(grid) != 2:
        raise ValueError(f"grid must be a (rows, cols) pair of integers, got {grid!r}")
    rows = _validate.integer(grid[0], "grid", low=1, high=height)
    cols = _validate.integer(grid[1], "grid", low=1, high=width)
    return rows, cols


def _shape(shape: Any) -> tuple[int, int]:
    if not isinstance(shape, (tuple, list)) or len(shape) < 2:
        raise ValueError(f"shape must be the frame's (H, W) (or its full shape), got {shape!r}")
    # Cell bounds are int32 (the kernels index with 32-bit ints): larger sizes would wrap.
    return (_validate.integer(shape[-2], "shape", low=1, high=2**31 - 1),
            _validate.integer(shape[-1], "shape", low=1, high=2**31 - 1))


# --------------------------------------------------------------------------------------------
# Algorithm 2: thresholded difference matrix
# --------------------------------------------------------------------------------------------
def difference(e1: Any, e2: Any, *, beta: int = DEFAULT_BETA, variant: str = "pseudocode",
               channel_axis: Any = "auto") -> Any:
    """Thresholded difference matrix ``D`` of two edge maps (Algorithm 2), uint8 0/255.

    ``D[p] = 255`` when the maps differ at ``p`` (``E1[p] != E2[p]``) and no pixel ``q`` of the
    apron ``|q_row - p_row| <= beta``, ``|q_col - p_col| <= beta`` has ``E1[q] == E2[p]``: an edge
    that appears in ``E2`` counts only if ``E1`` has no edge within ``beta`` pixels (it did not
    just shift, e.g. by camera shake), and an edge that disappears counts only if ``E1`` is all
    edge around it. Maps are binarized as ``!= 0`` (edge maps are 0/255).

    The apron test is an existence test on a binary map, so it is computed as a separable box
    count (``n1`` = edges of ``E1`` in the apron; "no match" is ``n1 == 0`` or ``n1 == apron
    size``): O(1) work per pixel per axis instead of the pseudocode's ``(2 beta + 1)**2`` reads,
    with the same result.

    Parameters
    ----------
    e1, e2 : (..., H, W) uint8 arrays
        Edge maps of the earlier and the later frame (same shape; leading axes are a batch).
    beta : int
        Movement tolerance in pixels (0 .. 65535; the paper's Fig. 17 uses 12). ``beta=0``
        gives the plain difference ``D0 = 255 * (E1 != E2)``.
    variant : {'pseudocode', 'listing'}
        ``'pseudocode'``: Algorithm 2's domain: every pixel, the apron clipped to the image.
        ``'listing'``: Listing 6: only pixels with ``7 < r < H - 7`` and ``7 < c < W - 7`` can be
        set, and the apron never matches row 0 or column 0 (its ``> 0`` bounds test).
    channel_axis : {"auto", None}
        ``"auto"``: maps whose last axis has 3 or 4 entries look like colour images and are
        refused (edge maps are gray); ``None``: the leading axes are a batch of maps, whatever
        their width.

    Returns
    -------
    (..., H, W) uint8 array of 0 and 255 on the active backend.

    Notes
    -----
    The printed pseudocode's inner test reads ``E1[q] == E2[q]`` and clears ``D[q]``; taken
    literally it clears only pixels that were never set, so it equals ``beta=0``. Its prose (the
    step "suppresses false positives ... from camera shake"), its serial C and MATLAB code and
    Listing 6 all compare the apron of ``E1`` with ``E2`` at the centre and clear the centre:
    that is what both variants implement (``docs/motion.md``). Integer counting only; no rounding.
    Del Vecchio, Lin and Natarajan, *GPU Acceleration of Edge-Based Motion Detection ...*, Rice
    University, section III-A, Algorithm 2 and Listing 6.

    Examples
    --------
    >>> import numpy as np, portcv
    >>> e1 = np.zeros((5, 7), np.uint8); e1[2, 1] = 255
    >>> e2 = np.zeros((5, 7), np.uint8); e2[2, 2] = 255; e2[2, 6] = 255
    >>> portcv.to_numpy(portcv.motion.difference(e1, e2, beta=1))[2]
    array([  0,   0,   0,   0,   0,   0, 255], dtype=uint8)
    """
    a = _edge_map(e1, "e1", channel_axis)
    b = _edge_map(e2, "e2", channel_axis)
    if tuple(a.shape) != tuple(b.shape):
        raise ValueError(f"e1 and e2 must have the same shape, got {tuple(a.shape)} and {tuple(b.shape)}")
    beta = _validate.integer(beta, "beta", low=0, high=65535)
    return difference_kernel(a, b, beta=beta, variant=_variant(variant))


# --------------------------------------------------------------------------------------------
# Algorithm 3: spatial difference density map and motion regions
# --------------------------------------------------------------------------------------------
def cell_bounds(shape: Any, *, grid: Any = DEFAULT_GRID, variant: str = "pseudocode") -> np.ndarray:
    """Pixel rectangles of the density cells: ``(rows, cols, 4)`` int32 ``[r0, r1, c0, c1]`` (half-open).

    ``pseudocode``: cell ``(i, j)`` spans rows ``i*kh .. i*kh + kh`` *inclusive* (``kh = H //
    rows``; Algorithm 3 loops ``i' in [0, M/m]``), clipped to the image, so neighbouring cells
    share a row; with ``H % rows != 0`` the last ``H - rows*kh - 1`` rows lie in no cell.
    ``listing``: pixel ``(r, c)`` is in cell ``(rows*r // H, cols*c // W)`` (Listings 7-8), a
    partition of the image. Columns alike.

    Parameters
    ----------
    shape : tuple
        The frame's shape; its last two entries are ``(H, W)``.
    grid : (int, int)
        Cells per column and per row ``(rows, cols)`` (the paper's ``(n, m)``).
    variant : {'pseudocode', 'listing'}

    Returns
    -------
    (rows, cols, 4) int32 NumPy array.

    Examples
    --------
    >>> cell_bounds((48, 64), grid=(2, 2))[0, 0]
    array([ 0, 25,  0, 33], dtype=int32)
    >>> cell_bounds((48, 64), grid=(2, 2), variant="listing")[1, 1]
    array([24, 48, 32, 64], dtype=int32)
    """
    h, w = _shape(shape)
    rows, cols = _grid(grid, h, w)
    r0, r1, c0, c1 = _cell_bounds(h, w, rows, cols, _variant(variant))
    out = np.empty((rows, cols, 4), np.int32)
    out[..., 0] = np.asarray(r0)[:, None]
    out[..., 1] = np.asarray(r1)[:, None]
    out[..., 2] = np.asarray(c0)[None, :]
    out[..., 3] = np.asarray(c1)[None, :]
    return out


def density(d: Any, *, grid: Any = DEFAULT_GRID, variant: str = "pseudocode", scale: int | None = None,
            channel_axis: Any = "auto") -> Any:
    """Spatial difference density map ``D'`` (Algorithm 3): difference pixels per grid cell.

    The image is cut into ``rows x cols`` cells (:func:`cell_bounds`) and each cell counts the
    non-zero pixels of ``d`` in it. The paper's density is ``count / cell_area`` with
    ``cell_area = (H // rows) * (W // cols)`` (its ``MN / mn``; Listing 7's ``block_size``).
    Exact counts are returned by default; :func:`regions` compares them with the threshold
    exactly.

    Parameters
    ----------
    d : (..., H, W) uint8 array
        Difference matrix (:func:`difference`); any non-zero pixel counts.
    grid : (int, int)
        ``(rows, cols)`` cells, each at least 1 and at most ``H`` / ``W`` (default ``(6, 10)``:
        the paper's m = 10 horizontal by n = 6 vertical divisions).
    variant : {'pseudocode', 'listing'}
        Cell geometry (:func:`cell_bounds`): Algorithm 3's inclusive cells or Listing 7's partition.
    scale : int or None
        ``None``: counts. An integer ``S`` (1 .. 2**20): the density in units of ``1/S``,
        ``floor(S * count / cell_area)`` (exact integer division; ``S = 1000`` is Listing 7's
        ``scaling_factor``, whose float sums it replaces).
    channel_axis : {"auto", None}
        As in :func:`difference`: ``d`` is gray.

    Returns
    -------
    (..., rows, cols) int32 array on the active backend.

    Notes
    -----
    Listing 7 accumulates ``1000.0 / block_size`` per pixel in doubles from many threads without
    atomics (a race); portcv counts exactly (NumPy: reshapes and strided sums; CUDA: one block
    reduction per cell). Del Vecchio et al., section III-B, Algorithm 3 and Listing 7.

    Examples
    --------
    >>> import numpy as np, portcv
    >>> d = np.zeros((4, 6), np.uint8); d[0, 0] = d[3, 5] = d[1, 3] = 255
    >>> portcv.to_numpy(portcv.motion.density(d, grid=(2, 2), variant="listing"))
    array([[1, 1],
           [0, 1]], dtype=int32)
    >>> portcv.to_numpy(portcv.motion.density(d, grid=(2, 2), variant="listing", scale=1000))
    array([[166, 166],
           [  0, 166]], dtype=int32)
    """
    img = _validate.image(d, "d", gray=True, channel_axis=channel_axis)
    h, w = img.shape[-2:]
    rows, cols = _grid(grid, h, w)
    variant = _variant(variant)
    if scale is not None:
        scale = _validate.integer(scale, "scale", low=1, high=2**20)
    counts = density_kernel(img, grid=(rows, cols), variant=variant)
    if scale is None:
        return counts
    xp = backend().xp
    # count <= H*W < 2**31 and scale <= 2**20: the product fits int64; the quotient <= 4 * scale.
    scaled = (xp.astype(counts, xp.int64) * scale) // cell_area(h, w, rows, cols)
    return xp.astype(scaled, xp.int32)


def regions(density: Any, *, shape: Any, gamma: float = DEFAULT_GAMMA, variant: str = "pseudocode") -> Any:
    """Motion regions: the cells whose difference density exceeds the motion threshold Gamma.

    ``pseudocode`` (Algorithm 3): ``count / cell_area > gamma``. ``listing`` (Listing 8):
    ``count / cell_area >= gamma``. Both are decided exactly, on integers: with ``gamma`` read as
    the decimal it prints as (``repr``: ``0.01`` is exactly 1/100), ``count > floor(gamma *
    cell_area)`` resp. ``count >= ceil(gamma * cell_area)``, computed with Python fractions on
    the host; the device only compares counts with one integer.

    Parameters
    ----------
    density : (..., rows, cols) int32 array
        Per-cell counts from :func:`density` (with ``scale=None``).
    shape : tuple
        The frame's shape (last two entries ``(H, W)``); gives ``cell_area = (H // rows) * (W // cols)``.
    gamma : float
        Motion threshold, a fraction of a cell's pixels (finite, >= 0; the paper uses 0.01).
        Listing 8 compares Listing 7's map, scaled by 1000, with a threshold in the same units;
        with exact arithmetic that is the same test as ``gamma`` = threshold / 1000.
    variant : {'pseudocode', 'listing'}
        ``>`` (pseudocode) or ``>=`` (listing).

    Returns
    -------
    (..., rows, cols) bool array on the active backend.

    Examples
    --------
    >>> import numpy as np, portcv
    >>> counts = np.array([[0, 19, 20, 21]], np.int32)        # cells of 40 x 50 = 2000 pixels
    >>> portcv.to_numpy(portcv.motion.regions(counts, shape=(40, 200), gamma=0.01))
    array([[False, False, False,  True]])
    >>> portcv.to_numpy(portcv.motion.regions(counts, shape=(40, 200), gamma=0.01, variant="listing"))
    array([[False, False,  True,  True]])
    """
    counts = _validate.image(density, "density", dtype=np.int32)
    h, w = _shape(shape)
    rows, cols = counts.shape[-2:]
    if rows > h or cols > w:
        raise ValueError(f"density has a {rows}x{cols} grid, more cells than the {h}x{w} frame has pixels")
    gamma = _validate.real(gamma, "gamma")
    if not 0 <= gamma <= 1:
        raise ValueError(f"gamma must be a fraction of a cell in [0, 1], got {gamma}")
    variant = _variant(variant)
    # Gamma is the decimal the user wrote (the shortest repr of the float: 0.01 is 1/100, not the
    # binary fraction just above it), so a count of exactly gamma * area is 'equal', as on paper.
    bound = Fraction(repr(gamma)) * cell_area(h, w, rows, cols)
    if variant == "pseudocode":
        min_count = int(bound) + 1  # count > bound, bound >= 0: floor(bound) + 1
    else:
        min_count = -(-bound.numerator // bound.denominator)  # count >= bound: ceil(bound)
    xp = backend().xp
    if min_count > 2**31 - 1:
        return xp.zeros(counts.shape, dtype=xp.bool)
    # A Python int operand (below 2^31, the dtype of counts): no host-to-device copy per call.
    return counts >= min_count


# --------------------------------------------------------------------------------------------
# Motion-area image and region outlines
# --------------------------------------------------------------------------------------------
def _image_and_regions(image: Any, regions: Any, channel_axis: Any) -> tuple[Any, Any, bool]:
    img = _validate.image(image)
    grid = _validate.image(regions, "regions", dtype=np.bool_)
    has_channels = _validate.has_channels(img, channel_axis)
    h, w = img.shape[-3:-1] if has_channels else img.shape[-2:]
    lead = tuple(img.shape[:-3] if has_channels else img.shape[:-2])
    try:
        ok = np.broadcast_shapes(lead, tuple(grid.shape[:-2])) == lead
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(
            f"regions' leading axes {tuple(grid.shape[:-2])} must broadcast to the image's {lead} "
            f"(image shape {tuple(img.shape)}, channels {'last' if has_channels else 'none'})"
        )
    rows, cols = grid.shape[-2:]
    if rows > h or cols > w:
        raise ValueError(f"regions has a {rows}x{cols} grid, more cells than the {h}x{w} image has pixels")
    return img, grid, has_channels


def area_image(image: Any, regions: Any, *, variant: str = "pseudocode", channel_axis: Any = "auto") -> Any:
    """The motion-area image: ``image`` inside the motion cells, 0 elsewhere.

    Listing 8 sets a pixel to 255 when its cell is a motion region and to 0 otherwise; pass a
    frame of 255s to get exactly that image, or the frame itself to see what moved (the paper's
    Fig. 19). With the pseudocode's inclusive cells a pixel on a shared boundary is inside if
    either cell is a region (the paper's MATLAB draws each region's inclusive box).

    Parameters
    ----------
    image : (..., H, W) or (..., H, W, C) uint8 array
        The frame (gray, or channels last).
    regions : (..., rows, cols) bool array
        Motion regions (:func:`regions`); leading axes broadcast against the image's.
    variant : {'pseudocode', 'listing'}
        Cell geometry (:func:`cell_bounds`).
    channel_axis : {'auto', None, -1}
        ``-1``: the last axis holds channels; ``None``: none; ``'auto'``: channels when
        ``ndim >= 3`` and the last axis has at most 4 entries (as in :mod:`portcv.filters`).

    Returns
    -------
    uint8 array shaped like ``image`` on the active backend.

    Examples
    --------
    >>> import numpy as np, portcv
    >>> frame = np.full((4, 6), 9, np.uint8)
    >>> cells = np.array([[False, True], [False, False]])
    >>> portcv.to_numpy(portcv.motion.area_image(frame, cells, variant="listing"))
    array([[0, 0, 0, 9, 9, 9],
           [0, 0, 0, 9, 9, 9],
           [0, 0, 0, 0, 0, 0],
           [0, 0, 0, 0, 0, 0]], dtype=uint8)
    """
    img, grid, has_channels = _image_and_regions(image, regions, channel_axis)
    return area_image_kernel(img, grid, variant=_variant(variant), has_channels=has_channels)


def draw_regions(
    image: Any,
    regions: Any,
    *,
    variant: str = "pseudocode",
    color: Any = None,
    thickness: int = 1,
    channel_axis: Any = "auto",
) -> Any:
    """Draw the outline of every motion cell over ``image`` (rectangles, ``thickness`` pixels inside the cell).

    Parameters
    ----------
    image : (..., H, W) or (..., H, W, C) uint8 array
    regions : (..., rows, cols) bool array
        Motion regions (:func:`regions`); leading axes broadcast against the image's.
    variant : {'pseudocode', 'listing'}
        Cell geometry (:func:`cell_bounds`).
    color : int or sequence of int, optional
        Outline colour, 0..255 per channel (default: 255 on gray images, red ``(255, 0, 0)`` on
        RGB, 255 in every channel otherwise).
    thickness : int
        Outline width in pixels, drawn inside each cell (1 .. 64).
    channel_axis : {'auto', None, -1}
        As for :func:`area_image`.

    Returns
    -------
    uint8 array shaped like ``image`` on the active backend.

    Examples
    --------
    >>> import numpy as np, portcv
    >>> frame = np.zeros((4, 6), np.uint8)
    >>> portcv.to_numpy(portcv.motion.draw_regions(frame, np.array([[True]]), color=7))
    array([[7, 7, 7, 7, 7, 7],
           [7, 0, 0, 0, 0, 7],
           [7, 0, 0, 0, 0, 7],
           [7, 7, 7, 7, 7, 7]], dtype=uint8)
    """
    img, grid, has_channels = _image_and_regions(image, regions, channel_axis)
    channels = img.shape[-1] if has_channels else 0
    thickness = _validate.integer(thickness, "thickness", low=1, high=64)
    if color is None:
        color = (255, 0, 0) if channels == 3 else 255
    values = np.atleast_1d(np.asarray(color))
    if values.ndim != 1 or not np.issubdtype(values.dtype, np.integer) or values.min() < 0 or values.max() > 255:
        raise ValueError(f"color must be an integer or a sequence of integers in [0, 255], got {color!r}")
    if has_channels:
        if values.size == 1:
            values = np.repeat(values, channels)
        if values.size != channels:
            raise ValueError(f"color must have {channels} values for a {channels}-channel image, got {color!r}")
        paint: Any = tuple(int(v) for v in values)
    else:
        if values.size != 1:
            raise ValueError(f"color must be one value for a gray image, got {color!r}")
        paint = int(values[0])
    return draw_regions_kernel(
        img, grid, variant=_variant(variant), has_channels=has_channels, color=paint, thickness=thickness
    )
