#!/usr/bin/env bash
# Fetch, on a machine with network, what tools/gpu_check.sh installs on an offline CUDA machine
# (Python 3.12, x86-64; its image has NumPy, SciPy, scikit-image, CuPy, JAX, pytest, pytest-xdist,
# hypothesis, pandas and Pillow): the test extra's other packages as wheels in .whl/, and OpenCV
# 4.13's contrib build (ximgproc, face; the machine's own OpenCV 5 has no cascade classifier) as
# .whl/cv2site.tar.xz, its unpacked wheel compressed to 44 MB: the 67 MB wheel is over the device
# tool's 64 MiB carry. PyAV (35 MB) does not fit beside it; the video-file tests skip there with
# their reason. Everything together is about 54 MB. VIDEO=1 makes a second folder, .whl-video/
# (about 41 MB, carried in a call of its own): the same wheels without OpenCV, and PyAV with
# PyNvVideoCodec unpacked into .whl-video/video-site.tar.xz, for the video and NVDEC tests.
#   bash tools/fetch_gpu_wheels.sh          # test suite
#   ASV=1 bash tools/fetch_gpu_wheels.sh    # plus asv and what it needs (tools/gpu_asv.sh)
#   VIDEO=1 bash tools/fetch_gpu_wheels.sh  # then: WHEELS=.whl-video PYTEST_ARGS="tests/video ..." \
#                                           #   bash tools/gpu_check.sh tests
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-3.12}
plat=(--platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64)
dl() { python3 -m pip download -q --only-binary=:all: --python-version "$PY" --implementation cp "${plat[@]}" "$@"; }
tmp=$(mktemp -d)
dl -d "$tmp" "dask[array]>=2024.12" "distributed>=2024.12" "zarr>=3" "tifffile>=2023.7" "xarray>=2024.1" \
  "pytest-timeout>=2.2" imageio tqdm rich array-api-compat array-api-extra
mkdir -p .whl
# The machine's own: keep one version of each (two stop the install).
for w in "$tmp"/*.whl; do
  case "$(basename "$w")" in
    numpy-*|pytest-[0-9]*|pluggy-*|iniconfig-*|pillow-*|pandas-*|packaging-*|typing_extensions-*|python_dateutil-*|tzdata-*) ;;
    *) cp "$w" .whl/ ;;
  esac
done
dl --no-deps -d "$tmp/cv2" "opencv-contrib-python-headless>=4.13,<4.14"
mkdir -p "$tmp/cv2/site"
(cd "$tmp/cv2/site" && unzip -q ../opencv_contrib_python_headless-*.whl && tar cJf "$OLDPWD/.whl/cv2site.tar.xz" --exclude='*.dist-info' .)
if [ -n "${ASV:-}" ]; then
  dl --no-deps -d .whl asv==0.6.6 asv-runner==0.3.2 json5 tabulate pympler lazy-importer virtualenv distlib platformdirs \
    python-discovery filelock
fi
if [ -n "${VIDEO:-}" ]; then
  mkdir -p .whl-video "$tmp/video/site"
  cp .whl/*.whl .whl-video/
  dl --no-deps -d "$tmp/video" "av>=12" "pynvvideocodec>=2.2,<3"
  # Every importable folder of the two wheels, the libraries they vendor included (PyNvVideoCodec
  # keeps its CUDA runtime in "pynvvideocodec./", on its extensions' RPATH); not the FFmpeg
  # sources, samples and metadata.
  (cd "$tmp/video/site" && for w in ../*.whl; do unzip -qo "$w"; done \
    && rm -rf ./*.dist-info ./*.data samples benchmarks \
    && tar cJf "$OLDPWD/.whl-video/video-site.tar.xz" .)
  du -sh .whl-video
fi
rm -rf "$tmp"
du -sh .whl
