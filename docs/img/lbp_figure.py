"""docs/img/recognize-lbp.png: a face, its (8, 2) u2 LBP labels, the 7 x 7 regions with Ahonen's
weights, and the 59-bin histograms of three regions.

    python docs/img/lbp_figure.py

The face is the first CSU ScrapShots crop (``portcv.data.csu_faces()``, fetched once into
the user cache); without it, the astronaut of scikit-image. Needs matplotlib.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

import portcv
from portcv import recognize

OUT = Path(__file__).resolve().parent / "recognize-lbp.png"


def face() -> tuple[np.ndarray, str]:
    try:
        faces, _ = portcv.data.csu_faces(download=False)
        return faces[0], "CSU ScrapShots 00001aa\n(eye-aligned, 130 x 150)"
    except portcv.data.DataUnavailableError:
        from skimage import data

        gray = portcv.to_numpy(portcv.color.rgb_to_gray(data.astronaut()))
        return np.ascontiguousarray(gray[30:180, 160:290]), "scikit-image astronaut\n(130 x 150 crop)"


def main() -> None:
    image, title = face()
    labels = portcv.to_numpy(recognize.local_binary_pattern(image, 8, 2, method="u2", border="valid"))
    hist = portcv.to_numpy(recognize.lbp_histograms(image))  # (7, 7, 59)
    fig = plt.figure(figsize=(13, 6.2))
    grid = fig.add_gridspec(3, 4, width_ratios=[1, 1, 1, 1.6])
    ax = fig.add_subplot(grid[:, 0])
    ax.imshow(image, cmap="gray", vmin=0, vmax=255)
    ax.set_title(title, fontsize=9)
    ax.axis("off")
    ax = fig.add_subplot(grid[:, 1])
    ax.imshow(labels, cmap="nipy_spectral", vmin=0, vmax=58, interpolation="nearest")
    ax.set_title("(8, 2) u2 labels of the 126 x 146 interior\n(58 = non-uniform)", fontsize=9)
    ax.axis("off")
    ax = fig.add_subplot(grid[:, 2])
    ax.imshow(labels, cmap="gray", alpha=0.6, interpolation="nearest")
    w = recognize.AHONEN_WEIGHTS_7X7
    picks = [(1, 1, "tab:red"), (3, 3, "tab:blue"), (5, 3, "tab:green")]
    for j in range(7):
        for i in range(7):
            x0, y0 = 18 * i, 21 * j
            ax.add_patch(plt.Rectangle((x0 - 0.5, y0 - 0.5), 18, 21, fill=False, lw=0.6, ec="yellow"))
            ax.text(x0 + 9, y0 + 11, str(w[j, i]), ha="center", va="center", color="black", fontsize=9, fontweight="bold", bbox=dict(boxstyle="round,pad=0.15", fc="yellow", ec="none", alpha=0.8))
    for j, i, colour in picks:
        ax.add_patch(plt.Rectangle((18 * i - 0.5, 21 * j - 0.5), 18, 21, fill=False, lw=2, ec=colour))
    ax.set_title("7 x 7 regions of 18 x 21\n(partial last ones), Ahonen's weights", fontsize=9)
    ax.axis("off")
    for row, (j, i, colour) in enumerate(picks):
        ax = fig.add_subplot(grid[row, 3])
        ax.bar(np.arange(59), hist[j, i], color=colour, width=0.9)
        ax.set_xlim(-1, 59)
        ax.set_ylabel(f"region ({j}, {i})\nweight {w[j, i]}", fontsize=8)
        ax.tick_params(labelsize=7)
        if row == 2:
            ax.set_xlabel("u2 label (58: non-uniform)", fontsize=8)
    fig.suptitle("portcv.recognize: exact LBP labels and regional histograms (feature length 7 x 7 x 59 = 2891)", fontsize=11)
    fig.tight_layout()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(OUT, dpi=90)
    print(OUT)


if __name__ == "__main__":
    main()
