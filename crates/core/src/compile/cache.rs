//! Compiled results on disk, named by a 128-bit hash ([`KeyHasher`]) of everything that decides
//! the result: the route (`nvrtc`, or a name of its own for the nvcc and clang routes of
//! `tune`), the compiler's file, the source's bytes and folder, the target `sm_XX`, the
//! defines (sorted), the options and the user's include folders, each length-prefixed so that
//! no two different inputs run together into the same bytes. A success is `KEY.ptx` with
//! `KEY.log` (the compiler's log with the ptxas `-v` report); a refusal is `KEY.failed` (its
//! first error line and log: refusals are as deterministic as successes).
//!
//! The key and the layout are the accuracy harness's (`suite::compile`), so `tune` and the
//! harness hit the same entries when they compile the same thing: both call NVRTC with
//! `--gpu-architecture=sm_XX --ptxas-options=-v`, the source's folder and the library's CUDA
//! headers as include paths, the defines and the options. Paths are keyed through [`key_dir`]
//! and [`key_file`] (folders with links resolved), so checkouts that reach one toolchain
//! through different paths share a cache. The compiler's version is not keyed apart from its
//! file: replacing a library in place (same path, other version) needs a fresh cache. Headers
//! are not hashed either (after editing one, delete the folder). The file name shown in
//! diagnostics is not keyed (only a refusal's log text can differ by it).
//!
//! A file that cannot be read back (truncated, another version's layout) counts as a miss and
//! is written again; files are written atomically, so concurrent runs never see half a file.
//!
//! What it does NOT do: evict old entries (delete the folder to start over) or lock anything.

use std::path::{Path, PathBuf};

use super::{CompileJob, Compiler, Outcome};
use crate::error::Result;

/// Layout version of the cache files; a change makes old files misses.
const FORMAT: u32 = 1;

/// A 128-bit FNV-1a style hash (two 64-bit FNV-1a lanes with different offsets) as 32 hex
/// digits: the compile cache's key, shared by `tune` and the accuracy harness (`suite`). Not a
/// cryptographic digest.
#[derive(Debug, Clone)]
pub struct KeyHasher([u64; 2]);

impl Default for KeyHasher {
    fn default() -> Self {
        KeyHasher([0xcbf2_9ce4_8422_2325, 0x6c62_272e_07bb_0142])
    }
}

impl KeyHasher {
    const PRIME: u64 = 0x0000_0100_0000_01b3;

    /// Adds a field (length-prefixed, so fields cannot run into each other).
    pub fn field(&mut self, bytes: &[u8]) -> &mut Self {
        self.raw(&(bytes.len() as u64).to_le_bytes());
        self.raw(bytes)
    }

    fn raw(&mut self, bytes: &[u8]) -> &mut Self {
        for &b in bytes {
            for h in &mut self.0 {
                *h = (*h ^ u64::from(b)).wrapping_mul(Self::PRIME);
            }
        }
        self
    }

    pub fn hex(&self) -> String {
        format!("{:016x}{:016x}", self.0[0], self.0[1])
    }
}

/// A folder as keys read it: with symbolic links and `.`/`..` resolved when it exists, so
/// that checkouts reaching the same files through different paths (a worktree whose
/// `.gpu-toolchain` links to another checkout's) share entries.
pub fn key_dir(dir: &Path) -> PathBuf {
    if dir.as_os_str().is_empty() {
        return dir.to_path_buf();
    }
    std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf())
}

/// A file as keys read it: its folder through [`key_dir`], its own name kept (a library
/// reached through its versioned name, `libnvrtc.so.12`, keeps that name).
pub fn key_file(path: &Path) -> PathBuf {
    match (path.parent(), path.file_name()) {
        (Some(dir), Some(name)) if !dir.as_os_str().is_empty() => key_dir(dir).join(name),
        _ => path.to_path_buf(),
    }
}

/// Everything that decides one compilation of a source, as the cache key reads it.
#[derive(Debug, Clone)]
pub struct SourceKey<'a> {
    /// The route: `nvrtc` (the same library called with the same options, whether in this
    /// process or through the harness's driver), or a name no other route uses.
    pub route: &'a str,
    /// The compiler program or library.
    pub tool: Option<&'a Path>,
    pub source: &'a [u8],
    /// The source's folder (searched for `#include "..."`).
    pub source_dir: &'a Path,
    pub sm: u32,
    /// `-D` defines; their order does not matter (names are distinct), the key sorts them.
    pub defines: &'a [(String, String)],
    pub options: &'a [String],
    /// Include folders given by the user (the compiler's own headers follow from `tool`).
    pub include: &'a [PathBuf],
}

/// The cache key of a compilation, 32 hex digits. The layout is the accuracy harness's
/// (`kerneltime-suite-compile-1`), so entries it wrote are found; paths go through
/// [`key_file`] and [`key_dir`].
pub fn source_key(k: &SourceKey<'_>) -> String {
    let tool = k.tool.map(key_file).unwrap_or_default();
    let mut defines: Vec<&(String, String)> = k.defines.iter().collect();
    defines.sort_by(|a, b| a.0.cmp(&b.0));
    let mut h = KeyHasher::default();
    h.field(b"kerneltime-suite-compile-1")
        .field(k.route.as_bytes())
        .field(tool.as_os_str().as_encoded_bytes())
        .field(k.source)
        .field(key_dir(k.source_dir).as_os_str().as_encoded_bytes())
        .field(&k.sm.to_le_bytes());
    for (n, v) in defines {
        h.field(n.as_bytes()).field(v.as_bytes());
    }
    h.field(b"options");
    for o in k.options {
        h.field(o.as_bytes());
    }
    h.field(b"include");
    for i in k.include {
        h.field(i.as_os_str().as_encoded_bytes());
    }
    h.hex()
}

/// The cache key of a job for a compiler.
pub fn key(compiler: &Compiler, job: &CompileJob<'_>) -> String {
    let (route, tool) = compiler.key_route();
    source_key(&SourceKey {
        route: &route,
        tool,
        source: job.source.as_bytes(),
        source_dir: job.include_dir.unwrap_or(Path::new("")),
        sm: job.arch.as_number(),
        defines: job.defines,
        options: job.options,
        include: &[],
    })
}

/// A refusal kept on disk (`KEY.failed`).
#[derive(serde::Serialize, serde::Deserialize)]
struct Refusal {
    format: u32,
    reason: String,
    log: String,
}

/// The on-disk cache (or none).
#[derive(Debug, Clone)]
pub struct CompileCache {
    dir: Option<PathBuf>,
}

/// The default folder: `$XDG_CACHE_HOME/kerneltime/compile`, else `~/.cache/kerneltime/compile`.
pub fn default_dir() -> Option<PathBuf> {
    std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .map(|base| base.join("kerneltime").join("compile"))
}

/// The outcome kept in `dir` under `key`: `KEY.ptx` with `KEY.log` (the harness's layout),
/// or `KEY.failed`.
pub fn read_entry(dir: &Path, key: &str) -> Option<Outcome> {
    let ptx = std::fs::read_to_string(dir.join(format!("{key}.ptx")));
    let log = std::fs::read_to_string(dir.join(format!("{key}.log")));
    if let (Ok(ptx), Ok(log)) = (ptx, log) {
        return Some(Outcome::Compiled { ptx, log });
    }
    let bytes = std::fs::read(dir.join(format!("{key}.failed"))).ok()?;
    let r = serde_json::from_slice::<Refusal>(&bytes).ok()?;
    (r.format == FORMAT).then_some(Outcome::Failed {
        reason: r.reason,
        log: r.log,
    })
}

/// Keeps an outcome in `dir` under `key` (the log before the PTX: a PTX file without its log
/// is never taken for a hit).
pub fn write_entry(dir: &Path, key: &str, outcome: &Outcome) -> Result<()> {
    // The cache's own directory is kerneltime's to create (the user named it, or it is the
    // default cache location).
    std::fs::create_dir_all(dir).map_err(|e| {
        crate::error::Error::io(
            format!("cannot create the compile cache {}", dir.display()),
            e,
        )
    })?;
    let write = |ext: &str, bytes: &[u8]| {
        crate::error::write_atomic(&dir.join(format!("{key}.{ext}")), bytes)
    };
    match outcome {
        Outcome::Compiled { ptx, log } => {
            write("log", log.as_bytes())?;
            write("ptx", ptx.as_bytes())
        }
        Outcome::Failed { reason, log } => {
            let r = Refusal {
                format: FORMAT,
                reason: reason.clone(),
                log: log.clone(),
            };
            let bytes = serde_json::to_vec(&r).map_err(|e| {
                crate::error::Error::invalid("compile cache", format!("cannot serialize: {e}"))
            })?;
            write("failed", &bytes)
        }
    }
}

impl CompileCache {
    /// A cache in `dir`, or no caching at all.
    pub fn new(dir: Option<PathBuf>) -> Self {
        CompileCache { dir }
    }

    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// The cached outcome of `job`, or compiles it and stores the result. The flag says
    /// whether it came from the cache.
    pub fn get_or_compile(
        &self,
        compiler: &Compiler,
        job: &CompileJob<'_>,
    ) -> Result<(Outcome, bool)> {
        let Some(dir) = &self.dir else {
            return Ok((compiler.compile(job)?, false));
        };
        let k = key(compiler, job);
        if let Some(outcome) = read_entry(dir, &k) {
            return Ok((outcome, true));
        }
        let outcome = compiler.compile(job)?;
        write_entry(dir, &k, &outcome)?;
        Ok((outcome, false))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skey<'a>(
        tool: &'a Path,
        source: &'a str,
        dir: &'a Path,
        defines: &'a [(String, String)],
        options: &'a [String],
    ) -> SourceKey<'a> {
        SourceKey {
            route: "nvrtc",
            tool: Some(tool),
            source: source.as_bytes(),
            source_dir: dir,
            sm: 75,
            defines,
            options,
            include: &[],
        }
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn the_key_is_the_harness_layout() {
        // Golden values from an independent Python implementation of the layout: two 64-bit
        // FNV-1a lanes (offsets 0xcbf29ce484222325 and 0x6c62272e07bb0142, prime
        // 0x100000001b3), each field its length as 8 little-endian bytes then its bytes.
        let mut h = KeyHasher::default();
        h.field(b"a");
        assert_eq!(h.hex(), "529a4ddc8ff56bbf7030ba68c465aea6");
        // Fields: "kerneltime-suite-compile-1", "nvrtc", the library, the source, its folder,
        // 75 as 4 little-endian bytes, the defines sorted by name ("a" "1" "b" "2"),
        // "options", "-std=c++11", "include". The paths do not exist, so they are kept as
        // given.
        let d = pairs(&[("b", "2"), ("a", "1")]);
        let o = vec!["-std=c++11".to_string()];
        let k = source_key(&skey(
            Path::new("/opt/nv/libnvrtc.so.12"),
            "__global__ void k() {}",
            Path::new("/src"),
            &d,
            &o,
        ));
        assert_eq!(k, "261c00a60bd11d166fce075e8863423f");
    }

    #[test]
    fn every_input_changes_the_key_and_define_order_does_not() {
        let tool = Path::new("/opt/nv/libnvrtc.so.12");
        let dir = Path::new("/src");
        let d1 = pairs(&[("a", "1"), ("b", "2")]);
        let base = source_key(&skey(tool, "src", dir, &d1, &[]));
        assert_eq!(base.len(), 32);
        let swapped = pairs(&[("b", "2"), ("a", "1")]);
        assert_eq!(base, source_key(&skey(tool, "src", dir, &swapped, &[])));
        // Moving a character between a name and its value must not collide.
        let moved = pairs(&[("a1", ""), ("b", "2")]);
        let other_value = pairs(&[("a", "2"), ("b", "2")]);
        let opts = vec!["-O3".to_string()];
        let others = [
            source_key(&skey(
                Path::new("/opt/nv13/libnvrtc.so.13"),
                "src",
                dir,
                &d1,
                &[],
            )),
            source_key(&skey(tool, "src2", dir, &d1, &[])),
            source_key(&skey(tool, "src", Path::new("/src2"), &d1, &[])),
            source_key(&skey(tool, "src", dir, &moved, &[])),
            source_key(&skey(tool, "src", dir, &other_value, &[])),
            source_key(&skey(tool, "src", dir, &d1, &opts)),
            source_key(&SourceKey {
                sm: 86,
                ..skey(tool, "src", dir, &d1, &[])
            }),
            source_key(&SourceKey {
                route: "compile nvcc 13.5 /usr/bin/nvcc",
                ..skey(tool, "src", dir, &d1, &[])
            }),
        ];
        for (i, k) in others.iter().enumerate() {
            assert_ne!(&base, k, "variant {i}");
        }
    }

    #[test]
    fn folders_reached_through_a_link_share_the_key() {
        let root = std::env::temp_dir().join(format!("kt-cache-link-{}", std::process::id()));
        let real = root.join("real/lib");
        std::fs::create_dir_all(&real).unwrap();
        let link = root.join("checkout");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(root.join("real"), &link).unwrap();
        let d = pairs(&[("a", "1")]);
        let direct = source_key(&skey(&real.join("libnvrtc.so.12"), "s", &real, &d, &[]));
        let through = source_key(&skey(
            &link.join("lib/libnvrtc.so.12"),
            "s",
            &link.join("lib/../lib"),
            &d,
            &[],
        ));
        assert_eq!(direct, through);
        // The file's own name is kept: a versioned link name is not replaced by its target.
        assert_eq!(
            key_file(&link.join("lib/libnvrtc.so.12")),
            real.canonicalize().unwrap().join("libnvrtc.so.12")
        );
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn successes_and_refusals_round_trip_in_the_harness_layout() {
        let dir = std::env::temp_dir().join(format!("kt-cache-rt-{}", std::process::id()));
        let ok = Outcome::Compiled {
            ptx: ".version 8.0".into(),
            log: "ptxas info    : Used 8 registers".into(),
        };
        write_entry(&dir, "k1", &ok).unwrap();
        // The harness reads KEY.ptx and KEY.log.
        assert_eq!(
            std::fs::read_to_string(dir.join("k1.ptx")).unwrap(),
            ".version 8.0"
        );
        assert_eq!(read_entry(&dir, "k1"), Some(ok));
        let refused = Outcome::Failed {
            reason: "too much shared data".into(),
            log: "ptxas error".into(),
        };
        write_entry(&dir, "k2", &refused).unwrap();
        assert_eq!(read_entry(&dir, "k2"), Some(refused));
        // A PTX file without its log is a miss.
        std::fs::write(dir.join("k3.ptx"), "x").unwrap();
        assert_eq!(read_entry(&dir, "k3"), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
