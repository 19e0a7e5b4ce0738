"""kerneltime.rank over a Kernel Tuner style search space: the fields of `kerneltime tune`,
restrictions as strings and functions, the three statuses, and the same answer as the FAIR
spec of the same space."""

import pytest

import kerneltime
from conftest import EXAMPLES

N = 1 << 20
BLOCKS = [32, 64, 128, 256, 512, 1024]
FIELDS = {"device", "block_size_x", "status", "predicted_us", "rank", "reason"}


def saxpy_rank(**kw):
    kw.setdefault("device", "RTX 2080 Ti")
    tune_params = kw.pop("tune_params", {"block_size_x": BLOCKS})
    # Kernel Tuner's arguments: n and a are scalars, x and y buffers (any non-number).
    return kerneltime.rank("saxpy", str(EXAMPLES / "saxpy.cu"), N, [N, 2.0, "x", "y"], tune_params, **kw)


def test_rows_have_the_fields_of_kerneltime_tune_and_ranks_per_device(cuda):
    rows = saxpy_rank(device=["RTX 2080 Ti", "A100"])
    assert len(rows) == 2 * len(BLOCKS)
    for row in rows:
        assert set(row) == FIELDS, row
        assert row["status"] == "ok" and row["reason"] == ""
        assert row["predicted_us"] > 0
    devices = list(dict.fromkeys(r["device"] for r in rows))
    assert len(devices) == 2 and "2080 Ti" in devices[0] and "A100" in devices[1], devices
    for dev in devices:
        mine = [r for r in rows if r["device"] == dev]
        assert sorted(r["rank"] for r in mine) == list(range(1, len(BLOCKS) + 1)), dev
        # Listed by rank, and rank follows the predicted time.
        assert [r["rank"] for r in mine] == list(range(1, len(BLOCKS) + 1))
        times = [r["predicted_us"] for r in mine]
        assert times == sorted(times)


def test_the_same_space_as_a_fair_spec_gives_the_same_predictions(cuda):
    # examples/saxpy-tune.json describes exactly this space (n = 2^20, a = 2, 32..1024).
    by_spec = kerneltime.rank(spec=EXAMPLES / "saxpy-tune.json", device="RTX 2080 Ti")
    by_params = saxpy_rank()
    key = lambda rows: {r["block_size_x"]: (r["predicted_us"], r["rank"]) for r in rows}
    assert key(by_spec) == key(by_params)


def test_a_slower_clock_slows_every_configuration(cuda):
    # saxpy is memory-bound, so a clock 10 % below the RTX 2080 Ti's 1545 MHz boost must not
    # speed anything up, and slows at least the configurations whose cycles count.
    at = lambda rows: {r["block_size_x"]: r["predicted_us"] for r in rows}
    rated, slower = at(saxpy_rank()), at(saxpy_rank(clock_mhz=1390))
    assert all(slower[b] >= rated[b] for b in BLOCKS), (rated, slower)
    assert any(slower[b] > rated[b] for b in BLOCKS), (rated, slower)


def test_string_and_function_restrictions(cuda):
    two = {"block_size_x": BLOCKS, "unroll": [1, 2]}
    # A function of one argument gets a dict of the values (Kernel Tuner's `lambda p: ...`).
    rows = saxpy_rank(
        tune_params=two,
        restrictions=["block_size_x <= 256", lambda p: p["block_size_x"] >= 64 and p["unroll"] == 2],
    )
    assert sorted(r["block_size_x"] for r in rows) == [64, 128, 256]
    assert {r["unroll"] for r in rows} == {2}
    # With a single parameter it gets the value, as Kernel Tuner does.
    rows = saxpy_rank(restrictions=[lambda bx: bx >= 256])
    assert sorted(r["block_size_x"] for r in rows) == [256, 512, 1024]
    # A function of several arguments gets the values in tune_params order (Kernel Tuner).
    rows = saxpy_rank(
        tune_params={"block_size_x": BLOCKS, "unroll": [1, 2]},
        restrictions=lambda bx, unroll: bx * unroll <= 128,
    )
    assert sorted((r["block_size_x"], r["unroll"]) for r in rows) == [
        (32, 1), (32, 2), (64, 1), (64, 2), (128, 1)
    ]
    assert kerneltime.space(
        "saxpy", str(EXAMPLES / "saxpy.cu"), N, [], {"block_size_x": BLOCKS},
        restrictions=["block_size_x % 3 == 2"],
    ) == [{"block_size_x": 32}, {"block_size_x": 128}, {"block_size_x": 512}]


def test_cannot_launch_and_compile_error_rows(cuda):
    source = (EXAMPLES / "saxpy.cu").read_text() + (
        "\n#if block_size_x == 64\n#error sixty-four is refused here\n#endif\n"
    )
    rows = kerneltime.rank(
        "saxpy", source, N, [N, 2.0], {"block_size_x": [32, 64, 2048]}, device="RTX 2080 Ti",
        compile_cache=False,
    )
    by_block = {r["block_size_x"]: r for r in rows}
    assert by_block[32]["status"] == "ok" and by_block[32]["rank"] == 1
    assert by_block[64]["status"] == "compile-error"
    assert "sixty-four" in by_block[64]["reason"] and by_block[64]["rank"] is None
    assert by_block[2048]["status"] == "cannot-launch"
    assert "2048 threads" in by_block[2048]["reason"] and by_block[2048]["predicted_us"] is None


def test_top_k_and_sampling(cuda):
    full = saxpy_rank()
    top = saxpy_rank(top=2)
    assert top == full[:2]
    a = saxpy_rank(sample=3, seed=5)
    b = saxpy_rank(sample=3, seed=5)
    assert len(a) == 3 and a == b
    # A sampled configuration is predicted as in the full ranking.
    full_times = {r["block_size_x"]: r["predicted_us"] for r in full}
    assert all(full_times[r["block_size_x"]] == r["predicted_us"] for r in a)


def test_report_has_stats_and_notes(cuda):
    rep = kerneltime.rank_report(spec=EXAMPLES / "saxpy-tune.json", device="RTX 2080 Ti")
    assert rep["stats"]["selected"] == len(BLOCKS) == len(rep["rows"])
    assert rep["stats"]["compiled"] + rep["stats"]["cache_hits"] == len(BLOCKS)
    assert any(n.startswith("compiler: ") for n in rep["notes"]), rep["notes"]


def test_input_errors_are_kerneltime_errors():
    with pytest.raises(kerneltime.KerneltimeError) as e:
        saxpy_rank(restrictions=["block_size_y <= 256"])
    assert "block_size_y" in str(e.value) and "\n" not in str(e.value)
    assert str(e.value).startswith("restrictions[0]"), str(e.value)
    with pytest.raises(kerneltime.KerneltimeError) as e:
        saxpy_rank(device=[])
    assert "device" in str(e.value)
    with pytest.raises(kerneltime.KerneltimeError) as e:
        saxpy_rank(restrictions=[lambda p: False])
    assert "no configuration" in str(e.value)
    with pytest.raises(kerneltime.KerneltimeError) as e:
        saxpy_rank(model="lslag")
    assert "lslag" in str(e.value)


def test_the_kernel_tuner_restriction_accepts_each_calling_convention(cuda):
    import kerneltime.kernel_tuner as ktk

    keep = ktk.top_k_restriction(2, spec=EXAMPLES / "saxpy-tune.json", device="RTX 2080 Ti")
    best = [c["block_size_x"] for c in keep.configurations]
    assert best == [r["block_size_x"] for r in saxpy_rank(top=2)]
    other = next(b for b in BLOCKS if b not in best)
    assert keep({"block_size_x": best[0]}) and keep(best[1]) and keep(block_size_x=best[0])
    assert not keep({"block_size_x": other}) and not keep(other)
