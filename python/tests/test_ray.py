"""kerneltime.ray.rank on a local Ray instance gives the single-machine ranking."""

import pytest

import kerneltime
from conftest import EXAMPLES

ray = pytest.importorskip("ray")

import kerneltime.ray as ktray  # noqa: E402


def test_without_ray_init_the_error_says_so(cuda):
    if ray.is_initialized():
        pytest.skip("Ray is running in this process")
    with pytest.raises(kerneltime.KerneltimeError) as e:
        ktray.rank(spec=EXAMPLES / "saxpy-tune.json", device="TITAN RTX")
    assert "ray.init" in str(e.value)


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield
    ray.shutdown()


def test_ray_ranking_equals_the_single_machine_ranking(cuda, local_ray):
    kw = dict(
        tune_params={"block_size_x": [32, 64, 128, 256, 512, 1024, 2048], "unroll": [1, 2, 4]},
        restrictions=["block_size_x * unroll <= 4096", lambda p: p["unroll"] != 4 or p["block_size_x"] > 32],
        device=["RTX 2080 Ti", "A100"],
    )
    args = ("saxpy", str(EXAMPLES / "saxpy.cu"), 1 << 20, [1 << 20, 2.0])
    single = kerneltime.rank(*args, **kw)
    # Five tasks over the 18 configurations: chunks of 4 and 3, each ranked on its own.
    rep = ktray.rank_report(*args, num_tasks=5, **kw)
    assert rep["stats"]["tasks"] == 5
    assert rep["rows"] == single
    assert {r["status"] for r in single} == {"ok", "cannot-launch"}
    top = ktray.rank(*args, num_tasks=3, top=4, **kw)
    assert top == [r for r in single if r["rank"] is not None and r["rank"] <= 4]


def test_ray_with_a_fair_spec_and_a_sample(cuda, local_ray):
    spec = EXAMPLES / "saxpy-tune.json"
    single = kerneltime.rank(spec=spec, device="TITAN RTX", sample=4, seed=3)
    assert ktray.rank(spec=spec, device="TITAN RTX", sample=4, seed=3, num_tasks=2) == single

