"""Channel-layout kernels: gray to RGB (replicate) and RGB <-> BGR (reverse, alpha kept last).

Pure data movement, exact by construction; the portable versions are single stacks
of channel planes, which CuPy and JAX run as one copy each, so there is no CUDA override.
"""

from __future__ import annotations

from typing import Any

from ._kernel import kernel


@kernel("gray_to_rgb")
def gray_to_rgb_kernel(xp: Any, gray: Any) -> Any:
    """``(..., H, W)`` -> ``(..., H, W, 3)`` with the value in every channel (cv2.COLOR_GRAY2RGB)."""
    return xp.stack([gray, gray, gray], axis=-1)


@kernel("swap_red_blue")
def swap_red_blue_kernel(xp: Any, img: Any) -> Any:
    """Channels 0 and 2 exchanged, a 4th (alpha) channel kept last (cv2.COLOR_RGBA2BGRA).

    A copy (``stack``; NumPy stacks channel planes faster than it gathers with ``take``), never a
    view of the input: the result may be written without touching it.
    """
    order = (2, 1, 0) if img.shape[-1] == 3 else (2, 1, 0, 3)
    return xp.stack([img[..., c] for c in order], axis=-1)
