//! Resource reports written by the real tools (ptxas 13.5 via nvcc, NVRTC 12.9's log with its
//! `ptxas .` continuation lines, cuobjdump -res-usage) for our kernels, read per kernel. The
//! expected numbers are the ones printed in the committed report files next to each check.

use kerneltime::ptx::resources::{detect, parse_report, KernelResources, ReportKind};

fn read(name: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/tests/fixtures/resources/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

fn find<'a>(all: &'a [KernelResources], name: &str) -> &'a KernelResources {
    all.iter()
        .find(|k| k.name == name)
        .expect("kernel in report")
}

#[test]
fn nvcc_ptxas_report_with_spills() {
    let text = read("fdtd.nvcc-sm75-maxreg16.ptxas.txt");
    assert_eq!(detect(&text), Some(ReportKind::Ptxas));
    let all = parse_report(&text);
    assert_eq!(all.len(), 5);
    // "112 bytes stack frame, 116 bytes spill stores, 112 bytes spill loads"
    // "Used 24 registers, used 0 barriers, 112 bytes cumulative stack size, 404 bytes cmem[0]"
    let o8 = find(&all, "fdtd_o8");
    assert_eq!(o8.is_entry, Some(true));
    assert_eq!(o8.arch.as_deref(), Some("sm_75"));
    assert_eq!(o8.registers, Some(24));
    assert_eq!(o8.barriers, Some(0));
    assert_eq!(o8.stack_frame_bytes, Some(112));
    assert_eq!(o8.spill_store_bytes, Some(116));
    assert_eq!(o8.spill_load_bytes, Some(112));
    assert_eq!(o8.cumulative_stack_bytes, Some(112));
    assert_eq!(o8.constant_bytes, Some(404));
    assert_eq!(o8.shared_bytes, None);
    // "40 bytes stack frame, 40 bytes spill stores, 40 bytes spill loads"
    assert_eq!(find(&all, "fdtd_o2").spill_store_bytes, Some(40));
    // "Used 6 registers, used 0 barriers, 384 bytes cmem[0]"
    assert_eq!(find(&all, "add_source").registers, Some(6));
}

#[test]
fn nvrtc_log_with_continuation_lines() {
    let text = read("basics.nvrtc-sm61.log");
    let all = parse_report(&text);
    assert_eq!(all.len(), 4);
    // "Used 10 registers, used 1 barriers, 1024 bytes smem, 340 bytes cmem[0]" and
    // "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads"
    let r = find(&all, "reduce_sum");
    assert_eq!(
        (r.registers, r.barriers, r.shared_bytes, r.constant_bytes),
        (Some(10), Some(1), Some(1024), Some(340))
    );
    assert_eq!(
        (r.stack_frame_bytes, r.spill_store_bytes, r.spill_load_bytes),
        (Some(0), Some(0), Some(0))
    );
    assert_eq!(find(&all, "matmul_tiled").shared_bytes, Some(2048));
    assert_eq!(find(&all, "vector_add").registers, Some(8));
}

#[test]
fn cuobjdump_res_usage() {
    let text = read("fdtd.nvcc-sm75-maxreg16.res-usage.txt");
    assert_eq!(detect(&text), Some(ReportKind::Cuobjdump));
    let all = parse_report(&text);
    assert_eq!(all.len(), 5);
    // "REG:24 STACK:112 SHARED:0 LOCAL:0 CONSTANT[0]:404 ..."
    let o8 = find(&all, "fdtd_o8");
    assert_eq!(
        (
            o8.registers,
            o8.stack_frame_bytes,
            o8.shared_bytes,
            o8.constant_bytes
        ),
        (Some(24), Some(112), Some(0), Some(404))
    );
    let reg = parse_report(&read("registration.nvcc-sm80.res-usage.txt"));
    // "Function transform_shared: REG:24 STACK:0 SHARED:48 ..." (12 floats of the matrix)
    assert_eq!(find(&reg, "transform_shared").shared_bytes, Some(48));
    let b = parse_report(&read("basics.nvrtc-sm61.res-usage.txt"));
    assert_eq!(find(&b, "reduce_sum").shared_bytes, Some(1024));
}

#[test]
fn ptxas_and_cuobjdump_agree_on_registers() {
    let p = parse_report(&read("registration.nvcc-sm80.ptxas.txt"));
    let c = parse_report(&read("registration.nvcc-sm80.res-usage.txt"));
    assert_eq!(p.len(), 4);
    for k in &p {
        assert_eq!(k.registers, find(&c, &k.name).registers, "{}", k.name);
    }
}

#[test]
fn unrelated_text_gives_nothing() {
    assert!(parse_report("hello\nworld").is_empty());
    assert!(parse_report("").is_empty());
}
