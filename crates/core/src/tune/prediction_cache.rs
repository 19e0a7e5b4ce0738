//! Whole per-configuration results of `tune` kept on disk, so that ranking a space again (other
//! `--top`, output or `--evaluate`, the same sample) skips compiling, parsing, emulating and
//! predicting. One small JSON file per configuration and architecture, in `predictions/` under
//! the compile cache's folder, named by a 128-bit FNV-1a hash of everything that decides the
//! result: this build's sources and data (`SOURCE_HASH`, from `build.rs`), the compilation's
//! own cache key (compiler, architecture, source, defines, options), the kernel name, the launch,
//! the arguments, the dynamic shared memory, the model, the mapped-host arguments, the data
//! hints, and every device's full description and host link. Times are stored as their IEEE-754 bits, so a
//! reused result is bit-for-bit the computed one.
//!
//! A file that cannot be read back (truncated, another build's, another layout) is a miss and
//! is written again; files are written atomically.
//!
//! What it does NOT do: evict entries, lock anything, or keep errors that stop a run (those are
//! reported, never cached).

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::compile::cache::KeyHasher;
use crate::error::{Error, Result};

/// Layout version of the files; a change makes old files misses.
const FORMAT: u32 = 1;

mod build {
    include!(concat!(env!("OUT_DIR"), "/source_hash.rs"));
}

/// The hash of the sources and data of this build (part of every key).
pub fn build_id() -> String {
    format!("{} {}", env!("CARGO_PKG_VERSION"), build::SOURCE_HASH)
}

/// Builds a key from length-prefixed fields, starting with the layout and the build.
pub struct KeyBuilder(KeyHasher);

impl KeyBuilder {
    pub fn new() -> Self {
        let mut h = KeyHasher::default();
        h.field(format!("kerneltime-prediction-{FORMAT}").as_bytes())
            .field(build_id().as_bytes());
        KeyBuilder(h)
    }
    pub fn field(&mut self, text: &str) -> &mut Self {
        self.0.field(text.as_bytes());
        self
    }
    /// The key, 32 hex digits.
    pub fn finish(&self) -> String {
        self.0.hex()
    }
}

impl Default for KeyBuilder {
    fn default() -> Self {
        Self::new()
    }
}

#[derive(Serialize, Deserialize)]
struct Entry<T> {
    format: u32,
    build: String,
    value: T,
}

/// The on-disk store (or none).
#[derive(Debug, Clone)]
pub struct PredictionCache {
    dir: Option<PathBuf>,
}

impl PredictionCache {
    /// The store inside a compile cache's folder, or none.
    pub fn inside(compile_cache: Option<&Path>) -> Self {
        PredictionCache {
            dir: compile_cache.map(|d| d.join("predictions")),
        }
    }

    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// The value kept under `key`, if any and readable.
    pub fn get<T: DeserializeOwned>(&self, key: &str) -> Option<T> {
        let path = self.dir.as_ref()?.join(format!("{key}.json"));
        let bytes = std::fs::read(path).ok()?;
        let e: Entry<T> = serde_json::from_slice(&bytes).ok()?;
        (e.format == FORMAT && e.build == build_id()).then_some(e.value)
    }

    /// Keeps `value` under `key` (nothing without a folder).
    pub fn put<T: Serialize>(&self, key: &str, value: &T) -> Result<()> {
        let Some(dir) = &self.dir else {
            return Ok(());
        };
        let entry = Entry {
            format: FORMAT,
            build: build_id(),
            value,
        };
        let bytes = serde_json::to_vec(&entry)
            .map_err(|e| Error::invalid("prediction cache", format!("cannot serialize: {e}")))?;
        // Inside the compile cache's folder, which is kerneltime's to create.
        std::fs::create_dir_all(dir).map_err(|e| {
            Error::io(
                format!("cannot create the prediction cache {}", dir.display()),
                e,
            )
        })?;
        crate::error::write_atomic(&dir.join(format!("{key}.json")), &bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip_and_other_keys_miss() {
        let dir = std::env::temp_dir().join(format!("kerneltime-pc-test-{}", std::process::id()));
        let c = PredictionCache::inside(Some(&dir));
        let k = KeyBuilder::new().field("a").finish();
        let k2 = KeyBuilder::new().field("b").finish();
        assert_ne!(k, k2);
        let v: Vec<u64> = vec![f64::to_bits(0.1 + 0.2), 7];
        c.put(&k, &v).unwrap();
        assert_eq!(c.get::<Vec<u64>>(&k), Some(v));
        assert_eq!(c.get::<Vec<u64>>(&k2), None);
        // A damaged file is a miss.
        std::fs::write(
            dir.join("predictions").join(format!("{k}.json")),
            b"{\"format\":1",
        )
        .unwrap();
        assert_eq!(c.get::<Vec<u64>>(&k), None);
        assert!(PredictionCache::inside(None).get::<u64>(&k).is_none());
        let _ = std::fs::remove_dir_all(dir);
    }
}
