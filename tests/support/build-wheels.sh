#!/usr/bin/env bash
# Build the e2e test wheels offline from tests/fixtures/wheelsrc (built from a copy,
# the source tree is never written to), plus crafted "bad" wheels for negative tests.
# Usage: build-wheels.sh OUTDIR
# Output: OUTDIR/*.whl, OUTDIR/wheels.lock (pip --hash format), OUTDIR/bad/*.whl, OUTDIR/.done
# Env: PYTHON (default /usr/bin/python3 = Debian's, which has setuptools+wheel+headers).
set -euo pipefail

if [[ $# -ne 1 ]]; then
    echo "usage: $0 OUTDIR" >&2
    exit 2
fi

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=$(cd "$HERE/../fixtures/wheelsrc" && pwd)
OUTDIR=$(realpath -m "$1")
PYTHON=${PYTHON:-/usr/bin/python3}
PKGS=(purepkg nspkg_a nspkg_b cext)

if [[ -f "$OUTDIR/.done" && -f "$OUTDIR/wheels.lock" ]]; then
    echo "build-wheels: cached at $OUTDIR" >&2
    exit 0
fi

"$PYTHON" -c 'import setuptools, wheel' 2>/dev/null || {
    echo "build-wheels: $PYTHON lacks setuptools/wheel (apt install python3-setuptools python3-wheel)" >&2
    exit 1
}

# Reproducible timestamps in the zip members (honoured by bdist_wheel).
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-1700000000}
export PYTHONDONTWRITEBYTECODE=1
export PIP_NO_INDEX=1 PIP_NO_INPUT=1 PIP_DISABLE_PIP_VERSION_CHECK=1

TMP=$(mktemp -d /tmp/build-wheels.XXXXXX)
trap 'rm -rf -- "$TMP"' EXIT
STAGE="$TMP/out"
mkdir -p "$STAGE/bad"

for pkg in "${PKGS[@]}"; do
    cp -a "$SRC/$pkg" "$TMP/$pkg"
    (
        cd "$TMP/$pkg"
        # Strip build-dir paths from debug info so the .so does not depend on $TMP.
        export CFLAGS="${CFLAGS:-} -ffile-prefix-map=$TMP/$pkg=."
        "$PYTHON" setup.py -q bdist_wheel --dist-dir "$STAGE" >"$TMP/$pkg.log" 2>&1
    ) || { echo "build-wheels: building $pkg failed:" >&2; cat "$TMP/$pkg.log" >&2; exit 1; }
done

# Debian's pip wheel (an "installer" test wheel with real-world content).
shopt -s nullglob
pipwhl=(/usr/share/python-wheels/pip-*.whl)
shopt -u nullglob
if [[ ${#pipwhl[@]} -eq 0 ]]; then
    echo "build-wheels: no /usr/share/python-wheels/pip-*.whl (apt install python3-pip-whl)" >&2
    exit 1
fi
cp "${pipwhl[@]}" "$STAGE/"

# Crafted bad wheels + lock file.
"$PYTHON" - "$STAGE" <<'PY'
import hashlib, os, sys, zipfile, base64

stage = sys.argv[1]
bad = os.path.join(stage, "bad")
DT = (2023, 11, 14, 22, 13, 20)


def rec_line(name, data):
    h = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (name, h, len(data))


def make_wheel(path, dist, version, tag, files, root_is_purelib=True):
    di = "%s-%s.dist-info" % (dist, version)
    files = dict(files)
    files[di + "/METADATA"] = (
        "Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (dist, version)).encode()
    files[di + "/WHEEL"] = (
        "Wheel-Version: 1.0\nGenerator: paddle-image-tests\nRoot-Is-Purelib: %s\nTag: %s\n"
        % ("true" if root_is_purelib else "false", tag)).encode()
    record = [rec_line(n, d) for n, d in files.items()] + [di + "/RECORD,,"]
    files[di + "/RECORD"] = ("\n".join(record) + "\n").encode()
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for n, d in files.items():
            zi = zipfile.ZipInfo(n, DT)
            zi.external_attr = 0o644 << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(zi, d)


# 1. zip-slip: a member escaping the install root, otherwise a valid-looking wheel.
make_wheel(os.path.join(bad, "zipslip-1.0-py3-none-any.whl"), "zipslip", "1.0",
           "py3-none-any",
           {"zipslip/__init__.py": b"",
            "../evil.py": b"print('pwned')\n"})

# 2. corrupt: starts like a zip (local header magic) then garbage, no central directory.
with open(os.path.join(bad, "corrupt-1.0-py3-none-any.whl"), "wb") as f:
    f.write(b"PK\x03\x04" + bytes(range(256)) * 4 + b"this is not a wheel\n")

# 3. wrong python: valid wheel, tagged for CPython 2.7 / manylinux1.
make_wheel(os.path.join(bad, "wrongpy-1.0-cp27-cp27mu-manylinux1_x86_64.whl"), "wrongpy",
           "1.0", "cp27-cp27mu-manylinux1_x86_64",
           {"wrongpy/__init__.py": b"print 'py2 only'\n"}, root_is_purelib=False)

# Lock file: name==version --hash=sha256:HEX, one line per good wheel.
lines = []
for fn in sorted(os.listdir(stage)):
    if not fn.endswith(".whl"):
        continue
    parts = fn[:-4].split("-")
    name, version = parts[0], parts[1]
    with open(os.path.join(stage, fn), "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    lines.append("%s==%s --hash=sha256:%s\n" % (name.replace("_", "-").lower(), version, digest))
with open(os.path.join(stage, "wheels.lock"), "w") as f:
    f.writelines(lines)
PY

touch "$STAGE/.done"
mkdir -p "$OUTDIR"
# Replace outputs we own; leave any unrelated files in OUTDIR alone.
rm -rf -- "$OUTDIR/bad" "$OUTDIR/.done"
rm -f -- "$OUTDIR"/*.whl "$OUTDIR/wheels.lock"
mv "$STAGE"/*.whl "$STAGE/wheels.lock" "$STAGE/bad" "$OUTDIR/"
mv "$STAGE/.done" "$OUTDIR/.done"
echo "build-wheels: done: $(ls "$OUTDIR"/*.whl | wc -l) wheels in $OUTDIR" >&2
