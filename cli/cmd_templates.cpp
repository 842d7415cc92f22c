// paddle-image render KIND SPEC: a spec rendered through a template (docs/templates.md).
#include "builder/build.hpp"
#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "cli/registry_flags.hpp"
#include "compat_matrix/matrix.hpp"
#include "compat_matrix/rules.hpp"
#include "doctor/image.hpp"
#include "oci/reference.hpp"
#include "spec/spec.hpp"
#include "templates/ci.hpp"
#include "templates/dockerfile.hpp"
#include "templates/from_dockerfile.hpp"
#include "templates/from_spec.hpp"
#include "templates/init.hpp"
#include "templates/k8s.hpp"
#include "util/encoding.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"

#include <algorithm>
#include <cctype>
#include <iostream>
#include <memory>
#include <regex>

namespace cli {

using util::Error;
using util::ErrorKind;

namespace {

namespace fs = std::filesystem;

const std::vector<std::string> k_render_kinds = {"dockerfile", "github-actions", "gitlab-ci", "k8s-job",
                                                 "paddle-distributed"};

struct RenderArgs {
  std::string kind;
  std::string spec_file;
  std::string output;
  std::string template_dir;
  std::string image;
  std::string requirements;
  std::string layer;
  bool no_sign = false;
  templates::ToolSource tool;
  bool json = false;
  // k8s-job, paddle-distributed
  std::string facts;
  int gpus = 1; // defaults; a negative value given on the command line is refused below
  int workers = -1;
  int gpus_per_worker = 1;
  std::string format;
  std::string name;
  std::string ns;
  std::string shm_size = "16Gi";
  std::string cpu;
  std::string memory;
  std::string checkpoint_pvc;
  std::string checkpoint_path = "/checkpoints";
  std::vector<std::string> env;
  std::vector<std::string> tolerations;
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
  RegistryFlags flags;            // reading the image's facts from a registry
  std::vector<std::string> given; // the flags given, for conflict checks
};

// --tool-archive URL --tool-sha256 HEX | --tool-image REF@sha256:HEX (CI files).
void add_tool_flags(CLI::App* c, templates::ToolSource& t, const std::string& which) {
  c->add_option("--tool-archive", t.archive_url,
                which + ": the pipeline downloads paddle-image's release archive from this URL (with --tool-sha256) "
                        "instead of building it from source");
  c->add_option("--tool-sha256", t.archive_sha256,
                which + ": the archive's SHA-256 (its SHA256SUMS line); the step fails on any other bytes");
  c->add_option("--tool-image", t.image,
                which + ": run the job in paddle-image's own image, pinned by digest (REPO@sha256:HEX)");
}

struct InitArgs {
  std::vector<std::string> args; // TEMPLATE DIR
  std::string image;
  templates::ToolSource tool;
  std::string template_dir;
  std::string from_dockerfile;
  bool json = false;
};

// Writes the files under dir, none if any of them exists (exit 3 naming them).
void write_project(const fs::path& dir, const std::vector<templates::ProjectFile>& files) {
  std::vector<std::string> existing;
  for (const auto& f : files) {
    std::error_code ec;
    if (fs::exists(fs::symlink_status(dir / f.path, ec))) {
      existing.push_back((dir / f.path).string());
    }
  }
  if (!existing.empty()) {
    throw Error(ErrorKind::input, "init writes no file over an existing one: " + util::join(existing, ", "),
                "move " + std::string(existing.size() == 1 ? "it" : "them") +
                    " away or choose another directory; nothing was written");
  }
  for (const auto& f : files) {
    fs::path p = dir / f.path;
    util::create_dirs(p.parent_path(), "directory");
    util::write_file_atomic(p, f.content);
  }
}

int run_from_dockerfile(const InitArgs& a, const Output& out) {
  if (a.args.size() > 1) {
    throw Error(ErrorKind::usage,
                "init --from-dockerfile takes at most a directory: paddle-image init --from-dockerfile "
                "Dockerfile [DIR]",
                "the spec goes to DIR (default: the Dockerfile's directory, its build context)");
  }
  fs::path file = a.from_dockerfile;
  fs::path context = file.parent_path().empty() ? fs::path(".") : file.parent_path();
  fs::path dir = a.args.empty() ? context : fs::path(a.args[0]);
  std::string rel = fs::absolute(context)
                        .lexically_normal()
                        .lexically_relative(fs::absolute(dir).lexically_normal())
                        .generic_string();
  std::string text = util::read_file(file);
  templates::FromDockerfile r = templates::spec_from_dockerfile(text, file.filename().string(), rel == "." ? "" : rel);
  write_project(dir, {{"spec.yaml", r.spec}});
  nlohmann::json unmapped = nlohmann::json::array();
  for (const auto& u : r.unmapped) {
    std::cerr << file.string() << ":" << u.line << ": not mapped: " << u.instruction << "\n  " << u.reason << "\n";
    unmapped.push_back({{"line", u.line}, {"instruction", u.instruction}, {"reason", u.reason}});
  }
  std::string summary = "wrote " + (dir / "spec.yaml").string() + " (" + std::to_string(r.unmapped.size()) +
                        " instruction(s) not mapped, listed on stderr)\n";
  if (!r.commands.empty()) {
    summary += "a requirements file is not a lock; next, from " + dir.string() + ":\n";
    for (const auto& c : r.commands) {
      summary += "  " + c + "\n";
    }
  }
  out.result({{"dockerfile", file.string()},
              {"spec", (dir / "spec.yaml").string()},
              {"unmapped", unmapped},
              {"commands", r.commands}},
             summary);
  return 0;
}

int run_init(const InitArgs& a) {
  Output out = Output::detect(a.json, false);
  if (!a.from_dockerfile.empty()) {
    if (!a.tool.archive_url.empty() || !a.tool.archive_sha256.empty() || !a.tool.image.empty()) {
      throw Error(ErrorKind::usage,
                  "--tool-archive, --tool-sha256 and --tool-image are for the CI file of init TEMPLATE DIR",
                  "--from-dockerfile writes only spec.yaml; render a CI file with paddle-image render github-actions "
                  "spec.yaml --tool-archive ...");
    }
    return run_from_dockerfile(a, out);
  }
  if (a.args.size() != 2) {
    throw Error(ErrorKind::usage, "init needs a template and a directory: paddle-image init TEMPLATE DIR",
                "templates: " + util::join(templates::project_templates(), ", "));
  }
  const std::string& name = a.args[0];
  fs::path dir = a.args[1];
  std::string image = a.image.empty() ? "registry.example.com/team/" + templates::project_name(dir) : a.image;
  std::vector<templates::ProjectFile> files = templates::project_files(name, image, a.template_dir, a.tool);
  write_project(dir, files);
  nlohmann::json written = nlohmann::json::array();
  std::string text;
  for (const auto& f : files) {
    written.push_back((dir / f.path).string());
    text += "wrote " + (dir / f.path).string() + "\n";
  }
  // The lock is what `paddle-image lock` writes for the new requirements.txt (the same
  // function, run on the project just written), so the workflow's lock check passes on
  // the first push. Nothing is fetched: requirements.txt lists nothing yet.
  spec::BuildSpec s = spec::load(dir / "spec.yaml");
  for (const auto& l : s.layers) {
    if (l.kind != spec::LayerSpec::Kind::wheels || !l.lock_file || l.lock_file->filename() != "requirements.lock") {
      continue;
    }
    util::TempDir cache(std::filesystem::temp_directory_path(), "paddle-image-init-");
    builder::BuildOptions o;
    o.cache_dir = cache.path();
    python::LockResult r = builder::lock(s, l.name, dir / "requirements.txt", {}, o, {});
    util::write_file_atomic(*l.lock_file, r.text);
    written.push_back(l.lock_file->string());
    text += "wrote " + l.lock_file->string() + "\n";
  }
  std::vector<std::string> next = {"cd " + dir.string() + " && paddle-image build spec.yaml",
                                   "list dependencies in requirements.txt, then: paddle-image lock requirements.txt -o "
                                   "requirements.lock --spec spec.yaml --layer deps"};
  text += "next:\n  " + util::join(next, "\n  ") + "\n";
  out.result({{"template", name}, {"dir", dir.string()}, {"image", image}, {"files", written}, {"next", next}}, text);
  return 0;
}

void check_kind(const std::string& kind, const std::vector<std::string>& kinds, const std::string& what) {
  for (const auto& k : kinds) {
    if (k == kind) {
      return;
    }
  }
  std::string near = util::closest(kind, kinds);
  throw Error(ErrorKind::usage, "unknown " + what + " '" + kind + "'",
              (near.empty() ? std::string() : "did you mean '" + near + "'? ") + "known: " + util::join(kinds, ", "));
}

void write_output(const std::string& output, const std::string& text) {
  if (output.empty() || output == "-") {
    std::cout << text << std::flush;
    return;
  }
  util::write_file_atomic(output, text);
  std::cerr << "wrote " << output << "\n";
}

// The flags only the Kubernetes kinds take, and those only one of them takes.
const std::vector<std::string> k_k8s_flags = {"--facts",
                                              "--name",
                                              "--namespace",
                                              "--shm-size",
                                              "--cpu",
                                              "--memory",
                                              "--checkpoint-pvc",
                                              "--checkpoint-path",
                                              "--env",
                                              "--toleration",
                                              "--no-tolerations",
                                              "--node-selector",
                                              "--gpu-type",
                                              "--gpu-product",
                                              "--gfd-label",
                                              "--no-gpu-affinity",
                                              "--allow-minor-compat",
                                              "--allow-tag",
                                              "--matrix",
                                              "--service-account",
                                              "--backoff-limit",
                                              "--insecure",
                                              "--insecure-registry",
                                              "--ca-file",
                                              "-u",
                                              "--password-stdin",
                                              "--retries",
                                              "--timeout",
                                              "--platform",
                                              "--gpus",
                                              "--workers",
                                              "--gpus-per-worker",
                                              "--format",
                                              "--port",
                                              "--train-arg"};

struct Flags {
  const CLI::App& app;
  bool given(const std::string& flag) const {
    const CLI::Option* o = app.get_option_no_throw(flag);
    return o != nullptr && o->count() > 0;
  }
  void refuse(const std::vector<std::string>& flags, const std::string& why, const std::string& fix) const {
    for (const auto& f : flags) {
      if (given(f)) {
        throw Error(ErrorKind::usage, f + " " + why, fix);
      }
    }
  }
};

std::vector<std::pair<std::string, std::string>> env_of(const spec::BuildSpec& s, const RenderArgs& a) {
  static const std::regex name("[A-Za-z_][A-Za-z0-9_]*");
  std::vector<std::pair<std::string, std::string>> env;
  auto put = [&](const std::string& k, const std::string& v) {
    for (auto& e : env) {
      if (e.first == k) {
        e.second = v;
        return;
      }
    }
    env.emplace_back(k, v);
  };
  // Paddle's and NCCL's tuning knobs from the spec, so operators see and change them in
  // the manifest; --env adds and overrides.
  for (const auto& [k, v] : s.config.env) {
    if (k.rfind("FLAGS_", 0) == 0 || k.rfind("NCCL_", 0) == 0) {
      put(k, v);
    }
  }
  for (const auto& kv : a.env) {
    auto eq = kv.find('=');
    std::string k = kv.substr(0, eq);
    if (eq == std::string::npos || !std::regex_match(k, name)) {
      throw Error(ErrorKind::usage, "--env '" + kv + "' is not NAME=VALUE with a variable name",
                  "e.g. --env NCCL_DEBUG=INFO");
    }
    put(k, kv.substr(eq + 1));
  }
  return env;
}

// The training script for paddle.distributed.launch: --train-arg, else the spec's
// ENTRYPOINT + CMD when they run a Python script ("python3 train.py ...").
std::pair<std::string, std::vector<std::string>> launch_args(const spec::BuildSpec& s, const RenderArgs& a) {
  std::vector<std::string> argv = s.config.entrypoint.value_or(std::vector<std::string>{});
  if (s.config.cmd) {
    argv.insert(argv.end(), s.config.cmd->begin(), s.config.cmd->end());
  }
  std::string python = "python3";
  if (!argv.empty() && fs::path(argv[0]).filename().string().rfind("python", 0) == 0) {
    python = argv[0];
  }
  if (!a.train_args.empty()) {
    return {python, a.train_args};
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

// The image's GPU facts: read from --facts (oci:DIR[:TAG], docker-archive:FILE or a
// registry reference), else from --image in its registry. Returns the facts and the
// digest of the manifest they were read from.
templates::k8s::ImageFacts image_facts(const RenderArgs& a, const oci::ImageRef& image, const Output& out) {
  std::string source = a.facts.empty() ? a.image : a.facts;
  return util::with_context("reading the image's facts from " + source, [&] {
    oci::ImageRef ref = oci::ImageRef::parse(source);
    RegistrySession sess(a.flags, out, ref.registry);
    oci::ImagePtr img = open_image(ref, sess);
    oci::CopyOptions sel = sess.transfer_options();
    oci::ManifestBlob chosen = oci::select_platform(*img, sel);
    if (!image.digest.empty() && img->root().digest.str() != image.digest && chosen.digest.str() != image.digest) {
      throw Error(ErrorKind::input,
                  "--facts " + source + " is manifest " + chosen.digest.str() + ", but --image pins " + image.digest,
                  "read the facts from the image the job runs: drop --facts, or give the layout the image was "
                  "pushed from");
    }
    doctor::ImageNeeds n = doctor::image_needs(*img, sel, false, source);
    sess.finish();
    templates::k8s::ImageFacts f = n; // the stated facts, without what a layer scan found
    f.source = source;
    return f;
  });
}

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

struct Rendered {
  std::string text;
  nlohmann::json json;
};

Rendered render_k8s(const RenderArgs& a, const Flags& flags, const Output& out) {
  using namespace templates::k8s;
  bool distributed = a.kind == "paddle-distributed";
  if (distributed) {
    flags.refuse({"--gpus"}, "is for k8s-job", "paddle-distributed takes --workers N --gpus-per-worker G");
  } else {
    flags.refuse({"--workers", "--gpus-per-worker", "--format", "--port", "--train-arg"}, "is for paddle-distributed",
                 "k8s-job renders one pod: --gpus N");
  }
  if (a.no_gpu_affinity) {
    flags.refuse({"--gpu-type", "--gpu-product", "--gfd-label", "--allow-minor-compat"},
                 "conflicts with --no-gpu-affinity (nothing would check it)",
                 "drop one of them: --no-gpu-affinity is for clusters without GPU Feature Discovery labels");
  }
  if (a.no_tolerations) {
    flags.refuse({"--toleration"}, "conflicts with --no-tolerations", "drop one of them");
  }
  if (a.image.empty()) {
    throw Error(ErrorKind::usage, a.kind + " needs --image: the image the pods run, pinned by digest",
                "e.g. --image registry.example.com/team/ocr@sha256:... (paddle-image build --push --digest-file "
                "writes the digest)");
  }
  oci::ImageRef ref;
  try {
    ref = oci::ImageRef::parse(a.image);
  } catch (const Error& e) {
    throw Error(ErrorKind::usage, "--image '" + a.image + "' is not an image reference: " + e.what(),
                "e.g. registry.example.com/team/ocr@sha256:...");
  }
  if (ref.kind != oci::ImageRef::Kind::registry || a.image.rfind("docker://", 0) == 0) {
    throw Error(ErrorKind::usage, "--image '" + a.image + "' must be a registry reference (the kubelet pulls it)",
                "push the image first (paddle-image push), then give REGISTRY/REPO@sha256:...; read its facts from "
                "the layout with --facts oci:DIR");
  }
  if (ref.digest.empty() && !a.allow_tag) {
    throw Error(ErrorKind::usage,
                "--image '" + a.image +
                    "' names a tag, not a digest: a tag can move, and the pods would run an image whose needs were "
                    "never checked",
                "pin it: --image " + ref.registry + "/" + ref.repository +
                    "@sha256:... (build --push --digest-file FILE writes it), or accept the risk with --allow-tag");
  }
  int gpus = distributed ? a.gpus_per_worker : a.gpus;
  if (gpus < 1 || gpus > 64) {
    throw Error(ErrorKind::usage,
                std::string(distributed ? "--gpus-per-worker " : "--gpus ") + std::to_string(gpus) +
                    ": a GPU training pod needs 1 to 64 GPUs",
                "for a CPU-only job this template is the wrong tool; give at least 1");
  }
  int workers = a.workers == -1 ? 2 : a.workers;
  if (distributed && (workers < 1 || workers > 10000)) {
    throw Error(ErrorKind::usage, "--workers " + std::to_string(workers) + ": give 1 to 10000 workers",
                "e.g. --workers 4");
  }
  std::string format = a.format.empty() ? "job" : a.format;
  if (format != "job" && format != "paddlejob") {
    std::string near = util::closest(format, {"job", "paddlejob"});
    throw Error(ErrorKind::usage, "--format '" + format + "': unknown",
                (near.empty() ? std::string() : "did you mean '" + near + "'? ") + "formats: job, paddlejob");
  }
  spec::BuildSpec s = spec::load(a.spec_file);
  JobInput in;
  in.name = a.name.empty() ? default_job_name(ref) : a.name;
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
  if (distributed && !(in.name[0] >= 'a' && in.name[0] <= 'z')) {
    throw Error(ErrorKind::usage,
                "--name '" + in.name +
                    "': paddle-distributed names a Service after the job, and a Service name "
                    "starts with a letter",
                "e.g. --name ocr-train");
  }
  in.ns = a.ns;
  if (!in.ns.empty() && !dns1123_label(in.ns)) {
    throw Error(ErrorKind::usage, "--namespace '" + in.ns + "' is not a Kubernetes namespace (a DNS-1123 label)",
                "e.g. --namespace training");
  }
  in.image = a.image;
  in.gpus = gpus;
  for (auto [flag, value] : {std::pair{"--shm-size", &a.shm_size}, std::pair{"--memory", &a.memory}}) {
    if (!value->empty() && !util::parse_byte_quantity(*value)) {
      throw Error(ErrorKind::usage, std::string(flag) + " '" + *value + "' is not a memory quantity",
                  std::string("e.g. ") + flag + " 16Gi");
    }
  }
  static const std::regex cpu_re("([0-9]+(\\.[0-9]{1,3})?|[0-9]+m)");
  if (!a.cpu.empty() && !std::regex_match(a.cpu, cpu_re)) {
    throw Error(ErrorKind::usage, "--cpu '" + a.cpu + "' is not a CPU quantity", "e.g. --cpu 8 or --cpu 500m");
  }
  in.shm_size = a.shm_size;
  in.cpu = a.cpu.empty() ? std::to_string(4 * gpus) : a.cpu;
  in.memory = a.memory.empty() ? std::to_string(16 * gpus) + "Gi" : a.memory;
  if (!a.checkpoint_pvc.empty() && !dns1123_subdomain(a.checkpoint_pvc)) {
    throw Error(ErrorKind::usage, "--checkpoint-pvc '" + a.checkpoint_pvc + "' is not a claim name",
                "e.g. --checkpoint-pvc ocr-checkpoints");
  }
  in.checkpoint_claim = a.checkpoint_pvc.empty() ? in.name + "-checkpoints" : a.checkpoint_pvc;
  bool control = std::any_of(a.checkpoint_path.begin(), a.checkpoint_path.end(), [](char c) {
    auto u = static_cast<unsigned char>(c);
    return u < 0x20 || u == 0x7f;
  });
  if (control) {
    throw Error(ErrorKind::usage,
                "--checkpoint-path '" + util::escape_bytes(a.checkpoint_path) + "' has a control character",
                "e.g. --checkpoint-path /checkpoints");
  }
  if (a.checkpoint_path.empty() || a.checkpoint_path[0] != '/' || a.checkpoint_path.find(':') != std::string::npos) {
    throw Error(ErrorKind::usage, "--checkpoint-path '" + a.checkpoint_path + "' must be an absolute path",
                "e.g. --checkpoint-path /checkpoints");
  }
  in.checkpoint_path = a.checkpoint_path;
  in.env = env_of(s, a);
  if (!a.no_tolerations) {
    if (a.tolerations.empty()) {
      in.tolerations.push_back(parse_toleration("nvidia.com/gpu:NoSchedule"));
    }
    for (const auto& t : a.tolerations) {
      in.tolerations.push_back(parse_toleration(t));
    }
  }
  for (const auto& kv : a.node_selector) {
    in.node_selector.push_back(parse_selector(kv, "--node-selector"));
  }
  if (!a.service_account.empty() && !dns1123_subdomain(a.service_account)) {
    throw Error(ErrorKind::usage, "--service-account '" + a.service_account + "' is not a service account name",
                "e.g. --service-account trainer");
  }
  in.service_account = a.service_account;
  if (a.backoff_limit < 0 || a.backoff_limit > 1000) {
    throw Error(ErrorKind::usage, "--backoff-limit " + std::to_string(a.backoff_limit) + ": give 0 to 1000",
                "e.g. --backoff-limit 3");
  }
  in.backoff_limit = a.backoff_limit;
  if (a.port < 1 || a.port > 65535) {
    throw Error(ErrorKind::usage, "--port " + std::to_string(a.port) + " is not a TCP port", "e.g. --port 36000");
  }
  GfdKeys keys;
  for (const auto& g : a.gfd_labels) {
    keys.set(g);
  }
  nlohmann::json scheduling = nullptr;
  std::vector<std::string> header = {"Rendered by paddle-image from " + util::escape_bytes(a.spec_file) + " for " +
                                     a.image + "."};
  if (!a.no_gpu_affinity) {
    ImageFacts facts = image_facts(a, ref, out);
    compat::Matrix m = compat::load_matrix(a.matrix_files);
    GpuNeeds needs = gpu_needs(facts, m, a.allow_minor_compat);
    GpuChoice choice{a.gpu_types, a.gpu_products, in.node_selector};
    Placement p = place(needs, choice, keys, m, [](const std::string& w) { std::cerr << "warning: " << w << "\n"; });
    in.affinity = node_affinity(needs, p, keys);
    std::vector<std::string> caps;
    for (const auto& c : p.capabilities) {
      caps.push_back((c.exact ? "" : ">=") + std::to_string(c.major) + "." + std::to_string(c.min_minor));
    }
    scheduling = {
        {"driver_min", needs.driver},     {"driver_from", needs.driver_from}, {"archs", nlohmann::json::array()},
        {"archs_from", needs.archs_from}, {"compute_capabilities", caps},     {"gpu_memory_mib", needs.memory_mib},
        {"products", p.products}};
    std::vector<std::string> sms;
    for (int x : needs.archs) {
      sms.push_back(compat::sm_name(x));
      scheduling["archs"].push_back(sms.back());
    }
    header.push_back("Node affinity on NVIDIA GPU Feature Discovery labels: driver >= " + needs.driver + " (" +
                     needs.driver_from + "); compute capability " + util::join(caps, " or ") + " (the image ships " +
                     util::join(sms, ",") + ")" +
                     (needs.memory_mib > 0 ? "; GPU memory >= " + std::to_string(needs.memory_mib) + " MiB" : "") +
                     (p.products.empty() ? "" : "; products " + util::join(p.products, ", ")) + ".");
    header.push_back("Nodes without these labels never match: check them with");
    header.push_back("  kubectl get nodes -L " + keys.driver_major + "," + keys.compute_major + "," + keys.memory +
                     "," + keys.product);
    header.push_back("and render with --no-gpu-affinity on clusters without GPU Feature Discovery.");
  } else {
    header.push_back("No GPU node affinity (--no-gpu-affinity): the pods may land on a node whose driver or GPU "
                     "cannot run the image.");
  }
  if (a.checkpoint_pvc.empty()) {
    header.push_back("Checkpoints go to the PersistentVolumeClaim " + in.checkpoint_claim + " at " +
                     in.checkpoint_path + (distributed ? " (ReadWriteMany: every worker mounts it)" : "") +
                     "; create it first, or name yours with --checkpoint-pvc.");
  }
  std::vector<Object> docs;
  if (!distributed) {
    docs = training_job(in);
  } else {
    DistributedInput d;
    d.job = in;
    d.workers = workers;
    d.port = a.port;
    auto [python, args] = launch_args(s, a);
    d.python = python;
    d.launch_args = args;
    if (format == "paddlejob") {
      docs = paddle_job(d);
      header.push_back("PaddleJob (batch.paddlepaddle.org/v1) needs paddle-operator in the cluster.");
    } else {
      docs = distributed_job(d);
      header.push_back("Indexed Job with a headless Service: pod i is " + in.name + "-i." + in.name +
                       "; the rank is JOB_COMPLETION_INDEX (Kubernetes >= 1.26 for podFailurePolicy).");
    }
  }
  Rendered r;
  r.text = to_yaml_stream(docs, util::join(header, "\n"));
  nlohmann::json objects = nlohmann::json::array();
  for (const auto& d : docs) {
    objects.push_back(nlohmann::json::parse(d.dump()));
  }
  r.json = {{"kind", a.kind}, {"image", a.image}, {"objects", objects}, {"scheduling", scheduling}};
  return r;
}

int run_render(const RenderArgs& a, const CLI::App& app) {
  check_kind(a.kind, k_render_kinds, "render kind");
  Output out = Output::detect(a.json, false);
  Flags flags{app};
  Rendered r;
  if (a.kind == "k8s-job" || a.kind == "paddle-distributed") {
    flags.refuse(
        {"--requirements", "--layer", "--no-sign", "--template-dir", "--tool-archive", "--tool-sha256", "--tool-image"},
        "is not for " + a.kind,
        "Kubernetes objects are built as data (docs/templates.md); --template-dir is for the Dockerfile, "
        "CI and init templates");
    r = render_k8s(a, flags, out);
  } else {
    flags.refuse(k_k8s_flags, "is for k8s-job and paddle-distributed only", "drop it for " + a.kind);
    spec::BuildSpec s = spec::load(a.spec_file);
    if (a.kind == "dockerfile") {
      flags.refuse({"--tool-archive", "--tool-sha256", "--tool-image"}, "is for github-actions and gitlab-ci",
                   "drop it for a Dockerfile");
      r.text = templates::render_dockerfile(templates::dockerfile_input(s, a.spec_file), a.template_dir);
    } else {
      templates::CiRequest ci{a.spec_file, a.image, a.no_sign, a.tool, a.requirements, a.layer};
      r.text = templates::render_ci(a.kind, templates::ci_input(s, ci), a.template_dir);
    }
    r.json = {{"kind", a.kind}};
  }
  if (a.json) {
    r.json["text"] = r.text;
    if (!a.output.empty() && a.output != "-") {
      util::write_file_atomic(a.output, r.text);
      r.json["output"] = a.output;
    }
    out.result(r.json, "");
    return 0;
  }
  write_output(a.output, r.text);
  return 0;
}

} // namespace

void add_template_commands(CLI::App& app, std::vector<std::pair<CLI::App*, Action>>& actions) {
  auto a = std::make_shared<RenderArgs>();
  CLI::App* r = app.add_subcommand(
      "render", "Render a spec through a template: dockerfile, github-actions, gitlab-ci (docs/templates.md)");
  r->add_option("kind", a->kind, "What to render: " + util::join(k_render_kinds, ", "))->required();
  r->add_option("spec", a->spec_file, "The spec file")->required();
  r->add_option("-o,--output", a->output, "Write here instead of stdout");
  r->add_option("--template-dir", a->template_dir,
                "A directory whose template files replace the built-in ones of the same name");
  r->add_option("--image", a->image,
                "github-actions, gitlab-ci: the repository to push to (default: the spec's image.name); the tag is "
                "the commit");
  r->add_option("--requirements", a->requirements,
                "github-actions, gitlab-ci: add a step that checks the lock of the spec's wheels layer from an index "
                "is current (paddle-image lock FILE ... && diff)");
  r->add_option("--layer", a->layer, "github-actions, gitlab-ci: the wheels layer --requirements is for");
  r->add_flag("--no-sign", a->no_sign, "github-actions, gitlab-ci: push without --sign (no key secrets)");
  add_tool_flags(r, a->tool, "github-actions, gitlab-ci");
  r->add_flag("--json", a->json, "Print {kind, text, objects, scheduling} as JSON on stdout");
  // k8s-job, paddle-distributed (docs/templates.md#kubernetes-jobs)
  r->add_option("--facts", a->facts,
                "k8s: read the image's facts (labels) here instead of from --image's registry: oci:DIR[:TAG], "
                "docker-archive:FILE or a registry reference");
  r->add_option("--gpus", a->gpus, "k8s-job: nvidia.com/gpu per pod (default 1)");
  r->add_option("--workers", a->workers, "paddle-distributed: worker pods (default 2)");
  r->add_option("--gpus-per-worker", a->gpus_per_worker, "paddle-distributed: nvidia.com/gpu per worker (default 1)");
  r->add_option("--format", a->format, "paddle-distributed: job (Indexed Job + headless Service) or paddlejob");
  r->add_option("--name", a->name, "k8s: the job's name (default: the repository's last part + -train)");
  r->add_option("--namespace", a->ns, "k8s: the objects' namespace (default: none, kubectl's)");
  r->add_option("--shm-size", a->shm_size, "k8s: /dev/shm size, a memory emptyDir (default 16Gi)");
  r->add_option("--cpu", a->cpu, "k8s: CPU request per pod (default 4 per GPU)");
  r->add_option("--memory", a->memory, "k8s: memory request per pod (default 16Gi per GPU)");
  r->add_option("--checkpoint-pvc", a->checkpoint_pvc, "k8s: the checkpoint claim (default NAME-checkpoints)");
  r->add_option("--checkpoint-path", a->checkpoint_path, "k8s: where it is mounted (default /checkpoints)");
  r->add_option("--env", a->env, "k8s: NAME=VALUE for the container, over the spec's FLAGS_*/NCCL_* (repeatable)");
  r->add_option("--toleration", a->tolerations,
                "k8s: KEY[=VALUE][:EFFECT] (repeatable; default nvidia.com/gpu:NoSchedule)");
  r->add_flag("--no-tolerations", a->no_tolerations, "k8s: no tolerations at all");
  r->add_option("--node-selector", a->node_selector,
                "k8s: KEY=VALUE node selector, checked against the image (repeatable)");
  r->add_option("--gpu-type", a->gpu_types,
                "k8s: only these GPUs (matrix names: A100, T4, sm_80...), checked against the image (repeatable)");
  r->add_option("--gpu-product", a->gpu_products,
                "k8s: only nodes whose nvidia.com/gpu.product is this value, checked against the image (repeatable)");
  r->add_option("--gfd-label", a->gfd_labels,
                "k8s: NAME=KEY, another node label for a GFD fact (driver.major, driver.minor, driver.rev, "
                "compute.major, compute.minor, memory, product; repeatable)");
  r->add_flag("--no-gpu-affinity", a->no_gpu_affinity,
              "k8s: no node affinity (clusters without GPU Feature Discovery)");
  r->add_flag("--allow-minor-compat", a->allow_minor_compat,
              "k8s: accept drivers that run the image's CUDA under minor-version compatibility only");
  r->add_flag("--allow-tag", a->allow_tag, "k8s: accept an --image pinned by tag only");
  r->add_option("--matrix", a->matrix_files, "k8s: extra compatibility-matrix files");
  r->add_option("--service-account", a->service_account, "k8s: the pods' service account");
  r->add_option("--backoff-limit", a->backoff_limit, "k8s: failed pods replaced before the job fails (default 3)");
  r->add_option("--port", a->port, "paddle-distributed: the launch master's port on worker 0 (default 36000)");
  r->add_option("--train-arg", a->train_args,
                "paddle-distributed: the training script and its arguments, one per flag (default: the spec's "
                "python entrypoint/cmd)");
  a->flags.add(r, false, true);
  actions.emplace_back(r, [a, r] { return run_render(*a, *r); });

  auto i = std::make_shared<InitArgs>();
  CLI::App* c = app.add_subcommand("init", "Start a project: spec.yaml, .paddleimageignore, requirements, CI file "
                                           "(templates: " +
                                               util::join(templates::project_templates(), ", ") + ")");
  c->add_option("args", i->args, "TEMPLATE DIR (with --from-dockerfile: [DIR])");
  c->add_option("--from-dockerfile", i->from_dockerfile,
                "Write DIR/spec.yaml from a Dockerfile (FROM, COPY/ADD, WORKDIR, ENV, ENTRYPOINT/CMD, EXPOSE, USER, "
                "LABEL, RUN pip install -r); what cannot be mapped is listed with its line");
  c->add_option("--image", i->image, "The repository the spec and CI push to (default registry.example.com/team/DIR)");
  add_tool_flags(c, i->tool, "The CI file");
  c->add_option("--template-dir", i->template_dir,
                "A directory whose template files replace the built-in ones of the same name");
  c->add_flag("--json", i->json, "Print the result as JSON on stdout");
  actions.emplace_back(c, [i] { return run_init(*i); });
}

} // namespace cli
