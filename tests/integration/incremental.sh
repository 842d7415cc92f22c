#!/usr/bin/env bash
# An app-only change rebuilds and ships exactly one layer; a same-size, same-second
# edit is still seen; an unchanged rebuild is a pure cache hit.
source "$(dirname "$0")/../support/common.sh"
cd "$WORK"
make_project p
"$PI" build p/spec.yaml -q --revision r -o oci:lay:one >/dev/null
layer_digests lay one >one.txt
ls lay/blobs/sha256 | sort >blobs1.txt

printf 'import purepkg\nprint(purepkg.hello(), 2)\n' >p/src/train.py
"$PI" build p/spec.yaml -q --revision r -o oci:lay:two --metadata-file m.json >/dev/null
layer_digests lay two >two.txt
ls lay/blobs/sha256 | sort >blobs2.txt
check "first two layers unchanged" bash -c 'diff <(head -2 one.txt) <(head -2 two.txt)'
check "app layer changed" bash -c '! diff <(tail -1 one.txt) <(tail -1 two.txt)'
new_layers=$(comm -13 <(sort one.txt) <(sort two.txt) | wc -l)
check "exactly one changed layer blob" test "$new_layers" = 1
check "metadata: only 'app' rebuilt" python3 -c '
import json,sys; m=json.load(open("m.json"))
st={l["name"]:l["status"] for l in m["layers"]}
sys.exit(0 if st=={"deps":"reused","models":"reused","app":"rebuilt"} else 1)'

# Same size, same second: nanosecond mtime / ctime still differ.
stamp=$(stat -c %Y p/src/pkg/__init__.py)
printf 'X = 2\n' >p/src/pkg/__init__.py
touch -d "@$stamp" p/src/pkg/__init__.py
"$PI" build p/spec.yaml -q --revision r -o oci:lay:three --metadata-file m3.json >/dev/null
check "same-size same-second edit rebuilds the app layer" python3 -c '
import json,sys; m=json.load(open("m3.json"))
sys.exit(0 if [l["status"] for l in m["layers"]]==["reused","reused","rebuilt"] else 1)'
check "and changes its digest" bash -c "test \"\$(layer_digests lay three | tail -1)\" != \"\$(tail -1 two.txt)\""

# Nothing changed: every layer reused.
"$PI" build p/spec.yaml -q --revision r -o oci:lay:four --metadata-file m4.json >/dev/null
check "no-change rebuild reuses every layer" python3 -c '
import json,sys; m=json.load(open("m4.json"))
sys.exit(0 if all(l["status"]=="reused" for l in m["layers"]) else 1)'
check "umoci still reads every tag" bash -c 'for t in one two three four; do umoci stat --image lay:$t >/dev/null || exit 1; done'
check "layout blobs are intact" blobs_intact lay
finish
