"""NumPy on the CPU: the reference backend every other backend must match bit-for-bit."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import Backend


class NumpyBackend(Backend):
    name = "numpy"
    install_hint = "NumPy is a core dependency: reinstall portcv"
    module_name = "numpy"
    runs_on_host = True

    def _load(self) -> Any:
        import array_api_compat.numpy as xp

        return xp

    def owns(self, array: Any) -> bool:
        return isinstance(array, np.ndarray)

    def from_numpy(self, array: np.ndarray) -> Any:
        return array

    def to_numpy(self, array: Any) -> np.ndarray:
        return np.asarray(array)
