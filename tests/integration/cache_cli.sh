#!/usr/bin/env bash
# Cache sharing and pruning, parallel builds into one cache and one layout, and the
# machine-readable outputs (--json, --digest-file, --metadata-file, inspect).
source "$(dirname "$0")/../support/common.sh"
cd "$WORK"
make_project p
C="$WORK/shared-cache"

# Two builds at once into one cache and one layout, different tags.
"$PI" build p/spec.yaml -q --revision r --cache-dir "$C" -o oci:shared:a >a.out 2>a.err &
pa=$!
"$PI" build p/spec.yaml -q --revision r --cache-dir "$C" -o oci:shared:b >b.out 2>b.err &
pb=$!
ra=0; rb=0
wait $pa || ra=$?
wait $pb || rb=$?
check "parallel builds both succeed" test "$ra" = 0 -a "$rb" = 0
check "parallel builds agree on the digest" test "$(cut -d@ -f2 a.out)" = "$(cut -d@ -f2 b.out)"
check "layout has both tags" bash -c 'umoci stat --image shared:a >/dev/null && umoci stat --image shared:b >/dev/null'
check "shared layout blobs intact" blobs_intact shared
check "shared cache blobs intact" blobs_intact "$C"

"$PI" build p/spec.yaml -q --revision r --cache-dir "$C" -o oci:j:t --json --digest-file d.txt --metadata-file m.json >j.json
check "--json prints the metadata" python3 -c '
import json,sys; j=json.load(open("j.json")); m=json.load(open("m.json"))
assert j["digest"]==m["digest"] and j["digest"].startswith("sha256:")
assert [l["name"] for l in j["layers"]]==["deps","models","app"]
for l in j["layers"]:
    assert l["digest"].startswith("sha256:") and l["diff_id"].startswith("sha256:") and l["size"]>0
    assert l["status"] in ("rebuilt","reused") and "seconds" in l
assert j["base"]["name"]=="scratch" and j["revision"]=="r" and j["source_date_epoch"]==315532800
assert {w["name"] for w in j["wheels"]}=={"purepkg","nspkg_a","nspkg_b","cext"}
assert all(len(w["sha256"])==64 and w["version"]=="1.0" for w in j["wheels"])
'
check "--digest-file holds the manifest digest" test "$(cat d.txt)" = "$(python3 -c 'import json; print(json.load(open("m.json"))["digest"])')"
"$PI" inspect oci:j:t --json >i.json
check "inspect --json shows manifest and config" python3 -c '
import json; i=json.load(open("i.json"))
assert len(i["manifest"]["layers"])==3 and i["config"]["config"]["Entrypoint"]==["python3","/app/train.py"]
assert i["config"]["config"]["Labels"]["org.opencontainers.image.created"]=="1980-01-01T00:00:00Z"
'
check "inspect text lists layers" grep -q "files layer 'app'" <("$PI" inspect oci:j:t)
expect_fail "inspect of an unknown tag" 3 "tag 'nope' not found in layout" "$PI" inspect oci:j:nope
"$PI" build p/spec.yaml -q --cache-dir "$C" -o oci:j:t --json -o "Bad Ref" >err.json 2>/dev/null || true
check "errors are JSON with --json" python3 -c '
import json; e=json.load(open("err.json"))["error"]; assert e["kind"]=="input" and e["exit_code"]==3'

before=$("$PI" cache info --cache-dir "$C" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["bytes"])')
check "cache info reports a size" test "$before" -gt 0
"$PI" cache prune --cache-dir "$C" --max-size 5K --json >prune.json
check "prune brings the cache under the limit" python3 -c '
import json; p=json.load(open("prune.json")); assert p["bytes_after"]<=5*1024 and p["bytes_before"]>5*1024 and p["layers_removed"]>=1'
"$PI" build p/spec.yaml -q --revision r --cache-dir "$C" -o oci:after:t --metadata-file m2.json >/dev/null
check "pruned layers are rebuilt with the same digest" test "$(python3 -c 'import json; print(json.load(open("m2.json"))["digest"])')" = "$(cut -d@ -f2 a.out)"
"$PI" cache prune --cache-dir "$C" --all >/dev/null
check "prune --all empties the cache" test "$("$PI" cache info --cache-dir "$C" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["bytes"])')" = 0
expect_fail "prune without a limit is a usage error" 2 "needs --max-size" "$PI" cache prune --cache-dir "$C"
expect_fail "bad size" 2 "not a size" "$PI" cache prune --cache-dir "$C" --max-size lots
finish
