#!/usr/bin/env bash
# The Python package's tests (run by scripts/test.sh; alone: bash scripts/test-python.sh).
# In a fresh virtual environment (target/python-test-venv): install the package with the
# README's command (`pip install ./python`), then kernel_tuner, ray and pytest from PyPI, then
# run python/tests: predict, rank, the Kernel Tuner simulation-mode test against the
# development caches in ../shared/data/tuning (skipped with a message when absent) and the Ray
# test on a local Ray instance.
# The extension is built into this workspace's target/ folder (CARGO_TARGET_DIR), so a release
# build of the workspace (cargo test --release) has already compiled most of its dependencies.
# NVRTC comes from the project's GPU-less toolchain (.gpu-toolchain, or GPU_TC), found by
# kerneltime's own discovery (crates/core/src/compile/locate.rs).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
started=$(date +%s)
if [ -z "${GPU_TC:-}" ] && [ -d "$root/.gpu-toolchain" ]; then
  export GPU_TC="$root/.gpu-toolchain"
fi
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
venv="${KERNELTIME_PY_VENV:-$root/target/python-test-venv}"
rm -rf "$venv"
python3 -m venv "$venv"
# shellcheck disable=SC1091
. "$venv/bin/activate"
export PIP_DISABLE_PIP_VERSION_CHECK=1
build_started=$(date +%s)
pip install --quiet ./python
echo "note: pip install ./python took $(( $(date +%s) - build_started )) s"
pip install --quiet kernel_tuner ray pytest
python -m pytest python/tests -q -rs -s -p no:cacheprovider
echo "note: scripts/test-python.sh took $(( $(date +%s) - started )) s"
