"""Kernel Tuner with kerneltime's top-k restriction, in simulation mode (Kernel Tuner replays a
measured brute-force cache: no GPU). Reports the regret of the best configuration Kernel Tuner
finds among the predicted top k: its measured time / the measured best of the whole space - 1.

Uses the development caches in ../shared/data/tuning (skipped with a message when absent)."""

import gzip
import json
import os
import time

import pytest

import kerneltime
from conftest import TUNING, need

kernel_tuner = pytest.importorskip("kernel_tuner")
np = pytest.importorskip("numpy")

import kerneltime.kernel_tuner as ktk  # noqa: E402

DEVICE = "RTX 2080 Ti"
CACHE = TUNING / "caches" / "convolution_RTX_2080_Ti.json.gz"
# Configurations kerneltime ranks (a seeded sample of the space) and the k it keeps.
SAMPLE = int(os.environ.get("KERNELTIME_KT_SAMPLE", "20"))
K = int(os.environ.get("KERNELTIME_KT_TOP", "4"))


def is_time(t):
    return isinstance(t, (int, float))


@pytest.fixture(scope="module")
def convolution(tmp_path_factory):
    need(CACHE.is_file(), "shared", f"no development caches at {TUNING} (../shared is absent)")
    with gzip.open(CACHE, "rt") as f:
        cache = json.load(f)
    plain = tmp_path_factory.mktemp("kt") / "convolution_RTX_2080_Ti.json"
    plain.write_text(json.dumps(cache))
    spec = json.loads((TUNING / "kernels" / "convolution.json").read_text())
    restrictions = [c["Expression"] for c in spec["ConfigurationSpace"]["Conditions"]]
    return cache, plain, restrictions


def test_top_k_restriction_in_simulation_mode(cuda, convolution):
    cache, cache_file, restrictions = convolution
    tune_params = cache["tune_params"]
    problem_size = tuple(cache["problem_size"])
    source = str(TUNING / "kernels" / "convolution.cu")
    w, h = problem_size[0] + 14, problem_size[1] + 14
    arguments = [
        np.zeros(problem_size, dtype=np.float32),
        np.zeros((h, w), dtype=np.float32),
        np.zeros((15, 15), dtype=np.float32),
    ]
    grid_div = dict(grid_div_x=["block_size_x", "tile_size_x"], grid_div_y=["block_size_y", "tile_size_y"])
    started = time.perf_counter()
    keep = ktk.top_k_restriction(
        K, "convolution_kernel", source, problem_size, arguments, tune_params,
        device=DEVICE, restrictions=restrictions, sample=SAMPLE, seed=1, **grid_div,
    )
    ranking_s = time.perf_counter() - started
    assert len(keep.configurations) == K
    results, _env = kernel_tuner.tune_kernel(
        "convolution_kernel", source, problem_size, arguments, tune_params,
        restrictions=keep, cache=str(cache_file), simulation_mode=True,
        strategy="brute_force", quiet=True, **grid_div,
    )
    # Kernel Tuner measured (replayed) exactly the kept configurations.
    names = list(tune_params)
    kept = {tuple(c[n] for n in names) for c in keep.configurations}
    seen = {tuple(r[n] for n in names) for r in results}
    assert seen == kept
    measured = [c["time"] for c in cache["cache"].values() if is_time(c["time"])]
    best_all = min(measured)
    found = [r["time"] for r in results if is_time(r["time"])]
    assert found, "every kept configuration failed when measured"
    regret = min(found) / best_all - 1
    # For scale: the regret of one configuration drawn at random from the space, and the
    # regret of the best measured configuration of the sample kerneltime ranked (the least
    # any k can reach). The second ranking comes from the compile cache the first one filled.
    random_regret = sum(measured) / len(measured) / best_all - 1
    ranked = kerneltime.rank(
        "convolution_kernel", source, problem_size, arguments, tune_params,
        device=DEVICE, restrictions=restrictions, sample=SAMPLE, seed=1, **grid_div,
    )
    assert len(ranked) == SAMPLE
    times = [cache["cache"][",".join(str(r[n]) for n in names)]["time"] for r in ranked]
    sample_regret = min(t for t in times if is_time(t)) / best_all - 1
    print(
        f"\nkerneltime top {K} of {SAMPLE} sampled convolution configurations on {DEVICE}: "
        f"Kernel Tuner's best {min(found):.3f} ms vs measured best {best_all:.3f} ms, "
        f"regret {regret:.1%} (the sample's own best: {sample_regret:.1%}; a random "
        f"configuration: {random_regret:.0%}); ranking took {ranking_s:.1f} s "
        f"({ranking_s / SAMPLE * 1e3:.0f} ms per configuration)"
    )
    assert 0 <= sample_regret <= regret < random_regret
