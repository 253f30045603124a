"""weft: a multi-level superoptimizer for tensor programs, from Python.

Programs (µGraphs) come from the text format (``weft.parse``, ``weft.load``) or a ``weft.Builder``;
``weft.optimize`` searches for the fastest verified equivalent µGraph; ``weft.verify`` proves two
programs equivalent; ``weft.run`` runs the reference interpreter and ``weft.compile`` builds a
callable with a backend. ``weft.load_model`` reads a model (.wmod, or .onnx through the importer) to
check, print and run; ``weft.compile_model`` compiles a whole model into a directory
(``weft compile MODEL -o DIR``) and ``weft.load_compiled`` loads one to run. The work is the C++
library's (driver/), the same as the ``weft`` CLI's.
docs/python.md documents the API.
"""

import json as _json
import os as _os
import sys as _sys
import tempfile as _tempfile
from collections import namedtuple as _namedtuple

import numpy as _np

from . import _weft
from ._progress import progress_display as _progress_display
from .errors import InternalError, UserError, user_error as _user_error
from . import megakernel  # noqa: E402  (weft.megakernel: the persistent kernel)

__version__ = _weft.__version__

# Defaults as the C++ side declares them (the search configuration's fields; `weft compile`'s
# options), read here rather than written a second time.
_SEARCH_DEFAULTS = {f["key"]: f["default"] for f in _weft.config_fields()}
_COMPILE_DEFAULTS = _weft.compile_defaults()

__all__ = [
    "Builder", "CompiledModel", "CompiledModelDir", "CompiledProgram", "InternalError", "Model",
    "OptimizeResult", "Param", "Program", "TensorSpec",
    "UserError", "Value", "VerifyResult", "compile", "compile_model", "config_fields", "load",
    "load_compiled", "load_model", "megakernel", "optimize", "ops", "parse", "run", "targets", "verify",
]

TensorSpec = _namedtuple("TensorSpec", ["name", "dtype", "shape"])
TensorSpec.__doc__ = "A program input or output: its name, dtype ('f32', 'f16', 'bf16') and shape."


def _specs(tuples):
    return [TensorSpec(name, dtype, tuple(shape)) for name, dtype, shape in tuples]


class Program:
    """A µGraph: a kernel graph of pre-defined operators (an input program) or of graph-defined
    kernels (an optimized one). ``str(program)`` is its text form (docs/format.md);
    ``weft.parse(str(p)) == p``."""

    __slots__ = ("_graph", "_file")
    __hash__ = None

    def __init__(self, graph, file="<program>"):
        self._graph = graph
        self._file = file

    @property
    def name(self):
        return self._graph.name

    @property
    def file(self):
        """The file it was loaded from, or a placeholder such as ``<string>``."""
        return self._file

    @property
    def inputs(self):
        return _specs(self._graph.inputs)

    @property
    def outputs(self):
        return _specs(self._graph.outputs)

    def text(self, type_comments=True):
        """The canonical text form; with ``type_comments`` every statement ends in its types."""
        return self._graph.text(type_comments)

    def __str__(self):
        return self._graph.text(True)

    def __repr__(self):
        return (f"<weft.Program {self.name or '(unnamed)'}: {len(self.inputs)} inputs, "
                f"{len(self.outputs)} outputs, {self._graph.num_ops} ops>")

    def __eq__(self, other):
        if not isinstance(other, Program):
            return NotImplemented
        return self._graph == other._graph

    def check(self, target=_SEARCH_DEFAULTS["target"]):
        """Checks the validity rules on ``target`` (see ``weft.targets()``). Returns a one-line
        summary; raises UserError at the first violation (its message lists every one)."""
        return _weft.check(self._graph, target, self._file)

    def save(self, path):
        """Writes the text form to ``path``."""
        with open(path, "w", encoding="utf-8") as f:
            f.write(str(self))

    def dot(self):
        """The Graphviz DOT text of the µGraph hierarchy."""
        return self._graph.dot()

    def svg(self):
        """The µGraph hierarchy drawn as SVG by Graphviz; UserError when ``dot`` is missing."""
        with _tempfile.TemporaryDirectory(prefix="weft-dot-") as tmp:
            path = _os.path.join(tmp, "graph.svg")
            _weft.render_dot(self._graph.dot(), path)
            with open(path, encoding="utf-8") as f:
                return f.read()

    def _repr_svg_(self):
        # Jupyter: the picture, or a picture of the reason there is none.
        try:
            return self.svg()
        except UserError as e:
            text = str(e).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            return ('<svg xmlns="http://www.w3.org/2000/svg" width="900" height="30">'
                    f'<text x="5" y="20" font-family="monospace" font-size="13">{text}</text>'
                    "</svg>")


def parse(text, filename="<string>"):
    """A Program from its text form; UserError located at ``filename``:line:col on a mistake."""
    return Program(_weft.parse(text, filename), filename)


def load(path):
    """A Program from a .weft file; UserError (file:line:col) on a mistake."""
    path = _os.fspath(path)
    return Program(_weft.load(path), path)


def load_model(path, bounds=None):
    """A Model from a model file, parsed (or imported), type-deduced and checked as
    ``weft model check`` does; UserError (file:line:col) on a mistake. A .wmod file is weft's
    model text (docs/model-format.md); an .onnx file is imported (docs/onnx.md) when weft was
    built with ONNX support (else a UserError says it was not): its ``dim_param`` dims become
    symbolic variables, bounded by ``bounds`` (a dict by dim_param name, e.g.
    ``{"seq": 64}``; 4096 otherwise, or less where the model allows less: ``Model.notes`` says
    so), and its weights stay with the model, so ``main`` takes the graph's inputs only, by
    their ONNX names."""
    path = _os.fspath(path)
    if bounds and not path.lower().endswith(".onnx"):
        raise _user_error("weft.load_model: bounds apply to ONNX models (.onnx) only", path)
    return Model(_weft.ModelCore(path, _int_dict(bounds or {}, "bounds")), path)


def _int_dict(d, what):
    # {name: int} for the C++ core; a UserError naming `what` for anything else.
    if not isinstance(d, dict):
        raise _user_error(f"{what} must be a dict of names to integers, not {type(d).__name__}")
    out = {}
    for k, v in d.items():
        if not isinstance(k, str) or isinstance(v, bool) or not isinstance(v, (int, _np.integer)):
            raise _user_error(f"{what}: {k!r}: {v!r} is not a name and an integer")
        out[k] = int(v)
    return out


def ops():
    """The operator table: a list of dicts (name, min_inputs, max_inputs, kernel_level,
    model_level, model_only, attrs, doc), the same as ``weft ops``."""
    return _weft.ops()


def targets():
    """The hardware targets as (name, kind, description) tuples; kind is 'gpu' or 'cpu'."""
    return _weft.targets()


def config_fields():
    """The search configuration's fields (key, flag, doc, accepted, default): the keywords
    ``weft.optimize`` accepts, and the flags of ``python -m weft optimize``."""
    return _weft.config_fields()


# --- Builder ----------------------------------------------------------------------------------

class Value:
    """A value of a Builder's program: a name and a tensor type."""

    __slots__ = ("_builder", "_id", "name", "dtype", "shape")

    def __init__(self, builder, value_id):
        name, dtype, shape = builder._core.value(value_id)
        self._builder, self._id = builder, value_id
        self.name, self.dtype, self.shape = name, dtype, tuple(shape)

    def __repr__(self):
        return f"<weft.Value {self.name}: {self.dtype}{list(self.shape)}>"


class Builder:
    """Builds a program statement by statement, as the text format writes it::

        b = weft.Builder("gated_mlp")
        x = b.input("X", "f16", [8, 4096])          # input X: f16[8, 4096]
        w = b.input("W", "f16", [4096, 4096])
        y = b.silu(b.matmul(x, w), name="Y")        # Y = silu(matmul(X, W))
        b.output(y)                                 # output Y
        program = b.build()

    Every pre-defined operator of ``weft.ops()`` is a method: operands first, then attributes as
    keywords (``b.rms_norm(x, eps=1e-6)``, ``b.sum(x, dim=1)``); ``name=`` names the result
    (``names=`` the results of a split), else fresh names are made. Several results come back as
    a tuple. Rational attributes take ints, floats (their shortest decimal form, so 1e-6 is
    exact), ``fractions.Fraction`` or strings like ``"1/4096"``. Graph-defined kernels are written
    in the text format."""

    _op_table = None

    def __init__(self, name=""):
        self._core = _weft.GraphBuilder(name)
        self._name = name

    @classmethod
    def _ops(cls):
        if cls._op_table is None:
            cls._op_table = {o["name"]: o for o in _weft.ops() if o["kernel_level"]}
        return cls._op_table

    def input(self, name, dtype, shape):
        """Declares the next program input: ``input NAME: DTYPE[SHAPE]``."""
        return Value(self, self._core.add_input(name, dtype, [int(d) for d in shape]))

    def _value_id(self, v, op):
        if not isinstance(v, Value) or v._builder is not self:
            raise _user_error(f"{op}: operands must be values of this builder, not {v!r}")
        return v._id

    def op(self, op, *operands, name=None, names=None, **attrs):
        """Adds ``op(operands..., attrs...)`` and returns its result (a tuple for several)."""
        if name is not None and names is not None:
            raise _user_error(f"{op}: give name= or names=, not both")
        ids = [self._value_id(v, op) for v in operands]
        result_names = [name] if name is not None else list(names or [])
        results = self._core.add_op(op, ids, attrs, result_names)
        values = tuple(Value(self, r) for r in results)
        return values[0] if len(values) == 1 else values

    def __getattr__(self, op):
        if op.startswith("_") or op not in self._ops():
            raise AttributeError(f"weft.Builder has no operator or attribute '{op}' "
                                 "(weft.ops() lists the operators)")

        def add(*operands, **kwargs):
            return self.op(op, *operands, **kwargs)

        add.__name__ = op
        add.__doc__ = self._ops()[op]["doc"]
        return add

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._ops()))

    def output(self, *values):
        """Declares program outputs, in order: ``output A, B``."""
        for v in values:
            self._core.add_output(self._value_id(v, "output"))

    def build(self):
        """The program built so far, as a Program (the builder may go on)."""
        return Program(self._core.graph(), f"<builder {self._name}>" if self._name else "<builder>")


# --- Optimize ---------------------------------------------------------------------------------

class OptimizeResult:
    """What ``weft.optimize`` found: ``best`` (a Program, None when nothing was verified), ``top``
    (the verified µGraphs, fastest first), ``predicted_us`` (best's predicted time),
    ``input_predicted_us``, ``speedup`` (input over best), ``error_bound_log2`` (best's
    verification bound as a power of two), ``stop_reason`` ('completed', 'time budget', 'state
    budget', 'memory budget', 'interrupted') and ``stats`` (the summary.json of ``weft optimize``
    with its timing.json under 'timing')."""

    def __init__(self, core, input_file, interrupted):
        self._core = core
        self._input_file = input_file
        self.interrupted = interrupted
        self.top = [Program(g, f"<top-{i + 1}>") for i, g in enumerate(core.top)]
        self.best = self.top[0] if self.top else None
        self.top_predicted_us = list(core.predicted_us)
        self.predicted_us = self.top_predicted_us[0] if self.top else None
        self.input_predicted_us = core.input_predicted_us
        self.speedup = (self.input_predicted_us / self.predicted_us if self.top else None)
        bounds = core.error_bounds
        self.error_bound_log2 = (float(_np.floor(_np.log2(bounds[0]))) if self.top and bounds[0] > 0
                                 else (float("-inf") if self.top else None))
        self.float_error = core.f32_errors[0] if self.top else None
        self.stop_reason = core.stop_reason
        self.stats = core.summary_json(input_file)
        self.stats["timing"] = core.timing_json()

    def save(self, directory):
        """Writes the files ``weft optimize -o DIR`` writes (best.weft, top-N.weft, summary.json,
        timing.json); returns their names."""
        return self._core.write(_os.fspath(directory), self._input_file)

    def summary(self, out_dir="weft-out"):
        """The summary ``weft optimize`` prints (naming ``out_dir`` as where files were written)."""
        name = self._core.program.name or self._input_file
        return self._core.summary_text(name, out_dir)

    def candidate_text(self, rank=1):
        """The text of rank ``rank``'s file (best.weft for 1): a header comment and the µGraph."""
        return self._core.candidate_text(rank - 1)

    def __repr__(self):
        if self.best is None:
            return f"<weft.OptimizeResult: nothing verified (stop: {self.stop_reason})>"
        return (f"<weft.OptimizeResult: best {self.predicted_us:.2f} us predicted, "
                f"{self.speedup:.2f}x the input's {self.input_predicted_us:.2f} us; "
                f"{len(self.top)} verified; stop: {self.stop_reason}>")


def _program(p, what):
    if not isinstance(p, Program):
        raise _user_error(f"{what} must be a weft.Program (weft.parse, weft.load, weft.Builder), "
                          f"not {type(p).__name__}")
    return p


def _run_optimize(program, values, flag_texts, config_path, checkpoint, progress):
    # The one call python -m weft optimize and weft.optimize share. `progress`: a callable taking
    # the report dicts, None, or a display (progress_display) that is closed at the end.
    try:
        core, interrupted = _weft.optimize(
            program._graph, _json.dumps(values), flag_texts,
            _os.fspath(config_path) if config_path else "",
            _os.fspath(checkpoint) if checkpoint else "", progress, 1.0)
    finally:
        if hasattr(progress, "close"):
            progress.close()
    return OptimizeResult(core, program.file, interrupted)


def optimize(program, time_budget=_SEARCH_DEFAULTS["time_budget_s"],
             target=_SEARCH_DEFAULTS["target"], top_k=_SEARCH_DEFAULTS["top_k"], progress=True, *,
             config=None, checkpoint=None, **options):
    """Searches for the fastest verified µGraph equivalent to ``program``.

    ``time_budget`` (seconds, 0: unlimited), ``target`` and ``top_k`` are the common settings;
    any other field of the search configuration is a keyword (``threads=1``,
    ``state_budget=100000``, ``seed=1``, ``memory_budget_mb=...``: ``weft.config_fields()`` lists
    them). ``config`` is a JSON file (path) or a dict of fields, overridden by the keywords.
    ``checkpoint`` is a file to resume from and save progress to. ``progress``: True shows a bar on
    stderr in a terminal and in Jupyter (tqdm when installed, else a line); a callable receives
    each report (an object with phase, elapsed_s, states, candidates, best_predicted_us, checked,
    kept, line, ...); False shows nothing.

    Ctrl-C (KeyboardInterrupt), or a KeyboardInterrupt raised by the progress callable, stops the
    search: the candidates found so far are ranked and verified and returned, with
    ``stop_reason == 'interrupted'``. Any other exception of the callable stops it and is raised."""
    program = _program(program, "weft.optimize's program")
    values = {}
    config_path = None
    if isinstance(config, dict):
        values.update(config)
    elif config is not None:
        config_path = config
    values.update({"time_budget_s": time_budget, "target": target, "top_k": top_k})
    values.update(options)
    if callable(progress):
        from types import SimpleNamespace

        def callback(report):
            progress(SimpleNamespace(**report))
    elif progress:
        callback = _progress_display(values["time_budget_s"], values.get("state_budget", 0))
    else:
        callback = None
    result = _run_optimize(program, values, {}, config_path, checkpoint, callback)
    if result.interrupted:
        print("weft.optimize: interrupted; returning the candidates found so far",
              file=_sys.stderr, flush=True)
    return result


# --- Verify -----------------------------------------------------------------------------------

class VerifyResult:
    """``weft.verify``'s answer: ``equivalent``; ``error_bound_log2`` (the chance that
    non-equivalent programs pass every test, as a power of two); ``float_error`` (b in f32 against
    a in f64: max abs error over max abs output, the worst output's; None without a float check);
    ``verdict`` ('equivalent', 'not equivalent', 'outside Lax', ...), ``tests``, ``message``, and
    for non-equivalent programs ``output`` and ``element``, where they first differ."""

    def __init__(self, d):
        self.equivalent = d["equivalent"]
        self.error_bound_log2 = d["error_bound_log2"]
        self.float_error = d["float_error"]
        self.numerically_acceptable = d["numerically_acceptable"]
        self.verdict = d["verdict"]
        self.tests = d["tests"]
        self.message = d["message"]
        self.output = d["output"] if d["output"] >= 0 else None
        self.element = tuple(d["element"]) if d["element"] else None

    def __bool__(self):
        return self.equivalent

    def __repr__(self):
        return (f"<weft.VerifyResult {self.verdict}: error bound 2^{self.error_bound_log2:.0f} "
                f"after {self.tests} tests, float error {self.float_error}>")


def verify(a, b, target_error=2.0 ** -60, seed=1, threads=0):
    """Are ``a`` and ``b`` the same function? Randomized finite-field tests until the error bound
    reaches ``target_error``, then a floating-point check. UserError when their inputs or outputs
    differ in number or type."""
    r = _weft.verify(_program(a, "a")._graph, _program(b, "b")._graph, float(target_error),
                     int(seed), int(threads))
    return VerifyResult(r)


# --- Run and compile --------------------------------------------------------------------------

def _is_torch(x):
    return type(x).__module__.split(".")[0] == "torch"


def _arrange(program, args, kwargs):
    # Inputs by position, then by name, in the program's input order.
    return _arrange_named(program.name or "the program", "input",
                          [s.name for s in program.inputs], args, kwargs)


def _arrange_named(owner, kind, names, args, kwargs):
    if len(args) > len(names):
        raise _user_error(f"{owner} takes {len(names)} {kind}s ({', '.join(names)}), given "
                          f"{len(args)} by position")
    given = dict(zip(names, args))
    for k, v in kwargs.items():
        if k not in names:
            raise _user_error(f"{owner} has no {kind} '{k}' (its {kind}s: {', '.join(names)})")
        if k in given:
            raise _user_error(f"{kind} {k} given twice (by position and by name)")
        given[k] = v
    missing = [n for n in names if n not in given]
    if missing:
        raise _user_error(f"missing {kind}{'s' if len(missing) > 1 else ''}: {', '.join(missing)}")
    return [given[n] for n in names]


def _host_arrays(arrays, np_dtype):
    # NumPy arrays (and array-likes) as contiguous np_dtype; PyTorch tensors stay tensors (read
    # through DLPack: no copy when on the CPU, contiguous and of that dtype). Returns the arrays
    # and the torch device the outputs go back to (None: NumPy outputs).
    out, device = [], None
    for x in arrays:
        if _is_torch(x):
            import torch
            device = device or x.device
            t = x.detach()
            if t.device.type != "cpu":
                t = t.cpu()
            out.append(t.to(torch.float32 if np_dtype == _np.float32 else torch.float64)
                       .contiguous())
        else:
            out.append(_np.ascontiguousarray(x, dtype=np_dtype))
    return out, device


def _results(outputs, device):
    if device is not None:
        import torch
        outputs = [torch.from_dlpack(o) for o in outputs]
        if device.type != "cpu":
            outputs = [o.to(device) for o in outputs]
    return outputs[0] if len(outputs) == 1 else tuple(outputs)


def run(program, inputs, dtype="f32"):
    """Runs ``program`` with the reference interpreter. ``inputs``: a dict by input name, or a
    sequence in input order, of NumPy arrays or PyTorch tensors of the declared shapes. Computes
    in ``dtype`` ('f32' or 'f64'; declared dtypes are not emulated). Returns the output (a tuple
    for several), as NumPy arrays, or PyTorch tensors when given tensors."""
    program = _program(program, "weft.run's program")
    if dtype not in ("f32", "f64"):
        raise _user_error(f"weft.run: dtype must be 'f32' or 'f64', not {dtype!r}")
    if isinstance(inputs, dict):
        arranged = _arrange(program, [], inputs)
    else:
        arranged = _arrange(program, list(inputs), {})
    # The interpreter reads its inputs as f64 (an f32 array converts exactly).
    arrays, device = _host_arrays(arranged, _np.float64)
    return _results(_weft.run(program._graph, arrays, dtype == "f32"), device)


class CompiledProgram:
    """A program compiled by a backend and loaded: call it with arrays (by position or input name)
    to get its outputs. ``backend``, ``target``, ``source`` (the generated code), ``artifact``
    (the built library) and ``from_cache`` describe it; ``time(...)`` measures it."""

    def __init__(self, program, core):
        self.program = program
        self._core = core

    backend = property(lambda self: self._core.backend)
    target = property(lambda self: self._core.target)
    source = property(lambda self: self._core.source)
    artifact = property(lambda self: self._core.artifact)
    from_cache = property(lambda self: self._core.from_cache)

    def __call__(self, *args, **kwargs):
        arrays, device = _host_arrays(_arrange(self.program, args, kwargs), _np.float32)
        return _results(self._core(arrays), device)

    def time(self, *args, warmup=3, reps=21, **kwargs):
        """Median, min and max microseconds of ``reps`` runs after ``warmup`` untimed ones."""
        arrays, _ = _host_arrays(_arrange(self.program, args, kwargs), _np.float32)
        return self._core.time(arrays, int(warmup), int(reps))

    def __repr__(self):
        return (f"<weft.CompiledProgram {self.program.name or '(unnamed)'} on {self.target} "
                f"({self.backend})>")


def compile(program, target=_COMPILE_DEFAULTS["target"], backend=None, cache_dir=None):
    """Lowers ``program`` for ``target`` ('cpu', or a GPU such as 'h100'), generates its code,
    builds it (cached) and loads it: a CompiledProgram. The backend is the target's own (cpu, or
    cuda, which needs a GPU); ``backend='cuda-emulation'`` runs a GPU target's CUDA on the host.
    Computes in f32 on the CPU and in the declared dtypes on GPU backends."""
    program = _program(program, "weft.compile's program")
    core = _weft.Executable(program._graph, target, backend or "",
                            _os.fspath(cache_dir) if cache_dir else "")
    return CompiledProgram(program, core)


# --- Models -----------------------------------------------------------------------------------

Param = _namedtuple("Param", ["name", "type"])
Param.__doc__ = "A model function's parameter: its name and its type ('f32[b, n]', 'int(p)')."


def _model_arguments(model, function, args, kwargs):
    # One (float64 array, integral?) per parameter, in parameter order; ints become 0-d arrays.
    params = [p.name for p in model.params(function)]
    arranged = _arrange_named(f"{model.name or 'the model'}'s function '{function}'", "argument",
                              params, args, kwargs)
    arrays, integral = [], []
    for x in arranged:
        a = _np.asarray(x)
        integral.append(a.dtype.kind in "iub")
        arrays.append(_np.asarray(a, dtype=_np.float64, order="C"))  # keeps 0-d arrays 0-d
    return arrays, integral


def _split_inputs(inputs):
    if isinstance(inputs, dict):
        return [], inputs
    return list(inputs), {}


class Model:
    """A model module (.wmod, or an imported .onnx): functions over tensors with symbolic shapes
    that call operators, µGraphs and library functions. ``str(model)`` is its canonical text with the deduced types
    (``weft model print``); ``run`` executes a function with the model VM (µGraphs through the
    reference interpreter); ``compile`` builds its µGraphs for the CPU and returns a callable."""

    __slots__ = ("_core", "_file")

    def __init__(self, core, file):
        self._core = core
        self._file = file

    @property
    def name(self):
        return self._core.name

    @property
    def file(self):
        return self._file

    @property
    def notes(self):
        """What the import decided on its own (a dim's bound narrowed to what the model allows),
        one sentence each; ``weft model check`` prints them as ``note:`` lines."""
        return list(self._core.notes)

    @property
    def functions(self):
        """The names of the module's functions, in order."""
        return self._core.functions()

    def params(self, function="main"):
        """The parameters of ``function`` as Param(name, type) tuples."""
        return [Param(n, t) for n, t in self._core.params(function)]

    def return_type(self, function="main"):
        return self._core.return_type(function)

    def text(self, type_comments=True):
        """The canonical text; with ``type_comments`` every binding ends in its deduced type."""
        return self._core.text(type_comments)

    def __str__(self):
        return self._core.text(True)

    def __repr__(self):
        return (f"<weft.Model {self.name or '(unnamed)'} from {self._file}: functions "
                f"{', '.join(self.functions)}>")

    def check(self):
        """Re-runs type deduction and the well-formedness checks; returns the summary line of
        ``weft model check`` ("2 functions, 14 bindings, ...")."""
        return self._core.check()

    def vm_program(self, function="main"):
        """The register program the VM runs for ``function`` (``weft model print --vm``)."""
        return self._core.disassemble(function)

    def run(self, inputs, function="main", dtype="f32", ugraph_executor="interp"):
        """Runs ``function`` with the model VM. ``inputs``: a dict by parameter name, or a sequence
        in parameter order, of NumPy arrays (anything ``numpy.asarray`` takes) and ints (integer
        parameters take ints or 0-d integer arrays). Returns a NumPy array (``dtype`` 'f32' or
        'f64'; the VM computes in f64), an int, or a tuple of them for a tuple result. A failed
        run-time check (a match_cast whose shape does not match, a symbolic condition) raises
        UserError at the binding, naming the variable and the values."""
        if dtype not in ("f32", "f64"):
            raise _user_error(f"Model.run: dtype must be 'f32' or 'f64', not {dtype!r}")
        args, kwargs = _split_inputs(inputs)
        arrays, integral = _model_arguments(self, function, args, kwargs)
        return self._core.run(function, arrays, integral, ugraph_executor, dtype == "f32")

    def compile(self, target="cpu", function="main", cache_dir=None):
        """Builds every µGraph the module calls into a CPU program (cached, as ``weft.compile``)
        and returns a CompiledModel: calling it runs ``function`` with the VM, call_ugraph running
        the compiled programs (``weft model run --ugraph-executor cpu``). The model layer runs on
        the CPU only: ``target`` must be 'cpu'."""
        if target != "cpu":
            raise _user_error(f"Model.compile: the model layer runs on the CPU only (target "
                              f"'cpu'), not {target!r}")
        self._core.params(function)  # an unknown function fails here, not at the first call
        self._core.compile(_os.fspath(cache_dir) if cache_dir else "")
        return CompiledModel(self, function)


class CompiledModel:
    """A Model whose µGraphs are compiled: ``compiled(*args, **kwargs)`` runs its function with
    arguments by position or parameter name; ``run(inputs, function=...)`` runs any function."""

    def __init__(self, model, function):
        self.model = model
        self.function = function

    def __call__(self, *args, **kwargs):
        arrays, integral = _model_arguments(self.model, self.function, args, kwargs)
        return self.model._core.run(self.function, arrays, integral, "cpu", True)

    def run(self, inputs, function=None, dtype="f32"):
        return self.model.run(inputs, function or self.function, dtype, ugraph_executor="cpu")

    def __repr__(self):
        return f"<weft.CompiledModel {self.model.name or '(unnamed)'}.{self.function} on cpu>"


# --- Compiled model directories ---------------------------------------------------------------

class CompiledModelDir:
    """A directory ``weft.compile_model`` (or ``weft compile MODEL -o DIR``) wrote: the compiled
    module, its µGraphs and their code, ``summary.json`` (``summary``, a dict), and for an
    imported ONNX model its weights and names. ``run`` runs a function of the compiled module
    with the VM, the µGraphs as compiled CPU programs (built at the first run)."""

    def __init__(self, directory):
        self.dir = _os.fspath(directory)
        self._core = _weft.CompiledDirCore(self.dir)
        with open(_os.path.join(self.dir, "summary.json"), encoding="utf-8") as f:
            self.summary = _json.load(f)

    @property
    def bindings(self):
        """The bindings it was compiled at, as dicts (``summary["bindings"]``)."""
        return self.summary["bindings"]

    def inputs(self, function="main"):
        """The names ``run`` takes for ``function``: its parameters (an imported model's graph
        inputs by ONNX name; its weights are in the directory)."""
        return self._core.input_names(function)

    def run(self, inputs=None, /, function="main", dtype="f32", backend="cpu", megakernel=False,
            workers=0, **named):
        """Runs ``function`` on arrays by input name (a dict, keywords, or both) or a sequence in
        input order (``inputs()`` lists the names; integer parameters take ints or 0-d integer arrays). Returns a dict of
        NumPy arrays (``dtype`` 'f32' or 'f64'; the VM computes in f64) by output name: the ONNX
        graph's output names for an imported model, else ``result`` (``result.0``, ... for a
        tuple), as ``weft run DIR`` writes them. At a binding it was not compiled at, the
        original body runs. ``backend`` runs the µGraphs as compiled CPU code ('cpu') or through
        the interpreter ('interp'), or the whole model device-resident ('cuda' on the GPU,
        'cuda-emulation' the same CUDA on the host: µGraphs as their generated CUDA lowered for the
        directory's target when it is a GPU's, other operators as device kernels, weights kept on
        the device between runs; docs/model-compile.md). ``megakernel=True`` runs the function as
        one persistent kernel instead (``weft run DIR --megakernel``: the directory's stored plan
        for the inputs' binding, or a trace of the device executor; in host emulation, on the GPU
        with backend 'cuda'; ``workers`` worker CTAs, 0 the default; docs/mpk.md)."""
        if dtype not in ("f32", "f64"):
            raise _user_error(f"CompiledModelDir.run: dtype must be 'f32' or 'f64', not {dtype!r}")
        args, given = _split_inputs(inputs if inputs is not None else {})
        given = dict(given)
        for k, v in named.items():
            if k in given:
                raise _user_error(f"input {k} given twice (in the dict and by keyword)")
            given[k] = v
        names = self._core.input_names(function)
        arranged = _arrange_named(f"{self.dir}'s function '{function}'", "input", names, args,
                                  given)
        arrays, integral = [], []
        for x in arranged:
            a = _np.asarray(x)
            integral.append(a.dtype.kind in "iub")
            arrays.append(_np.asarray(a, dtype=_np.float64, order="C"))
        if megakernel and backend not in ("cpu", "cuda", "cuda-emulation"):
            raise _user_error(f"CompiledModelDir.run: megakernel runs with backend 'cuda' or "
                              f"'cuda-emulation', not {backend!r}")
        if megakernel:
            backend = "cuda" if backend == "cuda" else "cuda-emulation"
        return self._core.run(function, names, arrays, integral, dtype == "f32", backend,
                              megakernel, workers)

    def decode(self, prompt, tokens=16, function="main", backend="cpu", megakernel=False,
               capacity=0, workers=0, prefill="", weights=None):
        """Greedy decoding with a decoder that takes its KV cache as Hugging Face exporters write
        it (inputs ``input_ids``, ``attention_mask``, ``position_ids``,
        ``past_key_values.L.key|value``; outputs ``logits``, ``present.L.key|value``), as
        ``weft decode DIR`` does: ``tokens`` tokens after ``prompt`` (token ids), each the first
        maximum of the logits. On the VM (``backend`` as for ``run``) with a growing cache, or
        with ``capacity`` > 0 a cache of that many slots, masked until filled, the prompt fed a
        token a step (one shape for every step). ``megakernel=True``: each step one launch of the
        step's persistent kernel (backend 'cuda-emulation', the default, or 'cuda'), weights,
        cache and mask resident where it runs (``capacity`` 0: the least that holds the decode).
        Returns a dict: ``tokens``, ``step_seconds``, ``capacity``, ``compiled_steps`` (steps at
        a binding the directory was compiled at), ``note``, and for the persistent kernel
        ``stored_plan``, ``build_seconds``, ``setup_bytes``, ``bytes_to_device_per_step``,
        ``bytes_to_host_per_step`` (docs/mpk.md, "Decoding the decoder a user has").
        A .wmod step that takes its cache's length as an integer (no mask) decodes with a growing
        cache, the prompt through ``prefill`` (default: its function named ``prefill``);
        ``weights``: a dict of the step's other inputs by parameter name (a .wmod's weights)."""
        ids = [int(t) for t in _np.asarray(prompt).reshape(-1)]
        if megakernel and backend == "cpu":
            backend = "cuda-emulation"
        weights = dict(weights or {})
        names = list(weights)
        arrays = [_np.asarray(weights[n], dtype=_np.float64, order="C") for n in names]
        return self._core.decode(function, ids, int(tokens), backend, bool(megakernel),
                                 int(capacity), int(workers), prefill, names, arrays)

    def __repr__(self):
        totals = self.summary.get("totals", {})
        return (f"<weft.CompiledModelDir {self.dir}: {self.summary.get('model')} on "
                f"{self.summary.get('target')}, kernels {totals.get('kernels_before')} -> "
                f"{totals.get('kernels_after')}>")


def _progress_lines(progress):
    # compile_model's progress: True prints each line to stderr as the CLI does; a callable gets
    # each line; False or None nothing.
    if callable(progress):
        return progress
    if progress:
        return lambda line: print(line, file=_sys.stderr, flush=True)
    return None


def compile_model(path, out_dir, bindings, target=_COMPILE_DEFAULTS["target"],
                  time_budget=_COMPILE_DEFAULTS["time_budget_s"], cache=None, progress=True, *,
                  bounds=None, state_budget=_COMPILE_DEFAULTS["state_budget"],
                  max_region_ops=_COMPILE_DEFAULTS["max_region_ops"], build=True,
                  rewrite=_COMPILE_DEFAULTS["rewrite"], fuse=_COMPILE_DEFAULTS["fuse"]):
    """Compiles the model file at ``path`` (.wmod, or .onnx imported with ``bounds`` as
    ``load_model`` does) for the shapes in ``bindings`` (a dict of the model's symbolic
    variables, e.g. ``{"b": 1, "n": 5, "p": 0}``, or a list of them) and writes the directory
    ``out_dir``, as ``weft compile MODEL -o DIR --bind ...`` does (docs/model-compile.md).
    No bindings (``[]``): a model without symbolic dims compiles at its one shape, a dynamic one
    is written unspecialized (it runs every shape on the per-operator path).
    Returns it loaded: a CompiledModelDir.

    ``target``: 'cpu' or a GPU (``weft.targets()``); the µGraphs' code is built for it
    (``build=False``: written only). ``rewrite``: the generated graph rewrites before
    partitioning, 'egraph', 'backtrack' or 'none' (docs/rewrites.md); ``fuse``: on a CPU target,
    each convolution with its bias, residual and clip as one library call (``--no-fuse`` is
    ``fuse=False``). ``time_budget``: seconds of search over all regions (0:
    unlimited); ``state_budget``: each region's (0: unlimited). ``cache``: None uses the default
    region cache (the build cache's folder + /regions), a path that folder, False none (every
    region searched again). ``progress``: True prints each region's line to stderr, a callable
    receives each line, False shows nothing; an exception the callable raises (or Ctrl-C) is
    raised when the compile has finished. UserError for a bad file, a binding of a variable the
    model does not declare or outside its range, an unknown target."""
    path, out_dir = _os.fspath(path), _os.fspath(out_dir)
    if isinstance(bindings, dict):
        bindings = [bindings]
    bindings = [_int_dict(b, "compile_model's binding") for b in bindings]
    if bounds and not path.lower().endswith(".onnx"):
        raise _user_error("weft.compile_model: bounds apply to ONNX models (.onnx) only", path)
    if cache is False:
        cache_dir, no_cache = "", True
    elif cache is None or cache is True:
        cache_dir, no_cache = "", False
    else:
        cache_dir, no_cache = _os.fspath(cache), False
    _weft.compile_model_dir(path, out_dir, bindings, _int_dict(bounds or {}, "bounds"), target,
                            float(time_budget), int(state_budget), cache_dir, no_cache,
                            not build, int(max_region_ops), str(rewrite), bool(fuse),
                            _progress_lines(progress))
    return CompiledModelDir(out_dir)


def load_compiled(directory):
    """A CompiledModelDir from a directory ``weft.compile_model`` or ``weft compile`` wrote;
    UserError when it is not one."""
    directory = _os.fspath(directory)
    if not _weft.is_compiled_model_dir(directory):
        raise _user_error("not a compiled model directory (weft compile MODEL -o DIR writes one: "
                          "model.wmod, summary.json, ...)", directory)
    return CompiledModelDir(directory)
