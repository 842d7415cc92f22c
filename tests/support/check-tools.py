#!/usr/bin/python3
"""Every external command the project's scripts and tests call must come from a Debian
package that scripts/setup.sh installs, or from one every Debian machine has
(Essential: yes or Priority: required, what `debootstrap --variant=minbase` installs).

Usage: check-tools.py ROOT            lint the tree (exit 1 naming script:line and tool)
       check-tools.py --self-test     the lint finds a `bc` call and passes a clean script

Commands are found in command position (start of a command, after | || && ; ( $( `,
after wrappers such as nice, timeout N, env VAR=.., xargs, exec, `bash -c "..."`, and
the test helpers check / expect_fail / timed), with heredoc bodies, comments, shell
keywords, builtins and the functions the scripts define left out. A command named
through a variable ("$RUNC") is not seen: keep such tools in setup.sh by hand.
"""
import glob
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

KEYWORDS = set("""if then else elif fi for while until do done case esac in function select time
{ } [[ ]] ! coproc""".split())
BUILTINS = set("""echo printf cd pwd read test [ export local declare typeset set unset shift return exit
trap source . eval exec wait kill true false break continue type command hash ulimit umask alias
unalias let getopts readonly mapfile readarray pushd popd dirs shopt jobs disown bg fg suspend
builtin caller enable help history logout times compgen complete compopt bind :""".split())
# wrapper -> how many arguments to skip before the wrapped command (None: skip options)
WRAPPERS = {"nice": None, "timeout": 1, "env": None, "xargs": None, "exec": None, "sudo": None,
            "nohup": 0, "setsid": None, "unshare": None, "flock": 1, "chroot": 1, "stdbuf": None,
            "ionice": None, "check": 1, "expect_fail": 3, "timed": 0, "time": None}
SHELLS = {"bash", "sh"}
SEPARATORS = {"|", "||", "&&", ";", "(", ")", "&", "|&", ";;", "`", "{", "}", "!", "$(", "then", "do",
              "else", "elif", "if", "while", "until", "time"}


def strip_heredocs(lines):
    """Blank out heredoc bodies (they are data or another language)."""
    out, end = [], None
    for line in lines:
        if end is not None:
            out.append("")
            if line.strip() == end:
                end = None
            continue
        m = re.search(r"<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1", line)
        if m and "<<<" not in line[max(0, m.start() - 1):m.start() + 3]:
            end = m.group(2)
            line = line[:m.start()]
        out.append(line)
    return out


def tokens(text):
    lex = shlex.shlex(text, posix=True, punctuation_chars="();<>|&`")
    lex.whitespace_split = True
    lex.commenters = "#"
    try:
        return list(lex)
    except ValueError:
        return text.split()


def commands(text, functions):
    """Yields the command names of a shell fragment."""
    toks = tokens(text.replace("$(", " ( ").replace("`", " ( "))
    i, expect = 0, True
    while i < len(toks):
        t = toks[i]
        if t in SEPARATORS or set(t) <= set("();<>|&`"):
            expect = t not in {"<", ">", ">>", "<<", "<&", ">&", "2>", "&>"}
            i += 1
            continue
        if not expect:
            i += 1
            continue
        if re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", t):  # VAR=value before a command
            i += 1
            continue
        expect = False
        name = t
        if name in WRAPPERS:
            skip = WRAPPERS[name]
            if name not in {"check", "expect_fail", "timed"}:
                yield name
            i += 1
            if skip is None:
                while i < len(toks) and (toks[i].startswith("-") or re.match(r"^[A-Za-z_]\w*=", toks[i])
                                         or (name in {"nice", "ionice"} and toks[i].lstrip("-").isdigit())):
                    i += 1
            else:
                i += skip
            expect = True
            continue
        if name in SHELLS and i + 2 < len(toks) and toks[i + 1] == "-c":
            yield name
            yield from commands(toks[i + 2], functions)
            i += 3
            continue
        if name in ("for", "select", "case"):  # for VAR in WORDS; case WORD in: no command here
            i += 2
            continue
        if name in KEYWORDS or name in BUILTINS or name in functions:
            expect = name in KEYWORDS
            i += 1
            continue
        if name.startswith(("$", "-", "/", ".", "~")) or "/" in name or "$" in name or name.endswith(")"):
            i += 1
            continue
        yield name
        i += 1


def script_commands(path, functions):
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = strip_heredocs(f.read().split("\n"))
    joined, start = "", 0
    for n, line in enumerate(lines, 1):
        if not joined:
            start = n
        if line.rstrip().endswith("\\"):
            joined += line.rstrip()[:-1] + " "
            continue
        joined += line
        if re.match(r"^\s*#", joined):
            joined = ""
            continue
        for c in commands(joined, functions):
            yield start, c
        joined = ""


def python_commands(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        for n, line in enumerate(f, 1):
            for m in re.finditer(r"subprocess\.\w+\(\s*\[\s*[\"']([\w.+-]+)[\"']", line):
                yield n, m.group(1)


def defined_functions(paths):
    names = set()
    for p in paths:
        with open(p, encoding="utf-8", errors="replace") as f:
            for m in re.finditer(r"^\s*(?:function\s+)?([A-Za-z_][\w-]*)\s*\(\)\s*\{?", f.read(), re.M):
                names.add(m.group(1))
    return names


_installed = None


def installed():
    """Every installed package: name -> (its Depends and Pre-Depends, "Essential Priority"),
    from one dpkg-query (one per package cost minutes of CPU)."""
    global _installed
    if _installed is None:
        _installed = {}
        r = subprocess.run(["dpkg-query", "-W", "-f=${Package}\t${Depends}, ${Pre-Depends}\t${Essential} ${Priority}\n"],
                           capture_output=True, text=True)
        for line in r.stdout.splitlines():
            name, deps, flags = (line.split("\t") + ["", ""])[:3]
            _installed[name] = (deps, flags)
    return _installed


def setup_packages(root):
    """The packages setup.sh names, and what apt installs with them (their Depends and
    Pre-Depends, recursively; the first of alternatives, as apt picks it)."""
    text = open(os.path.join(root, "scripts/setup.sh")).read()
    named = set()
    for m in re.finditer(r"(?:BUILD_PKGS|TEST_PKGS|EXAMPLE_PKGS)=\(([^)]*)\)", text, re.S):
        named.update(m.group(1).split())
    seen, todo = set(), list(named)
    while todo:
        pkg = todo.pop()
        if pkg in seen:
            continue
        seen.add(pkg)
        if pkg not in installed():
            continue
        for dep in installed()[pkg][0].split(","):
            first = dep.split("|")[0].strip().split(" ")[0].split(":")[0]
            if first:
                todo.append(first)
    return seen


_path_owners = None


def path_owner(path):
    """The package whose file list holds `path` (as `dpkg -S PATH` answers, read from
    dpkg's .list files once)."""
    global _path_owners
    if _path_owners is None:
        _path_owners = {}
        for lst in sorted(glob.glob("/var/lib/dpkg/info/*.list")):
            pkg = os.path.basename(lst)[: -len(".list")].split(":")[0]
            with open(lst, errors="replace") as f:
                for line in f:
                    _path_owners.setdefault(line.rstrip("\n"), pkg)
    return _path_owners.get(path)


_owner_cache = {}


def owner(tool):
    """The Debian package that provides `tool`, or None."""
    if tool in _owner_cache:
        return _owner_cache[tool]
    found = shutil.which(tool)
    candidates = []
    for d in ("/usr/bin", "/bin", "/usr/sbin", "/sbin"):
        candidates.append(os.path.join(d, tool))
    if found:
        candidates = [found, os.path.realpath(found)] + candidates
    result = None
    for c in candidates:
        if not os.path.exists(c):
            continue
        for path in {c, os.path.realpath(c)}:
            alt = path.replace("/usr/bin/", "/bin/") if path.startswith("/usr/bin/") else path.replace("/bin/", "/usr/bin/", 1)
            for q in (path, alt):
                result = path_owner(q)
                if result:
                    break
            if result:
                break
        if result:
            break
    _owner_cache[tool] = result
    return result


def always_there(pkg):
    flags = installed().get(pkg, (None, None))[1]
    return flags is not None and (flags.startswith("yes") or flags.endswith("required"))


def lint(root, files, pyfiles, owner_of=None):
    owner_of = owner_of or owner
    support = glob.glob(os.path.join(root, "tests/support/**/*.sh"), recursive=True)
    functions = defined_functions(files + support)
    allowed = setup_packages(root)
    problems = []
    found = []
    for p in files:
        found += [(p, n, c) for n, c in script_commands(p, functions)]
    for p in pyfiles:
        found += [(p, n, c) for n, c in python_commands(p)]
    for p, n, c in found:
        pkg = owner_of(c)
        where = f"{os.path.relpath(p, root)}:{n}"
        if pkg is None:
            # Not a command on this machine (an awk word, an arithmetic variable the lexer saw
            # in command position) or one outside dpkg (a pyenv shim): a real call of a missing
            # tool fails the test here already.
            continue
        if pkg not in allowed and not always_there(pkg):
            problems.append(f"{where}: '{c}' comes from Debian package '{pkg}', which scripts/setup.sh does not install")
    return found, problems


def main():
    if len(sys.argv) == 2 and sys.argv[1] == "--self-test":
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        with tempfile.TemporaryDirectory() as d:
            bad = os.path.join(d, "bad.sh")
            with open(bad, "w") as f:
                f.write('x=$(echo "1.5 < 2" | bc)\ncat <<EOF\nbc is only mentioned here\nEOF\n# bc in a comment\n')
            # 'bc' as if installed from its own package: the self-test must not depend on
            # whether this machine has bc (a fresh Debian does not).
            _, problems = lint(root, [bad], [], lambda c: "bc" if c == "bc" else owner(c))
            assert len(problems) == 1 and "'bc'" in problems[0] and "bad.sh:1" in problems[0], problems
            good = os.path.join(d, "good.sh")
            with open(good, "w") as f:
                f.write('check "sorted" bash -c "sort x | head -1"\nexpect_fail "d" 3 "pat" cat missing\n')
            found, problems = lint(root, [good], [])
            names = {c for _, _, c in found}
            assert {"bash", "sort", "head", "cat"} <= names and not problems, (names, problems)
        print("check-tools self-test: ok")
        return 0
    root = os.path.abspath(sys.argv[1])
    files = sorted(set(glob.glob(os.path.join(root, "scripts/*.sh")) +
                       glob.glob(os.path.join(root, "tests/**/*.sh"), recursive=True) +
                       glob.glob(os.path.join(root, "bench/*.sh")) + [os.path.join(root, ".ci/run")]))
    pyfiles = sorted(glob.glob(os.path.join(root, "tests/**/*.py"), recursive=True) +
                     glob.glob(os.path.join(root, "bench/*.py")))
    found, problems = lint(root, files, pyfiles)
    for p in problems:
        print("FAIL - " + p)
    tools = sorted({c for _, _, c in found})
    print(f"test tools: {len(tools)} commands in {len(files) + len(pyfiles)} files, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
