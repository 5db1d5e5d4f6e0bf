"""Helpers shared by the command-line tools: sizes, progress bars, tables."""

from __future__ import annotations

import argparse
from typing import Any, Iterable


# --------------------------------------------------------------------------------------------
# `portcv motion`
# --------------------------------------------------------------------------------------------
def with_progress(frames: Iterable[Any], *, total: int | None, desc: str, enabled: bool = True) -> Iterable[Any]:
    """``frames`` behind a tqdm progress bar (the CLI commands' bar), unless disabled or tqdm is missing."""
    if not enabled:
        return frames
    try:
        from tqdm import tqdm
    except ImportError:
        return frames
    return tqdm(frames, total=total, desc=desc, unit="frame", leave=False)


def print_table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> None:
    """The CLI commands' timing table: columns padded to fit, the first two left-aligned."""
    table = [header, *rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    for r in table:
        print("  ".join(v.ljust(w) if i < 2 else v.rjust(w) for i, (v, w) in enumerate(zip(r, widths))).rstrip())


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


def positive_int(text: str) -> int:
    """An ``int`` command-line value >= 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1, got {text!r}")
    return value


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
