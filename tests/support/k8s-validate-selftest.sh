#!/usr/bin/env bash
# Self-test of the Kubernetes test kit: proves that k8s_validate.py accepts valid manifests of
# every kind it knows and rejects each kind of mistake it is there to catch (so a green
# manifest test means something), and that node_affinity.py evaluates node affinity as
# kube-scheduler does, against hand-written expectations.
#
#   bash tests/support/k8s-validate-selftest.sh     (TEST_WORK=DIR keeps the files there)
# Needs only /usr/bin/python3 with python3-yaml and python3-jsonschema; no network.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PY=/usr/bin/python3
VALIDATE="$HERE/k8s_validate.py"
AFFINITY="$HERE/node_affinity.py"
if [[ -n ${TEST_WORK:-} ]]; then
  W=$TEST_WORK
  rm -rf "$W"
  mkdir -p "$W"
else
  W=$(mktemp -d "${TMPDIR:-/tmp}/k8s-selftest.XXXXXX")
  trap 'rm -rf "$W"' EXIT
fi
PASSED=0
FAILED=0
pass() { PASSED=$((PASSED + 1)); echo "ok - $*"; }
fail() { FAILED=$((FAILED + 1)); echo "FAIL - $*"; }

# valid DESCRIPTION FILE...: the validator exits 0
valid() {
  local d=$1 rc=0
  shift
  "$PY" "$VALIDATE" "$@" >"$W/out.txt" 2>&1 || rc=$?
  if [[ $rc -eq 0 ]]; then pass "$d"; else fail "$d (exit $rc): $(head -5 "$W/out.txt")"; fi
}
# invalid DESCRIPTION PATTERN FILE...: the validator exits 1 and prints a line matching
# PATTERN (grep -E), and every line it prints has the documented shape
invalid() {
  local d=$1 pat=$2 rc=0
  shift 2
  "$PY" "$VALIDATE" "$@" >"$W/out.txt" 2>&1 || rc=$?
  if [[ $rc -ne 1 ]]; then
    fail "$d (exit $rc, wanted 1): $(head -5 "$W/out.txt")"
  elif ! grep -qE -- "$pat" "$W/out.txt"; then
    fail "$d (no line matches /$pat/): $(head -5 "$W/out.txt")"
  elif grep -vqE '^[^:]+: (doc [0-9]+ \([^)]*\): [^:]+: .+|not valid YAML: .+|no documents)$' "$W/out.txt"; then
    fail "$d: a line not of the form 'FILE: doc N (Kind name): path: message': $(grep -vE '^[^:]+: doc' "$W/out.txt" | head -2)"
  else
    pass "$d"
  fi
}
# mutate NAME SED-SCRIPT: $W/NAME.yaml from the valid job with one change (which must apply)
mutate() {
  sed -e "$2" "$W/job.yaml" >"$W/$1.yaml"
  if cmp -s "$W/job.yaml" "$W/$1.yaml"; then
    fail "mutation $1 changed nothing"
  fi
}

# --- valid manifests of every kind ---------------------------------------------------------
cat >"$W/job.yaml" <<'EOF'
# the distributed form: an Indexed Job and its headless Service
apiVersion: v1
kind: Service
metadata:
  name: ocr-train
  labels: {app.kubernetes.io/name: ocr-train}
spec:
  clusterIP: None
  selector:
    job-name: ocr-train
---
apiVersion: batch/v1
kind: Job
metadata:
  name: ocr-train
  labels: {app.kubernetes.io/name: ocr-train, app.kubernetes.io/managed-by: paddle-image}
  annotations: {paddle-image/spec: "name: ocr\nversion: \"1\"", example.com/note: "a: b, c"}
spec:
  completionMode: Indexed
  completions: 4
  parallelism: 4
  backoffLimit: 3
  podFailurePolicy:
    rules:
    - action: Ignore
      onPodConditions:
      - type: DisruptionTarget
  template:
    metadata:
      labels: {job-name: ocr-train}
    spec:
      restartPolicy: Never
      subdomain: ocr-train
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
            - matchExpressions:
              - {key: nvidia.com/cuda.driver.major, operator: Gt, values: ["535"]}
              - {key: nvidia.com/gpu.compute.major, operator: In, values: ["8", "9"]}
              - {key: nvidia.com/gpu.memory, operator: Gt, values: ["40959"]}
      tolerations:
      - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}
      containers:
      - name: train
        image: registry.example.com/team/ocr@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
        command: [python, -m, paddle.distributed.launch, --nnodes=4, --master=ocr-train-0.ocr-train:8090, train.py]
        env:
        - {name: FLAGS_cudnn_deterministic, value: "1"}
        - {name: NCCL_DEBUG, value: INFO}
        - name: RANK
          valueFrom: {fieldRef: {fieldPath: "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}
        ports:
        - {name: master, containerPort: 8090}
        resources:
          requests: {cpu: 7500m, memory: 64Gi, nvidia.com/gpu: 8}
          limits: {cpu: "16", memory: 64Gi, nvidia.com/gpu: "8"}
        volumeMounts:
        - {name: dshm, mountPath: /dev/shm}
        - {name: ckpt, mountPath: /ckpt}
      volumes:
      - name: dshm
        emptyDir: {medium: Memory, sizeLimit: 16Gi}
      - name: ckpt
        persistentVolumeClaim: {claimName: ocr-ckpt}
EOF
valid "Indexed Job with podFailurePolicy and its headless Service" "$W/job.yaml"

cat >"$W/others.yaml" <<'EOF'
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: paddle-image-doctor, namespace: gpu-check}
spec:
  selector: {matchLabels: {app: paddle-image-doctor}}
  template:
    metadata: {labels: {app: paddle-image-doctor}}
    spec:
      nodeSelector: {nvidia.com/gpu.present: "true"}
      tolerations: [{operator: Exists}]
      containers:
      - name: doctor
        image: registry.example.com/paddle-image-doctor:1.0
        args: [doctor, --root, /host, --json]
        securityContext: {readOnlyRootFilesystem: true}
        volumeMounts: [{name: host, mountPath: /host, readOnly: true}]
      volumes:
      - {name: host, hostPath: {path: /, type: Directory}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: doctor-config, namespace: gpu-check}
data: {requires.yaml: "cuda: '12.0'\n"}
---
apiVersion: v1
kind: Pod
metadata: {name: smoke}
spec:
  restartPolicy: Never
  containers:
  - {name: smoke, image: "busybox:1.36", command: [nvidia-smi], resources: {limits: {nvidia.com/gpu: 1}}}
---
apiVersion: batch.paddlepaddle.org/v1
kind: PaddleJob
metadata: {name: ocr-train}
spec:
  cleanPodPolicy: OnCompletion
  withGloo: 1
  intranet: PodIP
  worker:
    replicas: 4
    template:
      metadata: {labels: {app: ocr-train}}
      spec:
        containers:
        - name: paddle
          image: registry.example.com/team/ocr@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
          resources: {limits: {nvidia.com/gpu: 8}}
---
apiVersion: apps.kruise.io/v1alpha1
kind: ImagePullJob
metadata: {name: warm-ocr}
spec:
  image: registry.example.com/team/ocr@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
  pullSecrets: [regcred]
  parallelism: 10
  selector:
    matchExpressions: [{key: nvidia.com/gpu.present, operator: In, values: ["true"]}]
  pullPolicy: {timeoutSeconds: 1800, backoffLimit: 3}
  completionPolicy: {type: Always, activeDeadlineSeconds: 3600, ttlSecondsAfterFinished: 600}
  imagePullPolicy: IfNotPresent
---
apiVersion: kubefledged.io/v1alpha2
kind: ImageCache
metadata: {name: warm-ocr, namespace: kube-fledged}
spec:
  cacheSpec:
  - images: [registry.example.com/team/ocr:1.4.0]
    nodeSelector: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB}
  imagePullSecrets: [{name: regcred}]
EOF
valid "DaemonSet, ConfigMap, Pod, PaddleJob, ImagePullJob, ImageCache" "$W/others.yaml"
printf '# a comment\n---\n---\n# another\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n---\n' >"$W/empty-docs.yaml"
valid "empty documents and comments are skipped" "$W/job.yaml" "$W/empty-docs.yaml"
printf '# nothing\n---\n' >"$W/nothing.yaml"
invalid "a file without any document" "nothing\.yaml: no documents" "$W/nothing.yaml"

# --- each mistake is caught ------------------------------------------------------------------
mutate misspelt 's/^        command:/        comand:/'
invalid "a misspelt field" "doc 2 \(Job ocr-train\): spec\.template\.spec\.containers\[0\]: .*'comand' was unexpected" "$W/misspelt.yaml"
mutate misspelt-deep 's/sizeLimit: 16Gi/sizelimit: 16Gi/'
invalid "a misspelt field deep in a volume" "volumes\[0\]\.emptyDir: .*'sizelimit' was unexpected" "$W/misspelt-deep.yaml"
mutate quantity 's/memory: 64Gi, nvidia/memory: 64GB, nvidia/'
invalid "a bad quantity (64GB)" "resources\.limits\.memory: '64GB' is not a Kubernetes quantity" "$W/quantity.yaml"
mutate quantity-shm 's/sizeLimit: 16Gi/sizeLimit: 16 Gi/'
invalid "a bad quantity outside resources (emptyDir sizeLimit)" "emptyDir\.sizeLimit: '16 Gi' is not a Kubernetes quantity" "$W/quantity-shm.yaml"
mutate noimage '/^        image: registry/d'
invalid "a container without an image" "containers\[0\]\.image: every container needs an image" "$W/noimage.yaml"
mutate unknown-kind 's/^kind: Job$/kind: Jobs/'
invalid "an unknown kind" "doc 2 \(Jobs ocr-train\): kind: no schema for apiVersion 'batch/v1' kind 'Jobs'" "$W/unknown-kind.yaml"
mutate unknown-api 's#^apiVersion: batch/v1$#apiVersion: batch/v2#'
invalid "an unknown apiVersion" "no schema for apiVersion 'batch/v2'" "$W/unknown-api.yaml"
mutate pfp-onfailure 's/restartPolicy: Never/restartPolicy: OnFailure/'
invalid "podFailurePolicy with restartPolicy OnFailure" "restartPolicy: spec\.podFailurePolicy requires restartPolicy Never" "$W/pfp-onfailure.yaml"
mutate job-always 's/restartPolicy: Never/restartPolicy: Always/'
invalid "a Job with restartPolicy Always" "a Job's pods need restartPolicy Never or OnFailure" "$W/job-always.yaml"
mutate indexed-no-completions '/^  completions: 4$/d'
invalid "an Indexed Job without completions" "spec\.completions: required when completionMode is Indexed" "$W/indexed-no-completions.yaml"
mutate not-headless 's/clusterIP: None/clusterIP: 10.96.0.10/'
invalid "the subdomain's Service not headless" "doc 1 \(Service ocr-train\): spec\.clusterIP: must be None" "$W/not-headless.yaml"
mutate wrong-selector 's/    job-name: ocr-train/    job-name: other/'
invalid "the subdomain's Service selecting other pods" "spec\.selector: does not select the pods of Job ocr-train" "$W/wrong-selector.yaml"
mutate long-name 's/^  name: ocr-train$/  name: ocr-train-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx/'
invalid "an Indexed Job of a 62-character name: its pods' hostnames would be too long" "doc 2 \(Job ocr-train-x+\): metadata\.name: .*too long for an Indexed Job" "$W/long-name.yaml"
sed 's/^      labels: {job-name: ocr-train}$/      labels: {app: ocr}/; s/^    job-name: ocr-train$/    batch.kubernetes.io\/job-name: ocr-train/' "$W/job.yaml" >"$W/controller-labels.yaml"
valid "a Service selecting the label the Job controller adds" "$W/controller-labels.yaml"
mutate bad-name 's/^  name: ocr-train$/  name: OCR_train/'
invalid "metadata.name not a DNS-1123 subdomain" "metadata\.name: 'OCR_train': must be a DNS-1123 subdomain" "$W/bad-name.yaml"
mutate bad-label 's/app.kubernetes.io\/managed-by: paddle-image/app.kubernetes.io\/managed-by: "paddle image"/'
invalid "a label value with a space" "metadata\.labels\.app\.kubernetes\.io/managed-by: 'paddle image': a label value" "$W/bad-label.yaml"
mutate bad-label-key 's/labels: {job-name: ocr-train}/labels: {job-name: ocr-train, -bad: x}/'
invalid "a label key starting with '-'" "labels\.-bad: label key" "$W/bad-label-key.yaml"
mutate unquoted-label 's/values: \["535"\]/values: [535]/'
invalid "an unquoted number as a selector value" "values\[0\]: 535 is not of type 'string'" "$W/unquoted-label.yaml"
mutate gt-minus-one 's/values: \["535"\]/values: ["-1"]/'
invalid "Gt -1 (kube-scheduler cannot parse it)" "values\[0\]: '-1': a label value .*cannot parse this requirement" "$W/gt-minus-one.yaml"
mutate gt-two-values 's/values: \["535"\]/values: ["535", "550"]/'
invalid "Gt with two values" "values: Gt needs exactly one value" "$W/gt-two-values.yaml"
mutate bad-operator 's/operator: Gt, values: \["535"\]/operator: GreaterThan, values: ["535"]/'
invalid "an unknown operator" "operator: 'GreaterThan' is not one of" "$W/bad-operator.yaml"
mutate gpu-mismatch 's/nvidia.com\/gpu: "8"/nvidia.com\/gpu: "4"/'
invalid "extended resource request != limit" "requests\.nvidia\.com/gpu: must equal the limit" "$W/gpu-mismatch.yaml"
mutate gpu-half 's/nvidia.com\/gpu: 8}/nvidia.com\/gpu: 500m}/; s/nvidia.com\/gpu: "8"/nvidia.com\/gpu: 500m/'
invalid "a fractional GPU" "'500m': extended resource nvidia\.com/gpu must be a whole number" "$W/gpu-half.yaml"
mutate cpu-over 's/limits: {cpu: "16"/limits: {cpu: "4"/'
invalid "a request above its limit" "requests\.cpu: '7500m' must be less than or equal to the limit '4'" "$W/cpu-over.yaml"
mutate no-volume 's/{name: ckpt, mountPath/{name: checkpoint, mountPath/'
invalid "a volumeMount without its volume" "volumeMounts\[1\]\.name: 'checkpoint': no volume of this name" "$W/no-volume.yaml"
mutate null-field 's/^        env:$/        workingDir:\n        env:/'
invalid "a null value (an empty YAML key)" "workingDir: null \(an empty value in YAML\) where string is expected" "$W/null-field.yaml"
mutate dup-key 's/^  parallelism: 4$/  parallelism: 4\n  parallelism: 2/'
invalid "a duplicate key" "not valid YAML: duplicate key 'parallelism'" "$W/dup-key.yaml"
mutate missing-required 's/^      - name: train$/      - image: x/; /^        image: registry/d'
invalid "a container without a name" "containers\[0\]: 'name' is a required property" "$W/missing-required.yaml"

sed 's/    replicas: 4/    replica: 4/' "$W/others.yaml" >"$W/paddlejob-typo.yaml"
invalid "PaddleJob: a misspelt worker field" "\(PaddleJob ocr-train\): spec\.worker: 'replicas' is a required property" "$W/paddlejob-typo.yaml"
sed 's/  intranet: PodIP/  intranet: PodIp/' "$W/others.yaml" >"$W/paddlejob-enum.yaml"
invalid "PaddleJob: an intranet mode that does not exist" "spec\.intranet: 'PodIp' is not one of" "$W/paddlejob-enum.yaml"
sed '/^  completionPolicy: {type: Always/d' "$W/others.yaml" >"$W/imagepulljob-required.yaml"
invalid "ImagePullJob without completionPolicy" "\(ImagePullJob warm-ocr\): spec: 'completionPolicy' is a required property" "$W/imagepulljob-required.yaml"
sed 's/  - images: \[registry/  - image: [registry/' "$W/others.yaml" >"$W/imagecache-typo.yaml"
invalid "ImageCache: 'image' for 'images'" "\(ImageCache warm-ocr\): spec\.cacheSpec\[0\]: .*'image' was unexpected" "$W/imagecache-typo.yaml"
sed 's/{matchLabels: {app: paddle-image-doctor}}/{matchLabels: {app: doctor}}/' "$W/others.yaml" >"$W/ds-selector.yaml"
invalid "DaemonSet selector not matching its template" "\(DaemonSet paddle-image-doctor\): spec\.selector: does not match the template's labels" "$W/ds-selector.yaml"
sed 's/operator: In, values: \["true"\]/operator: Gt, values: ["1"]/' "$W/others.yaml" >"$W/labelselector-gt.yaml"
invalid "Gt in a label selector (only node selectors have it)" "\(ImagePullJob warm-ocr\): spec\.selector\.matchExpressions\[0\]\.operator: 'Gt': a label selector takes" "$W/labelselector-gt.yaml"
printf 'apiVersion: v1\nkind: Service\nmetadata: {name: svc}\nspec: {selector: {app: x}}\n' >"$W/svc-noports.yaml"
invalid "a Service without ports that is not headless" "spec\.ports: required unless the Service is headless" "$W/svc-noports.yaml"
printf -- '- just\n- a list\n' >"$W/list.yaml"
invalid "a document that is not a mapping" "doc 1 \(\?\): \(document\): a Kubernetes object must be a mapping" "$W/list.yaml"
rc=0
"$PY" "$VALIDATE" "$W/does-not-exist.yaml" >"$W/out.txt" 2>&1 || rc=$?
if [[ $rc -eq 2 ]]; then pass "a missing file is a usage error (exit 2)"; else fail "a missing file: exit $rc"; fi

# --- node affinity -----------------------------------------------------------------------------
out=$("$PY" "$AFFINITY" --self-test 2>&1) || true
if [[ $out == *" 0 failed"* ]]; then pass "node_affinity.py --self-test (${out##*: })"; else fail "node_affinity.py --self-test: $out"; fi

# same DESCRIPTION WANT-JSON GOT-JSON (compared as data)
same_json() {
  if "$PY" -c 'import json,sys; sys.exit(json.loads(sys.argv[1]) != json.loads(sys.argv[2]))' "$2" "$3"; then
    pass "$1"
  else
    fail "$1: wanted $2, got $3"
  fi
}
cat >"$W/nodes.json" <<'EOF'
{"rev-05": {"nvidia.com/cuda.driver.major": "535", "nvidia.com/cuda.driver.minor": "104", "nvidia.com/cuda.driver.rev": "05"},
 "rev-04": {"nvidia.com/cuda.driver.major": "535", "nvidia.com/cuda.driver.minor": "104", "nvidia.com/cuda.driver.rev": "04"},
 "rev-empty": {"nvidia.com/cuda.driver.major": "535", "nvidia.com/cuda.driver.minor": "104", "nvidia.com/cuda.driver.rev": ""},
 "no-rev": {"nvidia.com/cuda.driver.major": "535", "nvidia.com/cuda.driver.minor": "104"},
 "minor-0129": {"nvidia.com/cuda.driver.major": "535", "nvidia.com/cuda.driver.minor": "0129"},
 "major-550": {"nvidia.com/cuda.driver.major": "550"},
 "no-labels": {}}
EOF
cat >"$W/min-driver.yaml" <<'EOF'
# driver >= 535.104.05 as three ORed terms of Gt/Lt only (the Decisions of issue 13)
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers: [{name: c, image: x}]
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchExpressions:
          - {key: nvidia.com/cuda.driver.major, operator: Gt, values: ["535"]}
        - matchExpressions:
          - {key: nvidia.com/cuda.driver.major, operator: Gt, values: ["534"]}
          - {key: nvidia.com/cuda.driver.major, operator: Lt, values: ["536"]}
          - {key: nvidia.com/cuda.driver.minor, operator: Gt, values: ["104"]}
        - matchExpressions:
          - {key: nvidia.com/cuda.driver.major, operator: Gt, values: ["534"]}
          - {key: nvidia.com/cuda.driver.major, operator: Lt, values: ["536"]}
          - {key: nvidia.com/cuda.driver.minor, operator: Gt, values: ["103"]}
          - {key: nvidia.com/cuda.driver.minor, operator: Lt, values: ["105"]}
          - {key: nvidia.com/cuda.driver.rev, operator: Gt, values: ["04"]}
EOF
valid "the driver-minimum Pod is valid" "$W/min-driver.yaml"
got=$("$PY" "$AFFINITY" "$W/min-driver.yaml" "$W/nodes.json")
same_json "driver >= 535.104.05: leading zeros, empty and missing rev, missing labels" \
  '{"rev-05": true, "rev-04": false, "rev-empty": false, "no-rev": false, "minor-0129": true, "major-550": true, "no-labels": false}' "$got"

# the GFD table: an image that needs driver >= 535.104.05, compute capability 8.0 or 9.0 and at
# least 40960 MiB; expected verdicts written by hand from the node table
gfd_job() { # KEY-PREFIX (nvidia.com/cuda.driver or nvidia.com/cuda.driver-version) REV-SUFFIX
  local k=$1 r=$2
  cat <<EOF
apiVersion: batch/v1
kind: Job
metadata: {name: j}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: x}]
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
            - matchExpressions:
              - {key: $k.major, operator: Gt, values: ["535"]}
              - {key: nvidia.com/gpu.compute.major, operator: In, values: ["8", "9"]}
              - {key: nvidia.com/gpu.compute.minor, operator: In, values: ["0"]}
              - {key: nvidia.com/gpu.memory, operator: Gt, values: ["40959"]}
            - matchExpressions:
              - {key: $k.major, operator: Gt, values: ["534"]}
              - {key: $k.major, operator: Lt, values: ["536"]}
              - {key: $k.minor, operator: Gt, values: ["104"]}
              - {key: nvidia.com/gpu.compute.major, operator: In, values: ["8", "9"]}
              - {key: nvidia.com/gpu.compute.minor, operator: In, values: ["0"]}
              - {key: nvidia.com/gpu.memory, operator: Gt, values: ["40959"]}
            - matchExpressions:
              - {key: $k.major, operator: Gt, values: ["534"]}
              - {key: $k.major, operator: Lt, values: ["536"]}
              - {key: $k.minor, operator: Gt, values: ["103"]}
              - {key: $k.minor, operator: Lt, values: ["105"]}
              - {key: $k.$r, operator: Gt, values: ["4"]}
              - {key: nvidia.com/gpu.compute.major, operator: In, values: ["8", "9"]}
              - {key: nvidia.com/gpu.compute.minor, operator: In, values: ["0"]}
              - {key: nvidia.com/gpu.memory, operator: Gt, values: ["40959"]}
EOF
}
gfd_job nvidia.com/cuda.driver rev >"$W/gfd-old-keys.yaml"
gfd_job nvidia.com/cuda.driver-version revision >"$W/gfd-new-keys.yaml"
valid "the GFD affinity Jobs are valid" "$W/gfd-old-keys.yaml" "$W/gfd-new-keys.yaml"
# admitted with the cuda.driver.* keys; the driver-version.* keys admit the same plus the node
# that has only those (every other node in this set has both)
admitted_old="a100-80-535-104-05 a100-80-535-104-12 a100-80-535-129-03 h100-550-54-14 h100-550-54-15
  h100-560-35-03 a100-40-570-86-15 a100-40-mig-mixed-550-54-15"
admitted_new="$admitted_old a100-80-570-172-08-newlabels"
verdicts() { # YAML -> the admitted nodes, sorted
  "$PY" "$AFFINITY" "$1" "$HERE/gfd-nodes.json" |
    "$PY" -c 'import json,sys; print(" ".join(sorted(k for k, v in json.load(sys.stdin).items() if v)))'
}
sorted_words() { tr ' ' '\n' <<<"$*" | grep -v '^$' | LC_ALL=C sort | paste -sd' '; }
want=$(sorted_words $admitted_old)
got=$(verdicts "$W/gfd-old-keys.yaml")
if [[ $got == "$want" ]]; then pass "GFD table, cuda.driver.* keys: $(wc -w <<<"$got") nodes admitted as expected"
else fail "GFD table, cuda.driver.* keys: wanted '$want', got '$got'"; fi
want=$(sorted_words $admitted_new)
got=$(verdicts "$W/gfd-new-keys.yaml")
if [[ $got == "$want" ]]; then pass "GFD table, cuda.driver-version.* keys: $(wc -w <<<"$got") nodes admitted as expected"
else fail "GFD table, cuda.driver-version.* keys: wanted '$want', got '$got'"; fi
n=$("$PY" -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["nodes"]))' "$HERE/gfd-nodes.json")
if [[ $n -ge 20 ]]; then pass "the GFD table has $n nodes"; else fail "the GFD table has only $n nodes"; fi

echo "k8s-validate-selftest: $PASSED passed, $FAILED failed"
[[ $FAILED -eq 0 && $PASSED -gt 0 ]]
