#!/usr/bin/python3
"""Runs the build step of a rendered CI file under several CI contexts and checks the
registry build cache it hands to `paddle-image build` (docs/templates.md, "Registry build
cache in CI"): PADDLE_IMAGE_CACHE_FROM is IMAGE/cache in every pipeline, and
PADDLE_IMAGE_CACHE_TO is IMAGE/cache only on a push to a protected branch (GitHub) or a
protected branch's pipeline that is no merge request pipeline (GitLab); anywhere else it
is unset or empty, even when the runner's environment already had one.

Usage: ci_cache_step.py github|gitlab FILE
The step is the one whose script runs `paddle-image build`. GitHub: its `env:` values are
evaluated as the runner would (`${{ }}` with &&, ||, !, ==, !=, format(), contexts github,
env, secrets) over the job's env, then `run:` runs with bash -e. GitLab: the file's
`variables:` ($$ read as $) and the CI variables of the context, then the script item runs
with sh -e. `paddle-image` is a stub on PATH that records its environment and arguments.
Exit 0 when every context gives what it should (one line per context), 1 otherwise.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

import yaml

STUB = r"""#!/usr/bin/python3
import json, os, sys
keys = ("PADDLE_IMAGE_CACHE_FROM", "PADDLE_IMAGE_CACHE_TO")
with open(os.environ["STUB_OUT"], "a") as f:
    f.write(json.dumps({"argv": sys.argv[1:], "env": {k: os.environ.get(k) for k in keys}}) + "\n")
open("digest.txt", "w").write("sha256:" + "0" * 64)
"""

# (event_name, ref_protected, writes?)
GITHUB_CONTEXTS = [
    ("push", True, True),
    ("push", False, False),
    ("pull_request", True, False),
    ("pull_request", False, False),
    ("pull_request_target", True, False),
    ("workflow_dispatch", True, False),
    ("schedule", True, False),
]
# (description, CI variables, writes?)
GITLAB_CONTEXTS = [
    ("protected branch", {"CI_COMMIT_REF_PROTECTED": "true", "CI_PIPELINE_SOURCE": "push"}, True),
    ("unprotected branch", {"CI_COMMIT_REF_PROTECTED": "false", "CI_PIPELINE_SOURCE": "push"}, False),
    ("no CI_COMMIT_REF_PROTECTED", {"CI_PIPELINE_SOURCE": "push"}, False),
    ("merge request from a fork", {"CI_COMMIT_REF_PROTECTED": "true", "CI_PIPELINE_SOURCE": "merge_request_event",
                                   "CI_MERGE_REQUEST_IID": "7", "CI_MERGE_REQUEST_SOURCE_PROJECT_ID": "99",
                                   "CI_MERGE_REQUEST_PROJECT_ID": "1", "CI_PROJECT_ID": "1"}, False),
    ("merge request in the project", {"CI_COMMIT_REF_PROTECTED": "true", "CI_PIPELINE_SOURCE": "merge_request_event",
                                      "CI_MERGE_REQUEST_IID": "8", "CI_MERGE_REQUEST_SOURCE_PROJECT_ID": "1",
                                      "CI_MERGE_REQUEST_PROJECT_ID": "1", "CI_PROJECT_ID": "1"}, False),
]


# --- GitHub expressions: the subset the templates use, mapped onto Python ------------------

TOKEN = re.compile(r"\s*(?:(?P<str>'(?:[^']|'')*')|(?P<op>&&|\|\||==|!=|!|\(|\)|,)"
                   r"|(?P<name>[A-Za-z_][A-Za-z0-9_-]*(?:\.[A-Za-z_][A-Za-z0-9_-]*)*)|(?P<num>[0-9]+))")


def gh_format(fmt, *args):
    return re.sub(r"\{(\d+)\}", lambda m: str(args[int(m.group(1))]), fmt)


def gh_expression(body, ctx):
    out, i = [], 0
    body = body.strip()
    while i < len(body):
        m = TOKEN.match(body, i)
        if not m or m.end() == i:
            raise ValueError(f"cannot read the expression at {body[i:]!r}")
        i = m.end()
        if m.group("str") is not None:
            out.append(repr(m.group("str")[1:-1].replace("''", "'")))
        elif m.group("op") is not None:
            out.append({"&&": " and ", "||": " or ", "!": " not "}.get(m.group("op"), m.group("op")))
        elif m.group("num") is not None:
            out.append(m.group("num"))
        else:
            name = m.group("name")
            if name in ("true", "false", "null"):
                out.append({"true": "True", "false": "False", "null": "None"}[name])
            elif name == "format":
                out.append("_format")
            else:
                value = ctx
                for part in name.split("."):
                    value = value.get(part) if isinstance(value, dict) else None
                out.append(repr(value))
    return eval("".join(out), {"__builtins__": {}, "_format": gh_format})  # noqa: S307 (a test's own text)


def gh_value(value, ctx):
    """A step env value as the runner sets it: a whole `${{ }}` evaluated, text as it is."""
    value = str(value)
    m = re.fullmatch(r"\$\{\{(.*)\}\}", value.strip(), re.S)
    if m:
        v = gh_expression(m.group(1), ctx)
        return "" if v is None or v is False else ("true" if v is True else str(v))
    if "${{" in value:
        raise ValueError(f"an expression inside text is not handled here: {value!r}")
    return value


def build_step_github(doc):
    job = doc["jobs"]["build"]
    step = next(s for s in job["steps"] if "paddle-image build" in s.get("run", ""))
    return job.get("env", {}), step


def build_script_gitlab(doc):
    job = doc["build-image"]
    return next(s for s in job["script"] if "paddle-image build" in s)


# --- running a step ---------------------------------------------------------------------------

def run(shell, script, env, work):
    out = os.path.join(work, "stub.jsonl")
    if os.path.exists(out):
        os.remove(out)
    bindir = os.path.join(work, "bin")
    os.makedirs(bindir, exist_ok=True)
    stub = os.path.join(bindir, "paddle-image")
    with open(stub, "w") as f:
        f.write(STUB)
    os.chmod(stub, 0o755)
    full = {"PATH": bindir + ":/usr/bin:/bin", "HOME": work, "STUB_OUT": out,
            # what a runner might already carry: the step must override it
            "PADDLE_IMAGE_CACHE_TO": "attacker.example/planted", **env}
    r = subprocess.run([shell, "-e", "-c", script], cwd=work, env=full, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"the step failed (exit {r.returncode}): {r.stderr.strip()[-300:]}")
    calls = [json.loads(line) for line in open(out)] if os.path.exists(out) else []
    builds = [c for c in calls if c["argv"][:1] == ["build"]]
    if len(builds) != 1:
        raise RuntimeError(f"paddle-image build ran {len(builds)} times")
    return builds[0]["env"]


def judge(name, got, image, writes):
    want_from = image + "/cache"
    problems = []
    if got["PADDLE_IMAGE_CACHE_FROM"] != want_from:
        problems.append(f"PADDLE_IMAGE_CACHE_FROM is {got['PADDLE_IMAGE_CACHE_FROM']!r}, want {want_from!r}")
    to = got["PADDLE_IMAGE_CACHE_TO"] or ""
    if writes and to != want_from:
        problems.append(f"PADDLE_IMAGE_CACHE_TO is {to!r}, want {want_from!r}")
    if not writes and to:
        problems.append(f"PADDLE_IMAGE_CACHE_TO is {to!r}: this pipeline must not write the cache")
    return [f"{name}: {p}" for p in problems]


def check_github(doc, work):
    job_env, step = build_step_github(doc)
    image = str(job_env["IMAGE"])
    problems = []
    for event, protected, writes in GITHUB_CONTEXTS:
        name = f"github event {event}, ref_protected {str(protected).lower()}"
        ctx = {"github": {"event_name": event, "ref_protected": protected, "sha": "0" * 40},
               "env": {k: str(v) for k, v in job_env.items()},
               "secrets": {"COSIGN_KEY": "key", "COSIGN_PASSWORD": "pw", "REGISTRY_USER": "u", "REGISTRY_PASSWORD": "p"},
               "vars": {}}
        env = dict(ctx["env"])
        for k, v in (step.get("env") or {}).items():
            env[k] = gh_value(v, ctx)
        env.update({"GITHUB_SHA": "0" * 40, "GITHUB_OUTPUT": os.path.join(work, "github_output")})
        got = run("bash", step["run"], env, work)
        p = judge(name, got, image, writes)
        problems += p
        print(f"{'FAIL' if p else 'ok'} - {name}: cache-to {got['PADDLE_IMAGE_CACHE_TO'] or '(none)'}")
    return problems


def check_gitlab(doc, work):
    variables = {k: str(v).replace("$$", "$") for k, v in (doc.get("variables") or {}).items()}
    script = build_script_gitlab(doc)
    image = variables["IMAGE"]
    problems = []
    for name, ci, writes in GITLAB_CONTEXTS:
        env = dict(variables, CI_COMMIT_SHORT_SHA="0123abcd", COSIGN_KEY=os.path.join(work, "cosign.key"), **ci)
        got = run("sh", script, env, work)
        p = judge("gitlab " + name, got, image, writes)
        problems += p
        print(f"{'FAIL' if p else 'ok'} - gitlab {name}: cache-to {got['PADDLE_IMAGE_CACHE_TO'] or '(none)'}")
    return problems


def main(argv):
    if len(argv) != 3 or argv[1] not in ("github", "gitlab"):
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    doc = yaml.safe_load(open(argv[2], encoding="utf-8"))
    with tempfile.TemporaryDirectory() as work:
        try:
            problems = (check_github if argv[1] == "github" else check_gitlab)(doc, work)
        except (KeyError, StopIteration, ValueError, RuntimeError) as e:
            problems = [f"{type(e).__name__}: {e}"]
    for p in problems:
        print(f"{argv[2]}: {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
