"""The README's Python examples run as written, on any machine (CPU only too)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)


def test_the_readme_has_python_examples():
    assert BLOCKS


@pytest.mark.parametrize("code", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_readme_example_runs(code):
    import portcv

    pytest.importorskip("jax", reason="the example switches to JAX (pip install 'portcv[jax]')")
    before = portcv.backend().name
    try:
        exec(compile(code, str(README), "exec"), {"__name__": "readme"})
    finally:
        portcv.use(before)
