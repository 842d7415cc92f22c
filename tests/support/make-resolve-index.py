#!/usr/bin/python3
"""Wheels for the resolver's tests and benchmark, served by index_server.py.

    python3 make-resolve-index.py OUTDIR scenario
    python3 make-resolve-index.py OUTDIR app [--packages N] [--versions V] [--backtracks B]

scenario: a small index whose answers need what a resolver must get right:
backtracking (app 3.0 and top 2-6 cannot be met), an extra (web[server]), markers
(plat), Requires-Python (modern 2.0 needs 3.13), a yanked file (yank 1.1, with the
server's --yank), pre-releases (pre 2.0b1, onlypre 1.0rc1), platform wheels (native),
constraints (srv), and a base-shaped trio (paddlestub 2.4.2 needs protobuf<=3.20).

app: a Paddle application's closure, generated: N packages (default 80) in layers, V
versions each (default 6), each version requiring a few packages of the layers below
with ranges that every version of them meets, so the answer is the newest of each;
with --backtracks B, the newest B versions of the top package each require their own
version of `pinnedmid`, which requires a `pinnedleaf` that does not exist, so a
resolver must step back B times.

Every wheel is a real PEP 427 wheel (make-index-wheels.py's writer), written under a
temporary name; OUTDIR/.done (the arguments and this script's hash) is written last,
and a run with the same arguments and script does nothing. Standard library only.
"""

import argparse
import hashlib
import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("miw", os.path.join(HERE, "make-index-wheels.py"))
miw = importlib.util.module_from_spec(spec)
spec.loader.exec_module(miw)

ANY = "py3-none-any"
NATIVE = "cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64"
WINDOWS = "cp311-cp311-win_amd64"


def wheel(out, name, version, requires=(), extras=None, requires_python=None, tag=ANY):
    meta = [f"Requires-Dist: {r}" for r in requires]
    for extra, reqs in (extras or {}).items():
        meta.append(f"Provides-Extra: {extra}")
        meta += [f'Requires-Dist: {r}; extra == "{extra}"' for r in reqs]
    if requires_python:
        meta.append(f"Requires-Python: {requires_python}")
    module = name.replace("-", "_")
    miw.write_wheel(out, module, version, tag, [(f"{module}/__init__.py", f"VERSION = {version!r}\n")], meta)


def scenario(out):
    # Backtracking: app 3.0 needs lib>=2 and util<1, but lib 2.0 needs util>=1.
    wheel(out, "app", "1.0", ["lib"])
    wheel(out, "app", "2.0", ["lib<2", "util"])
    wheel(out, "app", "3.0", ["lib>=2", "util<1"])
    wheel(out, "lib", "1.0")
    wheel(out, "lib", "1.5", ["util>=1"])
    wheel(out, "lib", "2.0", ["util>=1"])
    for v in ("0.5", "1.0", "1.2"):
        wheel(out, "util", v)
    # A chain: top N needs mid==N, mid N (N > 1) needs leaf>=N; leaf has 1.0 only.
    for n in range(1, 7):
        wheel(out, "top", f"{n}.0", [f"mid=={n}.0"])
        wheel(out, "mid", f"{n}.0", [f"leaf>={n}.0"] if n > 1 else [])
    wheel(out, "leaf", "1.0")
    # An extra, and the constraint on what it brings.
    wheel(out, "web", "1.0", ["util"], extras={"server": ["srv>=2"]})
    for v in ("1.0", "2.0", "2.1"):
        wheel(out, "srv", v)
    # Markers: only linuxdep applies to CPython 3.11 on Linux.
    wheel(out, "plat", "1.0", ['winonly; sys_platform == "win32"', 'linuxdep; sys_platform == "linux"',
                               'oldpy; python_version < "3.8"'])
    wheel(out, "linuxdep", "1.0")
    # Requires-Python.
    wheel(out, "modern", "1.0", requires_python=">=3.8")
    wheel(out, "modern", "2.0", requires_python=">=3.13")
    # Yanked (the server yanks yank-1.1), pre-releases.
    wheel(out, "yank", "1.0")
    wheel(out, "yank", "1.1")
    wheel(out, "pre", "1.0")
    wheel(out, "pre", "2.0b1")
    wheel(out, "onlypre", "1.0rc1")
    # Platform wheels: native 2.0 has a Windows wheel only.
    wheel(out, "native", "1.0", tag=NATIVE)
    wheel(out, "native", "1.0", tag=WINDOWS)
    wheel(out, "native", "2.0", tag=WINDOWS)
    # What a Paddle 2.4 base holds, and what a newer protobuf would be.
    wheel(out, "paddlestub", "2.4.2", ["protobuf<=3.20", "numpy>=1.13"])
    for v in ("3.19.6", "3.20.3", "4.25.3"):
        wheel(out, "protobuf", v)
    for v in ("1.24.4", "1.26.4"):
        wheel(out, "numpy", v)
    wheel(out, "needsnewnumpy", "1.0", ["numpy>=1.26"])


def app(out, packages, versions, backtracks):
    # Layers of packages: each requires up to three of the layer below, ranges that
    # every version there meets (>=1.0).
    layers = []
    names = [f"pkg{i:03d}" for i in range(packages)]
    size = max(1, packages // 5)
    for k in range(0, packages, size):
        layers.append(names[k:k + size])
    for li, layer in enumerate(layers):
        below = layers[li + 1] if li + 1 < len(layers) else []
        for pi, name in enumerate(layer):
            deps = [f"{below[(pi + j) % len(below)]}>=1.0" for j in range(min(3, len(below)))] if below else []
            for v in range(1, versions + 1):
                wheel(out, name, f"{v}.0", deps)
    # The top application: needs every package of the first layer.
    deps = [f"{n}>=1.0" for n in layers[0]]
    wheel(out, "paddleapp", "1.0", deps)
    for b in range(1, backtracks + 1):
        wheel(out, "paddleapp", f"1.{b}", deps + [f"pinnedmid=={b}.0"])
        wheel(out, "pinnedmid", f"{b}.0", ["pinnedleaf>=100"])
    wheel(out, "pinnedleaf", "1.0")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("kind", choices=["scenario", "app"])
    ap.add_argument("--packages", type=int, default=80)
    ap.add_argument("--versions", type=int, default=6)
    ap.add_argument("--backtracks", type=int, default=0)
    a = ap.parse_args()
    with open(os.path.abspath(__file__), "rb") as f:  # a changed generator makes new wheels
        me = hashlib.sha256(f.read()).hexdigest()
    stamp = f"{a.kind} {a.packages} {a.versions} {a.backtracks} {me}\n"
    done = os.path.join(a.outdir, ".done")
    if os.path.exists(done) and open(done).read() == stamp:
        return 0
    os.makedirs(a.outdir, exist_ok=True)
    for f in os.listdir(a.outdir):
        os.unlink(os.path.join(a.outdir, f))
    if a.kind == "scenario":
        scenario(a.outdir)
    else:
        app(a.outdir, a.packages, a.versions, a.backtracks)
    with open(done + ".tmp", "w") as f:
        f.write(stamp)
    os.replace(done + ".tmp", done)
    return 0


if __name__ == "__main__":
    sys.exit(main())
