#!/usr/bin/env python3
"""The size limits of weft's C++ sources (scripts/check-sizes.sh runs this).

A source file of a folder that scripts/layers.txt lists (library, tool, Python binding, test
generators, tests, fuzzers, benchmarks) holds at most 800 lines, and a function body at most 150.
Every offender is printed as FILE:LINE with its size; the exit status is 1 when there is one that
scripts/size-exceptions.txt does not list, 2 for a malformed exception line.

The function measure is lexical, so it needs no build and takes a second: comments, string and
character literals (raw strings included) and preprocessor lines are blanked, then every brace
block at namespace or class scope whose head reads as a function's (a parameter list, optionally
followed by qualifiers, a trailing return type or a member-initializer list; or a lambda
introducer) is a function body, measured from its opening brace's line to its closing brace's,
both included. Lambdas and local classes inside a function count toward that function.
"""

import bisect
import os
import re
import subprocess
import sys

RAW_STRING = re.compile(r'(?:u8|u|U|L)?R"([^()\\\s]{0,16})\(')
MAX_FILE_LINES = 800
MAX_FUNCTION_LINES = 150
SOURCE_PATTERN = re.compile(r"\.(h|hpp|cpp|cc|cu|cuh|def|inc)$")


def blank_literals(text):
    """`text` with comments, literals and preprocessor lines replaced by spaces, newlines kept."""
    out = []
    i, n = 0, len(text)
    line_start = True  # only whitespace since the last newline

    def blank(s):
        return "".join(c if c == "\n" else " " for c in s)

    while i < n:
        c = text[i]
        if line_start and c == "#":
            j = i
            while j < n and text[j] != "\n":
                j += 2 if text[j] == "\\" and j + 1 < n else 1
            out.append(blank(text[i:j]))
            i = j
            continue
        if c == "/" and text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(blank(text[i:j]))
            i = j
            continue
        if c == "/" and text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(blank(text[i:j]))
            i = j
            continue
        raw = c in "uULR" and RAW_STRING.match(text, i)
        if raw and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            end = text.find(")" + raw.group(1) + '"', raw.end())
            j = n if end < 0 else end + len(raw.group(1)) + 2
            out.append('""' + blank(text[i + 2:j]))
            i = j
            continue
        if c in "\"'":
            if c == "'" and is_digit_separator(text, i):
                out.append(c)
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + blank(text[i + 1:j - 1]) + c)
            i = j
            continue
        out.append(c)
        if c == "\n":
            line_start = True
        elif not c.isspace():
            line_start = False
        i += 1
    return "".join(out)


def is_digit_separator(text, i):
    """Whether the quote at `i` separates digits of a number (1'000'000), not a char literal."""
    j = i
    while j > 0 and (text[j - 1].isalnum() or text[j - 1] in "_.'"):
        j -= 1
    return j < i and text[j].isdigit()


CLASS_HEAD = re.compile(r"\b(class|struct|union|namespace|extern)\b")
ENUM_HEAD = re.compile(r"\benum\b")
QUALIFIERS = re.compile(
    r"^(\s*(const|volatile|noexcept(\s*\([^()]*\))?|override|final|mutable|constexpr|&&|&"
    r"|requires\b.*|->.*))*\s*$",
    re.S,
)


def last_group_end(head, opener, closer):
    """Index just past the last balanced (...) group at the head's top level, or -1."""
    depth, end = 0, -1
    for k, ch in enumerate(head):
        if ch == opener:
            depth += 1
        elif ch == closer and depth > 0:
            depth -= 1
            if depth == 0:
                end = k + 1
    return end


def function_name(head):
    """A readable name for the function whose head is `head`: Qualified::name, or MACRO(args)."""
    text = " ".join(head.split())
    operators = []  # `operator()`, `operator<`...: kept out of the bracket matching below

    def keep(m):
        operators.append(m.group(0).replace(" ", ""))
        return f"operator@{len(operators) - 1}"

    text = re.sub(r"\boperator\s*(\(\s*\)|\[\s*\]|[^\s\w(]+)", keep, text)
    depth, first_paren, first_close = 0, -1, -1
    for k, ch in enumerate(text):
        if ch == "(" and depth == 0 and first_paren < 0:
            first_paren = k
        if ch in "(<[":
            depth += 1
        elif ch in ")>]" and depth > 0:
            depth -= 1
            if depth == 0 and first_paren >= 0 and first_close < 0 and ch == ")":
                first_close = k + 1
    if first_paren < 0:
        m = re.search(r"([\w:]+)\s*=\s*\[", text)
        return m.group(1) if m else text[-40:]
    before = text[:first_paren].rstrip()
    if before.endswith("]"):  # a lambda: the variable it initializes
        m = re.search(r"([\w:]+)\s*=\s*\[[^\]]*\]$", before)
        return m.group(1) if m else "lambda"
    m = re.search(r"((?:[\w~]+(?:<[^<>]*>)?::)*(?:operator@\d+|[\w~]+))$", before)
    name = m.group(1) if m else before[-40:]
    name = re.sub(r"operator@(\d+)", lambda o: operators[int(o.group(1))], name)
    if re.fullmatch(r"[A-Z][A-Z0-9]*_[A-Z0-9_]*|[A-Z]{4,}", name):  # TEST(Suite, Name), macros
        name += text[first_paren:first_close]
    return name


def classify(head):
    """'function', 'scope' (namespace or class body: look inside) or 'data' for a block's head."""
    stripped = head.strip()
    if stripped.startswith("template"):
        stripped = re.sub(r"^template\s*<.*?>\s*", "", stripped, count=1, flags=re.S)
    paren_end = last_group_end(stripped, "(", ")")
    if paren_end >= 0 and not re.match(r"^(if|for|while|switch|catch)\b", stripped):
        rest = stripped[paren_end:]
        if QUALIFIERS.match(rest) or re.match(r"^\s*(noexcept\s*)?:", rest):
            return "function"  # a parameter list (then qualifiers, or a member-initializer list)
    if re.search(r"\]\s*(mutable\s*)?(->.*)?$", stripped) and "=" in stripped:
        return "function"  # a lambda at namespace scope: `auto f = [] {`
    if ENUM_HEAD.search(stripped):
        return "data"
    if CLASS_HEAD.search(stripped) and "=" not in stripped:
        return "scope"
    return "data"


def part_of_head(head):
    """Whether a brace opened after `head` belongs to it: inside its parentheses (a lambda or a
    braced argument) or a braced member initializer (`Ctor() : member_{x}`)."""
    depth = 0
    for ch in head:
        depth += {"(": 1, ")": -1}.get(ch, 0)
    if depth > 0:
        return True
    paren_end = last_group_end(head, "(", ")")
    return paren_end >= 0 and bool(
        re.match(r"^\s*(noexcept\s*)?:.*[\w>]\s*$", head[paren_end:], re.S))


def functions_of(text):
    """(name, first line, lines) of every function body in C++ `text`."""
    code = blank_literals(text)
    newlines = [k for k, ch in enumerate(code) if ch == "\n"]

    def line_of(index):
        return bisect.bisect_left(newlines, index) + 1

    found = []
    stack = []  # per open brace: (kind, line of the brace, head, first line of the head)
    head_start = 0
    for k, ch in enumerate(code):
        if stack and stack[-1][0] == "head":
            # Inside a brace of a function's head: only its nesting matters.
            if ch == "{":
                stack.append(("head", 0, "", 0))
            elif ch == "}":
                stack.pop()
            continue
        if ch == "{":
            head = code[head_start:k]
            if any(kind in ("function", "data", "inner") for kind, *_ in stack):
                kind = "inner"
            elif part_of_head(head):
                stack.append(("head", 0, "", 0))
                continue
            else:
                kind = classify(head)
            line = line_of(k)
            offset = len(head) - len(head.lstrip())
            first = line_of(head_start + offset)
            stack.append((kind, line, head, first))
            head_start = k + 1
        elif ch == "}":
            if not stack:
                continue
            kind, line, head, first = stack.pop()
            if kind == "function":
                end = line_of(k)
                found.append((function_name(head), first, end - line + 1))
            head_start = k + 1
        elif ch == ";":
            head_start = k + 1
    return found


def source_files(root):
    """The C++ sources in folders of scripts/layers.txt (tracked and new files in a checkout)."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
            cwd=root, check=True, capture_output=True, text=True).stdout.split("\n")
    except (OSError, subprocess.CalledProcessError):
        listed = []
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = [d for d in dirnames if not d.startswith(".") and not os.path.exists(
                os.path.join(dirpath, d, "CMakeCache.txt"))]
            for f in filenames:
                listed.append(os.path.relpath(os.path.join(dirpath, f), root))
    folders = []
    with open(os.path.join(root, "scripts/layers.txt")) as f:
        for raw in f:
            words = raw.split("#", 1)[0].split()
            if len(words) >= 2 and words[0] != "allow":
                folders += words[1:]
    return sorted(p for p in listed if SOURCE_PATTERN.search(p) and os.path.isfile(
        os.path.join(root, p)) and any(p.startswith(d + "/") for d in folders))


def read_exceptions(path):
    """{(PATH, FUNCTION or None): (reason, line)} from the exceptions file."""
    out = {}
    if not os.path.exists(path):
        return out
    with open(path) as f:
        for number, raw in enumerate(f, 1):
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            m = re.fullmatch(r"(file|function)\s+(\S+)(?:\s+(\S+))?\s+--\s+(.+)", line)
            if not m or (m.group(1) == "function") != (m.group(3) is not None):
                print(f"{path}:{number}: expected `file PATH -- why` or "
                      f"`function PATH NAME -- why`", file=sys.stderr)
                sys.exit(2)
            out[(m.group(2), m.group(3))] = (m.group(4), number)
    return out


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(
        os.path.dirname(os.path.abspath(__file__)))
    exceptions_path = os.path.join(root, "scripts/size-exceptions.txt")
    exceptions = read_exceptions(exceptions_path)
    used, bad = set(), False
    for path in source_files(root):
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
            text = f.read()
        lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
        offenders = []
        if lines > MAX_FILE_LINES:
            offenders.append(((path, None), 1,
                              f"{lines} lines (at most {MAX_FILE_LINES} a file): split it by concern"))
        for name, first, size in functions_of(text):
            if size > MAX_FUNCTION_LINES:
                offenders.append(((path, name), first,
                                  f"function {name} has {size} lines (at most "
                                  f"{MAX_FUNCTION_LINES}): split it"))
        for key, line, message in offenders:
            if key in exceptions:
                used.add(key)
                continue
            print(f"{path}:{line}: {message}")
            bad = True
    for key, (reason, number) in sorted(exceptions.items(), key=lambda e: e[1][1]):
        if key not in used:
            what = key[0] if key[1] is None else f"{key[0]} {key[1]}"
            print(f"note: {os.path.relpath(exceptions_path, root)}:{number}: {what} is within the "
                  f"limits now: delete its line")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
