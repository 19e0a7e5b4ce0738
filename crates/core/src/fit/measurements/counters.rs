//! Per-launch profiler counter tables, the layout of the amaris2018 data set (nvprof metrics
//! collected per kernel launch, one CSV row per launch).
//!
//! Required columns: `gpu`, `kernel`, `duration_s` (seconds), `grid_x/y/z`, `block_x/y/z`.
//! Optional: `source`, `app`, `cc`, `core_clock_mhz`, `input_size_1`, `input_size_2`,
//! `regs_per_thread`, `static_smem`, `dynamic_smem` (bytes), and the counters
//! `achieved_occupancy`, `elapsed_cycles_sm`, `active_cycles`, `warps_launched`,
//! `inst_executed`, `gld_transactions`, `gst_transactions`, `dram_read_transactions`,
//! `dram_write_transactions` - or their Nsight Compute names (`smsp__inst_executed.sum`,
//! `dram__sectors_read.sum`, `sm__warps_active.avg.pct_of_peak_sustained_active`, ...), and the
//! other metrics of [`super::metrics`], in their base units. Empty cells are unknown; other
//! columns are ignored.
//!
//! The app and input sizes become parameters (`app`, `input_size_1`, `input_size_2`).
//! Shared-memory sizes: the data set's README says that in some Rodinia rows values below 64 are
//! kilobytes, so a value strictly between 0 and 64 in a row whose `source` starts with
//! `Rodinia` is multiplied by 1024 (and the count of such conversions is noted). This reader does
//! not turn counters into model inputs.

use super::{
    check_time, line_error, metrics, number, optional_number, param_value, read_csv, whole,
    Counters, Dim3, Measurement, Parsed,
};
use crate::error::Result;

pub(crate) fn parse(text: &str, origin: &str) -> Result<Parsed> {
    let start = super::find_line(text, |l| !l.is_empty() && !l.starts_with('#')).unwrap_or(0);
    let table = read_csv(text, origin, start, false, true)?;
    let req = |n: &str| table.require(origin, n);
    let gpu = req("gpu")?;
    let kernel = req("kernel")?;
    let duration = req("duration_s")?;
    let grid = [req("grid_x")?, req("grid_y")?, req("grid_z")?];
    let block = [req("block_x")?, req("block_y")?, req("block_z")?];
    let col = |n: &str| table.column(n);
    let source = col("source");
    let app = col("app");
    let cc = col("cc");
    let clock = col("core_clock_mhz");
    let sizes = [col("input_size_1"), col("input_size_2")];
    let regs = col("regs_per_thread");
    let (ssmem, dsmem) = (col("static_smem"), col("dynamic_smem"));
    // Counter columns: the amaris2018 (nvprof) names, or Nsight Compute metric names.
    let counter_cols: Vec<(usize, &str)> = table
        .header
        .iter()
        .enumerate()
        .filter(|(_, h)| metrics::is_mapped(h))
        .map(|(i, h)| (i, h.as_str()))
        .collect();

    let mut kb_converted = 0usize;
    let mut out = Vec::with_capacity(table.rows.len());
    for (line, cells) in &table.rows {
        let line = *line;
        let cell = |i: usize| cells[i].as_str();
        if cell(gpu).is_empty() || cell(kernel).is_empty() {
            return Err(line_error(
                origin,
                line,
                "`gpu` and `kernel` must not be empty",
            ));
        }
        let t = number(cell(duration), "duration_s", origin, line, false)? * 1e6;
        let t = check_time(t, "duration_s", origin, line)?;
        let mut m = Measurement::new(cell(kernel), t, origin, line);
        m.device = Some(cell(gpu).to_string());
        let dim = |cols: [usize; 3], what: &str| -> Result<Dim3> {
            let mut v = [0u64; 3];
            for (k, i) in cols.iter().enumerate() {
                let name = format!("{what}_{}", ["x", "y", "z"][k]);
                v[k] = whole(
                    number(cell(*i), &name, origin, line, false)?,
                    &name,
                    origin,
                    line,
                )?;
                if v[k] == 0 {
                    return Err(line_error(
                        origin,
                        line,
                        format!("`{name}` must be at least 1"),
                    ));
                }
            }
            Ok(Dim3::new(v[0], v[1], v[2]))
        };
        m.grid = Some(dim(grid, "grid")?);
        m.block = Some(dim(block, "block")?);
        if let Some(i) = app {
            if !cell(i).is_empty() {
                m.params.insert("app".into(), cell(i).into());
            }
        }
        for (k, c) in sizes.iter().enumerate() {
            if let Some(i) = c {
                if !cell(*i).is_empty() {
                    m.params
                        .insert(format!("input_size_{}", k + 1), param_value(cell(*i)));
                }
            }
        }
        let rodinia = source.is_some_and(|i| cell(i).starts_with("Rodinia"));
        let mut c = Counters::default();
        if let Some(i) = cc {
            if !cell(i).is_empty() {
                c.compute_capability = Some(cell(i).to_string());
            }
        }
        if let Some(i) = clock {
            c.core_clock_mhz = optional_number(cell(i), "core_clock_mhz", origin, line, false)?;
        }
        if let Some(i) = regs {
            if let Some(v) = optional_number(cell(i), "regs_per_thread", origin, line, false)? {
                c.regs_per_thread = Some(whole(v, "regs_per_thread", origin, line)? as u32);
            }
        }
        for (idx, name, slot) in [
            (ssmem, "static_smem", &mut c.static_smem_bytes),
            (dsmem, "dynamic_smem", &mut c.dynamic_smem_bytes),
        ] {
            if let Some(i) = idx {
                if let Some(mut v) = optional_number(cell(i), name, origin, line, false)? {
                    if rodinia && v > 0.0 && v < 64.0 {
                        v *= 1024.0;
                        kb_converted += 1;
                    }
                    *slot = Some(whole(v.round(), name, origin, line)?);
                }
            }
        }
        for (i, name) in &counter_cols {
            let Some(v) = optional_number(cell(*i), name, origin, line, false)? else {
                continue;
            };
            metrics::apply(&mut c, name, v, "").map_err(|e| line_error(origin, line, e))?;
        }
        if !c.is_empty() {
            m.counters = Some(c);
        }
        out.push(m);
    }
    let mut parsed = Parsed::new(out);
    if kb_converted > 0 {
        parsed.notes.push(format!(
            "{kb_converted} Rodinia shared-memory value(s) below 64 read as KB and converted to bytes"
        ));
    }
    Ok(parsed)
}

#[cfg(test)]
mod tests {
    use crate::fit::measurements::{parse_text, Dim3, Format};

    // Written for this test in the amaris2018 column layout (values invented, not from the data).
    const TABLE: &str = "\
source,gpu,cc,core_clock_mhz,app,kernel,input_size_1,input_size_2,duration_s,grid_x,grid_y,grid_z,block_x,block_y,block_z,regs_per_thread,static_smem,dynamic_smem,achieved_occupancy,elapsed_cycles_sm,active_cycles,warps_launched,inst_executed,gld_transactions,gst_transactions,dram_read_transactions,dram_write_transactions
NCA:vadd-GPU.csv,GTX-680,3.0,1058.0,vectorAdd,\"vadd(float*, float*, float*, int)\",4096,,2.5e-05,16,1,1,256,1,1,10,0.0,0.0,0.5,1000.0,900.0,128,2048.0,512.0,256,512.0,256.0
Rodinia:hotspot-GPU.csv,GTX-680,,,rodinia,calculate_temp,512,2,0.000125,32,32,1,16,16,1,38,3.0,,,,,4096,,,,,
";

    #[test]
    fn reads_launch_counters_and_converts_units() {
        let set = parse_text(TABLE, "m.csv", None).unwrap();
        assert_eq!(set.format, Format::Counters);
        let m = &set.measurements;
        assert_eq!(m.len(), 2);
        // 2.5e-05 s = 25 us
        assert!((m[0].time_us - 25.0).abs() < 1e-9);
        assert_eq!(m[0].device.as_deref(), Some("GTX-680"));
        assert_eq!(m[0].kernel, "vadd(float*, float*, float*, int)");
        assert_eq!(m[0].grid, Some(Dim3::new(16, 1, 1)));
        assert_eq!(m[0].params["input_size_1"], serde_json::json!(4096));
        assert!(!m[0].params.contains_key("input_size_2"));
        let c = m[0].counters.as_ref().unwrap();
        assert_eq!(c.regs_per_thread, Some(10));
        assert_eq!(c.static_smem_bytes, Some(0));
        assert_eq!(c.achieved_occupancy, Some(0.5));
        assert_eq!(c.dram_write_transactions, Some(256.0));
        assert_eq!(c.core_clock_mhz, Some(1058.0));
        assert_eq!(c.compute_capability.as_deref(), Some("3.0"));
        // Rodinia row: 3.0 below 64 means 3 KB = 3072 B.
        let c = m[1].counters.as_ref().unwrap();
        assert_eq!(c.static_smem_bytes, Some(3072));
        assert_eq!(c.dynamic_smem_bytes, None);
        assert_eq!(c.achieved_occupancy, None);
        assert_eq!(c.warps_launched, Some(4096.0));
        assert_eq!(m[1].block, Some(Dim3::new(16, 16, 1)));
        assert!(set.notes.iter().any(|n| n.starts_with("1 Rodinia")));
    }

    #[test]
    fn malformed_rows_name_file_and_line() {
        let bad = TABLE.replace("0.000125", "soon");
        let e = parse_text(&bad, "m.csv", None).unwrap_err().to_string();
        assert!(
            e.contains("m.csv") && e.contains("line 3") && e.contains("duration_s"),
            "{e}"
        );
        let bad = TABLE.replace(",32,32,1,16,", ",32,0,1,16,");
        let e = parse_text(&bad, "m.csv", None).unwrap_err().to_string();
        assert!(e.contains("line 3") && e.contains("grid_y"), "{e}");
        let bad = TABLE.replace("2.5e-05", "0");
        let e = parse_text(&bad, "m.csv", None).unwrap_err().to_string();
        assert!(e.contains("line 2") && e.contains("above zero"), "{e}");
        let bad = TABLE.replace("2.5e-05,16,", "2.5e-05,16.5,");
        let e = parse_text(&bad, "m.csv", None).unwrap_err().to_string();
        assert!(e.contains("line 2") && e.contains("grid_x"), "{e}");
    }

    #[test]
    fn nsight_metric_columns_fill_the_same_counters() {
        // The first row of TABLE with Nsight Compute column names (occupancy in percent).
        let ncu = "gpu,kernel,duration_s,grid_x,grid_y,grid_z,block_x,block_y,block_z,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,dram__sectors_read.sum,dram__sectors_write.sum,smsp__warps_launched.sum
GTX-680,vadd,2.5e-05,16,1,1,256,1,1,50,2048,512,256,512,256,128
";
        let nvprof = parse_text(TABLE, "a.csv", None).unwrap();
        let nsight = parse_text(ncu, "b.csv", None).unwrap();
        let (a, b) = (
            nvprof.measurements[0].counters.as_ref().unwrap(),
            nsight.measurements[0].counters.as_ref().unwrap(),
        );
        for (x, y) in [
            (a.achieved_occupancy, b.achieved_occupancy),
            (a.inst_executed, b.inst_executed),
            (a.gld_transactions, b.gld_transactions),
            (a.gst_transactions, b.gst_transactions),
            (a.dram_read_transactions, b.dram_read_transactions),
            (a.dram_write_transactions, b.dram_write_transactions),
            (a.warps_launched, b.warps_launched),
        ] {
            assert!(x.is_some());
            assert_eq!(x, y);
        }
    }
}
