"""The modified census transform (MCT) of Froeba and Ernst, as Tek's thesis uses it (section 2.1.1)."""

from __future__ import annotations

from typing import Any

from .. import _border, _validate
from .._kernel import kernel

#: MCT codes are 9-bit; 511 (every pixel above the mean) cannot occur.
MCT_CODES = 511
#: ``border=`` values of :func:`mct`: ``'valid'`` (the paper's) and portcv's padding modes.
MCT_BORDERS = ("valid",) + _border.BORDERS


@kernel("mct")
def mct_kernel(xp: Any, img: Any) -> Any:
    """uint16 MCT codes of the valid interior of ``(..., H, W)`` uint8 (H, W >= 3): ``(..., H-2, W-2)``.

    ``S`` is the 3x3 sum (<= 9 * 255 = 2295, int16); bit ``8 - k`` of the code is ``9 * I_k > S``
    for the raster index ``k`` of the 3x3 (0 top-left, 4 centre, 8 bottom-right): the thesis's
    "pixels compared in row-major order", concatenated most significant first. ``9 * I > S`` is
    ``I > mean`` without a division (exact on every backend).
    """
    x = xp.astype(img, xp.int16)
    h, w = x.shape[-2], x.shape[-1]
    taps = [x[..., dy : h - 2 + dy, dx : w - 2 + dx] for dy in range(3) for dx in range(3)]
    total = taps[0]
    for t in taps[1:]:
        total = total + t
    code = xp.zeros(total.shape, dtype=xp.uint16)
    for k, t in enumerate(taps):
        code = code + xp.astype(9 * t > total, xp.uint16) * (1 << (8 - k))
    return code


@mct_kernel.override("numpy", supports="uint8 images (any leading batch dims)")
def _mct_numpy(img: Any) -> Any:
    # Bands of output rows over the host threads, each through reused uint16 buffers that stay in
    # the core's cache: S as uint16 (<= 2295), 9 * I_k as uint16, and the code built most
    # significant bit first (code = 2 * code + [9 I_k > S]). The same comparisons as the portable
    # version, so the same bits.
    import numpy as np

    from ..backends.numpy import row_bands, run_bands, scratch

    x = np.asarray(img)
    if x.dtype != np.uint8:
        return NotImplemented
    h, w = x.shape[-2], x.shape[-1]
    planes = x.reshape((-1, h, w))
    out = np.empty(x.shape[:-2] + (h - 2, w - 2), np.uint16)
    flat = out.reshape((-1, h - 2, w - 2))

    def band(item: tuple[int, int, int]) -> None:
        p, r0, r1 = item
        m, ow = r1 - r0, w - 2
        wide = scratch("mct_wide", (m + 2, w), np.uint16)  # the band's source rows, widened once
        nine = scratch("mct_nine", (m + 2, w), np.uint16)  # and times nine, once
        np.copyto(wide, planes[p, r0:r1 + 2])
        np.multiply(wide, 9, out=nine)
        total = scratch("mct_total", (m, ow), np.uint16)
        above = scratch("mct_above", (m, ow), np.bool_)
        code = flat[p, r0:r1]
        np.add(wide[0:m, 0:ow], wide[0:m, 1:ow + 1], out=total)
        for dy, dx in [(dy, dx) for dy in range(3) for dx in range(3)][2:]:
            np.add(total, wide[dy:dy + m, dx:dx + ow], out=total)
        code[...] = 0
        for dy in range(3):
            for dx in range(3):
                np.greater(nine[dy:dy + m, dx:dx + ow], total, out=above)
                np.left_shift(code, 1, out=code)
                np.bitwise_or(code, above, out=code)

    if flat.size:
        run_bands(band, row_bands(h - 2, w - 2, planes=flat.shape[0]))
    return out


def mct(image: Any, *, border: str = "valid", border_value: int = 0, channel_axis: Any = "auto") -> Any:
    """Modified census transform: one 9-bit code per pixel from its 3x3 neighbourhood and their mean.

    Parameters
    ----------
    image : (..., H, W) uint8 array
        Gray image or a batch of them (leading dims), on any backend.
    border : {'valid', 'reflect101', 'replicate', 'constant'}
        ``'valid'`` (default, the paper defines no border): only pixels with a full 3x3
        neighbourhood, output ``(..., H-2, W-2)`` (needs H, W >= 3). The others pad by one pixel
        with portcv's border rule first and give ``(..., H, W)``.
    border_value : int
        Padding value for ``border='constant'`` (0..255; checked whatever the border).
    channel_axis : {"auto", None}
        ``"auto"``: an array whose last axis has 3 or 4 entries is a colour image and is refused
        (convert it with :func:`portcv.color.rgb_to_gray`); ``None``: leading axes are a batch of
        gray frames, whatever their width.

    Returns
    -------
    (..., H-2, W-2) or (..., H, W) uint16 array on the active backend
        Codes in 0..510.

    Notes
    -----
    Froeba and Ernst (FGR 2004) as written in Tek's thesis (section 2.1.1, eq. 2.1-2.2):
    ``Gamma(x) = concat_{y in N(x)} zeta(mean(x), I(y))`` over the 3x3 neighbourhood *including*
    ``x``, ``zeta(a, b) = [a < b]``, in row-major order. portcv fixes the bit order the thesis
    leaves implicit: top-left is bit 8 (the most significant), the centre bit 4, bottom-right
    bit 0; and compares ``9 * I > S`` (S the 3x3 sum) instead of ``I > S / 9``: integer and exact
    on every backend. 511 cannot occur (not every pixel can exceed the mean); a constant patch
    gives 0. The code is invariant under ``a * I + b`` for ``a > 0`` (without clipping).

    Examples
    --------
    >>> import numpy as np, portcv
    >>> img = np.array([[0, 0, 0], [0, 9, 0], [0, 0, 9]], np.uint8)
    >>> int(portcv.detect.mct(img)[0, 0])   # centre (bit 4) and bottom-right (bit 0) above the mean
    17
    """
    border = _validate.choice(border, "border", MCT_BORDERS)
    border_value = _validate.integer(border_value, "border_value", low=0, high=255)
    img = _validate.image(image, gray=True, channel_axis=channel_axis)
    if border == "valid":
        if img.shape[-1] < 3 or img.shape[-2] < 3:
            raise ValueError(f"image must be at least 3x3 for border='valid', got shape {tuple(img.shape)}")
    else:
        border, value = _border.check(border, border_value)
        from ..backends import backend

        xp = backend().xp
        img = _border.pad_axis(xp, img, img.ndim - 1, 1, 1, border, value)
        img = _border.pad_axis(xp, img, img.ndim - 2, 1, 1, border, value)
    return mct_kernel(img)
