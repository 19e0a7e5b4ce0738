//! Reading a suite file: plain cases, `defaults`, and groups expanded from measurement files
//! (filter, seeded sample, template). Every error names the suite file, the case (or the group
//! and row) and the field. The format is documented in the parent module.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::compile::{Compiler, SourceSpec};
use super::template::{self, Row};
use super::{Amount, Case, DeviceRef, KernelSource, Suite};
use crate::emulate::LaunchDims;
use crate::emulate::{DataArg, DataSpec};
use crate::error::{Error, Result};
use crate::fit::measurements::{read_measurements_as, Format};
use crate::fit::split::SplitMix64;

/// The fields a case (or a group's case template, or `defaults`) may have.
const CASE_KEYS: &[&str] = &[
    "id",
    "dataset",
    "source",
    "ptx",
    "compiler",
    "arch",
    "defines",
    "options",
    "include",
    "entry",
    "name",
    "grid",
    "block",
    "args",
    "data",
    "registers",
    "shared_bytes",
    "dynamic_shared_bytes",
    "mapped_host",
    "device",
    "measured_us",
];

/// The fields of a group besides its `case` template.
const GROUP_KEYS: &[&str] = &[
    "dataset",
    "measurements",
    "format",
    "where",
    "sample",
    "sample_per",
    "sample_by",
    "seed",
    "case",
];

/// Where an error happened: the suite file and the case or group.
struct At<'a> {
    file: &'a Path,
    what: String,
}

impl At<'_> {
    fn err(&self, field: &str, message: impl std::fmt::Display) -> Error {
        Error::file(
            self.file,
            format!("{}, field `{field}`: {message}", self.what),
        )
    }
    fn whole(&self, message: impl std::fmt::Display) -> Error {
        Error::file(self.file, format!("{}: {message}", self.what))
    }
}

pub(super) fn parse_suite(text: &str, file: &Path) -> Result<Suite> {
    let root: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        Error::file(
            file,
            format!("is not valid TOML: {}", one_line(&e.to_string())),
        )
    })?;
    let base = file.parent().unwrap_or(Path::new("")).to_path_buf();
    let top = At {
        file,
        what: "the suite".into(),
    };
    for k in root.keys() {
        if !["defaults", "case", "group"].contains(&k.as_str()) {
            return Err(top.whole(format!(
                "unknown key `{k}`; a suite has `defaults`, `case` and `group`"
            )));
        }
    }
    let default_dataset = file
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "suite".into());
    let defaults = match root.get("defaults") {
        None => toml::Table::new(),
        Some(toml::Value::Table(t)) => {
            let at = At {
                file,
                what: "`defaults`".into(),
            };
            check_keys(t, CASE_KEYS, &at)?;
            t.clone()
        }
        Some(_) => return Err(top.whole("`defaults` must be a table")),
    };
    let mut cases = Vec::new();
    let mut notes = Vec::new();
    for (k, t) in tables(&root, "case", &top)?.iter().enumerate() {
        let at = At {
            file,
            what: match t.get("id").and_then(toml::Value::as_str) {
                Some(id) => format!("case {} (`{id}`)", k + 1),
                None => format!("case {}", k + 1),
            },
        };
        check_keys(t, CASE_KEYS, &at)?;
        let merged = merge(&defaults, t);
        cases.push(read_case(
            &merged,
            &base,
            &at,
            &format!("case {}", k + 1),
            &default_dataset,
        )?);
    }
    for (g, t) in tables(&root, "group", &top)?.iter().enumerate() {
        let (mut group_cases, note) =
            read_group(t, g + 1, &defaults, &base, file, &default_dataset)?;
        cases.append(&mut group_cases);
        notes.push(note);
    }
    if cases.is_empty() {
        return Err(top.whole("has no cases; add [[case]] or [[group]] tables"));
    }
    Ok(Suite {
        file: file.to_path_buf(),
        cases,
        notes,
    })
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The tables of an array-of-tables key (absent: none).
fn tables<'a>(root: &'a toml::Table, key: &str, at: &At) -> Result<Vec<&'a toml::Table>> {
    match root.get(key) {
        None => Ok(Vec::new()),
        Some(toml::Value::Array(a)) => a
            .iter()
            .map(|v| {
                v.as_table()
                    .ok_or_else(|| at.whole(format!("every `{key}` must be a table ([[{key}]])")))
            })
            .collect(),
        Some(_) => Err(at.whole(format!("`{key}` must be written [[{key}]]"))),
    }
}

fn check_keys(t: &toml::Table, allowed: &[&str], at: &At) -> Result<()> {
    for k in t.keys() {
        if !allowed.contains(&k.as_str()) {
            return Err(at.whole(format!(
                "unknown field `{k}`; known fields: {}",
                allowed.join(", ")
            )));
        }
    }
    Ok(())
}

/// `over` on top of `under` (keys of `over` win; a `source` or `ptx` in `over` replaces
/// both kernel keys of `under`).
fn merge(under: &toml::Table, over: &toml::Table) -> toml::Table {
    let mut out = under.clone();
    if over.contains_key("source") || over.contains_key("ptx") {
        out.remove("source");
        out.remove("ptx");
    }
    for (k, v) in over {
        out.insert(k.clone(), v.clone());
    }
    out
}

fn text<'v>(v: &'v toml::Value, field: &str, at: &At) -> Result<&'v str> {
    v.as_str()
        .ok_or_else(|| at.err(field, format!("must be a string, got {}", v.type_str())))
}

/// A whole number at least 0, written as a number or as the text of one.
fn count(v: &toml::Value, field: &str, at: &At) -> Result<u64> {
    let bad = || at.err(field, format!("must be a whole number at least 0, got {v}"));
    match v {
        toml::Value::Integer(i) => u64::try_from(*i).map_err(|_| bad()),
        toml::Value::Float(f) if f.fract() == 0.0 && *f >= 0.0 && *f < 9.0e15 => Ok(*f as u64),
        toml::Value::String(s) => {
            let f: f64 = s.trim().parse().map_err(|_| bad())?;
            count(&toml::Value::Float(f), field, at)
        }
        _ => Err(bad()),
    }
}

fn number(v: &toml::Value, field: &str, at: &At) -> Result<f64> {
    let x = match v {
        toml::Value::Integer(i) => *i as f64,
        toml::Value::Float(f) => *f,
        toml::Value::String(s) => s
            .trim()
            .parse()
            .map_err(|_| at.err(field, format!("must be a number, got `{s}`")))?,
        other => return Err(at.err(field, format!("must be a number, got {}", other.type_str()))),
    };
    if !x.is_finite() || x <= 0.0 {
        return Err(at.err(field, format!("must be a number above zero, got {x}")));
    }
    Ok(x)
}

fn amount(v: Option<&toml::Value>, field: &str, at: &At, default: Amount) -> Result<Amount> {
    match v {
        None => Ok(default),
        Some(toml::Value::String(s)) if s.trim() == "compiler" => Ok(Amount::Compiler),
        Some(x) => count(x, field, at).map(Amount::Given).map_err(|_| {
            at.err(
                field,
                format!("must be a whole number or \"compiler\", got {x}"),
            )
        }),
    }
}

fn dims(v: &toml::Value, field: &str, at: &At) -> Result<[u32; 3]> {
    let text = match v {
        toml::Value::Array(a) => {
            let parts: Vec<String> = a
                .iter()
                .map(|x| count(x, field, at).map(|n| n.to_string()))
                .collect::<Result<_>>()?;
            parts.join(",")
        }
        toml::Value::String(s) => s.clone(),
        other => count(other, field, at)?.to_string(),
    };
    LaunchDims::parse_dims(field, &text).map_err(|e| match e {
        Error::InvalidInput { message, .. } => at.err(field, message),
        other => other,
    })
}

fn strings(v: &toml::Value, field: &str, at: &At) -> Result<Vec<String>> {
    match v {
        toml::Value::Array(a) => a
            .iter()
            .map(|x| text(x, field, at).map(str::to_string))
            .collect(),
        toml::Value::String(s) => Ok(vec![s.clone()]),
        other => Err(at.err(
            field,
            format!("must be a list of strings, got {}", other.type_str()),
        )),
    }
}

/// A scalar as the text a compiler define or kernel argument takes.
fn scalar_text(v: &toml::Value, field: &str, at: &At) -> Result<String> {
    Ok(match v {
        toml::Value::String(s) => s.clone(),
        toml::Value::Integer(i) => i.to_string(),
        toml::Value::Float(f) => format!("{f}"),
        toml::Value::Boolean(b) => u8::from(*b).to_string(),
        other => {
            return Err(at.err(
                field,
                format!("must be a number or a string, got {}", other.type_str()),
            ))
        }
    })
}

/// A data hint of a case (the text form of `emulate::hints`); a file is relative to the
/// suite's folder and must exist. The error is the message without the field's name.
fn data_spec(text: &str, base: &Path) -> std::result::Result<DataSpec, String> {
    let spec = DataSpec::parse("data", text.trim()).map_err(|e| match e {
        Error::InvalidInput { message, .. } => message,
        other => other.to_string(),
    })?;
    match spec {
        DataSpec::File(p) => {
            let path = base.join(p);
            if !path.is_file() {
                return Err(format!("`{}`: no file {}", text.trim(), path.display()));
            }
            Ok(DataSpec::File(path))
        }
        other => Ok(other),
    }
}

fn table<'v>(v: &'v toml::Value, field: &str, at: &At) -> Result<&'v toml::Table> {
    v.as_table().ok_or_else(|| {
        at.err(
            field,
            format!(
                "must be a table such as {{ NAME = VALUE }}, got {}",
                v.type_str()
            ),
        )
    })
}

/// A case from its (merged) table.
fn read_case(
    t: &toml::Table,
    base: &Path,
    at: &At,
    default_id: &str,
    default_dataset: &str,
) -> Result<Case> {
    let get = |k: &str| t.get(k);
    let need = |k: &str| get(k).ok_or_else(|| at.err(k, "is missing"));
    let path_of = |k: &str| -> Result<Option<PathBuf>> {
        get(k)
            .map(|v| text(v, k, at).map(|s| base.join(s)))
            .transpose()
    };
    let kernel = match (path_of("source")?, path_of("ptx")?) {
        (Some(_), Some(_)) => return Err(at.whole("give `source` or `ptx`, not both")),
        (None, None) => return Err(at.err("source", "is missing (or give `ptx`)")),
        (None, Some(p)) => {
            for k in ["compiler", "arch", "defines", "options", "include"] {
                if get(k).is_some() {
                    return Err(at.err(k, "applies to `source` cases only, not to `ptx`"));
                }
            }
            if !p.is_file() {
                return Err(at.err("ptx", format!("no file {}", p.display())));
            }
            KernelSource::Ptx(p)
        }
        (Some(p), None) => {
            if !p.is_file() {
                return Err(at.err("source", format!("no file {}", p.display())));
            }
            let compiler = match get("compiler") {
                None => Compiler::for_path(&p),
                Some(v) => Compiler::parse(text(v, "compiler", at)?).ok_or_else(|| {
                    at.err("compiler", format!("must be nvrtc, nvcc or clang, got {v}"))
                })?,
            };
            let arch = match get("arch") {
                None => None,
                Some(v) => {
                    let s = scalar_text(v, "arch", at)?;
                    let digits = s
                        .trim()
                        .trim_start_matches("sm_")
                        .trim_start_matches("compute_");
                    Some(digits.parse::<u32>().map_err(|_| {
                        at.err("arch", format!("must be sm_XX such as sm_75, got `{s}`"))
                    })?)
                }
            };
            let mut defines = Vec::new();
            if let Some(v) = get("defines") {
                for (k, x) in table(v, "defines", at)? {
                    defines.push((k.clone(), scalar_text(x, &format!("defines.{k}"), at)?));
                }
            }
            defines.sort();
            let include = match get("include") {
                Some(v) => strings(v, "include", at)?
                    .into_iter()
                    .map(|s| {
                        let d = base.join(&s);
                        if d.is_dir() {
                            Ok(d)
                        } else {
                            Err(at.err("include", format!("no directory {}", d.display())))
                        }
                    })
                    .collect::<Result<_>>()?,
                None => Vec::new(),
            };
            KernelSource::Source(SourceSpec {
                path: p,
                compiler,
                defines,
                options: get("options")
                    .map(|v| strings(v, "options", at))
                    .transpose()?
                    .unwrap_or_default(),
                include,
                arch,
            })
        }
    };
    let is_source = matches!(kernel, KernelSource::Source(_));
    let compiler_default = if is_source {
        Amount::Compiler
    } else {
        Amount::Unknown
    };
    let entry = text(need("entry")?, "entry", at)?.trim().to_string();
    if entry.is_empty() {
        return Err(at.err("entry", "must name a kernel"));
    }
    let name = match get("name") {
        Some(v) => text(v, "name", at)?.trim().to_string(),
        None => entry.clone(),
    };
    let launch = LaunchDims {
        grid: dims(need("grid")?, "grid", at)?,
        block: dims(need("block")?, "block", at)?,
    };
    let mut args = Vec::new();
    if let Some(v) = get("args") {
        for (k, x) in table(v, "args", at)? {
            args.push(format!("{k}={}", scalar_text(x, &format!("args.{k}"), at)?));
        }
    }
    let mut data = Vec::new();
    if let Some(v) = get("data") {
        for (k, x) in table(v, "data", at)? {
            let field = format!("data.{k}");
            let spec = text(x, &field, at)?;
            data.push(DataArg {
                param: k.clone(),
                spec: data_spec(spec, base).map_err(|m| at.err(&field, m))?,
            });
        }
    }
    let device_text = text(need("device")?, "device", at)?.trim();
    if device_text.is_empty() {
        return Err(at.err("device", "must name a GPU"));
    }
    let device = if device_text.ends_with(".toml") {
        DeviceRef::File(base.join(device_text))
    } else {
        DeviceRef::Name(device_text.to_string())
    };
    Ok(Case {
        id: match get("id") {
            Some(v) => text(v, "id", at)?.to_string(),
            None => default_id.to_string(),
        },
        dataset: match get("dataset") {
            Some(v) => text(v, "dataset", at)?.to_string(),
            None => default_dataset.to_string(),
        },
        kernel,
        entry,
        name,
        launch,
        args,
        data,
        registers: amount(get("registers"), "registers", at, compiler_default)?,
        shared_bytes: amount(get("shared_bytes"), "shared_bytes", at, compiler_default)?,
        dynamic_shared_bytes: get("dynamic_shared_bytes")
            .map(|v| count(v, "dynamic_shared_bytes", at))
            .transpose()?
            .unwrap_or(0),
        mapped_host: get("mapped_host")
            .map(|v| strings(v, "mapped_host", at))
            .transpose()?
            .unwrap_or_default(),
        device,
        measured_us: number(need("measured_us")?, "measured_us", at)?,
    })
}

/// A group's cases and a note saying how many rows it kept.
fn read_group(
    g: &toml::Table,
    number: usize,
    defaults: &toml::Table,
    base: &Path,
    file: &Path,
    default_dataset: &str,
) -> Result<(Vec<Case>, String)> {
    let mut at = At {
        file,
        what: format!("group {number}"),
    };
    check_keys(g, GROUP_KEYS, &at)?;
    let mut templ = match g.get("case") {
        Some(v) => {
            let t = table(v, "case", &at)?;
            check_keys(
                t,
                CASE_KEYS,
                &At {
                    file,
                    what: format!("group {number} `case` template"),
                },
            )?;
            merge(defaults, t)
        }
        None => {
            return Err(at.err(
                "case",
                "is missing: the template each row becomes ([group.case])",
            ))
        }
    };
    if let Some(d) = g.get("dataset") {
        text(d, "dataset", &at)?;
        templ.entry("dataset".to_string()).or_insert(d.clone());
    }
    for (k, v) in &templ {
        template::check_value(v).map_err(|m| at.err(&format!("case.{k}"), m))?;
    }
    let meas_path = base.join(text(
        g.get("measurements")
            .ok_or_else(|| at.err("measurements", "is missing"))?,
        "measurements",
        &at,
    )?);
    let format = g
        .get("format")
        .map(|v| Format::parse(text(v, "format", &at)?).map_err(|e| at.err("format", e)))
        .transpose()?;
    let set = read_measurements_as(&meas_path, format)?;
    let rows: Vec<Row> = set.measurements.iter().map(template::row_of).collect();
    let label = match templ.get("dataset").and_then(toml::Value::as_str) {
        Some(d) => format!("group {number} (`{d}`)"),
        None => format!("group {number}"),
    };
    at.what = label.clone();

    // Filter.
    let mut keep: Vec<usize> = (0..rows.len()).collect();
    if let Some(w) = g.get("where") {
        for (col, want) in table(w, "where", &at)? {
            if !rows.iter().any(|r| r.contains_key(col)) {
                return Err(at.err(
                    &format!("where.{col}"),
                    format!("no row of {} has a column `{col}`", meas_path.display()),
                ));
            }
            let options: Vec<toml::Value> = match want {
                toml::Value::Array(a) => a.clone(),
                v => vec![v.clone()],
            };
            keep.retain(|&i| {
                rows[i]
                    .get(col)
                    .is_some_and(|c| options.iter().any(|o| c.matches(o)))
            });
        }
    }
    let matched = keep.len();

    // Seeded sample per stratum.
    let columns = |field: &str| -> Result<Vec<String>> {
        let names = g
            .get(field)
            .map(|v| strings(v, field, &at))
            .transpose()?
            .unwrap_or_default();
        if g.get("sample").is_none() && !names.is_empty() {
            return Err(at.err(field, "needs `sample`"));
        }
        for c in &names {
            if !rows.iter().any(|r| r.contains_key(c)) {
                return Err(at.err(field, format!("no row has a column `{c}`")));
            }
        }
        Ok(names)
    };
    let per = columns("sample_per")?;
    let by = columns("sample_by")?;
    let seed = g
        .get("seed")
        .map(|v| count(v, "seed", &at))
        .transpose()?
        .unwrap_or(1);
    if let Some(v) = g.get("sample") {
        let n = count(v, "sample", &at)? as usize;
        if n == 0 {
            return Err(at.err("sample", "must be at least 1"));
        }
        let key_of = |i: usize, cols: &[String]| -> String {
            let cells: Vec<String> = cols
                .iter()
                .map(|c| rows[i].get(c).map(|x| x.text()).unwrap_or_default())
                .collect();
            cells.join("\u{1f}")
        };
        let unit_of = |i: usize| {
            if by.is_empty() {
                i.to_string()
            } else {
                key_of(i, &by)
            }
        };
        // Sampling units (rows, or distinct values of `sample_by`) per stratum, first-seen order.
        let mut strata: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for &i in &keep {
            let units = strata.entry(key_of(i, &per)).or_default();
            let u = unit_of(i);
            if !units.contains(&u) {
                units.push(u);
            }
        }
        let mut chosen: std::collections::HashSet<(String, String)> = Default::default();
        for (key, mut units) in strata {
            if units.len() > n {
                SplitMix64::new(crate::fit::split::stratum_seed(seed, &key)).shuffle(&mut units);
                units.truncate(n);
            }
            chosen.extend(units.into_iter().map(|u| (key.clone(), u)));
        }
        keep.retain(|&i| chosen.contains(&(key_of(i, &per), unit_of(i))));
    }

    let mut cases = Vec::with_capacity(keep.len());
    for &i in &keep {
        let row = &rows[i];
        let m = &set.measurements[i];
        let row_at = At {
            file,
            what: format!("{label} row {}:{}", m.source.file, m.source.line),
        };
        let mut t = toml::Table::new();
        for (k, v) in &templ {
            let s = template::substitute_value(v, row).map_err(|e| row_at.err(k, e))?;
            t.insert(k.clone(), s);
        }
        t.entry("measured_us".to_string())
            .or_insert_with(|| toml::Value::Float(m.time_us));
        if let Some(d) = &m.device {
            t.entry("device".to_string())
                .or_insert_with(|| toml::Value::String(d.clone()));
        }
        for (k, d) in [("grid", m.grid), ("block", m.block)] {
            if let Some(d) = d {
                t.entry(k.to_string())
                    .or_insert_with(|| toml::Value::String(format!("{},{},{}", d.x, d.y, d.z)));
            }
        }
        // The row's kernel without its argument list (`dotProd(float*, ...)` -> `dotProd`).
        let entry = m.kernel.split('(').next().unwrap_or_default().trim();
        t.entry("entry".to_string())
            .or_insert_with(|| toml::Value::String(entry.to_string()));
        let id = format!("group {number} row {}", m.source.line);
        cases.push(read_case(&t, base, &row_at, &id, default_dataset)?);
    }
    let note = format!(
        "{label}: {} of {} rows of {} kept ({matched} matched the filter{})",
        cases.len(),
        rows.len(),
        meas_path.display(),
        if g.get("sample").is_some() {
            format!(", seeded sample with seed {seed}")
        } else {
            String::new()
        }
    );
    Ok((cases, note))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_hints_read_with_the_emulators_reader_and_files_must_exist() {
        let here = Path::new(env!("CARGO_MANIFEST_DIR"));
        assert_eq!(
            data_spec("uniform:-1:1:7", here).unwrap().to_string(),
            "uniform:-1:1:7"
        );
        // A file is joined to the suite's folder.
        assert_eq!(
            data_spec("file:Cargo.toml", here).unwrap(),
            DataSpec::File(here.join("Cargo.toml"))
        );
        let e = data_spec("file:no/such/file", here).unwrap_err();
        assert!(e.contains("no file") && e.contains("no/such/file"), "{e}");
        // The message has no field name: the caller adds `case N, field data.X`.
        assert_eq!(
            data_spec("zeros", here).unwrap_err(),
            "`zeros` is not a data hint; write const:V, iota[:START[:STEP]], uniform:LO:HI[:SEED] or file:PATH"
        );
    }
}
