#!/usr/bin/python3
"""Write the wheels (and sdists) served by index_server.py in the index tests.

    python3 make-index-wheels.py OUTDIR [--big-mb N]

Every wheel is a valid PEP 427 wheel (METADATA, WHEEL, RECORD with sha256 lines,
entry_points.txt where needed) with fixed zip timestamps and member order, so the
output is byte-for-byte reproducible with the same Python/zlib.  Files are written
under a temporary name and renamed into place.  OUTDIR/.done is written last and
holds "big-mb=N"; a later run with the same N does nothing.

Standard library only.
"""

import argparse
import base64
import gzip
import hashlib
import io
import os
import random
import sys
import tarfile
import zipfile

ZIP_DATE = (2020, 1, 1, 0, 0, 0)
TAR_MTIME = 1577836800  # 2020-01-01T00:00:00Z
BIG_SEED = 20240611
MIB = 1 << 20


def record_hash(data):
    digest = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def metadata_text(name, version, extra_lines=()):
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {name}",
        f"Version: {version}",
        f"Summary: {name} test distribution for paddle-image index tests",
    ]
    lines.extend(extra_lines)
    return "\n".join(lines) + "\n\n"


def expand_tags(tag):
    """'cp311-cp311-a.b' -> ['cp311-cp311-a', 'cp311-cp311-b'] (all combinations)."""
    py, abi, plat = tag.split("-")
    return [f"{p}-{a}-{x}" for p in py.split(".") for a in abi.split(".") for x in plat.split(".")]


def zinfo(name, compress=zipfile.ZIP_DEFLATED):
    zi = zipfile.ZipInfo(name, date_time=ZIP_DATE)
    zi.compress_type = compress
    zi.create_system = 3
    zi.external_attr = 0o100644 << 16
    return zi


class WheelWriter:
    """Writes members in call order, collecting RECORD lines; close() adds RECORD."""

    def __init__(self, path, dist_info):
        self.zf = zipfile.ZipFile(path, "w")
        self.dist_info = dist_info
        self.records = []

    def add(self, name, data, compress=zipfile.ZIP_DEFLATED):
        if isinstance(data, str):
            data = data.encode()
        self.zf.writestr(zinfo(name, compress), data)
        self.records.append(f"{name},{record_hash(data)},{len(data)}")

    def add_stream(self, name, size, chunks):
        """Stored member written piece by piece (never held whole in memory)."""
        zi = zinfo(name, zipfile.ZIP_STORED)
        zi.file_size = size
        h = hashlib.sha256()
        n = 0
        with self.zf.open(zi, "w", force_zip64=size > 0x7FFF0000) as out:
            for chunk in chunks:
                out.write(chunk)
                h.update(chunk)
                n += len(chunk)
        assert n == size, (n, size)
        b64 = base64.urlsafe_b64encode(h.digest()).rstrip(b"=").decode()
        self.records.append(f"{name},sha256={b64},{size}")

    def close(self):
        record_name = f"{self.dist_info}/RECORD"
        self.records.append(f"{record_name},,")
        self.zf.writestr(zinfo(record_name), "\n".join(self.records) + "\n")
        self.zf.close()


def write_wheel(outdir, name, version, tag, files, meta_extra=(), entry_points=None,
                big=None):
    """files: list of (path, text).  big: optional (path, size, chunk iterator)."""
    filename = f"{name}-{version}-{tag}.whl"
    dist_info = f"{name}-{version}.dist-info"
    purelib = tag.endswith("-none-any")
    final = os.path.join(outdir, filename)
    tmp = os.path.join(outdir, f".tmp-{os.getpid()}-{filename}")
    w = WheelWriter(tmp, dist_info)
    try:
        for path, text in files:
            w.add(path, text)
        if big is not None:
            w.add_stream(*big)
        w.add(f"{dist_info}/METADATA", metadata_text(name, version, meta_extra))
        wheel = ["Wheel-Version: 1.0", "Generator: make-index-wheels (paddle-image tests)",
                 f"Root-Is-Purelib: {'true' if purelib else 'false'}"]
        wheel += [f"Tag: {t}" for t in expand_tags(tag)]
        w.add(f"{dist_info}/WHEEL", "\n".join(wheel) + "\n\n")
        if entry_points:
            w.add(f"{dist_info}/entry_points.txt", entry_points)
        w.close()
        os.replace(tmp, final)
    except BaseException:
        w.zf.close()
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return filename


def write_sdist(outdir, name, version, files):
    filename = f"{name}-{version}.tar.gz"
    final = os.path.join(outdir, filename)
    tmp = os.path.join(outdir, f".tmp-{os.getpid()}-{filename}")
    base = f"{name}-{version}"
    members = [("PKG-INFO", metadata_text(name, version))] + list(files)
    with open(tmp, "wb") as raw:
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz:
            with tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
                dirs = set()
                for path, _ in members:
                    parts = path.split("/")[:-1]
                    for i in range(len(parts) + 1):
                        d = "/".join([base] + parts[:i])
                        if d not in dirs:
                            dirs.add(d)
                            ti = tarfile.TarInfo(d)
                            ti.type = tarfile.DIRTYPE
                            ti.mode = 0o755
                            ti.mtime = TAR_MTIME
                            tar.addfile(ti)
                for path, text in members:
                    data = text.encode()
                    ti = tarfile.TarInfo(f"{base}/{path}")
                    ti.size = len(data)
                    ti.mode = 0o644
                    ti.mtime = TAR_MTIME
                    tar.addfile(ti, io.BytesIO(data))
    os.replace(tmp, final)
    return filename


def setup_py(name, version):
    return ("from setuptools import setup\n\n"
            f"setup(name={name!r}, version={version!r}, packages=[{name!r}])\n")


def random_chunks(size):
    rng = random.Random(BIG_SEED)
    left = size
    while left > 0:
        n = min(MIB, left)
        yield rng.randbytes(n)
        left -= n


def generate(outdir, big_mb):
    made = []
    for v in ("1.0", "1.1", "2.0rc1"):
        made.append(write_wheel(outdir, "alpha", v, "py3-none-any",
                                [("alpha/__init__.py", f'VERSION = "{v}"\n')]))
    made.append(write_wheel(
        outdir, "beta", "2.0", "py3-none-any",
        [("beta/__init__.py", 'def main():\n    print("beta ok")\n')],
        meta_extra=[
            "Requires-Python: >=3.8",
            "Provides-Extra: fast",
            "Requires-Dist: alpha>=1.0",
            'Requires-Dist: gamma; extra == "fast"',
            'Requires-Dist: colorama; sys_platform == "win32"',
        ],
        entry_points="[console_scripts]\nbeta-cli = beta:main\n"))
    made.append(write_wheel(outdir, "gamma", "0.5", "py3-none-any",
                            [("gamma/__init__.py", 'VERSION = "0.5"\n')]))
    made.append(write_wheel(outdir, "needsdelta", "1.0", "py3-none-any",
                            [("needsdelta/__init__.py", 'VERSION = "1.0"\n')],
                            meta_extra=["Requires-Dist: delta>=1"]))
    for tag in ("cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64",
                "cp310-cp310-manylinux_2_17_x86_64.manylinux2014_x86_64",
                "cp311-cp311-musllinux_1_1_x86_64",
                "cp311-cp311-macosx_11_0_arm64",
                "cp311-abi3-manylinux_2_17_aarch64"):
        made.append(write_wheel(outdir, "fastmath", "1.0", tag,
                                [("fastmath/__init__.py",
                                  f'VERSION = "1.0"\nTAG = "{tag}"\n')]))
    made.append(write_sdist(outdir, "fastmath", "1.0", [
        ("setup.py", setup_py("fastmath", "1.0")),
        ("fastmath/__init__.py", 'VERSION = "1.0"\nTAG = "sdist"\n')]))
    made.append(write_sdist(outdir, "onlysdist", "1.0", [
        ("setup.py", setup_py("onlysdist", "1.0")),
        ("onlysdist/__init__.py", 'VERSION = "1.0"\n')]))
    for v in ("2.6.1", "2.6.1.post118", "2.6.1+cu118"):
        made.append(write_wheel(outdir, "paddlestub", v, "py3-none-any",
                                [("paddlestub/__init__.py", f'__version__ = "{v}"\n')]))
    made.append(write_wheel(outdir, "requirespy", "1.0", "py3-none-any",
                            [("requirespy/__init__.py", 'VERSION = "1.0"\n')],
                            meta_extra=["Requires-Python: >=3.12"]))
    big_name = "bigwheel-1.0-py3-none-any.whl"
    if big_mb > 0:
        size = big_mb * MIB
        made.append(write_wheel(outdir, "bigwheel", "1.0", "py3-none-any",
                                [("bigwheel/__init__.py", 'VERSION = "1.0"\n')],
                                big=("bigwheel/blob.bin", size, random_chunks(size))))
    elif os.path.exists(os.path.join(outdir, big_name)):
        os.unlink(os.path.join(outdir, big_name))
    return made


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--big-mb", type=int, default=0,
                    help="also write bigwheel-1.0 with a stored N MiB blob")
    args = ap.parse_args()
    if args.big_mb < 0:
        ap.error("--big-mb must be >= 0")
    outdir = os.path.abspath(args.outdir)
    os.makedirs(outdir, exist_ok=True)
    done = os.path.join(outdir, ".done")
    stamp = f"big-mb={args.big_mb}\n"
    try:
        with open(done) as f:
            if f.read() == stamp:
                print(f"make-index-wheels: cached at {outdir}", file=sys.stderr)
                return 0
    except FileNotFoundError:
        pass
    if os.path.exists(done):
        os.unlink(done)
    made = generate(outdir, args.big_mb)
    tmp = f"{done}.tmp-{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(stamp)
    os.replace(tmp, done)
    print(f"make-index-wheels: wrote {len(made)} files to {outdir}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
