#!/usr/bin/env bash
# Leave-one-GPU-out transfer (issue 14): for every GPU of a measurement file, calibrate each model
# on the other GPUs' rows, one calibration per scope, and evaluate it on the held-out GPU's rows;
# the uncalibrated models are evaluated on the same rows. Prints a Markdown table of MAPE % (eq 19:
# mean over kernels of the mean relative error) per model x scope (rows) and held-out GPU
# (columns), with the rows each cell left out, and writes every calibration, evaluation JSON and the
# table into OUT_DIR.
#
# `trace` in MODELS (not by default: about 16 minutes on this 2-core machine) runs from PTX: the
# NCA suite of scripts/accuracy.sh (the nine kernels compiled from their sources, a seeded
# sample of (size, block) configurations) split by GPU, `calibrate --model trace --suite` on
# the four, `evaluate --suite --calibration` on the fifth, per scope. Its rows are that sample,
# not every row of the measurement file, and the table says so.
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
counter_models = [m for m in models if m != "trace"]
for gpu in gpus if counter_models else []:
    train, test = f"{out}/train-without-{gpu}.csv", f"{out}/test-{gpu}.csv"
    write(train, lambda g: g != gpu)
    write(test, lambda g: g == gpu)
    text, err = run([exe, "evaluate", "--measurements", test, "--model", "all", "--json"])
    uncal = json.loads(text) if text else None
    for model in counter_models:
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


def nca_groups():
    """The NCA groups of the accuracy harness's suite (its header, then each group's text)."""
    harness = f"{out}/harness"
    env = dict(os.environ, SUITE_ONLY="1", NO_README="1", KERNELTIME_BIN=exe)
    subprocess.run(["scripts/accuracy.sh", harness], env=env, check=True, capture_output=True)
    text = open(f"{harness}/development.toml").read()
    head, *groups = text.split("\n[[group]]")
    return head, [g for g in groups if 'dataset = "nca"' in g]


def suite_for(head, groups, devices, path):
    """The groups restricted to the measurement rows of `devices` (labels of the file)."""
    keep = ", ".join(f'"{d}"' for d in devices)
    with open(path, "w") as f:
        f.write(head)
        for g in groups:
            f.write("\n[[group]]" + g.replace("where = { app = ", f"where = {{ device = [{keep}], app = ", 1))


def suite_mape(text, name):
    """MAPE % of `name` on the one device of a suite evaluation (JSON summary)."""
    groups = [g for g in json.loads(text)["groups"] if g["model"] == name and g["device"] != "all"]
    n = sum(g["n"] for g in groups)
    return sum(g["mape"] * g["n"] for g in groups) / n * 100.0 if n else None


def split_scopes(cal_text, scope):
    """The calibration file with only the groups of one scope."""
    head, *groups = cal_text.split("\n[[groups]]")
    head = "\n".join(f'scopes = ["{scope}"]' if l.startswith("scopes = ") else l
                     for l in head.split("\n"))
    return head + "".join("\n[[groups]]" + g for g in groups if f'scope = "{scope}"' in g)


if "trace" in models:
    head, groups = nca_groups()
    suite_flags = ["--cache-dir", f"{out}/harness/cache", "--launch-budget", "128000000"]
    for gpu in gpus:
        # Beside the harness suite: its groups name the stub header directory relative to it.
        train = f"{out}/harness/trace-train-without-{gpu}.toml"
        test = f"{out}/harness/trace-test-{gpu}.toml"
        suite_for(head, groups, [g for g in gpus if g != gpu], train)
        suite_for(head, groups, [gpu], test)
        cal_all = f"{out}/trace-all-without-{gpu}.toml"
        start = time.time()
        _, err = run([exe, "calibrate", "--model", "trace", "--suite", train, "--scope",
                      ",".join(scopes), "-o", cal_all, *suite_flags, *extra])
        secs = time.time() - start
        # One file per scope, all evaluated in one run (the emulations dominate its time).
        cals = {}
        if err is None:
            for scope in scopes:
                cals[scope] = f"{out}/trace-{scope}-without-{gpu}.toml"
                with open(cals[scope], "w") as f:
                    f.write(split_scopes(open(cal_all).read(), scope))
            flags = [x for scope in scopes for x in ("--calibration", cals[scope])]
            text, err = run([exe, "evaluate", "--suite", test, "--model", "trace", "--json",
                             *flags, *suite_flags])
            if text:
                with open(f"{out}/trace-on-{gpu}.json", "w") as f:
                    f.write(text)
                table.setdefault(("trace", "uncalibrated"), {})[gpu] = (
                    suite_mape(text, "trace"), 0, None)
        for scope in scopes:
            seconds[("trace", scope)] = seconds.get(("trace", scope), 0.0) + secs / len(scopes)
            cell = (None, 0, err)
            if err is None:
                stem = os.path.basename(cals[scope])[:-len(".toml")]
                cell = (suite_mape(text, f"trace (calibrated {stem})"), 0, None)
            table.setdefault(("trace", scope), {})[gpu] = cell
            print(f"{gpu}: trace {scope}: {cell[0] if cell[0] is None else round(cell[0], 1)} %"
                  f" ({time.time() - start:.1f} s)", file=sys.stderr)


def fmt(cell):
    mape, left, err = cell
    if mape is None:
        return "-" if err is None else "error"
    return f"{mape:.1f}" + (f" ({left} left out)" if left else "")


lines = ["| model | scope | " + " | ".join(gpus) + " | calibrate s (all folds) |",
         "|---|---|" + "---|" * len(gpus) + "---|"]
def order(item):
    (model, scope), _ = item
    return models.index(model), -1 if scope == "uncalibrated" else scopes.index(scope)


for (model, scope), cells in sorted(table.items(), key=order):
    secs = f"{seconds[(model, scope)]:.0f}" if (model, scope) in seconds else ""
    lines.append(f"| {model} | {scope} | " + " | ".join(fmt(cells.get(g, (None, 0, None))) for g in gpus) + f" | {secs} |")
errors = [(k, g, c[2]) for k, cells in table.items() for g, c in cells.items() if c[2]]
md = "\n".join(lines) + "\n"
md += ("\nMAPE % on the held-out GPU (eq 19: per kernel the mean |t_pred - t_meas| / t_meas, then "
       "the mean over kernels, weighted here by rows when a GPU has several catalogue entries); "
       "calibrations are fitted on the other GPUs only.\n")
if "trace" in models:
    md += ("\ntrace rows: the accuracy harness's NCA sample (scripts/accuracy.sh: the nine kernels "
           "compiled from source, 20 (size, block) configurations per kernel and GPU, seeded), "
           "not every row of the file; MAPE over those launches; calibrated on the other GPUs' "
           "samples (`calibrate --suite`: launch overhead and time scale, latency scales held).\n")
for (model, scope), g, e in errors:
    md += f"\n- {model} {scope} on {g}: {e}"
with open(f"{out}/transfer.md", "w") as f:
    f.write(md)
print(md)
EOF
