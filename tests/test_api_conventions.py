"""dm_pix-style checks that every public function follows the house conventions."""

from __future__ import annotations

import inspect

import pytest

import portcv

DOMAIN_MODULES = [portcv.color, portcv.filters, portcv.transform, portcv.edges, portcv.codec, portcv.draw,
                  portcv.detect]
PUBLIC = [
    (mod.__name__, name, getattr(mod, name))
    for mod in DOMAIN_MODULES
    for name in mod.__all__
    if inspect.isfunction(getattr(mod, name))
]


@pytest.mark.parametrize("module, name, fn", PUBLIC, ids=[f"{m}.{n}" for m, n, _ in PUBLIC])
def test_public_function_conventions(module, name, fn):
    params = list(inspect.signature(fn).parameters.values())
    takes_image = params and params[0].name == "image"
    if name not in {"gaussian_taps_q8", "gaussian_kernel", "pack_pyramid", "threshold_two_peaks",
                    "magnitude", "direction_sector",  # edges: these take (gx, gy)
                    "delta_encode", "delta_decode",  # codec: (frame, reference) / (reference, diffs, ...)
                    "heatmap", "noise_map", "heatmap_colors", "glyph_atlas",  # draw: (previous, current) / tables
                    # detect: a cascade file, rectangles, (detector, frames); detection itself is a method
                    "load_cascade", "group_rectangles", "detect_video"}:
        assert takes_image, f"{module}.{name}: the image comes first and is called `image`"
    for p in params:
        if p.default is not inspect.Parameter.empty and p.kind is not inspect.Parameter.KEYWORD_ONLY:
            pytest.fail(f"{module}.{name}: optional parameter {p.name!r} must be keyword-only")
    doc = inspect.getdoc(fn) or ""
    for section in ("Examples",):
        assert section in doc, f"{module}.{name}: docstring lacks {section}"
    if takes_image:
        assert "Parameters" in doc, f"{module}.{name}: docstring lacks Parameters"


def test_every_public_function_is_documented():
    from pathlib import Path

    docs = Path(__file__).resolve().parents[1] / "docs"
    text = "\n".join(p.read_text() for p in docs.glob("*.md")) if docs.is_dir() else ""
    missing = [f"{m}.{n}" for m, n, _ in PUBLIC if n not in text]
    assert not missing, f"not mentioned in docs/: {missing}"
