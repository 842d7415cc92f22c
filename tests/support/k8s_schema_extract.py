#!/usr/bin/python3
"""Turns the validators that the npm package `kubernetes-models` ships into one compact JSON
schema (draft 7, `#/definitions/NAME` refs) holding only what the given root kinds need.
Called by tests/support/update-k8s-schemas.sh; not used by the tests themselves.

Usage: k8s_schema_extract.py MODELS_DIR APIMACHINERY_DIR OUT.json COMMENT ROOT...
       MODELS_DIR, APIMACHINERY_DIR: the unpacked `package/` folders of kubernetes-models and
       @kubernetes-models/apimachinery; ROOT: apiVersion:Kind:DefinitionName

Since 4.4, kubernetes-models no longer ships its schemas as JSON but as code generated from
them: one small function per schema node, e.g.
    function validate3(data,{...}={}){... if("string"!=typeof data){...keyword:"type",
    params:{type:"string"}} ... if("In"!==data&&...){...keyword:"enum",params:{allowedValues:
    schema2_enum}} ...}
    function validate1(data,...){ if(data&&"object"==typeof data&&!Array.isArray(data)){
    if(void 0===data.key){...keyword:"required",params:{missingProperty:"key"}}
    void 0!==data.operator&&(validate3(data.operator,{instancePath:instancePath+"/operator",
    parentData:data,parentDataProperty:"operator",rootData}) ...}
Every keyword the generator emits carries its schema value in the error object (type, format,
enum, required), and every sub-schema is a call with a recognisable shape (property, array
item, map value, oneOf branch, $ref to another file). This reads exactly those shapes back and
fails on anything it does not recognise, so a new generator that emits other keywords stops
the update instead of silently losing constraints.

On top of the source schema: every object schema with `properties` and no
`additionalProperties` gets `additionalProperties: false` (a misspelt field fails, as with
`kubectl --validate=strict`); `nullable` (the generator's null-for-optional) is dropped, so a
rendered `null` is an error; descriptions are not in the source and so not in the output.
"""
import json
import os
import re
import sys

KNOWN_KEYWORDS = {"type", "format", "enum", "required", "oneOf"}
FUNC_HEAD = re.compile(r'function (validate\d+)\(data,\{instancePath="",parentData,parentDataProperty,'
                       r'rootData=data\}=\{\}\)\{')
IMPORT = re.compile(r'import\{validate as (validate\d+)\}from"([^"]+)"')
# enum values live in a module-level array (`let schema2_enum=[...]`, 5.x) or object
# (`let schema7={enum:[...]}`, 4.4), referred to from the error object
ENUM_DEF = re.compile(r'(?:let|const) (schema\d+_enum|schema\d+)=(?:\{enum:)?(\[[^\]]*\])')
ENUM_USE = re.compile(r'keyword:"enum",params:\{allowedValues:(schema\d+_enum|schema\d+)(?:\.enum)?\}')
EXPORT = re.compile(r'export const validate=(?:function )?(validate\d+)')
PROP_CALL = re.compile(r'(validate\d+)\(data(?:\.[A-Za-z_$][\w$]*|\[("[^"]*")\]),\{instancePath:instancePath\+'
                       r'"/[^"]*",parentData:data,parentDataProperty:("[^"]*"),rootData\}\)')
ITEM_CALL = re.compile(r'(validate\d+)\(data\[i0\],\{instancePath:instancePath\+"/"\+i0,parentData:data,'
                       r'parentDataProperty:i0,rootData\}\)')
MAP_CALL = re.compile(r'(validate\d+)\(data\[key0\],\{instancePath:instancePath\+"/"\+key0')
SELF_CALL = re.compile(r'(validate\d+)\(data,\{instancePath,parentData,parentDataProperty,rootData\}\)')
ANY_CALL = re.compile(r'(validate\d+)\(data')


def fail(msg):
    sys.exit(f"k8s_schema_extract: {msg}")


def block_end(text, start):
    """Index just past the '}' that closes the '{' at text[start] (string literals skipped)."""
    depth, i, n = 0, start, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            i += 1
            while text[i] != '"':
                i += 2 if text[i] == "\\" else 1
        elif c == "`":
            fail("template literal in generated code")
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    fail("unbalanced braces")


class Module:
    """One _schemas/NAME.js file: its functions, imports, enums and root function."""

    def __init__(self, name, path):
        self.name = name
        self.path = path
        text = open(path, encoding="utf-8").read()
        self.imports = {fn: os.path.basename(p).removesuffix(".js").removesuffix(".mjs")
                        for fn, p in IMPORT.findall(text)}
        self.enums = {k: json.loads(v) for k, v in ENUM_DEF.findall(text)}
        m = EXPORT.search(text)
        if not m:
            fail(f"{path}: no exported validate")
        self.root = m.group(1)
        spans = []
        for m in FUNC_HEAD.finditer(text):
            brace = m.end() - 1
            spans.append((m.group(1), brace, block_end(text, brace)))
        self.bodies = {}
        for name_, s, e in spans:
            # the function's own code: nested function bodies blanked out
            own = text[s:e]
            for other, s2, e2 in spans:
                if s < s2 and e2 <= e:
                    own = own.replace(text[s2:e2], "{}", 1)
            self.bodies[name_] = own
        if self.root not in self.bodies:
            fail(f"{path}: root {self.root} not defined")

    def schema(self, fn, stack=()):
        if fn in self.imports:
            return {"$ref": "#/definitions/" + self.imports[fn]}, {self.imports[fn]}
        if fn not in self.bodies:
            fail(f"{self.path}: {fn} is neither defined nor imported")
        if fn in stack:
            fail(f"{self.path}: local recursion through {fn}")
        stack = stack + (fn,)
        body = self.bodies[fn]
        keywords = set(re.findall(r'keyword:"(\w+)"', body))
        unknown = keywords - KNOWN_KEYWORDS
        if unknown:
            fail(f"{self.path}: {fn} uses keywords this extractor does not know: {sorted(unknown)}")
        refs = set()
        out = {}

        def sub(name):
            s, r = self.schema(name, stack)
            refs.update(r)
            return s

        types = set(re.findall(r'keyword:"type",params:\{type:"(\w+)"\}', body))
        if len(types) > 1:
            fail(f"{self.path}: {fn} has several types {sorted(types)}")
        if types:
            out["type"] = types.pop()
        for f in set(re.findall(r'keyword:"format",params:\{format:"([^"]+)"\}', body)):
            out["format"] = f
        enum_refs = ENUM_USE.findall(body)
        if "enum" in keywords and len(set(enum_refs)) != 1:
            fail(f"{self.path}: {fn} has an enum this extractor cannot read")
        if enum_refs:
            out["enum"] = self.enums[enum_refs[0]]
        required = re.findall(r'keyword:"required",params:\{missingProperty:("[^"]*")\}', body)
        props = {}
        for callee, bracket_name, prop in PROP_CALL.findall(body):
            props[json.loads(prop)] = sub(callee)
        if props:
            out["properties"] = props
        if required:
            out["required"] = [json.loads(r) for r in required]
        items = ITEM_CALL.findall(body)
        if items:
            out["items"] = sub(items[0])
        maps = MAP_CALL.findall(body)
        if maps:
            out["additionalProperties"] = sub(maps[0])
        selfs = SELF_CALL.findall(body)
        if "oneOf" in keywords:
            out["oneOf"] = [sub(s) for s in selfs]
        elif selfs:
            if len(selfs) != 1 or keywords:
                fail(f"{self.path}: {fn}: a call on data itself that is not a plain $ref")
            return sub(selfs[0]), refs
        # every call must have been recognised
        recognised = len(PROP_CALL.findall(body)) + len(items) + len(maps) + len(selfs)
        calls = len(ANY_CALL.findall(body))
        if calls != recognised:
            fail(f"{self.path}: {fn}: {calls - recognised} call(s) of an unknown shape")
        if not out and not re.fullmatch(r'\{(?:let vErrors=null,errors=0;)?return (validate\d+)\.errors=(?:vErrors,0===errors|null,!0)\}',
                                        body):
            fail(f"{self.path}: {fn}: nothing recognised")  # an accept-all validator is the empty schema
        return out, refs


def strict(schema):
    """additionalProperties: false on every object schema with properties and no
    additionalProperties (recursively, in place)."""
    if isinstance(schema, dict):
        if "properties" in schema and "additionalProperties" not in schema \
                and not schema.get("x-kubernetes-preserve-unknown-fields"):
            schema["additionalProperties"] = False
        for v in schema.values():
            strict(v)
    elif isinstance(schema, list):
        for v in schema:
            strict(v)


def main():
    if len(sys.argv) < 6:
        sys.exit(__doc__)
    models, machinery, out_path, comment = sys.argv[1:5]
    roots = [r.split(":") for r in sys.argv[5:]]
    dirs = [os.path.join(models, "_schemas"), os.path.join(machinery, "_schemas")]

    def find(name):
        for d in dirs:
            for ext in (".js", ".mjs"):
                p = os.path.join(d, name + ext)
                if os.path.exists(p):
                    return p
        fail(f"no schema file for {name}")

    definitions, todo = {}, [name for _, _, name in roots]
    while todo:
        name = todo.pop()
        if name in definitions:
            continue
        mod = Module(name, find(name))
        schema, refs = mod.schema(mod.root)
        definitions[name] = schema
        todo.extend(sorted(refs))
    strict(definitions)
    kinds = {}
    for api_version, kind, name in roots:
        root = definitions[name]
        props = root.get("properties", {})
        if props.get("apiVersion", {}).get("enum") != [api_version] or props.get("kind", {}).get("enum") != [kind]:
            fail(f"{name} is not {api_version} {kind}: {props.get('apiVersion')} {props.get('kind')}")
        kinds[f"{api_version}/{kind}"] = "#/definitions/" + name
    doc = {"$schema": "http://json-schema.org/draft-07/schema#", "$comment": comment,
           "x-kinds": kinds, "definitions": dict(sorted(definitions.items()))}
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(doc, f, separators=(",", ":"), sort_keys=False)
        f.write("\n")
    print(f"k8s_schema_extract: {len(definitions)} definitions for {len(kinds)} kinds -> {out_path} "
          f"({os.path.getsize(out_path)} bytes)", file=sys.stderr)


if __name__ == "__main__":
    main()
