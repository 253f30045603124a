"""``python -m weft optimize FILE``: the ``weft optimize`` command from Python, with the same
flags (generated from the search configuration's fields, as the CLI's are), the same result files
and summary, and the same exit codes (0 ok, 1 user error, 2 internal error, 130 interrupted)."""

import argparse
import os
import sys

import weft
from weft import _weft
from weft._progress import progress_display


def _parser():
    parser = argparse.ArgumentParser(prog="python -m weft",
                                     description="weft: a multi-level superoptimizer for tensor "
                                                 "programs")
    parser.add_argument("--version", action="version", version=f"weft {weft.__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    sub = commands.add_parser("optimize", help="Search for the fastest verified µGraph "
                                               "equivalent to a program")
    sub.add_argument("file", help="input program (.weft)")
    sub.add_argument("-o", "--output", default="weft-out", help="output directory")
    sub.add_argument("--config", help="JSON file overriding the search configuration")
    for f in weft.config_fields():
        if not f["flag"]:
            continue
        if f["is_flag"]:
            sets = not f["flag"].startswith("--no-")
            sub.add_argument(f["flag"], dest="cfg_" + f["key"], action="store_const", const="",
                             help=f"{'enable' if sets else 'disable'} {f['doc']}")
        else:
            sub.add_argument(f["flag"], dest="cfg_" + f["key"], metavar="VALUE",
                             help=f"{f['doc']} (default: {f['default']})")
    sub.add_argument("--checkpoint", default="",
                     help="save progress here periodically; rerunning resumes from it")
    sub.add_argument("--progress", action="store_true",
                     help="progress on stderr even when not a terminal")
    sub.add_argument("--quiet", action="store_true", help="no progress output")
    return parser


def _optimize(args):
    flag_texts = {k[4:]: v for k, v in vars(args).items() if k.startswith("cfg_") and v is not None}
    program = weft.load(args.file)
    # The CLI's line, as `weft optimize` draws it (the budgets only size a tqdm bar: unused).
    display = None if args.quiet else progress_display(0, 0, force=args.progress, plain=True)
    result = weft._run_optimize(program, {}, flag_texts, args.config, args.checkpoint, display)
    if result.interrupted:
        print("\nweft optimize: interrupted; ranked and verified the candidates found so far",
              file=sys.stderr, flush=True)
    result.save(args.output)
    sys.stdout.write(result.summary(args.output))
    return 130 if result.stop_reason == "interrupted" else 0


def main(argv=None):
    args = _parser().parse_args(argv)
    try:
        if args.command == "optimize":
            return _optimize(args)
    except weft.UserError as e:
        print(e, file=sys.stderr)
        return 1
    except weft.InternalError as e:
        print(e, file=sys.stderr)
        return 2
    return 1


if __name__ == "__main__":
    sys.exit(main())
