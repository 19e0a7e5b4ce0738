//! The README's commands run: every `kerneltime ...` command of its ```sh blocks is run with the
//! built binary, from the repository root, and must exit 0, so the README cannot drift from the
//! command line or from the files in `examples/`.
//!
//! Files the commands write (`-o`, `--out`, `--report`, ...) go to a temporary directory; a later
//! command that reads such a file (`--calibration cal.toml`) gets the same temporary path. What
//! this test does not do: check the commands' output (other tests do), or run commands whose
//! needs are absent without saying so — each skip and each shortened run is listed below with
//! its reason and printed when it happens.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::common::{bin, missing_tool, temp_dir};

/// One command of the README.
#[derive(Debug, Clone)]
struct Example {
    /// 1-based line of the README where the command starts.
    line: usize,
    words: Vec<String>,
}

impl Example {
    fn text(&self) -> String {
        self.words.join(" ")
    }
}

/// Flags whose value is a file or directory the command writes.
const OUTPUT_FLAGS: &[&str] = &[
    "-o",
    "--output",
    "--out",
    "--out-dir",
    "--report",
    "--timeline",
    "--cache-out",
];

/// Commands run shorter than written, with why: the flags appended and the reason. A command
/// matches when its text contains the first string.
const SHORTENED: &[(&str, &[&str], &str)] = &[
    (
        "--param n_b=1..100000",
        &["--chunk-points", "20000", "--stop-after", "1"],
        "3,200,000 points: run as far as the first checkpoint (the sweep's own tests check \
         that a stopped and resumed sweep is whole)",
    ),
    (
        "--param n=1024..2457600:1024",
        &["--chunk-points", "512", "--stop-after", "1"],
        "307,200 emulated configurations (about a minute in a release build): run as far as \
         the first checkpoint",
    ),
];

/// Splits a shell command line into words: double and single quotes group, `$NAME` takes the
/// value of a variable assigned earlier in the same block. Enough for the README, not a shell.
fn words(line: &str, vars: &BTreeMap<String, String>) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some('\''), c) => word.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    out.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            (_, '$') => {
                let mut name = String::new();
                while let Some(&n) = chars.peek() {
                    if n.is_ascii_alphanumeric() || n == '_' {
                        name.push(n);
                        chars.next();
                    } else {
                        break;
                    }
                }
                let value = vars
                    .get(&name)
                    .unwrap_or_else(|| panic!("README uses ${name} before assigning it: {line}"));
                word.push_str(value);
                in_word = true;
            }
            (_, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    assert!(quote.is_none(), "unclosed quote in README command: {line}");
    if in_word {
        out.push(word);
    }
    out
}

/// The line without a trailing `# comment` (a `#` after whitespace, outside quotes).
fn without_comment(line: &str) -> &str {
    let mut quote: Option<char> = None;
    let mut prev = ' ';
    for (i, c) in line.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (None, '"' | '\'') => quote = Some(c),
            (None, '#') if prev.is_whitespace() => return line[..i].trim_end(),
            _ => {}
        }
        prev = c;
    }
    line
}

/// Every `kerneltime` command of the ```sh blocks, in order: continuation lines joined,
/// comments dropped, `A && B` split, `NAME=VALUE` lines of a block taken as variables.
fn examples(readme: &str) -> Vec<Example> {
    let mut out = Vec::new();
    let mut in_sh = false;
    let mut vars = BTreeMap::new();
    let mut pending: Option<(usize, String)> = None;
    for (i, raw) in readme.lines().enumerate() {
        let trimmed = raw.trim();
        if !in_sh {
            if trimmed == "```sh" {
                in_sh = true;
                vars.clear();
            }
            continue;
        }
        if trimmed == "```" {
            assert!(pending.is_none(), "README line {}: `\\` before ```", i + 1);
            in_sh = false;
            continue;
        }
        let (start, mut text) = pending.take().unwrap_or((i + 1, String::new()));
        let line = without_comment(raw);
        if let Some(head) = line.trim_end().strip_suffix('\\') {
            text.push_str(head);
            text.push(' ');
            pending = Some((start, text));
            continue;
        }
        text.push_str(line);
        let text = text.trim();
        if let Some((name, value)) = text.split_once('=') {
            if !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !value.contains(char::is_whitespace)
            {
                vars.insert(name.to_string(), value.to_string());
                continue;
            }
        }
        for part in text.split("&&") {
            let w = words(part, &vars);
            if w.first().is_some_and(|c| c == "kerneltime") {
                out.push(Example {
                    line: start,
                    words: w,
                });
            }
        }
    }
    out
}

/// The reason to skip an example on this machine, if any (printed by the caller).
fn skip_reason(example: &Example, root: &Path) -> Option<String> {
    let text = example.text();
    if text.contains("../shared") && !root.join("../shared").is_dir() {
        return Some("reads ../shared (the project's shared data), which is absent".into());
    }
    let compiles = example.words.get(1).is_some_and(|c| c == "tune")
        || example.words.iter().any(|w| w == "--source");
    if compiles {
        use kerneltime::compile::{Choice, Compiler, Language};
        if let Err(e) = Compiler::find(Language::Cuda, Choice::Auto) {
            missing_tool(
                "toolchain",
                &format!("README line {}: no CUDA compiler ({e})", example.line),
            );
            return Some(format!(
                "it compiles CUDA and no CUDA compiler is here ({e}); run \
                 scripts/install-gpu-toolchain.sh"
            ));
        }
    }
    None
}

/// The command's arguments with outputs moved into `tmp` (and recorded in `outputs`, so that
/// later commands read them from there).
fn rewrite(words: &[String], tmp: &Path, outputs: &mut BTreeMap<String, PathBuf>) -> Vec<String> {
    let mut args = Vec::new();
    let mut next_is_output = false;
    for w in &words[1..] {
        let arg = if next_is_output {
            let target = tmp.join(w.trim_end_matches('/').replace("../", "up/"));
            if let Some(parent) = target.parent() {
                std::fs::create_dir_all(parent).unwrap();
            }
            outputs.insert(w.clone(), target.clone());
            target.display().to_string()
        } else if let Some(p) = outputs.get(w) {
            p.display().to_string()
        } else {
            w.clone()
        };
        next_is_output = OUTPUT_FLAGS.contains(&w.as_str());
        args.push(arg);
    }
    args
}

/// The names in a directory.
fn entries(dir: &Path) -> std::collections::BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn the_readme_examples_are_found() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let all = examples(&readme);
    assert!(all.len() >= 40, "only {} commands found", all.len());
    // Continuations, comments, quotes, `&&` and variables.
    let occupancy = all
        .iter()
        .find(|e| e.words[1] == "occupancy")
        .expect("the occupancy example");
    assert!(occupancy
        .text()
        .ends_with("--shared-memory-per-block 32768"));
    assert!(all
        .iter()
        .any(|e| e.words.iter().any(|w| w == "compute_capability>=8.0")));
    assert!(all
        .iter()
        .any(|e| e.words[1] == "evaluate" && e.words.contains(&"cal.toml".to_string())));
    assert!(all.iter().any(|e| e
        .words
        .contains(&"data/sweeps/trace/vector_add.toml".to_string())
        || e.words
            .contains(&"trace=data/sweeps/trace/vector_add.toml".to_string())));
    assert!(all.iter().all(|e| !e.text().contains('#')));
}

#[test]
fn every_readme_command_runs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let tmp = temp_dir("readme");
    let before = entries(root);
    let mut outputs = BTreeMap::new();
    let mut failures = Vec::new();
    let mut ran = 0;
    for example in examples(&readme) {
        if let Some(why) = skip_reason(&example, root) {
            eprintln!(
                "skipped README line {}: {why}: {}",
                example.line,
                example.text()
            );
            continue;
        }
        let mut args = rewrite(&example.words, &tmp, &mut outputs);
        for (needle, extra, why) in SHORTENED {
            if example.text().contains(needle) {
                eprintln!(
                    "shortened README line {} ({why}): appended {}",
                    example.line,
                    extra.join(" ")
                );
                args.extend(extra.iter().map(|s| s.to_string()));
            }
        }
        let out = bin()
            .args(&args)
            .current_dir(root)
            .output()
            .expect("the kerneltime binary runs");
        ran += 1;
        if !out.status.success() {
            failures.push(format!(
                "README line {}: `{}` exited {:?}: {}",
                example.line,
                example.text(),
                out.status.code(),
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
    }
    let _ = std::fs::remove_dir_all(&tmp);
    let written: Vec<_> = entries(root).difference(&before).cloned().collect();
    assert!(
        written.is_empty(),
        "README commands wrote into the repository root (give them an output flag): {written:?}"
    );
    assert!(ran > 30, "only {ran} README commands ran");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The subcommands a `--help` text lists under `Commands:` (without `help`).
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_string)
        .collect()
}

/// The command before an unquoted `>` or `|`.
fn before_redirection(line: &str) -> &str {
    let mut quoted = false;
    for (i, c) in line.char_indices() {
        match c {
            '"' => quoted = !quoted,
            '>' | '|' if !quoted => return &line[..i],
            _ => {}
        }
    }
    line
}

/// The `--help` text of a command path.
fn help_of(path: &[String]) -> String {
    let out = bin().args(path).arg("--help").output().unwrap();
    assert!(out.status.success(), "{path:?} --help");
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn every_help_example_runs() {
    // The examples at the end of each `--help` run too (parsing alone is checked by the unit
    // tests of src/cli/help.rs); a shell redirection or pipe ends the command.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tmp = temp_dir("help-examples");
    let mut paths: Vec<Vec<String>> = vec![vec![]];
    let mut i = 0;
    while i < paths.len() {
        let help = help_of(&paths[i]);
        for s in subcommands(&help) {
            let mut p = paths[i].clone();
            p.push(s);
            paths.push(p);
        }
        i += 1;
    }
    assert!(paths.len() > 20, "{paths:?}");
    let before = entries(root);
    let mut outputs = BTreeMap::new();
    let (mut ran, mut failures) = (0, Vec::new());
    for path in &paths {
        let help = help_of(path);
        let (_, tail) = help
            .split_once("Examples:")
            .unwrap_or_else(|| panic!("kerneltime {} --help has no examples", path.join(" ")));
        for line in tail
            .lines()
            .map(str::trim)
            .filter(|l| l.starts_with("kerneltime "))
        {
            let command = before_redirection(line);
            let example = Example {
                line: 0,
                words: words(command, &BTreeMap::new()),
            };
            if let Some(why) = skip_reason(&example, root) {
                eprintln!("skipped help example `{line}`: {why}");
                continue;
            }
            let args = rewrite(&example.words, &tmp, &mut outputs);
            let out = bin().args(&args).current_dir(root).output().unwrap();
            ran += 1;
            if !out.status.success() {
                failures.push(format!(
                    "`{line}` exited {:?}: {}",
                    out.status.code(),
                    String::from_utf8_lossy(&out.stderr).trim()
                ));
            }
        }
    }
    let _ = std::fs::remove_dir_all(&tmp);
    let written: Vec<_> = entries(root).difference(&before).cloned().collect();
    assert!(
        written.is_empty(),
        "help examples wrote into the repository root: {written:?}"
    );
    assert!(ran > 40, "only {ran} help examples ran");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn completions_and_man_pages() {
    let out = bin().args(["completions", "bash"]).output().unwrap();
    assert!(out.status.success());
    let bash = String::from_utf8(out.stdout).unwrap();
    assert!(
        bash.contains("kerneltime") && bash.contains("predict"),
        "{bash}"
    );
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        let out = bin().args(["completions", shell]).output().unwrap();
        assert!(out.status.success(), "{shell}");
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("calibrate"),
            "{shell}"
        );
    }
    let out = bin().arg("man").output().unwrap();
    assert!(out.status.success());
    let man = String::from_utf8(out.stdout).unwrap();
    assert!(man.starts_with(".TH") || man.starts_with(".ie"), "{man}");
    assert!(
        man.contains("predict") && man.contains("Examples:"),
        "{man}"
    );
    let dir = temp_dir("man");
    let out = bin()
        .args(["man", "--out-dir", dir.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success());
    let page = std::fs::read_to_string(dir.join("kerneltime-predict.1")).unwrap();
    assert!(
        page.contains("\\-\\-model") || page.contains("--model"),
        "{page}"
    );
    assert!(dir.join("kerneltime-device-import.1").exists());
    let _ = std::fs::remove_dir_all(&dir);
}
