"""Shared paths and the rule for missing tools: a test that needs a compiler (NVRTC) or the
development caches skips with a message, unless KERNELTIME_REQUIRE_TOOLS names the tool (as
scripts/test.sh sets it), when it fails instead."""

import os
import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
# ../shared relative to the repository checkout.
TUNING = REPO.parent / "shared" / "data" / "tuning"


def required(tool):
    return tool in os.environ.get("KERNELTIME_REQUIRE_TOOLS", "").split(",")


def need(condition, tool, message):
    """Skips (or fails, when the tool is required) unless `condition`."""
    if condition:
        return
    if required(tool):
        pytest.fail(f"{message} (required by KERNELTIME_REQUIRE_TOOLS)")
    pytest.skip(message)


def has_cuda_compiler():
    """Whether kerneltime finds NVRTC or nvcc, by compiling the smallest kernel."""
    import kerneltime

    try:
        kerneltime.predict(
            "RTX 2080 Ti",
            source='extern "C" __global__ void k() {}',
            kernel_name="k",
            grid=1,
            block=32,
            compile_cache=False,
        )
        return True
    except kerneltime.KerneltimeError as e:
        return "NVRTC" not in str(e) and "nvcc" not in str(e)


@pytest.fixture(scope="session")
def cuda():
    need(has_cuda_compiler(), "toolchain", "no CUDA compiler (NVRTC or nvcc): run scripts/install-gpu-toolchain.sh")
