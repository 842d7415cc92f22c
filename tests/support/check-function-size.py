#!/usr/bin/env python3
"""No hand-written function over 100 lines in the product's C++, none over 40 in cli/
other than the add_* option tables (issue 36).

Reads every tracked .cpp and .hpp outside tests/, third_party/ and build trees, finds
each function body defined at namespace or class scope (free functions, member
functions, constructors; a lambda counts towards the function it is in) and counts the
lines between its braces. A body over the limit fails the check unless it is listed in
tests/support/function-size-allow.txt ("FILE FUNCTION LINES"), the functions that were
over the limit when the check came: a listed function may shrink but not grow, and
once it is at or under the limit (or gone) its line must go, so the list only gets
shorter. It is a scanner, not a compiler: comments, string and character literals are
blanked first, then braces are matched; it runs in about a second.

  check-function-size.py SOURCE_DIR     check (exit 1 naming each offender)
  check-function-size.py --list DIR     print every body over the limit, longest first
  check-function-size.py --self-test    check the scanner on small known inputs
"""
import os
import re
import subprocess
import sys

LIMIT = 100
# Thin commands (issue 36): a function in cli/ parses flags, calls its module and prints,
# in at most 40 lines; the add_* functions, which only declare options (CLI11 tables)
# and bind one-line callbacks, have the general limit.
CLI_LIMIT = 40


def limit_for(path, name):
    if path.startswith("cli/") and not name.split("::")[-1].startswith("add_"):
        return CLI_LIMIT
    return LIMIT
# Prefixes of paths that are not product code (build trees are "build/" and "build-*/",
# never a prefix of a module's name such as builder/).
SKIP_DIRS = ("tests/", "third_party/", "build/", "build-", "bench/", "shared/")


def is_product(path):
    return not path.startswith(SKIP_DIRS)
CONTROL = re.compile(r"\b(if|for|while|switch|catch|do|else|try|return)\b\s*(\(|$)")
SCOPE = re.compile(r"\b(namespace|struct|class|union|enum)\b[^()]*$")


def blank(text):
    """Comments and string/char literals replaced by spaces, newlines kept."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "R" and text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^(\s]{0,16})\(', text[i:])
            if not m:
                out.append(c)
                i += 1
                continue
            end = text.find(")" + m.group(1) + '"', i + m.end())
            end = n if end < 0 else end + len(m.group(1)) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:end]))
            i = end
        elif c in "\"'":
            if c == "'" and i > 0 and text[i - 1].isalnum():  # digit separator 1'000
                out.append(" ")
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(" " * (j - i))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(text):
    """(name, first line, body lines) of each body at namespace or class scope."""
    code = blank(text)
    found = []
    stack = []  # one of "scope", "func", "other" per open brace
    header_start = 0
    i, n = 0, len(code)
    while i < n:
        c = code[i]
        if c == "#" and (i == 0 or code[i - 1] == "\n"):  # a preprocessor line
            j = code.find("\n", i)
            while j > 0 and code[j - 1] == "\\":
                j = code.find("\n", j + 1)
            i = n if j < 0 else j
            header_start = i
            continue
        in_scope = all(k[0] == "scope" for k in stack)
        if c == "{":
            header = code[header_start:i]
            flat = " ".join(header.split())
            kind = "other"
            if in_scope:
                if SCOPE.search(flat) or flat.endswith("extern") or flat == "":
                    kind = "scope"
                elif ")" in flat and not CONTROL.search(flat) and not re.search(r"[=,]\s*$", flat) and \
                        not re.search(r"\)\s*:[^{]*\b\w+\s*$", flat):
                    kind = "func"
                elif re.search(r"\)\s*:", flat):  # a brace initialiser in a constructor's list
                    kind = "init"
            stack.append((kind, i, flat))
            if kind != "init":
                header_start = i + 1
        elif c == "}":
            if stack:
                kind, start, flat = stack.pop()
                if kind == "func":
                    first = code.count("\n", 0, start) + 1
                    last = code.count("\n", 0, i) + 1
                    m = re.search(r"([~\w:]+(?:operator\s*\S+?)?)\s*\((?:[^()]|\([^()]*\))*\)[^()]*$", flat.split(") :")[0] + ")"
                                  if re.search(r"\)\s*:", flat) else flat)
                    name = m.group(1) if m else flat[:40]
                    found.append((name, first, max(0, last - first - 1)))
                if kind != "init":
                    header_start = i + 1
        elif c == ";" and all(k[0] == "scope" for k in stack):
            header_start = i + 1
        i += 1
    return found


def product_files(root):
    out = subprocess.run(["git", "-C", root, "ls-files", "*.cpp", "*.hpp"], capture_output=True, text=True,
                         check=True).stdout.split()
    return [f for f in out if is_product(f)]


def over_limit(root):
    result = {}
    for f in product_files(root):
        with open(os.path.join(root, f), encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        for name, line, size in functions(text):
            if size > limit_for(f, name):
                key = (f, name)
                if key not in result or result[key][1] < size:
                    result[key] = (line, size)
    return result


def read_allow(path):
    allow = {}
    with open(path, encoding="utf-8") as fh:
        for n, raw in enumerate(fh, 1):
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            parts = line.split()
            if len(parts) != 3 or not parts[2].isdigit():
                sys.exit(f"{path}:{n}: expected 'FILE FUNCTION LINES', got {raw.strip()!r}")
            allow[(parts[0], parts[1])] = int(parts[2])
    return allow


def self_test():
    sample = '''
namespace a {
// a comment with { braces
int small(int x) {
  if (x) {
    return 1;
  }
  auto f = [](int y) { return y; };
  return f(x);
}
struct S {
  int m() const { return "}"[0]; }
  S() : v{1}, w(2) {
    v += 1;
  }
  int v;
  int w;
};
std::string raw() {
  return R"(}})";
}
} // namespace a
'''
    got = {(name, size) for name, _, size in functions(sample)}
    want = {("small", 5), ("m", 0), ("S", 1), ("raw", 1)}
    if got != want:
        print(f"self-test: got {sorted(got)}, want {sorted(want)}")
        return 1
    limits = (limit_for("cli/cmd_x.cpp", "run_x"), limit_for("cli/cmd_x.cpp", "add_x"), limit_for("oci/x.cpp", "f"))
    if limits != (CLI_LIMIT, LIMIT, LIMIT):
        print(f"self-test: limits {limits}")
        return 1
    paths = ("builder/build.cpp", "builder/x.hpp", "build/cli/x.cpp", "build-asan/x.cpp", "tests/unit/x.cpp", "cli/c.cpp")
    kept = [p for p in paths if is_product(p)]
    if kept != ["builder/build.cpp", "builder/x.hpp", "cli/c.cpp"]:
        print(f"self-test: product files {kept}")
        return 1
    print("check-function-size self-test: ok")
    return 0


def main(argv):
    if argv[1:2] == ["--self-test"]:
        return self_test()
    if argv[1:2] == ["--list"]:
        root = argv[2]
        for (f, name), (line, size) in sorted(over_limit(root).items(), key=lambda kv: -kv[1][1]):
            print(f"{f} {name} {size}  # line {line}")
        return 0
    root = argv[1]
    allow_file = os.path.join(root, "tests/support/function-size-allow.txt")
    allow = read_allow(allow_file)
    found = over_limit(root)
    bad = []
    for (f, name), (line, size) in sorted(found.items()):
        if (f, name) not in allow:
            bad.append(f"{f}:{line}: {name} has {size} lines (the limit is {limit_for(f, name)}): split it along "
                       "what each part does")
        elif size > allow[(f, name)]:
            bad.append(f"{f}:{line}: {name} grew to {size} lines (listed at {allow[(f, name)]} in "
                       f"function-size-allow.txt, the limit is {limit_for(f, name)}): split it instead")
    for (f, name), size in sorted(allow.items()):
        if (f, name) not in found:
            bad.append(f"tests/support/function-size-allow.txt: {f} {name} is at or under {limit_for(f, name)} "
                       "lines now (or gone): remove its line")
        elif found[(f, name)][1] < size:
            bad.append(f"tests/support/function-size-allow.txt: {f} {name} is down to {found[(f, name)][1]} lines: "
                       "write that number")
    for b in bad:
        print(b)
    print(f"function size: {len(found)} over {LIMIT} lines ({CLI_LIMIT} in cli/), {len(allow)} listed, "
          f"{len(bad)} problems")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
