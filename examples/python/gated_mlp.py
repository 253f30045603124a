# weft from Python, notebook style (each `# %%` is a cell): build a gated MLP, superoptimize it
# with a small search budget, and run the result on NumPy arrays.
#
#   pip install .            # from the repository root (README: Python quick start)
#   python examples/python/gated_mlp.py [--time-budget SECONDS]

# %% The program: silu(X @ W1) * (X @ W2), written with the builder (the text format's statements).
import argparse

import numpy as np

import weft

parser = argparse.ArgumentParser()
parser.add_argument("--time-budget", type=float, default=20, help="seconds of search")
args, _ = parser.parse_known_args()  # (a notebook passes its own arguments)

b = weft.Builder("gated_mlp")
x = b.input("X", "f16", [8, 512])
w1 = b.input("W1", "f16", [512, 512])
w2 = b.input("W2", "f16", [512, 512])
a = b.matmul(x, w1, name="A")
g = b.matmul(x, w2, name="B")
b.output(b.mul(b.silu(a, name="S"), g, name="O"))
program = b.build()
print(program)                      # the text form; in Jupyter, `program` alone draws it
print(program.check(target="h100"))

# %% Superoptimize: search, rank by the cost model, verify the best candidates.
result = weft.optimize(program, time_budget=args.time_budget, target="h100", top_k=3)
print(result)
if result.best is None:
    raise SystemExit("no verified µGraph within the budget; try a larger --time-budget")
print(f"best: {result.predicted_us:.2f} us predicted on h100, {result.speedup:.2f}x the input "
      f"program; error bound 2^{result.error_bound_log2:.0f}, f32 error {result.float_error:.1e}")
print(result.best)

# %% Run it on NumPy arrays: the reference interpreter, and the optimized µGraph compiled for the
# CPU (the CPU backend runs the same kernels the GPU code generator would, on the host).
rng = np.random.default_rng(0)
inputs = {
    "X": rng.uniform(-1, 1, (8, 512)).astype(np.float32),
    "W1": rng.uniform(-1, 1, (512, 512)).astype(np.float32) / 16,
    "W2": rng.uniform(-1, 1, (512, 512)).astype(np.float32) / 16,
}
expected = weft.run(program, inputs)
fast = weft.compile(result.best, target="cpu")
got = fast(**inputs)

xa = inputs["X"].astype(np.float64)
ha, hb = xa @ inputs["W1"], xa @ inputs["W2"]
numpy_reference = ha / (1 + np.exp(-ha)) * hb
scale = np.max(np.abs(numpy_reference))
print(f"max |output| {scale:.3f}; interpreter vs NumPy {np.max(np.abs(expected - numpy_reference)) / scale:.1e}, "
      f"optimized µGraph on the CPU vs NumPy {np.max(np.abs(got - numpy_reference)) / scale:.1e} "
      "(max abs error over max |output|)")
assert np.max(np.abs(got - numpy_reference)) <= 1e-4 * scale
print("timing on this CPU:", fast.time(**inputs))
