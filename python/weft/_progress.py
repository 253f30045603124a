"""weft.optimize's progress display on stderr: a tqdm bar when tqdm is installed (tqdm.auto: a
widget in Jupyter, text in a terminal), else the CLI's progress line redrawn in place. Shown in
a terminal and in Jupyter; elsewhere (pipes, logs, tests) only when asked for."""

import sys


def _in_jupyter():
    shell = sys.modules.get("IPython")
    try:
        return shell is not None and shell.get_ipython() is not None and \
            "IPKernelApp" in shell.get_ipython().config
    except Exception:  # an IPython without a kernel, or one that answers oddly: no
        return False


def _interactive():
    try:
        return sys.stderr.isatty() or _in_jupyter()
    except (AttributeError, ValueError):
        return False


class _LineDisplay:
    """The CLI's line, redrawn with a carriage return (terminals and Jupyter both honour it)."""

    def __init__(self):
        self._open = False

    def __call__(self, p):
        if p["phase"] == "search":
            sys.stderr.write("\r" + p["line"])
            self._open = True
            if p["search_done"]:
                sys.stderr.write("\n")
                self._open = False
        else:
            sys.stderr.write(f"\rverifying: {p['checked']} checked, {p['kept']} kept")
            self._open = True
        sys.stderr.flush()

    def close(self):
        if self._open:
            sys.stderr.write("\n")
            sys.stderr.flush()
            self._open = False


class _TqdmDisplay:
    """A bar over the time budget (or the state budget when only that is set), then a counter of
    verified candidates."""

    def __init__(self, tqdm, time_budget_s, state_budget):
        self._tqdm = tqdm
        self._by_time = time_budget_s > 0 or not state_budget
        total = time_budget_s if self._by_time else state_budget
        self._bar = tqdm(total=total or None, desc="weft optimize: search", file=sys.stderr,
                         unit="s" if self._by_time else "state", leave=True,
                         bar_format="{l_bar}{bar}| {n:.0f}/{total_fmt}{unit} [{elapsed}{postfix}]")
        self._verify = None

    def __call__(self, p):
        if p["phase"] == "search":
            position = p["elapsed_s"] if self._by_time else p["states"]
            if self._bar.total:
                position = min(position, self._bar.total)
            self._bar.n = position
            best = f"{p['best_predicted_us']:.1f} us" if p["best_predicted_us"] > 0 else "-"
            self._bar.set_postfix_str(
                f"states {p['states']}, candidates {p['candidates']}, best {best}", refresh=False)
            self._bar.refresh()
            if p["search_done"]:
                self._bar.close()
        else:
            if self._verify is None:
                self._verify = self._tqdm(desc="weft optimize: verify", file=sys.stderr,
                                          unit=" candidates", leave=True)
            self._verify.n = p["checked"]
            self._verify.set_postfix_str(f"kept {p['kept']}", refresh=False)
            self._verify.refresh()

    def close(self):
        self._bar.close()
        if self._verify is not None:
            self._verify.close()


def progress_display(time_budget_s, state_budget, force=False, plain=False):
    """A callable for weft.optimize's reports with a close(); None when not interactive (unless
    ``force``). ``plain`` uses the CLI's line even when tqdm is installed."""
    if not (force or _interactive()):
        return None
    if not plain:
        try:
            from tqdm.auto import tqdm
        except ImportError:
            tqdm = None
        if tqdm is not None:
            try:
                time_budget_s, state_budget = float(time_budget_s or 0), int(state_budget or 0)
            except (TypeError, ValueError):  # weft.optimize reports the bad value itself
                time_budget_s, state_budget = 0.0, 0
            return _TqdmDisplay(tqdm, time_budget_s, state_budget)
    return _LineDisplay()
