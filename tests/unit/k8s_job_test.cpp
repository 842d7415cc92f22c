#include <doctest/doctest.h>

#include "templates/k8s_job.hpp"
#include "tests/unit/error_text.hpp"
#include "util/error.hpp"

#include <string>
#include <vector>

namespace unit_k8s_job_test {

using templates::k8s::JobRequest;
using templates::k8s::JobSources;
using templates::k8s::RenderedJob;
using templates::k8s::SpecConfig;

namespace {

const std::string k_digest = "sha256:" + std::string(64, 'a');

// A request as the cli hands it over: k8s-job (or `kind`) for a pinned image, without
// the node affinity (no facts needed) unless a test turns it on.
JobRequest request(const std::string& kind = "k8s-job") {
  JobRequest r;
  r.kind = kind;
  r.spec_file = "spec.yaml";
  r.image = "registry.example.com/team/ocr@" + k_digest;
  r.no_gpu_affinity = true;
  return r;
}

SpecConfig spec_config() {
  SpecConfig s;
  s.env = {{"PYTHONUNBUFFERED", "1"}, {"FLAGS_allocator_strategy", "auto_growth"}, {"NCCL_DEBUG", "WARN"}};
  s.entrypoint = std::vector<std::string>{"python3", "/app/train.py"};
  s.cmd = std::vector<std::string>{"--epochs", "3"};
  return s;
}

// Counts what render_job reads through its sources.
struct Reads {
  int spec = 0;
  int facts = 0;
  std::string facts_ref;
  std::vector<std::string> warnings;
};

JobSources sources(Reads& reads, const SpecConfig& spec = spec_config(), const compat::ImageFacts& facts = {}) {
  JobSources src;
  src.spec = [&reads, spec] {
    ++reads.spec;
    return spec;
  };
  src.facts = [&reads, facts](const oci::ImageRef& ref) {
    ++reads.facts;
    reads.facts_ref = ref.repository + "@" + ref.digest;
    return facts;
  };
  src.warn = [&reads](const std::string& w) { reads.warnings.push_back(w); };
  return src;
}

RenderedJob render(const JobRequest& r) {
  Reads reads;
  return templates::k8s::render_job(r, sources(reads));
}

std::string render_error(const JobRequest& r) {
  return error_of([&] { render(r); });
}

// The Job of a rendering (the last object: paddle-distributed puts the Service first).
const nlohmann::json& job_of(const RenderedJob& j) {
  return j.json["objects"].back();
}

const nlohmann::json& pod_of(const RenderedJob& j) {
  const nlohmann::json& job = job_of(j);
  return job.contains("spec") && job["spec"].contains("template") ? job["spec"]["template"]["spec"]
                                                                  : job["spec"]["worker"]["template"]["spec"];
}

const nlohmann::json& requests_of(const RenderedJob& j) {
  return pod_of(j)["containers"][0]["resources"]["requests"];
}

} // namespace

TEST_CASE("render_job: CPU and memory requests default to 4 CPUs and 16Gi per GPU") {
  RenderedJob one = render(request());
  CHECK(requests_of(one)["cpu"] == "4");
  CHECK(requests_of(one)["memory"] == "16Gi");
  CHECK(requests_of(one)["nvidia.com/gpu"] == "1");
  JobRequest r = request();
  r.gpus = 3;
  RenderedJob three = render(r);
  CHECK(requests_of(three)["cpu"] == "12");
  CHECK(requests_of(three)["memory"] == "48Gi");
  r.cpu = "500m";
  r.memory = "40Gi";
  RenderedJob given = render(r);
  CHECK(requests_of(given)["cpu"] == "500m");
  CHECK(requests_of(given)["memory"] == "40Gi");
  // paddle-distributed counts --gpus-per-worker, not --gpus
  JobRequest d = request("paddle-distributed");
  d.gpus = 7;
  d.gpus_per_worker = 2;
  RenderedJob dist = render(d);
  CHECK(requests_of(dist)["cpu"] == "8");
  CHECK(requests_of(dist)["memory"] == "32Gi");
  CHECK(pod_of(dist)["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "2");
  CHECK(pod_of(one)["volumes"][0]["emptyDir"]["sizeLimit"] == "16Gi"); // --shm-size's default
}

TEST_CASE("render_job: the default toleration is nvidia.com/gpu:NoSchedule; --toleration replaces it") {
  nlohmann::json gpu = {{"key", "nvidia.com/gpu"}, {"operator", "Exists"}, {"effect", "NoSchedule"}};
  CHECK(pod_of(render(request()))["tolerations"] == nlohmann::json::array({gpu}));
  JobRequest r = request();
  r.tolerations = {"pool=gpu:NoExecute"};
  CHECK(pod_of(render(r))["tolerations"] ==
        nlohmann::json::array({{{"key", "pool"}, {"operator", "Equal"}, {"value", "gpu"}, {"effect", "NoExecute"}}}));
  r.tolerations.clear();
  r.no_tolerations = true;
  CHECK_FALSE(pod_of(render(r)).contains("tolerations"));
}

TEST_CASE("render_job: paddle-distributed runs 2 workers unless --workers says otherwise, 1 to 10000") {
  RenderedJob two = render(request("paddle-distributed"));
  CHECK(job_of(two)["spec"]["completions"] == 2);
  CHECK(job_of(two)["spec"]["parallelism"] == 2);
  CHECK(two.json["objects"][0]["kind"] == "Service");
  JobRequest r = request("paddle-distributed");
  r.workers = 4;
  CHECK(job_of(render(r))["spec"]["completions"] == 4);
  r.format = "paddlejob";
  CHECK(job_of(render(r))["spec"]["worker"]["replicas"] == 4);
  for (int bad : {0, 10001}) {
    r.workers = bad;
    CHECK(render_error(r) == "--workers " + std::to_string(bad) + ": give 1 to 10000 workers | e.g. --workers 4");
  }
  // k8s-job ignores --workers (the cli refuses the flag for it)
  JobRequest one = request();
  one.workers = 0;
  CHECK(job_of(render(one))["kind"] == "Job");
}

TEST_CASE("render_job: the checkpoint claim defaults to NAME-checkpoints and the header says to create it") {
  RenderedJob j = render(request());
  CHECK(pod_of(j)["volumes"][1]["persistentVolumeClaim"]["claimName"] == "ocr-train-checkpoints");
  CHECK(j.text.find("# Checkpoints go to the PersistentVolumeClaim ocr-train-checkpoints at /checkpoints; create it "
                    "first, or name yours with --checkpoint-pvc.\n") != std::string::npos);
  RenderedJob d = render(request("paddle-distributed"));
  CHECK(d.text.find("at /checkpoints (ReadWriteMany: every worker mounts it); create it first") != std::string::npos);
  JobRequest r = request();
  r.name = "ocr";
  r.checkpoint_pvc = "shared-ckpt";
  r.checkpoint_path = "/data/ckpt";
  RenderedJob named = render(r);
  CHECK(pod_of(named)["volumes"][1]["persistentVolumeClaim"]["claimName"] == "shared-ckpt");
  CHECK(pod_of(named)["containers"][0]["volumeMounts"][1]["mountPath"] == "/data/ckpt");
  CHECK(named.text.find("PersistentVolumeClaim") == std::string::npos);
}

TEST_CASE("render_job: the checkpoint claim and path are checked") {
  JobRequest r = request();
  r.checkpoint_pvc = "Bad_Claim";
  CHECK(render_error(r) == "--checkpoint-pvc 'Bad_Claim' is not a claim name | e.g. --checkpoint-pvc ocr-checkpoints");
  r = request();
  r.checkpoint_path = "/ckpt\nx";
  CHECK(render_error(r) ==
        "--checkpoint-path '/ckpt\\x0ax' has a control character | e.g. --checkpoint-path /checkpoints");
  for (const char* bad : {"relative/dir", "", "/a:b"}) {
    r.checkpoint_path = bad;
    CHECK(render_error(r) == "--checkpoint-path '" + std::string(bad) +
                                 "' must be an absolute path | e.g. --checkpoint-path /checkpoints");
  }
}

TEST_CASE("render_job: the job name, namespace and service account are Kubernetes names") {
  JobRequest r = request();
  const std::string name_error = "' is not a Kubernetes job name (lower-case letters, digits and '-', starting and "
                                 "ending with a letter or digit, at most 50 characters) | e.g. --name ocr-train";
  r.name = "Ocr_Train";
  CHECK(render_error(r) == "--name 'Ocr_Train" + name_error);
  r.name = std::string(51, 'a'); // pods add suffixes: 50 at most
  CHECK(render_error(r) == "--name '" + r.name + name_error);
  r.name = std::string(50, 'a');
  CHECK(job_of(render(r))["metadata"]["name"] == r.name);
  r.name = "9ocr"; // a job may start with a digit, paddle-distributed's Service may not
  CHECK(job_of(render(r))["metadata"]["name"] == "9ocr");
  r.kind = "paddle-distributed";
  CHECK(render_error(r) == "--name '9ocr': paddle-distributed names a Service after the job, and a Service name "
                           "starts with a letter | e.g. --name ocr-train");
  r = request();
  r.ns = "Training";
  CHECK(render_error(r) ==
        "--namespace 'Training' is not a Kubernetes namespace (a DNS-1123 label) | e.g. --namespace training");
  r.ns = "training";
  CHECK(job_of(render(r))["metadata"]["namespace"] == "training");
  r.service_account = "Trainer!";
  CHECK(render_error(r) ==
        "--service-account 'Trainer!' is not a service account name | e.g. --service-account trainer");
  r.service_account = "ci.trainer"; // a DNS subdomain
  CHECK(pod_of(render(r))["serviceAccountName"] == "ci.trainer");
}

TEST_CASE("default_job_name: the repository's last part, lower case, '-' for the rest, at most 40, plus -train") {
  auto name = [](const std::string& repository) {
    oci::ImageRef ref;
    ref.registry = "registry.example.com";
    ref.repository = repository;
    return templates::k8s::default_job_name(ref);
  };
  CHECK(name("team/ocr") == "ocr-train");
  CHECK(name("ocr") == "ocr-train");
  CHECK(name("team/OCR_Det.v2") == "ocr-det-v2-train");
  CHECK(name("team/_ocr_") == "ocr-train"); // no '-' at either end
  CHECK(name("team/" + std::string(45, 'x')) == std::string(40, 'x') + "-train");
  CHECK(name("team/__") == "paddle-train");
  CHECK(templates::k8s::default_job_name(oci::ImageRef::parse("registry.example.com/team/ocr@" + k_digest)) ==
        "ocr-train");
}

TEST_CASE("render_job: --image is a registry reference pinned by digest unless --allow-tag") {
  JobRequest r = request();
  r.image = "";
  CHECK(render_error(r) == "k8s-job needs --image: the image the pods run, pinned by digest | e.g. --image "
                           "registry.example.com/team/ocr@sha256:... (paddle-image build --push --digest-file writes "
                           "the digest)");
  r.image = "oci:out:v1";
  CHECK(render_error(r).find("--image 'oci:out:v1' must be a registry reference (the kubelet pulls it) | push the "
                             "image first") == 0);
  r.image = "docker://registry.example.com/team/ocr@" + k_digest;
  CHECK(render_error(r).find("must be a registry reference") != std::string::npos);
  r.image = "registry.example.com/team/ocr:v1";
  CHECK(render_error(r) ==
        "--image 'registry.example.com/team/ocr:v1' names a tag, not a digest: a tag can move, and the pods would run "
        "an image whose needs were never checked | pin it: --image registry.example.com/team/ocr@sha256:... (build "
        "--push --digest-file FILE writes it), or accept the risk with --allow-tag");
  r.allow_tag = true;
  CHECK(pod_of(render(r))["containers"][0]["image"] == "registry.example.com/team/ocr:v1");
  r.image = "Registry.example.com/UPPER CASE";
  CHECK(render_error(r).find("--image 'Registry.example.com/UPPER CASE' is not an image reference: ") == 0);
}

TEST_CASE("render_job: GPUs per pod 1 to 64, the format job or paddlejob") {
  JobRequest r = request();
  for (int bad : {0, -1, 65}) {
    r.gpus = bad;
    CHECK(render_error(r) == "--gpus " + std::to_string(bad) +
                                 ": a GPU training pod needs 1 to 64 GPUs | for a CPU-only job this template is the "
                                 "wrong tool; give at least 1");
  }
  JobRequest d = request("paddle-distributed");
  d.gpus_per_worker = 0;
  CHECK(render_error(d).find("--gpus-per-worker 0: a GPU training pod needs 1 to 64 GPUs") == 0);
  d = request("paddle-distributed");
  d.format = "paddlejobs";
  CHECK(render_error(d) == "--format 'paddlejobs': unknown | did you mean 'paddlejob'? formats: job, paddlejob");
  d.format = "job";
  CHECK(job_of(render(d))["spec"]["completionMode"] == "Indexed");
}

TEST_CASE("render_job: quantities, backoff limit and port are checked") {
  JobRequest r = request();
  r.shm_size = "16GB";
  CHECK(render_error(r) == "--shm-size '16GB' is not a memory quantity | e.g. --shm-size 16Gi");
  r = request();
  r.memory = "lots";
  CHECK(render_error(r) == "--memory 'lots' is not a memory quantity | e.g. --memory 16Gi");
  r = request();
  r.cpu = "1.2345";
  CHECK(render_error(r) == "--cpu '1.2345' is not a CPU quantity | e.g. --cpu 8 or --cpu 500m");
  r.cpu = "1.5";
  CHECK(requests_of(render(r))["cpu"] == "1.5");
  r = request();
  r.backoff_limit = 1001;
  CHECK(render_error(r) == "--backoff-limit 1001: give 0 to 1000 | e.g. --backoff-limit 3");
  r.backoff_limit = 0;
  CHECK(job_of(render(r))["spec"]["backoffLimit"] == 0);
  CHECK(job_of(render(request()))["spec"]["backoffLimit"] == 3);
  r = request();
  r.port = 65536;
  CHECK(render_error(r) == "--port 65536 is not a TCP port | e.g. --port 36000"); // checked for k8s-job too
}

TEST_CASE("env_of: the spec's FLAGS_* and NCCL_* variables, then --env, a later value replacing in place") {
  SpecConfig s = spec_config();
  using Env = std::vector<std::pair<std::string, std::string>>;
  CHECK(templates::k8s::env_of(s, {}) == Env{{"FLAGS_allocator_strategy", "auto_growth"}, {"NCCL_DEBUG", "WARN"}});
  CHECK(templates::k8s::env_of(s, {"NCCL_DEBUG=INFO", "NOTE=a=b", "NCCL_DEBUG=TRACE", "EMPTY="}) ==
        Env{{"FLAGS_allocator_strategy", "auto_growth"}, {"NCCL_DEBUG", "TRACE"}, {"NOTE", "a=b"}, {"EMPTY", ""}});
  for (const char* bad : {"1X=2", "NOVALUE", "=x", "A-B=1"}) {
    CHECK(error_of([&] { templates::k8s::env_of(s, {bad}); }) ==
          "--env '" + std::string(bad) + "' is not NAME=VALUE with a variable name | e.g. --env NCCL_DEBUG=INFO");
  }
  // in the rendered container, before CHECKPOINT_DIR
  JobRequest r = request();
  r.env = {"NCCL_DEBUG=INFO"};
  RenderedJob j = render(r);
  const nlohmann::json& env = pod_of(j)["containers"][0]["env"];
  CHECK(env[0] == nlohmann::json{{"name", "FLAGS_allocator_strategy"}, {"value", "auto_growth"}});
  CHECK(env[1] == nlohmann::json{{"name", "NCCL_DEBUG"}, {"value", "INFO"}});
}

TEST_CASE("launch_args: --train-arg, else a Python entrypoint + cmd's script; the interpreter from argv[0]") {
  using Launch = std::pair<std::string, std::vector<std::string>>;
  SpecConfig s = spec_config();
  CHECK(templates::k8s::launch_args(s, {}) == Launch{"python3", {"/app/train.py", "--epochs", "3"}});
  CHECK(templates::k8s::launch_args(s, {"tools/train.py", "-c", "x.yml"}) ==
        Launch{"python3", {"tools/train.py", "-c", "x.yml"}});
  s.entrypoint.reset();
  s.cmd = std::vector<std::string>{"/usr/bin/python3.11", "train.py"};
  CHECK(templates::k8s::launch_args(s, {}) == Launch{"/usr/bin/python3.11", {"train.py"}});
  s.cmd = std::vector<std::string>{"python3", "-m", "paddle.distributed.launch"};
  CHECK(error_of([&] { templates::k8s::launch_args(s, {}); }) ==
        "paddle-distributed: the spec's entrypoint/cmd (python3 -m paddle.distributed.launch) does not run a Python "
        "script, so there is nothing to hand to paddle.distributed.launch | give the script and its arguments, one per "
        "flag: --train-arg train.py --train-arg=--epochs=10");
  s.cmd = std::vector<std::string>{"bash", "run.sh"};
  CHECK(error_of([&] { templates::k8s::launch_args(s, {}); }).find("(bash run.sh) does not run a Python script") !=
        std::string::npos);
  s.cmd.reset();
  CHECK(error_of([&] { templates::k8s::launch_args(s, {}); }).find("entrypoint/cmd (none)") != std::string::npos);
  CHECK(templates::k8s::launch_args(s, {"train.py"}) == Launch{"python3", {"train.py"}});
}

TEST_CASE("render_job: the launch command of paddle-distributed, the port and the header of each format") {
  JobRequest r = request("paddle-distributed");
  r.name = "ocr-dist";
  r.port = 23456;
  RenderedJob j = render(r);
  const nlohmann::json& cmd = pod_of(j)["containers"][0]["command"];
  CHECK(cmd[0] == "python3");
  CHECK(cmd.back() == "3");
  CHECK(cmd.dump().find("--master=ocr-dist-0.ocr-dist:23456") != std::string::npos);
  CHECK(j.text.find("# Indexed Job with a headless Service: pod i is ocr-dist-i.ocr-dist; the rank is "
                    "JOB_COMPLETION_INDEX (Kubernetes >= 1.26 for podFailurePolicy).\n") != std::string::npos);
  r.format = "paddlejob";
  CHECK(render(r).text.find("# PaddleJob (batch.paddlepaddle.org/v1) needs paddle-operator in the cluster.\n") !=
        std::string::npos);
}

TEST_CASE("render_job: reads the spec after the early checks and the facts only for the affinity") {
  Reads reads;
  JobRequest r = request();
  r.gpus = 0;
  CHECK_THROWS_AS(templates::k8s::render_job(r, sources(reads)), util::Error);
  CHECK(reads.spec == 0); // the GPU count is checked before the spec is read
  r = request();
  r.ns = "Bad";
  CHECK_THROWS_AS(templates::k8s::render_job(r, sources(reads)), util::Error);
  CHECK(reads.spec == 1); // names are checked after
  RenderedJob j = templates::k8s::render_job(request(), sources(reads));
  CHECK(reads.facts == 0);
  CHECK(j.json["scheduling"].is_null());
  CHECK(j.json["kind"] == "k8s-job");
  CHECK(j.json["image"] == "registry.example.com/team/ocr@" + k_digest);
  CHECK(j.text.rfind("# Rendered by paddle-image from spec.yaml for registry.example.com/team/ocr@" + k_digest +
                         ".\n# No GPU node affinity (--no-gpu-affinity): the pods may land on a node whose driver or "
                         "GPU cannot run the image.\n",
                     0) == 0);
  CHECK_FALSE(pod_of(j).contains("affinity"));
}

TEST_CASE("render_job: the node affinity from the image's facts, in the header and --json") {
  compat::ImageFacts facts;
  facts.source = "oci:out:v1";
  facts.cuda = "12.0";
  facts.driver_min = "525.60.13";
  facts.archs = {"sm_80", "sm_90"};
  facts.gpu_memory_mib = 40960;
  Reads reads;
  JobRequest r = request();
  r.no_gpu_affinity = false;
  r.gpu_products = {"Tesla-X99"};
  r.gfd_labels = {"memory=x.io/mem"};
  RenderedJob j = templates::k8s::render_job(r, sources(reads, spec_config(), facts));
  CHECK(reads.facts == 1);
  CHECK(reads.facts_ref == "team/ocr@" + k_digest);
  REQUIRE(reads.warnings.size() == 1);
  CHECK(reads.warnings[0].find("--gpu-product Tesla-X99: the compatibility matrix does not know this GPU") == 0);
  const nlohmann::json& s = j.json["scheduling"];
  CHECK(s["driver_min"] == "525.60.13");
  CHECK(s["archs"] == nlohmann::json::array({"sm_80", "sm_90"}));
  CHECK(s["compute_capabilities"] == nlohmann::json::array({">=8.0", ">=9.0"}));
  CHECK(s["gpu_memory_mib"] == 40960);
  CHECK(s["products"] == nlohmann::json::array({"Tesla-X99"}));
  CHECK(pod_of(j)["affinity"].contains("nodeAffinity"));
  CHECK(j.text.find("; compute capability >=8.0 or >=9.0 (the image ships sm_80,sm_90); GPU memory >= 40960 MiB; "
                    "products Tesla-X99.\n# Nodes without these labels never match: check them with\n#   kubectl get "
                    "nodes -L nvidia.com/cuda.driver.major,nvidia.com/gpu.compute.major,x.io/mem,"
                    "nvidia.com/gpu.product\n# and render with --no-gpu-affinity on clusters without GPU Feature "
                    "Discovery.\n") != std::string::npos);
}

TEST_CASE("render_job: a refused flag value is quoted with its control bytes escaped") {
  // A value pasted with a terminal escape or a newline is shown, not acted on by the
  // terminal; each refusal names it the same way --name and --checkpoint-path did.
  const std::string esc = "a\x1b[31m\n";
  const std::string shown = "a\\x1b[31m\\x0a";
  auto refused = [](const JobRequest& r) {
    std::string e = render_error(r);
    CHECK(e.find('\x1b') == std::string::npos);
    CHECK(e.find('\n') == std::string::npos);
    return e;
  };
  JobRequest r = request();
  r.ns = esc;
  CHECK(refused(r).rfind("--namespace '" + shown + "'", 0) == 0);
  r = request();
  r.cpu = esc;
  CHECK(refused(r).rfind("--cpu '" + shown + "'", 0) == 0);
  r = request();
  r.memory = esc;
  CHECK(refused(r).rfind("--memory '" + shown + "'", 0) == 0);
  r = request();
  r.checkpoint_pvc = esc;
  CHECK(refused(r).rfind("--checkpoint-pvc '" + shown + "'", 0) == 0);
  r = request();
  r.service_account = esc;
  CHECK(refused(r).rfind("--service-account '" + shown + "'", 0) == 0);
  r = request();
  r.env = {"X" + esc};
  CHECK(refused(r).rfind("--env 'X" + shown + "'", 0) == 0);
  r = request("paddle-distributed");
  r.name = "9" + esc;
  CHECK(refused(r).rfind("--name '9", 0) == 0);
}

} // namespace unit_k8s_job_test
