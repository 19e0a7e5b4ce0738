//! The calibration file (`CAL.toml`): the model, the scopes of its groups, the devices its rows
//! came from (described by their properties, so that another GPU can be matched to them), each
//! group's fitted parameters with their intervals, errors and warnings, and how it was fitted.
//! Reading (old single-scope files too), writing, and finding the group that applies to a
//! (kernel, device) pair along the documented fallback order ([`FALLBACK_ORDER`]). No fitting.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize};

use super::params_of;
use crate::device::{catalogue, ComputeCapability, Device};
use crate::error::{Error, Result};
use crate::model::registry::ModelId;

/// How rows are grouped for fitting: one parameter set per group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scope {
    /// One parameter set per (kernel, device).
    Kernel,
    /// One parameter set per (kernel, architecture family): the kernel's rows on every device of
    /// the same compute-capability major version.
    KernelArchitecture,
    /// One parameter set per device.
    Device,
    /// One parameter set per architecture family (compute-capability major version).
    Architecture,
    /// One parameter set for every row.
    Global,
}

impl Scope {
    /// Every scope, most specific first.
    pub const ALL: [Scope; 5] = [
        Scope::Kernel,
        Scope::KernelArchitecture,
        Scope::Device,
        Scope::Architecture,
        Scope::Global,
    ];

    /// The name users type.
    pub fn name(self) -> &'static str {
        match self {
            Scope::Kernel => "kernel",
            Scope::KernelArchitecture => "kernel-architecture",
            Scope::Device => "device",
            Scope::Architecture => "architecture",
            Scope::Global => "global",
        }
    }

    /// Whether groups of this scope are per kernel.
    pub fn per_kernel(self) -> bool {
        matches!(self, Scope::Kernel | Scope::KernelArchitecture)
    }

    /// Reads one scope name.
    pub fn parse(text: &str) -> Result<Scope> {
        let t = text.trim();
        Scope::ALL
            .iter()
            .copied()
            .find(|s| s.name() == t)
            .ok_or_else(|| {
                Error::invalid(
                    "scope",
                    format!(
                        "expected one of {} (or `all`, or a comma-separated list), got `{text}`",
                        Scope::ALL.map(|s| format!("`{}`", s.name())).join(", ")
                    ),
                )
            })
    }

    /// Reads `all` or a comma-separated list of scopes; the result is ordered most specific
    /// first, without repeats.
    pub fn parse_list(text: &str) -> Result<Vec<Scope>> {
        if text.trim() == "all" {
            return Ok(Scope::ALL.to_vec());
        }
        let mut out: Vec<Scope> = text
            .split(',')
            .filter(|s| !s.trim().is_empty())
            .map(Scope::parse)
            .collect::<Result<_>>()?;
        if out.is_empty() {
            return Err(Error::invalid("scope", "names no scope"));
        }
        out.sort();
        out.dedup();
        Ok(out)
    }
}

impl std::fmt::Display for Scope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.name())
    }
}

/// The order in which groups are tried for a (kernel, device) pair; the first group that exists
/// gives the parameters. "Same device" means the same name or alias, or identical properties;
/// "family" is the compute-capability major version (3.x Kepler, 5.x Maxwell, 7.x Volta and
/// Turing, ...); "nearest device" is the device of the family closest in compute capability,
/// then in memory bandwidth, SM count and clock (log ratios). No step crosses a family except
/// the last.
pub const FALLBACK_ORDER: [&str; 7] = [
    "kernel scope: the kernel on the same device",
    "kernel-architecture scope: the kernel on the same family",
    "kernel scope: the kernel on the nearest device of the same family",
    "device scope: the same device",
    "architecture scope: the same family",
    "device scope: the nearest device of the same family",
    "global scope",
];

/// What a calibration keeps of a device: enough to match another GPU by its properties.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceDescription {
    pub name: String,
    pub architecture: String,
    pub compute_capability: String,
    pub sm_count: u32,
    pub memory_bandwidth_gbs: f64,
    pub core_clock_mhz: f64,
}

impl DeviceDescription {
    pub fn of(d: &Device) -> Self {
        Self {
            name: d.name.clone(),
            architecture: d.architecture.clone(),
            compute_capability: d.compute_capability.to_string(),
            sm_count: d.sm_count,
            memory_bandwidth_gbs: d.memory_bandwidth_gbs,
            core_clock_mhz: d.core_clock_mhz,
        }
    }

    fn cc(&self) -> Option<ComputeCapability> {
        ComputeCapability::parse(&self.compute_capability).ok()
    }

    /// The family key (the compute-capability major version, `"5"`), `None` when the compute
    /// capability does not read.
    pub fn family(&self) -> Option<String> {
        self.cc().map(|c| c.major.to_string())
    }

    /// Whether `d` is this device: its name or an alias, or the same properties.
    pub fn is(&self, d: &Device) -> bool {
        d.name == self.name
            || d.answers_to(&self.name)
            || (self.compute_capability == d.compute_capability.to_string()
                && self.sm_count == d.sm_count
                && self.memory_bandwidth_gbs == d.memory_bandwidth_gbs
                && self.core_clock_mhz == d.core_clock_mhz)
    }

    /// How far `d` is from this device: compute capability first (whole minor versions), then
    /// the log ratios of bandwidth, SM count and clock.
    pub fn distance(&self, d: &Device) -> f64 {
        let cc = match self.cc() {
            Some(c) => (f64::from(c.minor) - f64::from(d.compute_capability.minor)).abs(),
            None => 10.0,
        };
        let lr = |a: f64, b: f64| {
            if a > 0.0 && b > 0.0 {
                (a / b).ln().abs()
            } else {
                1.0
            }
        };
        cc * 10.0
            + lr(self.memory_bandwidth_gbs, d.memory_bandwidth_gbs)
            + lr(f64::from(self.sm_count), f64::from(d.sm_count))
            + lr(self.core_clock_mhz, d.core_clock_mhz)
    }
}

/// The family key of a device.
pub fn family_of(d: &Device) -> String {
    d.compute_capability.major.to_string()
}

/// A family key for people: `cc 5.x (Maxwell)`.
pub fn family_label(key: &str, architectures: &[&str]) -> String {
    let mut names: Vec<&str> = architectures.to_vec();
    names.sort_unstable();
    names.dedup();
    if names.is_empty() {
        format!("cc {key}.x")
    } else {
        format!("cc {key}.x ({})", names.join(", "))
    }
}

/// The fitted parameters of one group with their errors.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupCalibration {
    /// The group's scope (absent in old files: the file's scope).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<Scope>,
    /// The device, for kernel and device scopes.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub device: String,
    /// The family (compute-capability major version) for architecture scopes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub architecture: Option<String>,
    /// The kernel, for kernel scopes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    /// The devices whose rows the group was fitted on (names of the file's `devices`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub devices: Vec<String>,
    /// Rows and distinct problem points behind the fit.
    pub n: usize,
    pub points: usize,
    pub params: BTreeMap<String, f64>,
    /// 95 % bootstrap intervals `[low, high]` (absent without a bootstrap, or for a parameter
    /// that is not identifiable).
    #[serde(default)]
    pub intervals: BTreeMap<String, [f64; 2]>,
    /// MAPE and max error on the training rows (fractions).
    pub mape_train: f64,
    pub max_error_train: f64,
    /// Grouped k-fold cross-validated MAPE and max error, when there were enough points.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mape_cv: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_error_cv: Option<f64>,
    /// What the fit could not determine (too few rows or points, flat directions, an estimate
    /// outside its bootstrap percentiles).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

impl GroupCalibration {
    /// An empty group of a scope (the fit fills in the numbers).
    pub fn new(scope: Scope) -> Self {
        Self {
            scope: Some(scope),
            device: String::new(),
            architecture: None,
            kernel: None,
            devices: Vec::new(),
            n: 0,
            points: 0,
            params: BTreeMap::new(),
            intervals: BTreeMap::new(),
            mape_train: 0.0,
            max_error_train: 0.0,
            mape_cv: None,
            max_error_cv: None,
            warnings: Vec::new(),
        }
    }

    /// The group's scope (old files: the file's).
    pub fn scope_or(&self, file: Scope) -> Scope {
        self.scope.unwrap_or(file)
    }

    /// `kernel-architecture dotProd on cc 5.x`, for notes and tables.
    pub fn label(&self, file_scope: Scope) -> String {
        let scope = self.scope_or(file_scope);
        let mut s = scope.name().to_string();
        if let Some(k) = &self.kernel {
            s.push_str(&format!(" `{k}`"));
        }
        if !self.device.is_empty() {
            s.push_str(&format!(" on {}", self.device));
        } else if let Some(a) = &self.architecture {
            s.push_str(&format!(" on cc {a}.x"));
        }
        s
    }
}

/// Reads a scope list, or the single `scope = "device"` of old files.
fn one_or_many<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Vec<Scope>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(Scope),
        Many(Vec<Scope>),
    }
    Ok(match OneOrMany::deserialize(d)? {
        OneOrMany::One(s) => vec![s],
        OneOrMany::Many(v) => v,
    })
}

/// A calibration file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Calibration {
    pub model: ModelId,
    /// The scopes fitted, most specific first (old files: `scope = "kernel"`).
    #[serde(alias = "scope", deserialize_with = "one_or_many")]
    pub scopes: Vec<Scope>,
    /// The measurement file(s) it was fitted to.
    pub measurements: String,
    pub rows: usize,
    pub folds: usize,
    pub bootstrap: usize,
    pub seed: u64,
    pub objective: String,
    /// Parameter names in order, with their bounds.
    pub parameters: Vec<String>,
    /// The devices of the rows, by their properties (old files: resolved from the catalogue).
    #[serde(default)]
    pub devices: Vec<DeviceDescription>,
    pub groups: Vec<GroupCalibration>,
    #[serde(default)]
    pub notes: Vec<String>,
}

/// The group a lookup found: its index, its parameters, which fallback step found it, and a
/// phrase for notes.
#[derive(Debug, Clone, PartialEq)]
pub struct Lookup {
    pub group: usize,
    pub params: Vec<f64>,
    /// 1-based step of [`FALLBACK_ORDER`].
    pub step: usize,
    pub how: String,
}

impl Calibration {
    pub fn to_toml(&self) -> Result<String> {
        toml::to_string(self)
            .map_err(|e| Error::invalid("calibration", format!("cannot write TOML: {e}")))
    }

    /// The scope of a file with one scope (old files), else the most specific.
    pub fn first_scope(&self) -> Scope {
        self.scopes.first().copied().unwrap_or(Scope::Device)
    }

    /// Reads a calibration file's text; `origin` names it in errors. Old files (one scope, no
    /// device descriptions) load: their groups take the file's scope and their devices are
    /// described from the catalogue where it knows them.
    pub fn from_toml(text: &str, origin: &str) -> Result<Self> {
        let mut c: Calibration =
            toml::from_str(text).map_err(|e| Error::file(origin, e.message()))?;
        if c.scopes.is_empty() {
            return Err(Error::file(origin, "names no scope"));
        }
        let specs = params_of(c.model);
        let file_scope = c.first_scope();
        for g in &mut c.groups {
            let scope = g.scope_or(file_scope);
            g.scope = Some(scope);
            let what = g.label(file_scope);
            for s in specs {
                if !g.params.contains_key(s.name) {
                    if let Some(v) = s.absent {
                        g.params.insert(s.name.to_string(), v);
                        continue;
                    }
                    return Err(Error::file(
                        origin,
                        format!(
                            "group {what} lacks parameter `{}` of model {}",
                            s.name,
                            c.model.name()
                        ),
                    ));
                }
            }
            let need_device = matches!(scope, Scope::Kernel | Scope::Device);
            if need_device && g.device.is_empty() {
                return Err(Error::file(origin, format!("group {what} names no device")));
            }
            if scope.per_kernel() && g.kernel.is_none() {
                return Err(Error::file(origin, format!("group {what} names no kernel")));
            }
            let need_family = matches!(scope, Scope::KernelArchitecture | Scope::Architecture);
            if need_family && g.architecture.is_none() {
                return Err(Error::file(
                    origin,
                    format!("group {what} names no architecture family"),
                ));
            }
            if need_device && g.devices.is_empty() {
                g.devices.push(g.device.clone());
            }
        }
        // Old files: describe their devices from the catalogue.
        let named: Vec<String> = c.groups.iter().flat_map(|g| g.devices.clone()).collect();
        for name in named {
            if c.devices.iter().any(|d| d.name == name) {
                continue;
            }
            if let Ok(d) = catalogue::find(&name) {
                let mut desc = DeviceDescription::of(d);
                desc.name = name.clone();
                c.devices.push(desc);
            }
        }
        Ok(c)
    }

    /// The description of a device the file names.
    pub fn description(&self, name: &str) -> Option<&DeviceDescription> {
        self.devices.iter().find(|d| d.name == name)
    }

    fn group_is_device(&self, g: &GroupCalibration, device: &Device) -> bool {
        g.device == device.name
            || device.answers_to(&g.device)
            || self.description(&g.device).is_some_and(|d| d.is(device))
    }

    /// The distance from a device group to `device` within its family, `None` in another family
    /// or without a description.
    fn same_family_distance(&self, g: &GroupCalibration, device: &Device) -> Option<f64> {
        let d = self.description(&g.device)?;
        (d.family()? == family_of(device)).then(|| d.distance(device))
    }

    /// The group that applies to a kernel on a device, along [`FALLBACK_ORDER`]; `None` when no
    /// step finds one. An empty `kernel` skips the kernel steps.
    pub fn lookup(&self, device: &Device, kernel: &str) -> Option<Lookup> {
        let fs = self.first_scope();
        let family = family_of(device);
        let of_scope = |s: Scope| {
            self.groups
                .iter()
                .enumerate()
                .filter(move |(_, g)| g.scope_or(fs) == s)
        };
        let is_kernel =
            |g: &GroupCalibration| !kernel.is_empty() && g.kernel.as_deref() == Some(kernel);
        let nearest = |s: Scope, want_kernel: bool| {
            of_scope(s)
                .filter(|(_, g)| !want_kernel || is_kernel(g))
                .filter_map(|(i, g)| self.same_family_distance(g, device).map(|d| (i, d)))
                .min_by(|a, b| a.1.total_cmp(&b.1))
                .map(|(i, _)| i)
        };
        let steps: [Box<dyn Fn() -> Option<usize> + '_>; 7] = [
            Box::new(|| {
                of_scope(Scope::Kernel)
                    .find(|(_, g)| is_kernel(g) && self.group_is_device(g, device))
                    .map(|(i, _)| i)
            }),
            Box::new(|| {
                of_scope(Scope::KernelArchitecture)
                    .find(|(_, g)| is_kernel(g) && g.architecture.as_deref() == Some(&family))
                    .map(|(i, _)| i)
            }),
            Box::new(|| nearest(Scope::Kernel, true)),
            Box::new(|| {
                of_scope(Scope::Device)
                    .find(|(_, g)| self.group_is_device(g, device))
                    .map(|(i, _)| i)
            }),
            Box::new(|| {
                of_scope(Scope::Architecture)
                    .find(|(_, g)| g.architecture.as_deref() == Some(&family))
                    .map(|(i, _)| i)
            }),
            Box::new(|| nearest(Scope::Device, false)),
            Box::new(|| of_scope(Scope::Global).next().map(|(i, _)| i)),
        ];
        for (k, step) in steps.iter().enumerate() {
            if let Some(i) = step() {
                let g = &self.groups[i];
                let params = params_of(self.model)
                    .iter()
                    .map(|s| g.params[s.name])
                    .collect();
                let mut how = format!("group {}", g.label(fs));
                if !g.devices.is_empty() && !matches!(k, 0 | 3) {
                    how.push_str(&format!(" (fitted on {})", g.devices.join(", ")));
                }
                how.push_str(&format!(
                    ", fallback step {} of 7: {}",
                    k + 1,
                    FALLBACK_ORDER[k]
                ));
                return Some(Lookup {
                    group: i,
                    params,
                    step: k + 1,
                    how,
                });
            }
        }
        None
    }

    /// Why [`Calibration::lookup`] found nothing for a kernel on a device: one phrase, the same
    /// for every row of the pair's family, so that rows can be counted per reason.
    pub fn no_group_reason(&self, device: &Device, kernel: &str) -> String {
        let has = |s: Scope| self.scopes.contains(&s);
        let fam = family_label(&family_of(device), &[device.architecture.as_str()]);
        let mut missing = Vec::new();
        if has(Scope::Kernel) || has(Scope::KernelArchitecture) {
            missing.push(format!("kernel `{kernel}`"));
        }
        if has(Scope::Device) || has(Scope::Architecture) {
            missing.push("any kernel".to_string());
        }
        format!(
            "no calibration group covers {} on {fam} and the file has no global group",
            if missing.is_empty() {
                "this pair".to_string()
            } else {
                missing.join(" or ")
            }
        )
    }

    /// The parameter vector for a device and kernel (see [`Calibration::lookup`]).
    pub fn params_for(&self, device: &Device, kernel: &str) -> Option<Vec<f64>> {
        self.lookup(device, kernel).map(|l| l.params)
    }

    /// The group of a device (and kernel) by name, of the most specific scope, when there is one.
    pub fn group_for(&self, device: &str, kernel: Option<&str>) -> Option<&GroupCalibration> {
        self.groups
            .iter()
            .find(|g| g.device == device && (g.kernel.is_none() || g.kernel.as_deref() == kernel))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(
        scope: Scope,
        device: &str,
        family: Option<&str>,
        kernel: Option<&str>,
        v: f64,
    ) -> GroupCalibration {
        let mut g = GroupCalibration::new(scope);
        g.device = device.to_string();
        g.architecture = family.map(String::from);
        g.kernel = kernel.map(String::from);
        if !device.is_empty() {
            g.devices = vec![device.to_string()];
        }
        // roofline: e_c, e_m, launch scale; `v` tells the groups apart.
        g.params = [
            ("compute_efficiency", v),
            ("memory_efficiency", 0.5),
            ("launch_overhead_scale", 1.0),
        ]
        .into_iter()
        .map(|(k, x)| (k.to_string(), x))
        .collect();
        g
    }

    /// A described device under a name no catalogue knows, with `like`'s properties.
    fn lab(name: &str, like: &str) -> DeviceDescription {
        let mut d = DeviceDescription::of(catalogue::find(like).unwrap());
        d.name = name.to_string();
        d
    }

    fn calibration(groups: Vec<GroupCalibration>, devices: Vec<DeviceDescription>) -> Calibration {
        Calibration {
            model: ModelId::Roofline,
            scopes: Scope::ALL.to_vec(),
            measurements: "test".into(),
            rows: 0,
            folds: 0,
            bootstrap: 0,
            seed: 0,
            objective: String::new(),
            parameters: Vec::new(),
            devices,
            groups,
            notes: Vec::new(),
        }
    }

    fn dev(name: &str) -> &'static Device {
        catalogue::find(name).unwrap()
    }

    #[test]
    fn scopes_parse_alone_in_lists_and_as_all() {
        assert_eq!(Scope::parse_list("all").unwrap(), Scope::ALL.to_vec());
        assert_eq!(
            Scope::parse_list("global,kernel").unwrap(),
            vec![Scope::Kernel, Scope::Global]
        );
        let e = Scope::parse_list("kernels").unwrap_err().to_string();
        assert!(
            e.contains("kernel-architecture") && e.contains("`kernels`"),
            "{e}"
        );
    }

    #[test]
    fn the_fallback_follows_the_stated_order_and_device_properties_decide() {
        // The lab's GPUs carry names no catalogue knows; only their properties say what they are.
        let devices = vec![
            lab("lab-a", "GTX-680"),    // Kepler, cc 3.0
            lab("lab-b", "Tesla K20c"), // Kepler, cc 3.5
            lab("lab-c", "GTX-970"),    // Maxwell, cc 5.2
        ];
        let cal = calibration(
            vec![
                group(Scope::Kernel, "lab-c", None, Some("k1"), 0.11),
                group(Scope::KernelArchitecture, "", Some("5"), Some("k1"), 0.12),
                group(Scope::Kernel, "lab-b", None, Some("k2"), 0.13),
                group(Scope::Device, "lab-a", None, None, 0.14),
                group(Scope::Device, "lab-b", None, None, 0.15),
                group(Scope::Architecture, "", Some("5"), None, 0.16),
                group(Scope::Global, "", None, None, 0.17),
            ],
            devices,
        );
        let at = |d: &str, k: &str| {
            let l = cal.lookup(dev(d), k).unwrap();
            (l.step, l.params[0])
        };
        // 1: the kernel on the same device, recognised by its properties (GTX 970 = lab-c).
        assert_eq!(at("GTX-970", "k1"), (1, 0.11));
        // 2: the kernel on the same family (Titan X is Maxwell too).
        assert_eq!(at("TitanX", "k1"), (2, 0.12));
        // 3: the kernel on the nearest device of the family: the K40 (cc 3.5) is nearest the
        // K20c-like lab-b, whose kernel group exists.
        assert_eq!(at("Tesla K40", "k2"), (3, 0.13));
        // 4: the same device (GTX 680 = lab-a by its properties).
        assert_eq!(at("GTX-680", "k9"), (4, 0.14));
        // 5: the family's group (a GTX 980 has no kernel group for k9).
        assert_eq!(at("GTX-980", "k9"), (5, 0.16));
        // 6: the nearest device of the family: the K40 is cc 3.5 like lab-b (K20c), not lab-a
        // (GTX 680, cc 3.0), although it is nearer the GTX 680 in name.
        assert_eq!(at("Tesla K40", "k9"), (6, 0.15));
        // 7: another family takes the global group.
        assert_eq!(at("P100", "k1"), (7, 0.17));
        let l = cal.lookup(dev("P100"), "k1").unwrap();
        assert!(
            l.how.contains("step 7 of 7") && l.how.contains("global"),
            "{}",
            l.how
        );
        // Without the global group, another family has nothing, and says why.
        let mut cal = cal;
        cal.groups.pop();
        assert!(cal.lookup(dev("P100"), "k1").is_none());
        let why = cal.no_group_reason(dev("P100"), "k1");
        assert!(
            why.contains("kernel `k1`") && why.contains("cc 6.x"),
            "{why}"
        );
    }

    #[test]
    fn old_single_scope_files_load_and_describe_their_devices() {
        let text = r#"model = "roofline"
scope = "device"
measurements = "m.csv"
rows = 10
folds = 0
bootstrap = 0
seed = 0
objective = "x"
parameters = ["compute_efficiency", "memory_efficiency", "launch_overhead_scale"]

[[groups]]
device = "Tesla K20c"
n = 10
points = 5
mape_train = 0.1
max_error_train = 0.2

[groups.params]
compute_efficiency = 0.4
memory_efficiency = 0.7
launch_overhead_scale = 1.2
"#;
        let c = Calibration::from_toml(text, "old.toml").unwrap();
        assert_eq!(c.scopes, vec![Scope::Device]);
        assert_eq!(c.groups[0].scope, Some(Scope::Device));
        // Described from the catalogue, so a sibling GPU finds it by its properties.
        assert_eq!(c.devices.len(), 1);
        assert_eq!(c.devices[0].compute_capability, "3.5");
        assert_eq!(c.lookup(dev("Tesla K20c"), "").unwrap().step, 4);
        assert_eq!(c.lookup(dev("Tesla K40"), "").unwrap().step, 6);
        assert!(c.lookup(dev("GTX-970"), "").is_none());
        // An unknown key is an error naming it.
        let e = Calibration::from_toml(&text.replace("seed = 0", "seed = 0\ncolour = 1"), "x.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("colour"), "{e}");
        // A group lacking a parameter of the model is named.
        let e =
            Calibration::from_toml(&text.replace("launch_overhead_scale = 1.2\n", ""), "x.toml")
                .unwrap_err()
                .to_string();
        assert!(
            e.contains("launch_overhead_scale") && e.contains("Tesla K20c"),
            "{e}"
        );
    }

    #[test]
    fn a_trace_file_from_before_the_time_scale_loads_with_scale_one() {
        let text = r#"model = "trace"
scopes = ["global"]
measurements = "m.csv"
rows = 10
folds = 0
bootstrap = 0
seed = 0
objective = "x"
parameters = []

[[groups]]
scope = "global"
n = 10
points = 5
mape_train = 0.1
max_error_train = 0.2

[groups.params]
dram_latency_scale = 1.5
l2_latency_scale = 0.9
launch_overhead_scale = 2.0
"#;
        let c = Calibration::from_toml(text, "old-trace.toml").unwrap();
        assert_eq!(
            c.params_for(dev("Tesla K20c"), "k").unwrap(),
            vec![1.5, 0.9, 2.0, 1.0]
        );
        // A parameter without a stand-in value is still required.
        let e = Calibration::from_toml(&text.replace("l2_latency_scale = 0.9\n", ""), "x.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("l2_latency_scale"), "{e}");
    }

    #[test]
    fn new_files_round_trip() {
        let cal = calibration(
            vec![
                group(Scope::KernelArchitecture, "", Some("3"), Some("k"), 0.3),
                group(Scope::Global, "", None, None, 0.4),
            ],
            vec![lab("lab-a", "GTX-680")],
        );
        let text = cal.to_toml().unwrap();
        assert!(
            text.contains("scopes = [\"kernel\", \"kernel-architecture\""),
            "{text}"
        );
        let back = Calibration::from_toml(&text, "new.toml").unwrap();
        assert_eq!(back, cal);
    }
}
