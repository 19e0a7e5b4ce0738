#!/usr/bin/env bash
# Runs the cargo-fuzz targets under fuzz/ (issue 17): every reader and the PTX frontend with the
# warp emulator. Usage: scripts/fuzz.sh [RUNS] [TARGET...]  (default 10,000,000 runs each, all
# targets). Needs cargo-fuzz (`cargo install cargo-fuzz`); the machine's one stable toolchain
# builds the sanitizer instrumentation with RUSTC_BOOTSTRAP=1. FUZZ_SECONDS caps each target's time;
# FUZZ_SANITIZER=none drops AddressSanitizer (safe Rust: panics and overflows still abort), 2-3x faster.
#
# Seed corpora are made from the project's own fixtures: each reader target takes a first byte
# that picks the reader, so every seed file is written once per route byte.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
runs="${1:-10000000}"
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(measurements toml_inputs device_files tune_inputs parse_ptx)
root=..

# seed TARGET ROUTES FILE... : copies of each file prefixed with each route byte.
seed() {
  local t=$1 routes=$2; shift 2
  mkdir -p "corpus/$t"
  local f r
  for f in "$@"; do
    [ -f "$f" ] || continue
    for ((r = 0; r < routes; r++)); do
      { printf "\\$(printf %03o "$r")"; head -c 8192 "$f"; } > "corpus/$t/$(basename "$f").$r"
    done
  done
}
seed measurements 12 $(find $root/tests/fixtures/measurements $root/examples -name '*.csv' -o -name '*.json' -o -name '*.txt' -o -name '*.log' 2>/dev/null | head -80)
seed toml_inputs 10 $(find $root/data/analytical $root/examples $root/tests/fixtures/suite $root/tests/fixtures -maxdepth 2 -name '*.toml' 2>/dev/null | head -80)
seed device_files 7 $(find $root/data/devices $root/tests/fixtures/device-tools -type f 2>/dev/null | head -60)
seed tune_inputs 2 $(find $root/tests/fixtures/tune $root/examples -name '*.json' 2>/dev/null | head -40)
mkdir -p corpus/parse_ptx
cp -n $root/tests/fixtures/ptx/*.ptx $root/tests/fixtures/ptx/shapes/*.ptx corpus/parse_ptx/ 2>/dev/null || true

for t in "${targets[@]}"; do
  echo "== $t: $runs runs"
  start=$(date +%s)
  # The PTX target parses, analyses and emulates each input: under coverage instrumentation an
  # 8 KiB module costs ~1.7 ms (600 runs/s), 1 KiB ones ~0.25 ms (4,000 runs/s), so it gets
  # 1 KiB inputs (longer seeds are cut; PTX_MAX_LEN overrides).
  max_len=8192
  [ "$t" != parse_ptx ] || max_len="${PTX_MAX_LEN:-1024}"
  RUSTC_BOOTSTRAP=1 cargo fuzz run -O ${FUZZ_SANITIZER:+-s $FUZZ_SANITIZER} "$t" "corpus/$t" -- -runs="$runs" ${FUZZ_SECONDS:+-max_total_time=$FUZZ_SECONDS} -max_len="$max_len" \
    -rss_limit_mb=2048 -timeout=20 -print_final_stats=1 2>&1 | grep -E "^(stat::|==|INFO: Running|Done|#[0-9]+ *DONE)|SUMMARY|panicked|ERROR" || true
  echo "== $t: $(( $(date +%s) - start )) s"
done
