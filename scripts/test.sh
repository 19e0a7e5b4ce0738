#!/usr/bin/env bash
# The project's test command: install the GPU-less CUDA toolchain (idempotent, ~20 s the first
# time) so that the occupancy oracle and PTX fixture checks run, then run every test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-gpu-toolchain.sh
cargo test --release --all-targets
