#!/usr/bin/env bash
# Fetch, on a machine with network, the wheels tools/gpu_check.sh installs on an offline CUDA
# machine (Python 3.12, x86-64): what its image lacks, and OpenCV 4.13 (its own OpenCV 5 has no
# cascade classifier and is not the version our oracle notes were checked against). The plain
# build, not the test extra's contrib build: the contrib wheel (66.6 MB) does not fit the device
# tool's 64 MiB carry, so the ximgproc/face peer tests skip there with their reason.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-3.12}
plat=(--platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64)
dl() { python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$PY" --implementation cp "${plat[@]}" -d .whl "$@"; }
dl array-api-compat==1.16.0 array-api-extra==0.11.5 opencv-python-headless==4.13.0.92
dl av==16.0.1
dl asv==0.6.6 asv-runner==0.3.2 json5 tabulate pympler importlib-metadata lazy-importer virtualenv distlib platformdirs python-discovery
ls -la .whl
