#!/usr/bin/env bash
# ubench.sh [OUT.toml] [DEVICE_INDEX] - measure the GPU in this machine and write a kerneltime
# device file for it, in one command. Needs a CUDA GPU, its driver and a CUDA toolkit (nvcc, CUDA 11
# or newer); nothing else.
#
#   1. compiles kernels/ubench/ubench.cu for the GPU (nvcc -arch=native; set UBENCH_ARCH=sm_XY to
#      choose, e.g. when nvcc is older than 11.6),
#   2. runs it (about ten seconds) and keeps its output in OUT.ubench.txt,
#   3. imports it: kerneltime device import --format kerneltime-ubench OUT.ubench.txt -o OUT.toml
#      (the kerneltime on PATH, or this checkout's, built with cargo).
#
# Then predict with it: kerneltime predict ... --device-file OUT.toml
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-my-gpu.toml}"
device="${2:-0}"
arch="${UBENCH_ARCH:-native}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

command -v nvcc >/dev/null 2>&1 || { echo "ubench.sh: nvcc not found; install a CUDA toolkit" >&2; exit 1; }
nvcc -O3 -arch="$arch" -o "$work/ubench" "$here/kernels/ubench/ubench.cu"

raw="${out%.toml}.ubench.txt"
"$work/ubench" "$device" > "$raw"
echo "ubench.sh: measurements in $raw"

if command -v kerneltime >/dev/null 2>&1; then
  kerneltime device import --format kerneltime-ubench "$raw" -o "$out"
else
  cargo run --quiet --release --manifest-path "$here/Cargo.toml" --bin kerneltime -- \
    device import --format kerneltime-ubench "$raw" -o "$out"
fi
