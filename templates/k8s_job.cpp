#include "templates/k8s_job.hpp"

#include "compat_matrix/matrix.hpp"
#include "compat_matrix/rules.hpp"
#include "spec/env_value.hpp"
#include "util/encoding.hpp"
#include "util/error.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <regex>

namespace templates::k8s {

using util::Error;
using util::ErrorKind;

namespace {

namespace fs = std::filesystem;

// What the kind and the flags make of the job before the spec is read.
struct JobShape {
  bool distributed = false; // paddle-distributed
  oci::ImageRef ref;        // --image, parsed
  int gpus = 1;             // per pod
  int workers = 2;
  std::string format; // job | paddlejob
};

// --image: given, a registry reference (the kubelet pulls it), pinned by digest unless
// --allow-tag.
oci::ImageRef checked_image(const JobRequest& r) {
  if (r.image.empty()) {
    throw Error(ErrorKind::usage, r.kind + " needs --image: the image the pods run, pinned by digest",
                "e.g. --image registry.example.com/team/ocr@sha256:... (paddle-image build --push --digest-file "
                "writes the digest)");
  }
  oci::ImageRef ref;
  try {
    ref = oci::ImageRef::parse(r.image);
  } catch (const Error& e) {
    throw Error(ErrorKind::usage, "--image '" + r.image + "' is not an image reference: " + e.what(),
                "e.g. registry.example.com/team/ocr@sha256:...");
  }
  if (ref.kind != oci::ImageRef::Kind::registry || r.image.rfind("docker://", 0) == 0) {
    throw Error(ErrorKind::usage, "--image '" + r.image + "' must be a registry reference (the kubelet pulls it)",
                "push the image first (paddle-image push), then give REGISTRY/REPO@sha256:...; read its facts from "
                "the layout with --facts oci:DIR");
  }
  if (ref.digest.empty() && !r.allow_tag) {
    throw Error(ErrorKind::usage,
                "--image '" + r.image +
                    "' names a tag, not a digest: a tag can move, and the pods would run an image whose needs were "
                    "never checked",
                "pin it: --image " + ref.registry + "/" + ref.repository +
                    "@sha256:... (build --push --digest-file FILE writes it), or accept the risk with --allow-tag");
  }
  return ref;
}

// The image, then the GPUs per pod (--gpus, or --gpus-per-worker for paddle-distributed:
// 1 to 64), the workers (default 2; 1 to 10000) and the format (default job).
JobShape job_shape(const JobRequest& r) {
  JobShape shape;
  shape.distributed = r.kind == "paddle-distributed";
  shape.ref = checked_image(r);
  shape.gpus = shape.distributed ? r.gpus_per_worker : r.gpus;
  if (shape.gpus < 1 || shape.gpus > 64) {
    throw Error(ErrorKind::usage,
                std::string(shape.distributed ? "--gpus-per-worker " : "--gpus ") + std::to_string(shape.gpus) +
                    ": a GPU training pod needs 1 to 64 GPUs",
                "for a CPU-only job this template is the wrong tool; give at least 1");
  }
  shape.workers = r.workers == -1 ? 2 : r.workers;
  if (shape.distributed && (shape.workers < 1 || shape.workers > 10000)) {
    throw Error(ErrorKind::usage, "--workers " + std::to_string(shape.workers) + ": give 1 to 10000 workers",
                "e.g. --workers 4");
  }
  shape.format = r.format.empty() ? "job" : r.format;
  if (shape.format != "job" && shape.format != "paddlejob") {
    std::string near = util::closest(shape.format, {"job", "paddlejob"});
    throw Error(ErrorKind::usage, "--format '" + shape.format + "': unknown",
                (near.empty() ? std::string() : "did you mean '" + near + "'? ") + "formats: job, paddlejob");
  }
  return shape;
}

// --name (default: from the repository) and --namespace, checked as Kubernetes names.
void name_job(JobInput& in, const JobRequest& r, const JobShape& shape) {
  in.name = r.name.empty() ? default_job_name(shape.ref) : r.name;
  // Indexed pods are named <job>-<index>-<random 5>, and their hostname <job>-<index>
  // must stay a DNS label: leave room for the suffixes.
  if (!dns1123_label(in.name) || in.name.size() > 50) {
    throw Error(ErrorKind::usage,
                "--name '" + util::escape_bytes(in.name) +
                    "' is not a Kubernetes job name (lower-case letters, digits and '-', starting "
                    "and ending with a letter or digit, at most 50 characters)",
                "e.g. --name ocr-train");
  }
  // paddle-distributed also names a headless Service after the job: a DNS-1035 label,
  // which starts with a letter.
  if (shape.distributed && !(in.name[0] >= 'a' && in.name[0] <= 'z')) {
    throw Error(ErrorKind::usage,
                "--name '" + util::escape_bytes(in.name) +
                    "': paddle-distributed names a Service after the job, and a Service name "
                    "starts with a letter",
                "e.g. --name ocr-train");
  }
  in.ns = r.ns;
  if (!in.ns.empty() && !dns1123_label(in.ns)) {
    throw Error(ErrorKind::usage,
                "--namespace '" + util::escape_bytes(in.ns) + "' is not a Kubernetes namespace (a DNS-1123 label)",
                "e.g. --namespace training");
  }
}

// --shm-size, --memory and --cpu checked as quantities; the requests default to 4 CPUs
// and 16Gi per GPU.
void request_resources(JobInput& in, const JobRequest& r, int gpus) {
  for (auto [flag, value] : {std::pair{"--shm-size", &r.shm_size}, std::pair{"--memory", &r.memory}}) {
    if (!value->empty() && !util::parse_byte_quantity(*value)) {
      throw Error(ErrorKind::usage,
                  std::string(flag) + " '" + util::escape_bytes(*value) + "' is not a memory quantity",
                  std::string("e.g. ") + flag + " 16Gi");
    }
  }
  static const std::regex cpu_re("([0-9]+(\\.[0-9]{1,3})?|[0-9]+m)");
  if (!r.cpu.empty() && !std::regex_match(r.cpu, cpu_re)) {
    throw Error(ErrorKind::usage, "--cpu '" + util::escape_bytes(r.cpu) + "' is not a CPU quantity",
                "e.g. --cpu 8 or --cpu 500m");
  }
  in.shm_size = r.shm_size;
  in.cpu = r.cpu.empty() ? std::to_string(4 * gpus) : r.cpu;
  in.memory = r.memory.empty() ? std::to_string(16 * gpus) + "Gi" : r.memory;
}

// --checkpoint-pvc (a claim name, default NAME-checkpoints) and --checkpoint-path (an
// absolute path without a control character or ':').
void mount_checkpoints(JobInput& in, const JobRequest& r) {
  if (!r.checkpoint_pvc.empty() && !dns1123_subdomain(r.checkpoint_pvc)) {
    throw Error(ErrorKind::usage, "--checkpoint-pvc '" + util::escape_bytes(r.checkpoint_pvc) + "' is not a claim name",
                "e.g. --checkpoint-pvc ocr-checkpoints");
  }
  in.checkpoint_claim = r.checkpoint_pvc.empty() ? in.name + "-checkpoints" : r.checkpoint_pvc;
  bool control = std::any_of(r.checkpoint_path.begin(), r.checkpoint_path.end(), [](char c) {
    auto u = static_cast<unsigned char>(c);
    return u < 0x20 || u == 0x7f;
  });
  if (control) {
    throw Error(ErrorKind::usage,
                "--checkpoint-path '" + util::escape_bytes(r.checkpoint_path) + "' has a control character",
                "e.g. --checkpoint-path /checkpoints");
  }
  if (r.checkpoint_path.empty() || r.checkpoint_path[0] != '/' || r.checkpoint_path.find(':') != std::string::npos) {
    throw Error(ErrorKind::usage,
                "--checkpoint-path '" + util::escape_bytes(r.checkpoint_path) + "' must be an absolute path",
                "e.g. --checkpoint-path /checkpoints");
  }
  in.checkpoint_path = r.checkpoint_path;
}

// --toleration (none given: nvidia.com/gpu:NoSchedule; none at all with
// --no-tolerations), --node-selector, --service-account, --backoff-limit (0 to 1000) and
// --port (checked for every kind, used by paddle-distributed).
void place_pods(JobInput& in, const JobRequest& r) {
  if (!r.no_tolerations) {
    if (r.tolerations.empty()) {
      in.tolerations.push_back(parse_toleration("nvidia.com/gpu:NoSchedule"));
    }
    for (const auto& t : r.tolerations) {
      in.tolerations.push_back(parse_toleration(t));
    }
  }
  for (const auto& kv : r.node_selector) {
    in.node_selector.push_back(parse_selector(kv, "--node-selector"));
  }
  if (!r.service_account.empty() && !dns1123_subdomain(r.service_account)) {
    throw Error(ErrorKind::usage,
                "--service-account '" + util::escape_bytes(r.service_account) + "' is not a service account name",
                "e.g. --service-account trainer");
  }
  in.service_account = r.service_account;
  if (r.backoff_limit < 0 || r.backoff_limit > 1000) {
    throw Error(ErrorKind::usage, "--backoff-limit " + std::to_string(r.backoff_limit) + ": give 0 to 1000",
                "e.g. --backoff-limit 3");
  }
  in.backoff_limit = r.backoff_limit;
  if (r.port < 1 || r.port > 65535) {
    throw Error(ErrorKind::usage, "--port " + std::to_string(r.port) + " is not a TCP port", "e.g. --port 36000");
  }
}

// The job's input from the checked request and the spec, without the node affinity.
JobInput job_input(const JobRequest& r, const JobShape& shape, const SpecConfig& spec) {
  JobInput in;
  name_job(in, r, shape);
  in.image = r.image;
  in.gpus = shape.gpus;
  request_resources(in, r, shape.gpus);
  mount_checkpoints(in, r);
  in.env = env_of(spec, r.env);
  place_pods(in, r);
  return in;
}

// The node affinity, and what the header (the lines after the first) and --json's
// "scheduling" say about it.
struct Scheduling {
  Object affinity; // null for none
  nlohmann::json json = nullptr;
  std::vector<std::string> header;
};

// What the header and --json say about an affinity: the driver floor, the compute
// capabilities (">=" where any minor from that one on serves), the architectures the
// image ships, the memory and the products, and how to check the nodes' labels.
void describe(Scheduling& s, const GpuNeeds& needs, const Placement& p, const GfdKeys& keys) {
  std::vector<std::string> caps;
  for (const auto& c : p.capabilities) {
    caps.push_back((c.exact ? "" : ">=") + std::to_string(c.major) + "." + std::to_string(c.min_minor));
  }
  s.json = {{"driver_min", needs.driver},     {"driver_from", needs.driver_from}, {"archs", nlohmann::json::array()},
            {"archs_from", needs.archs_from}, {"compute_capabilities", caps},     {"gpu_memory_mib", needs.memory_mib},
            {"products", p.products}};
  std::vector<std::string> sms;
  for (int x : needs.archs) {
    sms.push_back(compat::sm_name(x));
    s.json["archs"].push_back(sms.back());
  }
  s.header.push_back("Node affinity on NVIDIA GPU Feature Discovery labels: driver >= " + needs.driver + " (" +
                     needs.driver_from + "); compute capability " + util::join(caps, " or ") + " (the image ships " +
                     util::join(sms, ",") + ")" +
                     (needs.memory_mib > 0 ? "; GPU memory >= " + std::to_string(needs.memory_mib) + " MiB" : "") +
                     (p.products.empty() ? "" : "; products " + util::join(p.products, ", ")) + ".");
  s.header.push_back("Nodes without these labels never match: check them with");
  s.header.push_back("  kubectl get nodes -L " + keys.driver_major + "," + keys.compute_major + "," + keys.memory +
                     "," + keys.product);
  s.header.push_back("and render with --no-gpu-affinity on clusters without GPU Feature Discovery.");
}

// The GPU node affinity from the image's facts (read only here) and the matrix, narrowed
// by --gpu-type, --gpu-product and the node selector; none with --no-gpu-affinity.
Scheduling schedule(const JobRequest& r, const JobShape& shape, const JobInput& in, const GfdKeys& keys,
                    const JobSources& src) {
  Scheduling s;
  if (r.no_gpu_affinity) {
    s.header.push_back("No GPU node affinity (--no-gpu-affinity): the pods may land on a node whose driver or GPU "
                       "cannot run the image.");
    return s;
  }
  ImageFacts facts = src.facts(shape.ref);
  compat::Matrix m = compat::load_matrix(r.matrix_files);
  GpuNeeds needs = gpu_needs(facts, m, r.allow_minor_compat);
  GpuChoice choice{r.gpu_types, r.gpu_products, in.node_selector};
  Placement p = place(needs, choice, keys, m, src.warn);
  s.affinity = node_affinity(needs, p, keys);
  describe(s, needs, p, keys);
  return s;
}

// The objects of the kind: a Job (k8s-job), or for paddle-distributed an Indexed Job with
// a headless Service or a PaddleJob, each with a header line saying what it needs.
std::vector<Object> job_objects(const JobShape& shape, const JobInput& in, const JobRequest& r, const SpecConfig& spec,
                                std::vector<std::string>& header) {
  if (!shape.distributed) {
    return training_job(in);
  }
  DistributedInput d;
  d.job = in;
  d.workers = shape.workers;
  d.port = r.port;
  auto [python, args] = launch_args(spec, r.train_args);
  d.python = python;
  d.launch_args = args;
  if (shape.format == "paddlejob") {
    header.push_back("PaddleJob (batch.paddlepaddle.org/v1) needs paddle-operator in the cluster.");
    return paddle_job(d);
  }
  header.push_back("Indexed Job with a headless Service: pod i is " + in.name + "-i." + in.name +
                   "; the rank is JOB_COMPLETION_INDEX (Kubernetes >= 1.26 for podFailurePolicy).");
  return distributed_job(d);
}

} // namespace

std::string default_job_name(const oci::ImageRef& ref) {
  std::string base = ref.repository.substr(ref.repository.rfind('/') + 1);
  std::string n;
  for (char c : base) {
    char l = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    n += (std::isalnum(static_cast<unsigned char>(l)) != 0) ? l : '-';
  }
  while (!n.empty() && n.front() == '-') {
    n.erase(n.begin());
  }
  n = n.substr(0, 40);
  while (!n.empty() && n.back() == '-') {
    n.pop_back();
  }
  return (n.empty() ? std::string("paddle") : n) + "-train";
}

std::vector<std::pair<std::string, std::string>> env_of(const SpecConfig& spec, const std::vector<std::string>& env) {
  static const std::regex name("[A-Za-z_][A-Za-z0-9_]*");
  std::vector<std::pair<std::string, std::string>> out;
  auto put = [&](const std::string& k, const std::string& v) {
    for (auto& e : out) {
      if (e.first == k) {
        e.second = v;
        return;
      }
    }
    out.emplace_back(k, v);
  };
  // Paddle's and NCCL's tuning knobs from the spec, so operators see and change them in
  // the manifest; --env adds and overrides. A value that refers to other variables ($PATH) is the image's to expand:
  // the image holds the expanded value, which a literal copy in the manifest would override.
  for (const auto& [k, v] : spec.env) {
    const spec::EnvValue value = spec::EnvValue::parse(v);
    if ((k.rfind("FLAGS_", 0) == 0 || k.rfind("NCCL_", 0) == 0) && !value.has_references()) {
      put(k, value.expand([](const std::string&) { return std::nullopt; })); // $$ is one '$'
    }
  }
  for (const auto& kv : env) {
    auto eq = kv.find('=');
    std::string k = kv.substr(0, eq);
    if (eq == std::string::npos || !std::regex_match(k, name)) {
      throw Error(ErrorKind::usage, "--env '" + util::escape_bytes(kv) + "' is not NAME=VALUE with a variable name",
                  "e.g. --env NCCL_DEBUG=INFO");
    }
    put(k, kv.substr(eq + 1));
  }
  return out;
}

std::pair<std::string, std::vector<std::string>> launch_args(const SpecConfig& spec,
                                                             const std::vector<std::string>& train_args) {
  std::vector<std::string> argv = spec.entrypoint.value_or(std::vector<std::string>{});
  if (spec.cmd) {
    argv.insert(argv.end(), spec.cmd->begin(), spec.cmd->end());
  }
  std::string python = "python3";
  if (!argv.empty() && fs::path(argv[0]).filename().string().rfind("python", 0) == 0) {
    python = argv[0];
  }
  if (!train_args.empty()) {
    return {python, train_args};
  }
  if (argv.size() >= 2 && fs::path(argv[0]).filename().string().rfind("python", 0) == 0 && argv[1] != "-m" &&
      argv[1] != "-c" && argv[1].rfind('-', 0) != 0) {
    return {python, std::vector<std::string>(argv.begin() + 1, argv.end())};
  }
  throw Error(ErrorKind::usage,
              "paddle-distributed: the spec's entrypoint/cmd (" + (argv.empty() ? "none" : util::join(argv, " ")) +
                  ") does not run a Python script, so there is nothing to hand to paddle.distributed.launch",
              "give the script and its arguments, one per flag: --train-arg train.py --train-arg=--epochs=10");
}

RenderedJob render_job(const JobRequest& r, const JobSources& src) {
  JobShape shape = job_shape(r);
  SpecConfig spec = src.spec();
  JobInput in = job_input(r, shape, spec);
  GfdKeys keys;
  for (const auto& g : r.gfd_labels) {
    keys.set(g);
  }
  std::vector<std::string> header = {"Rendered by paddle-image from " + util::escape_bytes(r.spec_file) + " for " +
                                     r.image + "."};
  Scheduling scheduling = schedule(r, shape, in, keys, src);
  in.affinity = scheduling.affinity;
  header.insert(header.end(), scheduling.header.begin(), scheduling.header.end());
  if (r.checkpoint_pvc.empty()) {
    header.push_back("Checkpoints go to the PersistentVolumeClaim " + in.checkpoint_claim + " at " +
                     in.checkpoint_path + (shape.distributed ? " (ReadWriteMany: every worker mounts it)" : "") +
                     "; create it first, or name yours with --checkpoint-pvc.");
  }
  std::vector<Object> docs = job_objects(shape, in, r, spec, header);
  RenderedJob out;
  out.text = to_yaml_stream(docs, util::join(header, "\n"));
  nlohmann::json objects = nlohmann::json::array();
  for (const auto& d : docs) {
    objects.push_back(nlohmann::json::parse(d.dump()));
  }
  out.json = {{"kind", r.kind}, {"image", r.image}, {"objects", objects}, {"scheduling", scheduling.json}};
  return out;
}

} // namespace templates::k8s
