//! Embeds every `data/devices/*.toml` into the binary as (file name, text) pairs, and writes
//! `SOURCE_HASH`: a hash of every source and data file a prediction depends on (this crate's
//! and the PTX crate's `src`, `data/`, `Cargo.lock`), which keys the caches of whole
//! predictions (`tune::prediction_cache`) so that a changed build never reads old results.
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// Every file under `dir`, recursively, sorted.
fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            files_under(&p, out);
        } else {
            out.push(p);
        }
    }
}

/// 64-bit FNV-1a of the paths (relative to `base`) and contents of `files`.
fn source_hash(base: &Path, files: &[PathBuf]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |data: &[u8]| {
        for &b in (data.len() as u64).to_le_bytes().iter().chain(data) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    };
    for f in files {
        let rel = f.strip_prefix(base).unwrap_or(f);
        eat(rel.to_string_lossy().as_bytes());
        eat(&std::fs::read(f).unwrap_or_default());
    }
    h
}

fn main() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data");
    let dir = root.join("devices");
    println!("cargo:rerun-if-changed={}", dir.display());
    println!(
        "cargo:rerun-if-changed={}",
        root.join("compute_capabilities.toml").display()
    );
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .map(|rd| rd.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_default();
    files.retain(|p| p.extension().is_some_and(|e| e == "toml"));
    files.sort();
    let mut out = String::from("pub static DEVICE_FILES: &[(&str, &str)] = &[\n");
    for p in &files {
        println!("cargo:rerun-if-changed={}", p.display());
        let abs = std::fs::canonicalize(p).unwrap();
        let _ = writeln!(
            out,
            "    ({:?}, include_str!({:?})),",
            p.file_name().unwrap().to_string_lossy(),
            abs.display().to_string()
        );
    }
    out.push_str("];\n");
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    std::fs::write(out_dir.join("devices.rs"), out).unwrap();

    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let base = manifest.join("../..");
    let mut sources = Vec::new();
    for d in [
        manifest.join("src"),
        base.join("crates/ptx/src"),
        root.clone(),
    ] {
        println!("cargo:rerun-if-changed={}", d.display());
        files_under(&d, &mut sources);
    }
    let lock = base.join("Cargo.lock");
    println!("cargo:rerun-if-changed={}", lock.display());
    sources.push(lock);
    sources.sort();
    std::fs::write(
        out_dir.join("source_hash.rs"),
        format!(
            "/// A hash of the sources and data this build predicts with.\npub const SOURCE_HASH: &str = \"{:016x}\";\n",
            source_hash(&base, &sources)
        ),
    )
    .unwrap();
}
