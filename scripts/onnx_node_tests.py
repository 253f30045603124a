#!/usr/bin/env python3
"""Runs ONNX's per-operator node tests (Debian libonnx-testdata) for every operator weft declares supported; prints pass/fail counts per operator."""
# A test belongs to the operators its model.onnx contains (node op_types, subgraphs included), not to
# its directory name: a single-node test counts under its operator, a multi-node one (the
# `_expanded` function bodies) under "(multi-node)". A test runs when every operator it contains is
# supported. Exit status 1 when a test in scope fails and is not listed in the exclusion file with
# its reason, or when a listed test passes (a stale exclusion).
#
#   scripts/onnx_node_tests.py                       # weft ($WEFT_BINARY or build/weft)
#   scripts/onnx_node_tests.py --backend onnxruntime --ops issue15   # the harness on a known backend
#   scripts/onnx_node_tests.py --markdown --write-docs docs/onnx.md  # refresh the table in the docs
import argparse
import collections
import concurrent.futures
import json
import os
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import onnx_harness as h  # noqa: E402

DEFAULT_DATA = "/usr/share/libonnx-testdata/data/node"
DEFAULT_EXCLUSIONS = h.ROOT / "tests" / "data" / "onnx_node_exclusions.txt"
MULTI = "(multi-node)"
# The operators issue 15 names (the transformer and CNN sets): `--ops issue15` runs their tests on
# any backend, which is how the harness is checked on onnxruntime before weft has an importer.
ISSUE15_OPS = """MatMul Gemm Add Sub Mul Div Pow Sqrt Erf Tanh Sigmoid Relu Gelu Softmax LayerNormalization
ReduceMean ReduceSum ReduceMax Reshape Transpose Concat Split Slice Gather Unsqueeze Squeeze Cast Where
Expand Shape ConstantOfShape Conv MaxPool AveragePool GlobalAveragePool BatchNormalization Flatten
Dropout""".split()
BEGIN, END = "<!-- onnx-node-tests:begin -->", "<!-- onnx-node-tests:end -->"


def op_types(graph):
    """(domain, op_type) of every node of graph and of its subgraphs (If, Loop, Scan bodies)."""
    import onnx

    found = set()
    for node in graph.node:
        found.add((node.domain or "ai.onnx", node.op_type))
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                found |= op_types(attr.g)
            elif attr.type == onnx.AttributeProto.GRAPHS:
                for g in attr.graphs:
                    found |= op_types(g)
    return found


def read_exclusions(path):
    """test name -> reason, from lines `test_name  reason` (# comments); a line without a reason
    is an error: every exclusion says why."""
    table = {}
    if not path or not os.path.exists(path):
        return table
    for number, line in enumerate(open(path), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split(None, 1)
        if len(parts) < 2:
            sys.exit(f"{path}:{number}: error: `{parts[0]}` needs a reason after the test name")
        table[parts[0]] = parts[1]
    return table


def run_test(case_dir, run):
    """None when every data set of the test matches its reference outputs, else the first mismatch."""
    import onnx

    model = onnx.load(os.path.join(case_dir, "model.onnx"))
    rtol, atol = 1e-3, 1e-7  # ONNX's backend runner defaults; data.json may override them
    if os.path.exists(os.path.join(case_dir, "data.json")):
        data = json.load(open(os.path.join(case_dir, "data.json")))
        rtol, atol = data.get("rtol", rtol), data.get("atol", atol)
    inputs = h.graph_inputs(model)
    sets = sorted(d for d in os.listdir(case_dir) if d.startswith("test_data_set"))
    if not sets:
        return "no test_data_set"
    for data_set in sets:
        d = os.path.join(case_dir, data_set)
        try:
            n_in = len([f for f in os.listdir(d) if f.startswith("input_")])
            feeds = {inputs[i].name: h.load_tensor(os.path.join(d, f"input_{i}.pb")) for i in range(n_in)}
            refs = {o.name: h.load_tensor(os.path.join(d, f"output_{i}.pb"), o.type.tensor_type.elem_type)
                    for i, o in enumerate(model.graph.output)}
        except Exception as e:  # sequence/optional-typed data: not tensors
            return f"{data_set}: cannot read the test data as tensors ({type(e).__name__})"
        if any(v.dtype == object or v.dtype.kind in "US" for v in feeds.values()):
            return f"{data_set}: string inputs cannot travel through .npz"
        try:
            got = run(os.path.join(case_dir, "model.onnx"), feeds, d)
        except h.BackendError as e:
            return f"{data_set}: {e}"
        for name, ref in refs.items():
            bad = h.mismatch(name, got.get(name), ref, rtol, atol)
            if bad:
                return f"{data_set}: {bad}"
    return None


def guarded(fn, *args):
    """fn's result, or its exception as the test's failure: one odd test never stops the run."""
    try:
        return fn(*args)
    except Exception as e:
        return f"harness error: {type(e).__name__}: {e}"


def default_opset(model):
    return next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)


def collect(data_dir, supported, pattern):
    """(test name, dir, operator key) for each test whose operators are all supported at the
    model's opset; and the counts of tests left out (an operator not supported, an opset outside
    an operator's declared range)."""
    import onnx

    chosen, left_out = [], collections.Counter()
    for name in sorted(os.listdir(data_dir)):
        case_dir = os.path.join(data_dir, name)
        if pattern and pattern not in name:
            continue
        if not os.path.exists(os.path.join(case_dir, "model.onnx")):
            continue
        model = onnx.load(os.path.join(case_dir, "model.onnx"), load_external_data=False)
        ops = op_types(model.graph)
        if supported is not None:
            if not all(d == "ai.onnx" and o in supported for d, o in ops):
                left_out["operator"] += 1
                continue
            version = default_opset(model)
            if not all(in_range(version, *supported[o]) for _, o in ops):
                left_out["opset"] += 1
                continue
        kinds = {o for _, o in ops}
        chosen.append((name, case_dir, next(iter(kinds)) if len(kinds) == 1 else MULTI))
    return chosen, left_out


def in_range(version, since, until):
    return version is None or ((since is None or version >= since) and (until is None or version <= until))


def markdown(per_op, left_out, backend, total_s):
    lines = ["| operator | tests | pass | fail | excluded |", "| --- | ---: | ---: | ---: | ---: |"]
    tot = collections.Counter()
    for op in sorted(per_op, key=lambda o: (o == MULTI, o)):
        c = per_op[op]
        n = c["pass"] + c["fail"] + c["excluded"]
        tot.update(c)
        lines.append(f"| {op} | {n} | {c['pass']} | {c['fail']} | {c['excluded']} |")
    n = tot["pass"] + tot["fail"] + tot["excluded"]
    lines.append(f"| **all** | {n} | {tot['pass']} | {tot['fail']} | {tot['excluded']} |")
    lines.append("")
    lines.append(f"Backend {backend}; not in scope: {left_out['operator']} node tests with an operator "
                 f"not declared supported, {left_out['opset']} at an opset outside an operator's declared "
                 f"range; {total_s:.0f} s.")
    return "\n".join(lines)


def write_docs(path, table):
    text = open(path).read()
    if BEGIN not in text or END not in text:
        sys.exit(f"{path}: error: no {BEGIN} ... {END} markers to write the table between")
    head, rest = text.split(BEGIN, 1)
    open(path, "w").write(head + BEGIN + "\n" + table + "\n" + END + rest.split(END, 1)[1])


def supported_ops(args, binary):
    if args.ops == "all":
        return None
    if args.ops == "issue15":
        return {o: (None, None) for o in ISSUE15_OPS}
    if args.ops == "weft":
        ops = h.weft_onnx_ops(binary) if binary else None
        if ops is None:
            sys.exit(f"error: {binary or 'no weft binary'}: `weft model onnx-ops` fails; "
                     "this weft has no ONNX import (or pass --ops)")
        return ops
    names = open(args.ops[1:]).read().split() if args.ops.startswith("@") else args.ops.split(",")
    return {o: (None, None) for o in names}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--backend", choices=["weft", "onnxruntime"], default="weft")
    p.add_argument("--weft", help="the weft binary (default: $WEFT_BINARY, else build/weft)")
    p.add_argument("--data", default=DEFAULT_DATA, help=f"node test folder (default {DEFAULT_DATA})")
    p.add_argument("--ops", default=None,
                   help="operators in scope: weft (`weft model onnx-ops`; default for --backend weft), "
                        "issue15, all (default for onnxruntime), A,B,C or @FILE")
    p.add_argument("--exclusions", default=None,
                   help=f"test names with reasons (default for weft: {DEFAULT_EXCLUSIONS.relative_to(h.ROOT)})")
    p.add_argument("-k", dest="pattern", help="only tests whose name contains this")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--timeout", type=float, default=120, help="seconds per weft run")
    p.add_argument("--markdown", action="store_true", help="print the per-operator table as markdown")
    p.add_argument("--write-docs", metavar="MD", help="write the table between the markers in MD")
    p.add_argument("-v", "--verbose", action="store_true", help="print every test's result")
    args = p.parse_args(argv)
    if args.ops is None:
        args.ops = "weft" if args.backend == "weft" else "all"
    if args.exclusions is None and args.backend == "weft":
        args.exclusions = str(DEFAULT_EXCLUSIONS)
    if not os.path.isdir(args.data):
        sys.exit(f"error: {args.data}: no such folder (Debian's libonnx-testdata; scripts/install-deps.sh installs it)")
    binary = os.path.abspath(args.weft) if args.weft else h.weft_binary()
    supported = supported_ops(args, binary)
    exclusions = read_exclusions(args.exclusions)
    run = h.make_runner(args.backend, binary, args.timeout)
    tests, left_out = collect(args.data, supported, args.pattern)
    if not tests:
        sys.exit("error: no node test in scope")
    start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        results = list(pool.map(lambda t: guarded(run_test, t[1], run), tests))
    elapsed = time.monotonic() - start
    per_op = collections.defaultdict(collections.Counter)
    failures, stale = [], []
    for (name, _, op), error in zip(tests, results):
        if name in exclusions:
            per_op[op]["excluded"] += 1
            if error is None:
                stale.append(name)
        elif error is None:
            per_op[op]["pass"] += 1
        else:
            per_op[op]["fail"] += 1
            failures.append((name, op, error))
        if args.verbose:
            state = "pass" if error is None else ("excluded" if name in exclusions else "FAIL")
            print(f"{state:8} {name} [{op}]" + (f": {error}" if error else ""))
    table = markdown(per_op, left_out, args.backend, elapsed)
    if args.markdown:
        print(table)
    else:
        for op in sorted(per_op, key=lambda o: (o == MULTI, o)):
            c = per_op[op]
            print(f"{op:24} pass {c['pass']:3}  fail {c['fail']:3}  excluded {c['excluded']:3}")
    for name, op, error in failures:
        print(f"FAIL {name} [{op}]: {error}", file=sys.stderr)
    for name in stale:
        print(f"STALE {name}: passes, but {args.exclusions} excludes it ({exclusions[name]})", file=sys.stderr)
    passed = sum(c["pass"] for c in per_op.values())
    print(f"{len(tests)} node tests in scope: {passed} passed, {len(failures)} failed, "
          f"{sum(c['excluded'] for c in per_op.values())} excluded ({len(stale)} stale); "
          f"not in scope: {left_out['operator']} (operator), {left_out['opset']} (opset); {elapsed:.1f} s", file=sys.stderr)
    if args.write_docs:
        write_docs(args.write_docs, table)
    return 1 if failures or stale else 0


if __name__ == "__main__":
    sys.exit(main())
