"""Edge kernels: Del Vecchio et al.'s NMS + selective thresholding, Canny's NMS and hysteresis.

The paper (Del Vecchio et al., section II-D, Algorithm 1; CUDA Listings 3-4) classifies a pixel by the sector
of its gradient angle, keeps it if its magnitude beats both neighbours along that sector and
exceeds t_h, and then marks every pixel of its (2 alpha + 1)^2 apron whose magnitude exceeds t_l.
Here everything is exact integer arithmetic:

* the magnitude is never rooted: ``G > t`` is ``gx^2 + gy^2 > floor(t^2)`` and
  ``G_a > G_b`` is ``m_a > m_b`` with ``m = gx^2 + gy^2`` (sqrt is strictly increasing);
* the sector is an integer predicate on ``(gx, gy)`` (``tan^2(pi/6) = 1/3``, ``tan^2(pi/3) = 3``):
  no atan2 (:func:`sectors`);
* the apron is a *gather*: an output pixel is an edge when its own magnitude exceeds t_l and an
  accepted pixel lies within alpha of it in both axes -- the binary dilation of the accepted
  map by a (2 alpha + 1)^2 box, a separable OR (``portcv._morphology.box_or``). The paper's listing scatters
  255 into the apron from many threads while other threads reset their own pixel to 0 (a race);
  the gather has no race and gives the pseudocode's result.

Canny (``canny_candidates_kernel``, ``hysteresis_kernel``) follows OpenCV's ``cv::Canny`` step by
step (integer tangent tests with ``TG22 = 13573`` in Q15, asymmetric ``>``/``>=`` comparisons),
so the result equals ``cv2.Canny`` bit for bit; its hysteresis is a fixed point of 3x3
dilations restricted to the candidates (8-connectivity), whatever order reaches it: the union of
the candidates' 8-connected components that hold a strong pixel (on NumPy and JAX-CPU, whose
host callback runs the NumPy override: a flood from the strong pixels compiled with Numba,
``_edges_numba.py``, or without numba SciPy's connected components; on CuPy: a union-find in CUDA).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from .._border import pad_axis
from .._derivatives import gradients_kernel
from .._kernel import kernel
from .._morphology import box_or
from .._separable_pass import separable_filter_kernel
from ..backends import backend
from ..backends.jax import jit

#: Sector codes of :func:`sectors`: the gradient direction, as the paper's four sectors.
SECTOR_HORIZONTAL, SECTOR_DIAGONAL_45, SECTOR_VERTICAL, SECTOR_DIAGONAL_135, SECTOR_NONE = 0, 1, 2, 3, 4
VARIANTS = ("pseudocode", "listing")
#: Largest apron radius (alpha); the CUDA tile's shared memory is sized for it.
MAX_ALPHA = 16
#: The low-pass's rounding: Q8 x Q8 taps, (sum + 2^15) >> 16, as cv2.GaussianBlur for uint8.
LOW_PASS_FINISH = ("shift", 16, 0, "uint8")
#: Longest low-pass the CUDA detector fuses into its own launch (longer: a separate launch).
FUSED_BLUR_TAPS = 7
#: OpenCV's tan(22.5 deg) in Q15: (int)(0.4142135623730950488 * 2^15 + 0.5).
CANNY_TG22 = 13573
#: Dilation steps between two convergence checks of the portable hysteresis loop.
HYSTERESIS_STEPS = 8


# --------------------------------------------------------------------------------------------
# Shared portable pieces
# --------------------------------------------------------------------------------------------
def sectors(xp: Any, gx: Any, gy: Any, gx2: Any, gy2: Any, variant: str) -> Any:
    """Sector code (uint8) of each gradient, by exact integer predicates (no atan2).

    ``gx2 = gx^2``, ``gy2 = gy^2`` in a dtype where ``3 * gx2`` cannot overflow. With
    ``theta = atan2(gy, gx)``:

    * horizontal (0): ``|theta| < pi/6`` or ``|theta| > 5 pi/6``  <=>  ``3 gy^2 < gx^2``;
    * vertical (2): ``pi/3 < |theta| < 2 pi/3``  <=>  ``3 gx^2 < gy^2``;
    * diagonals: ``gx^2 < 3 gy^2`` and ``gy^2 < 3 gx^2`` (both nonzero there), 45 deg (1) when
      gx and gy have the same sign (``pi/6 < theta < pi/3`` or ``-5pi/6 < theta < -2pi/3``),
      135 deg (3) otherwise.

    ``3 b^2 = a^2`` has no integer solution but ``a = b = 0`` (sqrt(3) is irrational), so no
    nonzero gradient lies on a sector boundary; ``(0, 0)`` (angle undefined) is
    ``SECTOR_NONE``. ``variant='listing'``: the listing's ``5 pi/6 < theta < M_PI`` excludes
    ``theta = pi`` exactly (``gy == 0 and gx < 0``, atan2 = M_PI), which becomes ``SECTOR_NONE``.
    """
    horizontal = 3 * gy2 < gx2
    if variant == "listing":
        horizontal = horizontal & ~((gy == 0) & (gx < 0))
    vertical = 3 * gx2 < gy2
    diagonal = (gx2 < 3 * gy2) & (gy2 < 3 * gx2)
    same_sign = (gx > 0) == (gy > 0)
    u8 = xp.uint8

    def code(c: int) -> Any:
        return xp.asarray(c, dtype=u8)

    return xp.where(
        horizontal,
        code(SECTOR_HORIZONTAL),
        xp.where(
            vertical,
            code(SECTOR_VERTICAL),
            xp.where(
                diagonal,
                xp.where(same_sign, code(SECTOR_DIAGONAL_45), code(SECTOR_DIAGONAL_135)),
                code(SECTOR_NONE),
            ),
        ),
    )


def _neighbours(xp: Any, m: Any) -> dict[str, Any]:
    """The 8 neighbours of every pixel of ``m`` (last two axes), 0 outside the image."""
    padded = pad_axis(xp, pad_axis(xp, m, -1, 1, 1, "constant", 0), -2, 1, 1, "constant", 0)
    h, w = m.shape[-2], m.shape[-1]

    def at(dy: int, dx: int) -> Any:
        return padded[..., 1 + dy : 1 + dy + h, 1 + dx : 1 + dx + w]

    return {
        "left": at(0, -1), "right": at(0, 1), "up": at(-1, 0), "down": at(1, 0),
        "up_left": at(-1, -1), "up_right": at(-1, 1), "down_left": at(1, -1), "down_right": at(1, 1),
    }



def _index_range_mask(xp: Any, n: int, low: int, high: int) -> Any:
    """Boolean vector: ``low <= i <= high`` for ``i`` in ``range(n)``."""
    i = xp.arange(n, dtype=xp.int32)
    return (i >= low) & (i <= high)


def centre_region(variant: str, h: int, w: int, alpha: int) -> tuple[int, int, int, int]:
    """Inclusive (row_low, row_high, col_low, col_high) of the pixels Algorithm 1 may accept.

    Pseudocode: ``i in [alpha + 1, M - alpha - 2]``, ``j in [alpha + 1, N - alpha - 2]`` (the
    apron never leaves ``[1, M - 2] x [1, N - 2]``). Listing 4: ``r > 1 && r < height - 1``,
    ``c > 1 && c < width - 1`` whatever alpha.
    """
    if variant == "listing":
        return 2, h - 2, 2, w - 2
    return alpha + 1, h - alpha - 2, alpha + 1, w - alpha - 2


# --------------------------------------------------------------------------------------------
# The paper's detector: Sobel -> m = gx^2 + gy^2 -> sector -> local max -> apron gather
# --------------------------------------------------------------------------------------------
@kernel("edges_detect")
def detect_kernel(xp: Any, image: Any, *, blur_taps: tuple, low_sq: int, high_sq: int, alpha: int, variant: str,
                  border: str) -> Any:
    """Portable Algorithm 1 on a uint8 image ``(..., H, W)``: uint8 {0, 255}.

    ``blur_taps``: the low-pass's Q8 taps (sum 256, applied along both axes and rounded once,
    as ``cv2.GaussianBlur``), or ``()`` when ``image`` is already low-passed.
    ``low_sq = floor(t_l^2)``, ``high_sq = floor(t_h^2)``: ``G > t <=> gx^2 + gy^2 > floor(t^2)``.
    """
    blurred = image
    if blur_taps:
        blurred = separable_filter_kernel.portable(xp, image, kx=blur_taps, ky=blur_taps, has_channels=False,
                                                   border=border, border_value=0, finish=LOW_PASS_FINISH)
    gx, gy = gradients_kernel.portable(xp, blurred, ksize=3, has_channels=False, border=border)
    gx = xp.astype(gx, xp.int32)
    gy = xp.astype(gy, xp.int32)
    gx2, gy2 = gx * gx, gy * gy
    m = gx2 + gy2  # 3x3 Sobel of uint8: |g| <= 4 * 255 = 1020, so m <= 2 * 1020^2 < 2^21
    sector = sectors(xp, gx, gy, gx2, gy2, variant)  # 3 * 1020^2 fits int32
    n = _neighbours(xp, m)
    is_max = xp.where(
        sector == SECTOR_HORIZONTAL,
        (m > n["left"]) & (m > n["right"]),
        xp.where(
            sector == SECTOR_DIAGONAL_45,  # G_{i+1,j+1} and G_{i-1,j-1}
            (m > n["down_right"]) & (m > n["up_left"]),
            xp.where(
                sector == SECTOR_VERTICAL,
                (m > n["up"]) & (m > n["down"]),
                # 135 deg: G_{i+1,j-1} and G_{i-1,j+1}; SECTOR_NONE is never a maximum
                (sector == SECTOR_DIAGONAL_135) & (m > n["down_left"]) & (m > n["up_right"]),
            ),
        ),
    )
    h, w = m.shape[-2], m.shape[-1]
    r0, r1, c0, c1 = centre_region(variant, h, w, alpha)
    region = _index_range_mask(xp, h, r0, r1)[:, None] & _index_range_mask(xp, w, c0, c1)[None, :]
    accepted = (m > high_sq) & is_max & region
    edge = (m > low_sq) & box_or(xp, accepted, alpha, alpha)
    if variant == "listing":
        # Listing 4 writes the apron only where r + m > 0 and c + n > 0 (row and column 0 stay
        # 0) and sets the accepted pixel itself to 255 whatever t_l.
        target = _index_range_mask(xp, h, 1, h - 1)[:, None] & _index_range_mask(xp, w, 1, w - 1)[None, :]
        edge = (edge & target) | accepted
    return xp.where(edge, xp.asarray(255, dtype=xp.uint8), xp.asarray(0, dtype=xp.uint8))


#: Pixels per row band of the NumPy detector (about 40 bytes of int32/bool temporaries a pixel:
#: a band of 2**17 pixels and its halo stay in the shared L3 cache instead of streaming 2-D
#: temporaries of the whole frame through memory).
DETECT_BAND_PIXELS = 1 << 17


def detect_halo_rows(blur_taps: tuple, alpha: int, variant: str) -> int:
    """Rows a band of the detector needs beyond its own on each side for the whole frame's bits.

    Output row r reads ``accepted`` at rows r - alpha .. r + alpha (the apron); ``accepted`` at q
    reads ``m`` at q - 1 .. q + 1 (the local maximum), which reads the low-pass and Sobel, radius
    ``len(blur_taps) // 2 + 1``: ``alpha + 2 + blur radius`` rows. A band's own top and bottom
    ``margin`` rows are never accepted (``centre_region``: alpha + 1 rows for the pseudocode, 2
    for the listing), so the apron must not reach them either: ``margin + alpha`` rows.
    """
    margin = alpha + 1 if variant == "pseudocode" else 2
    return max(alpha + 2 + len(blur_taps) // 2, margin + alpha)


@detect_kernel.override("numpy", supports="every input")
def _detect_numpy(image: Any, *, blur_taps: tuple, low_sq: int, high_sq: int, alpha: int, variant: str,
                  border: str) -> Any:
    # The portable detector on row bands grown by detect_halo_rows (real rows of the frame, or the
    # frame's own border where a band touches it), each band's core copied out: the same bits as
    # one call on the whole frame (the tile engine's halo argument, inside one process), with
    # cache-sized temporaries, spread over the host threads.
    from ..backends.numpy import row_bands, run_bands

    img = np.asarray(image)
    h, w = img.shape[-2], img.shape[-1]
    halo = detect_halo_rows(blur_taps, alpha, variant)
    core = max(4 * halo, DETECT_BAND_PIXELS // max(w, 1))
    if h <= core + 2 * halo:
        return detect_kernel.portable(np, img, blur_taps=blur_taps, low_sq=low_sq, high_sq=high_sq, alpha=alpha,
                                      variant=variant, border=border)
    planes = img.reshape((-1, h, w))
    out = np.empty(img.shape, np.uint8)
    flat = out.reshape((-1, h, w))

    def band(item: tuple[int, int, int]) -> None:
        p, r0, r1 = item
        a, b = max(0, r0 - halo), min(h, r1 + halo)
        result = detect_kernel.portable(np, planes[p, a:b], blur_taps=blur_taps, low_sq=low_sq, high_sq=high_sq,
                                        alpha=alpha, variant=variant, border=border)
        flat[p, r0:r1] = result[r0 - a:r1 - a]

    run_bands(band, row_bands(h, w, planes=planes.shape[0], target=core * w))
    return out



# --------------------------------------------------------------------------------------------
# Magnitude: |gx| + |gy| or the exact integer square root of gx^2 + gy^2
# --------------------------------------------------------------------------------------------
def isqrt_u32(xp: Any, n: Any) -> Any:
    """``floor(sqrt(n))`` of a uint32 array, digit by digit (16 steps, integers only, exact)."""
    rem = n
    res = xp.zeros_like(n)
    bit = 1 << 30  # the largest power of 4 below 2^32
    for _ in range(16):
        trial = res + bit  # res < 2^16 and bit <= 2^30: no overflow
        take = rem >= trial
        rem = xp.where(take, rem - trial, rem)
        res = xp.where(take, (res >> 1) + bit, res >> 1)
        bit >>= 2
    return res


@kernel("edges_magnitude")
def magnitude_kernel(xp: Any, gx: Any, gy: Any, *, kind: str) -> Any:
    """int32 ``|gx| + |gy|`` (``kind='l1'``) or ``isqrt(gx^2 + gy^2)`` (``'l2'``) of int16 inputs."""
    gx = xp.astype(gx, xp.int32)
    gy = xp.astype(gy, xp.int32)
    if kind == "l1":
        return xp.abs(gx) + xp.abs(gy)  # <= 2 * 32768
    # Each square <= 2^30 fits int32; their sum <= 2^31 fits uint32.
    n = xp.astype(gx * gx, xp.uint32) + xp.astype(gy * gy, xp.uint32)
    return xp.astype(isqrt_u32(xp, n), xp.int32)  # <= 46341



@kernel("edges_direction_sector")
def direction_sector_kernel(xp: Any, gx: Any, gy: Any, *, variant: str) -> Any:
    """Sector codes of int16 gradients (:func:`sectors`); squares in uint32 (3 * 2^30 < 2^32)."""
    gx = xp.astype(gx, xp.int32)
    gy = xp.astype(gy, xp.int32)
    gx2 = xp.astype(gx * gx, xp.uint32)
    gy2 = xp.astype(gy * gy, xp.uint32)
    return sectors(xp, gx, gy, gx2, gy2, variant)


# --------------------------------------------------------------------------------------------
# Canny, as cv::Canny: candidates (NMS + double threshold), then hysteresis
# --------------------------------------------------------------------------------------------
CANDIDATE_NONE, CANDIDATE_WEAK, CANDIDATE_STRONG = 0, 1, 2


@kernel("canny_candidates")
def canny_candidates_kernel(xp: Any, gx: Any, gy: Any, *, low: int, high: int, l2: bool) -> Any:
    """OpenCV's Canny NMS: uint8 0 (no edge), 1 (weak candidate), 2 (strong), per pixel.

    ``m = |gx| + |gy|`` or ``gx^2 + gy^2`` (int32, 0 outside the image); a pixel with
    ``m > low`` is a candidate when it is a maximum along its direction, found with OpenCV's
    Q15 tangent tests: ``y = |gy| << 15``, ``tg22x = |gx| * 13573``; ``y < tg22x``: horizontal,
    ``m > m[x-1] and m >= m[x+1]``; ``y > tg22x + (|gx| << 16)``: vertical, ``m > m[y-1] and
    m >= m[y+1]``; else diagonal with ``s = -1 if gx ^ gy < 0 else 1``, ``m > m[y-1, x-s] and
    m > m[y+1, x+s]``. Strong: ``m > high``. |g| <= 24480 for ksize <= 7 (Q15 products fit int32).
    """
    gx = xp.astype(gx, xp.int32)
    gy = xp.astype(gy, xp.int32)
    ax, ay = xp.abs(gx), xp.abs(gy)
    m = gx * gx + gy * gy if l2 else ax + ay
    n = _neighbours(xp, m)
    y = ay * (1 << 15)
    tg22x = ax * CANNY_TG22
    horizontal = y < tg22x
    vertical = y > tg22x + ax * (1 << 16)
    positive = (gx ^ gy) >= 0
    is_max = xp.where(
        horizontal,
        (m > n["left"]) & (m >= n["right"]),
        xp.where(
            vertical,
            (m > n["up"]) & (m >= n["down"]),
            xp.where(positive, (m > n["up_left"]) & (m > n["down_right"]), (m > n["up_right"]) & (m > n["down_left"])),
        ),
    )
    candidate = (m > low) & is_max
    u8 = xp.uint8
    return xp.where(
        candidate,
        xp.where(m > high, xp.asarray(CANDIDATE_STRONG, dtype=u8), xp.asarray(CANDIDATE_WEAK, dtype=u8)),
        xp.asarray(CANDIDATE_NONE, dtype=u8),
    )


@canny_candidates_kernel.override("numpy")
def _canny_candidates_numpy(gx: Any, gy: Any, *, low: int, high: int, l2: bool) -> Any:
    from ..backends.numpy import compiled, row_bands, run_bands

    xp = backend().xp
    shape = gx.shape
    h, w = shape[-2], shape[-1]
    if gx.size == 0:
        return canny_candidates_kernel.portable(xp, gx, gy, low=low, high=high, l2=l2)
    planes = gx.size // (h * w)
    i32 = np.iinfo(np.int32)
    if compiled() and gx.dtype == gy.dtype == np.int16 and low >= i32.min and high >= i32.min:
        from ..backends.numpy import scratch
        from ._edges_numba import canny_candidate_rows

        # The portable int32 arithmetic row by row over three magnitude rows (_edges_numba.py),
        # in bands of rows on the threads. m > t for t above int32's maximum is false, as
        # m > int32's maximum (below int32's minimum: the vectorized path).
        low, high = min(low, i32.max), min(high, i32.max)
        x, y = (np.ascontiguousarray(g).reshape(-1) for g in (gx, gy))
        states = np.empty(planes * h * w, np.uint8)

        def rows(item: tuple[int, int, int]) -> None:
            canny_candidate_rows(x, y, states, h, w, item[0], item[1], item[2], low, high, l2, CANNY_TG22,
                                 scratch("canny_magnitude", (3 * (w + 2),), np.int32))

        run_bands(rows, row_bands(h, w, planes=planes, target=1 << 19))  # 4 bands per 1080p frame
        return states.reshape(shape)
    gx, gy = np.reshape(gx, (planes, h, w)), np.reshape(gy, (planes, h, w))
    out = np.empty((planes, h, w), np.uint8)

    def band(item: tuple[int, int, int]) -> None:
        # The portable version's int32 arithmetic on a band of rows (a pixel depends only on its
        # 3x3 neighbourhood, so the band reads one row above and below it), with its temporaries
        # in the core's cache. The magnitude is computed everywhere (it is every pixel's
        # neighbour); the direction tests only where m > low (a few percent of a frame: 2.5 % of
        # a 1080p scene at low = 50), on gathered values, since no other pixel can be a
        # candidate. The nested selections become boolean and/or: the three direction classes
        # exclude one another.
        p, r0, r1 = item
        rows = r1 - r0
        top, bottom = max(r0 - 1, 0), min(r1 + 1, h)
        x, y = gx[p, top:bottom], gy[p, top:bottom]
        # image rows r0 - 1 .. r1, 0 outside the image. L1: |gx| + |gy| <= 2 * 24480 fits uint16
        # (and m > t for t above that is false either way); L2 needs int32.
        mag = np.zeros((rows + 2, w + 2), np.int32 if l2 else np.uint16)
        inside = mag[top - r0 + 1: bottom - r0 + 1, 1:-1]
        if l2:
            x, y = x.astype(np.int32), y.astype(np.int32)
            np.add(x * x, y * y, out=inside)
        else:
            np.add(np.abs(x).view(np.uint16), np.abs(y).view(np.uint16), out=inside)
        limit = np.iinfo(mag.dtype).max
        target = out[p, r0:r1]
        target[...] = CANDIDATE_NONE
        above = np.flatnonzero(mag[1:-1, 1:-1] > min(low, limit))
        if above.size == 0:
            return
        r, c = np.divmod(above, w)
        stride = w + 2
        at = (r + 1) * stride + (c + 1)  # in the flat magnitude
        flat = mag.reshape(-1)
        x, y = gx[p, r + r0, c].astype(np.int32), gy[p, r + r0, c].astype(np.int32)
        ax = np.abs(x)
        q = np.abs(y) * (1 << 15)
        horizontal = q < ax * CANNY_TG22
        # ax * (TG22 + 2**16) is the portable's tg22x + ax * 2**16, modulo 2**32 alike.
        vertical = q > ax * (CANNY_TG22 + (1 << 16))
        positive = (x ^ y) >= 0
        m = flat[at]
        is_max = horizontal & (m > flat[at - 1]) & (m >= flat[at + 1])
        is_max |= vertical & (m > flat[at - stride]) & (m >= flat[at + stride])
        diagonal = (positive & (m > flat[at - stride - 1]) & (m > flat[at + stride + 1])) | (
            ~positive & (m > flat[at - stride + 1]) & (m > flat[at + stride - 1]))
        is_max |= ~(horizontal | vertical) & diagonal
        # CANDIDATE_WEAK = 1 for a candidate, + 1 (CANDIDATE_STRONG) above `high`.
        target.reshape(-1)[above] = is_max.astype(np.uint8) + (is_max & (m > min(high, limit)))

    run_bands(band, row_bands(h, w, planes=planes, target=1 << 17))  # faster than 1 << 14 (docs/benchmarks.md)
    return out.reshape(shape)



def _hysteresis_steps(xp: Any, edge: Any, weak: Any, steps: int) -> Any:
    for _ in range(steps):
        edge = weak & box_or(xp, edge, 1, 1)
    return edge


def _edge_image(xp: Any, edge: Any) -> Any:
    return xp.where(edge, xp.asarray(255, dtype=xp.uint8), xp.asarray(0, dtype=xp.uint8))


@kernel("canny_hysteresis")
def hysteresis_kernel(xp: Any, state: Any) -> Any:
    """Edges = candidates 8-connected to a strong candidate: uint8 {0, 255}.

    ``edge <- candidate & dilate3x3(edge)`` from the strong pixels until nothing changes (the
    fixed point is unique: the union of the candidate components that hold a strong pixel). The
    loop's condition is read on the host every ``HYSTERESIS_STEPS`` steps, so this version runs
    eagerly. The overrides compute the components directly: a compiled flood from the strong
    pixels or SciPy's labelling (NumPy, and JAX on the CPU through a host callback), a CUDA
    union-find (CuPy); JAX on a GPU runs the dilations in ``lax.while_loop``.
    """
    weak = state != CANDIDATE_NONE
    edge = state == CANDIDATE_STRONG
    while True:
        new = _hysteresis_steps(xp, edge, weak, HYSTERESIS_STEPS)
        if not bool(xp.any(new != edge)):
            return _edge_image(xp, new)
        edge = new


@functools.lru_cache(maxsize=None)
def _hysteresis_jax_compiled(steps: int) -> Any:
    import jax.numpy as jnp
    from jax import lax

    def run(state: Any) -> Any:
        weak = state != CANDIDATE_NONE
        edge = state == CANDIDATE_STRONG

        def body(carry: Any) -> Any:
            edge, _ = carry
            new = _hysteresis_steps(jnp, edge, weak, steps)
            return new, jnp.any(new != edge)

        edge, _ = lax.while_loop(lambda carry: carry[1], body, (edge, jnp.asarray(True)))
        return _edge_image(jnp, edge)

    return jit(run)


@hysteresis_kernel.override("jax", supports="every input (on the CPU: SciPy's labelling through a host callback)")
def _hysteresis_jax(state: Any) -> Any:
    from ..backends import backend

    if backend().runs_on_host:
        # XLA:CPU has no connected-component primitive: its dilation loop is slow (one step per
        # iteration; long chains need one per pixel; docs/benchmarks.md). On the CPU the
        # array is already in host memory, so SciPy's labelling (below) runs on it directly,
        # inside jit too, and gives the same bits.
        from ..backends.jax import host_call

        return host_call(hysteresis_kernel, state, same_shape_as="uint8")
    # XLA:GPU reads a while loop's condition on the host: several steps per check amortize it.
    return _hysteresis_jax_compiled(HYSTERESIS_STEPS)(state)


#: Rows of a frame below which the NumPy hysteresis labels it in one piece.
HYSTERESIS_MIN_BAND_ROWS = 64
_EIGHT_CONNECTED = np.ones((3, 3), bool)


@hysteresis_kernel.override("numpy", supports="every input (with numba: a flood from the strong pixels; "
                                               "else SciPy's connected-component labelling)")
def _hysteresis_numpy(state: Any) -> Any:
    from ..backends.numpy import compiled, host_threads, row_bands, run_bands

    state = np.asarray(state)
    if state.size == 0:
        return np.zeros(state.shape, np.uint8)
    h, w = state.shape[-2], state.shape[-1]
    if compiled() and state.dtype == np.uint8:
        from ..backends.numpy import scratch
        from ._edges_numba import hysteresis_frame

        # Per frame (frames spread over the threads), a flood from its strong pixels over their
        # weak 8-neighbours with an explicit stack, O(pixels): the same union of components.
        flat = np.ascontiguousarray(state).reshape(-1, h * w)
        edges = np.zeros(flat.shape, np.uint8)
        run_bands(lambda f: hysteresis_frame(flat[f], edges[f], h, w, CANDIDATE_STRONG,
                                             scratch("canny_stack", (2 * h * w,), np.int64)),
                  list(range(flat.shape[0])))
        return edges.reshape(state.shape)
    from scipy import ndimage
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    # The fixed point is the union of the 8-connected candidate components that hold a strong
    # pixel. Each frame is cut into row bands labelled in parallel (SciPy's labelling releases
    # the GIL); band labels are made distinct by the labels counted before them, and the
    # components that cross a cut are joined through the pairs of labels 8-adjacent across it.
    # Which band holds which label number changes nothing: the components, so the edges, are
    # the same as one labelling of the frame.
    frames = state.reshape(-1, h, w)
    weak = frames != CANDIDATE_NONE
    labels = np.zeros(frames.shape, np.int32)
    rows = max(HYSTERESIS_MIN_BAND_ROWS, -(-h // host_threads()))
    bands = row_bands(h, w, planes=frames.shape[0], target=rows * w)
    counts = [0] * len(bands)

    def label(i: int) -> None:
        p, r0, r1 = bands[i]
        counts[i] = ndimage.label(weak[p, r0:r1], structure=_EIGHT_CONNECTED, output=labels[p, r0:r1])

    run_bands(label, list(range(len(bands))))
    starts = np.cumsum([0] + counts[:-1]).tolist()

    def shift(i: int) -> None:
        p, r0, r1 = bands[i]
        part = labels[p, r0:r1]
        np.add(part, np.int32(starts[i]), out=part, where=part > 0)

    run_bands(shift, [i for i in range(len(bands)) if starts[i]])
    total = sum(counts)
    # Joins across the cuts: a label on a band's last row and one on the next band's first row,
    # at the same column or one apart.
    pairs_a, pairs_b = [], []
    for (p, _, r1), (q, r0, _) in zip(bands, bands[1:]):
        if p != q:
            continue
        above, below = labels[p, r1 - 1], labels[p, r0]
        for dx in (-1, 0, 1):
            a = above[max(0, -dx): w - max(0, dx)]
            b = below[max(0, dx): w - max(0, -dx)]
            both = (a > 0) & (b > 0)
            pairs_a.append(a[both])
            pairs_b.append(b[both])
    a, b = (np.concatenate(pairs) if pairs else np.zeros(0, np.int32) for pairs in (pairs_a, pairs_b))
    if a.size:
        graph = coo_matrix((np.ones(a.size, np.int8), (a, b)), shape=(total + 1, total + 1))
        n_components, component = connected_components(graph, directed=False)
    else:
        n_components, component = total + 1, np.arange(total + 1)
    edge = np.zeros(n_components, np.uint8)  # per component: 255 = an edge
    edge[component[labels[frames == CANDIDATE_STRONG]]] = 255
    # Only candidates (a few percent of a frame) can be edges: write those, not every pixel.
    where = np.flatnonzero(weak)
    out = np.zeros(state.shape, np.uint8)
    out.reshape(-1)[where] = edge[component[labels.reshape(-1)[where]]]
    return out



