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
