#!/usr/bin/python3
"""Look for a secret (the canary) in every file under some directories.

    canary_scan.py CANARY [--also TEXT]... [--exclude PATH]... ROOT...

Each regular file is read whole; gzip and zstd streams (layer blobs, compressed
archives) are decompressed, and tar archives (image archives, uncompressed
layers) are opened and their members scanned the same way, recursively. A file
matches when it holds the canary, its URL-encoded form, or any --also text (for
example base64 of "user:canary"). Prints one line per match (the file, and the
member path inside archives) and exits 1 if any; 0 and "clean: N files" if none.
--exclude skips a file or a directory (the secret inputs themselves). Standard
library plus the zstd command for zstd streams.
"""

import argparse
import gzip
import io
import os
import subprocess
import sys
import tarfile
import urllib.parse

GZIP = b"\x1f\x8b"
ZSTD = b"\x28\xb5\x2f\xfd"


def unpacked(data, depth=0):
    """(label, bytes) for data and every layer inside it."""
    yield "", data
    if depth > 4:
        return
    inner = None
    if data[:2] == GZIP:
        try:
            inner = gzip.decompress(data)
        except (OSError, EOFError):
            inner = None
    elif data[:4] == ZSTD:
        p = subprocess.run(["zstd", "-dc"], input=data, capture_output=True, check=False)
        inner = p.stdout if p.returncode == 0 else None
    if inner is not None:
        for label, d in unpacked(inner, depth + 1):
            yield "(decompressed)" + label, d
        return
    if len(data) >= 512 and data[257:262] == b"ustar":
        try:
            with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as t:
                for m in t:
                    if not m.isfile():
                        continue
                    f = t.extractfile(m)
                    if f is None:
                        continue
                    for label, d in unpacked(f.read(), depth + 1):
                        yield "!" + m.name + label, d
        except tarfile.TarError:
            return


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("canary")
    ap.add_argument("roots", nargs="+")
    ap.add_argument("--also", action="append", default=[])
    ap.add_argument("--exclude", action="append", default=[])
    a = ap.parse_args()
    needles = {a.canary.encode(), urllib.parse.quote(a.canary, safe="").encode()}
    needles.update(x.encode() for x in a.also)
    excluded = {os.path.realpath(x) for x in a.exclude}
    hits, files = [], 0
    for root in a.roots:
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = [d for d in dirnames if os.path.realpath(os.path.join(dirpath, d)) not in excluded]
            for name in filenames:
                path = os.path.join(dirpath, name)
                if os.path.realpath(path) in excluded or os.path.islink(path) or not os.path.isfile(path):
                    continue
                files += 1
                with open(path, "rb") as f:
                    data = f.read()
                for label, d in unpacked(data):
                    if any(n in d for n in needles):
                        hits.append(path + label)
    for h in hits:
        print("canary in " + h)
    if hits:
        return 1
    print("clean: %d files" % files)
    return 0


if __name__ == "__main__":
    sys.exit(main())
