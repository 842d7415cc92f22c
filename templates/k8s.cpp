#include "templates/k8s.hpp"

#include "compat_matrix/rules.hpp"
#include "templates/render.hpp"
#include "util/encoding.hpp"
#include "util/error.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <sstream>

namespace templates::k8s {

using util::Error;
using util::ErrorKind;

// --- Names and labels

bool dns1123_label(const std::string& s) {
  static const std::regex re("[a-z0-9]([-a-z0-9]*[a-z0-9])?");
  return s.size() <= 63 && std::regex_match(s, re);
}

bool dns1123_subdomain(const std::string& s) {
  static const std::regex re("[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*");
  return s.size() <= 253 && std::regex_match(s, re);
}

namespace {

bool label_name(const std::string& s) {
  static const std::regex re("[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?");
  return s.size() <= 63 && std::regex_match(s, re);
}

} // namespace

bool label_key(const std::string& s) {
  auto slash = s.find('/');
  if (slash == std::string::npos) {
    return label_name(s);
  }
  return dns1123_subdomain(s.substr(0, slash)) && label_name(s.substr(slash + 1));
}

bool label_value(const std::string& s) {
  return s.empty() || label_name(s);
}

std::pair<std::string, std::string> parse_selector(const std::string& text, const std::string& flag) {
  auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw Error(ErrorKind::usage, flag + " '" + text + "' is not KEY=VALUE", "e.g. " + flag + " nodepool=a100");
  }
  std::string k = text.substr(0, eq);
  std::string v = text.substr(eq + 1);
  if (!label_key(k)) {
    throw Error(ErrorKind::usage,
                flag + " '" + text + "': '" + k +
                    "' is not a Kubernetes label key ([PREFIX/]NAME: the prefix a DNS subdomain, the name at most 63 "
                    "of A-Z a-z 0-9 - _ .)",
                "e.g. " + flag + " nvidia.com/gpu.present=true");
  }
  if (!label_value(v)) {
    throw Error(ErrorKind::usage,
                flag + " '" + text + "': '" + v +
                    "' is not a Kubernetes label value (at most 63 of A-Z a-z 0-9 - _ ., starting and ending with a "
                    "letter or digit)",
                "e.g. " + flag + " nvidia.com/gpu.present=true");
  }
  return {k, v};
}

// --- YAML

namespace {

bool plain_key(const std::string& k) {
  static const std::regex re("[A-Za-z_][A-Za-z0-9_./-]*");
  return std::regex_match(k, re) && k != "true" && k != "false" && k != "null" && k != "yes" && k != "no" &&
         k != "on" && k != "off" && k != "y" && k != "n";
}

std::string scalar(const Object& v) {
  if (v.is_string()) {
    return yaml_quote(v.get<std::string>());
  }
  if (v.is_null()) {
    return "null";
  }
  return v.dump(); // numbers and booleans
}

void emit(std::string& out, const Object& v, int indent);

// A value after "key:" or "-".
void emit_value(std::string& out, const Object& v, int indent) {
  if (v.is_object() && !v.empty()) {
    out += "\n";
    emit(out, v, indent);
  } else if (v.is_array() && !v.empty()) {
    out += "\n";
    emit(out, v, indent);
  } else if (v.is_object()) {
    out += " {}\n";
  } else if (v.is_array()) {
    out += " []\n";
  } else {
    out += " " + scalar(v) + "\n";
  }
}

void emit(std::string& out, const Object& v, int indent) {
  std::string pad(static_cast<std::size_t>(indent), ' ');
  if (v.is_object()) {
    for (auto it = v.begin(); it != v.end(); ++it) {
      out += pad + (plain_key(it.key()) ? it.key() : yaml_quote(it.key())) + ":";
      // Lists of a mapping are indented by two, as kubectl writes them.
      emit_value(out, it.value(), indent + 2);
    }
    return;
  }
  for (const auto& item : v) {
    if ((item.is_object() || item.is_array()) && !item.empty()) {
      // The first line of the item goes after "- ".
      std::string inner;
      emit(inner, item, indent + 2);
      out += pad + "- " + inner.substr(static_cast<std::size_t>(indent) + 2);
    } else {
      out += pad + "-";
      emit_value(out, item, indent + 2);
    }
  }
}

} // namespace

std::string to_yaml(const Object& doc) {
  std::string out;
  emit(out, doc, 0);
  return out;
}

std::string to_yaml_stream(const std::vector<Object>& docs, const std::string& header) {
  std::string out;
  std::istringstream in(header);
  for (std::string line; std::getline(in, line);) {
    // A value in the header (a path, a name) cannot end the comment: a CR, NEL or
    // U+2028 inside a line is written as an escape.
    out += line.empty() ? "#\n" : "# " + comment_text(line) + "\n";
  }
  for (std::size_t i = 0; i < docs.size(); ++i) {
    out += "---\n" + to_yaml(docs[i]);
  }
  return out;
}

// --- GPU scheduling

std::vector<std::string> GfdKeys::names() {
  return {"driver.major", "driver.minor", "driver.rev", "compute.major", "compute.minor", "memory", "product"};
}

std::string* GfdKeys::find(const std::string& name) {
  static const std::map<std::string, std::string GfdKeys::*> fields = {{"driver.major", &GfdKeys::driver_major},
                                                                       {"driver.minor", &GfdKeys::driver_minor},
                                                                       {"driver.rev", &GfdKeys::driver_rev},
                                                                       {"compute.major", &GfdKeys::compute_major},
                                                                       {"compute.minor", &GfdKeys::compute_minor},
                                                                       {"memory", &GfdKeys::memory},
                                                                       {"product", &GfdKeys::product}};
  auto it = fields.find(name);
  return it == fields.end() ? nullptr : &(this->*(it->second));
}

void GfdKeys::set(const std::string& assignment) {
  auto eq = assignment.find('=');
  std::string name = assignment.substr(0, eq);
  std::string key = eq == std::string::npos ? std::string() : assignment.substr(eq + 1);
  std::string* field = find(name);
  if (field == nullptr) {
    std::string near = util::closest(name, names());
    throw Error(ErrorKind::usage, "--gfd-label '" + assignment + "': unknown label name '" + name + "'",
                (near.empty() ? std::string() : "did you mean '" + near + "'? ") +
                    "names: " + util::join(names(), ", ") +
                    "; e.g. --gfd-label driver.rev=nvidia.com/cuda.driver-version.revision");
  }
  if (eq == std::string::npos || !label_key(key)) {
    throw Error(ErrorKind::usage, "--gfd-label '" + assignment + "': '" + key + "' is not a Kubernetes label key",
                "give NAME=KEY, e.g. --gfd-label driver.major=nvidia.com/cuda.driver-version.major");
  }
  *field = key;
}

namespace {

const compat::ImageRow* published_image(const compat::Matrix& m, const ImageFacts& f) {
  if (f.paddle.empty() || f.cuda.empty()) {
    return nullptr;
  }
  const compat::ReleaseRow* release = m.find_release(f.paddle);
  return release == nullptr ? nullptr : compat::find_published(*release, f.cuda);
}

std::string sm_list(const std::vector<int>& archs) {
  std::vector<std::string> s;
  for (int a : archs) {
    s.push_back(compat::sm_name(a));
  }
  return util::join(s, ",");
}

} // namespace

GpuNeeds gpu_needs(const ImageFacts& f, const compat::Matrix& m, bool allow_minor_compat) {
  GpuNeeds n;
  const std::string fix_labels =
      "build the image with paddle-image (requires: or base: auto write the io.paddle-image.* labels), or render "
      "without GPU constraints: --no-gpu-affinity";
  // Driver floor.
  if (allow_minor_compat && !f.driver_min_compat.empty()) {
    n.driver = f.driver_min_compat;
    n.driver_from = "label io.paddle-image.driver.min-compat";
  } else if (!f.driver_min.empty() && !allow_minor_compat) {
    n.driver = f.driver_min;
    n.driver_from = "label io.paddle-image.driver.min";
  } else if (const auto* row = f.cuda.empty() ? nullptr : m.find_cuda(f.cuda); row != nullptr && row->released) {
    compat::DriverNeeds dn = compat::DriverNeeds::of(*row);
    n.driver = dn.lowest(!allow_minor_compat);
    n.driver_from = "CUDA " + row->version + " in the compatibility matrix (" + row->origin + ")";
  } else if (!f.driver_min.empty()) {
    n.driver = f.driver_min;
    n.driver_from = "label io.paddle-image.driver.min";
  }
  if (n.driver.empty()) {
    throw Error(ErrorKind::input,
                f.source + " states no minimum driver and no CUDA version the compatibility matrix knows "
                           "(io.paddle-image.driver.min, io.paddle-image.cuda.version, CUDA_VERSION)",
                fix_labels);
  }
  // Architectures.
  for (const auto& a : f.archs) {
    if (auto sm = compat::sm_number(a)) {
      n.archs.push_back(*sm);
    }
  }
  if (!n.archs.empty()) {
    n.archs_from = "label io.paddle-image.gpu.archs";
  } else if (const auto* img = published_image(m, f); img != nullptr && !img->archs.empty()) {
    n.archs = img->archs;
    n.archs_from = "the published image " + img->tag + " (" + img->origin + ")";
  } else {
    throw Error(ErrorKind::input,
                f.source + " states no GPU architectures (io.paddle-image.gpu.archs) and is not a published Paddle "
                           "image the compatibility matrix knows",
                "state them in the spec (requires.gpu_archs: [sm_80, sm_90]) and rebuild, or " + fix_labels);
  }
  std::sort(n.archs.begin(), n.archs.end());
  n.archs.erase(std::unique(n.archs.begin(), n.archs.end()), n.archs.end());
  n.memory_mib = f.gpu_memory_mib;
  return n;
}

namespace {

// A GFD product ("NVIDIA-A100-SXM4-80GB", "Tesla-T4", "...-MIG-1g.5gb") as the matrix
// names GPUs; nullopt when the matrix does not know it.
std::optional<compat::Gpu> product_gpu(const compat::Matrix& m, const std::string& product) {
  std::string name = product;
  if (auto mig = name.find("-MIG-"); mig != std::string::npos) {
    name = name.substr(0, mig);
  }
  std::replace(name.begin(), name.end(), '-', ' ');
  try {
    return compat::find_gpu(m, name, "--gpu-product");
  } catch (const Error&) {
  }
  try {
    return compat::find_gpu(m, product, "--gpu-product");
  } catch (const Error&) {
    return std::nullopt;
  }
}

void check_served(const GpuNeeds& needs, const compat::Gpu& g, const std::string& flag) {
  if (!compat::ships_code_for(needs.archs, g.cc)) {
    throw Error(ErrorKind::usage,
                flag + ": the image has no kernels for " + g.name + " (compute capability " + g.cc.text + ", " +
                    g.sm() + "); it ships " + sm_list(needs.archs) + " (" + needs.archs_from +
                    "), so the job would fail with CUDA error 209 (no kernel image is available)",
                "choose a GPU the image serves, or rebuild with " + g.sm() +
                    " in requires.gpu_archs: paddle-image resolve --gpu '" + g.name + "'");
  }
}

} // namespace

Placement place(const GpuNeeds& needs, const GpuChoice& choice, const GfdKeys& keys, const compat::Matrix& m,
                const std::function<void(const std::string&)>& warn) {
  Placement p;
  std::vector<std::pair<std::string, std::string>> products; // value, flag
  for (const auto& v : choice.products) {
    products.emplace_back(v, "--gpu-product " + v);
  }
  std::vector<compat::Gpu> types;
  for (const auto& t : choice.gpu_types) {
    compat::Gpu g;
    try {
      g = compat::find_gpu(m, t, "--gpu-type");
    } catch (const Error& e) {
      // A flag's value the matrix does not know is a usage error (exit 2), as for any flag.
      throw Error(e.kind() == ErrorKind::input ? ErrorKind::usage : e.kind(), e.what(), e.hint());
    }
    check_served(needs, g, "--gpu-type " + t);
    types.push_back(g);
  }
  for (const auto& [k, v] : choice.node_labels) {
    std::string flag = "--node-selector " + k + "=" + v;
    if (k == keys.product) {
      products.emplace_back(v, flag);
    } else if (k == keys.compute_major || k == keys.compute_minor) {
      throw Error(ErrorKind::usage, flag + ": the compute capability is set from the image's architectures",
                  "narrow to GPUs with --gpu-type NAME (checked against the image) instead");
    } else if (k == keys.memory) {
      char* end = nullptr;
      unsigned long long mib = std::strtoull(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0') {
        throw Error(ErrorKind::usage, flag + ": " + k + " is a number of MiB", "e.g. " + k + "=81920");
      }
      if (mib < needs.memory_mib) {
        throw Error(ErrorKind::usage,
                    flag + ": the image asks for at least " + std::to_string(needs.memory_mib) +
                        " MiB of GPU memory (requires.gpu_memory)",
                    "select nodes with at least that much, or lower requires.gpu_memory and rebuild");
      }
    }
  }
  for (const auto& [v, flag] : products) {
    if (!label_value(v)) {
      throw Error(ErrorKind::usage, flag + ": '" + v + "' is not a Kubernetes label value",
                  "give the value GFD puts in " + keys.product + ", e.g. NVIDIA-A100-SXM4-80GB");
    }
    if (auto g = product_gpu(m, v)) {
      check_served(needs, *g, flag);
    } else {
      warn(flag + ": the compatibility matrix does not know this GPU, so whether the image has kernels for it is "
                  "not checked (the compute-capability terms still apply)");
    }
    if (std::find(p.products.begin(), p.products.end(), v) == p.products.end()) {
      p.products.push_back(v);
    }
  }
  if (!types.empty()) {
    for (const auto& g : types) {
      Placement::Capability c{static_cast<int>(g.cc.parts.at(0)),
                              g.cc.parts.size() > 1 ? static_cast<int>(g.cc.parts[1]) : 0, true};
      bool seen = std::any_of(p.capabilities.begin(), p.capabilities.end(),
                              [&](const auto& x) { return x.major == c.major && x.min_minor == c.min_minor; });
      if (!seen) {
        p.capabilities.push_back(c);
      }
    }
    return p;
  }
  std::map<int, int> lowest_minor; // SM major -> lowest minor with code
  for (int a : needs.archs) {
    auto [it, inserted] = lowest_minor.emplace(a / 10, a % 10);
    if (!inserted) {
      it->second = std::min(it->second, a % 10);
    }
  }
  for (const auto& [major, minor] : lowest_minor) {
    p.capabilities.push_back({major, minor, false});
  }
  return p;
}

namespace {

// Gt/Lt values must be label values too: a negative number is none, and the scheduler
// would match no node with it. "x Gt -1" says nothing a present label does not, so it
// is left out.
void require(Object& exprs, const std::string& key, const std::string& op, long long value) {
  if (op == "Gt" && value < 0) {
    return;
  }
  exprs.push_back(Object{{"key", key}, {"operator", op}, {"values", Object::array({std::to_string(value)})}});
}

} // namespace

Object node_affinity(const GpuNeeds& needs, const Placement& placement, const GfdKeys& keys) {
  compat::Version d = compat::Version::parse(needs.driver, "driver minimum");
  long major = d.parts.at(0);
  long minor = d.parts.size() > 1 ? d.parts[1] : 0;
  bool has_rev = d.parts.size() > 2;
  long rev = has_rev ? d.parts[2] : 0;
  // driver >= M.m.r: major > M; or major == M and minor > m; or major == M, minor == m
  // and rev >= r (a two-part minimum needs no rev: minor >= m). "==" is written as
  // Gt x-1 and Lt x+1: In/NotIn would compare strings ("03" != "3").
  std::vector<Object> driver_terms;
  Object t = Object::array();
  require(t, keys.driver_major, "Gt", major);
  driver_terms.push_back(t);
  auto same_major = [&] {
    Object e = Object::array();
    require(e, keys.driver_major, "Gt", major - 1);
    require(e, keys.driver_major, "Lt", major + 1);
    return e;
  };
  if (has_rev && rev > 0) {
    t = same_major();
    require(t, keys.driver_minor, "Gt", minor);
    driver_terms.push_back(t);
    t = same_major();
    require(t, keys.driver_minor, "Gt", minor - 1);
    require(t, keys.driver_minor, "Lt", minor + 1);
    require(t, keys.driver_rev, "Gt", rev - 1);
    driver_terms.push_back(t);
  } else {
    t = same_major();
    require(t, keys.driver_minor, "Gt", minor - 1);
    driver_terms.push_back(t);
  }
  Object terms = Object::array();
  for (const auto& cap : placement.capabilities) {
    for (const auto& dt : driver_terms) {
      Object exprs = dt;
      require(exprs, keys.compute_major, "Gt", cap.major - 1);
      require(exprs, keys.compute_major, "Lt", cap.major + 1);
      if (cap.exact) {
        require(exprs, keys.compute_minor, "Gt", cap.min_minor - 1);
        require(exprs, keys.compute_minor, "Lt", cap.min_minor + 1);
      } else {
        require(exprs, keys.compute_minor, "Gt", cap.min_minor - 1);
      }
      if (needs.memory_mib > 0) {
        require(exprs, keys.memory, "Gt", static_cast<long long>(needs.memory_mib) - 1);
      }
      if (!placement.products.empty()) {
        Object values = Object::array();
        for (const auto& v : placement.products) {
          values.push_back(v);
        }
        exprs.push_back(Object{{"key", keys.product}, {"operator", "In"}, {"values", values}});
      }
      terms.push_back(Object{{"matchExpressions", exprs}});
    }
  }
  return Object{{"nodeAffinity", {{"requiredDuringSchedulingIgnoredDuringExecution", {{"nodeSelectorTerms", terms}}}}}};
}

// --- Workloads

Toleration parse_toleration(const std::string& text) {
  static const std::vector<std::string> effects = {"NoSchedule", "PreferNoSchedule", "NoExecute"};
  Toleration t;
  std::string rest = text;
  auto colon = rest.rfind(':');
  if (colon != std::string::npos) {
    t.effect = rest.substr(colon + 1);
    rest = rest.substr(0, colon);
    if (std::find(effects.begin(), effects.end(), t.effect) == effects.end()) {
      std::string near = util::closest(t.effect, effects);
      throw Error(ErrorKind::usage, "--toleration '" + text + "': unknown effect '" + t.effect + "'",
                  (near.empty() ? std::string() : "did you mean '" + near + "'? ") +
                      "effects: " + util::join(effects, ", "));
    }
  }
  auto eq = rest.find('=');
  t.key = rest.substr(0, eq);
  if (eq != std::string::npos) {
    t.op = "Equal";
    t.value = rest.substr(eq + 1);
  }
  if (t.key.empty() || !label_key(t.key) || !label_value(t.value)) {
    throw Error(ErrorKind::usage, "--toleration '" + text + "' is not KEY[=VALUE][:EFFECT] with a label key and value",
                "e.g. --toleration nvidia.com/gpu:NoSchedule or --toleration pool=gpu:NoExecute");
  }
  return t;
}

Object tolerations_of(const std::vector<Toleration>& ts) {
  Object out = Object::array();
  for (const auto& t : ts) {
    Object o = Object::object();
    if (!t.key.empty()) {
      o["key"] = t.key;
    }
    o["operator"] = t.op;
    if (t.op == "Equal") {
      o["value"] = t.value;
    }
    if (!t.effect.empty()) {
      o["effect"] = t.effect;
    }
    out.push_back(o);
  }
  return out;
}

namespace {

Object metadata(const std::string& name, const std::string& ns, const Object& labels) {
  Object m{{"name", name}};
  if (!ns.empty()) {
    m["namespace"] = ns;
  }
  m["labels"] = labels;
  return m;
}

Object app_labels(const std::string& name) {
  return Object{{"app.kubernetes.io/name", name}, {"app.kubernetes.io/managed-by", "paddle-image"}};
}

// The training container and the pod spec around it.
Object pod_spec(const JobInput& in, const Object& container_extra_env, const std::string& subdomain) {
  Object c{{"name", "train"}, {"image", in.image}};
  if (!in.command.empty()) {
    c["command"] = in.command;
  }
  if (!in.args.empty()) {
    c["args"] = in.args;
  }
  Object env = Object::array();
  for (const auto& e : container_extra_env) {
    env.push_back(e);
  }
  for (const auto& [k, v] : in.env) {
    env.push_back(Object{{"name", k}, {"value", v}});
  }
  if (!in.checkpoint_claim.empty()) {
    env.push_back(Object{{"name", "CHECKPOINT_DIR"}, {"value", in.checkpoint_path}});
  }
  if (!env.empty()) {
    c["env"] = env;
  }
  Object requests = Object::object();
  if (!in.cpu.empty()) {
    requests["cpu"] = in.cpu;
  }
  if (!in.memory.empty()) {
    requests["memory"] = in.memory;
  }
  requests["nvidia.com/gpu"] = std::to_string(in.gpus);
  c["resources"] = Object{{"limits", {{"nvidia.com/gpu", std::to_string(in.gpus)}}}, {"requests", requests}};
  Object mounts = Object::array({Object{{"name", "dshm"}, {"mountPath", "/dev/shm"}}});
  Object volumes =
      Object::array({Object{{"name", "dshm"}, {"emptyDir", {{"medium", "Memory"}, {"sizeLimit", in.shm_size}}}}});
  if (!in.checkpoint_claim.empty()) {
    mounts.push_back(Object{{"name", "checkpoints"}, {"mountPath", in.checkpoint_path}});
    volumes.push_back(Object{{"name", "checkpoints"}, {"persistentVolumeClaim", {{"claimName", in.checkpoint_claim}}}});
  }
  c["volumeMounts"] = mounts;
  Object spec{{"restartPolicy", "Never"}};
  if (!subdomain.empty()) {
    spec["subdomain"] = subdomain;
  }
  if (!in.service_account.empty()) {
    spec["serviceAccountName"] = in.service_account;
  }
  if (!in.node_selector.empty()) {
    Object sel = Object::object();
    for (const auto& [k, v] : in.node_selector) {
      sel[k] = v;
    }
    spec["nodeSelector"] = sel;
  }
  if (!in.affinity.is_null()) {
    spec["affinity"] = in.affinity;
  }
  if (!in.tolerations.empty()) {
    spec["tolerations"] = tolerations_of(in.tolerations);
  }
  spec["containers"] = Object::array({c});
  spec["volumes"] = volumes;
  return spec;
}

// restartPolicy Never + backoffLimit: a failed pod is replaced (training resumes from
// the checkpoint claim); a pod evicted or preempted (DisruptionTarget) is not counted.
Object job_spec(const JobInput& in, const Object& pod_labels, const Object& pod) {
  return Object{
      {"backoffLimit", in.backoff_limit},
      {"podFailurePolicy",
       {{"rules",
         Object::array({Object{{"action", "Ignore"},
                               {"onPodConditions", Object::array({Object{{"type", "DisruptionTarget"}}})}}})}}},
      {"template", {{"metadata", {{"labels", pod_labels}}}, {"spec", pod}}}};
}

} // namespace

std::vector<Object> training_job(const JobInput& in) {
  Object labels = app_labels(in.name);
  Object job{{"apiVersion", "batch/v1"},
             {"kind", "Job"},
             {"metadata", metadata(in.name, in.ns, labels)},
             {"spec", job_spec(in, labels, pod_spec(in, Object::array(), ""))}};
  return {job};
}

namespace {

std::vector<std::string> launch_command(const DistributedInput& in, const std::string& master) {
  std::vector<std::string> cmd = {in.python, "-m", "paddle.distributed.launch"};
  if (!master.empty()) {
    cmd.push_back("--master=" + master);
    cmd.push_back("--nnodes=" + std::to_string(in.workers));
    cmd.push_back("--rank=$(JOB_COMPLETION_INDEX)");
  }
  cmd.push_back("--nproc_per_node=" + std::to_string(in.job.gpus));
  cmd.push_back("--log_dir=/tmp/paddle-launch-logs");
  cmd.insert(cmd.end(), in.launch_args.begin(), in.launch_args.end());
  return cmd;
}

} // namespace

std::vector<Object> distributed_job(const DistributedInput& in) {
  const JobInput& j = in.job;
  std::string svc = j.name; // pods are <job>-<index>.<job>
  Object labels = app_labels(j.name);
  Object service{{"apiVersion", "v1"},
                 {"kind", "Service"},
                 {"metadata", metadata(svc, j.ns, labels)},
                 {"spec",
                  {{"clusterIP", "None"},
                   {"publishNotReadyAddresses", true},
                   {"selector", labels},
                   {"ports", Object::array({Object{{"name", "launch-master"}, {"port", in.port}}})}}}};
  JobInput worker = j;
  worker.command = launch_command(in, j.name + "-0." + svc + ":" + std::to_string(in.port));
  worker.args.clear();
  Object pod = pod_spec(worker, Object::array(), svc);
  Object spec = job_spec(worker, labels, pod);
  Object ordered{{"completionMode", "Indexed"}, {"completions", in.workers}, {"parallelism", in.workers}};
  for (auto it = spec.begin(); it != spec.end(); ++it) {
    ordered[it.key()] = it.value();
  }
  Object job{
      {"apiVersion", "batch/v1"}, {"kind", "Job"}, {"metadata", metadata(j.name, j.ns, labels)}, {"spec", ordered}};
  return {service, job};
}

std::vector<Object> paddle_job(const DistributedInput& in) {
  const JobInput& j = in.job;
  JobInput worker = j;
  // The operator sets PADDLE_MASTER/PADDLE_NNODES/rank env for its pods; launch reads them.
  worker.command = launch_command(in, "");
  worker.args.clear();
  Object pod = pod_spec(worker, Object::array(), "");
  pod["restartPolicy"] = "Never";
  Object labels = app_labels(j.name);
  Object pj{
      {"apiVersion", "batch.paddlepaddle.org/v1"},
      {"kind", "PaddleJob"},
      {"metadata", metadata(j.name, j.ns, labels)},
      {"spec",
       {{"cleanPodPolicy", "OnCompletion"},
        {"intranet", "Service"},
        {"withGloo", 1},
        {"worker", {{"replicas", in.workers}, {"template", {{"metadata", {{"labels", labels}}}, {"spec", pod}}}}}}}};
  return {pj};
}

std::vector<Object> doctor_daemonset(const DaemonSetInput& in) {
  Object labels{{"app", "paddle-image-doctor"}};
  Object spec = Object::object();
  if (!in.node_selector.empty()) {
    Object sel = Object::object();
    for (const auto& [k, v] : in.node_selector) {
      sel[k] = v;
    }
    spec["nodeSelector"] = sel;
  }
  spec["hostPID"] = true; // to see nv-fabricmanager in /proc
  spec["tolerations"] = Object::array({Object{{"operator", "Exists"}}});
  spec["containers"] = Object::array({Object{
      {"name", "doctor"},
      {"image", in.image},
      {"command", in.command},
      {"env",
       Object::array({Object{{"name", "NODE_NAME"}, {"valueFrom", {{"fieldRef", {{"fieldPath", "spec.nodeName"}}}}}}})},
      {"securityContext", {{"readOnlyRootFilesystem", true}}},
      {"volumeMounts", Object::array({Object{{"name", "host"}, {"mountPath", "/host"}, {"readOnly", true}}})}}});
  spec["volumes"] = Object::array({Object{{"name", "host"}, {"hostPath", {{"path", "/"}}}}});
  Object ds{
      {"apiVersion", "apps/v1"},
      {"kind", "DaemonSet"},
      {"metadata", {{"name", "paddle-image-doctor"}, {"namespace", in.ns}, {"labels", labels}}},
      {"spec",
       {{"selector", {{"matchLabels", labels}}}, {"template", {{"metadata", {{"labels", labels}}}, {"spec", spec}}}}}};
  return {ds};
}

} // namespace templates::k8s
