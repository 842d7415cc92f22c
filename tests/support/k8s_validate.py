#!/usr/bin/python3
"""Validates rendered Kubernetes manifests offline, about as strictly as the API server with
`kubectl apply --validate=strict` would, plus checks the server does at admission time that the
OpenAPI schema cannot express.

Usage: k8s_validate.py [--schemas DIR] FILE...
  FILE   multi-document YAML ('---' separated; empty documents and comments are skipped)
  DIR    the schema files (default: k8s-schemas/ next to this script): every *.schema.json there,
         each with `x-kinds` {"APIVERSION/KIND": "#/definitions/NAME"} and `definitions`; their
         definitions share one namespace, so a custom resource refers to the Kubernetes ones.
Exit 0 when every document is valid (one summary line on stdout). Otherwise one line per problem,
    FILE: doc N (Kind name): path: message
(N counts every document of the file from 1, empty ones included), `FILE: not valid YAML: ...`
or `FILE: no documents`, and exit 1. Exit 2 on usage
errors (a missing file, unreadable YAML is a problem of that file and exits 1).

Schema (draft 7, jsonschema): required fields, types, enums, unknown fields (every object schema
has additionalProperties: false), formats int32/int64/quantity/date-time/byte. An apiVersion/kind
without a schema is an error. Beyond the schema:
- duplicate keys in a YAML mapping (kubectl refuses them in strict mode);
- metadata.name present and a DNS-1123 subdomain (a Service: a DNS-1035 label; a Job: at most
  63 characters, its name becomes a label value); namespace a DNS-1123 label;
- label and selector keys are qualified names, values valid label values (metadata.labels,
  matchLabels, nodeSelector, selectors' and node selector terms' keys); annotation keys qualified;
- resource quantities match Kubernetes' quantity syntax; requests <= limits; extended resources
  (a name with a domain, e.g. nvidia.com/gpu) whole numbers, with a limit, and request == limit;
- pod templates (Pod, Job, DaemonSet, the worker/ps/heter templates of a PaddleJob): every
  container and init container has a name (DNS-1123 label, unique) and an image; volume names
  unique DNS-1123 labels; every volumeMount names a volume of the pod; port names IANA service
  names; hostname/subdomain DNS-1123 labels; node selector requirements have the values their
  operator needs (In/NotIn: some, Exists/DoesNotExist: none, Gt/Lt: exactly one integer);
- a Job: template restartPolicy Never or OnFailure, `podFailurePolicy` needs Never;
  completionMode Indexed needs `completions`, and NAME-<completions-1> must fit a DNS label (the
  pods' hostnames); backoffLimitPerIndex / successPolicy need Indexed;
- a DaemonSet: template restartPolicy Always (or unset), its selector matches the template labels;
- a Service: ports unless headless; selector values label values; a Service named as the
  `subdomain` of a pod template in the same files must be headless (clusterIP: None) and select
  that template's pods (a Job's pods also carry job-name and batch.kubernetes.io/job-name).
"""
import base64
import glob
import json
import os
import re
import sys
from fractions import Fraction

import yaml
from jsonschema import Draft7Validator, FormatChecker

HERE = os.path.dirname(os.path.abspath(__file__))
DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
QUALIFIED_NAME_PART = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
IANA_SVC_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$")
# k8s.io/apimachinery/pkg/api/resource: the syntax controller-gen writes into CRDs
QUANTITY = re.compile(r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
                      r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$")
RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")
SUFFIX = {"Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30, "Ti": 2 ** 40, "Pi": 2 ** 50, "Ei": 2 ** 60,
          "n": Fraction(1, 10 ** 9), "u": Fraction(1, 10 ** 6), "m": Fraction(1, 1000), "": 1,
          "k": 10 ** 3, "M": 10 ** 6, "G": 10 ** 9, "T": 10 ** 12, "P": 10 ** 15, "E": 10 ** 18}
# resources in the default namespace (no domain, or kubernetes.io/): everything else is extended
STANDARD_RESOURCES = {"cpu", "memory", "ephemeral-storage", "storage"}


# --- YAML with duplicate keys refused -------------------------------------------------------

class DuplicateKey(yaml.YAMLError):
    pass


class StrictLoader(yaml.SafeLoader):
    pass


def _mapping(loader, node, deep=False):
    seen = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise DuplicateKey(f"duplicate key {key!r} at line {key_node.start_mark.line + 1} "
                               f"(first at line {seen[key]})")
        seen[key] = key_node.start_mark.line + 1
    return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)


StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)


# --- small validators ------------------------------------------------------------------------

def parse_quantity(text):
    """A Kubernetes quantity as an exact Fraction, or None when it is not one."""
    if isinstance(text, bool):
        return None
    if isinstance(text, (int, float)):
        return Fraction(text)
    if not isinstance(text, str) or not QUANTITY.match(text):
        return None
    m = re.match(r"^([+-]?[0-9.]+)(.*)$", text)
    number, suffix = Fraction(m.group(1)), m.group(2)
    if suffix[:1] in ("e", "E"):
        return number * Fraction(10) ** int(suffix[1:])
    return number * SUFFIX[suffix]


def qualified_name_errors(key):
    if not isinstance(key, str) or not key:
        return ["must be a non-empty string"]
    parts = key.split("/")
    if len(parts) > 2:
        return [f"{key!r}: a qualified name has at most one '/'"]
    errs = []
    if len(parts) == 2:
        prefix, name = parts
        if not prefix or len(prefix) > 253 or not DNS1123_SUBDOMAIN.match(prefix):
            errs.append(f"{key!r}: prefix {prefix!r} must be a DNS-1123 subdomain (lower case, at most 253)")
    else:
        name = parts[0]
    if not name or len(name) > 63 or not QUALIFIED_NAME_PART.match(name):
        errs.append(f"{key!r}: name part {name!r} must be at most 63 characters of [A-Za-z0-9-_.], "
                    "starting and ending alphanumeric")
    return errs


def label_value_errors(value):
    if not isinstance(value, str):
        return [f"{value!r}: a label value must be a string (quote it in YAML)"]
    if len(value) > 63 or not LABEL_VALUE.match(value):
        return [f"{value!r}: a label value must be empty or at most 63 characters of [A-Za-z0-9-_.], "
                "starting and ending alphanumeric"]
    return []


def int64(value):
    try:
        n = int(value, 10)
    except (TypeError, ValueError):
        return None
    return n if -2 ** 63 <= n < 2 ** 63 else None


def format_checker():
    fc = FormatChecker(formats=())
    fc.checks("int32")(lambda v: not isinstance(v, int) or -2 ** 31 <= v < 2 ** 31)
    fc.checks("int64")(lambda v: not isinstance(v, int) or -2 ** 63 <= v < 2 ** 63)
    fc.checks("quantity")(lambda v: not isinstance(v, str) or bool(QUANTITY.match(v)))
    fc.checks("date-time")(lambda v: not isinstance(v, str) or bool(RFC3339.match(v)))

    def b64(v):
        if not isinstance(v, str):
            return True
        try:
            base64.b64decode(v, validate=True)
            return True
        except ValueError:
            return False
    fc.checks("byte")(b64)
    return fc


def path_str(parts):
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (("." if out else "") + str(p))
    return out or "(document)"


# --- the checks --------------------------------------------------------------------------------

class Checker:
    def __init__(self, schema_dir):
        self.kinds, definitions = {}, {}
        files = sorted(glob.glob(os.path.join(schema_dir, "*.schema.json")))
        if not files:
            raise SystemExit(f"k8s_validate: no *.schema.json in {schema_dir}")
        for f in files:
            doc = json.load(open(f, encoding="utf-8"))
            for name, schema in doc["definitions"].items():
                if name in definitions:
                    raise SystemExit(f"k8s_validate: definition {name} in {f} is defined twice")
                definitions[name] = schema
            self.kinds.update(doc["x-kinds"])
        self.definitions = definitions
        self.fc = format_checker()
        self.validators = {}

    def validator(self, key):
        if key not in self.validators:
            schema = {"$ref": self.kinds[key], "definitions": self.definitions}
            self.validators[key] = Draft7Validator(schema, format_checker=self.fc)
        return self.validators[key]

    # each check appends (path list, message)
    def check(self, doc):
        problems = []

        def err(path, msg):
            problems.append((list(path), msg))

        api, kind = doc.get("apiVersion"), doc.get("kind")
        key = f"{api}/{kind}"
        if not isinstance(api, str) or not isinstance(kind, str):
            err([], "apiVersion and kind must be strings")
            return problems
        if key not in self.kinds:
            known = ", ".join(sorted(self.kinds))
            err(["kind"], f"no schema for apiVersion {api!r} kind {kind!r} (known: {known})")
            return problems
        for e in sorted(self.validator(key).iter_errors(doc), key=lambda e: path_str(e.absolute_path)):
            err(e.absolute_path, self.message(e))
        self.metadata(doc, err)
        self.walk_generic(doc, [], err)
        for tpath, template in pod_templates(doc):
            self.pod_template(template, tpath, err)
        getattr(self, "kind_" + kind, lambda d, e: None)(doc, err)
        return problems

    def message(self, e):
        """jsonschema's message, with the two oneOf types of Kubernetes named."""
        if e.validator == "oneOf":
            if e.schema is self.definitions.get("IoK8sApimachineryPkgApiResourceQuantity"):
                return f"{e.instance!r} is not a Kubernetes quantity (e.g. 500m, 2, 1.5Gi, 40G)"
            if e.schema is self.definitions.get("IoK8sApimachineryPkgUtilIntstrIntOrString"):
                return f"{e.instance!r} must be an integer or a string"
        if e.validator == "type" and e.instance is None:
            return f"null (an empty value in YAML) where {e.validator_value} is expected"
        return e.message

    def metadata(self, doc, err):
        meta = doc.get("metadata")
        if not isinstance(meta, dict):
            err(["metadata"], "metadata.name is required")
            return
        name = meta.get("name")
        kind = doc.get("kind")
        if not isinstance(name, str) or not name:
            err(["metadata", "name"], "required (generateName cannot be applied)")
        elif kind == "Service":
            if len(name) > 63 or not DNS1035_LABEL.match(name):
                err(["metadata", "name"], f"{name!r}: a Service name must be a DNS-1035 label "
                    "(lower case alphanumerics and '-', starting with a letter, at most 63)")
        elif len(name) > 253 or not DNS1123_SUBDOMAIN.match(name):
            err(["metadata", "name"], f"{name!r}: must be a DNS-1123 subdomain (lower case alphanumerics, "
                "'-' and '.', starting and ending alphanumeric, at most 253)")
        elif kind == "Job" and len(name) > 63:
            err(["metadata", "name"], f"{name!r}: a Job name is at most 63 characters (it becomes a label value)")
        ns = meta.get("namespace")
        if ns is not None and (not isinstance(ns, str) or len(ns) > 63 or not DNS1123_LABEL.match(ns)):
            err(["metadata", "namespace"], f"{ns!r}: must be a DNS-1123 label")

    def walk_generic(self, node, path, err):
        """Checks that apply wherever the field appears: labels, selectors, resources."""
        if isinstance(node, dict):
            for k, v in node.items():
                p = path + [k]
                if k in ("labels", "matchLabels", "nodeSelector") and isinstance(v, dict) \
                        and not (k == "nodeSelector" and "nodeSelectorTerms" in v) \
                        and path[-1:] != ["sandboxConfig"]:  # CRI sandbox labels are not Kubernetes labels
                    for lk, lv in v.items():
                        for m in qualified_name_errors(lk):
                            err(p + [lk], "label key " + m)
                        for m in label_value_errors(lv):
                            err(p + [lk], m)
                elif k == "selector" and isinstance(v, dict) and path and path[-1] == "spec" \
                        and "matchLabels" not in v and "matchExpressions" not in v and "names" not in v:
                    # a Service's selector is a plain map
                    for lk, lv in v.items():
                        for m in qualified_name_errors(lk):
                            err(p + [lk], "label key " + m)
                        for m in label_value_errors(lv):
                            err(p + [lk], m)
                elif k == "annotations" and isinstance(v, dict) and path[-1:] != ["sandboxConfig"]:
                    for ak in v:
                        for m in qualified_name_errors(ak):
                            err(p + [ak], "annotation key " + m)
                elif k == "matchExpressions" and isinstance(v, list):
                    for i, req in enumerate(v):
                        self.requirement(req, p + [i], err,
                                         node_selector=path[-1:] == ["preference"] or "nodeSelectorTerms" in path)
                elif k == "resources" and isinstance(v, dict):
                    self.resources(v, p, err)
                self.walk_generic(v, p, err)
        elif isinstance(node, list):
            for i, v in enumerate(node):
                self.walk_generic(v, path + [i], err)

    def requirement(self, req, path, err, node_selector):
        if not isinstance(req, dict):
            return
        key, op, values = req.get("key"), req.get("operator"), req.get("values") or []
        for m in qualified_name_errors(key):
            err(path + ["key"], "key " + m)
        if not node_selector and op not in ("In", "NotIn", "Exists", "DoesNotExist"):
            err(path + ["operator"], f"{op!r}: a label selector takes In, NotIn, Exists or DoesNotExist")
        if op in ("In", "NotIn") and not values:
            err(path + ["values"], f"required when operator is {op}")
        elif op in ("Exists", "DoesNotExist") and values:
            err(path + ["values"], f"must be empty when operator is {op}")
        elif op in ("Gt", "Lt"):
            if not node_selector:
                err(path + ["operator"], f"{op} is only valid in node selector terms")
            if len(values) != 1:
                err(path + ["values"], f"{op} needs exactly one value")
            elif int64(values[0]) is None:
                err(path + ["values", 0], f"{values[0]!r}: {op} needs an integer value")
        # labels.NewRequirement checks every value as a label value, whatever the operator: the API
        # server accepts e.g. "Gt -1" in a node selector term, but kube-scheduler cannot parse it
        # and that term then matches no node
        for i, v in enumerate(values):
            for m in label_value_errors(v):
                err(path + ["values", i], m + ("; kube-scheduler cannot parse this requirement, so its "
                                               "term matches no node" if node_selector else ""))

    def resources(self, res, path, err):
        parsed = {}
        for part in ("limits", "requests"):
            values = res.get(part)
            if not isinstance(values, dict):
                continue
            for name, q in values.items():
                p = path + [part, name]
                for m in qualified_name_errors(name):
                    err(p, "resource name " + m)
                value = parse_quantity(q)
                if value is None:
                    continue  # the schema says it is not a quantity
                if value < 0:
                    err(p, f"{q!r} must not be negative")
                parsed[(part, name)] = value
                if is_extended(name) and value.denominator != 1:
                    err(p, f"{q!r}: extended resource {name} must be a whole number")
        limits = res.get("limits") if isinstance(res.get("limits"), dict) else {}
        requests = res.get("requests") if isinstance(res.get("requests"), dict) else {}
        for name in requests:
            if ("requests", name) not in parsed:
                continue
            if is_extended(name):
                if name not in limits:
                    err(path + ["limits", name], f"required: extended resource {name} needs a limit "
                        "(it cannot be overcommitted)")
                elif ("limits", name) in parsed and parsed[("limits", name)] != parsed[("requests", name)]:
                    err(path + ["requests", name], f"must equal the limit for extended resource {name}")
            elif ("limits", name) in parsed and parsed[("requests", name)] > parsed[("limits", name)]:
                err(path + ["requests", name], f"{requests[name]!r} must be less than or equal to the "
                    f"limit {limits[name]!r}")

    def pod_template(self, template, path, err):
        if not isinstance(template, dict):
            return
        spec = template.get("spec")
        if not isinstance(spec, dict):
            err(path + ["spec"], "a pod template needs a spec")
            return
        sp = path + ["spec"]
        volumes = set()
        for i, vol in enumerate(spec.get("volumes") or []):
            name = vol.get("name") if isinstance(vol, dict) else None
            if not isinstance(name, str) or len(name) > 63 or not DNS1123_LABEL.match(name):
                err(sp + ["volumes", i, "name"], f"{name!r}: a volume name must be a DNS-1123 label")
            elif name in volumes:
                err(sp + ["volumes", i, "name"], f"duplicate volume name {name!r}")
            volumes.add(name)
        names = set()
        for part in ("initContainers", "containers"):
            containers = spec.get(part)
            if part == "containers" and not containers:
                err(sp + [part], "at least one container is required")
            for i, c in enumerate(containers or []):
                cp = sp + [part, i]
                if not isinstance(c, dict):
                    continue
                name = c.get("name")
                if not isinstance(name, str) or not name:
                    err(cp + ["name"], "every container needs a name")
                elif len(name) > 63 or not DNS1123_LABEL.match(name):
                    err(cp + ["name"], f"{name!r}: a container name must be a DNS-1123 label")
                elif name in names:
                    err(cp + ["name"], f"duplicate container name {name!r}")
                names.add(name)
                image = c.get("image")
                if not isinstance(image, str) or not image.strip():
                    err(cp + ["image"], "every container needs an image")
                elif image != image.strip():
                    err(cp + ["image"], f"{image!r}: leading or trailing whitespace")
                for j, m in enumerate(c.get("volumeMounts") or []):
                    if isinstance(m, dict) and m.get("name") not in volumes:
                        err(cp + ["volumeMounts", j, "name"], f"{m.get('name')!r}: no volume of this name in "
                            "the pod's volumes")
                for j, port in enumerate(c.get("ports") or []):
                    pname = port.get("name") if isinstance(port, dict) else None
                    if pname is not None and (not isinstance(pname, str) or len(pname) > 15
                                              or not IANA_SVC_NAME.match(pname) or "--" in pname
                                              or not re.search("[a-z]", pname)):
                        err(cp + ["ports", j, "name"], f"{pname!r}: a port name must be an IANA service name "
                            "(at most 15 lower case alphanumerics and '-', with a letter)")
                for j, env in enumerate(c.get("env") or []):
                    en = env.get("name") if isinstance(env, dict) else None
                    if not isinstance(en, str) or not en or "=" in en:
                        err(cp + ["env", j, "name"], f"{en!r}: an environment variable name must be non-empty "
                            "and without '='")
        for f in ("hostname", "subdomain"):
            v = spec.get(f)
            if v is not None and (not isinstance(v, str) or len(v) > 63 or not DNS1123_LABEL.match(v)):
                err(sp + [f], f"{v!r}: must be a DNS-1123 label")

    def kind_Job(self, doc, err):
        spec = doc.get("spec")
        if not isinstance(spec, dict):
            return
        template = spec.get("template") if isinstance(spec.get("template"), dict) else {}
        tspec = template.get("spec") if isinstance(template.get("spec"), dict) else {}
        restart = tspec.get("restartPolicy")
        if restart not in ("Never", "OnFailure"):
            err(["spec", "template", "spec", "restartPolicy"], f"{restart!r}: a Job's pods need restartPolicy "
                "Never or OnFailure")
        if "podFailurePolicy" in spec and restart != "Never":
            err(["spec", "template", "spec", "restartPolicy"], "spec.podFailurePolicy requires restartPolicy Never")
        indexed = spec.get("completionMode") == "Indexed"
        if indexed and spec.get("completions") is None:
            err(["spec", "completions"], "required when completionMode is Indexed")
        for f in ("backoffLimitPerIndex", "maxFailedIndexes", "successPolicy"):
            if f in spec and not indexed:
                err(["spec", f], "only valid with completionMode: Indexed")
        for f in ("completions", "parallelism", "backoffLimit"):
            v = spec.get(f)
            if isinstance(v, int) and not isinstance(v, bool) and v < 0:
                err(["spec", f], "must be non-negative")
        name = (doc.get("metadata") or {}).get("name")
        completions = spec.get("completions")
        if indexed and isinstance(name, str) and isinstance(completions, int) and completions > 0:
            host = f"{name}-{completions - 1}"
            if len(host) > 63:
                err(["metadata", "name"], f"{name!r}: too long for an Indexed Job: the pods' hostnames "
                    f"({host!r}) must be DNS labels of at most 63 characters")

    def kind_DaemonSet(self, doc, err):
        spec = doc.get("spec")
        if not isinstance(spec, dict):
            return
        template = spec.get("template") if isinstance(spec.get("template"), dict) else {}
        tspec = template.get("spec") if isinstance(template.get("spec"), dict) else {}
        if tspec.get("restartPolicy", "Always") != "Always":
            err(["spec", "template", "spec", "restartPolicy"], "a DaemonSet's pods need restartPolicy Always")
        labels = (template.get("metadata") or {}).get("labels") or {}
        if not selector_matches(spec.get("selector") or {}, labels):
            err(["spec", "selector"], "does not match the template's labels")

    def kind_Service(self, doc, err):
        spec = doc.get("spec")
        if not isinstance(spec, dict):
            err(["spec"], "a Service needs a spec")
            return
        if spec.get("clusterIP") != "None" and not spec.get("ports"):
            err(["spec", "ports"], "required unless the Service is headless (clusterIP: None)")
        if spec.get("clusterIP") == "None" and spec.get("type", "ClusterIP") != "ClusterIP":
            err(["spec", "type"], "a headless Service must be of type ClusterIP")


def is_extended(name):
    if not isinstance(name, str):
        return False
    if name in STANDARD_RESOURCES or name.startswith(("hugepages-", "requests.")):
        return False
    return "/" in name and not name.split("/")[0].endswith("kubernetes.io")


def selector_matches(selector, labels):
    """A LabelSelector against a label map (matchLabels and matchExpressions)."""
    if not isinstance(selector, dict) or not isinstance(labels, dict):
        return False
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for req in selector.get("matchExpressions") or []:
        key, op, values = req.get("key"), req.get("operator"), req.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


def pod_templates(doc):
    """(path, template) of every pod template in a workload object; a Pod is its own template."""
    kind, spec = doc.get("kind"), doc.get("spec")
    if kind == "Pod":
        return [([], doc)]
    if not isinstance(spec, dict):
        return []
    if kind in ("Job", "DaemonSet") and isinstance(spec.get("template"), dict):
        return [(["spec", "template"], spec["template"])]
    if kind == "PaddleJob":
        return [(["spec", role, "template"], spec[role]["template"]) for role in ("ps", "worker", "heter")
                if isinstance(spec.get(role), dict) and isinstance(spec[role].get("template"), dict)]
    return []


def load(path):
    """[(doc number, document)] of a YAML file; raises yaml.YAMLError."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    return [(i, d) for i, d in enumerate(yaml.load_all(text, Loader=StrictLoader), 1) if d is not None]


def describe(doc):
    meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
    return f"{doc.get('kind', '?')} {meta.get('name', '?')}"


def validate_files(files, schema_dir, checker=None):
    """(problem lines, "Kind/name" of each object). `checker`: one made before (a Checker of
    schema_dir, whose compiled validators a caller checking many files keeps)."""
    checker = checker or Checker(schema_dir)
    lines, objects, services, templates = [], [], [], []
    for path in files:
        try:
            docs = load(path)
        except (yaml.YAMLError, UnicodeDecodeError) as e:
            lines.append(f"{path}: not valid YAML: {' '.join(str(e).split()) or type(e).__name__}")
            continue
        if not docs:
            lines.append(f"{path}: no documents")
        for n, doc in docs:
            if not isinstance(doc, dict):
                lines.append(f"{path}: doc {n} (?): (document): a Kubernetes object must be a mapping")
                continue
            for p, msg in checker.check(doc):
                lines.append(f"{path}: doc {n} ({describe(doc)}): {path_str(p)}: {msg}")
            objects.append(describe(doc).replace(" ", "/"))
            if doc.get("kind") == "Service":
                services.append((path, n, doc))
            for tpath, t in pod_templates(doc):
                templates.append((path, n, doc, tpath, t))
    # a subdomain names a Service in the same files: it must be headless and select the pods
    for spath, sn, svc in services:
        name = (svc.get("metadata") or {}).get("name")
        sspec = svc.get("spec") if isinstance(svc.get("spec"), dict) else {}
        for path, n, doc, tpath, t in templates:
            tspec = t.get("spec") if isinstance(t.get("spec"), dict) else {}
            ns_t = (doc.get("metadata") or {}).get("namespace")
            if tspec.get("subdomain") != name or (svc.get("metadata") or {}).get("namespace") != ns_t:
                continue
            where = f"{spath}: doc {sn} ({describe(svc)})"
            if sspec.get("clusterIP") != "None":
                lines.append(f"{where}: spec.clusterIP: must be None: the Service is the subdomain of "
                             f"{describe(doc)} ({path} doc {n}), and only a headless Service gives its pods DNS names")
            labels = dict((t.get("metadata") or {}).get("labels") or {})
            if doc.get("kind") == "Job":  # the labels the Job controller adds to every pod
                jname = (doc.get("metadata") or {}).get("name")
                labels.update({"job-name": jname, "batch.kubernetes.io/job-name": jname})
            sel = sspec.get("selector")
            if not isinstance(sel, dict) or not sel or not selector_matches({"matchLabels": sel}, labels):
                lines.append(f"{where}: spec.selector: does not select the pods of {describe(doc)} "
                             f"({path} doc {n}), whose subdomain it is")
    return lines, objects


def main(argv):
    args = argv[1:]
    schema_dir = os.path.join(HERE, "k8s-schemas")
    if len(args) >= 2 and args[0] == "--schemas":
        schema_dir, args = args[1], args[2:]
    if not args or any(a.startswith("-") for a in args):
        print(__doc__, file=sys.stderr)
        return 2
    missing = [a for a in args if not os.path.isfile(a)]
    if missing:
        print(f"k8s_validate: no such file: {', '.join(missing)}", file=sys.stderr)
        return 2
    lines, objects = validate_files(args, schema_dir)
    for line in lines:
        print(line)
    if lines:
        return 1
    print(f"k8s_validate: {len(objects)} object(s) in {len(args)} file(s) valid: {', '.join(objects)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
