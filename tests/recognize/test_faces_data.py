"""portcv.data.csu_faces: fetched once into the user cache (pinned sha256), clear errors
when it cannot be, never at import; the eye alignment."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import portcv
from portcv import data


def test_import_fetches_nothing(tmp_path):
    code = ("import os, portcv, portcv.data, portcv.recognize; "
            "assert not os.listdir(os.environ['PORTCV_DATA'])")
    env = {"PORTCV_DATA": str(tmp_path), "PATH": "", "PYTHONPATH": str(portcv.__path__[0] + "/..")}
    subprocess.run([sys.executable, "-c", code], check=True, env=env)


def test_missing_or_tampered_cache_is_a_clear_error(tmp_path):
    with pytest.raises(portcv.data.DataUnavailableError, match="pip download"):
        portcv.data.csu_faces(cache=tmp_path, download=False)
    (tmp_path / portcv.data.PYVISION_ARCHIVE).write_bytes(b"not the archive")
    with pytest.raises(portcv.data.DataUnavailableError, match="sha256"):
        portcv.data.csu_faces(cache=tmp_path, download=False)


def test_a_failed_fetch_names_the_command(tmp_path, monkeypatch):
    def offline(cmd, **kwargs):
        return subprocess.CompletedProcess(cmd, 1, "", "ERROR: No matching distribution (offline)")

    monkeypatch.setattr(subprocess, "run", offline)
    with pytest.raises(portcv.data.DataUnavailableError, match="pip download"):
        portcv.data.csu_faces(cache=tmp_path)


def test_bad_arguments():
    with pytest.raises(ValueError, match="size"):
        portcv.data.csu_faces(size=(4, 4), download=False)
    with pytest.raises(ValueError, match="eye_distance"):
        portcv.data.csu_faces(eye_distance=0, download=False)


@pytest.mark.parametrize("name, value", [("download", "no"), ("download", None), ("equalize_histogram", "yes")])
def test_flags_must_be_bools(tmp_path, monkeypatch, name, value):
    """Before, download="no" was truthy: it fetched the 22.9 MB archive."""
    def no_fetch(*args, **kwargs):
        raise AssertionError("csu_faces fetched or read data before checking its flags")

    monkeypatch.setattr(portcv.data, "csu_scrapshots", no_fetch)
    with pytest.raises(TypeError, match=f"{name} must be a bool"):
        portcv.data.csu_faces(cache=tmp_path, **{name: value})


def test_alignment_puts_the_eyes_in_place():
    image = np.zeros((200, 300), np.uint8)
    image[60, 100] = image[80, 180] = 255  # eyes, tilted
    out = data._align_face(image, (100, 60), (180, 80), size=(130, 150), eye_distance=50, eye_y=50)
    peaks = np.argwhere(out == out.max())
    assert out.max() > 60
    centre = peaks.mean(axis=0)
    assert abs(centre[0] - 50) < 1.5 and abs(centre[1] - 65) < 30


def test_equalization():
    pixels = np.arange(12, dtype=np.uint8).reshape(3, 4) * 20
    eq = data._equalize(pixels)
    assert eq.min() == 0 and eq.max() == 255 and (np.diff(eq.reshape(-1).astype(int)) > 0).all()


def test_the_cached_faces(tmp_path):
    try:
        faces, labels = portcv.data.csu_faces(size=(64, 80), eye_distance=30, eye_y=30, download=False)
    except portcv.data.DataUnavailableError as exc:
        pytest.skip(f"CSU ScrapShots not cached ({exc})")
    assert faces.shape == (173, 80, 64) and faces.dtype == np.uint8
    assert labels.dtype == np.int32 and np.bincount(labels).tolist().count(0) == 0 and labels.max() == 29
