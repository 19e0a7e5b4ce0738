#!/usr/bin/env bash
# Leave-one-GPU-out transfer (issue 14): for every GPU of a measurement file, calibrate each model
# on the other GPUs' rows, one calibration per scope, and evaluate it on the held-out GPU's rows;
# the uncalibrated models are evaluated on the same rows. Prints a Markdown table of MAPE % (eq 19:
# mean over kernels of the mean relative error) per model x scope (rows) and held-out GPU
# (columns), with the rows each cell left out, and writes every calibration, evaluation JSON and the
# table into OUT_DIR.
#
# Usage: scripts/transfer.sh [MEASUREMENTS] [OUT_DIR]
#   MEASUREMENTS defaults to the development split of Amaris et al. in ../shared (skipped with a
#   message when absent); OUT_DIR defaults to target/transfer.
#   MODELS and SCOPES (space-separated) narrow the run; CALIBRATE_FLAGS are passed to calibrate.
#   The binary is built into CARGO_TARGET_DIR when it is set (target/ otherwise).
set -euo pipefail
cd "$(dirname "$0")/.."
measurements="${1:-../shared/data/measurements/amaris2018/measurements_dev.csv.gz}"
out="${2:-target/transfer}"
if [ ! -f "$measurements" ]; then
  echo "skipped: $measurements is absent (the development measurements live in ../shared)"
  exit 0
fi
cargo build --release --quiet
mkdir -p "$out"
MODELS="${MODELS:-roofline mwp-cwp hong-kim wu}" SCOPES="${SCOPES:-kernel-architecture architecture global}" \
  python3 - "$measurements" "$out" "${CARGO_TARGET_DIR:-$PWD/target}/release/kerneltime" <<'EOF'
import csv, gzip, json, os, subprocess, sys, time

measurements, out, exe = sys.argv[1:4]
models = os.environ["MODELS"].split()
scopes = os.environ["SCOPES"].split()
extra = os.environ.get("CALIBRATE_FLAGS", "").split()

opener = gzip.open if measurements.endswith(".gz") else open
with opener(measurements, "rt", newline="") as f:
    rows = list(csv.reader(f))
header, body = rows[0], rows[1:]
gpu_col = header.index("gpu")
gpus = sorted({r[gpu_col] for r in body})
if len(gpus) < 2:
    sys.exit(f"{measurements}: leave-one-GPU-out needs rows of at least two GPUs, found {gpus}")


def write(path, keep):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(r for r in body if keep(r[gpu_col]))


def run(args):
    done = subprocess.run(args, capture_output=True, text=True)
    if done.returncode != 0:
        return None, done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "failed"
    return done.stdout, None


def scores(evaluation, name):
    """MAPE % and rows left out of `name` (a model, or `model (calibrated)`) in an evaluation."""
    aggs = [a for a in evaluation["aggregates"] if a["model"] == name]
    run_ = next((r for r in evaluation["runs"] if r["model"] == name), None)
    left = sum(run_["left_out"].values()) if run_ else 0
    if not aggs:
        return None, left
    n = sum(a["n"] for a in aggs)
    return sum(a["mape"] * a["n"] for a in aggs) / n * 100.0, left


table = {}  # (model, scope) -> gpu -> cell
seconds = {}  # (model, scope) -> calibrate seconds, summed over GPUs
for gpu in gpus:
    train, test = f"{out}/train-without-{gpu}.csv", f"{out}/test-{gpu}.csv"
    write(train, lambda g: g != gpu)
    write(test, lambda g: g == gpu)
    text, err = run([exe, "evaluate", "--measurements", test, "--model", "all", "--json"])
    uncal = json.loads(text) if text else None
    for model in models:
        mape, left = scores(uncal, model) if uncal else (None, 0)
        table.setdefault((model, "uncalibrated"), {})[gpu] = (mape, left, err)
        for scope in scopes:
            cal = f"{out}/{model}-{scope}-without-{gpu}.toml"
            start = time.time()
            _, err = run([exe, "calibrate", "--model", model, "--measurements", train,
                          "--scope", scope, "-o", cal, *extra])
            seconds[(model, scope)] = seconds.get((model, scope), 0.0) + time.time() - start
            cell = (None, 0, err)
            if err is None:
                text, err = run([exe, "evaluate", "--measurements", test, "--model", model,
                                 "--calibration", cal, "--json"])
                if text:
                    with open(f"{out}/{model}-{scope}-on-{gpu}.json", "w") as f:
                        f.write(text)
                    mape, left = scores(json.loads(text), f"{model} (calibrated)")
                    cell = (mape, left, None)
                else:
                    cell = (None, 0, err)
            table.setdefault((model, scope), {})[gpu] = cell
            print(f"{gpu}: {model} {scope}: {cell[0] if cell[0] is None else round(cell[0], 1)} %"
                  f" ({time.time() - start:.1f} s)", file=sys.stderr)


def fmt(cell):
    mape, left, err = cell
    if mape is None:
        return "-" if err is None else "error"
    return f"{mape:.1f}" + (f" ({left} left out)" if left else "")


lines = ["| model | scope | " + " | ".join(gpus) + " | calibrate s (all folds) |",
         "|---|---|" + "---|" * len(gpus) + "---|"]
for (model, scope), cells in table.items():
    secs = f"{seconds[(model, scope)]:.0f}" if (model, scope) in seconds else ""
    lines.append(f"| {model} | {scope} | " + " | ".join(fmt(cells[g]) for g in gpus) + f" | {secs} |")
errors = [(k, g, c[2]) for k, cells in table.items() for g, c in cells.items() if c[2]]
md = "\n".join(lines) + "\n"
md += ("\nMAPE % on the held-out GPU (eq 19: per kernel the mean |t_pred - t_meas| / t_meas, then "
       "the mean over kernels, weighted here by rows when a GPU has several catalogue entries); "
       "calibrations are fitted on the other GPUs only.\n")
for (model, scope), g, e in errors:
    md += f"\n- {model} {scope} on {g}: {e}"
with open(f"{out}/transfer.md", "w") as f:
    f.write(md)
print(md)
EOF
