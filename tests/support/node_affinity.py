#!/usr/bin/python3
"""Which nodes may a rendered workload's pods be scheduled on, by node labels alone?
A second opinion for the affinity tests, written from kube-scheduler's rules
(k8s.io/component-helpers/scheduling/corev1/nodeaffinity and k8s.io/apimachinery labels),
independently of paddle-image's C++ code.

Usage: node_affinity.py [--object KIND/NAME[/ROLE] | --all] MANIFEST.yaml NODES.json
  MANIFEST  multi-document YAML; the pod template of each Pod, Job, DaemonSet and PaddleJob
            (ps/worker/heter) is evaluated
  NODES     {"node": {"label": "value", ...}, ...}, or a table {"nodes": [{"name": N,
            "labels": {...}, ...}, ...]} such as tests/support/gfd-nodes.json
Prints {"node": true|false, ...} (nodes in input order) for the one pod template of the
manifest; with several, --object picks one (KIND/NAME, plus /ROLE for a PaddleJob) and --all
prints {"KIND/NAME[/ROLE]": {...}, ...}. Exit 2 on usage or input errors.
       node_affinity.py --self-test     the rules against hand-made cases

The rules (what kube-scheduler's NodeAffinity filter does):
- spec.nodeSelector: every key must be a label of the node with exactly that value;
- spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution: absent matches
  every node; its nodeSelectorTerms are ORed, so an empty list matches no node; the
  requirements of one term (matchExpressions and matchFields) are ANDed; a term with none
  matches no node; a term with a requirement that does not parse (bad key or value, Gt/Lt
  without exactly one integer value, In/NotIn without values) matches no node;
- both must hold;
- In: the label exists and its value is listed; NotIn: the label is missing or its value is
  not listed (so NotIn admits nodes without the label); Exists / DoesNotExist;
- every value must be a valid label value, for every operator (labels.NewRequirement checks
  it after the operator's own rules): "Gt -1" does not parse, and so its term matches no node;
- Gt / Lt: the node's label value and the single value are parsed as base-10 int64
  (strconv.ParseInt: optional sign, digits only, so "03" is 3 and "" or "3.0" are not
  numbers); a missing label or one that does not parse does not match;
- matchFields: only metadata.name (In / NotIn) against the node's name.
preferredDuringScheduling, taints and resources are not considered.
"""
import json
import re
import sys

import yaml

INT64 = re.compile(r"^[+-]?[0-9]+$")
NAME_PART = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


class Unparsable(Exception):
    pass


def parse_int64(text):
    """strconv.ParseInt(text, 10, 64), or None."""
    if not isinstance(text, str) or not INT64.match(text):
        return None
    n = int(text)
    return n if -2 ** 63 <= n < 2 ** 63 else None


def valid_key(key):
    if not isinstance(key, str):
        return False
    parts = key.split("/")
    if len(parts) == 2:
        if not parts[0] or len(parts[0]) > 253 or not DNS1123_SUBDOMAIN.match(parts[0]):
            return False
        name = parts[1]
    elif len(parts) == 1:
        name = parts[0]
    else:
        return False
    return 0 < len(name) <= 63 and bool(NAME_PART.match(name))


def valid_value(value):
    return isinstance(value, str) and len(value) <= 63 and bool(LABEL_VALUE.match(value))


def requirement(expr):
    """A parsed label requirement (labels.NewRequirement): (key, op, values); raises Unparsable."""
    if not isinstance(expr, dict):
        raise Unparsable("requirement is not a mapping")
    key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
    if not valid_key(key):
        raise Unparsable(f"invalid key {key!r}")
    if not isinstance(values, list):
        raise Unparsable("values is not a list")
    if op in ("In", "NotIn"):
        if not values:
            raise Unparsable(f"{op} needs values")
    elif op in ("Exists", "DoesNotExist"):
        if values:
            raise Unparsable(f"{op} takes no values")
    elif op in ("Gt", "Lt"):
        if len(values) != 1 or parse_int64(values[0]) is None:
            raise Unparsable(f"{op} needs exactly one integer value")
    else:
        raise Unparsable(f"unknown operator {op!r}")
    for v in values:
        if not valid_value(v):
            raise Unparsable(f"invalid value {v!r}")
    return key, op, values


def requirement_matches(req, labels):
    key, op, values = req
    present = key in labels
    if op == "In":
        return present and labels[key] in values
    if op == "NotIn":
        return not present or labels[key] not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if not present:
        return False
    have = parse_int64(labels[key])
    if have is None:
        return False
    want = parse_int64(values[0])
    return have > want if op == "Gt" else have < want


def term_matches(term, node_name, labels):
    if not isinstance(term, dict):
        return False
    exprs = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not exprs and not fields:
        return False  # an empty term matches no objects
    try:
        reqs = [requirement(e) for e in exprs]
        field_reqs = []
        for f in fields:
            key, op, values = requirement(f)
            if key != "metadata.name" or op not in ("In", "NotIn") or len(values) != 1:
                raise Unparsable("matchFields supports metadata.name In/NotIn with one value")
            field_reqs.append((key, op, values))
    except Unparsable:
        return False
    return all(requirement_matches(r, labels) for r in reqs) and \
        all(requirement_matches(r, {"metadata.name": node_name}) for r in field_reqs)


def pod_matches(pod_spec, node_name, labels):
    """The NodeAffinity filter for one pod spec against one node."""
    selector = pod_spec.get("nodeSelector") or {}
    for k, v in selector.items():
        if labels.get(k) != v:
            return False
    required = (((pod_spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution"))
    if required is None:
        return True
    terms = required.get("nodeSelectorTerms") or []
    return any(term_matches(t, node_name, labels) for t in terms)


def pod_templates(doc):
    """{"KIND/NAME[/ROLE]": pod spec} of one manifest document."""
    if not isinstance(doc, dict):
        return {}
    kind = doc.get("kind")
    name = (doc.get("metadata") or {}).get("name", "?")
    spec = doc.get("spec") or {}
    if kind == "Pod":
        return {f"{kind}/{name}": spec}
    if kind in ("Job", "DaemonSet"):
        return {f"{kind}/{name}": ((spec.get("template") or {}).get("spec") or {})}
    if kind == "PaddleJob":
        return {f"{kind}/{name}/{role}": ((spec[role].get("template") or {}).get("spec") or {})
                for role in ("ps", "worker", "heter") if isinstance(spec.get(role), dict)}
    return {}


def load_nodes(data):
    """[(name, labels)] from either accepted NODES.json shape."""
    if isinstance(data, dict) and isinstance(data.get("nodes"), list):
        data = data["nodes"]
    if isinstance(data, list):
        nodes = [(n["name"], n.get("labels") or {}) for n in data]
    elif isinstance(data, dict):
        nodes = [(k, v) for k, v in data.items() if not k.startswith("_")]
    else:
        raise ValueError("NODES must be an object or a list")
    for name, labels in nodes:
        if not isinstance(labels, dict) or not all(isinstance(v, str) for v in labels.values()):
            raise ValueError(f"node {name}: labels must map strings to strings")
    return nodes


def evaluate(templates, nodes):
    return {key: {name: pod_matches(spec, name, labels) for name, labels in nodes}
            for key, spec in templates.items()}


def self_test():
    gt = lambda k, v: {"key": k, "operator": "Gt", "values": [v]}  # noqa: E731
    lt = lambda k, v: {"key": k, "operator": "Lt", "values": [v]}  # noqa: E731
    req = lambda *terms: {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":  # noqa: E731
                                                        {"nodeSelectorTerms": list(terms)}}}}
    rev = "nvidia.com/cuda.driver.rev"
    cases = [
        # (pod spec, node labels, expected, what)
        ({}, {}, True, "no constraints match any node"),
        (req(), {"a": "1"}, False, "an empty term list matches no node"),
        (req({}), {"a": "1"}, False, "an empty term matches no node"),
        (req({"matchExpressions": []}), {"a": "1"}, False, "a term with an empty expression list matches nothing"),
        (req({"matchExpressions": [gt(rev, "4")]}), {rev: "05"}, True, "Gt: leading zero label '05' is 5 > 4"),
        (req({"matchExpressions": [gt(rev, "5")]}), {rev: "05"}, False, "Gt is strict: 5 > 5 is false"),
        (req({"matchExpressions": [gt(rev, "04")]}), {rev: "05"}, True, "Gt: leading zero in the value too"),
        (req({"matchExpressions": [gt(rev, "-1")]}), {rev: "0"}, False,
         "Gt '-1': the value is no valid label value, the requirement does not parse, the term matches nothing"),
        (req({"matchExpressions": [gt(rev, "+4")]}), {rev: "5"}, False, "Gt '+4' is no valid label value either"),
        (req({"matchExpressions": [gt(rev, "0")]}), {rev: "00"}, False, "Gt 0: '00' is 0"),
        (req({"matchExpressions": [gt(rev, "0")]}), {rev: "1"}, True, "Gt 0 admits 1"),
        (req({"matchExpressions": [gt(rev, "0")]}), {rev: ""}, False, "Gt: an empty label value is no number"),
        (req({"matchExpressions": [gt(rev, "0")]}), {}, False, "Gt: a missing label does not match"),
        (req({"matchExpressions": [gt(rev, "1")]}), {rev: "3.0"}, False, "Gt: '3.0' is no int64"),
        (req({"matchExpressions": [gt(rev, "1")]}), {rev: " 3"}, False, "Gt: ' 3' is no int64 (no trimming)"),
        (req({"matchExpressions": [gt(rev, "1")]}), {rev: "3_0"}, False, "Gt: '3_0' is no base-10 int64"),
        (req({"matchExpressions": [gt(rev, "1")]}), {rev: "99999999999999999999"}, False, "Gt: out of int64 range"),
        (req({"matchExpressions": [lt(rev, "10")]}), {rev: "09"}, True, "Lt: '09' is 9 < 10"),
        (req({"matchExpressions": [lt(rev, "10")]}), {}, False, "Lt: a missing label does not match"),
        (req({"matchExpressions": [{"key": rev, "operator": "Gt", "values": ["1", "2"]}]}), {rev: "5"}, False,
         "Gt with two values does not parse: the term matches nothing"),
        (req({"matchExpressions": [{"key": rev, "operator": "Gt", "values": ["x"]}]}, {"matchExpressions": [
            {"key": "b", "operator": "Exists"}]}), {rev: "5", "b": ""}, True,
         "an unparsable term is skipped, another term still matches"),
        (req({"matchExpressions": [{"key": "g", "operator": "In", "values": ["a100", "h100"]}]}), {"g": "h100"}, True,
         "In"),
        (req({"matchExpressions": [{"key": "g", "operator": "In", "values": ["a100"]}]}), {}, False,
         "In: a missing label does not match"),
        (req({"matchExpressions": [{"key": "g", "operator": "NotIn", "values": ["t4"]}]}), {}, True,
         "NotIn admits a node without the label"),
        (req({"matchExpressions": [{"key": "g", "operator": "NotIn", "values": ["t4"]}]}), {"g": "t4"}, False,
         "NotIn"),
        (req({"matchExpressions": [{"key": "g", "operator": "In", "values": []}]}), {"g": ""}, False,
         "In without values does not parse"),
        (req({"matchExpressions": [{"key": "g", "operator": "DoesNotExist"}]}), {}, True, "DoesNotExist"),
        (req({"matchExpressions": [{"key": "g", "operator": "Exists"}]}), {"g": ""}, True,
         "Exists with an empty value"),
        (req({"matchExpressions": [{"key": "g", "operator": "Exists", "values": ["x"]}]}), {"g": "x"}, False,
         "Exists with values does not parse"),
        (req({"matchExpressions": [gt("major", "534"), lt("major", "536"), gt("minor", "103")]},
             {"matchExpressions": [gt("major", "535")]}), {"major": "535", "minor": "104"}, True,
         "terms ORed, expressions ANDed: first term"),
        (req({"matchExpressions": [gt("major", "534"), lt("major", "536"), gt("minor", "104")]},
             {"matchExpressions": [gt("major", "535")]}), {"major": "535", "minor": "104"}, False,
         "terms ORed, expressions ANDed: neither term"),
        (req({"matchExpressions": [gt("major", "534"), lt("major", "536"), gt("minor", "104")]},
             {"matchExpressions": [gt("major", "535")]}), {"major": "550", "minor": "1"}, True,
         "terms ORed: second term"),
        ({"nodeSelector": {"pool": "gpu"}}, {"pool": "gpu"}, True, "nodeSelector"),
        ({"nodeSelector": {"pool": "gpu"}}, {"pool": "cpu"}, False, "nodeSelector: another value"),
        ({"nodeSelector": {"pool": "gpu"}}, {}, False, "nodeSelector: missing label"),
        ({"nodeSelector": {"pool": "gpu"}, **req({"matchExpressions": [{"key": "g", "operator": "Exists"}]})},
         {"g": "x"}, False, "nodeSelector and affinity must both hold"),
        (req({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}), {}, True,
         "matchFields metadata.name (node n1)"),
        (req({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]}), {}, False,
         "matchFields metadata.name, another node"),
        (req({"matchExpressions": [{"key": "bad key", "operator": "Exists"}]}), {"bad key": "1"}, False,
         "an invalid key does not parse"),
    ]
    failed = 0
    for spec, labels, want, what in cases:
        got = pod_matches(spec, "n1", labels)
        if got != want:
            failed += 1
            print(f"FAIL - {what}: got {got}, want {want}")
    templates = {}
    for doc in yaml.safe_load_all(
            "kind: PaddleJob\nmetadata: {name: p}\nspec:\n  worker: {replicas: 1, template: {spec: "
            "{nodeSelector: {a: '1'}}}}\n  ps: {replicas: 1, template: {spec: {}}}\n---\nkind: Service\n"
            "metadata: {name: s}\n---\nkind: Job\nmetadata: {name: j}\nspec: {template: {spec: {}}}\n"):
        templates.update(pod_templates(doc))
    if sorted(templates) != ["Job/j", "PaddleJob/p/ps", "PaddleJob/p/worker"]:
        failed += 1
        print(f"FAIL - pod templates found: {sorted(templates)}")
    total = len(cases) + 1
    print(f"node_affinity self-test: {total - failed} passed, {failed} failed")
    return 1 if failed else 0


def main(argv):
    args = argv[1:]
    if args == ["--self-test"]:
        return self_test()
    pick, every = None, False
    if len(args) >= 2 and args[0] == "--object":
        pick, args = args[1], args[2:]
    elif args[:1] == ["--all"]:
        every, args = True, args[1:]
    if len(args) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        with open(args[0], encoding="utf-8") as f:
            docs = [d for d in yaml.safe_load_all(f) if d is not None]
        with open(args[1], encoding="utf-8") as f:
            nodes = load_nodes(json.load(f))
    except (OSError, ValueError, KeyError, yaml.YAMLError) as e:
        print(f"node_affinity: {e}", file=sys.stderr)
        return 2
    templates = {}
    for d in docs:
        templates.update(pod_templates(d))
    if not templates:
        print(f"node_affinity: {args[0]} has no Pod, Job, DaemonSet or PaddleJob", file=sys.stderr)
        return 2
    result = evaluate(templates, nodes)
    if every:
        out = result
    elif pick is not None:
        if pick not in result:
            print(f"node_affinity: no {pick} in {args[0]} (there are: {', '.join(result)})", file=sys.stderr)
            return 2
        out = result[pick]
    elif len(result) == 1:
        out = next(iter(result.values()))
    else:
        print(f"node_affinity: {args[0]} has {len(result)} pod templates ({', '.join(result)}): "
              "pick one with --object or use --all", file=sys.stderr)
        return 2
    json.dump(out, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
