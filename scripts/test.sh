#!/usr/bin/env bash
# The project's test command. It installs what the tests need, then runs every test:
# - the GPU-less CUDA toolchain (idempotent, ~20 s the first time) for the occupancy oracle and
#   the PTX fixture checks;
# - Debian's Chromium (~70 s the first time) for the headless check of the HTML report.
# Both installs are skipped when already present; a failed Chromium install only makes that one
# test print a skip message.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-gpu-toolchain.sh
if ! command -v chromium >/dev/null 2>&1 && [ "${KERNELTIME_SKIP_CHROMIUM:-0}" != 1 ]; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq \
      --no-install-recommends chromium >/dev/null; } \
    || echo "note: Chromium could not be installed; the HTML report check will be skipped"
fi
cargo test --release --workspace --all-targets
