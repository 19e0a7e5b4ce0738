"""Ranking a search space over a Ray cluster: the space is split into chunks, each chunk is
ranked by one Ray task (the same Rust ranking as :func:`kerneltime.rank`, compiling and
predicting its configurations), and the rows are merged and ranked again per GPU by predicted
time, ties by configuration index -- the rule of the single-machine ranking, so both give the
same ranking.

::

    import ray, kerneltime.ray
    ray.init()                      # or ray.init(address="auto") on a cluster
    rows = kerneltime.ray.rank("convolution_kernel", "convolution.cu", (4096, 4096), [],
                               tune_params, device=["RTX 2080 Ti", "TITAN RTX"], num_tasks=64)

Each task needs the kernel source: given as text, it travels with the task; given as a path
(or ``spec=``), that path must be readable on every node (a shared file system). Each node
keeps its own compile cache (``compile_cache=`` a shared folder shares it).
"""

import ray as _ray

from . import KerneltimeError, _apply_functions, _call, _native, _output, _prepare_rank, _rank_rows

__all__ = ["rank", "rank_report"]


@_ray.remote
def _rank_chunk(job):
    return _call(_native.rank, job)


def _chunks(indices, num_tasks):
    n = max(1, min(int(num_tasks), len(indices)))
    size, extra = divmod(len(indices), n)
    out, start = [], 0
    for k in range(n):
        end = start + size + (1 if k < extra else 0)
        out.append(indices[start:end])
        start = end
    return out


def rank_report(*a, top=None, num_tasks=None, **kw):
    """:func:`kerneltime.rank_report` with the configurations split into ``num_tasks`` Ray
    tasks (default: twice the cluster's CPUs); ``stats`` add up the tasks' counters, with
    ``tasks`` and the driver's ``wall_seconds``. Ray must be initialised (``ray.init``)."""
    import time

    started = time.perf_counter()
    if not _ray.is_initialized():
        raise KerneltimeError("Ray is not running here: call ray.init() (or ray.init(address=...)) first")
    job, functions = _prepare_rank(*a, **kw)
    job = _apply_functions(job, functions)
    indices = _call(_native.select, job)
    if num_tasks is None:
        num_tasks = 2 * max(1, int(_ray.cluster_resources().get("CPU", 1)))
    base = {k: v for k, v in job.items() if k not in ("sample", "indices")}
    futures = [_rank_chunk.remote(dict(base, indices=c)) for c in _chunks(indices, num_tasks)]
    parts = _ray.get(futures)
    rows = [r for p in parts for r in p["rows"]]
    _rank_rows(rows)
    stats = {
        "space_size": parts[0]["stats"]["space_size"],
        "selected": sum(p["stats"]["selected"] for p in parts),
        "compiled": sum(p["stats"]["compiled"] for p in parts),
        "cache_hits": sum(p["stats"]["cache_hits"] for p in parts),
        "tasks": len(parts),
        "wall_seconds": time.perf_counter() - started,
    }
    notes = []
    for p in parts:
        notes += [n for n in p["notes"] if n not in notes and not n.startswith("compile cache ")]
    merged = dict(parts[0], rows=rows, stats=stats, notes=notes)
    return _output(merged, top)


def rank(*a, top=None, num_tasks=None, **kw):
    """:func:`kerneltime.rank` over Ray tasks (see :func:`rank_report`): the same list of rows,
    the same ranks."""
    return rank_report(*a, top=top, num_tasks=num_tasks, **kw)["rows"]
