"""kerneltime: predict GPU kernel times and rank autotuning search spaces without a GPU.

The functions here are thin: they turn keyword arguments into a job for the Rust library
(``kerneltime._native``) and its answer into plain dicts and lists (no numpy needed).

- :func:`predict` -- the time of one kernel launch on one GPU, from PTX text, a CUDA/OpenCL
  source (compiled in-process by NVRTC) or a built-in kernel program.
- :func:`rank` -- every configuration of a Kernel Tuner style search space (``tune_params``,
  ``restrictions``, ``problem_size``, ``grid_div_x/y/z``) compiled, checked against each GPU's
  limits and predicted, ranked per GPU: the rows of ``kerneltime tune``.
- :mod:`kerneltime.kernel_tuner` -- keep only the predicted top k configurations in Kernel Tuner.
- :mod:`kerneltime.ray` -- the same ranking split into Ray tasks.

Errors in the inputs raise :class:`KerneltimeError` with a one-line message naming what to fix.
"""

import inspect
import json
import os
import tempfile

from . import _native
from ._native import KerneltimeError

__version__ = _native.__version__

__all__ = [
    "KerneltimeError",
    "devices",
    "predict",
    "rank",
    "rank_report",
    "space",
]

STATUSES = ("ok", "cannot-launch", "compile-error", "model-error")


def devices():
    """The names of the GPUs in kerneltime's catalogue (any alias works too)."""
    return list(_native.devices())


# --- small conversions -------------------------------------------------------------------------


def _plain(v):
    """A Python number, string or boolean from a value that may be a numpy scalar."""
    if isinstance(v, (bool, int, float, str)):
        return v
    item = getattr(v, "item", None)
    if item is not None and getattr(v, "ndim", 0) == 0:
        return item()
    raise TypeError(f"{v!r} is not a number, string or boolean")


def _dims(value, name):
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        return [int(_plain(v)) for v in value]
    return [int(_plain(value))]


def _text_or_file(value):
    """(text, path or None): a path to an existing file is read; anything else is the text."""
    if isinstance(value, os.PathLike) or (
        isinstance(value, str) and "\n" not in value and len(value) < 4096 and os.path.isfile(value)
    ):
        path = os.path.abspath(os.fspath(value))
        with open(path, encoding="utf-8") as f:
            return f.read(), path
    if not isinstance(value, str):
        raise TypeError(f"expected source text or a file path, got {type(value).__name__}")
    if "\n" not in value and os.path.splitext(value)[1].lower() in _SOURCE_SUFFIXES:
        raise KerneltimeError(f"{value}: no such file")
    return value, None


_SOURCE_SUFFIXES = {".cu", ".cuh", ".cl", ".ptx", ".c", ".cc", ".cpp", ".h", ".hpp", ".txt", ".log"}


def _arg_list(args):
    """Kernel arguments as ``NAME=VALUE`` strings, from a dict or a list of such strings."""
    if args is None:
        return []
    if isinstance(args, dict):
        return [f"{k}={_plain(v) if not isinstance(v, str) else v}" for k, v in args.items()]
    return [str(a) for a in args]


def _cache_fields(compile_cache):
    if compile_cache is True or compile_cache is None:
        return {}
    if compile_cache is False:
        return {"use_compile_cache": False}
    return {"compile_cache_dir": os.path.abspath(os.fspath(compile_cache))}


def _call(fn, job):
    """Runs a native function on a job dict; a kernel given as source text is written to a
    temporary file for the call (so a job can travel to another process, e.g. a Ray task)."""
    job = dict(job)
    source_text = job.pop("source_text", None)
    source_name = job.pop("source_name", None)
    spec = job.pop("spec", None)
    with tempfile.TemporaryDirectory(prefix="kerneltime-") as tmp:
        if spec is not None:
            spec = json.loads(json.dumps(spec))
            if source_text is not None:
                path = os.path.join(tmp, source_name or "kernel.cu")
                with open(path, "w", encoding="utf-8") as f:
                    f.write(source_text)
                spec["KernelSpecification"]["KernelFile"] = path
            job["spec_text"] = json.dumps(spec)
        try:
            return json.loads(fn(json.dumps(job)))
        except KerneltimeError as e:
            if spec is None:
                raise
            raise KerneltimeError(_keyword_names(str(e))) from None


# The fields of the FAIR spec built from rank()'s keywords, as those keywords.
_KEYWORDS = [
    ("tune_params: ", ""),
    ("ConfigurationSpace.Conditions", "restrictions"),
    ("ConfigurationSpace.TuningParameters", "tune_params"),
    ("KernelSpecification.GridDivX", "grid_div_x"),
    ("KernelSpecification.GridDivY", "grid_div_y"),
    ("KernelSpecification.GridDivZ", "grid_div_z"),
    ("KernelSpecification.LocalSize", "block_size_names"),
    ("KernelSpecification.ProblemSize", "problem_size"),
    ("KernelSpecification.KernelName", "kernel_name"),
    ("KernelSpecification.Language", "lang"),
]


def _keyword_names(message):
    """An error about a spec built from keywords, in the keywords' names (the index of a
    restriction counts the expression strings)."""
    for field, keyword in _KEYWORDS:
        message = message.replace(field, keyword)
    return message


# --- predict -----------------------------------------------------------------------------------


def predict(
    device,
    *,
    ptx=None,
    source=None,
    builtin=None,
    kernel_name=None,
    grid=None,
    block=None,
    args=None,
    model="trace",
    lang="CUDA",
    defines=None,
    compiler_options=None,
    resources=None,
    dynamic_shared_bytes=0,
    params=None,
    device_file=None,
    compiler="auto",
    compile_cache=True,
    clock_mhz=None,
):
    """Predicts the time of one kernel launch on one GPU.

    Give the kernel one of three ways:

    - ``ptx``: PTX text (or the path of a ``.ptx`` file) with ``kernel_name`` (the entry, or the
      source name a C++ entry mangles from), ``grid`` and ``block`` (an int or up to three);
    - ``source``: CUDA (or ``lang="OpenCL"``) source text or file, compiled in-process for the
      GPU's architecture with ``defines`` (dict) and ``compiler_options``; the compiler's report
      gives registers and spills;
    - ``builtin``: a built-in kernel program (``dwt-matrix``, ``dwt-lattice``, ``mtx-mul-vec``)
      at ``params`` (dict), for the ``puchala`` model.

    ``args`` are the scalar kernel arguments, a dict ``{"n": 1 << 20}`` (pointers get synthetic
    allocations). ``resources`` is a ptxas -v / NVRTC / cuobjdump report (text or file); without
    one, ptxas is run on PTX input when it is on this machine. ``model`` is ``trace`` (default),
    another model that reads PTX (``mwp-cwp``, ``hong-kim``, ``wu``, ``puchala``, ...) or ``all``.
    ``clock_mhz`` times the GPU at that core clock instead of its description's (the clock
    ``nvidia-smi`` shows on a laptop part, or on a GPU that boosts above its rated clock).

    Returns a dict: ``time_us``, ``model``, ``device``, ``breakdown`` (every intermediate
    quantity, units in the names), ``notes`` (assumptions), and ``launch``/``cycles`` when known.
    With ``model="all"``: ``predictions`` (one such dict per model), ``band`` (their spread),
    ``bound`` (the launch's physical lower bound) and ``notes``.
    """
    job = {
        "model": model,
        "args": _arg_list(args),
        "dynamic_shared_bytes": int(dynamic_shared_bytes),
        "compiler": compiler,
        **_cache_fields(compile_cache),
    }
    if device_file is not None:
        job["device_file"] = os.fspath(device_file)
    else:
        job["device"] = device
    if clock_mhz is not None:
        job["clock_mhz"] = float(clock_mhz)
    given = [n for n, v in (("ptx", ptx), ("source", source), ("builtin", builtin)) if v is not None]
    if len(given) != 1:
        raise KerneltimeError(
            "give exactly one of ptx=, source= or builtin= (got " + (", ".join(given) or "none") + ")"
        )
    if builtin is not None:
        job["builtin"] = builtin
        job["params"] = {k: float(_plain(v)) for k, v in (params or {}).items()}
        if model == "trace":
            job["model"] = "puchala"
        return _call(_native.predict, job)
    job["kernel_name"] = kernel_name
    job["grid"] = _dims(grid, "grid")
    job["block"] = _dims(block, "block")
    if ptx is not None:
        job["ptx"] = _text_or_file(ptx)[0]
    else:
        text, path = _text_or_file(source)
        job["source"] = text
        job["language"] = lang
        if path is not None:
            job["source_name"] = os.path.basename(path)
            job["include_dir"] = os.path.dirname(path)
        job["defines"] = [[str(k), str(_plain(v))] for k, v in (defines or {}).items()]
        job["compiler_options"] = list(compiler_options or [])
    if resources is not None:
        job["resources"] = _text_or_file(resources)[0]
    return _call(_native.predict, job)


# --- rank --------------------------------------------------------------------------------------


def _value_type(values):
    if all(isinstance(v, bool) for v in values):
        return "bool"
    if all(isinstance(v, int) for v in values):
        return "int"
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return "float"
    if all(isinstance(v, str) for v in values):
        return "string"
    raise KerneltimeError(
        "tune_params: a parameter's values must be all numbers, all strings or all booleans"
    )


def _grid_div(value, axis):
    if value is None:
        return None
    if callable(value):
        raise KerneltimeError(
            f"grid_div_{axis}: a function is not supported; give parameter names or expressions"
        )
    if isinstance(value, (str, int)):
        value = [value]
    return [str(v) for v in value]


def _split_restrictions(restrictions):
    """(expression strings, Python callables)."""
    if restrictions is None:
        return [], []
    if callable(restrictions) or isinstance(restrictions, str):
        restrictions = [restrictions]
    strings, functions = [], []
    for r in restrictions:
        if isinstance(r, str):
            strings.append(r)
        elif callable(r):
            functions.append(r)
        else:
            raise KerneltimeError(
                f"restrictions: {r!r} is neither a Python expression string nor a function"
            )
    return strings, functions


def _prepare_rank(
    kernel_name=None,
    kernel_source=None,
    problem_size=None,
    arguments=None,
    tune_params=None,
    *,
    device=None,
    device_file=None,
    restrictions=None,
    grid_div_x=None,
    grid_div_y=None,
    grid_div_z=None,
    block_size_names=None,
    lang="CUDA",
    compiler_options=None,
    defines=None,
    args=None,
    data=None,
    mapped_host=None,
    smem_bytes=0,
    model="trace",
    sample=None,
    seed=0,
    configurations=None,
    spec=None,
    compiler="auto",
    compile_cache=True,
    host_link_gbs=None,
    clock_mhz=None,
):
    """The native job of a ranking and the Python restrictions still to apply."""
    devs = [] if device is None else ([device] if isinstance(device, str) else list(device))
    files = [] if device_file is None else (
        [device_file] if isinstance(device_file, (str, os.PathLike)) else list(device_file)
    )
    job = {
        "devices": devs,
        "device_files": [os.fspath(f) for f in files],
        "model": model,
        "args": _arg_list(args),
        "defines": [
            f"{k}={_plain(v)}" for k, v in (defines or {}).items()
        ] if isinstance(defines, dict) else list(defines or []),
        "data": [f"{k}={v}" for k, v in (data or {}).items()] if isinstance(data, dict) else list(data or []),
        "mapped_host": list(mapped_host or []),
        "compiler": compiler,
        "seed": int(seed),
        **_cache_fields(compile_cache),
    }
    if sample is not None:
        job["sample"] = int(sample)
    if configurations is not None:
        job["indices"] = [int(i) for i in configurations]
    if host_link_gbs is not None:
        job["host_link_gbs"] = float(host_link_gbs)
    if clock_mhz is not None:
        job["clock_mhz"] = float(clock_mhz)
    if problem_size is not None:
        job["problem_size"] = _dims(problem_size, "problem_size")
    strings, functions = _split_restrictions(restrictions)
    if spec is not None:
        if tune_params is not None or strings:
            raise KerneltimeError(
                "give either spec= (a FAIR spec file) or tune_params/restrictions, not both"
            )
        job["spec_path"] = os.path.abspath(os.fspath(spec))
        return job, functions
    if kernel_name is None or kernel_source is None or tune_params is None:
        raise KerneltimeError(
            "rank needs kernel_name, kernel_source and tune_params (or spec= a FAIR spec file)"
        )
    if problem_size is None:
        raise KerneltimeError("rank needs problem_size (an int or up to three)")
    text, path = _text_or_file(kernel_source)
    params = []
    for name, values in tune_params.items():
        values = [_plain(v) for v in values]
        if not values:
            raise KerneltimeError(f"tune_params: `{name}` has no value")
        params.append({"Name": str(name), "Type": _value_type(values), "Values": values})
    kernel = {
        "Language": lang or "CUDA",
        "KernelName": kernel_name,
        "KernelFile": path or "",
        "CompilerOptions": list(compiler_options or []),
        "ProblemSize": job["problem_size"],
        "SharedMemory": int(smem_bytes),
    }
    if block_size_names:
        names = list(block_size_names) + ["1"] * (3 - len(block_size_names))
        kernel["LocalSize"] = dict(zip("XYZ", names))
        divs = (grid_div_x, grid_div_y, grid_div_z)
        grid_div_x, grid_div_y, grid_div_z = (
            d if d is not None or n == "1" else [n] for d, n in zip(divs, names)
        )
    for axis, div in (("X", grid_div_x), ("Y", grid_div_y), ("Z", grid_div_z)):
        div = _grid_div(div, axis.lower())
        if div is not None:
            kernel["GridDiv" + axis] = div
    job["spec"] = {
        "General": {"BenchmarkName": kernel_name},
        "ConfigurationSpace": {"TuningParameters": params, "Conditions": strings},
        "KernelSpecification": kernel,
    }
    if path is None:
        job["source_text"] = text
        job["source_name"] = "kernel.cl" if str(lang).lower() == "opencl" else "kernel.cu"
    # Kernel Tuner's arguments: numbers are scalar kernel arguments by position; arrays are
    # buffers (the emulator allocates them).
    positional = []
    for k, a in enumerate(arguments or []):
        try:
            v = _plain(a)
        except TypeError:
            continue
        if not isinstance(v, (bool, int, float)):
            continue
        positional.append(f"{k}={int(v) if isinstance(v, bool) else v}")
    job["args"] = positional + job["args"]
    return job, functions


def space(*a, **kw):
    """The configurations of a search space that meet every restriction, as dicts, in
    Kernel Tuner's order (the product of the value lists, the last parameter fastest). Takes
    the arguments of :func:`rank`; Python restrictions (functions) are applied too."""
    job, functions = _prepare_rank(*a, **kw)
    return [dict(c) for _, c in _filtered_space(job, functions)]


def _as_predicate(f, names):
    """A restriction function as a predicate of a dict of parameter values. As in Kernel
    Tuner: a function of one argument gets the dict (``lambda p: p["x"] * p["y"] <= 1024``)
    when there are several parameters; otherwise a function gets every parameter's value, in
    ``tune_params`` order (``lambda x, y: x * y <= 1024``; with one parameter, its value)."""
    try:
        arity = len(inspect.signature(f).parameters)
    except (TypeError, ValueError):
        arity = 1
    if arity == 1 and len(names) > 1:
        return f
    return lambda p: f(*(p[n] for n in names))


def _filtered_space(job, functions):
    """[(index, {name: value})] of the configurations that meet every restriction."""
    sp = _call(_native.space, job)
    names = sp["names"]
    predicates = [_as_predicate(f, names) for f in functions]
    out = []
    for index, values in sp["configurations"]:
        p = dict(zip(names, values))
        if all(f(p) for f in predicates):
            out.append((index, p))
    return out


def _apply_functions(job, functions):
    """The job restricted to the configurations Python restrictions accept (each function is
    called with a dict of parameter values, as Kernel Tuner calls a restriction function)."""
    if not functions:
        return job
    keep = [i for i, _ in _filtered_space(job, functions)]
    if "indices" in job:
        wanted = set(job["indices"])
        keep = [i for i in keep if i in wanted]
    if not keep:
        raise KerneltimeError("restrictions: no configuration meets every restriction")
    return dict(job, indices=keep)


def _rank_rows(rows):
    """Gives every ``ok`` row its rank on its device: by predicted time, ties by configuration
    index (the rule of ``kerneltime tune``); other rows get none."""
    by_device = {}
    for r in rows:
        r["rank"] = None
        if r["status"] == "ok":
            by_device.setdefault(r["device"], []).append(r)
    for ok in by_device.values():
        ok.sort(key=lambda r: (r["predicted_us"], r["index"]))
        for k, r in enumerate(ok, 1):
            r["rank"] = k


def _output(result, top):
    """The report with user rows: per device, ``ok`` rows by rank (only ``top`` when given),
    then the others in configuration order; each row a dict of every parameter, ``device``,
    ``status``, ``predicted_us``, ``rank`` and ``reason``."""
    names = result["param_names"]
    out = []
    for dev in result["devices"]:
        rows = [r for r in result["rows"] if r["device"] == dev]
        ok = sorted((r for r in rows if r["status"] == "ok"), key=lambda r: r["rank"])
        if top is not None:
            ok = ok[: int(top)]
            others = []
        else:
            others = sorted((r for r in rows if r["status"] != "ok"), key=lambda r: r["index"])
        for r in ok + others:
            row = {"device": dev}
            row.update(zip(names, r["values"]))
            row.update(
                status=r["status"],
                predicted_us=r["predicted_us"],
                rank=r["rank"],
                reason=r["reason"],
            )
            out.append(row)
    return dict(result, rows=out)


def rank_report(*a, top=None, **kw):
    """:func:`rank` with what the run says about itself: a dict with ``rows`` (as :func:`rank`
    returns them), ``param_names``, ``devices``, ``stats`` (``space_size``, ``selected``,
    ``compiled``, ``cache_hits``, ``wall_seconds``) and ``notes`` (compiler, cache, model
    assumptions)."""
    job, functions = _prepare_rank(*a, **kw)
    job = _apply_functions(job, functions)
    return _output(_call(_native.rank, job), top)


def rank(*a, top=None, **kw):
    """Ranks the configurations of a Kernel Tuner style search space on one or more GPUs without
    running them.

    Positional arguments follow Kernel Tuner's ``tune_kernel``: ``kernel_name``,
    ``kernel_source`` (a file path or the source text), ``problem_size`` (an int or up to
    three), ``arguments`` (numbers become scalar kernel arguments by position; arrays are
    buffers) and ``tune_params`` (dict: name -> list of values). Keywords:

    - ``device``: a catalogue GPU name or a list of them (``device_file``: device TOML files);
    - ``restrictions``: Python expression strings (evaluated by kerneltime) and/or functions
      (called in Python with a dict of parameter values, before anything is compiled);
    - ``grid_div_x/y/z``, ``block_size_names``, ``lang``, ``compiler_options``, ``defines``
      (dict), ``smem_bytes`` (dynamic shared memory per block), as in Kernel Tuner;
    - ``args`` (dict NAME -> number or expression using the parameters and ``ProblemSize``),
      ``data`` (dict NAME -> ``const:V``/``iota``/``uniform:LO:HI``), ``mapped_host`` (buffers
      that are zero-copy host memory), ``host_link_gbs``, ``clock_mhz`` (the core clock every GPU
      is timed at instead of its description's);
    - ``model`` (``trace`` by default), ``sample`` and ``seed`` (a seeded uniform sample of the
      space), ``configurations`` (indices in the full product), ``top`` (the k best per GPU);
    - ``spec``: a FAIR autotuning spec file instead of the kernel arguments (as
      ``kerneltime tune SPEC``);
    - ``compiler`` (``auto``, ``nvrtc``, ``nvcc``), ``compile_cache`` (True: the user's cache
      folder; False: none; or a folder).

    Returns a list of dicts, the rows of ``kerneltime tune --json``: ``device``, every tunable
    parameter, ``status`` (``ok``, ``cannot-launch``, ``compile-error``, ``model-error``),
    ``predicted_us``, ``rank`` (1 = fastest predicted on that device) and ``reason``.
    """
    return rank_report(*a, top=top, **kw)["rows"]
