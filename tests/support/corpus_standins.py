#!/usr/bin/python3
"""Point a spec that `init --from-dockerfile` wrote at local stand-ins, and make them.

    corpus_standins.py ENTRY_DIR --base REF --index URL --wheels DIR --files-url URL
        --files DIR --git DIR --debs-url URL --keyring FILE --pi PADDLE_IMAGE

The Dockerfile corpus test (tests/integration/dockerfile_corpus.sh) builds every
migrated spec on this machine, with no network: the spec's base becomes REF (the
test's Debian base with Python); each wheels layer's index the local package index,
whose wheels (pure, one module each) are written to DIR for every requirement of the
layer's requirements file (the version it pins or names as its bound, 1.0 for a bare
name; the lock resolves the file as it is); the debs layer's repository the
test's signed apt repository; each download's URL one on the local file server, with
a file made for it (an archive of the URL's kind when the rule extracts it); each git
source's URL a local repository with the branch or tag it names (a full commit the
Dockerfile pinned becomes the local repository's commit, an ADD --checksum's sha256 the
stand-in file's); each image source's image a local layout built for it with
paddle-image, holding at each path a rule takes a directory with a file named after the
path (or that file itself, for a path with an extension). What it changed is printed.

System Python with python3-ruamel.yaml (scripts/setup.sh --test installs it).
"""

import argparse
import hashlib
import importlib.util
import io
import json
import os
import re
import subprocess
import tarfile
import zipfile

from ruamel.yaml import YAML

HERE = os.path.dirname(os.path.abspath(__file__))


def wheel_writer():
    spec = importlib.util.spec_from_file_location("make_index_wheels", os.path.join(HERE, "make-index-wheels.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.write_wheel


def lock_requirements(entry, commands):
    """layer name -> requirements file, from init's `paddle-image lock REQ -o ... --layer NAME` commands."""
    out = {}
    for c in commands:
        m = re.match(r"paddle-image lock (\S+) -o \S+ --spec spec\.yaml --layer (\S+)$", c)
        if m:
            out[m.group(2)] = os.path.join(entry, m.group(1))
    return out


def stand_in_wheels(req_file, wheels_dir, write_wheel, changes, seen=None):
    """A wheel for each requirement of req_file (its -r files followed): the version a
    line pins or names as its lower bound, 1.0 for a bare name. The file is left as it
    is: `lock` resolves names and ranges against the local index."""
    seen = set() if seen is None else seen
    if os.path.realpath(req_file) in seen:
        return
    seen.add(os.path.realpath(req_file))
    for line in open(req_file).read().splitlines():
        text = line.split("#")[0].strip()
        if text.startswith("-r "):
            stand_in_wheels(os.path.join(os.path.dirname(req_file), text[3:].strip()), wheels_dir, write_wheel,
                            changes, seen)
            continue
        m = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?\s*(?:(==|>=|~=)\s*([A-Za-z0-9.+!]+))?$", text)
        if not m:
            continue
        name, _extras, _op, version = m.groups()
        if version is None:
            version = "1.0"
            changes.append(f"{name}: a stand-in wheel {version} for the lock to resolve")
        dist = re.sub(r"[-_.]+", "_", name).lower()
        if not os.path.exists(os.path.join(wheels_dir, f"{dist}-{version}-py3-none-any.whl")):
            write_wheel(wheels_dir, dist, version, "py3-none-any",
                        [(f"{dist}/__init__.py", f'__version__ = "{version}"\n')])


def served_file(url, extract, files_dir):
    """A file for URL under files_dir/ID/NAME (the same for the same URL); its path below files_dir."""
    path = url.split("?")[0].split("#")[0]
    name = path.rstrip("/").rsplit("/", 1)[-1] or "download"
    ident = hashlib.sha256(url.encode()).hexdigest()[:12]
    rel = f"{ident}/{name}"
    dest = os.path.join(files_dir, rel)
    if os.path.exists(dest):
        return rel
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    stem = re.sub(r"(\.tar(\.(gz|bz2|xz|zst))?|\.tgz|\.zip)$", "", name)
    members = [(f"{stem}/inference.pdmodel", ("model of " + url + "\n").encode()),
               (f"{stem}/inference.pdiparams", hashlib.sha256(url.encode()).digest() * 64),
               (f"{stem}/inference.yml", b"PreProcess: {}\n")]
    if name.endswith(".zip"):
        with zipfile.ZipFile(dest, "w") as z:
            for n, data in members:
                z.writestr(zipfile.ZipInfo(n, (2020, 1, 1, 0, 0, 0)), data)
    elif re.search(r"\.(tar|tar\.gz|tgz)$", name) or extract:
        mode = "w:gz" if name.endswith((".gz", ".tgz")) else "w"
        with tarfile.open(dest, mode) as t:
            for n, data in members:
                info = tarfile.TarInfo(n)
                info.size, info.mtime = len(data), 1577836800
                t.addfile(info, io.BytesIO(data))
    else:
        with open(dest, "wb") as f:
            f.write(("stand-in for " + url + "\n").encode() * 100)
    return rel


def git(repo, *args):
    env = dict(os.environ, GIT_AUTHOR_DATE="2024-01-01T00:00:00Z", GIT_COMMITTER_DATE="2024-01-01T00:00:00Z",
               GIT_AUTHOR_NAME="corpus", GIT_AUTHOR_EMAIL="corpus@example.com", GIT_COMMITTER_NAME="corpus",
               GIT_COMMITTER_EMAIL="corpus@example.com", GIT_CONFIG_NOSYSTEM="1")
    return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True, text=True, env=env).stdout.strip()


def stand_in_repo(url, git_dir):
    name = url.rstrip("/").rsplit("/", 1)[-1]
    name = name[:-4] if name.endswith(".git") else name
    repo = os.path.join(git_dir, name)
    if not os.path.isdir(repo):
        os.makedirs(os.path.join(repo, "tools"))
        git(git_dir, "init", "-q", repo)
        with open(os.path.join(repo, "README.md"), "w") as f:
            f.write(f"stand-in for {url}\n")
        with open(os.path.join(repo, "tools", "train.py"), "w") as f:
            f.write("print('train')\n")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", "stand-in")
    return repo


def stand_in_image(entry, ref, paths, pi, changes):
    """A layout ENTRY/standin-images:SLUG holding the paths, built from a tree."""
    slug = re.sub(r"[^a-z0-9]+", "-", ref.lower()).strip("-")
    tree = os.path.join(entry, "standin-trees", slug)
    for p in paths:
        target = os.path.join(tree, p.lstrip("/"))
        if os.path.splitext(p)[1]:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            open(target, "w").write(f"stand-in for {p} of {ref}\n")
        else:
            os.makedirs(target, exist_ok=True)
            open(os.path.join(target, "standin.txt"), "w").write(f"stand-in for {p} of {ref}\n")
    spec = os.path.join(entry, "standin-" + slug + ".yaml")
    open(spec, "w").write(f"base: scratch\nlayers:\n  - name: tree\n    files: [{{from: standin-trees/{slug}/, to: /}}]\n")
    subprocess.run([pi, "build", spec, "-q", "-o", f"oci:{entry}/standin-images:{slug}"], check=True,
                   capture_output=True)
    changes.append(f"image {ref} -> oci:standin-images:{slug} (holding {', '.join(paths)})")
    return f"oci:standin-images:{slug}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("entry")
    for a in ("--base", "--index", "--wheels", "--files-url", "--files", "--git", "--debs-url", "--keyring", "--pi"):
        ap.add_argument(a, required=True)
    a = ap.parse_args()
    yaml = YAML()
    spec_file = os.path.join(a.entry, "spec.yaml")
    spec = yaml.load(open(spec_file))
    init = json.load(open(os.path.join(a.entry, "init.json")))
    requirements = lock_requirements(a.entry, init["commands"])
    write_wheel = wheel_writer()
    changes = [f"base {spec['base']} -> {a.base}"]
    spec["base"] = a.base
    for layer in spec.get("layers") or []:
        if "wheels" in layer and "uninstall" in layer["wheels"]:
            continue  # it fetches nothing: the names are the base's
        if "wheels" in layer:
            w = layer["wheels"]
            changes.append(f"layer {layer['name']}: index {w.get('index', 'PyPI')} -> the local index")
            w["index"] = a.index
            w.pop("find_links", None)
            if layer["name"] in requirements:
                stand_in_wheels(requirements[layer["name"]], a.wheels, write_wheel, changes)
        elif "debs" in layer:
            layer["debs"]["repositories"] = [{"url": a.debs_url, "suite": "bookworm", "components": ["main"],
                                              "keyring": a.keyring}]
            changes.append(f"layer {layer['name']}: the local signed apt repository")
        for rule in layer.get("files") or layer.get("data") or []:
            if "url" in rule:
                rel = served_file(rule["url"], rule.get("extract", False), a.files)
                changes.append(f"{rule['url']} -> {a.files_url}/{rel}")
                rule["url"] = f"{a.files_url}/{rel}"
                if "sha256" in rule:  # ADD --checksum: the stand-in's own hash
                    rule["sha256"] = hashlib.sha256(open(os.path.join(a.files, rel), "rb").read()).hexdigest()
            elif "git" in rule:
                repo = stand_in_repo(rule["git"], a.git)
                ref = rule.get("ref")
                if ref and ref != "HEAD" and not git(repo, "tag", "-l", ref) and not git(repo, "branch", "--list", ref):
                    if re.match(r"^v\d", ref):
                        git(repo, "tag", "-a", ref, "-m", ref)
                    else:
                        git(repo, "branch", ref)
                if "commit" in rule:
                    rule["commit"] = git(repo, "rev-parse", "HEAD")
                changes.append(f"{rule['git']} -> file://{repo}")
                rule["git"] = "file://" + repo
    images = {}
    for layer in spec.get("layers") or []:
        for rule in layer.get("files") or layer.get("data") or []:
            if "image" in rule:
                images.setdefault(rule["image"], []).append(rule["from"])
    standins = {ref: stand_in_image(a.entry, ref, paths, a.pi, changes) for ref, paths in images.items()}
    for layer in spec.get("layers") or []:
        for rule in layer.get("files") or layer.get("data") or []:
            if "image" in rule:
                rule["image"] = standins[rule["image"]]
    with open(spec_file + ".tmp", "w") as f:
        yaml.dump(spec, f)
    os.replace(spec_file + ".tmp", spec_file)
    print("\n".join(changes))


if __name__ == "__main__":
    main()
