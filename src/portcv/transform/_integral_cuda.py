"""CuPy override of the integral-image kernel (``integral``): the tiled scan of
``portcv/_integral_launch.py``. ``portcv.transform`` imports this module, which registers the
override."""

from __future__ import annotations

from typing import Any

from .._integral_launch import launch_integral
from ._integral import integral_kernel


@integral_kernel.override("cupy", supports="1 to 4 channels; CUDA's grid limit (gridDim.y <= 65535 row tiles)")
def _integral_cupy(img: Any, *, has_channels: bool, squared: bool, dtype: str) -> Any:
    return launch_integral(img, has_channels=has_channels, squared=squared, dtype=dtype, sq_dtype="int64")
