#!/usr/bin/env bash
# The project's test command. It installs what the tests need, then runs every test:
# - the GPU-less CUDA toolchain (idempotent, ~20 s the first time) for the occupancy oracle and
#   the PTX fixture checks;
# - Debian's Chromium (~70 s the first time) for the headless check of the HTML report.
# Both installs are skipped when already present. The tools installed here are required:
# KERNELTIME_REQUIRE_TOOLS makes a test that cannot find them fail instead of skipping (a failed
# Chromium install is said, and only then is Chromium left out of the list).
# Then: every test target (one integration-test binary, tests/it), the doc examples, the docs
# built with warnings as errors, and the Python package (scripts/test-python.sh: a fresh virtual
# environment, `pip install ./python` reusing target/, Kernel Tuner and Ray from PyPI).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-gpu-toolchain.sh
tools="toolchain,gxx,chromium"
if ! command -v chromium >/dev/null 2>&1 && [ "${KERNELTIME_SKIP_CHROMIUM:-0}" != 1 ]; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq \
      --no-install-recommends chromium >/dev/null; } \
    || echo "note: Chromium could not be installed; the HTML report check will be skipped"
fi
command -v chromium >/dev/null 2>&1 || tools="toolchain,gxx"
export KERNELTIME_REQUIRE_TOOLS="${KERNELTIME_REQUIRE_TOOLS:-$tools}"
cargo test --release --workspace --all-targets
cargo test --release --workspace --doc
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --quiet
bash scripts/test-python.sh
