#!/usr/bin/env bash
# regenerate-fixtures.sh [OUTDIR] - compile kernels/ into PTX fixtures plus ptxas -v logs.
#
# Routes (see shared/toolchain/NOTES.md):
#   nvcc 13.5        CUDA -> PTX for sm_75 and sm_90, report from ptxas 13.5
#   NVRTC 12.9       CUDA -> PTX for sm_52 and sm_61, report from ptxas 12.9
#   clang-14         CUDA (with scripts/cuda_shim.h) -> PTX for sm_61, report from ptxas 12.9
#   clang-14 OpenCL  (with scripts/ocl_shim.h) -> PTX for sm_61, report from ptxas 12.9
# Output: OUTDIR/<kernel>.<route>.ptx and OUTDIR/<kernel>.<route>.ptxas.txt
# (default OUTDIR: tests/fixtures/ptx). Needs the toolchain: source .gpu-toolchain/env.sh.
# ONLY=<kernel file stem> limits the run to one source file (used by the drift test).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
OUT="${1:-$ROOT/tests/fixtures/ptx}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
# shellcheck disable=SC1091
source "${GPU_TC:-$ROOT/.gpu-toolchain}/env.sh"
ONLY="${ONLY:-}"
NVRTC="python3 $ROOT/scripts/nvrtc_compile.py $CUDA12_NVRTC"
CLANG_CUDA="clang++-14 -x cuda --cuda-device-only -nocudainc -nocudalib -O3 -Wno-unknown-cuda-version -include $ROOT/scripts/cuda_shim.h -Xclang -target-feature -Xclang +ptx70"
CLANG_OCL="clang-14 -target nvptx64-nvidia-nvcl -x cl -cl-std=CL1.2 -O3 -include $ROOT/scripts/ocl_shim.h"

report() { # report PTXAS ARCH PTX  (also strips this checkout's and the toolchain's paths from .file lines)
  sed -i -e "s|$ROOT/||g" -e "s|$GPU_TC/|.gpu-toolchain/|g" "$3"
  "$1" -v -arch="$2" "$3" -o /dev/null 2>&1 | grep -v "Compile time" > "${3%.ptx}.ptxas.txt"
}

cd "$ROOT/kernels/cuda"  # relative source names keep machine paths out of .file lines
for src in *.cu; do
  stem="$(basename "$src" .cu)"
  [ -n "$ONLY" ] && [ "$ONLY" != "$stem" ] && continue
  for sm in 75 90; do
    p="$OUT/$stem.nvcc-sm$sm.ptx"
    nvcc -arch=sm_$sm -ptx -lineinfo "$src" -o "$p"
    report ptxas "sm_$sm" "$p"
  done
  for sm in 52 61; do
    p="$OUT/$stem.nvrtc-sm$sm.ptx"
    $NVRTC "$src" "$p" ptx --gpu-architecture=compute_$sm -lineinfo >/dev/null 2>&1
    report "$CUDA12_PTXAS" "sm_$sm" "$p"
  done
  p="$OUT/$stem.clang14-sm61.ptx"
  $CLANG_CUDA --cuda-gpu-arch=sm_61 -S "$src" -o "$p"
  report "$CUDA12_PTXAS" sm_61 "$p"
done
cd "$ROOT/kernels/opencl"
for src in *.cl; do
  stem="$(basename "$src" .cl)"
  [ -n "$ONLY" ] && [ "$ONLY" != "$stem" ] && continue
  p="$OUT/$stem.clang14-ocl-sm61.ptx"
  $CLANG_OCL -march=sm_61 -S "$src" -o "$p"
  report "$CUDA12_PTXAS" sm_61 "$p"
done
# Shapes of public PTX the emulator follows (calls into .func, a struct passed by value, a
# texture object): nvcc for sm_75 only and without line info (no machine paths), into
# OUT/shapes/, next to the hand-written shape fixtures.
cd "$ROOT/kernels/shapes"
mkdir -p "$OUT/shapes"
for src in *.cu; do
  stem="$(basename "$src" .cu)"
  [ -n "$ONLY" ] && [ "$ONLY" != "$stem" ] && continue
  p="$OUT/shapes/$stem.nvcc-sm75.ptx"
  nvcc -arch=sm_75 -ptx "$src" -o "$p"
  report ptxas sm_75 "$p"
done
echo "fixtures in $OUT"
