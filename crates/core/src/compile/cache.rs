//! Compiled results on disk, one JSON file per compilation, named by a 128-bit FNV-1a hash of
//! everything that decides the result: the compiler's identity (route, version, path), the
//! language, the target architecture, the source text, the defines and the options, each
//! length-prefixed so that no two different inputs run together into the same bytes. Compiler
//! refusals are kept too (they are as deterministic as successes).
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

/// 128-bit FNV-1a (Fowler, Noll, Vo): offset basis and prime from the published parameters.
pub struct Fnv128(u128);

impl Fnv128 {
    const OFFSET: u128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d;
    const PRIME: u128 = 0x0000_0000_0100_0000_0000_0000_0000_013b;

    pub fn new() -> Self {
        Fnv128(Self::OFFSET)
    }
    pub fn bytes(&mut self, data: &[u8]) {
        for &b in data {
            self.0 ^= u128::from(b);
            self.0 = self.0.wrapping_mul(Self::PRIME);
        }
    }
    /// A field: its length, then its bytes.
    pub fn field(&mut self, data: &str) {
        self.bytes(&(data.len() as u64).to_le_bytes());
        self.bytes(data.as_bytes());
    }
    /// The hash as 32 hex digits.
    pub fn hex(&self) -> String {
        format!("{:032x}", self.0)
    }
}

impl Default for Fnv128 {
    fn default() -> Self {
        Self::new()
    }
}

/// The cache key of a job for a compiler, as 32 hex digits.
pub fn key(compiler_identity: &str, job: &CompileJob<'_>) -> String {
    let mut h = Fnv128::new();
    h.field(&format!("kerneltime-compile-{FORMAT}"));
    h.field(compiler_identity);
    h.field(&format!("{:?}", job.language));
    h.field(&format!("sm_{}", job.arch.as_number()));
    h.field(job.file_name);
    h.field(
        &job.include_dir
            .map(|d| d.display().to_string())
            .unwrap_or_default(),
    );
    h.field(job.source);
    h.bytes(&(job.defines.len() as u64).to_le_bytes());
    for (n, v) in job.defines {
        h.field(n);
        h.field(v);
    }
    h.bytes(&(job.options.len() as u64).to_le_bytes());
    for o in job.options {
        h.field(o);
    }
    h.hex()
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Entry {
    format: u32,
    compiler: String,
    outcome: Outcome,
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
        let path = dir.join(format!("{}.json", key(compiler.identity(), job)));
        if let Ok(bytes) = std::fs::read(&path) {
            if let Ok(e) = serde_json::from_slice::<Entry>(&bytes) {
                if e.format == FORMAT && e.compiler == compiler.identity() {
                    return Ok((e.outcome, true));
                }
            }
        }
        let outcome = compiler.compile(job)?;
        let entry = Entry {
            format: FORMAT,
            compiler: compiler.identity().to_string(),
            outcome,
        };
        let bytes = serde_json::to_vec(&entry).map_err(|e| {
            crate::error::Error::invalid("compile cache", format!("cannot serialize: {e}"))
        })?;
        // The cache's own directory is kerneltime's to create (the user named it, or it is the
        // default cache location).
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| {
                crate::error::Error::io(
                    format!("cannot create the compile cache {}", dir.display()),
                    e,
                )
            })?;
        }
        crate::error::write_atomic(&path, &bytes)?;
        Ok((entry.outcome, false))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::Language;
    use crate::device::ComputeCapability;

    fn job<'a>(source: &'a str, defines: &'a [(String, String)]) -> CompileJob<'a> {
        CompileJob {
            source,
            file_name: "k.cu",
            include_dir: None,
            language: Language::Cuda,
            defines,
            options: &[],
            arch: ComputeCapability::new(7, 5),
        }
    }

    #[test]
    fn fnv_matches_the_published_test_vector() {
        // FNV-1a 128 of the empty string is the offset basis; of "a" it is the published
        // value 0xd228cb696f1a8caf78912b704e4a8964.
        let mut h = Fnv128::new();
        h.bytes(b"a");
        assert_eq!(h.0, 0xd228_cb69_6f1a_8caf_7891_2b70_4e4a_8964);
    }

    #[test]
    fn every_input_changes_the_key() {
        let d1 = vec![("a".to_string(), "1".to_string())];
        let d2 = vec![("a".to_string(), "2".to_string())];
        // Moving a character between the name and the value must not collide.
        let d3 = vec![("a1".to_string(), "".to_string())];
        let base = key("nvrtc 12.9", &job("src", &d1));
        assert_eq!(base, key("nvrtc 12.9", &job("src", &d1)));
        assert_eq!(base.len(), 32);
        assert_ne!(base, key("nvrtc 13.0", &job("src", &d1)));
        assert_ne!(base, key("nvrtc 12.9", &job("src2", &d1)));
        assert_ne!(base, key("nvrtc 12.9", &job("src", &d2)));
        assert_ne!(base, key("nvrtc 12.9", &job("src", &d3)));
        let mut j = job("src", &d1);
        j.arch = ComputeCapability::new(8, 6);
        assert_ne!(base, key("nvrtc 12.9", &j));
        let opts = vec!["-O3".to_string()];
        let mut j = job("src", &d1);
        j.options = &opts;
        assert_ne!(base, key("nvrtc 12.9", &j));
    }
}
