#!/usr/bin/python3
"""Validates CI pipeline files offline: GitHub Actions workflows and GitLab CI files.

Usage: ci_validate.py github FILE...     GitHub Actions workflows
       ci_validate.py gitlab FILE...     .gitlab-ci.yml files
Exit 0 when every file is valid (one summary line on stdout). Otherwise one line per problem,
    FILE: path: message
(path as in jobs.build.steps[2].run; `(document)` for the file as a whole) and exit 1.
Exit 2 on usage errors (an unknown mode, a missing file).

github: YAML 1.2 as GitHub reads it (`on`, `yes`, `no` are strings, not booleans; no
timestamps), duplicate keys refused; then
- the JSON schema action-validator (npm @action-validator/cli 0.6.0) checks workflows against:
  SchemaStore's github-workflow.json, pinned in ci-schemas/ (see its README.md): unknown and
  misspelt keys, required keys (runs-on, steps, run or uses), types, enums;
- every `${{ ... }}` closed by `}}`, with its quotes and brackets balanced, and not empty;
- every `needs` names a job of the workflow, and the needs have no cycle;
- `uses` is `owner/repo[/path]@ref`, `./path` or `docker://image` (a job's `uses`, a
  reusable workflow: `owner/repo/path.yml@ref` or `./path.yml`);
- within a job, `steps.ID` in an expression names a step of that job with that id, and
  `needs.JOB` a job the job needs.
gitlab: YAML as GitLab reads it (`!reference` accepted), duplicate keys refused; then
- top-level keys are global keywords (default, include, stages, variables, workflow, and the
  older global image, services, cache, before_script, after_script) or jobs; a job is a
  mapping whose keys are job keywords (GitLab's keyword reference), a hidden job (.name) a
  template; `extends` names jobs or templates of the file, without cycles, and the job as
  extended has `script`, `trigger` or `run`;
- `stages` a list of strings; every job's stage (default `test`) is declared there (or among
  the default stages build, test, deploy when `stages` is absent; .pre and .post always);
- `needs` and `dependencies` name jobs of the file (not templates), in the same or an
  earlier stage; `needs` a list;
- types: script / before_script / after_script strings or lists of strings, artifacts and
  cache `paths` / `exclude` lists of strings, `when` values, `rules` entries' keys, tags a
  list, variables scalars or {value, description, options, expand}; `only`/`except` not
  together with `rules`.
With `include:` present, names that may come from the included files (extends, needs,
dependencies, stages of jobs extending them) are not reported.
"""
import difflib
import json
import os
import re
import sys

import yaml
from jsonschema import Draft7Validator

HERE = os.path.dirname(os.path.abspath(__file__))
GITHUB_SCHEMA = os.path.join(HERE, "ci-schemas", "github-workflow.json")


# --- YAML ------------------------------------------------------------------------------------

class DuplicateKey(yaml.YAMLError):
    pass


def _mapping(loader, node, deep=False):
    seen = {}
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = loader.construct_object(key_node, deep=deep)
        if isinstance(key, (list, dict)):
            continue
        if key in seen:
            raise DuplicateKey(f"duplicate key {key!r} at line {key_node.start_mark.line + 1} "
                               f"(first at line {seen[key]})")
        seen[key] = key_node.start_mark.line + 1
    loader.flatten_mapping(node)
    return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)


class GitHubLoader(yaml.SafeLoader):
    """YAML 1.2 core schema, as GitHub's parser: only true/false are booleans (so `on:` is the
    string 'on'), no timestamps; integers and floats as in YAML 1.2."""


GitHubLoader.yaml_implicit_resolvers = {}
for _tag, _regexp, _first in [
        ("tag:yaml.org,2002:bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
        ("tag:yaml.org,2002:int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", "-+0123456789"),
        ("tag:yaml.org,2002:float",
         r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
         "-+0123456789."),
        ("tag:yaml.org,2002:null", r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""])]:
    GitHubLoader.add_implicit_resolver(_tag, re.compile(_regexp), list(_first))
GitHubLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)


def _github_int(loader, node):
    v = loader.construct_scalar(node)
    if v.startswith("0o"):
        return int(v[2:], 8)
    return int(v, 0) if v.startswith("0x") else int(v)


GitHubLoader.add_constructor("tag:yaml.org,2002:int", _github_int)


class GitLabLoader(yaml.SafeLoader):
    """YAML 1.1 as GitLab (Ruby's Psych) reads it, with GitLab's !reference tag."""


class Reference(list):
    pass


GitLabLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)
GitLabLoader.add_constructor("!reference", lambda loader, node: Reference(loader.construct_sequence(node)))


def load(path, loader):
    with open(path, encoding="utf-8") as f:
        return [d for d in yaml.load_all(f.read(), Loader=loader)]


# --- shared ----------------------------------------------------------------------------------

def path_str(parts):
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (("." if out else "") + str(p))
    return out or "(document)"


def suggest(word, choices):
    m = difflib.get_close_matches(str(word), sorted(choices), n=1, cutoff=0.6)
    return f" (did you mean '{m[0]}'?)" if m else ""


def walk_strings(node, path):
    """(path, string) for every string value in node (and every string key)."""
    if isinstance(node, str):
        yield path, node
    elif isinstance(node, dict):
        for k, v in node.items():
            if isinstance(k, str) and "${{" in k:
                yield path + [k], k
            yield from walk_strings(v, path + [k])
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from walk_strings(v, path + [i])


# --- GitHub ----------------------------------------------------------------------------------

def expressions(text):
    """([(expression text)], [problem]) for the ${{ ... }} in text."""
    exprs, problems = [], []
    pos = 0
    while True:
        i = text.find("${{", pos)
        if i < 0:
            return exprs, problems
        j, stack, quote, end = i + 3, [], False, None
        while j < len(text):
            c = text[j]
            if quote:
                if c == "'":
                    if text.startswith("''", j):
                        j += 2
                        continue
                    quote = False
            elif c == "'":
                quote = True
            elif c in "([":
                stack.append(c)
            elif c in ")]":
                if not stack or "([".index(stack.pop()) != ")]".index(c):
                    problems.append(f"unbalanced '{c}' in expression {text[i:j + 1]!r}...")
                    stack = None
                    break
            elif text.startswith("}}", j):
                end = j
                break
            elif text.startswith("${{", j):
                break
            j += 1
        if stack is None:
            pos = j + 1
            continue
        snippet = text[i:i + 40].split("\n")[0]
        if end is None:
            if quote:
                problems.append(f"unterminated string in expression {snippet!r}...")
            else:
                problems.append(f"'${{{{' without a closing '}}}}': {snippet!r}...")
            pos = max(j, i + 3)
            continue
        body = text[i + 3:end]
        if stack:
            problems.append(f"unclosed '{stack[-1]}' in expression {text[i:end + 2]!r}")
        elif not body.strip():
            problems.append(f"empty expression {text[i:end + 2]!r}")
        else:
            exprs.append(body)
        pos = end + 2


STEP_USES = re.compile(r"^(?:[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+(?:/[^@\s]+)?@[^@\s]+|\./\S*|docker://[^\s]+)$")
JOB_USES = re.compile(r"^(?:[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+/[^@\s]+\.ya?ml@[^@\s]+|\./[^@\s]+\.ya?ml)$")
IDENT = r"([A-Za-z_][A-Za-z0-9_-]*)"


class GitHubChecker:
    def __init__(self, schema_path=GITHUB_SCHEMA):
        with open(schema_path, encoding="utf-8") as f:
            self.schema = json.load(f)
        self.validator = Draft7Validator(self.schema)

    @staticmethod
    def _leaves(error):
        """The errors that explain error: for a oneOf/anyOf, those of the branch that came
        closest: no type mismatch at its root, fewest of the instance's keys it does not allow
        (the branch whose keys the instance uses is the one meant), then fewest errors."""
        if error.validator not in ("oneOf", "anyOf") or not error.context:
            return [error]
        branches = {}
        for sub in error.context:
            branches.setdefault(sub.relative_schema_path[0], []).append(sub)
        scored = []
        for idx, subs in branches.items():
            leaves = [leaf for s in subs for leaf in GitHubChecker._leaves(s)]
            wrong_type = sum(1 for s in subs if s.validator == "type" and not s.relative_path)
            unexpected = sum(len(set(s.instance) - set(s.schema.get("properties", {})))
                             for s in subs if s.validator == "additionalProperties" and not s.relative_path
                             and isinstance(s.instance, dict))
            scored.append(((wrong_type, unexpected, len(leaves)), idx, leaves))
        scored.sort(key=lambda t: (t[0], t[1]))
        best = [t for t in scored if t[0] == scored[0][0]]
        if len(best) == 1:
            return best[0][2]
        error.message = ("matches none of its alternatives: " +
                         "; or ".join(", ".join(leaf.message for leaf in t[2]) for t in best))
        return [error]

    def schema_problems(self, doc):
        out = []
        for e in self.validator.iter_errors(doc):
            for leaf in self._leaves(e):
                msg = leaf.message if len(leaf.message) <= 300 else leaf.message[:300] + "..."
                out.append((list(leaf.absolute_path), msg))
        return sorted(set((path_str(p), m) for p, m in out))

    def check(self, doc):
        problems = list(self.schema_problems(doc))
        err = lambda path, msg: problems.append((path_str(path), msg))
        # expressions, everywhere
        for path, text in walk_strings(doc, []):
            for p in expressions(text)[1]:
                err(path, p)
        jobs = doc.get("jobs") if isinstance(doc.get("jobs"), dict) else {}
        needs_of = {}
        for name, job in jobs.items():
            if not isinstance(job, dict):
                continue
            needs = job.get("needs", [])
            needs = [needs] if isinstance(needs, str) else needs if isinstance(needs, list) else []
            needs_of[name] = [n for n in needs if isinstance(n, str)]
            for i, n in enumerate(needs_of[name]):
                if n not in jobs:
                    where = ["jobs", name, "needs"] + ([i] if isinstance(job.get("needs"), list) else [])
                    err(where, f"'{n}' is not a job of this workflow{suggest(n, jobs)} "
                               f"(jobs: {', '.join(map(str, jobs))})")
                elif n == name:
                    err(["jobs", name, "needs"], "a job cannot need itself")
            if "uses" in job and isinstance(job["uses"], str) and not JOB_USES.match(job["uses"]):
                err(["jobs", name, "uses"], f"{job['uses']!r}: a reusable workflow is "
                                            "owner/repo/path/file.yml@ref or ./path/file.yml")
            steps = job.get("steps") if isinstance(job.get("steps"), list) else []
            step_ids = [s.get("id") for s in steps if isinstance(s, dict) and isinstance(s.get("id"), str)]
            for i, s in enumerate(steps):
                if not isinstance(s, dict):
                    continue
                uses = s.get("uses")
                if isinstance(uses, str) and not STEP_USES.match(uses):
                    err(["jobs", name, "steps", i, "uses"],
                        f"{uses!r}: an action is owner/repo@ref, owner/repo/path@ref, ./path or docker://image")
            for dup in sorted({x for x in step_ids if step_ids.count(x) > 1}):
                err(["jobs", name, "steps"], f"step id '{dup}' is used more than once")
            # steps.ID and needs.JOB in this job's expressions
            for path, text in walk_strings(job, ["jobs", name]):
                bodies = expressions(text)[0]
                if path[-1] == "if" and "${{" not in text:
                    bodies = [text]  # if: takes a bare expression
                for body in bodies:
                    for m in re.finditer(r"(?<![\w.'-])steps\." + IDENT, re.sub(r"'(?:[^']|'')*'", "''", body)):
                        if m.group(1) not in step_ids:
                            err(path, f"'steps.{m.group(1)}' names no step of job '{name}'"
                                      f"{suggest(m.group(1), step_ids)} (step ids: {', '.join(step_ids) or 'none'})")
                    for m in re.finditer(r"(?<![\w.'-])needs\." + IDENT, re.sub(r"'(?:[^']|'')*'", "''", body)):
                        if m.group(1) not in needs_of[name]:
                            err(path, f"'needs.{m.group(1)}': job '{name}' does not need '{m.group(1)}' "
                                      f"(needs: {', '.join(needs_of[name]) or 'none'})")
        # cycles
        state = {}

        def visit(n, chain):
            if state.get(n) == 2:
                return
            if state.get(n) == 1:
                cyc = chain[chain.index(n):] + [n]
                err(["jobs", n, "needs"], "needs form a cycle: " + " -> ".join(cyc))
                return
            state[n] = 1
            for m in needs_of.get(n, []):
                if m in needs_of:
                    visit(m, chain + [n])
            state[n] = 2

        for n in needs_of:
            visit(n, [])
        return problems


# --- GitLab ----------------------------------------------------------------------------------

GLOBAL_KEYWORDS = {"default", "include", "stages", "variables", "workflow",
                   "image", "services", "cache", "before_script", "after_script"}
JOB_KEYWORDS = {"after_script", "allow_failure", "artifacts", "before_script", "cache", "coverage",
                "dast_configuration", "dependencies", "environment", "except", "extends", "hooks",
                "identity", "id_tokens", "image", "inherit", "interruptible", "manual_confirmation",
                "needs", "only", "pages", "parallel", "release", "resource_group", "retry", "rules",
                "run", "script", "secrets", "services", "stage", "start_in", "tags", "timeout",
                "trigger", "variables", "when"}
DEFAULT_KEYWORDS = {"after_script", "artifacts", "before_script", "cache", "hooks", "id_tokens",
                    "image", "interruptible", "retry", "services", "tags", "timeout"}
WHEN = {"on_success", "on_failure", "always", "manual", "delayed", "never"}
RULE_KEYS = {"if", "changes", "exists", "when", "allow_failure", "variables", "needs",
             "start_in", "interruptible"}
ARTIFACT_KEYS = {"paths", "exclude", "expire_in", "expose_as", "name", "public", "access",
                 "reports", "untracked", "when"}
CACHE_KEYS = {"paths", "key", "untracked", "unprotect", "when", "policy", "fallback_keys"}
DEFAULT_STAGES = ["build", "test", "deploy"]


def _deep_merge(base, over):
    out = dict(base)
    for k, v in over.items():
        out[k] = _deep_merge(out[k], v) if isinstance(out.get(k), dict) and isinstance(v, dict) else v
    return out


class GitLabChecker:
    def check(self, doc):
        problems = []
        err = lambda path, msg: problems.append((path_str(path), msg))
        if not isinstance(doc, dict):
            err([], "a GitLab CI file is a mapping of global keywords and jobs")
            return problems
        has_include = "include" in doc
        stages_declared = "stages" in doc
        stages = doc.get("stages", DEFAULT_STAGES)
        if not isinstance(stages, list) or not all(isinstance(s, str) for s in stages):
            err(["stages"], "must be a list of stage names")
            stages = None
        all_stages = [".pre"] + (stages or []) + [".post"]
        if "variables" in doc:
            self.variables(doc["variables"], ["variables"], err)
        if "default" in doc:
            d = doc["default"]
            if not isinstance(d, dict):
                err(["default"], "must be a mapping of job keywords")
            else:
                for k in d:
                    if k not in DEFAULT_KEYWORDS:
                        err(["default", k], f"not a keyword of default{suggest(k, DEFAULT_KEYWORDS)}")
                self.common(d, ["default"], err)
        if "workflow" in doc and not isinstance(doc["workflow"], dict):
            err(["workflow"], "must be a mapping (rules, name, auto_cancel)")
        elif isinstance(doc.get("workflow"), dict):
            for k in doc["workflow"]:
                if k not in ("rules", "name", "auto_cancel"):
                    err(["workflow", k], "not a keyword of workflow (rules, name, auto_cancel)")
            self.rules(doc["workflow"].get("rules"), ["workflow", "rules"], err)
        for k in ("before_script", "after_script"):
            if k in doc:
                self.script(doc[k], [k], err)

        jobs, hidden = {}, {}
        for key, value in doc.items():
            if key in GLOBAL_KEYWORDS:
                continue
            if not isinstance(key, str):
                err([str(key)], "a job name must be a string")
                continue
            if key.startswith("."):
                hidden[key] = value
                continue
            if not isinstance(value, dict):
                err([key], f"a job must be a mapping of job keywords; '{key}' is neither a job nor a "
                           f"global keyword{suggest(key, GLOBAL_KEYWORDS | {'stage', 'stages'})}")
                continue
            if value and not any(k in JOB_KEYWORDS for k in value):
                err([key], f"'{key}' is neither a global keyword{suggest(key, GLOBAL_KEYWORDS)} nor a job "
                           "(none of its keys is a job keyword)")
                continue
            if len(key) > 255:
                err([key], "a job name is at most 255 characters")
            jobs[key] = value

        templates = {**hidden, **jobs}

        def extended(name, job, chain=()):
            """The job with its extends applied (GitLab: hashes deep-merged, others replaced);
            None when a name it extends is unknown (perhaps from an include)."""
            ext = job.get("extends", [])
            ext = [ext] if isinstance(ext, str) else ext if isinstance(ext, list) else []
            merged, unknown = {}, False
            for e in ext:
                if e in chain or e == name:
                    return {}, False
                base = templates.get(e)
                if not isinstance(base, dict):
                    unknown = True
                    continue
                sub, sub_unknown = extended(e, base, chain + (name,))
                merged = _deep_merge(merged, sub)
                unknown = unknown or sub_unknown
            return _deep_merge(merged, {k: v for k, v in job.items() if k != "extends"}), unknown

        effective = {}
        for name, job in jobs.items():
            path = [name]
            for k in job:
                if k not in JOB_KEYWORDS:
                    err(path + [k], f"unknown job keyword{suggest(k, JOB_KEYWORDS)}")
            ext = job.get("extends")
            if ext is not None:
                names = [ext] if isinstance(ext, str) else ext
                if not isinstance(names, list) or not all(isinstance(e, str) for e in names):
                    err(path + ["extends"], "must be a job name or a list of them")
                else:
                    for e in names:
                        if e not in templates and not has_include:
                            err(path + ["extends"], f"'{e}' is no job or template of this file"
                                                    f"{suggest(e, templates)}")
                    self.extends_cycle(name, templates, err)
            eff, unknown = extended(name, job)
            effective[name] = (eff, unknown)
            if not any(k in eff for k in ("script", "trigger", "run")) and not unknown:
                err(path, "a job needs script (or trigger, or run)")
            if "script" in eff and "trigger" in eff:
                err(path, "script and trigger cannot be used together")
            self.common(job, path, err)
            for k in ("script",):
                if k in job:
                    self.script(job[k], path + [k], err)
            if "stage" in job and not isinstance(job["stage"], str):
                err(path + ["stage"], "must be a stage name")
            stage = eff.get("stage", "test")
            if (stages is not None and isinstance(stage, str) and stage not in all_stages
                    and not (unknown and "stage" not in job)):
                where = "stages" if stages_declared else "the default stages (no stages: given)"
                err(path + (["stage"] if "stage" in job else []),
                    f"stage '{stage}' is not declared in {where}{suggest(stage, all_stages)} "
                    f"(stages: {', '.join(all_stages)})")
            for k in ("when",):
                if k in job and job[k] not in WHEN:
                    err(path + [k], f"{job[k]!r} is not one of {', '.join(sorted(WHEN))}")
            if eff.get("when") == "delayed" and "start_in" not in eff:
                err(path, "when: delayed needs start_in")
            if "rules" in job:
                self.rules(job["rules"], path + ["rules"], err)
                for k in ("only", "except"):
                    if k in job:
                        err(path + [k], "cannot be used together with rules")
            if "tags" in job and not (isinstance(job["tags"], list) and all(isinstance(t, str) for t in job["tags"])):
                err(path + ["tags"], "must be a list of strings")
            if "variables" in job:
                self.variables(job["variables"], path + ["variables"], err)
            if "allow_failure" in job and not isinstance(job["allow_failure"], bool):
                af = job["allow_failure"]
                if not (isinstance(af, dict) and set(af) == {"exit_codes"}):
                    err(path + ["allow_failure"], "must be true, false or {exit_codes: ...}")

        def stage_index(name):
            st = effective[name][0].get("stage", "test")
            return all_stages.index(st) if st in all_stages else None

        for name, job in jobs.items():
            my = stage_index(name)
            if "needs" in job:
                needs = job["needs"]
                if not isinstance(needs, list):
                    err([name, "needs"], "must be a list (of job names or {job: NAME} mappings)")
                    needs = []
                for i, n in enumerate(needs):
                    where = [name, "needs", i]
                    optional = False
                    if isinstance(n, dict):
                        if "project" in n or "pipeline" in n:
                            continue  # another project's or the parent pipeline's job
                        optional = n.get("optional") is True
                        n = n.get("job")
                    if not isinstance(n, str):
                        err(where, "must be a job name or a {job: NAME} mapping")
                        continue
                    self.job_ref(n, name, my, jobs, stage_index, where, "needs", optional or has_include, err)
            if "dependencies" in job:
                deps = job["dependencies"]
                if not isinstance(deps, list):
                    err([name, "dependencies"], "must be a list of job names")
                    continue
                for i, n in enumerate(deps):
                    if not isinstance(n, str):
                        err([name, "dependencies", i], "must be a job name")
                        continue
                    self.job_ref(n, name, my, jobs, stage_index, [name, "dependencies", i],
                                 "dependencies", has_include, err)
        return problems

    @staticmethod
    def job_ref(n, name, my, jobs, stage_index, where, what, lenient, err):
        if n not in jobs:
            if not lenient:
                err(where, f"'{n}' is not a job of this file{suggest(n, jobs)} (jobs: {', '.join(jobs)})")
            return
        if n == name:
            err(where, "a job cannot name itself")
            return
        theirs = stage_index(n)
        if my is not None and theirs is not None and theirs > my:
            err(where, f"'{n}' is in a later stage than '{name}'")

    def extends_cycle(self, name, templates, err, chain=()):
        if name in chain:
            err([chain[0], "extends"], "extends forms a cycle: " + " -> ".join(chain + (name,)))
            return True
        job = templates.get(name)
        ext = job.get("extends", []) if isinstance(job, dict) else []
        for e in [ext] if isinstance(ext, str) else ext if isinstance(ext, list) else []:
            if e in templates and self.extends_cycle(e, templates, err, chain + (name,)):
                return True
        return False

    @staticmethod
    def script(value, path, err):
        def ok(v):
            return isinstance(v, (str, Reference)) or (isinstance(v, list) and all(ok(x) for x in v))
        if not ok(value) or isinstance(value, list) and not value:
            err(path, "must be a string or a non-empty list of strings")

    def common(self, job, path, err):
        for k in ("before_script", "after_script"):
            if k in job:
                self.script(job[k], path + [k], err)
        if "artifacts" in job:
            a = job["artifacts"]
            if not isinstance(a, dict):
                err(path + ["artifacts"], "must be a mapping")
            else:
                for k in a:
                    if k not in ARTIFACT_KEYS:
                        err(path + ["artifacts", k], f"not a keyword of artifacts{suggest(k, ARTIFACT_KEYS)}")
                for k in ("paths", "exclude"):
                    if k in a and not (isinstance(a[k], list) and all(isinstance(p, str) for p in a[k])):
                        err(path + ["artifacts", k], "must be a list of paths")
                if "when" in a and a["when"] not in ("on_success", "on_failure", "always"):
                    err(path + ["artifacts", "when"], "must be on_success, on_failure or always")
                if "reports" in a and not isinstance(a["reports"], dict):
                    err(path + ["artifacts", "reports"], "must be a mapping of report types to files")
        if "cache" in job:
            caches = job["cache"] if isinstance(job["cache"], list) else [job["cache"]]
            for i, c in enumerate(caches):
                where = path + ["cache"] + ([i] if isinstance(job["cache"], list) else [])
                if not isinstance(c, dict):
                    err(where, "must be a mapping (or a list of them)")
                    continue
                for k in c:
                    if k not in CACHE_KEYS:
                        err(where + [k], f"not a keyword of cache{suggest(k, CACHE_KEYS)}")
                if "paths" in c and not (isinstance(c["paths"], list) and all(isinstance(p, str) for p in c["paths"])):
                    err(where + ["paths"], "must be a list of paths")
        if "image" in job:
            im = job["image"]
            if not (isinstance(im, str) or (isinstance(im, dict) and isinstance(im.get("name"), str))):
                err(path + ["image"], "must be an image name or a mapping with name")

    @staticmethod
    def variables(v, path, err):
        if not isinstance(v, dict):
            err(path, "must be a mapping of names to values")
            return
        for k, val in v.items():
            if isinstance(val, dict):
                bad = set(val) - {"value", "description", "options", "expand"}
                if bad:
                    err(path + [k], f"unknown keys {sorted(bad)} (value, description, options, expand)")
            elif not isinstance(val, (str, int, float, bool)) and val is not None:
                err(path + [k], "must be a string, a number or {value: ...}")

    @staticmethod
    def rules(rules, path, err):
        if rules is None:
            return
        if not isinstance(rules, list):
            err(path, "must be a list of rules")
            return
        for i, r in enumerate(rules):
            if isinstance(r, Reference):
                continue
            if not isinstance(r, dict):
                err(path + [i], "a rule must be a mapping")
                continue
            for k in r:
                if k not in RULE_KEYS:
                    err(path + [i, k], f"not a keyword of rules{suggest(k, RULE_KEYS)}")
            if "when" in r and r["when"] not in WHEN:
                err(path + [i, "when"], f"{r['when']!r} is not one of {', '.join(sorted(WHEN))}")


# --- main ------------------------------------------------------------------------------------

def validate(mode, files):
    checker = GitHubChecker() if mode == "github" else GitLabChecker()
    loader = GitHubLoader if mode == "github" else GitLabLoader
    lines = []
    for path in files:
        try:
            docs = [d for d in load(path, loader) if d is not None]
        except (yaml.YAMLError, UnicodeDecodeError) as e:
            lines.append(f"{path}: (document): not valid YAML: {' '.join(str(e).split()) or type(e).__name__}")
            continue
        if mode == "gitlab" and len(docs) == 2 and isinstance(docs[0], dict) and set(docs[0]) == {"spec"}:
            docs = docs[1:]  # a CI/CD component's header
        if len(docs) != 1:
            lines.append(f"{path}: (document): expected one YAML document, found {len(docs)}")
            continue
        for p, msg in checker.check(docs[0]):
            lines.append(f"{path}: {p}: {msg}")
    return lines


def main(argv):
    if len(argv) < 3 or argv[1] not in ("github", "gitlab"):
        print(__doc__.split("\n\n")[0].strip(), file=sys.stderr)
        return 2
    mode, files = argv[1], argv[2:]
    for f in files:
        if not os.path.isfile(f):
            print(f"ci_validate: {f}: no such file", file=sys.stderr)
            return 2
    lines = validate(mode, files)
    for line in lines:
        print(line)
    if lines:
        return 1
    what = "GitHub workflow" if mode == "github" else "GitLab CI file"
    print(f"ci_validate: {len(files)} {what}{'s' if len(files) != 1 else ''} valid")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
