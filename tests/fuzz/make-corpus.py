#!/usr/bin/python3
"""Writes the fuzz targets' seed corpora (tests/fuzz/corpus/TARGET/) from the test
fixtures and the bundled example, plus a few hand-written inputs of each form where
the repository has no fixture file. The output is committed; run this again after a
fixture or a format changes. Each seed is named by its SHA-1, so a rerun writes the
same files again and leaves the rest alone: the inputs that long fuzzing runs found
and `-merge=1` kept (scripts/fuzz.sh --merge) live beside them. Deterministic: the
same tree gives the same files (keys come from fixed numbers, not randomness).

  /usr/bin/python3 tests/fuzz/make-corpus.py   (Debian's: python3-cryptography)
"""
import base64
import hashlib
import io
import json
import os
import sys
import tarfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "fuzz", "corpus")
MAX = 8192  # bytes per seed: big enough for every form, small enough to mutate fast


class Corpus:
    def __init__(self, target):
        self.dir = os.path.join(OUT, target)
        os.makedirs(self.dir, exist_ok=True)

    def add(self, data, selector=None, limit=MAX):
        if isinstance(data, str):
            data = data.encode()
        data = data[:limit]
        if selector is not None:
            data = bytes([selector]) + data
        name = hashlib.sha1(data).hexdigest()
        with open(os.path.join(self.dir, name), "wb") as f:
            f.write(data)

    def add_file(self, path, selector=None, limit=MAX):
        with open(path, "rb") as f:
            self.add(f.read(), selector, limit)


def rel(*parts):
    return os.path.join(ROOT, *parts)


def files_under(top, name=None):
    for dirpath, dirnames, filenames in sorted(os.walk(top)):
        dirnames.sort()
        for f in sorted(filenames):
            if name is None or f == name:
                yield os.path.join(dirpath, f)


def lock_lines():
    out = []
    with open(rel("examples", "ocr-train", "wheels.lock")) as f:
        for line in f.read().replace("\\\n", " ").splitlines():
            line = line.strip()
            if line and not line.startswith("#") and not line.startswith("--"):
                out.append(line.split(" --hash")[0].strip())
    return out


def doctor():
    c = Corpus("fuzz_doctor")
    hosts = rel("tests", "fixtures", "hosts")
    for p in files_under(hosts, "version"):
        if "/proc/driver/nvidia/" in p:
            c.add_file(p, 0)
    for p in files_under(hosts, "devices"):
        c.add_file(p, 1)
    for p in files_under(hosts, "modules"):
        c.add_file(p, 2)
    for p in files_under(hosts, "information"):
        c.add_file(p, 3)
    for p in files_under(hosts, "os-release"):
        c.add_file(p, 3)
    for p in files_under(hosts, "ld.so.cache"):
        c.add_file(p, 4)
    # A glibc "ld.so-1.7.0" + "glibc-ld.so.cache1.1" cache of two entries, as ldconfig writes it.
    strings = b"libcuda.so.1\0/usr/lib/x86_64-linux-gnu/libcuda.so.1\0"
    new = b"glibc-ld.so.cache1.1" + (2).to_bytes(4, "little") + len(strings).to_bytes(4, "little") + bytes(20)
    entry = (0x0303).to_bytes(4, "little") + (0).to_bytes(4, "little") + (13).to_bytes(4, "little") + bytes(4) + bytes(8)
    c.add(new + entry + entry + strings, 4)
    for s in ["cuda>=11.8 brand=tesla,driver>=470,driver<471 brand=unknown,driver>=470,driver<471",
              "cuda>=12.0", "cuda>=12.3 brand=tesla,driver>=525,driver<526 brand=nvidiartx,driver>=535"]:
        c.add(s, 5)
    for s in ["cuda>=11.2 driver>=470", "compute>=8.0 arch=sm_90", "libcuda.so.535.104.05"]:
        c.add(s, 6)


def python_parsers():
    c = Corpus("fuzz_python")
    for v in ["1.0", "2.6.1.post120", "3.0.0b1", "1!2.0rc1.post3.dev4+local.5", "v1.0-1", "2.6.1+cu118"]:
        c.add(v, 0)
    for s in [">=1.0,<2.0", "==2.6.*", "~=3.3", "===weird", "!=1.5.*,>0", ">=3.8"]:
        c.add(s, 1)
    for line in lock_lines():
        c.add(line, 2)
    c.add('opt-einsum ==3.3.0 ; python_version >= "3.8" and (sys_platform == "linux" or extra == "test")', 2)
    c.add('paddlepaddle-gpu[cuda] @ https://example.com/p.whl ; platform_machine == "x86_64"', 2)
    for p in files_under(rel("tests", "fixtures", "wheelsrc")):
        base = os.path.basename(p)
        if base in ("METADATA", "PKG-INFO"):
            c.add_file(p, 3)
        elif base == "RECORD":
            c.add_file(p, 4)
        elif base == "WHEEL":
            c.add_file(p, 5)
    c.add("Metadata-Version: 2.1\nName: paddlepaddle-gpu\nVersion: 2.6.1\nRequires-Python: >=3.8\n"
          "Requires-Dist: opt-einsum ==3.3.0\nRequires-Dist: numpy>=1.13 ; extra == 'all'\n"
          "Provides-Extra: all\n  folded\n\nbody", 3)
    c.add('paddle/__init__.py,sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU,10\n"a,b.py",,\n'
          "../../../bin/x,,\npaddle-2.6.1.dist-info/RECORD,,\n", 4)
    c.add("Wheel-Version: 1.0\nGenerator: bdist_wheel (0.40.0)\nRoot-Is-Purelib: true\nTag: py3-none-any\n", 5)


def index_pages():
    c = Corpus("fuzz_index_page")
    files = [("paddlepaddle_gpu-2.6.1-cp311-cp311-manylinux1_x86_64.whl", "a" * 64),
             ("opt_einsum-3.3.0-py3-none-any.whl", "b" * 64), ("numpy-1.26.4.tar.gz", "c" * 64)]
    html = ["<!DOCTYPE html>\n<html><head><meta name=\"pypi:repository-version\" content=\"1.1\">"
            "<base href=\"https://files.example/packages/\"></head><body>"]
    for name, h in files:
        html.append('<a href="../../%s#sha256=%s" data-requires-python="&gt;=3.8" '
                    'data-dist-info-metadata="sha256=%s">%s</a><br/>' % (name, h, h, name))
    html.append('<a href="x-1.0-py3-none-any.whl" data-yanked="broken &amp; bad">x-1.0-py3-none-any.whl</a>')
    html.append("<A HREF='Y-2.0.tar.gz'>Y-2.0.tar.gz</A><!-- a comment <a href=z> --></body></html>")
    c.add("".join(html), 0)
    page = {"meta": {"api-version": "1.1"}, "name": "paddlepaddle-gpu",
            "files": [{"filename": n, "url": "https://files.example/" + n, "hashes": {"sha256": h},
                       "requires-python": ">=3.8", "yanked": False, "core-metadata": {"sha256": h}}
                      for n, h in files],
            "versions": ["2.6.1"]}
    c.add(json.dumps(page), 1)
    page["files"][0]["yanked"] = "reason"
    page["files"][1]["url"] = "../../o/opt_einsum-3.3.0-py3-none-any.whl"
    c.add(json.dumps(page), 1)


def requirements():
    c = Corpus("fuzz_requirements")
    c.add_file(rel("examples", "ocr-train", "wheels.lock"), 0)
    c.add("\n".join(lock_lines()) + "\n", 1)
    c.add("--index-url https://user@mirror.example/simple\n--extra-index-url https://b.example/simple\n"
          "-f ./wheels\n--no-index\n# comment\nnumpy==1.26.4 \\\n    --hash=sha256:" + "a" * 64 +
          " ; python_version >= \"3.8\"\n-r other.txt\n-c constraints.txt\n", 0)
    c.add("paddlepaddle-gpu==2.6.1\nopt-einsum==3.3.0 # pinned\n-e ./local\n", 1)


def pip_conf():
    c = Corpus("fuzz_pip_conf")
    c.add("[global]\nindex-url = https://mirror.example/simple\nextra-index-url =\n"
          "    https://a.example/simple\n    https://b.example/simple\ntimeout: 60\n"
          "[install]\nfind_links = /opt/wheels\nno-index = false\n; comment\n# comment\n")
    c.add("[global]\nindex_url=https://user:pass@mirror.example/simple\n[freeze]\nx=y\n")


def wheels():
    c = Corpus("fuzz_wheel")
    for p in files_under(rel("examples", "ocr-train", "wheels")):
        if p.endswith(".whl"):
            c.add_file(p, limit=64 << 10)

    def wheel(members, dist="fuzzpkg-1.0.dist-info", stored=False):
        members = dict(members)
        members.setdefault(dist + "/METADATA", "Metadata-Version: 2.1\nName: fuzzpkg\nVersion: 1.0\n")
        members.setdefault(dist + "/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        record = ""
        for name, body in members.items():
            digest = base64.urlsafe_b64encode(hashlib.sha256(body.encode()).digest()).rstrip(b"=").decode()
            record += "%s,sha256=%s,%d\n" % (name, digest, len(body))
        members[dist + "/RECORD"] = record + dist + "/RECORD,,\n"
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED) as z:
            for name, body in members.items():
                info = zipfile.ZipInfo(name, (1980, 1, 1, 0, 0, 0))
                z.writestr(info, body)
        return buf.getvalue()

    c.add(wheel({"fuzzpkg/__init__.py": "x = 1\n"}))
    c.add(wheel({"fuzzpkg/__init__.py": "", "fuzzpkg-1.0.data/scripts/tool": "#!python\nprint(1)\n",
                 "fuzzpkg-1.0.data/data/share/x.txt": "x", "fuzzpkg-1.0.dist-info/entry_points.txt":
                 "[console_scripts]\nfz = fuzzpkg:main\n"}, stored=True))


def dockerfiles():
    c = Corpus("fuzz_dockerfile")
    c.add_file(rel("tests", "golden", "templates", "ocr-train.Dockerfile"))
    c.add("# syntax=docker/dockerfile:1\n# escape=\\\nARG CUDA=11.8\n"
          "FROM paddlepaddle/paddle:2.6.1-gpu-cuda11.8-cudnn8.6-trt8.5 AS base\n"
          "FROM base\nENV PYTHONUNBUFFERED=1 \\\n    LANG=C.UTF-8\nWORKDIR /app\n"
          "COPY requirements.txt .\nRUN pip install --no-cache-dir -r requirements.txt\n"
          "COPY --chown=1000:1000 src/ /app/src/\nCOPY [\"models\", \"/app/models\"]\n"
          "ADD https://example.com/x.tar.gz /opt/\nUSER 1000\nEXPOSE 8080/tcp\n"
          "LABEL org.opencontainers.image.title=\"ocr\"\nENTRYPOINT [\"python\", \"-m\", \"ocr.train\"]\n"
          "CMD [\"--epochs\", \"10\"]\nRUN <<EOF\napt-get update\nEOF\n")
    c.add("FROM python:3.11-slim\nCOPY . /srv\nENTRYPOINT python /srv/app.py\n")
    c.add("FROM nvcr.io/nvidia/tritonserver:21.10-py3 AS triton\nFROM ubuntu:22.04\n"
          "RUN groupadd -g 2000 ml && useradd -ms /bin/bash -G ml,video -c \"P\" paddle && adduser alice ml\n"
          "RUN useradd -r -M -N -g users svc && addgroup --system grp && adduser --disabled-password --gecos '' bob\n"
          "COPY --from=triton --chown=paddle:ml /opt/tritonserver /opt/t\nCOPY --from=busybox:1 [\"/bin/a\", \"/b\", \"/c/\"]\n"
          "USER paddle\n")


def specs():
    c = Corpus("fuzz_spec")
    for p in [rel("examples", "ocr-train", "spec.yaml"), rel("examples", "doctor", "spec.yaml")]:
        c.add_file(p)
    c.add("name: app\nbase: auto\nrequires:\n  cuda: \">=11.8\"\n  paddle: 2.6.1\n  gpus: [sm_80, sm_90]\n"
          "python:\n  lock: wheels.lock\n  index: https://mirror.example/simple\nlayers:\n"
          "  - name: wheels\n    wheels: {dir: wheels, allow_conflicts: true}\n"
          "  - name: code\n    copy:\n      - {from: src, to: /app/src, mode: \"0644\"}\n"
          "entrypoint: [python, -m, app]\nenv: {A: \"1\"}\nlabels: {x: y}\nuser: \"1000:1000\"\n"
          "workdir: /app\ncreated: \"2024-01-01T00:00:00Z\"\n")
    c.add("base: scratch\nlayers:\n  - name: app\n    files:\n      - {from: \"src/[a-z]*.py\", to: /app/}\n"
          "      - {from: \"*/\\\\*?[!x]\", to: /x}\n")
    c.add("base: scratch\nlayers:\n  - name: slim\n    wheels: {uninstall: [opencv-python, Pillow, \"x==1\"]}\n"
          "  - name: one\n    wheels: {uninstall: six, lock: r.lock}\n")
    c.add("base: scratch\nlayers:\n  - name: users\n    accounts:\n      groups: [{name: ml, gid: 2000}]\n"
          "      users:\n        - {name: paddle, uid: 1000, groups: [ml, video], shell: /bin/bash, home_mode: \"0700\","
          " comment: \"a:b\"}\n        - {name: \"9x\", uid: -1, gid: 4294967295, create_home: maybe}\n"
          "  - name: t\n    files:\n      - {image: \"reg.example/x@sha256:" + "a" * 64 + "\", from: /opt/x/, to: /x}\n"
          "      - {image: \"oci:stage:v1\", from: rel, to: /y, digest: sha1:00}\n")
    c.add("name: &a x\nbase: *a\nlayers: !!binary aGVsbG8=\n? [complex]\n: key\n")


def registry_answers():
    c = Corpus("fuzz_registry_answers")
    for h in ['Bearer realm="https://auth.example.com/token",service="registry.example.com",'
              'scope="repository:a/b:pull,push"',
              'Basic realm="Registry Realm", Bearer realm="x",error="invalid_token"',
              'bearer realm=unquoted, service="s\\"q"']:
        c.add(h, 0)
    for t in ['{"token":"abc","expires_in":300,"issued_at":"2024-01-01T00:00:00Z"}',
              '{"access_token":"x","refresh_token":"r"}', '{"token":"a","expires_in":1e308}']:
        c.add(t, 1)
    for e in ['{"errors":[{"code":"MANIFEST_UNKNOWN","message":"manifest unknown","detail":{"Tag":"x"}}]}',
              '{"errors":[{"code":"DENIED","message":"requested access to the resource is denied"},'
              '{"code":"UNAUTHORIZED"}]}', "<html><body>502 Bad Gateway</body></html>"]:
        c.add(e, 2)
    for h in ['{"ServerURL":"registry.example.com","Username":"alice","Secret":"s3cr3t"}',
              '{"Username":"<token>","Secret":"refresh"}', "credentials not found in native keychain\n"]:
        c.add(h, 3)


def oci_json():
    c = Corpus("fuzz_oci_json")
    cfg = {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": "sha256:" + "a" * 64, "size": 1234}
    layer = {"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": "sha256:" + "b" * 64,
             "size": 99, "annotations": {"org.opencontainers.image.title": "x"}}
    c.add(json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                      "config": cfg, "layers": [layer], "annotations": {"a": "b"},
                      "subject": {"mediaType": "x", "digest": "sha256:" + "c" * 64, "size": 1}}))
    c.add(json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
                      "config": dict(cfg, mediaType="application/vnd.docker.container.image.v1+json"),
                      "layers": [dict(layer, mediaType="application/vnd.docker.image.rootfs.diff.tar.gzip",
                                      urls=["https://x"])]}))
    c.add(json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
                      "manifests": [dict(cfg, mediaType="application/vnd.oci.image.manifest.v1+json",
                                         platform={"architecture": "amd64", "os": "linux", "variant": "v3"})]}))
    c.add(json.dumps({"architecture": "amd64", "os": "linux", "created": "2024-01-01T00:00:00Z",
                      "config": {"Env": ["PATH=/usr/bin", "CUDA_VERSION=11.8.0"], "Entrypoint": ["python"],
                                 "Cmd": None, "User": "1000", "WorkingDir": "/app", "Labels": {"a": "b"},
                                 "ExposedPorts": {"8080/tcp": {}}, "StopSignal": "SIGTERM"},
                      "rootfs": {"type": "layers", "diff_ids": ["sha256:" + "d" * 64]},
                      "history": [{"created_by": "COPY", "empty_layer": True}, {"comment": "x"}]}))


def docker_config():
    c = Corpus("fuzz_docker_config")
    # The canary the target looks for in every error message (fuzz_docker_config.cpp).
    auth = base64.b64encode(b"alice:s3cr3t-canary").decode()
    c.add(json.dumps({"auths": {"registry.example.com:5000": {"auth": auth},
                                "https://index.docker.io/v1/": {"auth": auth, "identitytoken": "tok"},
                                "http://127.0.0.1/v2/": {"username": "u", "password": "s3cr3t-canary"}}}))
    c.add('{"auths":{"registry.example.com:5000":{"auth":"%s"' % auth)  # cut off inside the secret
    c.add(json.dumps({"auths": {"docker.io": {"registrytoken": "r"}}, "credsStore": "pass",
                      "credHelpers": {"x.example": "gcloud"}}))
    c.add("")


def tars():
    c = Corpus("fuzz_tar")
    for fmt in (tarfile.USTAR_FORMAT, tarfile.GNU_FORMAT, tarfile.PAX_FORMAT):
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w", format=fmt) as t:
            def add(name, data=b"", kind=tarfile.REGTYPE, link=""):
                i = tarfile.TarInfo(name)
                i.type = kind
                i.size = len(data) if kind == tarfile.REGTYPE else 0
                i.linkname = link
                i.mtime = 0
                t.addfile(i, io.BytesIO(data) if kind == tarfile.REGTYPE else None)
            add("usr/local/lib/python3.11/site-packages/", kind=tarfile.DIRTYPE)
            add("usr/local/lib/python3.11/site-packages/.wh.old", b"")
            add("etc/os-release", b"ID=debian\nVERSION_ID=\"12\"\n")
            add("a/" + "d" * 90 + "/" + "e" * 60 + ".py", b"x = 1\n")  # ustar: prefix + name
            if fmt != tarfile.USTAR_FORMAT:
                add("a/" + "long" * 40 + "/name.py", b"x = 1\n")  # GNU ././@LongLink, PAX path
            add("bin/sh", kind=tarfile.SYMTYPE, link="dash")
            add("bin/sh2", kind=tarfile.LNKTYPE, link="bin/sh")
        c.add(buf.getvalue(), limit=32 << 10)


def docker_archives():
    c = Corpus("fuzz_docker_archive")
    c.add(json.dumps([{"Config": "config.json", "RepoTags": ["paddle:2.6.1"], "Layers": ["layer.tar"]}]))
    c.add(json.dumps([{"Config": "./config.json", "RepoTags": None, "Layers": ["./layer.tar", "layer.tar"]},
                      {"Config": "other.json", "Layers": []}]))


def keys():
    c = Corpus("fuzz_keys")
    try:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ec
    except ImportError:
        sys.exit("make-corpus.py: python3-cryptography is needed for the key seeds")
    # Fixed private numbers: the corpus is the same on every run (these keys sign nothing).
    k = ec.derive_private_key(0x1F2E3D4C5B6A79881F2E3D4C5B6A79881F2E3D4C5B6A79881F2E3D4C5B6A7988, ec.SECP256R1())
    c.add(k.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    c.add(k.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    c.add(k.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                          serialization.NoEncryption()))
    other = ec.derive_private_key(12345, ec.SECP384R1())
    c.add(other.public_key().public_bytes(serialization.Encoding.PEM,
                                          serialization.PublicFormat.SubjectPublicKeyInfo))
    body = {"kdf": {"name": "scrypt", "params": {"N": 32768, "r": 8, "p": 1},
                    "salt": base64.b64encode(bytes(range(32))).decode()},
            "cipher": {"name": "nacl/secretbox", "nonce": base64.b64encode(bytes(range(24))).decode()},
            "ciphertext": base64.b64encode(bytes(range(150))).decode()}
    b64 = base64.b64encode(json.dumps(body).encode()).decode()
    lines = "\n".join(b64[i:i + 64] for i in range(0, len(b64), 64))
    c.add("-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\n%s\n-----END ENCRYPTED SIGSTORE PRIVATE KEY-----\n" % lines)
    c.add("-----BEGIN EC PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,00\n\nAAAA\n"
          "-----END EC PRIVATE KEY-----\n")


def dsse():
    c = Corpus("fuzz_dsse")
    image = "sha256:" + "a" * 64
    st = {"_type": "https://in-toto.io/Statement/v1", "subject": [{"name": "app", "digest": {"sha256": "a" * 64}}],
          "predicateType": "https://slsa.dev/provenance/v1",
          "predicate": {"buildDefinition": {"buildType": "x"}, "runDetails": {}}}
    payload = json.dumps(st, separators=(",", ":"))
    env = {"payloadType": "application/vnd.in-toto+json", "payload": base64.b64encode(payload.encode()).decode(),
           "signatures": [{"keyid": "", "sig": base64.b64encode(b"0E\x02!" + bytes(33) + b"\x02 " + bytes(32)).decode()}]}
    c.add(json.dumps(env))
    c.add(payload)
    c.add(json.dumps({"critical": {"identity": {"docker-reference": "registry.example.com/app"},
                                   "image": {"docker-manifest-digest": image},
                                   "type": "cosign container image signature"}, "optional": None},
                     separators=(",", ":")))


def main():
    for make in (doctor, python_parsers, index_pages, requirements, pip_conf, wheels, dockerfiles, specs,
                 registry_answers, oci_json, docker_config, tars, docker_archives, keys, dsse):
        make()
    total = sum(os.path.getsize(p) for p in files_under(OUT))
    print("make-corpus.py: %d files, %d bytes under %s" % (len(list(files_under(OUT))), total, OUT))


if __name__ == "__main__":
    main()
