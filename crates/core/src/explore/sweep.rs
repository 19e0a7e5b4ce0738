//! The sweep engine: evaluates every point of a [`Space`] in parallel and streams the results, in
//! point order, to CSV or JSON lines (gzip-compressed when the file name ends in `.gz`).
//!
//! Points are processed in chunks; within a chunk, sub-chunks run on rayon's threads, each
//! formatting its rows into its own buffer, and the buffers are written in order. A row depends
//! only on its point, so the file is byte-identical whatever the thread count.
//!
//! Files and resuming: rows go to `.NAME.partial` beside the output; after every chunk the
//! writer is flushed and `.NAME.checkpoint` records how many points and bytes are complete (and a
//! fingerprint of the space). At the end the partial file is renamed to the output (or
//! compressed into a temporary file that is renamed), so the output appears whole or not at all.
//! `--resume` truncates the partial file to the checkpoint's bytes and recomputes from its
//! point; a checkpoint of another space is refused. The checkpoint is written after the rows it
//! counts are flushed, so a killed process never leaves a checkpoint ahead of its file (a power
//! loss could: rows are not fsynced per chunk, and the file is then recomputed from scratch if it
//! is shorter than the checkpoint says).
//!
//! This module does not choose configurations (`best`) or draw charts (the CLI does).

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::registry::{Outcome, Scratch};
use super::space::{Fnv, Space};
use crate::error::{write_atomic, Error, Result};
use crate::progress::Progress;
use crate::workload::params::{whole, ParamValues};

/// Points evaluated by one task (one output buffer).
pub const SUB_CHUNK_POINTS: u64 = 8192;
/// Default points per checkpoint.
pub const DEFAULT_CHUNK_POINTS: u64 = 1 << 18;

/// Output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    Csv,
    Jsonl,
}

impl Format {
    /// The format and compression a file name implies (`.csv`, `.jsonl`/`.ndjson`, each optionally
    /// `.gz`); `None` for another extension.
    pub fn from_path(path: &Path) -> (Option<Format>, bool) {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().to_ascii_lowercase())
            .unwrap_or_default();
        let (stem, gzip) = match name.strip_suffix(".gz") {
            Some(s) => (s.to_string(), true),
            None => (name, false),
        };
        let format = if stem.ends_with(".csv") {
            Some(Format::Csv)
        } else if stem.ends_with(".jsonl") || stem.ends_with(".ndjson") {
            Some(Format::Jsonl)
        } else {
            None
        };
        (format, gzip)
    }

    /// Parses `csv` or `jsonl`.
    pub fn parse(text: &str) -> Result<Format> {
        match text {
            "csv" => Ok(Format::Csv),
            "jsonl" | "ndjson" | "json-lines" => Ok(Format::Jsonl),
            other => Err(Error::invalid(
                "format",
                format!("`{other}` is not an output format; use csv or jsonl"),
            )),
        }
    }
}

/// Points by status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    pub ok: u64,
    pub infeasible: u64,
    pub invalid: u64,
}

impl Counts {
    fn add(&mut self, o: &Counts) {
        // A chunk never holds more than 2^64 points, so these cannot overflow unless a
        // checkpoint lied, and checkpoints are validated before they are used.
        self.ok = self.ok.saturating_add(o.ok);
        self.infeasible = self.infeasible.saturating_add(o.infeasible);
        self.invalid = self.invalid.saturating_add(o.invalid);
    }

    /// Points counted, or `None` when the sum does not fit (a corrupt checkpoint).
    pub fn total(&self) -> Option<u64> {
        self.ok
            .checked_add(self.infeasible)
            .and_then(|s| s.checked_add(self.invalid))
    }

    fn count(&mut self, r: &Result<Outcome>) {
        match r {
            Ok(_) => self.ok += 1,
            Err(Error::Infeasible(_)) => self.infeasible += 1,
            Err(_) => self.invalid += 1,
        }
    }
}

/// Formats rows; everything that does not depend on the point is formatted once here.
pub struct RowWriter<'a> {
    space: &'a Space,
    format: Format,
    /// Per cell: `model,kernel,device,calibration,` (CSV) or
    /// `{"model":..,"device":..,"calibration":..,"params":{` (JSON).
    cell_prefix: Vec<Vec<u8>>,
    /// Per axis, per value: `64,` (CSV) or `"n":64` (JSON).
    axis_text: Vec<Vec<Vec<u8>>>,
}

impl<'a> RowWriter<'a> {
    pub fn new(space: &'a Space, format: Format) -> Self {
        let cell_prefix = space
            .cells
            .iter()
            .map(|c| match format {
                Format::Csv => format!(
                    "{},{},{},{},",
                    csv_field(c.model),
                    csv_field(&c.kernel),
                    csv_field(&c.device),
                    csv_field(&c.calibration)
                )
                .into_bytes(),
                Format::Jsonl => format!(
                    "{{\"model\":{},\"kernel\":{},\"device\":{},\"calibration\":{},\"params\":{{",
                    json_str(c.model),
                    json_str(&c.kernel),
                    json_str(&c.device),
                    json_str(&c.calibration)
                )
                .into_bytes(),
            })
            .collect();
        let axis_text = space
            .axes
            .iter()
            .enumerate()
            .map(|(i, a)| {
                a.values
                    .iter()
                    .map(|&v| {
                        let mut b = Vec::new();
                        match format {
                            Format::Csv => {
                                number(&mut b, v, b"");
                                b.push(b',');
                            }
                            Format::Jsonl => {
                                if i > 0 {
                                    b.push(b',');
                                }
                                b.extend_from_slice(json_str(&a.name).as_bytes());
                                b.push(b':');
                                number(&mut b, v, b"null");
                            }
                        }
                        b
                    })
                    .collect()
            })
            .collect();
        Self {
            space,
            format,
            cell_prefix,
            axis_text,
        }
    }

    /// The CSV header line (empty for JSON lines).
    pub fn header(&self) -> Vec<u8> {
        match self.format {
            Format::Jsonl => Vec::new(),
            Format::Csv => {
                let mut h = String::from("model,kernel,device,calibration,");
                for a in &self.space.axes {
                    h.push_str(&csv_field(&a.name));
                    h.push(',');
                }
                h.push_str("time_us,cycles,occupancy,launch_threads_per_block,launch_blocks,status,reason\n");
                h.into_bytes()
            }
        }
    }

    /// Evaluates points `start..end` and appends their rows.
    pub fn rows(&self, start: u64, end: u64, out: &mut Vec<u8>) -> Counts {
        let mut counts = Counts::default();
        for_points(self.space, start, end, |_, cell, vi, _, r| {
            counts.count(r);
            self.row(cell, vi, r, out);
        });
        counts
    }

    fn row(&self, cell: usize, vi: &[usize], r: &Result<Outcome>, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.cell_prefix[cell]);
        for (a, &i) in vi.iter().enumerate() {
            out.extend_from_slice(&self.axis_text[a][i]);
        }
        match self.format {
            Format::Csv => {
                match r {
                    Ok(o) => {
                        for v in [
                            o.time_us,
                            o.cycles,
                            o.occupancy,
                            o.threads_per_block,
                            o.blocks,
                        ] {
                            number(out, v, b"");
                            out.push(b',');
                        }
                        out.extend_from_slice(b"ok,");
                    }
                    Err(e) => {
                        out.extend_from_slice(b",,,,,");
                        out.extend_from_slice(status(e).as_bytes());
                        out.push(b',');
                        out.extend_from_slice(csv_field(&e.to_string()).as_bytes());
                    }
                }
                out.push(b'\n');
            }
            Format::Jsonl => {
                out.push(b'}');
                match r {
                    Ok(o) => {
                        for (k, v) in [
                            ("time_us", o.time_us),
                            ("cycles", o.cycles),
                            ("occupancy", o.occupancy),
                            ("launch_threads_per_block", o.threads_per_block),
                            ("launch_blocks", o.blocks),
                        ] {
                            out.extend_from_slice(b",\"");
                            out.extend_from_slice(k.as_bytes());
                            out.extend_from_slice(b"\":");
                            number(out, v, b"null");
                        }
                        out.extend_from_slice(b",\"status\":\"ok\"}\n");
                    }
                    Err(e) => {
                        out.extend_from_slice(b",\"status\":\"");
                        out.extend_from_slice(status(e).as_bytes());
                        out.extend_from_slice(b"\",\"reason\":");
                        out.extend_from_slice(json_str(&e.to_string()).as_bytes());
                        out.extend_from_slice(b"}\n");
                    }
                }
            }
        }
    }
}

fn status(e: &Error) -> &'static str {
    if matches!(e, Error::Infeasible(_)) {
        "infeasible"
    } else {
        "invalid"
    }
}

/// A model that returns a non-finite, negative or year-long time has failed on this point: it is
/// an invalid point with a reason, never an `ok` row with an empty time or a best of `inf`.
fn finite(r: Result<Outcome>) -> Result<Outcome> {
    match r {
        Ok(o) if !crate::model::is_physical_time_us(o.time_us) => {
            Err(Error::invalid(
                "time",
                format!(
                    "the model's time is {:e} us for this point, which is not a physical answer; an input is out of range",
                    o.time_us
                ),
            ))
        }
        r => r,
    }
}

/// Calls `visit(index, cell, value_indices, values, outcome)` for points `start..end`, in order, with one
/// scratch space for the whole range.
pub fn for_points(
    space: &Space,
    start: u64,
    end: u64,
    mut visit: impl FnMut(u64, usize, &[usize], &[f64], &Result<Outcome>),
) {
    if start >= end {
        return;
    }
    let mut vi = vec![0usize; space.axes.len()];
    let mut cell = space.decode(start, &mut vi);
    let mut values: Vec<f64> = space
        .axes
        .iter()
        .zip(&vi)
        .map(|(a, &i)| a.values[i])
        .collect();
    let mut scratch = Scratch {
        params: ParamValues::new(space.axes.iter().map(|a| (a.name.clone(), a.values[0]))),
    };
    for index in start..end {
        let r = finite(space.cells[cell].evaluator.evaluate(&values, &mut scratch));
        visit(index, cell, &vi, &values, &r);
        if space.advance(&mut vi) {
            cell += 1;
        }
        for ((v, a), &i) in values.iter_mut().zip(&space.axes).zip(&vi) {
            *v = a.values[i];
        }
    }
}

/// Folds every point of the space in parallel: `visit` adds a point to an accumulator,
/// `merge` joins two. The visit order within a sub-chunk is the point order.
pub fn fold<A: Send>(
    space: &Space,
    identity: impl Fn() -> A + Sync + Send,
    visit: impl Fn(&mut A, u64, usize, &[f64], &Result<Outcome>) + Sync + Send,
    merge: impl Fn(A, A) -> A + Sync + Send,
) -> A {
    fold_with_progress(space, &crate::progress::Quiet, identity, visit, merge)
}

/// [`fold`] reporting the points done to `progress` (one stage of `points`).
pub fn fold_with_progress<A: Send>(
    space: &Space,
    progress: &dyn Progress,
    identity: impl Fn() -> A + Sync + Send,
    visit: impl Fn(&mut A, u64, usize, &[f64], &Result<Outcome>) + Sync + Send,
    merge: impl Fn(A, A) -> A + Sync + Send,
) -> A {
    progress.start("points", space.len());
    let acc = sub_chunks(0, space.len())
        .into_par_iter()
        .map(|(a, b)| {
            let mut acc = identity();
            for_points(space, a, b, |i, c, _, v, r| visit(&mut acc, i, c, v, r));
            progress.advance(b - a);
            acc
        })
        .reduce(&identity, &merge);
    progress.finish();
    acc
}

fn sub_chunks(start: u64, end: u64) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let mut a = start;
    while a < end {
        let b = (a + SUB_CHUNK_POINTS).min(end);
        out.push((a, b));
        a = b;
    }
    out
}

/// How a sweep to a file runs.
#[derive(Debug, Clone)]
pub struct SweepOptions {
    pub format: Format,
    pub gzip: bool,
    pub resume: bool,
    /// Points per checkpoint.
    pub chunk_points: u64,
    /// Stop (leaving the partial file and checkpoint) once this many points are done: for tests
    /// of resuming.
    pub stop_after: Option<u64>,
}

/// What a sweep did.
#[derive(Debug, Clone, Serialize)]
pub struct SweepSummary {
    pub output: PathBuf,
    pub points: u64,
    pub counts: Counts,
    /// Points taken from a resumed partial file.
    pub resumed_points: u64,
    /// Whether `stop_after` stopped the sweep (the output is then not written).
    pub stopped: bool,
    pub seconds: f64,
    /// Points computed in this run per second.
    pub points_per_second: f64,
}

#[derive(Debug, Serialize, Deserialize)]
struct Checkpoint {
    fingerprint: String,
    points_done: u64,
    bytes_done: u64,
    /// Lines of the partial file's first `bytes_done` bytes (the CSV header included).
    lines_done: u64,
    /// CRC-32 of the partial file's first `bytes_done` bytes.
    crc32: u32,
    counts: Counts,
}

/// The lock file beside an output: held (an advisory exclusive lock) for as long as a sweep
/// writes the output's partial file and checkpoint.
pub fn lock_file(path: &Path) -> PathBuf {
    let (partial, _) = side_files(path);
    partial.with_extension("lock")
}

/// An exclusive lock on an output's side files; released (and its file removed) on drop.
struct OutputLock {
    path: PathBuf,
    _file: File,
}

impl Drop for OutputLock {
    fn drop(&mut self) {
        // Removed while still held, so that no other process can lock the old inode after it.
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Takes the output's lock, or fails naming the process that holds it.
fn lock_output(path: &Path) -> Result<OutputLock> {
    let lock = lock_file(path);
    loop {
        let mut f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&lock)
            .map_err(|e| Error::io(format!("cannot create the lock file {}", lock.display()), e))?;
        match f.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = f.read_to_string(&mut holder);
                let holder = holder.trim();
                let who = if holder.is_empty() {
                    "another process".to_string()
                } else {
                    format!("process {holder}")
                };
                return Err(Error::file(
                    path,
                    format!(
                        "is being written by {who} (lock {}); wait for it to finish or choose another output",
                        lock.display()
                    ),
                ));
            }
            Err(std::fs::TryLockError::Error(e)) => {
                return Err(Error::io(format!("cannot lock {}", lock.display()), e))
            }
        }
        // The holder before us may have removed the file between our open and our lock: then
        // the lock is on an unlinked inode and we try again on the new file.
        let same = match (f.metadata(), std::fs::metadata(&lock)) {
            (Ok(a), Ok(b)) => {
                use std::os::unix::fs::MetadataExt;
                a.ino() == b.ino() && a.dev() == b.dev()
            }
            _ => false,
        };
        if !same {
            continue;
        }
        let _ = f.set_len(0);
        let _ = f.write_all(std::process::id().to_string().as_bytes());
        return Ok(OutputLock {
            path: lock,
            _file: f,
        });
    }
}

/// The partial file and checkpoint beside an output.
pub fn side_files(path: &Path) -> (PathBuf, PathBuf) {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "out".into());
    (
        dir.join(format!(".{name}.partial")),
        dir.join(format!(".{name}.checkpoint")),
    )
}

/// Runs the whole sweep into `path`.
///
/// `progress` gets one stage of `points` and its notes (for example that there was nothing to
/// resume).
pub fn run_to_file(
    space: &Space,
    path: &Path,
    opts: &SweepOptions,
    progress: &dyn Progress,
) -> Result<SweepSummary> {
    let started = Instant::now();
    let total = space.len();
    let (partial, checkpoint) = side_files(path);
    crate::error::output_dir_exists(path)?;
    let _lock = lock_output(path)?;
    let mut fp = Fnv(space.fingerprint);
    fp.add(match opts.format {
        Format::Csv => b"csv",
        Format::Jsonl => b"jsonl",
    });
    let fingerprint = format!("{:016x}", fp.0);
    let rows = RowWriter::new(space, opts.format);
    let io = |what: &str, p: &Path| {
        let what = what.to_string();
        let p = p.display().to_string();
        move |e| Error::io(format!("{what} {p}"), e)
    };

    let mut state = None;
    if opts.resume {
        state = resume_state(
            &partial,
            &checkpoint,
            &fingerprint,
            total,
            &rows.header(),
            progress,
        )?;
        if state.is_none() {
            progress.note(&format!(
                "no checkpoint to resume for {}; starting from the first point",
                path.display()
            ));
        }
    }
    let header = rows.header();
    let header_lines = header.iter().filter(|&&b| b == b'\n').count() as u64;
    let (file, mut done, mut counts, mut bytes, mut lines, mut crc) = match state {
        Some((f, c, crc)) => (f, c.points_done, c.counts, c.bytes_done, c.lines_done, crc),
        None => {
            let mut f = File::create(&partial).map_err(io("cannot create", &partial))?;
            f.write_all(&header).map_err(io("cannot write", &partial))?;
            let mut crc = crc32fast::Hasher::new();
            crc.update(&header);
            (
                f,
                0,
                Counts::default(),
                header.len() as u64,
                header_lines,
                crc,
            )
        }
    };
    let resumed_points = done;
    let save = |done: u64, bytes: u64, lines: u64, crc: &crc32fast::Hasher, counts: Counts| {
        let c = Checkpoint {
            fingerprint: fingerprint.clone(),
            points_done: done,
            bytes_done: bytes,
            lines_done: lines,
            crc32: crc.clone().finalize(),
            counts,
        };
        let text =
            serde_json::to_string(&c).map_err(|e| Error::invalid("checkpoint", e.to_string()))?;
        write_atomic(&checkpoint, text.as_bytes())
    };
    let mut writer = BufWriter::with_capacity(1 << 20, file);
    writer.flush().map_err(io("cannot write", &partial))?;
    save(done, bytes, lines, &crc, counts)?;

    progress.start("points", total);
    progress.update(done);
    let chunk = opts.chunk_points.max(1);
    let mut stopped = false;
    while done < total {
        if opts.stop_after.is_some_and(|s| done >= s) {
            stopped = true;
            break;
        }
        let end = (done + chunk).min(total);
        let parts: Vec<(Vec<u8>, Counts)> = sub_chunks(done, end)
            .into_par_iter()
            .map(|(a, b)| {
                let mut buf = Vec::with_capacity(((b - a) * 96) as usize);
                let c = rows.rows(a, b, &mut buf);
                (buf, c)
            })
            .collect();
        for (buf, c) in &parts {
            writer
                .write_all(buf)
                .map_err(io("cannot write", &partial))?;
            bytes = bytes.saturating_add(buf.len() as u64);
            lines = lines.saturating_add(buf.iter().filter(|&&b| b == b'\n').count() as u64);
            crc.update(buf);
            counts.add(c);
        }
        writer.flush().map_err(io("cannot write", &partial))?;
        done = end;
        save(done, bytes, lines, &crc, counts)?;
        progress.update(done);
    }
    progress.finish();
    drop(writer);
    if !stopped {
        if opts.gzip {
            compress_atomic(&partial, path)?;
            let _ = std::fs::remove_file(&partial);
        } else {
            std::fs::rename(&partial, path).map_err(io("cannot rename to", path))?;
        }
        let _ = std::fs::remove_file(&checkpoint);
    }
    let seconds = started.elapsed().as_secs_f64();
    Ok(SweepSummary {
        output: path.to_path_buf(),
        points: done,
        counts,
        resumed_points,
        stopped,
        seconds,
        points_per_second: (done - resumed_points) as f64 / seconds.max(1e-9),
    })
}

/// The partial file truncated to the checkpoint (with the CRC of what is kept), or `None` when
/// there is nothing to resume.
///
/// The checkpoint is checked against the partial file before anything is truncated: its counts
/// must add up to its points, the file must hold its bytes, and those bytes must have the
/// checkpoint's line count (one per point after the header) and CRC-32. A mismatch is an error
/// that leaves both files untouched.
fn resume_state(
    partial: &Path,
    checkpoint: &Path,
    fingerprint: &str,
    total: u64,
    header: &[u8],
    progress: &dyn Progress,
) -> Result<Option<(File, Checkpoint, crc32fast::Hasher)>> {
    let Ok(text) = std::fs::read_to_string(checkpoint) else {
        return Ok(None);
    };
    let c: Checkpoint = serde_json::from_str(&text).map_err(|e| {
        Error::file(
            checkpoint,
            format!("is not a sweep checkpoint ({e}); delete it or drop `resume`"),
        )
    })?;
    if c.fingerprint != fingerprint {
        return Err(Error::invalid(
            "resume",
            format!(
                "the checkpoint {} belongs to a different sweep (other models, devices, parameters or format); delete it or drop `resume`",
                checkpoint.display()
            ),
        ));
    }
    let corrupt = |why: String| {
        Error::file(
            checkpoint,
            format!(
                "does not match {} ({why}); delete both files or drop `resume`",
                partial.display()
            ),
        )
    };
    if c.points_done > total {
        return Err(corrupt(format!(
            "it counts {} points, the space has {total}",
            c.points_done
        )));
    }
    if c.counts.total() != Some(c.points_done) {
        return Err(corrupt(format!(
            "its ok/infeasible/invalid counts do not add up to its {} points",
            c.points_done
        )));
    }
    let header_lines = header.iter().filter(|&&b| b == b'\n').count() as u64;
    if c.points_done.checked_add(header_lines) != Some(c.lines_done) {
        return Err(corrupt(format!(
            "{} lines for {} points",
            c.lines_done, c.points_done
        )));
    }
    if c.bytes_done < header.len() as u64 {
        return Err(corrupt(format!(
            "{} bytes is shorter than the header",
            c.bytes_done
        )));
    }
    let Ok(mut f) = OpenOptions::new().read(true).write(true).open(partial) else {
        return Ok(None);
    };
    let len = f
        .metadata()
        .map_err(|e| Error::io(format!("cannot read {}", partial.display()), e))?
        .len();
    if len < c.bytes_done {
        progress.note(&format!(
            "{} is shorter than its checkpoint says; starting again",
            partial.display()
        ));
        return Ok(None);
    }
    // Read back what the checkpoint vouches for.
    let mut crc = crc32fast::Hasher::new();
    let mut lines = 0u64;
    let mut last = b'\n';
    let mut left = c.bytes_done;
    let mut buf = vec![0u8; 1 << 20];
    let mut first = true;
    while left > 0 {
        let want = usize::try_from(left.min(buf.len() as u64)).unwrap_or(buf.len());
        f.read_exact(&mut buf[..want])
            .map_err(|e| Error::io(format!("cannot read {}", partial.display()), e))?;
        let part = &buf[..want];
        if first && !part.starts_with(header) {
            return Err(corrupt("its header is not this sweep's".into()));
        }
        first = false;
        crc.update(part);
        lines += part.iter().filter(|&&b| b == b'\n').count() as u64;
        last = part[want - 1];
        left -= want as u64;
    }
    if lines != c.lines_done || (c.bytes_done > 0 && last != b'\n') {
        return Err(corrupt(format!(
            "the first {} bytes hold {lines} whole lines, the checkpoint says {}",
            c.bytes_done, c.lines_done
        )));
    }
    if crc.clone().finalize() != c.crc32 {
        return Err(corrupt(format!(
            "the CRC-32 of its first {} bytes differs",
            c.bytes_done
        )));
    }
    f.set_len(c.bytes_done)
        .and_then(|()| f.seek(SeekFrom::End(0)).map(|_| ()))
        .map_err(|e| Error::io(format!("cannot truncate {}", partial.display()), e))?;
    Ok(Some((f, c, crc)))
}

/// Gzips `from` into `to` through a temporary file and a rename.
fn compress_atomic(from: &Path, to: &Path) -> Result<()> {
    let (tmp, _) = side_files(to);
    let tmp = tmp.with_extension(format!("gz.tmp{}", std::process::id()));
    let result = (|| -> std::io::Result<()> {
        let mut input = File::open(from)?;
        let out = File::create(&tmp)?;
        let mut gz =
            flate2::write::GzEncoder::new(BufWriter::new(out), flate2::Compression::fast());
        let mut buf = vec![0u8; 1 << 20];
        loop {
            let n = input.read(&mut buf)?;
            if n == 0 {
                break;
            }
            gz.write_all(&buf[..n])?;
        }
        let out = gz.finish()?;
        let f = out.into_inner().map_err(|e| e.into_error())?;
        f.sync_all()?;
        std::fs::rename(&tmp, to)
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(Error::io(format!("cannot write {}", to.display()), e));
    }
    Ok(())
}

/// A number: whole values as integers, others in the shortest form that reads back the same,
/// `missing` for NaN and infinities.
pub fn number(out: &mut Vec<u8>, v: f64, missing: &[u8]) {
    if !v.is_finite() {
        out.extend_from_slice(missing);
    } else if let Some(i) = whole(v) {
        out.extend_from_slice(itoa::Buffer::new().format(i).as_bytes());
    } else {
        out.extend_from_slice(ryu::Buffer::new().format_finite(v).as_bytes());
    }
}

/// A CSV field, quoted when it needs to be.
///
/// Control characters (line breaks included) become spaces, so that every row is one line: the
/// checkpoint counts rows as lines.
pub fn csv_field(s: &str) -> String {
    let s: std::borrow::Cow<str> = if s.contains(|c: char| c.is_control()) {
        s.chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect::<String>()
            .into()
    } else {
        s.into()
    };
    if s.contains([',', '"']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn json_str(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_short_and_exact() {
        let mut b = Vec::new();
        number(&mut b, 40000.0, b"");
        b.push(b' ');
        number(&mut b, 0.1, b"");
        b.push(b' ');
        number(&mut b, f64::NAN, b"null");
        assert_eq!(String::from_utf8(b).unwrap(), "40000 0.1 null");
    }

    #[test]
    fn formats_from_names() {
        assert_eq!(
            Format::from_path(Path::new("a/b.csv.gz")),
            (Some(Format::Csv), true)
        );
        assert_eq!(
            Format::from_path(Path::new("b.jsonl")),
            (Some(Format::Jsonl), false)
        );
        assert_eq!(Format::from_path(Path::new("b.txt")), (None, false));
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("x\"y"), "\"x\"\"y\"");
    }
}
