"""docs/img/zoom-bilinear-vs-bspline.png: Lin et al.'s Figure 5 with scikit-image's camera.

    python docs/img/zoom_figure.py

The camera image is cut to QCIF's aspect ratio and anti-aliased down to 176x144 (the article's
"Claire" sequence is not shipped with any package), then enlarged x7 to 1232x1008, the article's
Table 4 task, three ways: nearest (``zoom(order=0)``), bilinear (``resize``, OpenCV's
INTER_LINEAR) and cubic B-spline (``zoom``, order 3). The panels show the same crop around the
head and the camera. Needs matplotlib and scikit-image.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from skimage import data
from skimage.transform import resize as sk_resize

import portcv

OUT = Path(__file__).resolve().parent / "zoom-bilinear-vs-bspline.png"
#: Rows and columns of the crop in the x7 image (the head and the camera).
CROP = (slice(70, 420), slice(420, 770))


def qcif_camera() -> np.ndarray:
    """scikit-image's camera, rows cut to 176:144 and anti-aliased down to 144 x 176 (uint8)."""
    cam = data.camera()[40:459]  # 419 x 512 has QCIF's aspect ratio
    return (sk_resize(cam, (144, 176), anti_aliasing=True) * 255).round().astype(np.uint8)


def main() -> None:
    small = qcif_camera()
    panels = [
        (portcv.transform.zoom(small, 7, order=0), "nearest: zoom(order=0)"),
        (portcv.transform.resize(small, scale=7), "bilinear: resize (cv2 INTER_LINEAR)"),
        (portcv.transform.zoom(small, 7), "cubic B-spline: zoom (order 3)"),
    ]
    fig, axes = plt.subplots(1, 3, figsize=(12, 4.3))
    for ax, (img, title) in zip(axes, panels):
        img = portcv.to_numpy(img)
        assert img.shape == (1008, 1232)
        ax.imshow(img[CROP], cmap="gray", vmin=0, vmax=255, interpolation="nearest")
        ax.set_title(title, fontsize=10)
        ax.axis("off")
    fig.suptitle("176x144 (QCIF) enlarged x7 to 1232x1008, Lin et al.'s Table 4 task: a 350x350 crop",
                 fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    fig.savefig(OUT, dpi=90)
    print(OUT)


if __name__ == "__main__":
    main()
