#!/usr/bin/env bash
# Regenerates the README accuracy table on the amaris2018 development split: every
# counter-driven model uncalibrated, and roofline and wu calibrated per (GPU, kernel) with a
# grouped 5-fold cross-validation. Usage: scripts/accuracy-table.sh [OUT_DIR]
# Needs ../shared (the data is not part of the repository); runs the release build. Prints Markdown on stdout and
# writes the calibrations and the HTML report into OUT_DIR (default target/accuracy).
set -euo pipefail
cd "$(dirname "$0")/.."
data="${SHARED:-../shared}/data/measurements/amaris2018/measurements_dev.csv.gz"
out="${1:-target/accuracy}"
[ -f "$data" ] || { echo "missing $data (../shared absent)" >&2; exit 1; }
mkdir -p "$out"
cargo build --release --quiet
bin="${CARGO_TARGET_DIR:-target}/release/kerneltime"
for m in roofline wu; do
  "$bin" calibrate --model "$m" --measurements "$data" --scope kernel --folds 5 \
    --bootstrap 5 --max-fit-rows 500 --seed 2026 -o "$out/cal-$m.toml" > "$out/cal-$m.txt"
done
"$bin" evaluate --measurements "$data" --model all \
  --calibration "$out/cal-roofline.toml" --calibration "$out/cal-wu.toml" \
  --report "$out/report" > /dev/null
"$bin" evaluate --measurements "$data" --model all \
  --calibration "$out/cal-roofline.toml" --calibration "$out/cal-wu.toml" --markdown
