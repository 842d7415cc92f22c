#!/usr/bin/python3
"""Write a Paddle-shaped base image, offline and deterministically, as an OCI layout.

    make-paddle-base.py OUTDIR ROOTFS TAG [--variant NAME] [--push HOST:PORT/REPO]

The shape of a published Paddle GPU image (paddlepaddle/paddle:*-gpu-cuda*), small:
Docker v2 schema 2 media types behind a Docker manifest list (linux/amd64), 16 layers
and empty_layer history entries, on a real Debian rootfs (ROOTFS, with its python3):
- merged /usr (the rootfs's /lib -> usr/lib), /tmp 1777, a dpkg status that a later
  layer rewrites (cuda-cudart-12-0 added);
- a non-root user paddle (uid 1000) with a 0750 home, /workspace 0775 paddle;
- CUDA 12.0 under /usr/local/cuda-12.0 behind /usr/local/cuda -> /etc/alternatives/cuda
  -> /usr/local/cuda-12.0, version.json; cuDNN 8.9.1's cudnn_version.h;
- paddlepaddle-gpu 2.6.1 (a dist-info whose Requires-Dist pins opt-einsum ==3.3.0 and
  asks for protobuf >=3.20.2), opt-einsum 3.3.0 and protobuf 4.25.3 installed under
  /usr/local/lib/python3.11/dist-packages by pip (so `pip check` finds nothing broken),
  opt-einsum with a module's bytecode and a console script in /usr/local/bin; six
  1.16.0 as Debian installs it (an egg-info without RECORD in /usr/lib/python3);
- a whiteout, an opaque directory, a hard link, a setuid file, an xattr;
- the NVIDIA ENV (CUDA_VERSION, NVIDIA_REQUIRE_CUDA, CUDNN_VERSION, NVIDIA_VISIBLE_DEVICES)
  and labels.
--variant changes one thing, for cache tests: "extra" adds an unrelated layer at the
top (/opt/extra), "home0700" gives /home/paddle mode 0700 instead, "cuda121" states
CUDA_VERSION=12.1.0 (a base that disagrees with the matrix's row for its tag),
"paddle24" installs paddlepaddle-gpu 2.4.2, which asks for protobuf >=3.1.0,<=3.20.0 as
Paddle 2.4 does, beside protobuf 3.20.0 (the lock resolver's base).
Index entry: org.opencontainers.image.ref.name = TAG. Same inputs, same bytes.
--big-mb N adds N MiB of incompressible data in 256 MiB layers (bench/base_bytes.sh).
--push uploads it as it is (blobs, the manifest by digest, the list as TAG) to a
plain-HTTP registry on 127.0.0.1 with the distribution API alone, so nothing of
paddle-image's own registry code is involved. Prints the image manifest's digest.
"""

import argparse
import gzip
import hashlib
import io
import json
import os
import random
import tarfile
import urllib.request

MTIME = 1704067200  # 2024-01-01T00:00:00Z
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
DOCKER_CONFIG = "application/vnd.docker.container.image.v1+json"
DOCKER_LAYER = "application/vnd.docker.image.rootfs.diff.tar.gzip"


class Layer:
    def __init__(self):
        self.raw = io.BytesIO()
        self.tar = tarfile.open(fileobj=self.raw, mode="w", format=tarfile.PAX_FORMAT)

    def _info(self, path, kind, mode, uid=0, gid=0, uname="root", gname="root"):
        ti = tarfile.TarInfo(path)
        ti.type, ti.mode, ti.uid, ti.gid, ti.uname, ti.gname, ti.mtime = kind, mode, uid, gid, uname, gname, MTIME
        return ti

    def dir(self, path, mode=0o755, **owner):
        self.tar.addfile(self._info(path, tarfile.DIRTYPE, mode, **owner))

    def file(self, path, data, mode=0o644, xattrs=None, **owner):
        data = data.encode() if isinstance(data, str) else data
        ti = self._info(path, tarfile.REGTYPE, mode, **owner)
        ti.size = len(data)
        if xattrs:
            ti.pax_headers = {"SCHILY.xattr." + k: v for k, v in xattrs.items()}
        self.tar.addfile(ti, io.BytesIO(data))

    def symlink(self, path, target):
        ti = self._info(path, tarfile.SYMTYPE, 0o777)
        ti.linkname = target
        self.tar.addfile(ti)

    def hardlink(self, path, target):
        ti = self._info(path, tarfile.LNKTYPE, 0o755)
        ti.linkname = target
        self.tar.addfile(ti)

    def tree(self, root):
        """Everything under `root` (sorted; owners as on disk, mtimes fixed)."""
        def reset(ti):
            ti.mtime = MTIME
            ti.uname, ti.gname = ("root" if ti.uid == 0 else ""), ("root" if ti.gid == 0 else "")
            return ti
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            rel = os.path.relpath(dirpath, root)
            if rel != ".":
                self.tar.add(dirpath, arcname=rel, recursive=False, filter=reset)
            for name in sorted(filenames) + sorted(d for d in dirnames if os.path.islink(os.path.join(dirpath, d))):
                p = os.path.join(dirpath, name)
                self.tar.add(p, arcname=os.path.normpath(os.path.join(rel, name)), recursive=False, filter=reset)

    def finish(self):
        self.tar.close()
        raw = self.raw.getvalue()
        gz = io.BytesIO()
        with gzip.GzipFile(fileobj=gz, mode="wb", compresslevel=1, mtime=0) as g:
            g.write(raw)
        return raw, gz.getvalue()


def dist_info(layer, site, name, version, requires=(), files=()):
    base = "%s-%s.dist-info" % (name.replace("-", "_"), version)
    meta = "Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (name, version)
    meta += "".join("Requires-Dist: %s\n" % r for r in requires) + "\n"
    layer.dir("%s/%s" % (site, base))
    layer.file("%s/%s/METADATA" % (site, base), meta)
    layer.file("%s/%s/INSTALLER" % (site, base), "pip\n")
    layer.file("%s/%s/WHEEL" % (site, base), "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
    record = "".join("%s,,\n" % f for f in list(files) + ["%s/METADATA" % base, "%s/INSTALLER" % base,
                                                        "%s/WHEEL" % base, "%s/RECORD" % base])
    layer.file("%s/%s/RECORD" % (site, base), record)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("outdir")
    ap.add_argument("rootfs")
    ap.add_argument("tag")
    ap.add_argument("--variant", default="", choices=["", "extra", "home0700", "cuda121", "paddle24"])
    ap.add_argument("--push", metavar="HOST:PORT/REPO")
    ap.add_argument("--big-mb", type=int, default=0,
                    help="add layers of incompressible data, 256 MiB each, this many MiB in all (benchmarks)")
    a = ap.parse_args()
    site = "usr/local/lib/python3.11/dist-packages"
    layers, history = [], []

    def add(layer, created_by):
        layers.append(layer.finish())
        history.append({"created": "2024-01-01T00:00:00Z", "created_by": created_by})

    def empty(created_by):
        history.append({"created": "2024-01-01T00:00:00Z", "created_by": created_by, "empty_layer": True})

    l = Layer()
    l.tree(a.rootfs)
    add(l, "/bin/sh -c #(nop) ADD file:debian-rootfs in / ")
    empty("/bin/sh -c #(nop)  CMD [\"bash\"]")

    l = Layer()  # the user, its home 0750
    passwd = open(os.path.join(a.rootfs, "etc/passwd")).read() + "paddle:x:1000:1000::/home/paddle:/bin/bash\n"
    group = open(os.path.join(a.rootfs, "etc/group")).read() + "paddle:x:1000:\n"
    l.file("etc/passwd", passwd)
    l.file("etc/group", group)
    l.dir("home")
    l.dir("home/paddle", 0o700 if a.variant == "home0700" else 0o750, uid=1000, gid=1000, uname="paddle",
          gname="paddle")
    l.file("home/paddle/.bashrc", "export PS1='$ '\n", uid=1000, gid=1000, uname="paddle", gname="paddle")
    add(l, "RUN useradd -m -u 1000 paddle # buildkit")

    l = Layer()  # CUDA toolkit (tiny)
    for d in ("usr/local", "usr/local/cuda-12.0", "usr/local/cuda-12.0/bin", "usr/local/cuda-12.0/lib64",
              "usr/local/cuda-12.0/include"):
        l.dir(d)
    l.file("usr/local/cuda-12.0/lib64/libcudart.so.12.0.146", b"\x7fELF fake cudart\n", 0o755)
    l.symlink("usr/local/cuda-12.0/lib64/libcudart.so.12", "libcudart.so.12.0.146")
    l.file("usr/local/cuda-12.0/version.json", json.dumps({"cuda": {"name": "CUDA SDK", "version": "12.0.1"}}))
    add(l, "RUN apt-get install -y cuda-cudart-12-0 # buildkit")

    l = Layer()  # the alternatives chain
    l.dir("etc")
    l.dir("etc/alternatives")
    l.symlink("etc/alternatives/cuda", "/usr/local/cuda-12.0")
    l.symlink("usr/local/cuda", "/etc/alternatives/cuda")
    add(l, "RUN update-alternatives --install /usr/local/cuda cuda /usr/local/cuda-12.0 120 # buildkit")

    l = Layer()  # cuDNN
    l.dir("usr/include")
    l.file("usr/include/cudnn_version.h",
           "#define CUDNN_MAJOR 8\n#define CUDNN_MINOR 9\n#define CUDNN_PATCHLEVEL 1\n")
    l.dir("usr/lib/x86_64-linux-gnu")
    l.file("usr/lib/x86_64-linux-gnu/libcudnn.so.8.9.1", b"\x7fELF fake cudnn\n", 0o755)
    add(l, "RUN apt-get install -y libcudnn8 # buildkit")

    l = Layer()  # dpkg status rewritten (as apt does: the whole file again)
    status = open(os.path.join(a.rootfs, "var/lib/dpkg/status")).read().rstrip("\n") + "\n\n"
    status += ("Package: cuda-cudart-12-0\nStatus: install ok installed\nPriority: optional\nArchitecture: amd64\n"
               "Version: 12.0.146-1\nDescription: CUDA Runtime native Libraries\n")
    l.file("var/lib/dpkg/status", status)
    # six 1.16.0 as Debian's python3-six installs it: an egg-info, no RECORD.
    for d in ("usr/lib/python3", "usr/lib/python3/dist-packages", "usr/lib/python3/dist-packages/six-1.16.0.egg-info"):
        l.dir(d)
    l.file("usr/lib/python3/dist-packages/six.py", "__version__ = '1.16.0'\n")
    l.file("usr/lib/python3/dist-packages/six-1.16.0.egg-info/PKG-INFO",
           "Metadata-Version: 2.1\nName: six\nVersion: 1.16.0\n")
    add(l, "RUN dpkg --configure -a # buildkit")

    l = Layer()  # opt-einsum 3.3.0 and protobuf 4.25.3, as pip installs them
    for d in ("usr/local/lib", "usr/local/lib/python3.11", site, site + "/opt_einsum", site + "/google",
              site + "/google/protobuf"):
        l.dir(d)
    l.file(site + "/opt_einsum/__init__.py", "__version__ = '3.3.0'\n")
    l.file(site + "/opt_einsum/paths.py", "OPTIMAL = 'optimal'\n")
    # Bytecode Python wrote on first import (no RECORD lists it) and a console script.
    l.dir(site + "/opt_einsum/__pycache__")
    l.file(site + "/opt_einsum/__pycache__/paths.cpython-311.pyc", b"\xa7\r\r\n fake bytecode\n")
    l.dir("usr/local/bin")
    l.file("usr/local/bin/opt-einsum-info", "#!/usr/bin/python3\nprint('3.3.0')\n", 0o755)
    dist_info(l, site, "opt-einsum", "3.3.0",
              files=["opt_einsum/__init__.py", "opt_einsum/paths.py", "../../../bin/opt-einsum-info"])
    paddle, protobuf = ("2.4.2", "3.20.0") if a.variant == "paddle24" else ("2.6.1", "4.25.3")
    l.file(site + "/google/protobuf/__init__.py", "__version__ = '%s'\n" % protobuf)
    dist_info(l, site, "protobuf", protobuf, files=["google/protobuf/__init__.py"])
    add(l, "RUN pip install opt-einsum==3.3.0 protobuf==%s # buildkit" % protobuf)

    l = Layer()  # paddlepaddle-gpu pinning it
    l.dir(site + "/paddle")
    l.file(site + "/paddle/__init__.py", "__version__ = '%s'\nimport opt_einsum\n" % paddle)
    dist_info(l, site, "paddlepaddle-gpu", paddle,
              requires=["opt-einsum ==3.3.0", "protobuf >=3.1.0,<=3.20.0" if paddle == "2.4.2" else "protobuf >=3.20.2"],
              files=["paddle/__init__.py"])
    add(l, "RUN pip install paddlepaddle-gpu==%s # buildkit" % paddle)
    cuda_env = "12.1.0" if a.variant == "cuda121" else "12.0.1"
    for i in range((a.big_mb + 255) // 256):  # the bulk of a real base: CUDA and cuDNN libraries
        l = Layer()
        l.dir("usr/local/cuda-12.0/lib64/big")
        n = min(256, a.big_mb - 256 * i) << 20
        rng = random.Random(i)
        l.file("usr/local/cuda-12.0/lib64/big/libbulk%d.so" % i, b"".join(rng.randbytes(1 << 20) for _ in range(n >> 20)),
               0o755)
        add(l, "RUN apt-get install -y libcublas-12-0 # buildkit (bulk %d)" % i)
    empty("ENV CUDA_VERSION=" + cuda_env)
    empty("ENV NVIDIA_REQUIRE_CUDA=cuda>=12.0")

    l = Layer()  # a cache directory, emptied later by an opaque directory
    l.dir("opt")
    l.dir("opt/cache")
    l.file("opt/cache/old.bin", "old\n")
    l.dir("opt/cache/sub")
    l.file("opt/cache/sub/older.bin", "older\n")
    add(l, "RUN make-cache # buildkit")

    l = Layer()
    l.dir("opt/cache")
    l.file("opt/cache/.wh..wh..opq", "")
    l.file("opt/cache/new.bin", "new\n")
    add(l, "RUN rm -rf /opt/cache && mkdir /opt/cache && make-new-cache # buildkit")

    l = Layer()  # a whiteout
    l.dir("usr/local/cuda-12.0/bin")
    l.file("usr/local/cuda-12.0/bin/.wh.nvcc-removed", "")
    l.file("usr/local/cuda-12.0/bin/cuda-gdb-removed", "")
    add(l, "RUN touch /usr/local/cuda-12.0/bin/cuda-gdb-removed # buildkit")

    l = Layer()
    l.file("usr/local/cuda-12.0/bin/.wh.cuda-gdb-removed", "")
    add(l, "RUN rm /usr/local/cuda-12.0/bin/cuda-gdb-removed # buildkit")

    l = Layer()  # a hard link, a setuid file, an xattr
    l.dir("usr/local/bin")
    l.file("usr/local/bin/paddle-run", "#!/bin/sh\nexec python3 \"$@\"\n", 0o755)
    l.hardlink("usr/local/bin/prun", "usr/local/bin/paddle-run")
    l.file("usr/local/bin/suidtool", "#!/bin/sh\n", 0o4755)
    l.file("usr/local/bin/tagged", "x\n", xattrs={"user.paddle": "tagged"})
    add(l, "COPY bin/ /usr/local/bin/ # buildkit")

    l = Layer()  # the workspace, group-writable, the user's
    l.dir("workspace", 0o775, uid=1000, gid=1000, uname="paddle", gname="paddle")
    add(l, "RUN mkdir -m 0775 /workspace && chown paddle: /workspace # buildkit")
    empty("WORKDIR /workspace")

    l = Layer()  # /tmp as a base states it again
    l.dir("tmp", 0o1777)
    l.file("tmp/.keep", "")
    add(l, "RUN chmod 1777 /tmp # buildkit")

    l = Layer()
    l.dir("etc")
    l.file("etc/paddle-image-base", "%s\n" % a.tag)
    add(l, "RUN echo TAG > /etc/paddle-image-base # buildkit")
    if a.variant == "extra":
        l = Layer()
        l.dir("opt")
        l.file("opt/extra", "a patch that touches nothing a layer writes into\n")
        add(l, "RUN touch /opt/extra # buildkit")
    empty("ENV CUDNN_VERSION=8.9.1")

    os.makedirs(os.path.join(a.outdir, "blobs", "sha256"), exist_ok=True)

    def blob(data):
        d = hashlib.sha256(data).hexdigest()
        with open(os.path.join(a.outdir, "blobs", "sha256", d), "wb") as f:
            f.write(data)
        return "sha256:" + d, len(data)

    descs, diff_ids = [], []
    for raw, gz in layers:
        d, n = blob(gz)
        descs.append({"mediaType": DOCKER_LAYER, "digest": d, "size": n})
        diff_ids.append("sha256:" + hashlib.sha256(raw).hexdigest())
    config = {
        "architecture": "amd64", "os": "linux", "created": "2024-01-01T00:00:00Z",
        "config": {
            "Env": ["PATH=/usr/local/nvidia/bin:/usr/local/cuda/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:"
                    "/usr/bin:/sbin:/bin", "NVIDIA_VISIBLE_DEVICES=all",
                    "NVIDIA_DRIVER_CAPABILITIES=compute,utility", "CUDA_VERSION=" + cuda_env,
                    "NVIDIA_REQUIRE_CUDA=cuda>=12.0 brand=tesla,driver>=450,driver<451", "CUDNN_VERSION=8.9.1",
                    "LANG=C.UTF-8"],
            "Cmd": ["/bin/bash"], "WorkingDir": "/workspace",
            "Labels": {"maintainer": "PaddlePaddle Authors <paddle-dev@baidu.com>",
                       "com.nvidia.cudnn.version": "8.9.1"},
        },
        "rootfs": {"type": "layers", "diff_ids": diff_ids},
        "history": history,
    }
    cd, cn = blob(json.dumps(config, sort_keys=True, separators=(",", ":")).encode())
    manifest = {"schemaVersion": 2, "mediaType": DOCKER_MANIFEST,
                "config": {"mediaType": DOCKER_CONFIG, "digest": cd, "size": cn}, "layers": descs}
    md, mn = blob(json.dumps(manifest, sort_keys=True, separators=(",", ":")).encode())
    lst = {"schemaVersion": 2, "mediaType": DOCKER_LIST,
           "manifests": [{"mediaType": DOCKER_MANIFEST, "digest": md, "size": mn,
                          "platform": {"architecture": "amd64", "os": "linux"}}]}
    ld, ln = blob(json.dumps(lst, sort_keys=True, separators=(",", ":")).encode())
    with open(os.path.join(a.outdir, "oci-layout"), "w") as f:
        f.write('{"imageLayoutVersion":"1.0.0"}')
    with open(os.path.join(a.outdir, "index.json"), "w") as f:
        json.dump({"schemaVersion": 2, "manifests": [{"mediaType": DOCKER_LIST, "digest": ld, "size": ln,
                                                      "annotations": {"org.opencontainers.image.ref.name": a.tag}}]},
                  f, sort_keys=True)
    if a.push:
        host, repo = a.push.split("/", 1)
        base = "http://%s/v2/%s" % (host, repo)

        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # 127.0.0.1 only, never a proxy

        def call(method, url, data=None, ctype=None):
            req = urllib.request.Request(url, data=data, method=method)
            if ctype:
                req.add_header("Content-Type", ctype)
            with opener.open(req) as r:
                return r.headers.get("Location"), r.status

        for d in [x["digest"] for x in descs] + [cd]:
            with open(os.path.join(a.outdir, "blobs", "sha256", d[7:]), "rb") as f:
                data = f.read()
            loc, _ = call("POST", base + "/blobs/uploads/")
            loc = loc if loc.startswith("http") else "http://%s%s" % (host, loc)
            call("PUT", loc + ("&" if "?" in loc else "?") + "digest=" + d, data, "application/octet-stream")
        for d, mt, ref in ((md, DOCKER_MANIFEST, md), (ld, DOCKER_LIST, a.tag)):
            with open(os.path.join(a.outdir, "blobs", "sha256", d[7:]), "rb") as f:
                call("PUT", base + "/manifests/" + ref, f.read(), mt)
    print(md)


if __name__ == "__main__":
    main()
