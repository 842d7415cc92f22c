#pragma once
// Kubernetes objects (docs/templates.md#kubernetes-jobs): built as data and emitted as
// YAML, so no value can break the document (every string is a double-quoted YAML
// scalar). The GPU scheduling constraints come from the image's facts: a required node
// affinity on the labels NVIDIA GPU Feature Discovery (GFD) puts on nodes, so a pod is
// only placed where the driver is new enough, the GPU is one the image has kernels for
// and has the memory the image asks for.
#include "compat_matrix/facts.hpp"
#include "compat_matrix/matrix.hpp"

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace templates::k8s {

using Object = nlohmann::ordered_json;

// --- Names and labels (Kubernetes' validation rules).

bool dns1123_label(const std::string& s);     // namespaces, Service names: [a-z0-9-], <= 63
bool dns1123_subdomain(const std::string& s); // object names: labels joined by '.', <= 253
bool label_key(const std::string& s);         // [PREFIX/]NAME
bool label_value(const std::string& s);       // "" or NAME-like, <= 63
// "KEY=VALUE" as a node selector; a usage error naming `flag` when it is not one.
std::pair<std::string, std::string> parse_selector(const std::string& text, const std::string& flag);

// --- YAML

// One document, block style. Strings are always double-quoted scalars; keys are plain
// when they are safe plain scalars, else quoted too.
std::string to_yaml(const Object& doc);
// Documents separated by "---", after `header` (each line written as a "# " comment).
std::string to_yaml_stream(const std::vector<Object>& docs, const std::string& header);

// --- GPU scheduling

// The node label keys GFD publishes. Newer GFD releases also publish
// nvidia.com/cuda.driver-version.{major,minor,revision}; `set` swaps any key.
struct GfdKeys {
  std::string driver_major = "nvidia.com/cuda.driver.major";
  std::string driver_minor = "nvidia.com/cuda.driver.minor";
  std::string driver_rev = "nvidia.com/cuda.driver.rev";
  std::string compute_major = "nvidia.com/gpu.compute.major";
  std::string compute_minor = "nvidia.com/gpu.compute.minor";
  std::string memory = "nvidia.com/gpu.memory";
  std::string product = "nvidia.com/gpu.product";
  // The names `set` takes: driver.major, driver.minor, driver.rev, compute.major,
  // compute.minor, memory, product.
  static std::vector<std::string> names();
  // "NAME=KEY" (--gfd-label); usage errors with "did you mean".
  void set(const std::string& assignment);
  std::string* find(const std::string& name);
};

// What an image states about the GPUs it needs: compat::ImageFacts, the type the build
// writes its io.paddle-image.* labels from (doctor::ImageNeeds reads it, with
// CUDA_VERSION when no label states the CUDA).
using ImageFacts = compat::ImageFacts;

// The constraints a pod gets: the lowest driver, the SM architectures the image has
// kernels for, the memory; each with where it came from (for the header and --json).
struct GpuNeeds {
  std::string driver;
  std::string driver_from;
  std::vector<int> archs;
  std::string archs_from;
  std::uint64_t memory_mib = 0;
};

// Facts -> needs. The driver floor is the image's full-compatibility minimum (or, with
// allow_minor_compat, its minor-version minimum), else the matrix's for the image's
// CUDA; the architectures are the image's, else those of the published Paddle image
// with the image's Paddle and CUDA. An input error with the fix when either is unknown.
GpuNeeds gpu_needs(const ImageFacts& facts, const compat::Matrix& matrix, bool allow_minor_compat);

// What the user narrows the placement to. Every GPU named (--gpu-type, a GFD product
// from --gpu-product or a node selector) must be one the image runs on.
struct GpuChoice {
  std::vector<std::string> gpu_types;                           // --gpu-type (matrix names)
  std::vector<std::string> products;                            // --gpu-product (GFD values)
  std::vector<std::pair<std::string, std::string>> node_labels; // --node-selector
};

// The compute capabilities the pod may land on: one per SM major the image serves
// (with the lowest minor it serves), or exactly the --gpu-type ones. Checks the choice
// against the image (usage errors naming the flag, with the fix) and warns through
// `warn` about products the matrix does not know.
struct Placement {
  struct Capability {
    int major = 0;
    int min_minor = 0;
    bool exact = false; // exactly major.min_minor (a --gpu-type)
  };
  std::vector<Capability> capabilities;
  std::vector<std::string> products;
};
Placement place(const GpuNeeds& needs, const GpuChoice& choice, const GfdKeys& keys, const compat::Matrix& matrix,
                const std::function<void(const std::string&)>& warn);

// The required node affinity: OR-ed terms, each the driver floor (three terms using only
// Gt/Lt, see docs/templates.md) AND one compute capability AND the memory AND the
// products.
Object node_affinity(const GpuNeeds& needs, const Placement& placement, const GfdKeys& keys);

// --- Workloads

struct Toleration {
  std::string key;
  std::string op = "Exists"; // Exists | Equal
  std::string value;
  std::string effect; // "" (all) | NoSchedule | PreferNoSchedule | NoExecute
};
// "KEY[=VALUE][:EFFECT]" (--toleration); a usage error naming the flag.
Toleration parse_toleration(const std::string& text);
// As a pod spec's tolerations (an empty key with Exists tolerates every taint).
Object tolerations_of(const std::vector<Toleration>& ts);

struct JobInput {
  std::string name;             // the Job's name (DNS-1123 label, leaves room for pod suffixes)
  std::string ns;               // namespace, "" for none
  std::string image;            // pinned by digest unless the user allowed a tag
  int gpus = 1;                 // nvidia.com/gpu per pod
  std::string shm_size;         // /dev/shm sizeLimit, a quantity
  std::string cpu;              // requests
  std::string memory;           // requests
  std::string checkpoint_claim; // "" for none
  std::string checkpoint_path;
  std::vector<std::pair<std::string, std::string>> env; // FLAGS_*/NCCL_* and --env, in order
  std::vector<Toleration> tolerations;
  std::vector<std::pair<std::string, std::string>> node_selector;
  Object affinity;                  // null for none
  std::vector<std::string> command; // empty: the image's entrypoint
  std::vector<std::string> args;    // empty: the image's cmd
  int backoff_limit = 3;
  std::string service_account;
};

// A Job for resumable single-pod training: restartPolicy Never, backoffLimit, a
// podFailurePolicy that does not count disruptions (DisruptionTarget), GPU limits,
// /dev/shm as a memory emptyDir, the checkpoint claim.
std::vector<Object> training_job(const JobInput& in);

struct DistributedInput {
  JobInput job;
  int workers = 2;
  int port = 36000;                     // the launch master's port on worker 0
  std::vector<std::string> launch_args; // the training script and its arguments
  std::string python = "python3";
};
// An Indexed Job (completions = parallelism = workers) with a headless Service as its
// subdomain: pod i is <job>-i.<service>; every worker runs
// `python -m paddle.distributed.launch --master <job>-0.<service>:PORT --nnodes N
//  --rank $(JOB_COMPLETION_INDEX) --nproc_per_node GPUS SCRIPT ARGS`.
std::vector<Object> distributed_job(const DistributedInput& in);
// paddle-operator's PaddleJob (batch.paddlepaddle.org/v1): spec.worker{replicas,
// template}, intranet Service, cleanPodPolicy OnCompletion; the operator wires ranks.
std::vector<Object> paddle_job(const DistributedInput& in);

// The doctor on every GPU node (paddle-image doctor --render daemonset).
struct DaemonSetInput {
  std::string ns;
  std::string image;
  std::vector<std::pair<std::string, std::string>> node_selector;
  std::vector<std::string> command;
};
std::vector<Object> doctor_daemonset(const DaemonSetInput& in);

} // namespace templates::k8s
