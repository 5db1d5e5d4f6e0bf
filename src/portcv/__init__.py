"""portcv: computer vision written once, bit-exact on NumPy, CuPy and JAX.

>>> import portcv
>>> portcv.use("numpy")                       # doctest: +ELLIPSIS
<portcv backend 'numpy'>
>>> with portcv.using("numpy"):
...     pass

Importing portcv imports neither CuPy nor JAX; a backend's framework is imported when that
backend is first used.
"""

from __future__ import annotations

from . import color, data, filters
from . import transform
from . import edges
from . import motion, video
from . import codec
from . import draw
from . import detect
from .backends import (
    Backend,
    BackendUnavailableError,
    asarray,
    available_backends,
    backend,
    register,
    to_numpy,
    use,
    using,
)

__version__ = "0.1.0"

__all__ = [
    "Backend",
    "BackendUnavailableError",
    "asarray",
    "available_backends",
    "backend",
    "codec",
    "draw",
    "detect",
    "color",
    "data",
    "edges",
    "filters",
    "motion",
    "video",
    "transform",
    "register",
    "to_numpy",
    "use",
    "using",
]
