"""Input checks shared by every public function: clear ``TypeError``/``ValueError`` messages that
name the argument and say what was expected. Checks run on the host, on shapes, dtypes and Python
scalars only, so they never synchronize a device."""

from __future__ import annotations

import math
import numbers
from typing import Any, Iterable

import numpy as np

from .backends import asarray, owner_of, refuse_lazy

#: CUDA kernels index with 32-bit ints; larger arrays are refused rather than mis-indexed.
MAX_ELEMENTS = 2**31 - 1


def output_elements(shape: tuple, plane: tuple[int, int], out_plane: tuple[int, int], name: str) -> None:
    """Refuse an output of ``shape`` with its ``plane`` (rows, columns) resized to ``out_plane``
    that would have more than :data:`MAX_ELEMENTS` elements, naming the argument ``name``."""
    count = math.prod(shape) // (plane[0] * plane[1]) * out_plane[0] * out_plane[1]
    if count > MAX_ELEMENTS:
        raise ValueError(f"{name}: the output would have {count} elements; at most {MAX_ELEMENTS} are supported")


def image(
    img: Any,
    name: str = "image",
    *,
    dtype: Any = np.uint8,
    min_ndim: int = 2,
    max_ndim: int | None = None,
    channels: Iterable[int] | None = None,
    gray: bool = False,
    channel_axis: Any = "auto",
) -> Any:
    """Check an image argument and move it to the active backend.

    ``channels``: if given, the last axis must have one of these lengths (``(..., H, W, C)``).
    ``max_ndim``: at most this many dimensions (``2``: one ``(H, W)`` frame, no batch).
    ``gray``: the function takes gray frames ``(..., H, W)``: the library's one colour rule
    (:func:`gray`) refuses an array that looks like a colour image, with the conversion hint,
    unless ``channel_axis=None`` (the caller's argument) declares a batch of gray frames.
    Functions that handle channels resolve ``channel_axis`` with :func:`has_channels` instead.
    """
    from_list = False
    if owner_of(img) is None:
        if isinstance(img, (list, tuple)):
            try:
                img = np.asarray(img)
            except ValueError:  # NumPy's "inhomogeneous shape" message names no argument
                raise ValueError(f"{name} must be a rectangular array; got a ragged nested {type(img).__name__} "
                                 "(rows of different lengths)") from None
            from_list = True
        else:
            refuse_lazy(img)
            raise TypeError(f"{name} must be an array (NumPy, CuPy or JAX), got {type(img).__name__}")
    shape = tuple(img.shape)
    want = np.dtype(dtype)
    if np.dtype(img.dtype) != want:
        hint = (f"; a Python list of numbers becomes {np.dtype(img.dtype)}: pass "
                f"np.asarray({name}, np.{want.name})") if from_list else ""
        raise TypeError(f"{name} must have dtype {want}, got {np.dtype(img.dtype)}{hint}")
    if len(shape) < min_ndim:
        layout = "(..., H, W, C)" if channels is not None else "(..., H, W)"
        raise ValueError(f"{name} must have at least {min_ndim} dimensions {layout}, got shape {shape}")
    if 0 in shape:
        raise ValueError(f"{name} must not be empty, got shape {shape}")
    if math.prod(shape) > MAX_ELEMENTS:
        raise ValueError(f"{name} has {math.prod(shape)} elements; at most {MAX_ELEMENTS} are supported")
    if channels is not None:
        allowed = tuple(channels)
        if shape[-1] not in allowed:
            raise ValueError(
                f"{name} must have {' or '.join(map(str, allowed))} channels in its last axis, got shape {shape}"
            )
    if gray:
        _refuse_colour(shape, name, channel_axis, batches=max_ndim is None or max_ndim > 2)
    if max_ndim is not None and len(shape) > max_ndim:
        layout = "one (H, W) frame" if max_ndim == 2 else f"at most {max_ndim} dimensions"
        raise ValueError(f"{name} must have {layout}, got shape {shape}")
    return asarray(img)


def integer(value: Any, name: str, *, low: int | None = None, high: int | None = None) -> int:
    """A Python/NumPy integer in ``[low, high]``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    value = int(value)
    if (low is not None and value < low) or (high is not None and value > high):
        lo = "-inf" if low is None else low
        hi = "inf" if high is None else high
        raise ValueError(f"{name} must be in [{lo}, {hi}], got {value}")
    return value


def boolean(value: Any, name: str) -> bool:
    """A Python or NumPy bool (not a string, a number or None: ``'yes'`` and ``0`` are mistakes)."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool (True or False), got {type(value).__name__}")
    return bool(value)


def real(value: Any, name: str, *, positive: bool = False, high: float | None = None) -> float:
    """A finite real number, optionally > 0 and <= ``high``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    if positive and value <= 0:
        raise ValueError(f"{name} must be > 0, got {value}")
    if high is not None and value > high:
        raise ValueError(f"{name} must be <= {high}, got {value}")
    return value


def real_pair(value: Any, name: str, pair_name: str, *, high: float) -> tuple[float, float]:
    """A positive real number for both axes, or a pair of them (``pair_name`` says which order,
    e.g. ``"(fx, fy)"``), each at most ``high``."""
    pair = tuple(value) if isinstance(value, (tuple, list)) else (value, value)
    if len(pair) != 2:
        raise ValueError(f"{name} must be a float or a {pair_name} pair, got {value!r}")
    return real(pair[0], name, positive=True, high=high), real(pair[1], name, positive=True, high=high)


def choice(value: Any, name: str, options: Iterable[str]) -> str:
    options = tuple(options)
    if value not in options:
        raise ValueError(f"{name} must be one of {options}, got {value!r}")
    return value


def kernel_size(value: Any, name: str, *, odd: bool, low: int, high: int) -> tuple[int, int]:
    """An int or a (width, height) pair of ints, each in ``[low, high]`` (odd if ``odd``)."""
    pair = (value, value) if not isinstance(value, (tuple, list)) else tuple(value)
    if len(pair) != 2:
        raise ValueError(f"{name} must be an int or a (width, height) pair, got {value!r}")
    out = []
    for v in pair:
        v = integer(v, name, low=low, high=high)
        if odd and v != 0 and v % 2 == 0:
            raise ValueError(f"{name} must be odd, got {value!r}")
        out.append(v)
    return out[0], out[1]


def taps(value: Any, name: str, *, max_len: int = 63) -> tuple[int, ...]:
    """A 1-D sequence of small integers (filter taps)."""
    if isinstance(value, (list, tuple)) and any(isinstance(v, (bool, np.bool_)) for v in value):
        raise TypeError(f"{name} must hold integers (fixed-point taps), got a bool in {value!r}")
    arr = np.asarray(value)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D sequence of integers, got shape {arr.shape}")
    if arr.size > max_len:
        raise ValueError(f"{name} may have at most {max_len} taps, got {arr.size}")
    if not np.issubdtype(arr.dtype, np.integer):
        if np.issubdtype(arr.dtype, np.floating) and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)):
            arr = arr.astype(np.int64)
        else:
            raise TypeError(f"{name} must hold integers (fixed-point taps), got dtype {arr.dtype}")
    return tuple(int(v) for v in arr)


def has_channels(img: Any, channel_axis: Any) -> bool:
    """Resolve ``channel_axis`` for an ``(..., H, W)`` / ``(..., H, W, C)`` image.

    ``-1``: channels last. ``None``: no channel axis (leading axes are a batch of planes).
    ``"auto"``: an array of 3+ dimensions whose last axis has at most 4 entries has channels.
    """
    if isinstance(channel_axis, str) and channel_axis == "auto":
        return img.ndim >= 3 and img.shape[-1] <= 4
    if channel_axis is None:
        return False
    if isinstance(channel_axis, int) and not isinstance(channel_axis, bool) and channel_axis == -1:
        if img.ndim < 3:
            raise ValueError(f"channel_axis=-1 needs an (..., H, W, C) image, got shape {tuple(img.shape)}")
        return True
    raise ValueError(f"channel_axis must be 'auto', None or -1 (channels last), got {channel_axis!r}")


def gray(img: Any, name: str, channel_axis: Any, *, batches: bool = True) -> None:
    """Refuse a colour image where gray frames are expected (the rule of ``image(gray=True)``),
    for arguments :func:`image` does not check (host-only arrays, lists of frames). ``batches``:
    whether the function takes ``channel_axis=None`` (a batch of narrow gray frames)."""
    _refuse_colour(tuple(img.shape), name, channel_axis, batches=batches)


def _refuse_colour(shape: tuple, name: str, channel_axis: Any, *, batches: bool) -> None:
    """The library's one colour rule for functions that take gray frames.

    With ``channel_axis="auto"`` (the library's convention) an array of 3+ dimensions whose last
    axis has 3 or 4 entries is an RGB(A) image, not a batch of narrow gray frames: silently
    treating it as one gives wrong results. ``channel_axis=None`` declares a batch (``batches``:
    the function takes batches, so the hint offers it).
    """
    if isinstance(channel_axis, str) and channel_axis == "auto":
        if len(shape) >= 3 and shape[-1] in (3, 4):
            batch = (", or pass channel_axis=None if the leading axes are a batch of gray frames"
                     if batches else "")
            raise ValueError(
                f"{name} looks like a colour image (shape {shape}: its last axis has {shape[-1]} entries) "
                f"but this function takes gray frames; convert it with portcv.color.rgb_to_gray({name}){batch}"
            )
        return
    if channel_axis is None:
        return
    raise ValueError(f"channel_axis must be 'auto' or None (this function takes gray frames), got {channel_axis!r}")


def taps2d(value: Any, name: str, *, max_size: int = 31) -> tuple[tuple[int, ...], ...]:
    """A 2-D array of small integers (a non-separable filter kernel), as nested tuples (static).

    Any backend's array, a NumPy array or nested lists; it is read on the host (it is a
    parameter, not image data). Floats are accepted only when every value is an integer.
    """
    if owner_of(value) is not None and not isinstance(value, np.ndarray):
        from .backends import to_numpy

        value = to_numpy(value)
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError) as exc:  # ragged nested lists
        raise ValueError(f"{name} must be a 2-D array of integers, got {type(value).__name__} ({exc})") from exc
    if arr.ndim != 2 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 2-D array of integers, got shape {arr.shape}")
    if arr.shape[0] > max_size or arr.shape[1] > max_size:
        raise ValueError(f"{name} may be at most {max_size}x{max_size}, got shape {arr.shape}")
    if not np.issubdtype(arr.dtype, np.integer):
        if np.issubdtype(arr.dtype, np.floating) and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)):
            if float(np.abs(arr).max()) >= 2**63:
                raise ValueError(f"{name} holds values too large for the int32 accumulator")
            arr = arr.astype(np.int64)
        else:
            raise TypeError(f"{name} must hold integers (fixed-point taps), got dtype {arr.dtype}")
    return tuple(tuple(int(v) for v in row) for row in arr)


def real_array(value: Any, name: str, *, max_size: int = MAX_ELEMENTS) -> np.ndarray:
    """A parameter array of real numbers (camera matrices, kernels to quantize), read on the host
    from any backend's array, a NumPy array or nested lists, as float64. Complex values (whose
    imaginary part a float conversion drops), bools, strings and objects are refused; so are
    ragged lists, and more than ``max_size`` values (checked before the float64 copy). Shape and
    finiteness are the caller's to check."""
    if owner_of(value) is not None and not isinstance(value, np.ndarray):
        from .backends import to_numpy

        value = to_numpy(value)
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError):  # NumPy's "inhomogeneous shape" message names no argument
        raise ValueError(f"{name} must be a rectangular array of real numbers; got a ragged nested "
                         f"{type(value).__name__}") from None
    if arr.dtype.kind not in "iuf":
        raise TypeError(f"{name} must hold real numbers, got dtype {arr.dtype}"
                        + (f" ({type(value).__name__})" if arr.dtype == object else ""))
    if arr.size > max_size:
        raise ValueError(f"{name} has {arr.size} values (shape {arr.shape}); at most {max_size} are expected")
    return arr.astype(np.float64)


def count(count: Any) -> Any:
    """A count of valid entries: a Python int, or a 0-d integer array of any backend (kept on its device)."""
    if isinstance(count, bool):
        raise TypeError("count must be an integer or a 0-d integer array, got bool")
    if isinstance(count, numbers.Integral):
        return int(count)
    if owner_of(count) is None:
        raise TypeError(f"count must be an integer or a 0-d integer array, got {type(count).__name__}")
    if tuple(count.shape) != () or not np.issubdtype(np.dtype(count.dtype), np.integer):
        raise TypeError(f"count must be a 0-d integer array, got shape {tuple(count.shape)} dtype {count.dtype}")
    return count


def matrix(x: Any, name: str, *, dtypes: Iterable[Any], hint: str = "", two_d: bool = True) -> Any:
    """Check a 2-D, non-empty array of one of ``dtypes`` (rows of feature vectors, say) and move
    it to the active backend. ``hint`` is appended to the dtype error (where to get such data).
    ``two_d=False`` takes any non-empty array of at least one dimension."""
    if owner_of(x) is None:
        if not isinstance(x, (list, tuple)):
            refuse_lazy(x)
            raise TypeError(f"{name} must be an array (NumPy, CuPy or JAX), got {type(x).__name__}")
        try:
            x = np.asarray(x)
        except ValueError:
            raise ValueError(f"{name} must be a rectangular array; got a ragged nested {type(x).__name__}") from None
    allowed = tuple(np.dtype(d) for d in dtypes)
    dtype = np.dtype(x.dtype)
    if dtype not in allowed:
        names = ", ".join(d.name for d in allowed)
        raise TypeError(f"{name} must have one of the dtypes {names}; got {dtype}{hint}")
    shape = tuple(x.shape)
    if two_d and len(shape) != 2:
        raise ValueError(f"{name} must be a 2-D array (rows, features), got shape {shape}")
    if 0 in shape or not shape:
        raise ValueError(f"{name} must not be empty, got shape {shape}")
    if math.prod(shape) > MAX_ELEMENTS:
        raise ValueError(f"{name} has {math.prod(shape)} elements; at most {MAX_ELEMENTS} are supported")
    return asarray(x)
