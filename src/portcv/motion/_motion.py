"""Motion kernels of Del Vecchio et al. (section III): the thresholded difference matrix
(Algorithm 2 / Listing 6) and the spatial difference density counts (Algorithm 3 / Listing 7).

The portable versions (NumPy reference, JAX under jit) are cumulative sums and reshapes of 0/1
maps: exact int32 arithmetic and O(1) work per pixel whatever beta is. The CuPy overrides run
``_motion_cuda.cu`` (``_motion_cuda.py``): a shared-memory tile with running window counts for the
difference, and one block-reduction per density cell.

Host-side geometry (cell rectangles, window sizes) lives here too, so the public wrappers, the
portable code and the CUDA launchers read one definition.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from .._kernel import kernel
from ..backends.jax import jit

#: Which text of the paper a function follows where its pseudocode and its CUDA listing differ.
VARIANTS = ("pseudocode", "listing")
#: Listing 6's ``crop_size``: the listing only marks pixels with crop < r < H - crop (same for c).
LISTING_CROP = 7
#: Largest beta the CUDA difference kernel takes (its shared-memory halo); larger runs portable code.
CUDA_MAX_BETA = 32


# --------------------------------------------------------------------------------------------
# Geometry (host, Python ints: static under jit)
# --------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=256)
def cell_bounds(height: int, width: int, rows: int, cols: int, variant: str) -> tuple[tuple[int, ...], ...]:
    """Half-open pixel rectangles of the density cells: ``(r0, r1, c0, c1)``, one entry per cell row/column.

    ``pseudocode`` (Algorithm 3): cell ``i`` starts at ``i * kh`` with ``kh = H // rows`` and its
    loop ``i' in [0, M/m]`` is inclusive, so it spans ``kh + 1`` rows (clipped to the image): two
    neighbouring cells share their boundary row. ``listing`` (Listings 7-8): pixel row ``r`` belongs
    to cell ``floor(rows * r / H)``, a partition of the image; cell ``i`` is
    ``[ceil(i H / rows), ceil((i + 1) H / rows))``. Columns alike.
    """

    def axis(n: int, k: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
        if variant == "pseudocode":
            step = n // k
            lo = tuple(i * step for i in range(k))
            hi = tuple(min(i * step + step + 1, n) for i in range(k))
        else:
            lo = tuple(-(-i * n // k) for i in range(k))
            hi = tuple(-(-(i + 1) * n // k) for i in range(k))
        return lo, hi

    r0, r1 = axis(height, rows)
    c0, c1 = axis(width, cols)
    return r0, r1, c0, c1


def cell_area(height: int, width: int, rows: int, cols: int) -> int:
    """The normalizer of a cell's count: ``(H // rows) * (W // cols)``.

    Algorithm 3 divides by ``MN / (mn)`` and Listing 7 by ``block_size = (W / m) * (H / n)`` in
    C integer division: the same number (for the pseudocode's overlapping cells too).
    """
    return (height // rows) * (width // cols)


@functools.lru_cache(maxsize=256)
def cell_membership(n: int, lo: tuple[int, ...], hi: tuple[int, ...]) -> tuple[np.ndarray, ...]:
    """Per pixel of one axis, the (at most two) cells containing it and its distance to their edges.

    Returns ``first, second`` (int32 cell index; ``len(lo)`` means none) and ``first_inset,
    second_inset`` (int32: pixels between it and the nearer first/last row of that cell, 0 on
    the cell's outline). Cells overlap by at most one pixel (the pseudocode's inclusive bounds),
    so two slots suffice.
    """
    k = len(lo)
    slots = [np.full(n, k, np.int32), np.full(n, k, np.int32)]
    for i in range(k):
        for r in range(lo[i], hi[i]):
            slot = 0 if slots[0][r] == k else 1
            slots[slot][r] = i
    lo_a, hi_a = np.asarray(lo + (0,)), np.asarray(hi + (0,))
    pos = np.arange(n)
    insets = [np.minimum(pos - lo_a[s], hi_a[s] - 1 - pos).astype(np.int32) for s in slots]
    for a in slots + insets:
        a.flags.writeable = False
    return slots[0], slots[1], insets[0], insets[1]


def window_extent(n: int, beta: int, lo: int) -> np.ndarray:
    """Pixels of the apron ``[i - beta, i + beta]`` inside the searched range ``[lo, n - 1]``, per ``i``."""
    i = np.arange(n)
    return (np.minimum(i + beta, n - 1) - np.maximum(i - beta, lo) + 1).astype(np.int32)


def crop_mask(n: int, crop: int) -> np.ndarray:
    """Listing 6's margin on one axis: ``crop < i < n - crop``."""
    i = np.arange(n)
    return (i > crop) & (i < n - crop)


# --------------------------------------------------------------------------------------------
# Difference matrix (Algorithm 2)
# --------------------------------------------------------------------------------------------
def _window_sum(xp: Any, x: Any, axis: int, radius: int) -> Any:
    """``out[i] = sum(x[max(i - radius, 0) : i + radius + 1])`` along ``axis`` (int32, exact).

    One cumulative sum over ``x`` with ``radius + 1`` zeros before and ``radius`` after, then the
    difference of two static slices: O(1) per element for any radius.
    """
    axis = axis % x.ndim
    n = x.shape[axis]
    r = min(radius, n - 1)  # a wider apron covers the same pixels
    if r == 0:
        return x

    def zeros(length: int) -> Any:
        shape = list(x.shape)
        shape[axis] = length
        return xp.zeros(tuple(shape), dtype=x.dtype)

    def part(c: Any, start: int) -> Any:
        index = [slice(None)] * x.ndim
        index[axis] = slice(start, start + n)
        return c[tuple(index)]

    padded = xp.concat([zeros(r + 1), x, zeros(r)], axis=axis)
    c = xp.cumulative_sum(padded, axis=axis, dtype=xp.int32)
    return part(c, 2 * r + 1) - part(c, 0)


@kernel("motion_difference")
def difference_kernel(xp: Any, e1: Any, e2: Any, *, beta: int, variant: str) -> Any:
    """Portable thresholded difference matrix D (uint8 0/255) of two (..., H, W) edge maps.

    ``D[p] = 255`` iff ``E1[p] != E2[p]`` and no pixel ``q`` of the apron ``|q - p| <= beta``
    (per axis, inside the searched range) has ``E1[q] == E2[p]``; maps are binarized as ``!= 0``.
    With ``n1`` the number of E1 edge pixels in the apron and ``size`` the apron's pixel count,
    "no q with E1[q] == E2[p]" is ``n1 == 0`` when E2[p] is an edge and ``n1 == size`` when not.
    """
    h, w = e1.shape[-2:]
    listing = variant == "listing"
    lo = 1 if listing else 0  # Listing 6 searches c + x > 0 and r + y > 0: row 0 and column 0 never match
    b1, b2 = e1 != 0, e2 != 0
    ones = xp.astype(b1, xp.int32)
    if listing:  # 1-D masks broadcast (no H x W constant under jit)
        searched_rows = (np.arange(h) >= lo).astype(np.int32).reshape(h, 1)
        searched_cols = (np.arange(w) >= lo).astype(np.int32).reshape(1, w)
        ones = ones * xp.asarray(searched_rows) * xp.asarray(searched_cols)
    # n1 <= H * W < 2**31: the window sums fit int32 (the vertical pass sums <= H row sums <= W each).
    n1 = _window_sum(xp, _window_sum(xp, ones, -1, beta), -2, beta)
    rows = xp.asarray(window_extent(h, beta, lo))
    cols = xp.asarray(window_extent(w, beta, lo))
    size = xp.reshape(rows, (h, 1)) * xp.reshape(cols, (1, w))
    keep = (b1 != b2) & xp.where(b2, n1 == 0, n1 == size)
    if listing:
        keep = keep & xp.asarray(crop_mask(h, LISTING_CROP).reshape(h, 1)) & xp.asarray(crop_mask(w, LISTING_CROP).reshape(1, w))
    return xp.astype(keep, xp.uint8) * 255


@difference_kernel.override("jax")
def _difference_jax(e1: Any, e2: Any, *, beta: int, variant: str) -> Any:
    return _difference_jax_compiled(beta, variant)(e1, e2)


@functools.lru_cache(maxsize=64)
def _difference_jax_compiled(beta: int, variant: str) -> Any:
    """JAX: the apron test as two binary dilations instead of window counts.

    ``n1 == 0`` is "no searched E1 edge within beta" and ``n1 == size`` is "no searched E1
    non-edge within beta": both are box ORs (``portcv._morphology.box_or``, separable, False outside the
    image) of a 0/1 map, run together on two bits of one uint8 map. XLA fuses each pass's
    shifted ORs into one kernel; the portable version's two cumulative sums of int32 maps are
    reduce-window scans on a GPU (4x the memory traffic, and slower per byte). Same bits.
    Optimization barriers keep the two passes and the result in memory: left to itself, XLA
    fused the vertical pass (and the 0/255 map) into the density's reduction, which then
    recomputed every tap per cell row, half of the motion pipeline's time at 4K; with the
    barriers 1080p and 4K are faster, 640x480 a little slower (docs/benchmarks.md).
    """
    import jax.numpy as jnp
    from jax import lax

    from .._morphology import box_or

    def run(e1: Any, e2: Any) -> Any:
        h, w = e1.shape[-2:]
        listing = variant == "listing"
        b1, b2 = e1 != 0, e2 != 0
        bits = jnp.where(b1, jnp.uint8(1), jnp.uint8(2))  # bit 0: an E1 edge, bit 1: an E1 non-edge
        if listing:  # Listing 6 never searches row 0 or column 0
            searched = (np.arange(h) >= 1).reshape(h, 1) & (np.arange(w) >= 1).reshape(1, w)
            bits = jnp.where(jnp.asarray(searched), bits, jnp.uint8(0))
        r = min(beta, max(h, w) - 1)  # a wider apron covers the same pixels
        near = lax.optimization_barrier(box_or(jnp, bits, 0, min(r, w - 1)))
        near = box_or(jnp, near, min(r, h - 1), 0)
        keep = (b1 != b2) & jnp.where(b2, (near & 1) == 0, (near & 2) == 0)
        if listing:
            keep = keep & jnp.asarray(crop_mask(h, LISTING_CROP).reshape(h, 1)) & jnp.asarray(
                crop_mask(w, LISTING_CROP).reshape(1, w))
        return lax.optimization_barrier(jnp.where(keep, jnp.uint8(255), jnp.uint8(0)))

    return jit(run)



# --------------------------------------------------------------------------------------------
# Density counts (Algorithm 3)
# --------------------------------------------------------------------------------------------
def _lattice_counts(xp: Any, b: Any, rows: int, cols: int, inclusive: bool) -> Any:
    """Counts over cells ``[i kh, i kh + kh (+1)) x [j kw, j kw + kw (+1))`` by reshapes and strided slices."""
    h, w = b.shape[-2:]
    lead = tuple(b.shape[:-2])
    kh, kw = h // rows, w // cols
    ext = 1 if inclusive else 0
    hn, wn = rows * kh + ext, cols * kw + ext
    b = b[..., : min(h, hn), : min(w, wn)]
    if b.shape[-2] < hn:  # the last cell's inclusive row would be row H: nothing there
        b = xp.concat([b, xp.zeros(lead + (1, b.shape[-1]), dtype=b.dtype)], axis=-2)
    if b.shape[-1] < wn:
        b = xp.concat([b, xp.zeros(lead + (hn, 1), dtype=b.dtype)], axis=-1)

    def cell_sum(x: Any, cell_rows: int, cell_cols: int) -> Any:
        x = xp.reshape(x, lead + (rows, cell_rows, cols, cell_cols))
        return xp.sum(xp.sum(x, axis=-1, dtype=xp.int32), axis=-2, dtype=xp.int32)

    counts = cell_sum(b[..., : rows * kh, : cols * kw], kh, kw)
    if inclusive:  # the shared boundary row (i + 1) kh, column (j + 1) kw and their corner
        counts = counts + cell_sum(b[..., kh::kh, : cols * kw], 1, kw)
        counts = counts + cell_sum(b[..., : rows * kh, kw::kw], kh, 1)
        counts = counts + b[..., kh::kh, kw::kw]
    return counts


def _rectangle_counts(xp: Any, b: Any, bounds: tuple) -> Any:
    """Counts over arbitrary half-open rectangles from a summed-area table (int32: sums <= H*W)."""
    r0, r1, c0, c1 = bounds
    lead = tuple(b.shape[:-2])
    h, w = b.shape[-2:]
    b = xp.concat([xp.zeros(lead + (1, w), dtype=b.dtype), b], axis=-2)
    b = xp.concat([xp.zeros(lead + (h + 1, 1), dtype=b.dtype), b], axis=-1)
    s = xp.cumulative_sum(xp.cumulative_sum(b, axis=-2, dtype=xp.int32), axis=-1, dtype=xp.int32)

    def take(x: Any, index: tuple, axis: int) -> Any:
        return xp.take(x, xp.asarray(np.asarray(index, np.int32)), axis=axis)

    band = take(s, r1, -2) - take(s, r0, -2)
    return take(band, c1, -1) - take(band, c0, -1)


@kernel("motion_density")
def density_kernel(xp: Any, d: Any, *, grid: tuple[int, int], variant: str) -> Any:
    """Portable per-cell counts of the non-zero pixels of ``d`` (..., H, W) -> (..., rows, cols) int32."""
    h, w = d.shape[-2:]
    rows, cols = grid
    b = xp.astype(d != 0, xp.int32)
    if variant == "pseudocode":
        return _lattice_counts(xp, b, rows, cols, inclusive=True)
    if h % rows == 0 and w % cols == 0:  # Listing 7's cells are then a regular lattice
        return _lattice_counts(xp, b, rows, cols, inclusive=False)
    return _rectangle_counts(xp, b, cell_bounds(h, w, rows, cols, variant))



# --------------------------------------------------------------------------------------------
# Motion-area image and region outlines (gathers; portable on every backend)
# --------------------------------------------------------------------------------------------
def _cell_mask(xp: Any, regions: Any, height: int, width: int, variant: str, thickness: int) -> Any:
    """(..., H, W) bool: the pixel lies in a motion cell (``thickness`` 0) or on its outline.

    A pixel belongs to at most two cells per axis, so the mask is the OR of up to four gathers
    of the (False-padded) region grid; an outline pixel is within ``thickness`` of its cell's
    first/last row or column.
    """
    rows, cols = regions.shape[-2:]
    lead = tuple(regions.shape[:-2])
    r0, r1, c0, c1 = cell_bounds(height, width, rows, cols, variant)
    row_slots = cell_membership(height, r0, r1)
    col_slots = cell_membership(width, c0, c1)
    padded = xp.concat([regions, xp.zeros(lead + (1, cols), dtype=xp.bool)], axis=-2)
    padded = xp.concat([padded, xp.zeros(lead + (rows + 1, 1), dtype=xp.bool)], axis=-1)
    mask = None
    for row_cell, row_inset in ((row_slots[0], row_slots[2]), (row_slots[1], row_slots[3])):
        if np.all(row_cell == rows):  # no pixel has a second cell (Listing 8's partition)
            continue
        band = xp.take(padded, xp.asarray(row_cell), axis=-2)
        for col_cell, col_inset in ((col_slots[0], col_slots[2]), (col_slots[1], col_slots[3])):
            if np.all(col_cell == cols):
                continue
            m = xp.take(band, xp.asarray(col_cell), axis=-1)
            if thickness > 0:
                m = m & (xp.asarray(row_inset[:, None] < thickness) | xp.asarray(col_inset[None, :] < thickness))
            mask = m if mask is None else mask | m
    return mask


@kernel("motion_area_image")
def area_image_kernel(xp: Any, image: Any, regions: Any, *, variant: str, has_channels: bool) -> Any:
    """``image`` where its pixel lies in a motion cell, 0 elsewhere (Listing 8 with the frame as 255)."""
    h, w = image.shape[-3:-1] if has_channels else image.shape[-2:]
    mask = _cell_mask(xp, regions, h, w, variant, 0)
    if has_channels:
        mask = mask[..., None]
    return xp.where(mask, image, xp.zeros((), dtype=image.dtype))



@kernel("motion_draw_regions")
def draw_regions_kernel(
    xp: Any, image: Any, regions: Any, *, variant: str, has_channels: bool, color: tuple, thickness: int
) -> Any:
    """``image`` with the outline (``thickness`` pixels inside each cell) of every motion cell set to ``color``."""
    h, w = image.shape[-3:-1] if has_channels else image.shape[-2:]
    mask = _cell_mask(xp, regions, h, w, variant, thickness)
    paint = xp.asarray(np.asarray(color, dtype=np.uint8))
    if has_channels:
        mask = mask[..., None]
    return xp.where(mask, paint, image)


