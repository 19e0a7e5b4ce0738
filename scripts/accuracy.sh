#!/usr/bin/env bash
# accuracy.sh [BUILD_DIR] - the accuracy harness of the PTX path on the development data.
#
# Builds measurement suites from ../shared (or $SHARED) into BUILD_DIR (default
# target/accuracy-harness; never committed):
#   nca          the nine NCA kernels of amaris2018 (sources in its kernels/, compiled with nvcc
#                and a stub header) with their measured rows on the five development GPUs:
#                $NCA_SAMPLE (size, block) configurations per kernel (seeded; default 20),
#                each with its rows on every GPU, so each launch is emulated once
#   convolution  $TUNING_SAMPLE configurations (seeded; default 300) of each Kernel Tuner cache
#   pnpoly       likewise; `points` and `bitmap` are mapped host memory, `d_vertices` zero
# runs `kerneltime evaluate --suite` on them (compilations cached in BUILD_DIR/cache), and
# regenerates the accuracy section of README.md between its markers, adding one row to the
# history table (date, commit, headline figures). Needs the GPU toolchain
# (scripts/install-gpu-toolchain.sh) and python3. Without ../shared it prints why and exits 0.
#   NO_README=1        leave README.md alone (print the tables only)
#   SUITE_ONLY=1       write BUILD_DIR/development.toml and stop (scripts/transfer.sh uses it)
#   KERNELTIME_BIN=... use this binary instead of building the release one
#   LAUNCH_BUDGET=N    evaluate --launch-budget (default 128000000)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
SHARED="${SHARED:-../shared}"
DATA="$SHARED/data"
AMARIS="$DATA/measurements/amaris2018"
TUNING="$DATA/tuning"
if [ ! -f "$AMARIS/measurements_dev.csv.gz" ] || [ ! -d "$TUNING/caches" ]; then
  echo "accuracy.sh: skipped: the development data ($AMARIS, $TUNING) is absent"
  exit 0
fi
AMARIS="$(cd "$AMARIS" && pwd)"
TUNING="$(cd "$TUNING" && pwd)"
OUT="${1:-target/accuracy-harness}"
mkdir -p "$OUT/stub"
OUT="$(cd "$OUT" && pwd)"
NCA_SAMPLE="${NCA_SAMPLE:-20}"
TUNING_SAMPLE="${TUNING_SAMPLE:-300}"
SEED="${SEED:-2026}"
# subSeqMax's largest sizes issue ~40-100 M warp instructions over the sampled blocks: above
# the 32 M default of predict, within this machine's memory (2 launches at a time).
LAUNCH_BUDGET="${LAUNCH_BUDGET:-128000000}"

if [ -n "${KERNELTIME_BIN:-}" ]; then
  BIN="$KERNELTIME_BIN"
else
  cargo build --release --quiet --bin kerneltime
  BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/kerneltime"
fi

# The NCA sources are whole programs: a stub for the profiler header CUDA 13 does not ship
# (and for cudaThreadExit, which it removed) is enough for nvcc -ptx.
cat > "$OUT/stub/cuda_profiler_api.h" <<'EOF'
#include <cuda_runtime_api.h>
extern "C" {
cudaError_t cudaProfilerStart(void);
cudaError_t cudaProfilerStop(void);
cudaError_t cudaThreadExit(void);
}
EOF

nca_group() { # nca_group APP ENTRY_ARGS DEFINES [WHERE_EXTRA]
  cat <<EOF

[[group]]
dataset = "nca"
measurements = "$AMARIS/measurements_dev.csv.gz"
where = { app = "$1"${4:-} }
sample = $NCA_SAMPLE
sample_by = ["input_size_1", "block_x"]
seed = $SEED
[group.case]
name = "$1"
source = "$AMARIS/kernels/$1.cu"
compiler = "nvcc"
include = ["stub"]
defines = { $3 }
args = { $2 }
registers = "{regs_per_thread}"
shared_bytes = "{static_smem_bytes}"
dynamic_shared_bytes = "{dynamic_smem_bytes}"
EOF
}

tuning_group() { # tuning_group DATASET CACHE
  local src grid block defines args mapped=""
  case "$1" in
    convolution)
      src=convolution.cu
      grid='["{(problem_size_x + block_size_x * tile_size_x - 1) / (block_size_x * tile_size_x)}", "{(problem_size_y + block_size_y * tile_size_y - 1) / (block_size_y * tile_size_y)}"]'
      block='["{block_size_x}", "{block_size_y}"]'
      defines='block_size_x = "{block_size_x}", block_size_y = "{block_size_y}", tile_size_x = "{tile_size_x}", tile_size_y = "{tile_size_y}", filter_width = "{filter_width}", filter_height = "{filter_height}", read_only = "{read_only}", use_padding = "{use_padding}"'
      args='' ;;
    pnpoly)
      src=pnpoly.cu
      grid='"{(problem_size_x + block_size_x * tile_size - 1) / (block_size_x * tile_size)}"'
      block='"{block_size_x}"'
      defines='block_size_x = "{block_size_x}", tile_size = "{tile_size}", between_method = "{between_method}", use_method = "{use_method}"'
      args='2 = "{problem_size_x}"'
      # The caches' runs never filled the constant-memory polygon (the FAIR spec lists no
      # constant argument, and a __constant__ array nobody copies to is zero), so every slope
      # is 0/0 and takes the divide's slow path: the measured times grow by about 38 scheduler
      # cycles per warp and polygon edge, against about 12 per point and edge.
      mapped='mapped_host = ["0", "1"]
data = { d_vertices = "const:0" }' ;;
  esac
  cat <<EOF

[[group]]
dataset = "$1"
measurements = "$2"
sample = $TUNING_SAMPLE
seed = $SEED
[group.case]
source = "$TUNING/kernels/$src"
options = ["-std=c++11"]
defines = { $defines }
grid = $grid
block = $block
args = { $args }
$mapped
EOF
}

SUITE="$OUT/development.toml"
{
  echo "# Generated by scripts/accuracy.sh from $SHARED (development split); do not edit."
  for app in matMul_gpu matMul_gpu_uncoalesced matMul_gpu_sharedmem matMul_gpu_sharedmem_uncoalesced \
             matrix_sum_coalesced matrix_sum_normal; do
    nca_group "$app" '3 = "{input_size_1}"' 'Tile_Width = "{block_x}"'
  done
  for edge in 8 16 32; do
    nca_group dotProd '3 = "{input_size_1}"' "Tile_Width = $edge" ", block_x = $((edge * edge))"
  done
  # vectorAdd's Tile_Width is used by host code only: one compilation serves every block size.
  nca_group vectorAdd '3 = "{input_size_1}"' 'Tile_Width = 16'
  # subSeqMax's host code passes ElemPorThread = N / 32 / 128 and n = N / 32.
  nca_group subSeqMax '2 = "{input_size_1 / 32 / 128}", 3 = "{input_size_1 / 32}"' 'Tile_Width = 16'
  for cache in "$TUNING"/caches/convolution_*.json.gz; do tuning_group convolution "$cache"; done
  for cache in "$TUNING"/caches/pnpoly_*.json.gz; do tuning_group pnpoly "$cache"; done
} > "$SUITE"
[ "${SUITE_ONLY:-0}" = 1 ] && exit 0

start=$(date +%s)
"$BIN" evaluate --suite "$SUITE" --model all --out "$OUT/result" --cache-dir "$OUT/cache" \
  --launch-budget "$LAUNCH_BUDGET" | tee "$OUT/result.txt"
wall=$(( $(date +%s) - start ))
echo "harness wall time: ${wall} s (compilations: $(jq -r '.compile | "\(.compiled) compiled, \(.from_cache) from the cache"' "$OUT/result/summary.json"))"

[ "${NO_README:-0}" = 1 ] && exit 0
commit="$(git rev-parse --short HEAD)"
git diff --quiet HEAD -- crates src data 2>/dev/null || commit="$commit+changes"
python3 - "$ROOT/README.md" "$OUT/result" "$commit" "$wall" "$NCA_SAMPLE" "$TUNING_SAMPLE" "$SEED" <<'EOF'
import json, sys, datetime, re
readme, result, commit, wall, nca_sample, tuning_sample, seed = sys.argv[1:]
s = json.load(open(f"{result}/summary.json"))
tables = open(f"{result}/accuracy.md").read().strip()
begin, end = "<!-- accuracy-harness:begin -->", "<!-- accuracy-harness:end -->"
hbegin, hend = "<!-- accuracy-history:begin -->", "<!-- accuracy-history:end -->"
text = open(readme).read()
if begin not in text or hbegin not in text:
    sys.exit("README.md has no accuracy-harness / accuracy-history markers")
c = s["compile"]
fails = "; ".join(f"{f['dataset']}: {f['cases']} x {f['reason']} ({', '.join(f['models'])})" for f in s["failures"])
date = datetime.date.today().isoformat()
section = (f"{begin}\nLast run {date} at commit `{commit}`: {s['cases']} cases ({s['launches']} distinct launches; "
           f"NCA {nca_sample} (size, block) configurations per kernel on every GPU, {tuning_sample} configurations "
           f"per tuning cache, seed {seed}), "
           f"{wall} s on this 2-core machine with {c['compiled']} of {c['units']} compilations not cached"
           + (f" (PTX by {', '.join(f'{k}: {n}' for k, n in c['ptx_by'].items())})" if c.get('ptx_by') else "")
           + ". "
           f"Errors are |predicted / measured - 1|; `all` pools a dataset's GPUs.\n"
           f"Failed cases: {fails or 'none'}.\n\n{tables}\n{end}")
text = re.sub(re.escape(begin) + ".*?" + re.escape(end), lambda m: section, text, flags=re.S)
def head(ds):
    gs = [g for g in s["groups"] if g["dataset"] == ds and g["model"] == "trace"]
    pooled = [g for g in gs if g["device"] == "all"] or gs
    g = pooled[0]
    f = lambda v, k=100: "-" if v is None else f"{v * k:.1f}"
    tau = "-" if g["kendall_tau"] is None else f"{g['kendall_tau']:.2f}"
    return f"{f(g['median_error'])} / {f(g['within_25'])} / {tau} (n {g['n']})"
datasets = []
for g in s["groups"]:
    if g["dataset"] not in datasets:
        datasets.append(g["dataset"])
row = f"| {date} | `{commit}` | " + " | ".join(head(d) for d in datasets) + f" | {wall} s |"
a, b = text.index(hbegin) + len(hbegin), text.index(hend)
body = text[a:b].strip("\n").splitlines()
header = ("| date | commit | " + " | ".join(f"{d}: trace median % / within 25 % / tau" for d in datasets)
          + " | wall |")
rule = "|---|---|" + "---|" * len(datasets) + "---|"
rows = [l for l in body if l.startswith("| 2")]
text = text[:a] + "\n" + "\n".join([header, rule] + rows + [row]) + "\n" + text[b:]
open(readme, "w").write(text)
print(f"README.md: accuracy section regenerated, history row added ({row})")
EOF
