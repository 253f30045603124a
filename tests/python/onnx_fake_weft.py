"""A stand-in for the weft CLI's ONNX commands backed by onnxruntime: checks the ONNX test harnesses themselves."""
# `onnx-ops` prints the issue-15 operators, `model run FILE --inputs IN --outputs OUT` runs
# onnxruntime; FAKE_WEFT_PERTURB=1 scales float outputs by 1.01, a wrong backend the harnesses
# must catch. Used by test_onnx_harness.py only.
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import onnx_harness as h  # noqa: E402
import onnx_node_tests  # noqa: E402


def main(argv):
    if argv[:2] == ["model", "onnx-ops"]:
        print("\n".join(onnx_node_tests.ISSUE15_OPS))
        return 0
    if argv[:2] != ["model", "run"]:
        print(f"fake weft: unsupported command {argv}", file=sys.stderr)
        return 1
    model, inputs, outputs = argv[2], argv[argv.index("--inputs") + 1], argv[argv.index("--outputs") + 1]
    with np.load(inputs) as z:
        feeds = {k: z[k] for k in z.files}
    try:
        got = h.run_onnxruntime(model, feeds)
    except h.BackendError as e:
        print(f"{model}: error: {e}", file=sys.stderr)
        return 1
    if os.environ.get("FAKE_WEFT_PERTURB"):
        got = {k: v * np.float32(1.01) if v.dtype.kind == "f" else v for k, v in got.items()}
    np.savez(outputs, **got)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
