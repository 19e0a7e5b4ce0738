"""Kernel Tuner integration: measure only the configurations kerneltime predicts fastest.

``top_k_restriction`` ranks the search space with :func:`kerneltime.rank` (no GPU) and returns
a restriction function for ``kernel_tuner.tune_kernel(..., restrictions=...)`` that accepts
only the predicted top k configurations; any Kernel Tuner strategy then searches (or brute
forces) that small set::

    import kerneltime.kernel_tuner as ktk
    keep = ktk.top_k_restriction(10, "convolution_kernel", "convolution.cu", (4096, 4096),
                                 args, tune_params, device="RTX 2080 Ti",
                                 restrictions=restrict, grid_div_x=["block_size_x", "tile_size_x"],
                                 grid_div_y=["block_size_y", "tile_size_y"])
    results, env = kernel_tuner.tune_kernel("convolution_kernel", "convolution.cu", (4096, 4096),
                                            args, tune_params, restrictions=keep, ...)

Kernel Tuner is not imported here: the restriction is a plain function of a dict of parameter
values, the form Kernel Tuner accepts for ``restrictions``.
"""

from . import KerneltimeError, rank_report

__all__ = ["top_k", "top_k_restriction"]


def top_k(k, *args, **kwargs):
    """The predicted top ``k`` configurations (dicts of parameter values, fastest first) of a
    search space on one GPU; takes the arguments of :func:`kerneltime.rank` (one ``device``).
    With ``sample=N`` only N configurations are ranked, so the k are the best of those."""
    if int(k) < 1:
        raise KerneltimeError("k must be at least 1")
    device = kwargs.get("device")
    if device is None or (not isinstance(device, str) and len(device) != 1):
        raise KerneltimeError("top_k ranks for one GPU: give device=\"NAME\"")
    report = rank_report(*args, top=int(k), **kwargs)
    names = report["param_names"]
    return [{n: r[n] for n in names} for r in report["rows"]]


def top_k_restriction(k, *args, **kwargs):
    """A Kernel Tuner restriction that keeps only the predicted top ``k`` configurations.

    Takes the arguments of :func:`kerneltime.rank` (Kernel Tuner's ``tune_kernel`` order:
    kernel_name, kernel_source, problem_size, arguments, tune_params; then ``device=`` one GPU,
    ``restrictions``, ``grid_div_x/y``, ...). Returns a function ``restriction(p) -> bool`` of a
    dict of parameter values (or of the values themselves, or keywords: each way Kernel Tuner calls
    one), with ``restriction.configurations`` holding the kept
    configurations (fastest first). Pass it alone as ``restrictions=`` to ``tune_kernel``: it
    already implies the original restrictions."""
    kept = top_k(k, *args, **kwargs)
    if not kept:
        raise KerneltimeError("no configuration could be predicted on this GPU; nothing to keep")
    names = list(kept[0])
    allowed = {tuple(c[n] for n in names) for c in kept}

    def restriction(*values, **by_name):
        # Kernel Tuner calls a restriction with a dict of the values (several parameters),
        # with the values themselves (one parameter), or by keyword (its checks in util.py).
        if len(values) == 1 and isinstance(values[0], dict):
            by_name = values[0]
        if by_name:
            values = tuple(by_name[n] for n in names)
        return tuple(values) in allowed

    restriction.configurations = kept
    return restriction
