"""kerneltime.predict from PTX text (no compiler needed), a built-in kernel program and CUDA
source; errors as one-line KerneltimeError."""

import pytest

import kerneltime
from conftest import EXAMPLES

SAXPY_PTX = (EXAMPLES / "saxpy.ptx").read_text()
# RTX 2080 Ti: 616 GB/s of DRAM bandwidth (NVIDIA's product specification).
BANDWIDTH_GBS = 616.0


def saxpy(n, **kw):
    """saxpy over n elements, from the checked-in PTX unless `source=` or `ptx=` says."""
    if "source" not in kw:
        kw.setdefault("ptx", SAXPY_PTX)
    return kerneltime.predict(
        "RTX 2080 Ti",
        kernel_name="saxpy",
        grid=n // 256,
        block=256,
        args={0: n, 1: 2.0},
        **kw,
    )


def test_ptx_prediction_is_a_dict_above_the_dram_bound():
    n = 1 << 24
    p = saxpy(n)
    assert p["model"] == "trace"
    assert p["device"] == "GeForce RTX 2080 Ti"
    assert isinstance(p["breakdown"], dict) and p["breakdown"]
    assert isinstance(p["notes"], list)
    # saxpy reads x and y and writes y: 12 bytes per element must cross DRAM at least once.
    bound_us = 12 * n / (BANDWIDTH_GBS * 1e3)
    assert bound_us <= p["time_us"] <= 4 * bound_us, (p["time_us"], bound_us)


def test_four_times_the_data_takes_two_to_four_and_a_half_times_as_long():
    small, large = saxpy(1 << 22)["time_us"], saxpy(1 << 24)["time_us"]
    # Memory-bound: the time follows the bytes, less the fixed launch overhead.
    assert 2.0 <= large / small <= 4.5, (small, large)


def test_a_ptx_file_path_gives_the_same_as_its_text():
    n = 1 << 20
    assert saxpy(n)["time_us"] == saxpy(n, ptx=str(EXAMPLES / "saxpy.ptx"))["time_us"]


def test_a_given_clock_turns_the_same_cycles_into_time():
    # The RTX 2080 Ti's rated boost is 1545 MHz; at 1000 MHz the launch's cycles take
    # cycles / 1000 us, plus the fixed launch overhead, and the notes say why.
    p = saxpy(1 << 20, clock_mhz=1000)
    assert p["breakdown"]["core_clock_mhz"] == 1000.0
    overhead = p["breakdown"]["launch_overhead_us"]
    assert p["time_us"] - overhead == pytest.approx(p["cycles"] / 1000.0, rel=1e-9)
    assert any("given with clock_mhz=" in n for n in p["notes"]), p["notes"]
    with pytest.raises(kerneltime.KerneltimeError, match="clock_mhz"):
        saxpy(1 << 20, clock_mhz=0)


def test_every_model_with_the_band():
    r = saxpy(1 << 20, model="all")
    models = [p["model"] for p in r["predictions"]]
    assert "trace" in models and len(models) >= 3, models
    band = r["band"]
    times = [p["time_us"] for p in r["predictions"]]
    assert band["min_us"] == min(times) and band["max_us"] == max(times)


def test_builtin_kernel_program():
    small = kerneltime.predict(
        "GTX 860M (puchala2022)", builtin="dwt-matrix", params={"n": 1 << 10, "k": 8}
    )
    large = kerneltime.predict(
        "GTX 860M (puchala2022)", builtin="dwt-matrix", params={"n": 1 << 20, "k": 8}
    )
    assert small["model"] == "puchala" and large["model"] == "puchala"
    # A thousand times the threads cannot be faster.
    assert 0 < small["time_us"] < large["time_us"]


def test_errors_are_one_line_kerneltime_errors():
    with pytest.raises(kerneltime.KerneltimeError) as e:
        kerneltime.predict("No Such GPU 9000", ptx=SAXPY_PTX, kernel_name="saxpy", grid=1, block=32)
    assert "No Such GPU 9000" in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(kerneltime.KerneltimeError) as e:
        kerneltime.predict("RTX 2080 Ti", ptx=SAXPY_PTX, kernel_name="saxpy", block=32)
    assert "grid" in str(e.value)
    with pytest.raises(kerneltime.KerneltimeError) as e:
        kerneltime.predict("RTX 2080 Ti", ptx=SAXPY_PTX, kernel_name="saxp", grid=1, block=32)
    assert "saxp" in str(e.value) and "saxpy" in str(e.value)
    with pytest.raises(kerneltime.KerneltimeError):
        kerneltime.predict("RTX 2080 Ti", kernel_name="saxpy", grid=1, block=32)


def test_cuda_source_compiled_in_process_matches_its_ptx(cuda):
    n = 1 << 22
    from_source = saxpy(n, source=str(EXAMPLES / "saxpy.cu"))
    # The same kernel as the checked-in PTX (nvcc, sm_75): the same memory traffic, so the
    # times agree to well within the difference two compilers' instruction counts make.
    from_ptx = saxpy(n)["time_us"]
    assert abs(from_source["time_us"] / from_ptx - 1) < 0.2, (from_source["time_us"], from_ptx)
    assert any("compiler" in n or "registers" in n for n in from_source["notes"]), from_source["notes"]


def test_a_source_kernel_takes_its_arguments_by_their_declared_names(cuda):
    # saxpy(int n, float a, ...): the names stand for positions 0 and 1, which PTX knows them by.
    n = 1 << 20
    source = str(EXAMPLES / "saxpy.cu")
    common = dict(kernel_name="saxpy", grid=n // 256, block=256, source=source)
    by_name = kerneltime.predict("RTX 2080 Ti", args={"n": n, "a": 2.0}, **common)
    by_position = kerneltime.predict("RTX 2080 Ti", args={0: n, 1: 2.0}, **common)
    assert by_name["time_us"] == by_position["time_us"]


def test_a_gpu_the_compiler_does_not_target_compiles_for_the_nearest_one(cuda):
    # The Tesla K20c is sm_35; NVRTC 12.x starts at sm_50, nvcc 13.x at sm_75.
    n = 1 << 20
    p = kerneltime.predict("Tesla K20c", source=str(EXAMPLES / "saxpy.cu"), kernel_name="saxpy",
                           grid=n // 256, block=256, args={"n": n, "a": 2.0})
    assert p["time_us"] > 0
    assert any("not the device's sm_35" in note for note in p["notes"]), p["notes"]


def test_a_compile_error_names_the_compiler_message(cuda):
    with pytest.raises(kerneltime.KerneltimeError) as e:
        kerneltime.predict(
            "RTX 2080 Ti",
            source='extern "C" __global__ void k() { this is not C++; }',
            kernel_name="k",
            grid=1,
            block=32,
            compile_cache=False,
        )
    assert "refused" in str(e.value) and "\n" not in str(e.value)


def test_a_missing_source_file_is_named():
    with pytest.raises(kerneltime.KerneltimeError) as e:
        kerneltime.predict("RTX 2080 Ti", source="no/such/kernel.cu", kernel_name="k", grid=1, block=32)
    assert "no/such/kernel.cu: no such file" in str(e.value)
