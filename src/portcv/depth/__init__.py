"""Depth maps: Lin et al.'s 3D-video section (the depth-image-based rendering pipeline of Nguyen,
Do and Patel): the depth-colour bilateral filter that fills a depth map's holes (``dcbf``) and
depth propagation to another camera's view by an order-independent z-buffer (``propagate``,
``propagate_color``, ``warp_disparity``). Integer arithmetic throughout: the same bits on every
backend and for every order in which the source pixels are processed.
"""

from __future__ import annotations

from ._dcbf import dcbf
from ._propagate import propagate, propagate_color, warp_disparity
from . import _propagate_cuda  # noqa: F401  (registers the propagation's CuPy overrides)
from .. import _bilateral_cuda, _bilateral_pallas  # noqa: F401  (the bilateral kernel's, which dcbf runs)

__all__ = ["dcbf", "propagate", "propagate_color", "warp_disparity"]
