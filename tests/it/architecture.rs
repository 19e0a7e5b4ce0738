//! The layering of the core crate, kept by a test: a module of `crates/core/src` may use the
//! modules below it in [`LAYERS`], never one above (outside its tests). This is what lets the
//! library be read from the bottom up and split further without untangling cycles.

use std::path::Path;

/// The core crate's top-level modules, lowest first.
const LAYERS: &[&str] = &[
    "error", "progress", "device", "workload", "compile", "memory", "emulate", "ptx", "model",
    "fit", "eval", "explore", "api", "tune", "suite",
];

fn rank(module: &str) -> Option<usize> {
    LAYERS.iter().position(|m| *m == module)
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The `crate::MODULE` paths a source text uses outside comments and its test module.
fn uses(text: &str) -> Vec<String> {
    let code = text.split("#[cfg(test)]").next().unwrap_or("");
    let mut found = Vec::new();
    for line in code.lines().filter(|l| !l.trim_start().starts_with("//")) {
        let mut rest = line;
        while let Some(i) = rest.find("crate::") {
            rest = &rest[i + "crate::".len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                .collect();
            found.push(name);
        }
    }
    found
}

#[test]
fn core_modules_use_only_the_layers_below_them() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/core/src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut upward = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(&src).unwrap();
        let top = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy()
            .trim_end_matches(".rs")
            .to_string();
        let Some(own) = rank(&top) else { continue };
        let text = std::fs::read_to_string(f).unwrap();
        for m in uses(&text) {
            if rank(&m).is_some_and(|r| r > own) {
                upward.push(format!("{} uses crate::{m}", rel.display()));
            }
        }
    }
    upward.sort();
    upward.dedup();
    assert!(
        upward.is_empty(),
        "modules reaching up the layers: {upward:#?}"
    );
    // The check sees real uses: the model layer does use the layers below it.
    let model = std::fs::read_to_string(src.join("model/registry.rs")).unwrap();
    assert!(uses(&model).iter().any(|m| m == "device"));
}

#[test]
fn the_core_crate_depends_on_no_cli_crate() {
    let manifest = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/core/Cargo.toml"),
    )
    .unwrap();
    let deps = manifest
        .split("[dependencies]")
        .nth(1)
        .unwrap()
        .split("\n[")
        .next()
        .unwrap();
    for banned in ["clap", "plotters", "indicatif"] {
        assert!(!deps.contains(banned), "crates/core depends on {banned}");
    }
    let ptx = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/ptx/Cargo.toml"),
    )
    .unwrap();
    assert!(
        !ptx.contains("kerneltime ="),
        "the PTX frontend depends on the core"
    );
}

/// The non-test code of every `.rs` file under `dir`, with its path relative to `dir`.
fn code_of(dir: &Path) -> Vec<(String, String)> {
    let mut files = Vec::new();
    rust_files(dir, &mut files);
    files
        .iter()
        .map(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            let code: String = text
                .split("#[cfg(test)]")
                .next()
                .unwrap_or("")
                .lines()
                .filter(|l| !l.trim_start().starts_with("//"))
                .collect::<Vec<_>>()
                .join("\n");
            (f.strip_prefix(dir).unwrap().display().to_string(), code)
        })
        .collect()
}

#[test]
fn models_do_no_io_and_the_library_prints_nothing() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/core/src");
    let mut found = Vec::new();
    for (file, code) in code_of(&root.join("model")) {
        for banned in [
            "std::fs",
            "std::env",
            "File::",
            "println!",
            "eprintln!",
            "print!(",
        ] {
            if code.contains(banned) {
                found.push(format!("model/{file}: {banned}"));
            }
        }
    }
    for (file, code) in code_of(&root) {
        for banned in ["println!", "eprintln!", "print!("] {
            if code.contains(banned) {
                found.push(format!("{file}: {banned}"));
            }
        }
    }
    assert!(found.is_empty(), "{found:#?}");
}

#[test]
fn library_errors_name_inputs_not_flags() {
    // A string literal that starts with a flag (`"--device"`, `"--param n"`) in the library is a
    // message naming a command-line flag; the CLI maps input names to its own flags. Commands of
    // other tools quoted in advice (Nsight Compute's `--metrics`) and the options the library
    // passes to the compilers it runs (NVRTC, nvcc, ptxas) are allowed.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/core/src");
    let allowed = [
        "--metrics",
        "--gpu-architecture",
        "--include-path",
        "--ptxas-options",
        "--version",
        "--list-gpu-code",
    ];
    let mut found = Vec::new();
    for (file, code) in code_of(&root) {
        for (i, _) in code.match_indices("\"--") {
            let rest = &code[i + 1..];
            let flag: String = rest
                .chars()
                .take_while(|c| *c == '-' || c.is_ascii_alphanumeric())
                .collect();
            if flag.len() > 2 && !allowed.contains(&flag.as_str()) {
                found.push(format!("{file}: {flag}"));
            }
        }
        for (i, _) in code.match_indices(" --") {
            let rest = &code[i + 1..];
            let flag: String = rest
                .chars()
                .take_while(|c| *c == '-' || c.is_ascii_lowercase())
                .collect();
            let in_string = code[..i].matches('"').count() % 2 == 1;
            if in_string
                && flag.len() > 3
                && !allowed.contains(&flag.as_str())
                && !code[i.saturating_sub(40)..i].contains("kerneltime ")
            {
                found.push(format!("{file}: {flag} (in a message)"));
            }
        }
    }
    found.sort();
    found.dedup();
    assert!(found.is_empty(), "{found:#?}");
}
