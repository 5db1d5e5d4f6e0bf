"""The engine of the bad-input sweep (``tests/test_bad_input_sweep.py``): bad values by kind, one
bounded call per case, and the verdict on its outcome.

A *case* is one public callable called with valid arguments except one, which is replaced by a
*variant*. A variant either must be refused (``"error"``: a ``ValueError``/``TypeError``, or a
named portcv error, whose message names the argument) or is a valid spelling of the same input
(``"same"``: a non-contiguous, read-only or Fortran-ordered view, a NumPy scalar for a Python one)
and must return what the valid call returns; the same values in another dtype or as a list
(``"convert"``) may be refused or taken, and if taken must give the valid call's result. A refused variant the function documents as valid is
listed in its :class:`Case`'s ``accept`` with the reason.

Each call runs under a time limit (``SIGALRM``) and a cap on new address space
(``RLIMIT_AS``), so a case that would hang or allocate gigabytes fails instead of taking the
machine with it.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import numbers
import os
import resource
import signal
import warnings
import zlib
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

import portcv

#: Seconds a case may take (its first call on JAX compiles).
TIME_LIMIT_S = 30
#: New address space a case may take; a forged size that allocates gigabytes hits it.
MEMORY_CAP = 3 << 30
#: Elements of a "huge" array variant: more than any op takes (``_validate.MAX_ELEMENTS``).
HUGE = 2**32


@dataclasses.dataclass
class Case:
    """One public callable, called with ``args`` (valid), swept parameter by parameter.

    ``positional``: parameters passed by position (positional-only ones), in order.
    ``batch``: array parameters whose leading axes are a batch (a 5-D stack of the valid input
    must give the stack of the valid outputs).
    ``dtypes``: per array parameter, the dtypes it takes besides its valid value's (not swept).
    ``accept``: ``{(param, variant): reason}``: a bad-looking variant the function documents as valid.
    ``names``: per parameter, other words its error message may use instead of its name.
    ``skip``: parameters not swept (with the reason in a comment where the case is made).
    ``extra``: ``{param: [(label, value, expect)]}``: variants of this case's own.
    ``cleanup``: called with a returned value (closes servers and clusters a case started).
    ``base``: make the valid call first (``False`` for callables whose valid call is slow: only the
    refusals are swept).
    ``optional``: parameters for which ``None`` is valid (found from the signature where it has
    ``None`` as the default; callables wrapped in a lambda list them here).
    """

    call: Callable[..., Any]
    args: dict[str, Any]
    positional: tuple[str, ...] = ()
    batch: tuple[str, ...] = ()
    dtypes: dict[str, tuple] = dataclasses.field(default_factory=dict)
    accept: dict[tuple[str, str], str] = dataclasses.field(default_factory=dict)
    names: dict[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    skip: tuple[str, ...] = ()
    extra: dict[str, list] = dataclasses.field(default_factory=dict)
    cleanup: Callable[[Any], None] | None = None
    base: bool = True
    optional: tuple[str, ...] = ()


@dataclasses.dataclass
class Outcome:
    param: str
    variant: str
    verdict: str  # "error" (clean refusal), "accept" (documented), "same" (equal result), or a failure
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.verdict in ("error", "accept", "same")


# --------------------------------------------------------------------------------------------
# Variants by kind
# --------------------------------------------------------------------------------------------
def _strided(value: np.ndarray) -> np.ndarray:
    """The same values, every axis strided (as a channel slice ``rgb[..., 1]`` is)."""
    holder = np.empty(value.shape + (2,), value.dtype)
    holder[..., 0] = value
    return holder[..., 0]


def _readonly(value: np.ndarray) -> np.ndarray:
    view = value.copy()
    view.flags.writeable = False
    return view


def _reversed_view(value: np.ndarray) -> np.ndarray:
    """The same values through a view with a negative stride on the first axis."""
    return np.ascontiguousarray(value[::-1])[::-1]


def _other_dtype(value: np.ndarray) -> list[np.dtype]:
    wrong = [np.float64, np.int64, np.bool_, np.complex128, np.float16, np.int8, np.uint16, np.uint8, np.int32,
             np.float32]
    return [np.dtype(d) for d in wrong if np.dtype(d) != value.dtype]


def array_variants(value: np.ndarray, *, batch: bool) -> Iterator[tuple[str, Any, str]]:
    yield "None", None, "error"
    yield "str", "image.png", "error"
    yield "int", 7, "error"
    yield "ragged", [[1, 2], [3]], "error"
    yield "object", np.array([object()] * 4, dtype=object), "error"
    if value.ndim != 0:
        yield "0-d", np.asarray(value.flat[0]), "error"
    if value.ndim > 1:
        yield "1-d", np.ascontiguousarray(value.reshape(-1)[:5]), "error"
    if value.ndim < 5:
        stack = np.broadcast_to(value, (1, 2) + (1,) * (3 - value.ndim) + value.shape) if value.ndim <= 3 \
            else np.broadcast_to(value, (2,) * (5 - value.ndim) + value.shape)
        yield "5-d", np.ascontiguousarray(stack), "batch" if batch else "error"
    if value.ndim >= 1:
        yield "empty", value[:0], "error"
    if value.ndim >= 2:
        yield "empty-last", value[..., :0], "error"
    for dtype in _other_dtype(value):
        # Another dtype holding the same values may be taken (and must then give the same result);
        # complex and bool never hold the same thing. Integer data (pixels, counts, indices) in a
        # dtype that changes its values is refused; real-valued parameters converted with a loss
        # are a different input, not a bad one, and are not swept.
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
            converted = value.astype(dtype)
            kept = np.array_equal(converted.astype(value.dtype), value) and (
                dtype.kind != "b" or value.dtype.kind == "b")
        if dtype.kind == "c" or (dtype.kind == "b" and value.dtype.kind != "b"):
            expect = "error"
        elif kept:
            expect = "convert"
        elif value.dtype.kind in "iub":
            expect = "error"
        else:
            continue
        yield f"dtype-{dtype.name}", converted, expect
    if value.dtype.kind == "f":
        bad = value.copy()
        bad.flat[0] = np.nan
        yield "nan", bad, "error"
        bad = value.copy()
        bad.flat[-1] = np.inf
        yield "inf", bad, "error"
    huge_shape = value.shape[:-2] + (1 << 16, 1 << 16) if value.ndim >= 2 else (HUGE,)
    yield "huge", np.broadcast_to(np.zeros((), value.dtype), huge_shape), "error"
    yield "list", value.tolist(), "convert"
    if value.ndim >= 1:
        yield "strided", _strided(value), "same"
        yield "read-only", _readonly(value), "same"
        yield "negative-stride", _reversed_view(value), "same"
    if value.ndim >= 2:
        yield "fortran", np.asfortranarray(value), "same"


def int_variants(value: int) -> Iterator[tuple[str, Any, str]]:
    yield "None", None, "error"
    yield "str", str(value), "error"
    yield "float", value + 0.5, "error"
    yield "nan", math.nan, "error"
    yield "inf", math.inf, "error"
    yield "bool", True, "error"
    yield "complex", complex(value, 1), "error"
    yield "array", np.array([value, value]), "error"
    if value != 0:
        yield "zero", 0, "error"
    if value >= 0:
        yield "negative", -1 if value != 1 else -2, "error"
    yield "huge", 1 << 40, "error"
    yield "numpy-int", np.int64(value), "same"


def float_variants(value: float) -> Iterator[tuple[str, Any, str]]:
    yield "None", None, "error"
    yield "str", str(value), "error"
    yield "nan", math.nan, "error"
    yield "inf", math.inf, "error"
    yield "-inf", -math.inf, "error"
    yield "complex", complex(value, 1), "error"
    yield "bool", True, "error"
    yield "array", np.array([value, value]), "error"
    if value > 0:
        yield "negative", -value, "error"
    if value != 0:
        yield "zero", 0.0, "error"
    yield "huge", 1e300, "error"
    yield "numpy-float", np.float64(value), "same"


def bool_variants(value: bool) -> Iterator[tuple[str, Any, str]]:
    yield "None", None, "error"
    yield "str", "yes", "error"
    yield "int", 2, "error"
    yield "numpy-bool", np.bool_(value), "same"


def str_variants(value: str) -> Iterator[tuple[str, Any, str]]:
    yield "None", None, "error"
    yield "int", 1, "error"
    yield "bogus", "bogus", "error"
    yield "empty", "", "error"
    yield "bytes", value.encode(), "error"
    yield "case", value.upper() if value.upper() != value else value.lower(), "error"


def size_variants(value: tuple) -> Iterator[tuple[str, Any, str]]:
    yield "None", None, "error"
    yield "str", "ab", "error"
    yield "empty", (), "error"
    yield "short", tuple(value[:-1]), "error"
    yield "long", tuple(value) + (value[-1],), "error"
    yield "negative", (-1,) + tuple(value[1:]), "error"
    yield "zero", (0,) + tuple(value[1:]), "error"
    yield "float", (value[0] + 0.5,) + tuple(value[1:]), "error"
    yield "nan", (math.nan,) + tuple(value[1:]), "error"
    yield "bool", (True,) + tuple(value[1:]), "error"
    yield "huge", tuple(1 << 40 for _ in value), "error"
    yield "list", list(value), "same"
    yield "numpy", np.asarray(value), "convert"


def path_variants(tmp: Path) -> Iterator[tuple[str, Any, str]]:
    yield "None", None, "error"
    yield "int", 123, "error"
    yield "missing", tmp / "missing" / "nothing.bin", "error"
    yield "folder", tmp, "error"
    empty = tmp / "empty.bin"
    empty.write_bytes(b"")
    yield "empty-file", empty, "error"
    garbage = tmp / "garbage.bin"
    garbage.write_bytes(bytes(range(256)) * 8)
    yield "garbage-file", garbage, "error"


def callable_variants() -> Iterator[tuple[str, Any, str]]:
    yield "None", None, "error"
    yield "int", 3, "error"
    yield "str", "bogus", "error"


def variants(case: Case, name: str, value: Any, tmp: Path) -> Iterator[tuple[str, Any, str]]:
    """The variants of parameter ``name`` (valid value ``value``) by kind, then the case's own.

    ``None`` is not a bad value of a parameter whose default is ``None``."""
    optional = name in case.optional or _default_is_none(case.call, name)
    for variant in _variants(case, name, value, tmp):
        if not (optional and variant[0] == "None"):
            yield variant


def _default_is_none(fn: Callable, name: str) -> bool:
    try:
        parameter = inspect.signature(fn).parameters.get(name)
    except (TypeError, ValueError):
        return False
    return parameter is not None and parameter.default is None


def _variants(case: Case, name: str, value: Any, tmp: Path) -> Iterator[tuple[str, Any, str]]:
    if isinstance(value, np.ndarray):
        it: Iterator = array_variants(value, batch=name in case.batch)
        allowed = {np.dtype(d) for d in case.dtypes.get(name, ())}
        it = (v for v in it if not (v[0].startswith("dtype-") and np.dtype(v[0][6:]) in allowed))
    elif isinstance(value, bool):
        it = bool_variants(value)
    elif isinstance(value, numbers.Integral):
        it = int_variants(int(value))
    elif isinstance(value, float):
        it = float_variants(value)
    elif isinstance(value, str):
        it = str_variants(value)
    elif isinstance(value, tuple) and value and all(isinstance(v, numbers.Integral) for v in value):
        it = size_variants(value)
    elif isinstance(value, Path):
        it = path_variants(tmp)
    elif callable(value):
        it = callable_variants()
    else:
        it = iter(())
    yield from it
    yield from case.extra.get(name, ())


# --------------------------------------------------------------------------------------------
# One bounded call and its verdict
# --------------------------------------------------------------------------------------------
class CaseTimeout(BaseException):
    """Raised by the alarm: a BaseException, so ``except Exception`` in the code under test cannot swallow it."""


def _alarm(signum: int, frame: Any) -> None:
    raise CaseTimeout()


def _address_space() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def bounded_call(fn: Callable[[], Any]) -> Any:
    """``fn()`` under :data:`TIME_LIMIT_S` and :data:`MEMORY_CAP` (new address space)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = _address_space() + MEMORY_CAP
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    previous = signal.signal(signal.SIGALRM, _alarm)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    signal.setitimer(signal.ITIMER_REAL, TIME_LIMIT_S)
    try:
        return fn()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
        signal.signal(signal.SIGALRM, previous)


def digest(value: Any) -> Any:
    """A comparable host form of a result: arrays as (dtype, shape, bytes), containers walked."""
    if portcv.backends.owner_of(value) is not None and not isinstance(value, (bool, int, float)):
        host = np.asarray(portcv.to_numpy(value))
        return ("array", host.dtype.str, host.shape, zlib.crc32(np.ascontiguousarray(host).tobytes()))
    if isinstance(value, (np.generic, int, float, str, bytes, bool, type(None))):
        return value
    if isinstance(value, dict):
        return {k: digest(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value).__name__, [digest(v) for v in value]
    if dataclasses.is_dataclass(value):
        return type(value).__name__, {f.name: digest(getattr(value, f.name)) for f in dataclasses.fields(value)}
    return type(value).__name__


def _checksums(args: dict[str, Any]) -> dict[str, int]:
    return {k: zlib.crc32(np.ascontiguousarray(v).tobytes()) for k, v in args.items()
            if isinstance(v, np.ndarray) and v.dtype != object and v.size <= 1 << 24}


def _names_argument(message: str, name: str, case: Case) -> bool:
    words = (name,) + case.names.get(name, ())
    return any(w in message for w in words)


def _portcv_error(exc: BaseException) -> bool:
    return type(exc).__module__.split(".")[0] == "portcv"


def run_case(case: Case, name: str, label: str, value: Any, expect: str, expected: Any) -> Outcome:
    """Call ``case`` with ``name`` replaced by ``value`` and judge the outcome."""
    args = dict(case.args)
    args[name] = value
    before = _checksums(args)
    positional = [args.pop(p) for p in case.positional]
    raised: BaseException | None = None
    result: Any = None
    try:
        result = bounded_call(lambda: case.call(*positional, **args))
    except CaseTimeout:
        return Outcome(name, label, "timeout", f"over {TIME_LIMIT_S} s")
    except MemoryError as exc:
        return Outcome(name, label, "memory", f"tried to allocate over the cap: {exc}")
    except Exception as exc:  # noqa: BLE001 - judged below
        raised = exc
    try:
        if _checksums(dict(case.args, **{name: value})) != before:
            return Outcome(name, label, "mutated", "an input array changed")
        if raised is not None:
            return _judge_error(case, name, label, value, expect, raised)
        if expect == "same" or (expect == "convert" and (name, label) not in case.accept):
            same = digest(result) == expected
            return Outcome(name, label, "same" if same else "garbage",
                           "" if same else "differs from the valid call's result")
        if expect == "batch":
            return _judge_batch(name, label, result, expected)
        reason = case.accept.get((name, label))
        if reason is not None:
            return Outcome(name, label, "accept", reason)
        return Outcome(name, label, "garbage", f"returned {digest(result)!r:.200} instead of an error")
    finally:
        if raised is None and case.cleanup is not None:
            case.cleanup(result)


def _judge_error(case: Case, name: str, label: str, value: Any, expect: str, exc: BaseException) -> Outcome:
    message = f"{type(exc).__name__}: {exc}"
    if "RESOURCE_EXHAUSTED" in message or "Out of memory" in message:
        return Outcome(name, label, "memory", message[:300])
    if expect not in ("error", "convert"):
        return Outcome(name, label, "refused-valid", message[:300])
    is_path = isinstance(value, (str, Path))
    clean_type = isinstance(exc, (ValueError, TypeError)) or _portcv_error(exc) or (isinstance(exc, OSError) and is_path)
    if not clean_type:
        return Outcome(name, label, "unclean-error", message[:300])
    if not (_names_argument(str(exc), name, case) or (is_path and str(value) in str(exc))):
        return Outcome(name, label, "unnamed-error", message[:300])
    return Outcome(name, label, "error")


def _judge_batch(name: str, label: str, result: Any, expected: Any) -> Outcome:
    """A 5-D stack of the valid input: every item of the result must be the valid result."""
    several = isinstance(expected, tuple) and len(expected) == 2 and expected[0] in ("tuple", "list")
    wants = expected[1] if several else [expected]
    outs = result if several else (result,)
    for out, want in zip(outs, wants):
        if not (isinstance(want, tuple) and want[:1] == ("array",)):
            continue
        host = np.asarray(portcv.to_numpy(out))
        shape = want[2]
        if host.ndim < len(shape) or host.shape[host.ndim - len(shape):] != shape:
            return Outcome(name, label, "garbage", f"a batch of the valid input gave shape {host.shape}")
        items = [np.asarray(item) for item in host.reshape((-1,) + shape)]
        if len(items) < 2 or any(digest(item) != want for item in items):
            return Outcome(name, label, "garbage", "a batch of the valid input did not give a batch of its result")
    return Outcome(name, label, "same")


def sweep(case: Case, tmp: Path, *, new_shapes: bool = True) -> list[Outcome]:
    """Every variant of every parameter of ``case``; the valid call first (it must succeed).

    ``new_shapes=False`` leaves out the batch variants, which JAX would compile again (the
    backends' equality on batches is the property tests' job; refusals are checked everywhere)."""
    expected: Any = None
    if case.base:
        positional = [case.args[p] for p in case.positional]
        rest = {k: v for k, v in case.args.items() if k not in case.positional}
        result = bounded_call(lambda: case.call(*positional, **rest))
        expected = digest(result)
        if case.cleanup is not None:
            case.cleanup(result)
    outcomes = []
    for name, value in case.args.items():
        if name in case.skip:
            continue
        for label, bad, expect in variants(case, name, value, tmp):
            if (not case.base and expect != "error") or (expect == "batch" and not new_shapes):
                continue
            outcomes.append(run_case(case, name, label, bad, expect, expected))
    return outcomes
