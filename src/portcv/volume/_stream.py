"""``Convolver3D``: :func:`convolve3d` over live video, one frame in, one frame out."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _validate
from .._border import BORDERS, border_indices
from ..backends import backend
from ._convolve3d import METHODS, TIME_MODES, VIDEO_DTYPES, check_kernel, convolve3d


class Convolver3D:
    """Streams frames through a ring of ``kt`` frames; each output equals :func:`convolve3d` of
    the whole clip, bit for bit.

    ``time_mode="valid"``: output frame ``t`` (of ``T - kt + 1``) comes out when input frame
    ``t + kt - 1`` is pushed. ``time_mode="same"``: output ``t`` (of ``T``) comes out when
    frame ``t + kt // 2`` is pushed; :meth:`flush` makes the last ``kt // 2`` with the border
    rule along time (as the batch call does), and a clip shorter than that is convolved whole.

    Parameters
    ----------
    kernel : (kt, kh, kw) or (F, kt, kh, kw) array_like of int
        As in :func:`convolve3d`.
    frame_shape : (H, W)
        The shape of every frame pushed.
    dtype : {'uint8', 'uint16', 'int16'}
        The frames' dtype.
    method, shift, out_dtype, border, border_value, time_mode
        As in :func:`convolve3d`.

    Examples
    --------
    >>> import numpy as np, portcv
    >>> clip = np.random.default_rng(0).integers(0, 256, (6, 8, 9), dtype=np.uint8)
    >>> k = np.ones((3, 3, 3), dtype=np.int32)
    >>> conv = portcv.volume.Convolver3D(k, (8, 9))
    >>> outs = [o for o in (conv.push(f) for f in clip) if o is not None] + conv.flush()
    >>> batch = portcv.to_numpy(portcv.volume.convolve3d(clip, k))
    >>> len(outs), all((portcv.to_numpy(o) == b).all() for o, b in zip(outs, batch))
    (4, True)
    """

    def __init__(
        self,
        kernel: Any,
        frame_shape: tuple[int, int],
        *,
        dtype: str = "uint8",
        method: str = "direct",
        shift: int = 0,
        out_dtype: str | None = None,
        border: str = "reflect101",
        border_value: int = 0,
        time_mode: str = "valid",
    ) -> None:
        taps, self._bank = check_kernel(kernel)
        self.kernel = taps if self._bank else taps[0]
        self.kt = taps.shape[1]
        if not isinstance(frame_shape, (tuple, list)) or len(frame_shape) != 2:
            raise ValueError(f"frame_shape must be (H, W), got {frame_shape!r}")
        self.frame_shape = tuple(_validate.integer(s, "frame_shape", low=1, high=_validate.MAX_ELEMENTS)
                                 for s in frame_shape)
        # The ring's clip of kt frames (and a bank's F outputs of one frame) must be an array
        # convolve3d takes: checked before the trial clip below is allocated.
        elements = max(self.kt, taps.shape[0]) * self.frame_shape[0] * self.frame_shape[1]
        if elements > _validate.MAX_ELEMENTS:
            raise ValueError(f"frame_shape: {self.frame_shape} frames make clips of {elements} elements (kt = "
                             f"{self.kt} frames, {taps.shape[0]} kernels); at most {_validate.MAX_ELEMENTS} "
                             "are supported")
        try:
            dtype_name = np.dtype(dtype).name if dtype is not None else None
        except TypeError:  # NumPy's "data type not understood" names no argument
            dtype_name = dtype
        self.dtype = np.dtype(_validate.choice(dtype_name, "dtype", tuple(VIDEO_DTYPES)))
        self.time_mode = _validate.choice(time_mode, "time_mode", TIME_MODES)
        # channel_axis=None: frame_shape declares the frames gray, however narrow.
        self._options = dict(method=_validate.choice(method, "method", METHODS), shift=shift, out_dtype=out_dtype,
                             border=_validate.choice(border, "border", BORDERS), border_value=border_value,
                             channel_axis=None)
        # Check every option once, on a clip of kt frames, so push() cannot fail on them later.
        convolve3d(np.zeros((self.kt,) + self.frame_shape, self.dtype), self.kernel, **self._options)
        self._ring: list[Any] = []  # the last kt frames of the (border-extended) stream
        self._seen: list[Any] = []  # 'same': the first frames, until the border before them is known
        self._started = self.time_mode == "valid"

    def _output(self) -> Any:
        xp = backend().xp
        clip = xp.stack(self._ring[-self.kt:])
        out = convolve3d(clip, self.kernel, **self._options)
        return out[..., 0, :, :]

    def _append(self, frame: Any) -> Any:
        self._ring.append(frame)
        if len(self._ring) > self.kt:
            self._ring.pop(0)
        return self._output() if len(self._ring) == self.kt else None

    def _border_frames(self, frames: list[Any], count: int, before: bool) -> list[Any]:
        """``count`` frames beyond the first (``before``) or last of ``frames`` by the border rule."""
        xp = backend().xp
        n = len(frames)
        idx = border_indices(n, count, 0, self._options["border"])[:count] if before else \
            border_indices(n, 0, count, self._options["border"])[n:]
        fill = xp.full(self.frame_shape, self._options["border_value"], dtype=getattr(xp, self.dtype.name))
        return [fill if i < 0 else frames[i] for i in idx]

    def push(self, frame: Any) -> Any:
        """Add the next frame; return the next output frame ``(..., [F,] H, W)``, or None while
        the ring is filling."""
        f = _validate.image(frame, "frame", dtype=self.dtype, max_ndim=2, gray=True)
        if tuple(f.shape) != self.frame_shape:
            raise ValueError(f"frame must have shape {self.frame_shape}, got {tuple(f.shape)}")
        if self._started:
            return self._append(f)
        self._seen.append(f)
        half = self.kt // 2
        if len(self._seen) <= half:  # the border before frame 0 needs frames 0..half
            return None
        self._started = True
        out = None
        for g in self._border_frames(self._seen, half, before=True) + self._seen:
            out = self._append(g)
        self._seen = []
        return out

    def flush(self) -> list[Any]:
        """The output frames still owed at the end of the clip (``time_mode="same"``: the last
        ``kt // 2``; 'valid': none), then reset for a new clip."""
        half = self.kt // 2
        outs: list[Any] = []
        if self.time_mode == "same":
            if not self._started:
                if self._seen:  # shorter than the border: convolve the whole clip
                    clip = backend().xp.stack(self._seen)
                    whole = convolve3d(clip, self.kernel, time_mode="same", **self._options)
                    outs = [whole[..., t, :, :] for t in range(len(self._seen))]
            else:
                # The last frames of the clip; the ring holds at least half + 1 of them.
                tail = self._ring[-(half + 1):] if half else []
                for g in self._border_frames(tail, half, before=False):
                    outs.append(self._append(g))
        self._ring, self._seen = [], []
        self._started = self.time_mode == "valid"
        return outs
