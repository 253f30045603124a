"""The mega-kernel from Python: a program compiled to one task graph and run as one persistent
kernel (docs/mpk.md), the same library calls as ``weft mpk compile|run``.

``weft.megakernel.compile(program, platform="host")`` builds the task graph; ``.run()`` runs it
(on host threads, or as one persistent kernel in CUDA host emulation or on the GPU) and compares
it with the program's kernels run one after another; a decode-step program (one declaring
``interface decode(...)``, docs/mpk.md "The decode interface") compiled with ``decode_loop=True``
decodes with ``.decode(tokens)``. ``weft.megakernel.steps(program)`` gives the task graph's text
after each compiler step. Emulation builds the persistent kernel with the host compiler: minutes.
"""

from collections import namedtuple as _namedtuple

import numpy as _np

from . import _weft
from .errors import user_error as _user_error

__all__ = ["Megakernel", "MegakernelRun", "MegakernelDecode", "compile", "passes", "steps"]

MegakernelRun = _namedtuple("MegakernelRun", ["outputs", "same", "seconds", "trace"])
MegakernelRun.__doc__ = (
    "One run: the task graph's outputs (NumPy, plan output order), whether they equal the "
    "reference's, the run's seconds, and the Chrome/Perfetto trace JSON ('' unless asked).")

MegakernelDecode = _namedtuple("MegakernelDecode",
                               ["tokens", "same", "launches", "seconds", "per_kernel_tokens"])
MegakernelDecode.__doc__ = (
    "A decode with the loop on the device: its tokens (the prompt or first token, then one per "
    "step), whether they agree with the per-kernel decode of the same bodies (None when not "
    "compared), its launches and seconds, and the per-kernel paths' tokens by name.")


def _graph(program):
    from . import Program
    if not isinstance(program, Program):
        raise _user_error("the program must be a weft.Program (weft.parse, weft.load, weft.Builder), "
                          f"not {type(program).__name__}")
    return program._graph


def passes():
    """The compiler's steps in order (what ``stop_after`` and ``steps`` name)."""
    return list(_weft.megakernel_passes())


def steps(program, platform="host", workers=4, dispatch="hybrid", decode_loop=False,
          stop_after=""):
    """The task graph's text (``.tgraph``, docs/mpk.md) after each step through ``stop_after``
    (every step when empty), as a list of (step, text)."""
    return [tuple(s) for s in _weft.megakernel_steps(_graph(program), platform, workers, dispatch,
                                                     decode_loop, stop_after)]


class Megakernel:
    """A program's task graph, compiled for ``platform`` ('host', 'emulation' or 'gpu')."""

    __slots__ = ("_core",)

    def __init__(self, core):
        self._core = core

    @property
    def task_graph(self):
        """The compiled task graph's text form (``.tgraph``)."""
        return self._core.task_graph()

    @property
    def summary(self):
        """Counts of the task graph: operators, tasks (empty, jit), events (before fusion), workers,
        blob bytes; its name, platform, target and whether it is a decoder."""
        return dict(self._core.summary())

    @property
    def inputs(self):
        """The program's inputs in order, as (name, shape)."""
        return [(n, tuple(s)) for n, s in self._core.inputs()]

    def run(self, inputs=None, iterations=1, delay_seed=0, trace=False):
        """Runs the task graph on ``inputs`` (float32 arrays in program input order; None: seeded
        uniform values in [-1, 1)) and the reference; returns a ``MegakernelRun``. On the host,
        ``iterations`` runs it that many times and a nonzero ``delay_seed`` injects random delays."""
        arrays = [] if inputs is None else [_np.ascontiguousarray(x, dtype=_np.float32)
                                            for x in inputs]
        r = self._core.run(arrays, iterations, delay_seed, trace)
        return MegakernelRun(list(r["outputs"]), bool(r["same"]), float(r["seconds"]),
                             str(r["trace"]))

    def decode(self, tokens=8, prompt=(), seed=1, init_std=0.02, tokens_per_launch=1,
               logits=False, per_kernel=True):
        """Decodes ``tokens`` steps with the loop on the device (emulation or gpu, compiled with
        ``decode_loop=True``), weights seeded by ``seed``; ``per_kernel`` also decodes with the
        same bodies launched one by one, the comparison."""
        r = self._core.decode(tokens, list(prompt), seed, init_std, tokens_per_launch, logits,
                              per_kernel)
        return MegakernelDecode(list(r["tokens"]), r.get("same"), int(r["launches"]),
                                float(r["seconds"]),
                                {k: list(v) for k, v in r["per_kernel_tokens"].items()})


def compile(program, platform="host", workers=4, dispatch="hybrid", schedulers=1,
            decode_loop=False, data_dependent_reads=""):
    """Compiles ``program`` (a weft.Program) to its verified task graph for ``platform``;
    ``workers`` 0 on a GPU is one per SM but one. A decode step needs ``decode_loop=True`` to
    decode; its attention kernels (the readers of its KV caches) are dispatched just in time unless
    ``data_dependent_reads`` names a tensor prefix instead. Raises weft.UserError for a bad option
    or a decode loop without a declared decode interface."""
    return Megakernel(_weft.MegakernelCore(_graph(program), platform, workers, dispatch, schedulers,
                                           decode_loop, data_dependent_reads))
