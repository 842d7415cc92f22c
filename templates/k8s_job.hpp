#pragma once
// `render k8s-job|paddle-distributed` (docs/templates.md#kubernetes-jobs): the request
// checked and given its defaults (4 CPUs and 16Gi per GPU, the nvidia.com/gpu
// toleration, 2 workers, the NAME-checkpoints claim), the GPU node affinity derived from
// the image's facts, and the objects as YAML under a header saying what was derived.
// What only the cli reads (the spec, the image's facts) comes in through JobSources.
#include "oci/reference.hpp"
#include "templates/k8s.hpp"

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace templates::k8s {

// The flags of `render k8s-job|paddle-distributed`, as given.
struct JobRequest {
  std::string kind;      // k8s-job | paddle-distributed
  std::string spec_file; // as given (for the header)
  std::string image;     // --image
  int gpus = 1;          // defaults; a negative value given on the command line is refused
  int workers = -1;      // -1: not given (2)
  int gpus_per_worker = 1;
  std::string format; // "" (job) | job | paddlejob
  std::string name;   // "" for the repository's last part + -train
  std::string ns;
  std::string shm_size = "16Gi";
  std::string cpu;            // "" for 4 per GPU
  std::string memory;         // "" for 16Gi per GPU
  std::string checkpoint_pvc; // "" for NAME-checkpoints
  std::string checkpoint_path = "/checkpoints";
  std::vector<std::string> env;         // NAME=VALUE
  std::vector<std::string> tolerations; // KEY[=VALUE][:EFFECT]; none given: nvidia.com/gpu:NoSchedule
  std::vector<std::string> node_selector;
  std::vector<std::string> gpu_types;
  std::vector<std::string> gpu_products;
  std::vector<std::string> gfd_labels;
  std::vector<std::string> train_args;
  std::vector<std::string> matrix_files;
  std::string service_account;
  int port = 36000;
  int backoff_limit = 3;
  bool no_gpu_affinity = false;
  bool no_tolerations = false;
  bool allow_minor_compat = false;
  bool allow_tag = false;
};

// What a job takes from the spec: its config's environment (the FLAGS_*/NCCL_* variables
// go into the manifest) and its entrypoint and cmd (the training script of
// paddle-distributed).
struct SpecConfig {
  std::vector<std::pair<std::string, std::string>> env;
  std::optional<std::vector<std::string>> entrypoint;
  std::optional<std::vector<std::string>> cmd;
};

// What render_job reads through the cli, each called once and only when needed.
struct JobSources {
  // After the image, GPU, worker and format checks (the spec is read only then).
  std::function<SpecConfig()> spec;
  // The image's facts, for the node affinity (not with no_gpu_affinity); the argument is
  // --image, parsed.
  std::function<ImageFacts(const oci::ImageRef&)> facts;
  // A warning (a product the matrix does not know), without "warning: ".
  std::function<void(const std::string&)> warn = [](const std::string&) {};
};

struct RenderedJob {
  std::string text;    // the YAML documents after the header
  nlohmann::json json; // {kind, image, objects, scheduling}
};

// The request checked (usage errors naming the flag, with an example) and rendered.
RenderedJob render_job(const JobRequest& r, const JobSources& src);

// The job's default name: the repository's last part, lower case, other characters as
// '-', at most 40, plus "-train" ("paddle-train" when nothing is left).
std::string default_job_name(const oci::ImageRef& ref);
// The container's environment: the spec's FLAGS_* and NCCL_* variables, then each
// --env NAME=VALUE (a usage error when it is not one), a later value replacing an
// earlier one in place.
std::vector<std::pair<std::string, std::string>> env_of(const SpecConfig& spec, const std::vector<std::string>& env);
// The interpreter and the training script with its arguments for
// paddle.distributed.launch: --train-arg, else the spec's ENTRYPOINT + CMD when they run
// a Python script ("python3 train.py ..."); a usage error when they do not.
std::pair<std::string, std::vector<std::string>> launch_args(const SpecConfig& spec,
                                                             const std::vector<std::string>& train_args);

} // namespace templates::k8s
