//! What `--help` says beyond each flag's own doc comment: two or three runnable examples at the
//! end of every command's help, and the values of the flags that take one of a set, built from
//! the library's registries (models, calibration scopes, measurement formats, objectives,
//! constraint quantities, built-in kernels) so that the help cannot fall behind them.
//!
//! [`command`] is the one clap command the binary parses with and that `completions` and `man`
//! render. This module does not parse values or run anything; flags keep their own parsers and
//! the library's errors.

use clap::{Command, CommandFactory};

use kerneltime::explore::best::{OBJECTIVES, QUANTITIES};
use kerneltime::fit::calibrate::Scope;
use kerneltime::fit::measurements::Format;
use kerneltime::model::lslag::{BUILTIN_APPS, BUILTIN_PLATFORMS};
use kerneltime::model::puchala::Builtin;
use kerneltime::model::ModelId;

use super::Cli;

/// Examples per command, by its path of subcommand names. Each one runs from the repository
/// root (it reads `examples/`, `data/` and `tests/fixtures/` files or built-in kernels and
/// devices); the tests parse every one.
pub const EXAMPLES: &[(&str, &[&str])] = &[
    (
        "",
        &[
            "kerneltime predict --model puchala --device \"RTX 2080 (puchala2022)\" --kernel dwt-lattice --param n=2^20 --param k=14",
            "kerneltime predict --model all --ptx examples/saxpy.ptx --entry saxpy --grid 4096 --block 256 --arg 0=1048576 --arg 1=2.0 --device L4",
            "kerneltime devices --filter ampere",
        ],
    ),
    (
        "devices",
        &[
            "kerneltime devices",
            "kerneltime devices --filter hopper --json",
        ],
    ),
    (
        "device",
        &[
            "kerneltime device show \"H100 SXM\"",
            "kerneltime device check data/devices/a100-40gb-sxm4.toml",
            "kerneltime device import --format gpgpusim-config tests/fixtures/device-tools/gpgpusim-excerpt.config -o my-gpu.toml",
        ],
    ),
    (
        "device show",
        &[
            "kerneltime device show \"H100 SXM\"",
            "kerneltime device show a100 --json",
        ],
    ),
    (
        "device check",
        &[
            "kerneltime device check data/devices/a100-40gb-sxm4.toml",
            "kerneltime device check tests/fixtures/k40-with-microbenchmarks.toml --json",
        ],
    ),
    (
        "device import",
        &[
            "kerneltime device import --format gpgpusim-config tests/fixtures/device-tools/gpgpusim-excerpt.config -o my-gpu.toml",
            "kerneltime device import --format kerneltime-ubench tests/fixtures/device-tools/kerneltime-ubench-sample.txt --name \"My GPU\"",
        ],
    ),
    (
        "occupancy",
        &[
            "kerneltime occupancy --device A100 --threads-per-block 256 --registers-per-thread 64 --shared-memory-per-block 32768",
            "kerneltime occupancy --device \"RTX 2080 Ti\" --threads-per-block 1024 --carveout l1 --json",
            "kerneltime occupancy --device \"Tesla K20c\" --threads-per-block 128 --variant wu2019",
        ],
    ),
    (
        "predict",
        &[
            "kerneltime predict --model puchala --device \"GTX 860M (puchala2022)\" --kernel dwt-matrix --param n=2^6..2^20 --param k=8",
            "kerneltime predict --model all --ptx examples/saxpy.ptx --entry saxpy --grid 4096 --block 256 --arg 0=1048576 --arg 1=2.0 --device L4",
            "kerneltime predict --source examples/saxpy.cu --entry saxpy --grid 4096 --block 256 --arg n=1048576 --arg a=2.0 --device L4",
        ],
    ),
    (
        "measurements",
        &[
            "kerneltime measurements examples/measurements.csv",
            "kerneltime measurements tests/fixtures/measurements/ktt-results.csv --format ktt-csv --json",
        ],
    ),
    (
        "best-block",
        &[
            "kerneltime best-block --inputs data/analytical/wu2019-example.toml",
            "kerneltime best-block --inputs examples/wu-kernel.toml --device A100 --out best/",
        ],
    ),
    (
        "simulate",
        &[
            "kerneltime simulate --program examples/listing1.toml --warps 3 --t-m 2",
            "kerneltime simulate --program examples/program.toml --warps 4 --t-m 2 --timeline warps.svg",
        ],
    ),
    (
        "reproduce",
        &[
            "kerneltime reproduce puchala2022 --out out/puchala2022",
            "kerneltime reproduce parra2016 --out out/parra2016 --json",
        ],
    ),
    (
        "explain",
        &[
            "kerneltime explain dwt-matrix",
            "kerneltime explain dwt-lattice --param n=1024 --param k=8,14",
        ],
    ),
    (
        "calibrate",
        &[
            "kerneltime calibrate --model roofline --measurements examples/measurements.csv -o cal-roofline.toml",
            "kerneltime calibrate --model wu --measurements examples/measurements.csv --scope device --bootstrap 20 -o cal-wu.toml",
        ],
    ),
    (
        "evaluate",
        &[
            "kerneltime evaluate --measurements examples/measurements.csv --model all",
            "kerneltime evaluate --measurements examples/measurements.csv --calibration cal-roofline.toml --report report/",
            "kerneltime evaluate --suite tests/fixtures/suite/mapped.toml --model trace --json",
        ],
    ),
    (
        "lslag",
        &[
            "kerneltime lslag fit --samples examples/lslag-samples.csv -o lslag.toml",
            "kerneltime predict --model lslag --params lslag.toml --gamma 8 --s 4096",
        ],
    ),
    (
        "lslag fit",
        &[
            "kerneltime lslag fit --samples examples/lslag-samples.csv",
            "kerneltime lslag fit --samples examples/lslag-samples.csv --platform \"My GPU\" --app saxpy -o lslag.toml --json",
        ],
    ),
    (
        "lslag cost",
        &[
            "kerneltime lslag cost --graph examples/lsla-graph.toml",
            "kerneltime lslag cost --graph examples/lsla-graph.toml --json",
        ],
    ),
    (
        "analyze",
        &[
            "kerneltime analyze examples/saxpy.ptx",
            "kerneltime analyze tests/fixtures/ptx/mtx_mul_vec.nvcc-sm75.ptx --load-cycles 60 --store-cycles 60 --json",
        ],
    ),
    (
        "sweep",
        &[
            "kerneltime sweep --model wu --inputs examples/wu-kernel.toml --device \"compute_capability>=8.0\" --param threads_per_block=32..1024:32 -o sweep.csv",
            "kerneltime sweep --model puchala --kernel dwt-matrix,dwt-lattice --t-p 5 --t-m 4 --device \"architecture=Ampere\" --param n=2^6..2^20 --param k=8,14 -o dwt.jsonl.gz",
            "kerneltime sweep --device V100 --ptx examples/saxpy.ptx --entry saxpy --grid \"(n + block_x - 1) / block_x\" --block block_x --arg 0=n --arg 1=2 --param block_x=32..1024:32 --param n=2^10..2^20 -o saxpy.csv",
        ],
    ),
    (
        "best",
        &[
            "kerneltime best --model wu --inputs data/analytical/wu2019-example.toml --param threads_per_block=32..1024:32 --constraint \"occupancy>=0.5\"",
            "kerneltime best --model wu --inputs examples/wu-kernel.toml --device \"architecture=Ampere\" --param threads_per_block=32..1024:32 --objective time-x-sms --json",
        ],
    ),
    (
        "compare",
        &[
            "kerneltime compare --model puchala --kernel dwt-matrix --kernel dwt-lattice --device \"GeForce RTX 2080 (puchala2022)\" --param n=2^6..2^20 --param k=8,14 --out cmp/",
            "kerneltime compare --rank-devices --model puchala --kernel dwt-lattice --t-p 5 --t-m 4 --param n=2^20 --param k=8 --device \"architecture=Ampere\"",
        ],
    ),
    (
        "trace",
        &[
            "kerneltime trace examples/saxpy.ptx --entry saxpy --grid 4096 --block 256 --arg 0=1048576 --arg 1=2.0",
            "kerneltime trace tests/fixtures/ptx/fdtd.nvcc-sm75.ptx --entry fdtd_o2 --grid 2,16 --block 32,4 --arg 5=64 --arg 6=64 --arg fdtd_o2_param_7=10 --json",
        ],
    ),
    (
        "tune",
        &[
            "kerneltime tune examples/saxpy-tune.json --device \"RTX 2080 Ti\" --device \"TITAN RTX\" -o ranking.csv",
            "kerneltime tune examples/saxpy-tune.json --device A100 --model wu --top 3 --json",
        ],
    ),
    (
        "completions",
        &[
            "kerneltime completions bash > ~/.local/share/bash-completion/completions/kerneltime",
            "kerneltime completions zsh > ~/.zfunc/_kerneltime",
            "kerneltime completions fish > ~/.config/fish/completions/kerneltime.fish",
        ],
    ),
    (
        "man",
        &[
            "kerneltime man | man -l -",
            "kerneltime man --out-dir man/",
        ],
    ),
];

/// The command line as clap sees it: the derived commands with [`EXAMPLES`] after each help and
/// the registries' values in the help of the flags that take them.
pub fn command() -> Command {
    let mut cmd = Cli::command();
    for (path, examples) in EXAMPLES {
        let text = examples_text(examples);
        cmd = at(cmd, &path_of(path), move |c| c.after_help(text));
    }
    with_choices(cmd)
}

/// The subcommand names of an [`EXAMPLES`] path.
fn path_of(path: &str) -> Vec<&str> {
    path.split_whitespace().collect()
}

/// The help paragraph of a list of examples.
fn examples_text(examples: &[&str]) -> String {
    let mut s = String::from("Examples:");
    for e in examples {
        s.push_str("\n  ");
        s.push_str(e);
    }
    s
}

/// Applies `f` to the subcommand at `path` (the root for an empty path).
fn at(cmd: Command, path: &[&str], f: impl FnOnce(Command) -> Command) -> Command {
    match path.split_first() {
        None => f(cmd),
        Some((head, rest)) => {
            let rest = rest.to_vec();
            cmd.mut_subcommand(*head, move |c| at(c, &rest, f))
        }
    }
}

/// `a, b or c` with each name in backticks.
fn listed<'a>(names: impl IntoIterator<Item = &'a str>) -> String {
    let names: Vec<String> = names.into_iter().map(|n| format!("`{n}`")).collect();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => names.join(""),
    }
}

fn model_names() -> String {
    listed(ModelId::ALL.iter().map(|m| m.name()))
}

fn ptx_model_names() -> String {
    listed(ModelId::from_ptx().map(|m| m.name()))
}

fn builtin_kernels() -> String {
    listed(Builtin::ALL.iter().map(|b| b.name()))
}

/// Sets the help of every flag that takes one of a set of values from the registry it reads.
fn with_choices(cmd: Command) -> Command {
    let models = model_names();
    let kernels = builtin_kernels();
    let scopes = listed(Scope::ALL.iter().map(|s| s.name()));
    let formats = listed(Format::ALL.iter().map(|f| f.name()));
    let objectives = listed(OBJECTIVES.iter().copied());
    let quantities = listed(QUANTITIES.iter().copied());
    let space_models = format!(
        "Models to run (repeat or comma-separate): {models} (trace alone when --ptx is given and \
         no model is)"
    );
    let space_kernels = format!(
        "puchala kernels: built-in names ({kernels}) or program files (repeat or comma-separate)"
    );
    let objective = format!("What to minimise: {objectives}");
    let constraint = format!(
        "A constraint QUANTITY OP NUMBER, QUANTITY a swept parameter or {quantities} \
         (e.g. occupancy>=0.5). Repeatable"
    );
    let space = |c: Command, extra: &dyn Fn(Command) -> Command| {
        extra(
            c.mut_arg("models", |a| a.help(space_models.clone()))
                .mut_arg("kernels", |a| a.help(space_kernels.clone())),
        )
    };
    let mut cmd = cmd
        .mut_subcommand("predict", |c| {
            c.mut_arg("model", |a| {
                a.help(format!(
                    "The model: {models}, or `all` (every model that reads a PTX launch, side by \
                     side with the band between them)"
                ))
            })
            .mut_arg("kernel", |a| {
                a.help(format!("A built-in kernel: {kernels}"))
            })
            .mut_arg("platform", |a| {
                a.help(format!(
                    "A built-in LSLAG platform (with --app): {}",
                    listed(BUILTIN_PLATFORMS.iter().copied())
                ))
            })
            .mut_arg("app", |a| {
                a.help(format!(
                    "A built-in LSLAG application (with --platform): {}",
                    listed(BUILTIN_APPS.iter().copied())
                ))
            })
        })
        .mut_subcommand("calibrate", |c| {
            c.mut_arg("model", |a| a.help(format!("The model: {models}")))
                .mut_arg("scope", |a| {
                    a.help(format!(
                        "The groups to fit: `all`, or a comma-separated list of {scopes} (kernel: \
                         kernel x device; kernel-architecture: kernel x compute-capability \
                         family; architecture: compute-capability family). Predictions take \
                         the most specific group that covers a (kernel, device) pair, in the \
                         order the file's notes list"
                    ))
                })
        })
        .mut_subcommand("evaluate", |c| {
            c.mut_arg("model", |a| {
                a.help(format!(
                    "A model ({models}), or `all` (every model that can run on the rows)"
                ))
            })
        })
        .mut_subcommand("measurements", |c| {
            c.mut_arg("format", |a| {
                a.help(format!(
                    "The format, when detection from the content is not wanted: {formats}"
                ))
            })
        })
        .mut_subcommand("tune", |c| {
            c.mut_arg("model", |a| {
                a.help(format!(
                    "The model that predicts each configuration from its PTX: {}",
                    ptx_model_names()
                ))
            })
        });
    cmd = cmd.mut_subcommand("sweep", |c| space(c, &|c| c));
    cmd = cmd.mut_subcommand("best", |c| {
        space(c, &|c| {
            c.mut_arg("objective", |a| a.help(objective.clone()))
                .mut_arg("constraints", |a| a.help(constraint.clone()))
        })
    });
    cmd.mut_subcommand("compare", |c| {
        space(c, &|c| {
            c.mut_arg("objective", |a| {
                a.help(format!(
                    "What ranks GPUs (the minimum over the parameter space): {objectives}"
                ))
            })
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::FromArgMatches;

    /// Shell-like words: double quotes group; `|`, `>` and what follows end the command.
    fn words(line: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut word = String::new();
        let (mut quoted, mut in_word) = (false, false);
        for c in line.chars() {
            match c {
                '"' => {
                    quoted = !quoted;
                    in_word = true;
                }
                '|' | '>' if !quoted => break,
                c if c.is_whitespace() && !quoted => {
                    if in_word {
                        out.push(std::mem::take(&mut word));
                        in_word = false;
                    }
                }
                c => {
                    word.push(c);
                    in_word = true;
                }
            }
        }
        if in_word {
            out.push(word);
        }
        out
    }

    /// Every subcommand path of the command, with the command.
    fn all_paths(cmd: &Command, prefix: &str, out: &mut Vec<(String, Command)>) {
        out.push((prefix.trim().to_string(), cmd.clone()));
        for s in cmd.get_subcommands() {
            if s.get_name() != "help" {
                all_paths(s, &format!("{prefix} {}", s.get_name()), out);
            }
        }
    }

    #[test]
    fn every_command_help_ends_with_examples() {
        let mut paths = Vec::new();
        all_paths(&command(), "", &mut paths);
        assert!(paths.len() > 20);
        for (path, mut cmd) in paths {
            let help = cmd.render_help().to_string();
            let long = cmd.render_long_help().to_string();
            for h in [&help, &long] {
                let tail = h
                    .split("Examples:")
                    .nth(1)
                    .unwrap_or_else(|| panic!("`kerneltime {path} --help` has no Examples:\n{h}"));
                let n = tail.lines().filter(|l| l.contains("kerneltime ")).count();
                assert!((2..=3).contains(&n), "{path}: {n} examples");
            }
        }
    }

    #[test]
    fn every_example_parses() {
        for (path, examples) in EXAMPLES {
            for e in *examples {
                let w = words(e);
                assert_eq!(w[0], "kerneltime", "{e}");
                let matches = command()
                    .try_get_matches_from(&w)
                    .unwrap_or_else(|err| panic!("`{e}` does not parse:\n{err}"));
                let cli = Cli::from_arg_matches(&matches)
                    .unwrap_or_else(|err| panic!("`{e}` does not parse:\n{err}"));
                // The example belongs to its command (the root's examples may use any).
                if !path.is_empty() && !path.starts_with("lslag") {
                    assert!(
                        e.starts_with(&format!("kerneltime {path}")),
                        "`{e}` under `{path}`"
                    );
                }
                drop(cli);
            }
        }
    }

    #[test]
    fn choice_flags_list_the_registries() {
        let mut cmd = command();
        let help = |cmd: &mut Command, path: &[&str]| {
            let mut c = cmd.clone();
            for p in path {
                c = c.find_subcommand_mut(p).unwrap().clone();
            }
            c.render_help().to_string()
        };
        let predict = help(&mut cmd, &["predict"]);
        for m in ModelId::ALL {
            assert!(predict.contains(&format!("`{}`", m.name())), "{predict}");
        }
        assert!(!predict.contains("for the list"), "{predict}");
        let calibrate = help(&mut cmd, &["calibrate"]);
        for s in Scope::ALL {
            assert!(
                calibrate.contains(&format!("`{}`", s.name())),
                "{calibrate}"
            );
        }
        let measurements = help(&mut cmd, &["measurements"]);
        for f in Format::ALL {
            assert!(
                measurements.contains(&format!("`{}`", f.name())),
                "{measurements}"
            );
        }
        let best = help(&mut cmd, &["best"]);
        for o in OBJECTIVES {
            assert!(best.contains(&format!("`{o}`")), "{best}");
        }
        let import = help(&mut cmd, &["device", "import"]);
        for f in kerneltime::device::import::ImportFormat::ALL {
            assert!(import.contains(f.name()), "{import}");
        }
    }

    #[test]
    fn listed_joins_with_or() {
        assert_eq!(listed(["a"]), "`a`");
        assert_eq!(listed(["a", "b", "c"]), "`a`, `b` or `c`");
    }
}
