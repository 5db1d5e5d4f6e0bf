"""docs/img/depth-dcbf.png and docs/img/depth-propagation.png: portcv.depth on the Middlebury 2014
motorcycle pair that ships with scikit-image (``skimage.data.stereo_motorcycle``, 500 x 741).

    python docs/img/depth_figure.py

``depth-dcbf.png``: the left view's ground-truth disparity (x4, uint8; 0 where it has none, 7.35 %
of the pixels) before and after ``dcbf(depth, left, 11, 5.0, 25.0)``, with the left image.
``depth-propagation.png``: the left view's depth (mm, from the documented calibration) propagated
to the right camera with ``propagate_color``; the colour it carries, the real right image, and
the propagated depth with its cracks and disocclusions filled by ``dcbf`` steered by the right
image. Prints the figures the docs quote. Needs matplotlib and scikit-image.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from skimage import data

import portcv

IMG = Path(__file__).resolve().parent
#: scikit-image's calibration of the downscaled pair (px, mm): focal length, principal point of
#: the left camera, the right camera's principal point offset, baseline.
FOCAL, CX, CY, DOFFS, BASELINE = 994.978, 311.193, 254.877, 31.086, 193.001


def show(ax, img, title, **kw):
    ax.imshow(img, interpolation="nearest", **kw)
    ax.set_title(title, fontsize=9)
    ax.axis("off")


def main() -> None:
    left, right, disp = data.stereo_motorcycle()
    known = np.isfinite(disp)
    d = np.where(known, disp, 0)
    d8 = np.where(known, np.clip(np.rint(d * 4), 1, 255), 0).astype(np.uint8)

    filled = portcv.to_numpy(portcv.depth.dcbf(d8, left, 11, 5.0, 25.0))
    print(f"dcbf: {int((d8 == 0).sum())} -> {int((filled == 0).sum())} unknown pixels")
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.4))
    show(axes[0], left, "left image (guide)")
    show(axes[1], np.ma.masked_equal(d8, 0), f"disparity x4, {int((d8 == 0).sum())} holes (white)", cmap="viridis",
         vmin=20, vmax=240)
    show(axes[2], np.ma.masked_equal(filled, 0), f"after dcbf 11x11: {int((filled == 0).sum())} holes",
         cmap="viridis", vmin=20, vmax=240)
    fig.tight_layout()
    fig.savefig(IMG / "depth-dcbf.png", dpi=80)

    z = np.where(known, np.rint(FOCAL * BASELINE / (d + DOFFS)), 0).astype(np.uint16)
    K_left = np.array([[FOCAL, 0, CX], [0, FOCAL, CY], [0, 0, 1]])
    K_right = np.array([[FOCAL, 0, CX + DOFFS], [0, FOCAL, CY], [0, 0, 1]])
    zr, cr = portcv.depth.propagate_color(z, left, K_left, K_right, np.eye(3), [-BASELINE, 0, 0], z.shape)
    zr, cr = portcv.to_numpy(zr), portcv.to_numpy(cr)
    hit = zr != 0
    psnr = 10 * np.log10(255.0**2 / np.mean((cr[hit].astype(float) - right[hit]) ** 2))
    zr_filled = portcv.to_numpy(portcv.depth.dcbf(zr, right, 11, 5.0, 25.0))
    print(f"propagate: {100 * hit.mean():.2f} % of the right view covered, colour PSNR {psnr:.1f} dB; "
          f"after dcbf {100 * (zr_filled != 0).mean():.2f} %")
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.4))
    show(axes[0], cr, f"left colour propagated to the right view ({100 * hit.mean():.1f} % covered)")
    show(axes[1], right, "the real right image")
    show(axes[2], np.ma.masked_equal(zr_filled, 0), "propagated depth (mm), holes filled by dcbf", cmap="viridis_r",
         vmin=2000, vmax=5000)
    fig.tight_layout()
    fig.savefig(IMG / "depth-propagation.png", dpi=80)
    print(IMG / "depth-dcbf.png", IMG / "depth-propagation.png")


if __name__ == "__main__":
    main()
