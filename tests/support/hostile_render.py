#!/usr/bin/python3
"""Property test: hostile values in every variable of every file paddle-image renders.

    hostile_render.py --pi PADDLE_IMAGE --work DIR [--registry HOST:PORT] [--buildah]
                      [--family ci|dockerfile|k8s|warm|init] [--only SLOT_SUBSTRING]
                      [--values NAME,NAME]

--family runs one family of slots (CTest runs each family as its own test, side by
side): ci (GitHub Actions, GitLab CI), dockerfile (render dockerfile), k8s (k8s-job,
paddle-distributed), warm (warm manifests and hosts; manifests need --registry), init
(init and init --from-dockerfile).

Each *slot* is one way a value reaches a rendered file: a spec field, a flag, a file
name, a Dockerfile instruction for `init --from-dockerfile`. Each slot is run once with
a benign value (the baseline) and once per hostile value (line breaks of every kind,
NUL, quotes, comment and mapping characters, mustache and GitHub expression braces,
shell substitutions that would create a PLANTED_* file, YAML 1.1 scalars, a very long
string...). A run must either be refused with exit 2 or 3 and an error (no output file
left), or give output that:
- parses: YAML with both a YAML 1.1 parser (PyYAML) and a YAML 1.2 parser (ruamel.yaml),
  which must agree; TOML with tomllib; a Dockerfile as its logical lines;
- has the baseline's structure, with the hostile value exactly where the benign one
  was (every string compared with the baseline's, the benign value replaced: nothing
  added, dropped, retyped or rewritten); for GitLab, after GitLab's own `$` expansion of
  `variables:`; for GitHub, with no `${{` that the baseline lacks;
- for CI files: every `run:` / `script:` line, run by bash with the file's `env:` /
  `variables:` values in the environment and stub commands, creates no PLANTED_* file;
- for Kubernetes objects: passes k8s_validate.py (the pinned API schemas);
- for Dockerfiles (--buildah): buildah builds it (FROM scratch), and the image config
  (Env, Labels, Entrypoint, Cmd, WorkingDir, User) is the baseline's with the value in.
Prints one line per slot with what happened to each value, then FAIL lines; exits 1
on any failure.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib

import yaml
from ruamel.yaml import YAML

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import k8s_validate  # noqa: E402  (tests/support/k8s_validate.py, beside this file)
BENIGN = "benign0value"

HOSTILE = [
    ("newline", "a\nplanted_key: 1"),
    ("cr", "a\rb"),
    ("crlf", "a\r\nplanted: 1"),
    ("nel", "a\u0085planted: 1"),
    ("ls", "a\u2028planted: 1"),
    ("ps", "a\u2029planted: 1"),
    ("nul", "a\0b"),
    ("tab", "a\tb"),
    ("hash", "a #b"),
    ("colon", "a: b"),
    ("quotes", "a'b\"c"),
    ("backslash", "a\\b\\"),
    ("mustache", "{{x}}{{{y}}}"),
    ("gha_expr", "${{ secrets.TOKEN }}"),
    ("cmdsub", "$(touch PLANTED_cmdsub)"),
    ("backtick", "`touch PLANTED_backtick`"),
    ("semicolon", "x; touch PLANTED_semi"),
    ("dollar", "$HOME${CI_JOB_TOKEN}"),
    ("yaml_on", "on"),
    ("yaml_no", "no"),
    ("yaml_octal", "0640"),
    ("yaml_tilde", "~"),
    ("yaml_null", "null"),
    ("yaml_float", "1e3"),
    ("yaml_anchor", "&a *a"),
    ("yaml_tag", "!!python/object/apply:os.system"),
    ("flow", "{a: [b]}"),
    ("dash", "- x"),
    ("pipe", "| x"),
    ("percent", "%YAML 1.1"),
    ("lead_space", " a"),
    ("trail_space", "a "),
    ("long", "L" * 5000),
    ("unicode", "d\u00e9j\u00e0 \u4e2d\u6587 \U0001f680"),
]


def file_safe(v):
    """The value as part of a file name, or None when no file name can hold it."""
    if "/" in v or "\0" in v:
        return None
    return v[:180]


# ---------------------------------------------------------------------------------------
# Parsing and comparison


def load_yaml_both(text):
    """(docs_1_1, docs_1_2); both must parse and agree."""
    d11 = [d for d in yaml.safe_load_all(text)]
    y = YAML(typ="safe", pure=True)
    d12 = [d for d in y.load_all(text)]
    if d11 != d12:
        raise AssertionError("YAML 1.1 and 1.2 parsers disagree: %r vs %r" % (short(d11), short(d12)))
    return d11


def short(x, n=300):
    s = repr(x)
    return s if len(s) <= n else s[:n] + "..."


def compare(base, got, v, path="$"):
    """Every string of `got` is the baseline's with BENIGN replaced by v."""
    if isinstance(base, str):
        want = base.replace(BENIGN, v)
        if re.search(r"\.config\.env\.[^.]+$", path) and isinstance(got, str):
            got = got.replace("$$", "$")  # a spec's env value writes a literal '$' as "$$"
        if got != want:
            raise AssertionError("%s: %s, want %s" % (path, short(got, 160), short(want, 160)))
        return
    if isinstance(base, dict):
        if not isinstance(got, dict):
            raise AssertionError("%s: %s is not a mapping" % (path, short(got)))
        want_keys = {(k.replace(BENIGN, v) if isinstance(k, str) else k): k for k in base}
        if set(want_keys) != set(got):
            raise AssertionError("%s: keys %s, want %s" % (path, short(sorted(map(str, got))),
                                                            short(sorted(map(str, want_keys)))))
        for wk, bk in want_keys.items():
            compare(base[bk], got[wk], v, "%s.%s" % (path, wk if isinstance(wk, str) else repr(wk)))
        return
    if isinstance(base, list):
        if not isinstance(got, list) or len(got) != len(base):
            raise AssertionError("%s: %s, want a list of %d" % (path, short(got), len(base)))
        for i, (b, g) in enumerate(zip(base, got)):
            compare(b, g, v, "%s[%d]" % (path, i))
        return
    if base != got or type(base) is not type(got):
        raise AssertionError("%s: %s, want %s" % (path, short(got), short(base)))


def strings(x):
    if isinstance(x, str):
        yield x
    elif isinstance(x, dict):
        for k, val in x.items():
            if isinstance(k, str):
                yield k
            yield from strings(val)
    elif isinstance(x, list):
        for i in x:
            yield from strings(i)


GITLAB_VAR = re.compile(r"\$(\$|\{[A-Za-z_][A-Za-z0-9_]*\}|[A-Za-z_][A-Za-z0-9_]*)")


def gitlab_effective(doc):
    """The doc with `variables:` values as GitLab sets them ($$ is a literal $, a
    variable reference is expanded: shown as <expanded NAME>)."""
    def value(x):
        if isinstance(x, dict) and "value" in x:
            if x.get("expand") is False:
                return x["value"]
            x = x["value"]
        if not isinstance(x, str):
            return x
        return GITLAB_VAR.sub(lambda m: "$" if m.group(1) == "$" else "<expanded %s>" % m.group(1), x)

    def walk(x, key=None):
        if isinstance(x, dict):
            return {k: ({n: value(val) for n, val in v.items()} if k == "variables" and isinstance(v, dict)
                        else walk(v, k)) for k, v in x.items()}
        if isinstance(x, list):
            return [walk(i) for i in x]
        return x
    return [walk(d) for d in doc]


def dockerfile_instructions(text):
    """Logical lines of a Dockerfile: (INSTRUCTION, rest) with comments dropped and
    backslash continuations joined, as BuildKit reads them (default escape)."""
    out, cur = [], ""
    for line in text.split("\n"):
        if not cur and line.lstrip().startswith("#"):
            continue
        if cur and line.lstrip().startswith("#"):
            continue  # a comment inside a continuation is skipped
        if line.rstrip().endswith("\\"):
            cur += line.rstrip()[:-1]
            continue
        cur += line
        if cur.strip():
            word, _, rest = cur.strip().partition(" ")
            out.append((word.upper(), rest))
        cur = ""
    if cur.strip():
        out.append(("<unterminated>", cur))
    return out


# ---------------------------------------------------------------------------------------
# Running CI scripts


STUBS = ["paddle-image", "apt-get", "git", "install", "diff"]


def run_ci_scripts(kind, docs, work):
    """Runs every run:/script: line with its env; returns PLANTED files created."""
    jobs = []
    d = docs[0] if docs else {}
    if kind == "gha":
        for job in (d.get("jobs") or {}).values():
            env = dict(job.get("env") or {})
            for step in job.get("steps") or []:
                if "run" in step:
                    e = dict(env)
                    e.update(step.get("env") or {})
                    jobs.append((step["run"], e))
    else:
        env = dict(gitlab_effective([d])[0].get("variables") or {})
        for name, job in d.items():
            if isinstance(job, dict) and "script" in job:
                for line in job["script"]:
                    jobs.append((line, dict(env)))
    box = tempfile.mkdtemp(dir=work, prefix="ci-")
    stub = os.path.join(box, "stubs")
    os.mkdir(stub)
    for s in STUBS:
        p = os.path.join(stub, s)
        with open(p, "w") as f:
            f.write("#!/bin/sh\nexit 0\n")
        os.chmod(p, 0o755)
    run_dir = os.path.join(box, "run")
    os.mkdir(run_dir)
    for script, env in jobs:
        e = {"PATH": stub + ":/usr/bin:/bin", "HOME": run_dir, "GITHUB_OUTPUT": os.path.join(run_dir, "out"),
             "GITHUB_SHA": "0" * 40, "CI_COMMIT_SHORT_SHA": "0" * 8}
        for k, v in env.items():
            v = "" if v is None else str(v)
            if "${{" in v:
                v = ""  # GitHub expressions are the runner's; the test has no secrets
            if "\0" in v or "\0" in k:
                continue
            e[str(k)] = v
        subprocess.run(["bash", "-c", script], cwd=run_dir, env=e, stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30, check=False)
    planted = [n for n in os.listdir(run_dir) if n.startswith("PLANTED")]
    shutil.rmtree(box, ignore_errors=True)
    return planted


# ---------------------------------------------------------------------------------------
# Slots


class Ctx:
    def __init__(self, args):
        self.pi = os.path.abspath(args.pi)
        self.work = os.path.abspath(args.work)
        self.registry = args.registry
        self.facts = None  # oci:DIR:TAG of an image for render k8s-*
        self.image_ref = None  # REGISTRY/REPO@DIGEST for warm manifests
        self.buildah = args.buildah


def write(path, text):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(text)


def base_spec():
    return {
        "image": {"name": "registry.example.com/team/app", "tags": ["v1"]},
        "base": "scratch",
        "python": {"version": "3.11", "glibc": "2.36"},
        "layers": [
            {"name": "deps", "wheels": {"lock": "requirements.lock", "index": "https://mirror.example/simple"}},
            {"name": "app", "files": [{"from": "src/", "to": "/app/"}]},
        ],
        "config": {"cmd": ["python3", "/app/train.py"], "env": {"NCCL_DEBUG": "WARN"}},
    }


def project(d, spec, spec_name="spec.yaml"):
    write(os.path.join(d, "src", "train.py"), "print(1)\n")
    write(os.path.join(d, "requirements.txt"), "numpy==1.26.4\n")
    write(os.path.join(d, "requirements.lock"), "# lock\n")
    # JSON is YAML: every value double-quoted with escapes, as a careful user would write it.
    write(os.path.join(d, spec_name), json.dumps(spec, ensure_ascii=True, indent=1) + "\n")


class Slot:
    """name, fmt (gha | gitlab | yaml | k8s | dockerfile | toml | init), and
    make(ctx, d, v) -> (argv, output path relative to d) or None (not applicable)."""

    def __init__(self, name, fmt, make):
        self.name, self.fmt, self.make = name, fmt, make
        self.names_carry_value = False  # output file names hold the value (hosts/<host>/)
        self.unmapped_ok = False  # init --from-dockerfile may list the line instead


def ci_slot(name, fmt, edit):
    kind = "github-actions" if fmt == "gha" else "gitlab-ci"

    def make(ctx, d, v):
        spec = base_spec()
        r = edit(spec, d, v)
        if r is None:
            return None
        spec_name, extra = r
        project(d, spec, spec_name)
        return [ctx.pi, "render", kind, spec_name, "-o", "out.yml"] + extra, "out.yml"
    return Slot(name, fmt, make)


def ci_slots():
    def spec_path(spec, d, v):
        f = file_safe(v)
        return None if f is None or f != v else ("spec-%s.yaml" % f, ["--requirements", "requirements.txt"])

    def req_path(spec, d, v):
        f = file_safe(v)
        if f is None or f != v:
            return None
        write(os.path.join(d, "req-%s.txt" % f), "numpy==1.26.4\n")
        return "spec.yaml", ["--requirements", "req-%s.txt" % f]

    def layer_name(spec, d, v):
        spec["layers"][0]["name"] = v
        return "spec.yaml", ["--requirements", "requirements.txt", "--layer", v]

    def lock_path(spec, d, v):
        f = file_safe(v)
        if f is None or f != v:
            return None
        spec["layers"][0]["wheels"]["lock"] = "lock-%s.lock" % f
        write(os.path.join(d, "lock-%s.lock" % f), "# lock\n")
        return "spec.yaml", ["--requirements", "requirements.txt"]

    def image_name(spec, d, v):
        spec["image"]["name"] = "registry.example.com/team/" + v
        return "spec.yaml", []

    def image_flag(spec, d, v):
        return "spec.yaml", ["--image", "registry.example.com/team/" + v]

    out = []
    for fmt in ("gha", "gitlab"):
        for n, e in (("spec path", spec_path), ("--requirements path", req_path), ("layer name", layer_name),
                     ("wheels.lock path", lock_path), ("image.name", image_name), ("--image", image_flag)):
            out.append(ci_slot("%s %s" % (fmt, n), fmt, e))
    return out


def docker_project(ctx, d, v, edits):
    """A scratch spec with every config field set, each edit applied; the Dockerfile
    render command. None when an edit cannot take v."""
    spec = base_spec()
    spec.pop("python")
    spec["layers"] = [{"name": "app", "files": [{"from": "src/", "to": "/app/"}]}]
    spec["config"] = {"env": {"K": "x"}, "labels": {"k": "x"}, "cmd": ["/app/train.py"],
                      "entrypoint": ["/bin/run"], "workdir": "/app", "user": "1000"}
    spec_name = "spec.yaml"
    for edit in edits:
        r = edit(spec, d, v)
        if r is None:
            return None
        if r != "spec.yaml":
            spec_name = r
    project(d, spec, spec_name)
    return [ctx.pi, "render", "dockerfile", spec_name, "-o", "Dockerfile"], "Dockerfile"


def dockerfile_slots():
    def slot(name, edit):
        s = Slot("dockerfile " + name, "dockerfile", lambda ctx, d, v: docker_project(ctx, d, v, [edit]))
        s.edit = edit
        return s

    def cfg(key, val):
        def e(spec, d, v):
            spec["config"][key] = val(v)
            return "spec.yaml"
        return e

    def copy_from(spec, d, v):
        f = file_safe(v)
        if f is None or f != v:
            return None
        write(os.path.join(d, "files", f), "data\n")
        spec["layers"][0]["files"].append({"from": "files/" + f, "to": "/data/x"})
        return "spec.yaml"

    def copy_to(spec, d, v):
        spec["layers"][0]["files"].append({"from": "src/", "to": "/opt/" + v + "/"})
        return "spec.yaml"

    def spec_path(spec, d, v):
        f = file_safe(v)
        return None if f is None or f != v else "spec-%s.yaml" % f

    def layer_name(spec, d, v):
        spec["layers"][0]["name"] = v
        return "spec.yaml"

    def image_meta(spec, d, v):
        spec["image"]["version"] = v
        spec["image"]["source"] = "https://git.example.com/" + v
        return "spec.yaml"

    return [
        # a spec's env value writes a literal '$' as "$$" ($NAME is a reference)
        slot("env value", cfg("env", lambda v: {"K": v.replace("$", "$$")})),
        slot("env name", cfg("env", lambda v: {v: "x"})),
        slot("label value", cfg("labels", lambda v: {"k": v})),
        slot("label key", cfg("labels", lambda v: {v: "x"})),
        slot("entrypoint", cfg("entrypoint", lambda v: ["/bin/run", v])),
        slot("cmd", cfg("cmd", lambda v: [v])),
        slot("workdir", cfg("workdir", lambda v: "/w/" + v)),
        slot("user", cfg("user", lambda v: v)),
        slot("COPY source", copy_from),
        slot("COPY destination", copy_to),
        slot("spec path", spec_path),
        slot("layer name", layer_name),
        slot("image version/source", image_meta),
    ]


def k8s_slots():
    def slot(name, kind, flags, spec_edit=None):
        def make(ctx, d, v):
            spec = base_spec()
            spec["layers"] = [{"name": "app", "files": [{"from": "src/", "to": "/app/"}]}]
            spec.pop("python")
            if spec_edit:
                spec_edit(spec, v)
            project(d, spec)
            argv = [ctx.pi, "render", kind, "spec.yaml", "--image", ctx.image_digest_ref, "--facts", ctx.facts,
                    "-o", "out.yaml"] + flags(v)
            return argv, "out.yaml"
        return Slot("%s %s" % (kind, name), "k8s", make)

    return [
        slot("--name", "k8s-job", lambda v: ["--name", v]),
        slot("--namespace", "k8s-job", lambda v: ["--namespace", v]),
        slot("--env value", "k8s-job", lambda v: ["--env", "K=" + v]),
        slot("--env name", "k8s-job", lambda v: ["--env", v + "=x"]),
        slot("--node-selector value", "k8s-job", lambda v: ["--node-selector", "team=" + v]),
        slot("--toleration", "k8s-job", lambda v: ["--toleration", v]),
        slot("--service-account", "k8s-job", lambda v: ["--service-account", v]),
        slot("--checkpoint-path", "k8s-job", lambda v: ["--checkpoint-path", "/ckpt/" + v]),
        slot("--checkpoint-pvc", "k8s-job", lambda v: ["--checkpoint-pvc", v]),
        slot("--gpu-product", "k8s-job", lambda v: ["--gpu-product", v]),
        slot("spec env value", "k8s-job", lambda v: [],
             lambda spec, v: spec["config"]["env"].update({"NCCL_DEBUG": v.replace("$", "$$")})),
        slot("--train-arg", "paddle-distributed", lambda v: ["--train-arg", "/app/train.py", "--train-arg", v]),
        slot("--name", "paddle-distributed", lambda v: ["--name", v]),
    ]


def warm_slots():
    def slot(name, flags, kind="daemonset"):
        def make(ctx, d, v):
            if not ctx.image_ref:
                return None
            argv = [ctx.pi, "warm", "manifests", ctx.image_ref, "--kind", kind, "--insecure",
                    "--pause-image", ctx.image_ref, "-o", "out.yaml"] + flags(v)
            return argv, "out.yaml"
        return Slot("warm manifests %s %s" % (kind, name), "k8s", make)

    return [
        slot("--name", lambda v: ["--name", v]),
        slot("--namespace", lambda v: ["--namespace", v]),
        slot("--node-selector value", lambda v: ["--node-selector", "team=" + v]),
        slot("--toleration", lambda v: ["--toleration", v]),
        slot("--command JSON", lambda v: ["--command", json.dumps(["/bin/sh", "-c", v])]),
        slot("--pull-secret", lambda v: ["--pull-secret", v]),
        slot("--name", lambda v: ["--name", v], "imagepulljob"),
        slot("--node-selector value", lambda v: ["--node-selector", "team=" + v], "imagecache"),
    ]


def hosts_slots():
    def slot(name, flags, names_carry_value=False):
        def make(ctx, d, v):
            return [ctx.pi, "warm", "hosts", "-o", "hosts"] + flags(v), "hosts"
        s = Slot("warm hosts " + name, "toml", make)
        s.names_carry_value = names_carry_value
        return s

    return [
        slot("--mirror path", lambda v: ["--upstream", "registry.example.com", "--mirror",
                                         "https://mirror.example/" + v]),
        slot("--upstream", lambda v: ["--upstream", v, "--mirror", "https://mirror.example"], True),
        slot("--certs-dir", lambda v: ["--upstream", "registry.example.com", "--mirror", "https://mirror.example",
                                       "--certs-dir", "/etc/certs/" + v]),
    ]


def init_slots():
    def dir_name(ctx, d, v):
        f = file_safe(v)
        if f is None or f != v:
            return None
        return [ctx.pi, "init", "ocr-train", f, "--image", "registry.example.com/team/app"], f

    def image(ctx, d, v):
        return [ctx.pi, "init", "ocr-train", "proj", "--image", "registry.example.com/team/" + v], "proj"

    def from_dockerfile(name, line):
        def make(ctx, d, v):
            text = line(v)
            if text is None:
                return None
            write(os.path.join(d, "Dockerfile"), "FROM python:3.11\nCOPY requirements.txt .\n"
                  "RUN pip install -r requirements.txt\n" + text + "\n")
            write(os.path.join(d, "requirements.txt"), "numpy==1.26.4\n")
            return [ctx.pi, "init", "--from-dockerfile", "Dockerfile", "proj", "--json"], "proj"
        s = Slot("init --from-dockerfile " + name, "init", make)
        s.unmapped_ok = True
        return s

    def dq(v):
        """A Dockerfile double-quoted word, or None when a Dockerfile line cannot hold v.
        Inside double quotes Docker's lexer expands $NAME: a literal '$' is written \\$."""
        if any(c in v for c in "\n\r\0"):
            return None
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$") + '"'

    def json_word(v):
        return None if any(c in v for c in "\n\r\0") else json.dumps(v)

    return [
        Slot("init DIR", "init", dir_name),
        Slot("init --image", "init", image),
        from_dockerfile("ENV value", lambda v: None if dq(v) is None else "ENV K=" + dq(v)),
        from_dockerfile("LABEL value", lambda v: None if dq(v) is None else "LABEL k=" + dq(v)),
        from_dockerfile("WORKDIR", lambda v: None if dq(v) is None else "WORKDIR " + dq("/w/" + v)),
        # USER takes one word, with Docker's quote and variable processing: plain words only.
        from_dockerfile("USER", lambda v: "USER " + v if re.fullmatch(r"[^\s'\"\\$`]+", v) else None),
        from_dockerfile("ENTRYPOINT", lambda v: None if json_word(v) is None else
                        "ENTRYPOINT [\"/bin/run\", " + json_word(v) + "]"),
        from_dockerfile("CMD", lambda v: None if json_word(v) is None else "CMD [" + json_word(v) + "]"),
    ]


# ---------------------------------------------------------------------------------------
# Checking one output


def read_output(d, rel, fmt):
    """{relative file: text} of what the command wrote."""
    p = os.path.join(d, rel)
    if os.path.isdir(p):
        out = {}
        for root, _, files in os.walk(p):
            for f in files:
                full = os.path.join(root, f)
                r = os.path.relpath(full, p)
                with open(full, encoding="utf-8", errors="surrogateescape") as fh:
                    out[r] = fh.read()
        return out
    with open(p, encoding="utf-8", errors="surrogateescape") as fh:
        return {"": fh.read()}


def rename_keys(files, v):
    """Output files whose names carry the value (init DIR, hosts.toml's host) keyed as
    the baseline's."""
    return {k.replace(v, BENIGN) if v else k: t for k, t in files.items()}


def parse(fmt, name, text):
    if fmt == "toml" or name.endswith(".toml"):
        return [tomllib.loads(text)]
    if fmt == "dockerfile" or name.endswith("Dockerfile"):
        return [dockerfile_instructions(text)]
    if name.endswith((".yaml", ".yml")) or fmt in ("gha", "gitlab", "k8s", "yaml"):
        return load_yaml_both(text)
    return [text]


def ci_kind(fmt, name):
    if fmt in ("gha", "gitlab"):
        return fmt
    if name.endswith(".github/workflows/build.yml"):
        return "gha"
    if name.endswith(".gitlab-ci.yml"):
        return "gitlab"
    return None


def check_output(ctx, slot, v, base_files, files, d):
    if slot.names_carry_value:
        files = rename_keys(files, file_safe(v) or "")
    if set(files) != set(base_files):
        raise AssertionError("files %s, want %s" % (sorted(files), sorted(base_files)))
    for name, text in files.items():
        base_docs = parse(slot.fmt, name, base_files[name])
        docs = parse(slot.fmt, name, text)
        kind = ci_kind(slot.fmt, name)
        if name.endswith(("README.md", ".txt", ".py", ".lock", "ignore")):
            continue  # prose and the user's own files: not a structured format
        if slot.fmt == "dockerfile":
            if [i for i, _ in docs[0]] != [i for i, _ in base_docs[0]]:
                raise AssertionError("instructions %s, want %s" % ([i for i, _ in docs[0]],
                                                                   [i for i, _ in base_docs[0]]))
            continue
        if kind == "gitlab":
            compare(gitlab_effective(base_docs), gitlab_effective(docs), v)
        else:
            compare(base_docs, docs, v)
        if kind == "gha":
            extra = {s for s in strings(docs) if "${{" in s} - {s for s in strings(base_docs) if "${{" in s}
            if extra:
                raise AssertionError("a GitHub expression the template did not write: %s" % short(sorted(extra)))
        if kind:
            planted = run_ci_scripts(kind, docs, ctx.work)
            if planted:
                raise AssertionError("running the CI steps created %s" % planted)
        if slot.fmt == "k8s":
            problems = k8s_problems(os.path.join(d, "out.yaml"))
            if problems:
                raise AssertionError("k8s_validate: " + "\n".join(problems)[:400])


_K8S_CHECKER = []


def k8s_problems(path):
    """k8s_validate.py's problem lines for one file, in this process: the schemas are read
    and their validators compiled once for the run, not once a file (a new interpreter
    per file cost 0.26 CPU s, most of hostile.k8s)."""
    if not _K8S_CHECKER:
        _K8S_CHECKER.append(k8s_validate.Checker(os.path.join(HERE, "k8s-schemas")))
    lines, _ = k8s_validate.validate_files([path], None, checker=_K8S_CHECKER[0])
    return lines


# ---------------------------------------------------------------------------------------
# buildah: the Dockerfiles that rendered, built, their configs compared


def buildah_config(ctx, d, tag):
    root = os.path.join(ctx.work, "buildah")
    common = ["buildah", "--root", os.path.join(root, "root"), "--runroot", os.path.join(root, "run"),
              "--storage-driver", "vfs"]
    p = subprocess.run(common + ["bud", "-q", "--layers=false", "-f", os.path.join(d, "Dockerfile"), "-t", tag, d],
                       capture_output=True, text=True, check=False, timeout=300)
    if p.returncode != 0:
        raise AssertionError("buildah bud: " + (p.stderr.strip().splitlines() or ["?"])[-1][:300])
    p = subprocess.run(common + ["inspect", "--type", "image", tag], capture_output=True, text=True, check=True)
    cfg = json.loads(p.stdout)["OCIv1"]["config"]
    subprocess.run(common + ["rmi", "-f", tag], capture_output=True, check=False)
    return {k: cfg.get(k) for k in ("Env", "Labels", "Entrypoint", "Cmd", "WorkingDir", "User")}


# The families of slots, each one test (--family).
FAMILIES = {
    "ci": (ci_slots,),
    "dockerfile": (dockerfile_slots,),
    "k8s": (k8s_slots,),
    "warm": (warm_slots, hosts_slots),
    "init": (init_slots,),
}

# ---------------------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pi", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--registry", help="HOST:PORT of an open registry for warm manifests")
    ap.add_argument("--buildah", action="store_true", help="build the rendered Dockerfiles")
    ap.add_argument("--family", choices=sorted(FAMILIES), help="run one family of slots")
    ap.add_argument("--only", help="run the slots whose name contains this")
    ap.add_argument("--values", help="comma-separated hostile value names")
    args = ap.parse_args()
    ctx = Ctx(args)
    os.makedirs(ctx.work, exist_ok=True)

    # An image whose labels render k8s-* reads (--facts), and one in the registry for warm.
    setup = os.path.join(ctx.work, "setup")
    spec = base_spec()
    spec.pop("python")
    spec["layers"] = [{"name": "app", "files": [{"from": "src/", "to": "/app/"}]}]
    spec["requires"] = {"cuda": "12.0", "gpu_archs": ["sm_80"]}
    project(setup, spec)
    p = subprocess.run([ctx.pi, "build", "spec.yaml", "-q", "-o", "oci:img:v1"], cwd=setup, capture_output=True,
                       text=True, check=True)
    digest = p.stdout.strip().rsplit("@", 1)[-1]
    ctx.facts = "oci:" + os.path.join(setup, "img") + ":v1"
    ctx.image_digest_ref = "registry.example.com/team/app@" + digest
    if ctx.registry:
        subprocess.run([ctx.pi, "push", "oci:img:v1", ctx.registry + "/team/app:v1", "--insecure", "-q"], cwd=setup,
                       check=True, capture_output=True)
        ctx.image_ref = ctx.registry + "/team/app@" + digest

    families = [args.family] if args.family else list(FAMILIES)
    slots = [slot for f in families for make in FAMILIES[f] for slot in make()]
    if args.only:
        slots = [s for s in slots if args.only in s.name]
    values = HOSTILE
    if args.values:
        values = [h for h in HOSTILE if h[0] in args.values.split(",")]

    failures, n_ok, n_refused, n_na = [], 0, 0, 0
    accepted_docker = {}  # value name -> list of dockerfile slot dirs that rendered
    for si, slot in enumerate(slots):
        marks = []
        base_dir = os.path.join(ctx.work, "s%02d-base" % si)
        os.makedirs(base_dir, exist_ok=True)
        r = slot.make(ctx, base_dir, BENIGN)
        if r is None:
            print("%-46s skipped (needs --registry)" % slot.name)
            continue
        argv, rel = r
        p = subprocess.run(argv, cwd=base_dir, capture_output=True, text=True, timeout=120, check=False)
        if p.returncode != 0:
            failures.append("%s: the benign baseline failed (exit %d): %s" % (slot.name, p.returncode,
                                                                               p.stderr.strip()[-300:]))
            print("%-46s BASELINE FAILED" % slot.name)
            continue
        base_files = read_output(base_dir, rel, slot.fmt)
        if slot.names_carry_value:
            base_files = rename_keys(base_files, BENIGN)
        for vname, v in values:
            d = os.path.join(ctx.work, "s%02d-%s" % (si, vname))
            os.makedirs(d, exist_ok=True)
            r = slot.make(ctx, d, v)
            if r is None:
                marks.append("-")
                n_na += 1
                continue
            argv, rel = r
            try:
                p = subprocess.run(argv, cwd=d, capture_output=True, timeout=120, check=False)
            except ValueError:
                marks.append("-")  # an argument with NUL cannot be passed at all
                n_na += 1
                continue
            err = p.stderr.decode("utf-8", "replace")
            if p.returncode in (2, 3):
                if "error:" not in err:
                    failures.append("%s / %s: exit %d without an error message" % (slot.name, vname, p.returncode))
                    marks.append("F")
                elif os.path.exists(os.path.join(d, rel)) and rel not in ("proj",):
                    failures.append("%s / %s: refused (exit %d) but wrote %s" % (slot.name, vname, p.returncode, rel))
                    marks.append("F")
                else:
                    marks.append("r")
                    n_refused += 1
                shutil.rmtree(d, ignore_errors=True)
                continue
            if p.returncode != 0:
                failures.append("%s / %s: exit %d: %s" % (slot.name, vname, p.returncode, err.strip()[-300:]))
                marks.append("F")
                continue
            if slot.unmapped_ok:
                # The Dockerfile's line 4 (the one with the value) listed as not mapped,
                # and the value nowhere in the spec: a refusal, said the init way.
                report = json.loads(p.stdout.decode("utf-8", "replace") or "{}")
                listed = any(u.get("line") == 4 for u in report.get("unmapped", []))
                with open(os.path.join(d, "proj", "spec.yaml"), encoding="utf-8") as fh:
                    spec_docs = load_yaml_both(fh.read())
                if listed and not any(v in x for x in strings(spec_docs)):
                    marks.append("u")
                    n_refused += 1
                    shutil.rmtree(d, ignore_errors=True)
                    continue
            try:
                files = read_output(d, rel, slot.fmt)
                check_output(ctx, slot, v, base_files, files, d)
            except Exception as e:  # noqa: BLE001 - every kind of wrong output is one failure
                failures.append("%s / %s: %s" % (slot.name, vname, str(e)[:600]))
                marks.append("F")
                continue
            marks.append(".")
            n_ok += 1
            if slot.fmt == "dockerfile":
                accepted_docker.setdefault(si, []).append((vname, v, d))
            else:
                shutil.rmtree(d, ignore_errors=True)
        print("%-46s %s" % (slot.name, "".join(marks)))

    if ctx.buildah:
        # One build per value with that value in every Dockerfile slot that took it,
        # against a baseline with the benign value in the same slots.
        by_value = {}
        for si, runs in accepted_docker.items():
            for vname, v, d in runs:
                by_value.setdefault((vname, v), []).append(si)
                shutil.rmtree(d, ignore_errors=True)
        baselines, built = {}, 0
        for (vname, v), sis in by_value.items():
            edits = [slots[si].edit for si in sis]
            names = ", ".join(slots[si].name for si in sis)
            try:
                key = tuple(sis)
                if key not in baselines:
                    bd = os.path.join(ctx.work, "docker-base-%d" % len(baselines))
                    argv, _ = docker_project(ctx, bd, BENIGN, edits)
                    subprocess.run(argv, cwd=bd, check=True, capture_output=True)
                    baselines[key] = buildah_config(ctx, bd, "localhost/hostile/base:%d" % len(baselines))
                d = os.path.join(ctx.work, "docker-%s" % vname)
                argv, _ = docker_project(ctx, d, v, edits)
                p = subprocess.run(argv, cwd=d, capture_output=True, check=False)
                if p.returncode != 0:
                    raise AssertionError("rendering with the value in all of them: exit %d" % p.returncode)
                compare(baselines[key], buildah_config(ctx, d, "localhost/hostile/v:1"), v)
                built += 1
                shutil.rmtree(d, ignore_errors=True)
            except Exception as e:  # noqa: BLE001
                failures.append("buildah / %s (in %s): %s" % (vname, names, str(e)[:400]))
        print("buildah built %d rendered Dockerfiles (a value in every slot that took it) and compared "
              "their image configs with the baseline's" % built)

    print("columns: %s" % " ".join(n for n, _ in values))
    print(". round-trips   r refused (exit 2/3)   u listed as not mapped (init --from-dockerfile)   "
          "- cannot be expressed in that slot   F failed")
    print("%d round-tripped, %d refused, %d not applicable, %d failed" % (n_ok, n_refused, n_na, len(failures)))
    for f in failures:
        print("FAIL " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
