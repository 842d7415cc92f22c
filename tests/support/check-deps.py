#!/usr/bin/env python3
"""Checks every #include of every module against tests/support/deps.txt.

usage: check-deps.py ROOT        (prints ok/FAIL lines; exit 1 on any violation)
       check-deps.py --self-test (proves a forbidden include is caught)
"""
import os
import re
import sys
import tempfile

LIBS = {  # include prefix -> library name used in deps.txt
    "archive.h": "archive", "archive_entry.h": "archive", "zlib.h": "zlib", "zstd.h": "zstd",
    "curl/": "curl", "openssl/evp.h": "openssl/evp", "openssl/": "openssl", "yaml-cpp/": "yaml-cpp",
    "nlohmann/": "nlohmann", "CLI/": "CLI", "toml++/": "toml++", "sodium": "sodium", "dlfcn.h": "dl",
    "kainjow/": "mustache", "doctest/": "doctest",
}
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def load_map(path):
    rows = {}
    for line in open(path, encoding="utf-8"):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        module, mods, libs = (part.strip() for part in line.split("|"))
        rows[module] = (set(mods.split()), set(libs.split()))
    return rows


def library_of(header):
    for prefix in sorted(LIBS, key=len, reverse=True):
        if header.startswith(prefix):
            return LIBS[prefix]
    return None


def check(root, rows):
    problems = []
    for module, (mods, libs) in sorted(rows.items()):
        top = os.path.join(root, module)
        if not os.path.isdir(top):
            continue
        for dirpath, _, files in os.walk(top):
            for name in sorted(files):
                if not name.endswith((".cpp", ".hpp")):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root)
                for n, line in enumerate(open(path, encoding="utf-8"), 1):
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    kind, header = m.groups()
                    if kind == '"':
                        dep = header.split("/", 1)[0]
                        if dep != module and dep in rows and dep not in mods:
                            problems.append(f"{rel}:{n}: {module}/ may not include {header} ({dep}/ is not in its row)")
                        continue
                    lib = library_of(header)
                    if lib is None:
                        continue  # standard or system header
                    allowed = lib in libs or (lib == "openssl/evp" and "openssl" in libs)
                    if not allowed:
                        problems.append(f"{rel}:{n}: {module}/ may not include <{header}> ({lib} is not in its row)")
    return problems


def main():
    if sys.argv[1:] == ["--self-test"]:
        with tempfile.TemporaryDirectory() as d:
            os.makedirs(os.path.join(d, "oci"))
            os.makedirs(os.path.join(d, "util"))
            open(os.path.join(d, "oci", "x.cpp"), "w").write('#include "registry/client.hpp"\n#include <curl/curl.h>\n')
            open(os.path.join(d, "util", "y.cpp"), "w").write('#include <openssl/evp.h>\n#include <vector>\n')
            rows = {"oci": ({"util"}, {"nlohmann"}), "util": (set(), {"openssl/evp"}), "registry": ({"oci"}, {"curl"})}
            found = check(d, rows)
            assert len(found) == 2 and "registry/client.hpp" in found[0] and "curl" in found[1], found
        print("ok - check-deps catches a forbidden module include and a forbidden library include")
        return 0
    root = sys.argv[1]
    rows = load_map(os.path.join(root, "tests", "support", "deps.txt"))
    problems = check(root, rows)
    for p in problems:
        print("FAIL - " + p)
    existing = [m for m in rows if os.path.isdir(os.path.join(root, m))]
    print(f"ok - {len(existing)} modules checked against tests/support/deps.txt" if not problems else
          f"deps: {len(problems)} forbidden include(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
