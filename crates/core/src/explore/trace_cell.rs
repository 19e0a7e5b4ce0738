//! The `trace` model (wang2019) in sweeps: a PTX kernel file (`emulate::kernel_file`, given as
//! `--inputs trace=FILE.toml` or `inputs = ["trace=..."]` in a space file) names a kernel and says
//! how its launch and arguments follow from the swept parameters; each point is emulated and
//! simulated.
//!
//! Per point, the fast path emulates only the block the trace model simulates (the interior
//! class, `Sampling::Representative`, reused across grids as `KernelFile` explains) and runs
//! `trace_sim::run_on`: the same time as `predict`, which emulates every sampled block for its
//! notes (a test checks they agree). The round is simulated again for every point (it depends on
//! the grid through the number of blocks in a round).
//!
//! What it does NOT do: read the PTX again per point (parsed once per cell), or run the other
//! models from the trace (see `model::from_trace`).

use std::sync::Arc;

use super::registry::{Context, Evaluator, Outcome, Prepared, Scratch, Workload};
use crate::device::latencies::{for_device, Resolved as LatencyTable};
use crate::device::Device;
use crate::emulate::kernel_file::KernelFile;
use crate::error::{Error, Result};
use crate::model::trace_sim::{self, KernelResources};
use crate::model::Prediction;
use crate::workload::params::ParamValues;

pub use crate::emulate::kernel_file::{rep_index, PtxKernelFile, MEMO_ENTRIES};

struct TraceEvaluator {
    file: KernelFile,
    device: Arc<Device>,
    lat: LatencyTable,
    res: KernelResources,
    axes: Vec<String>,
}

impl TraceEvaluator {
    fn fill(&self, values: &[f64], params: &mut ParamValues) {
        for (name, v) in self.axes.iter().zip(values) {
            params.set(name, *v);
        }
    }
}

impl Evaluator for TraceEvaluator {
    fn evaluate(&self, values: &[f64], scratch: &mut Scratch) -> Result<Outcome> {
        let params = &mut scratch.params;
        self.fill(values, params);
        let (launch, args) = self.file.launch(params, None, None)?;
        let em = self.file.representative(launch, args)?;
        let r = trace_sim::run_on(&self.device, launch, &em, self.res, &self.lat)?;
        let warps_per_block = f64::from(launch.warps_per_block());
        Ok(Outcome {
            time_us: r.time_us,
            cycles: r.cycles,
            occupancy: f64::from(r.active_blocks_per_sm) * warps_per_block
                / f64::from(self.device.limits.max_warps_per_sm.max(1)),
            threads_per_block: f64::from(launch.threads_per_block()),
            blocks: launch.blocks() as f64,
            shared_memory_bytes: f64::from(self.res.shared_bytes_per_block),
        })
    }

    fn predict(&self, values: &[f64]) -> Result<Prediction> {
        let mut params = ParamValues::default();
        self.fill(values, &mut params);
        let (launch, args) = self.file.launch(&params, None, None)?;
        let em = self.file.emulate(launch, &args)?;
        let (mut p, _) = trace_sim::predict(&self.device, &em, self.res, &self.lat)?;
        p.notes.extend(self.file.notes.iter().cloned());
        Ok(p)
    }
}

/// Prepares the trace model for one PTX kernel file and one device.
pub fn prepare_trace(cx: &Context<'_>) -> Result<Prepared> {
    let (text, origin) = match cx.workload {
        Workload::Inputs { text, origin, .. } => (text, origin),
        Workload::Kernel(k) => {
            return Err(Error::invalid(
                "model",
                format!(
                    "model trace runs a PTX kernel file (`inputs` trace=FILE.toml), not the kernel program {}",
                    k.name
                ),
            ))
        }
    };
    let parsed = KernelFile::parse(text, origin)?;
    let device = cx.device.cloned().ok_or_else(|| {
        Error::missing(
            "device",
            "model trace needs a device (`device` NAME or a filter)",
        )
    })?;
    let file = KernelFile::from_file(parsed, origin)?;
    file.check_parameters(cx.axes)?;
    let uses = file.uses(cx.axes);
    let lat = for_device(&device)?;
    let notes = file.notes.clone();
    Ok(Prepared {
        evaluator: Box::new(TraceEvaluator {
            res: KernelResources::of_file(&file),
            file,
            device,
            lat,
            axes: cx.axes.to_vec(),
        }),
        uses,
        notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::catalogue;

    const FIX: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/ptx");

    fn prepared(toml_body: &str, axes: &[&str]) -> Result<Prepared> {
        let text = toml_body.replace("FIX", FIX);
        let workload = Workload::Inputs {
            name: "k".into(),
            origin: format!("{FIX}/k.toml"),
            text,
        };
        let dev = Arc::new(catalogue::find("V100").unwrap().clone());
        let axes: Vec<String> = axes.iter().map(|s| s.to_string()).collect();
        let first = vec![1.0; axes.len()];
        prepare_trace(&Context {
            model: crate::model::ModelId::Trace,
            workload: &workload,
            device: Some(&dev),
            axes: &axes,
            first_values: &first,
            t_p_us: None,
            t_m_cycles: None,
            calibration: None,
        })
    }

    const VECTOR_ADD: &str = r#"
ptx = "basics.nvcc-sm75.ptx"
entry = "vector_add"
grid = ["(n + block_x - 1) / block_x"]
block = ["block_x"]
args = ["3=n"]
resources = "basics.nvcc-sm75.ptxas.txt"
"#;

    #[test]
    fn fast_path_equals_the_full_prediction() {
        type Case<'a> = (&'a str, &'a [&'a str], &'a [&'a [f64]]);
        let cases: [Case<'_>; 3] = [
            (
                VECTOR_ADD,
                &["block_x", "n"],
                &[&[32.0, 1000.0], &[256.0, 1_048_576.0], &[1024.0, 3000.0]],
            ),
            (
                r#"ptx = "basics.nvcc-sm75.ptx"
entry = "reduce_sum"
grid = ["(n + 255) / 256"]
block = ["256"]
args = ["2=n"]"#,
                &["n"],
                &[&[256.0], &[100_000.0]],
            ),
            (
                r#"ptx = "fdtd.nvcc-sm75.ptx"
entry = "fdtd_o2"
grid = ["nx / bx", "ny / by"]
block = ["bx", "by"]
args = ["5=nx", "6=ny", "7=nz"]"#,
                &["bx", "by", "nx", "ny", "nz"],
                &[
                    &[32.0, 4.0, 1280.0, 100.0, 16.0],
                    &[64.0, 2.0, 640.0, 20.0, 4.0],
                ],
            ),
        ];
        let mut scratch = Scratch::default();
        for (body, axes, points) in cases {
            let p = prepared(body, axes).unwrap();
            for v in points {
                let fast = p.evaluator.evaluate(v, &mut scratch).unwrap();
                let full = p.evaluator.predict(v).unwrap();
                assert_eq!(
                    fast.time_us.to_bits(),
                    full.time_us.to_bits(),
                    "{axes:?} {v:?}"
                );
                assert!(fast.time_us > 0.0);
            }
        }
    }

    #[test]
    fn a_block_is_reused_across_grids_with_the_same_result() {
        // n fixed, the grid swept on its own: vector_add never reads %nctaid, and grids of 8 and
        // 9 blocks share the representative block 4 (8 / 2 = 9 / 2 = 4).
        let body = r#"
ptx = "basics.nvcc-sm75.ptx"
entry = "vector_add"
grid = ["g"]
block = ["128"]
args = ["3=1000000"]
"#;
        let mut scratch = Scratch::default();
        let shared = prepared(body, &["g"]).unwrap();
        let a = shared.evaluator.evaluate(&[8.0], &mut scratch).unwrap();
        let b = shared.evaluator.evaluate(&[9.0], &mut scratch).unwrap();
        // Fresh evaluators (nothing to reuse) give the same bits.
        let fresh = |g: f64| {
            prepared(body, &["g"])
                .unwrap()
                .evaluator
                .evaluate(&[g], &mut Scratch::default())
                .unwrap()
                .time_us
        };
        assert_eq!(a.time_us.to_bits(), fresh(8.0).to_bits());
        assert_eq!(b.time_us.to_bits(), fresh(9.0).to_bits());
        // And the full path (every sampled block emulated for the 9-block grid) agrees.
        let full = shared.evaluator.predict(&[9.0]).unwrap();
        assert_eq!(b.time_us.to_bits(), full.time_us.to_bits());
    }

    #[test]
    fn representative_index_matches_the_emulator_choice() {
        // emulate's classes: 1 -> first; 2 -> first, last (tie: first); 3 -> one block each (tie:
        // first); n >= 4 -> the interior class (n - 2 blocks) at n / 2.
        for (n, want) in [(1, 0), (2, 0), (3, 0), (4, 2), (9, 4), (1000, 500)] {
            assert_eq!(rep_index(n), want);
            let blocks: Vec<crate::emulate::SampledBlock> = match n {
                1 => vec![(0, 1)],
                2 => vec![(0, 1), (1, 1)],
                _ => vec![(0, 1), (n / 2, u64::from(n - 2)), (n - 1, 1)],
            }
            .into_iter()
            .map(|(x, r)| crate::emulate::SampledBlock {
                block: [x, 0, 0],
                linear: u64::from(x),
                represents: r,
                class: String::new(),
            })
            .collect();
            let rep = crate::emulate::representative(&blocks).unwrap();
            assert_eq!(rep.block[0], want, "n = {n}");
        }
    }

    #[test]
    fn bad_kernel_files_are_one_sentence_errors() {
        let e = prepared(VECTOR_ADD, &["block_x"])
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("param n"), "{e}");
        let e = prepared("ptx = \"basics.nvcc-sm75.ptx\"\n", &[])
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("PTX kernel file"), "{e}");
        let e = prepared(
            "ptx = \"basics.nvcc-sm75.ptx\"\nentry = \"nope\"\nblock = [\"32\"]\n",
            &[],
        )
        .err()
        .unwrap()
        .to_string();
        assert!(e.contains("nope"), "{e}");
        // A grid expression that evaluates to 0 is an error, not a panic.
        let p = prepared(VECTOR_ADD, &["block_x", "n"]).unwrap();
        let e = p
            .evaluator
            .evaluate(&[32.0, 0.0], &mut Scratch::default())
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("grid"), "{e}");
    }
}
