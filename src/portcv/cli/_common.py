"""Helpers shared by the command-line tools: option types, backend lists, progress bars, tables."""

from __future__ import annotations

import argparse
import math
from typing import Any, Iterable, Iterator


# --------------------------------------------------------------------------------------------
# Progress bars and tables
# --------------------------------------------------------------------------------------------
def with_progress(frames: Iterable[Any], *, total: int | None, desc: str, enabled: bool = True) -> Iterable[Any]:
    """``frames`` behind a tqdm progress bar (the CLI commands' bar), unless disabled or tqdm is missing.

    The bar starts once the first frame has been processed (when the second one is asked for),
    counting that frame as done: the first frame carries the warm-up (kernel compilation, JAX
    tracing), and a bar that timed it would show the compiler's rate and an ETA many times the
    run's.
    """
    if not enabled:
        return frames
    try:
        from tqdm import tqdm
    except ImportError:
        return frames
    return _after_the_first(tqdm, frames, total=total, desc=desc)

#: Frames the video commands decode ahead of their kernels (``VideoReader``'s ``prefetch``).
DECODE_AHEAD = 4
#: How the commands name the decoder that ran (``VideoReader.decoder``).
DECODERS = {"cpu": "CPU (PyAV)", "gpu": "GPU (NVDEC)"}


def _after_the_first(tqdm: Any, frames: Iterable[Any], *, total: int | None, desc: str) -> Iterator[Any]:
    iterator = iter(frames)
    for first in iterator:
        yield first
        break
    else:
        return
    bar = tqdm(total=total, initial=1, desc=desc, unit="frame", leave=False)  # rate: frames after the first
    try:
        for frame in iterator:
            yield frame
            bar.update()  # the consumer asks for the next frame: this one is done
    finally:
        bar.close()


def container_frame_count(path: Any) -> int | None:
    """The frame count a video file's header records (PyAV), or None where it records none.

    Only the header is read: a progress bar's total, never a promise (an unreadable file is
    reported by the decoder, not here).
    """
    try:
        import av

        with av.open(str(path)) as container:
            count = int(container.streams.video[0].frames)
    except Exception:  # noqa: BLE001 - no count is a valid answer; decoding reports the real error
        return None
    return count if count > 0 else None


def progress_total(path: Any, frames: int | None) -> int | None:
    """The frames a run over a video file will see: ``--frames``, capped by the container's count."""
    count = container_frame_count(path)
    if frames is None or count is None:
        return frames if count is None else count
    return min(frames, count)


def print_table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> None:
    """The CLI commands' timing table: columns padded to fit, the first two left-aligned."""
    table = [header, *rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    for r in table:
        print("  ".join(v.ljust(w) if i < 2 else v.rjust(w) for i, (v, w) in enumerate(zip(r, widths))).rstrip())


# --------------------------------------------------------------------------------------------
# Backends named on the command line
# --------------------------------------------------------------------------------------------
def backend_names(text: str | None, option: str, *, single: bool = False) -> list[str]:
    """The registered backends a comma-separated option names (every registered one for None).

    A name that is not registered is a typo (``cuda`` for ``cupy``), refused before any work
    with a ``ValueError`` (``portcv X: error: ...``, exit code 2) that lists the registered
    names; a registered backend that cannot run here is left to the command (skipped or refused
    with the install hint).
    """
    import portcv

    registered = portcv.backends.registered_backends()
    if text is None:
        return registered
    names = [n.strip() for n in str(text).split(",") if n.strip()]  # as given: a repeat runs twice
    if not names:
        raise ValueError(f"{option} must name a backend, got {text!r}; registered: {', '.join(registered)}")
    unknown = [n for n in names if n not in registered]
    if unknown:
        raise ValueError(f"unknown backend(s) {', '.join(unknown)} in {option}; registered: {', '.join(registered)}")
    if single and len(names) > 1:
        raise ValueError(f"{option} takes one backend, got {text!r}")
    return names


# --------------------------------------------------------------------------------------------
# Option types: argparse turns their ArgumentTypeError into `portcv X: error: argument --opt: ...`
# --------------------------------------------------------------------------------------------
def parse_size(text: str) -> tuple[int, int]:
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"size must look like 1920x1080, got {text!r}") from None
    if w < 1 or h < 1 or w * h > 8192 * 8192:
        raise argparse.ArgumentTypeError(f"size must be between 1x1 and 8192x8192 pixels, got {text!r}")
    return w, h


class Parser(argparse.ArgumentParser):
    """``argparse`` with one-line errors: ``portcv X: error: ...`` and exit code 2 (no usage dump)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _whole_number(text: str, low: int, what: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = low - 1
    if value < low:
        raise argparse.ArgumentTypeError(f"must be a whole number {what}, got {text!r}")
    return value


def positive_int(text: str) -> int:
    """An ``int`` command-line value >= 1."""
    return _whole_number(text, 1, ">= 1")


def non_negative_int(text: str) -> int:
    """An ``int`` command-line value >= 0 (0: the option's "no limit" or "any")."""
    return _whole_number(text, 0, ">= 0")


def _finite_number(text: str, *, positive: bool) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0 or (positive and value == 0):
        raise argparse.ArgumentTypeError(f"must be a finite number {'> 0' if positive else '>= 0'}, got {text!r}")
    return value


def positive_float(text: str) -> float:
    """A finite ``float`` command-line value > 0 (a frame rate of a written video)."""
    return _finite_number(text, positive=True)


def non_negative_float(text: str) -> float:
    """A finite ``float`` command-line value >= 0 (seconds, or a rate where 0 means unpaced)."""
    return _finite_number(text, positive=False)


def port(text: str, *, low: int = 1) -> int:
    """A TCP port number, ``low`` (1) to 65535."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not low <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be a TCP port in [{low}, 65535], got {text!r}")
    return value


def port_or_any(text: str) -> int:
    """A TCP port number, or 0 for any free one."""
    return port(text, low=0)
