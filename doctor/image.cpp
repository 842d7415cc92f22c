#include "doctor/image.hpp"

#include "compat_matrix/facts.hpp"
#include "compat_matrix/resolver.hpp"
#include "compat_matrix/rules.hpp"
#include "doctor/parse.hpp"
#include "layers/base_view.hpp"
#include "oci/layout.hpp"
#include "oci/reference.hpp"
#include "util/encoding.hpp"
#include "util/error.hpp"
#include "util/text.hpp"

#include <algorithm>
#include <functional>
#include <regex>

namespace doctor {

using nlohmann::json;
using util::Error;
using util::ErrorKind;

namespace {

using compat::is_paddle_version;
using compat::is_plain_version;
using compat::k_arch_forms;
using compat::normalise_arch;

// The labels (compat::ImageFacts, the type the build writes them from), then the ENV
// facts: CUDA_VERSION when no label states the CUDA, NVIDIA_REQUIRE_CUDA, and a
// cuda-compat directory forced on LD_LIBRARY_PATH.
void from_config(ImageNeeds& n, const oci::ImageConfig& cfg) {
  std::string source = n.source;
  static_cast<compat::ImageFacts&>(n) = compat::ImageFacts::from_labels(cfg.config.labels, source);
  if (n.cuda.empty()) {
    if (auto v = cfg.get_env("CUDA_VERSION")) {
      static const std::regex re("([0-9]{1,9}\\.[0-9]{1,9}).*");
      std::smatch m;
      if (std::regex_match(*v, m, re)) {
        n.cuda = m[1];
      }
    }
  }
  if (auto req = cfg.get_env("NVIDIA_REQUIRE_CUDA")) {
    n.require_cuda = parse_require_cuda(*req).value_or("");
    if (!n.require_cuda.empty() && !is_plain_version(n.require_cuda)) {
      throw Error(ErrorKind::input,
                  "environment NVIDIA_REQUIRE_CUDA='" + *req + "': cuda>=" + n.require_cuda +
                      " is not a version (dotted numbers, e.g. 12.6)",
                  "fix NVIDIA_REQUIRE_CUDA in the image config, or give the needs with --requires");
    }
  }
  if (auto ld = cfg.get_env("LD_LIBRARY_PATH"); ld && ld->find("compat") != std::string::npos) {
    n.compat_forced = true;
    n.compat_evidence = "LD_LIBRARY_PATH=" + *ld;
  }
}

// Looks through each layer (a local file when the source has one, else its stream).
// What the image's layers hold, read through its view (whiteouts applied: a driver
// library an upper layer deleted is not shipped).
void scan(ImageNeeds& n, const oci::Image& img, const oci::Manifest& m) {
  n.scanned = true;
  static const std::regex driver_re("(?:.*/)?(libcuda\\.so\\.[0-9.]+|libnvidia-ml\\.so\\.[0-9.]+|nvidia-smi)");
  static const std::regex compat_re("usr/local/cuda[^/]*/compat/libcuda\\.so\\.[0-9.]+");
  layers::BaseView view = layers::read_base_view(img, m, {});
  for (const auto& [path, node] : view.nodes()) {
    if (node.type == '5') {
      continue;
    }
    if (std::regex_match(path, compat_re)) {
      n.compat_libs.push_back("/" + path);
    } else if (std::regex_match(path, driver_re)) {
      n.driver_files.push_back("/" + path);
    }
  }
  for (const auto& [path, text] : view.facts().ld_so_conf) {
    if (text.find("/compat") != std::string::npos) {
      n.compat_forced = true;
      n.compat_evidence = "/" + path + " lists " + text.substr(0, text.find('\n'));
    }
  }
}

} // namespace

ImageNeeds needs_from_config(const std::string& source, const oci::ImageConfig& config) {
  ImageNeeds n;
  n.source = source;
  from_config(n, config);
  return n;
}

ImageNeeds image_needs(const oci::Image& img, const oci::CopyOptions& selection, bool scan_layers,
                       const std::string& source) {
  oci::ManifestBlob mb = oci::select_platform(img, selection);
  oci::Manifest m = oci::manifest_from_json(oci::parse_json(mb.bytes, "manifest of " + img.name()));
  ImageNeeds n = needs_from_config(source, oci::read_config(img, m));
  if (scan_layers) {
    scan(n, img, m);
  }
  return n;
}

ImageNeeds needs_from_requires(const std::string& text) {
  ImageNeeds n;
  n.source = "--requires " + text;
  const std::string forms =
      "KEY=VALUE items separated by commas: cuda=12.6, driver=560.28.03, "
      "driver_compat=525.60.13, require_cuda=12.6 (dotted numbers), paddle=3.0.0 (or 3.0.0b1, 2.6.1.post117), "
      "sm=90 (repeatable; also sm_90 or 9.0), gpu_memory=40Gi (a Kubernetes quantity: usable memory per GPU)";
  auto usage = [&](const std::string& what) {
    throw Error(ErrorKind::usage, "--requires '" + text + "': " + what, "use " + forms);
  };
  // Every item is checked: an item without '=' or with an empty value is an error, not skipped.
  std::map<std::string, std::vector<std::string>> kv;
  std::size_t i = 0;
  while (i <= text.size()) {
    auto j = text.find(',', i);
    std::string item = text.substr(i, j == std::string::npos ? std::string::npos : j - i);
    auto b0 = item.find_first_not_of(" \t");
    auto e0 = item.find_last_not_of(" \t");
    item = b0 == std::string::npos ? std::string{} : item.substr(b0, e0 - b0 + 1);
    auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size()) {
      usage("'" + item + "' is not KEY=VALUE");
    }
    std::string k = item.substr(0, eq);
    std::string v = item.substr(eq + 1);
    k = util::trim(k, " \t");
    v = util::trim(v, " \t");
    if (k.empty() || v.empty()) {
      usage("'" + item + "' is not KEY=VALUE");
    }
    kv[k].push_back(v);
    if (j == std::string::npos) {
      break;
    }
    i = j + 1;
  }
  for (const auto& [k, vs] : kv) {
    bool versioned = k == "cuda" || k == "driver" || k == "driver_compat" || k == "require_cuda";
    if (!versioned && k != "sm" && k != "paddle" && k != "gpu_memory") {
      throw Error(ErrorKind::usage, "--requires: unknown key '" + k + "'", "use " + forms);
    }
    if (k != "sm" && vs.size() > 1) {
      usage(k + " is given " + std::to_string(vs.size()) + " times (only sm repeats)");
    }
    for (const auto& v : vs) {
      if (versioned && !is_plain_version(v)) {
        usage(k + "=" + v + " is not a version (dotted numbers, e.g. 12.6 or 560.28.03)");
      }
      if (k == "paddle" && !is_paddle_version(v)) {
        usage("paddle=" + v + " is not a Paddle version (e.g. 3.0.0, 3.0.0b1 or 2.6.1.post117)");
      }
      if (k == "gpu_memory") {
        auto bytes = util::parse_byte_quantity(v);
        if (!bytes || *bytes == 0) {
          usage("gpu_memory=" + v + " is not a memory quantity (e.g. 40Gi or 46068Mi)");
        }
        n.gpu_memory_mib = util::mib_rounded_up(*bytes);
      }
      if (k == "sm" && !normalise_arch(v)) {
        usage("sm=" + v + " is not an architecture: accepted forms are " + k_arch_forms);
      }
    }
  }
  auto one = [&](const char* k) { return kv.count(k) ? kv[k].back() : std::string{}; };
  n.cuda = one("cuda");
  n.driver_min = one("driver");
  n.driver_min_compat = one("driver_compat");
  n.require_cuda = one("require_cuda");
  n.paddle = one("paddle");
  for (const auto& s : kv["sm"]) {
    n.archs.push_back(*normalise_arch(s));
  }
  return n;
}

std::string needs_as_requires(const ImageNeeds& n) {
  std::string s;
  auto add = [&](const std::string& k, const std::string& v) {
    if (!v.empty()) {
      s += (s.empty() ? "" : ",") + k + "=" + v;
    }
  };
  add("cuda", n.cuda);
  add("driver", n.driver_min);
  add("driver_compat", n.driver_min_compat);
  add("require_cuda", n.require_cuda);
  add("paddle", n.paddle);
  for (const auto& a : n.archs) {
    add("sm", a.rfind("sm_", 0) == 0 ? a.substr(3) : a);
  }
  if (n.gpu_memory_mib != 0) {
    add("gpu_memory", std::to_string(n.gpu_memory_mib) + "Mi");
  }
  return s;
}

namespace {

// "sm_90" / "sm_90a" -> 90 (what is not an architecture is left out).
std::vector<int> arch_numbers(const std::vector<std::string>& archs) {
  std::vector<int> out;
  for (const auto& a : archs) {
    if (auto n = compat::sm_number(a)) {
      out.push_back(*n);
    }
  }
  return out;
}

std::string sm_list(const std::vector<int>& archs) {
  std::vector<std::string> s;
  for (int a : archs) {
    s.push_back(compat::sm_name(a));
  }
  return util::join(s, ",");
}

struct HostGpu {
  std::string name;
  compat::Version cc;
  int sm() const { return compat::sm_of(cc); }
  std::string label() const { return name + " (" + compat::sm_name(sm()) + ")"; }
};

// Binary compatibility within a major version (docs/resolve.md).
bool serves(const std::vector<int>& archs, const HostGpu& g) {
  return compat::ships_code_for(archs, g.cc);
}

std::vector<std::string> release_cudas(const compat::ReleaseRow& release) {
  std::vector<std::string> out;
  for (const auto& img : release.images) {
    if (std::find(out.begin(), out.end(), img.cuda) == out.end()) {
      out.push_back(img.cuda);
    }
  }
  return out;
}

// What every image check reads: the image's needs, the host's driver and GPUs, and the
// matrix rows behind the facts the image does not state (docs/doctor.md, "Derived
// facts"), with the derived facts the checks used collected for the report.
struct ImageCtx {
  Report& report;
  const HostProbes& host;
  const ImageNeeds& n;
  const compat::Matrix& m;
  std::optional<compat::Version> driver{};
  std::vector<HostGpu> host_gpus{};
  bool all_datacenter = false;
  const compat::ReleaseRow* release = nullptr;
  std::vector<std::string> paddle_cudas{}; // CUDA candidates when only Paddle is stated
  const compat::ImageRow* published = nullptr;
  json derived = json::object();

  void add(std::string id, std::string title, Status s, std::string ev, std::string fix = {}) {
    report.checks.push_back({std::move(id), std::move(title), s, std::move(ev), std::move(fix), {}});
  }
  // A check that rests on a derived fact never PASSes, only FAILs or WARNs.
  void add_derived(std::string id, std::string title, Status s, std::string ev, std::string fix,
                   const std::string& fact, const json& value, const std::string& from) {
    CheckResult c{std::move(id),
                  std::move(title),
                  s == Status::pass ? Status::warn : s,
                  "derived from the compatibility matrix (" + from + "): " + std::move(ev),
                  std::move(fix),
                  {}};
    c.derived_from = from;
    derived[fact] = {{"value", value}, {"from", from}};
    report.checks.push_back(std::move(c));
  }
  // The labels of the host's GPUs `ok` rejects, sorted, each once.
  std::vector<std::string> unserved(const std::function<bool(const HostGpu&)>& ok) const {
    std::vector<std::string> out;
    for (const auto& g : host_gpus) {
      if (!ok(g)) {
        out.push_back(g.label());
      }
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  }
};

// The host's driver version and GPUs (from NVML), and whether all of them are GPUs that
// forward compatibility serves.
void read_host(ImageCtx& c) {
  if (c.host.driver) {
    c.driver = compat::Version::parse(*c.host.driver);
  }
  std::vector<std::string> gpu_classes;
  for (const auto& g : c.host.gpus) {
    c.host_gpus.push_back({g.name, compat::Version::parse(g.cc)});
    try {
      gpu_classes.push_back(compat::find_gpu(c.m, g.name, "nvml").gpu_class);
    } catch (const util::Error&) {
      gpu_classes.push_back(""); // a GPU the matrix does not know: not known to be a data-center GPU
    }
  }
  c.all_datacenter = compat::forward_compat_gpus(c.m, gpu_classes);
}

// The matrix's release of the image's Paddle, and its published image for the image's
// CUDA (stated, or the only one the release was published with).
void find_release(ImageCtx& c) {
  c.release = c.m.find_release(c.n.paddle);
  if (c.release == nullptr) {
    return;
  }
  if (!c.n.cuda.empty()) {
    c.published = compat::find_published(*c.release, c.n.cuda);
  } else {
    c.paddle_cudas = release_cudas(*c.release);
    if (c.paddle_cudas.size() == 1) {
      c.published = compat::find_published(*c.release, c.paddle_cudas.front());
    }
  }
}

const char* const k_driver_title = "Image CUDA runs on this driver";

// Only Paddle is stated: the CUDAs it was published with. Below the lowest minimum of
// every candidate nothing can run; above it, which CUDA the image has decides.
void check_paddle_cudas_driver(ImageCtx& c) {
  const compat::Version& driver = *c.driver;
  std::string lowest;
  std::string lowest_cuda;
  std::vector<std::string> needs;
  for (const auto& cuda : c.paddle_cudas) {
    const auto* row = c.m.find_cuda(cuda);
    if (row == nullptr) {
      continue;
    }
    std::string floor = compat::DriverNeeds::of(*row).lowest(false);
    needs.push_back("CUDA " + cuda + " needs " + row->driver_full +
                    (row->driver_minor.empty() ? "" : " (" + row->driver_minor + " minor-version)"));
    if (lowest.empty() || compat::Version::parse(floor) < compat::Version::parse(lowest)) {
      lowest = floor;
      lowest_cuda = cuda;
    }
  }
  std::string from = "Paddle " + c.n.paddle + " was published with CUDA " + util::join(c.paddle_cudas, ", ") + " (" +
                     c.release->origin + ")";
  std::string ev = "the image states Paddle " + c.n.paddle + " but no CUDA; " + util::join(needs, "; ") +
                   "; host driver " + driver.text;
  if (lowest.empty()) {
    c.add("image.cuda-driver", k_driver_title, Status::skip, ev + ": no CUDA row in the matrix");
  } else if (driver < compat::Version::parse(lowest)) {
    c.add_derived("image.cuda-driver", k_driver_title, Status::fail,
                  ev + ": below " + lowest + ", the lowest any of them accepts (CUDA " + lowest_cuda +
                      "), so whichever CUDA the image has, the job would fail (CUDA driver version is insufficient "
                      "for CUDA runtime version)",
                  "upgrade the driver to " + lowest +
                      " or newer, or choose an image this driver runs: "
                      "paddle-image resolve --driver " +
                      driver.text,
                  "cuda", c.paddle_cudas, from);
  } else {
    c.add_derived("image.cuda-driver", k_driver_title, Status::warn,
                  ev + ": at least one of them runs on this driver; which one the image has is not stated",
                  "label the image with io.paddle-image.cuda.version (paddle-image build does) or check with "
                  "--requires cuda=X.Y",
                  "cuda", c.paddle_cudas, from);
  }
}

// The image's CUDA (its driver floors stated, else the matrix's row) against the host driver.
void check_cuda_driver(ImageCtx& c) {
  const ImageNeeds& n = c.n;
  std::string full = n.driver_min;
  std::string minor = n.driver_min_compat;
  if (!n.cuda.empty()) {
    if (const auto* row = c.m.find_cuda(n.cuda); row != nullptr && row->released) {
      full = full.empty() ? row->driver_full : full;
      minor = minor.empty() ? row->driver_minor : minor;
    }
  }
  if (!c.driver) {
    c.add("image.cuda-driver", k_driver_title, Status::skip, "host driver version unknown");
    return;
  }
  if (full.empty() && c.release != nullptr && !c.paddle_cudas.empty()) {
    check_paddle_cudas_driver(c);
    return;
  }
  if (full.empty()) {
    c.add("image.cuda-driver", k_driver_title, Status::skip,
          "the image states no CUDA version or minimum driver (no io.paddle-image.cuda.version, CUDA_VERSION or "
          "driver label)");
    return;
  }
  const compat::Version& driver = *c.driver;
  std::string what = "image CUDA " + (n.cuda.empty() ? std::string("?") : n.cuda) + " needs driver " + full +
                     (minor.empty() ? "" : " (" + minor + " under minor-version compatibility)") + "; host driver " +
                     driver.text;
  auto level = compat::native_driver_level(driver, compat::DriverNeeds{full, minor}, false);
  if (level == compat::DriverLevel::full) {
    c.add("image.cuda-driver", k_driver_title, Status::pass, what);
  } else if (level == compat::DriverLevel::minor) {
    c.add("image.cuda-driver", k_driver_title, Status::warn,
          what + ": runs under minor-version compatibility; PTX JIT of newer code may fail (CUDA error 222)",
          "upgrade the driver to " + full + " to remove this caveat");
  } else if (n.compat_forced && c.all_datacenter) {
    c.add("image.cuda-driver", k_driver_title, Status::warn,
          what + ": relies on the image's forward-compat libcuda (" + n.compat_evidence + ")",
          "forward compatibility needs a supported data-center driver branch; upgrade to " + full + " to be safe");
  } else {
    c.add("image.cuda-driver", k_driver_title, Status::fail,
          what + " (the job would fail: CUDA driver version is insufficient for CUDA runtime version)",
          "upgrade the driver to " + (minor.empty() ? full : minor) +
              " or newer, or choose an image this driver runs: "
              "paddle-image resolve --driver " +
              driver.text);
  }
}

// NVIDIA_REQUIRE_CUDA against the driver's CUDA version.
void check_require_cuda(ImageCtx& c) {
  const ImageNeeds& n = c.n;
  int cuda_driver = c.host.cuda_driver;
  if (n.require_cuda.empty()) {
    c.add("image.require-cuda", "NVIDIA_REQUIRE_CUDA satisfied", Status::skip, "the image sets no NVIDIA_REQUIRE_CUDA");
  } else if (cuda_driver == 0) {
    c.add("image.require-cuda", "NVIDIA_REQUIRE_CUDA satisfied", Status::skip,
          "the driver's CUDA version is unknown (NVML and CUDA unavailable)");
  } else {
    std::string host_cuda = std::to_string(cuda_driver / 1000) + "." + std::to_string((cuda_driver % 1000) / 10);
    bool ok = compat::Version::parse(host_cuda) >= compat::Version::parse(n.require_cuda);
    c.add("image.require-cuda", "NVIDIA_REQUIRE_CUDA satisfied", ok ? Status::pass : Status::fail,
          "NVIDIA_REQUIRE_CUDA cuda>=" + n.require_cuda + "; the driver supports CUDA " + host_cuda +
              (ok ? ""
                  : " (nvidia-container-cli: requirement error: unsatisfied condition: cuda>=" + n.require_cuda + ")"),
          ok ? ""
             : "upgrade the driver, or (only if minor-version compatibility is enough) set NVIDIA_DISABLE_REQUIRE=1");
  }
}

const char* const k_arch_title = "Image ships code for these GPUs";
const char* const k_err209 = " (no kernel image is available for execution on the device, CUDA error 209)";
const char* const k_arch_fix =
    "use a build that ships these architectures: paddle-image resolve --gpu <model> --driver <version>";
const char* const k_state_fix =
    "label the image with io.paddle-image.gpu.archs (paddle-image build does) or check with "
    "--requires sm=XY";

// Paddle alone, several CUDAs: FAIL only when no published build serves a GPU.
void check_release_archs(ImageCtx& c) {
  const compat::ReleaseRow& release = *c.release;
  auto served_by_any = [&](const HostGpu& g) {
    if (!compat::meets_min_cc(release, g.cc)) {
      return false;
    }
    return std::any_of(release.images.begin(), release.images.end(),
                       [&](const compat::ImageRow& img) { return serves(img.archs, g); });
  };
  auto missing = c.unserved(served_by_any);
  std::vector<std::string> tags;
  for (const auto& img : release.images) {
    tags.push_back(img.tag + " ships " + sm_list(img.archs));
  }
  std::string from = "Paddle " + release.version + " images (" + release.origin + ")";
  c.add_derived("image.gpu-arch", k_arch_title, missing.empty() ? Status::warn : Status::fail,
                "the image states Paddle " + release.version + " but neither CUDA nor architectures; " +
                    util::join(tags, "; ") +
                    (missing.empty() ? "; which build the image is is not stated"
                                     : "; no published build serves " + util::join(missing, ", ") + k_err209),
                missing.empty() ? k_state_fix : k_arch_fix, "archs", tags, from);
}

// CUDA alone: the architectures that CUDA can build kernels for.
void check_cuda_archs(ImageCtx& c, const compat::CudaRow& row) {
  int newest = *std::max_element(row.sm.begin(), row.sm.end());
  auto beyond = c.unserved([&](const HostGpu& g) { return g.sm() <= newest; });
  auto untargeted = c.unserved([&](const HostGpu& g) { return serves(row.sm, g); });
  std::string from = "CUDA " + row.version + " can target " + sm_list(row.sm) + " (" + row.origin + ")";
  std::string ev = "the image states CUDA " + c.n.cuda + " but no architectures; CUDA " + row.version +
                   " builds kernels up to sm_" + std::to_string(newest);
  if (!beyond.empty()) {
    c.add_derived("image.gpu-arch", k_arch_title, Status::fail,
                  ev + "; " + util::join(beyond, ", ") + " is newer than anything it can target" + k_err209,
                  "use an image built with a CUDA that supports these GPUs: paddle-image resolve --gpu <model>",
                  "archs", sm_list(row.sm), from);
  } else {
    c.add_derived("image.gpu-arch", k_arch_title, Status::warn,
                  ev + (untargeted.empty() ? "; whether the image ships code for these GPUs is not stated"
                                           : "; it cannot target " + util::join(untargeted, ", ")),
                  k_state_fix, "archs", sm_list(row.sm), from);
  }
}

// Architectures: the image's stated ones, else what the matrix says of its Paddle or CUDA.
void check_gpu_arch(ImageCtx& c) {
  const ImageNeeds& n = c.n;
  if (c.host_gpus.empty()) {
    c.add("image.gpu-arch", k_arch_title, Status::skip,
          n.archs.empty() ? "the image states no GPU architectures (io.paddle-image.gpu.archs)"
                          : "no GPU facts (NVML unavailable)");
  } else if (!n.archs.empty()) {
    auto archs = arch_numbers(n.archs);
    auto missing = c.unserved([&](const HostGpu& g) { return serves(archs, g); });
    c.add("image.gpu-arch", k_arch_title, missing.empty() ? Status::pass : Status::fail,
          "image ships " + util::join(n.archs, ",") +
              (missing.empty() ? "" : "; not served: " + util::join(missing, ", ") + k_err209),
          missing.empty() ? "" : k_arch_fix);
  } else if (const compat::ImageRow* published = c.published; published != nullptr) {
    // Paddle + CUDA (stated, or the only CUDA the release was published with): that image's row.
    auto missing = c.unserved([&](const HostGpu& g) { return serves(published->archs, g); });
    std::string from = "Paddle " + c.release->version + " image " + published->tag + " (" + published->origin +
                       (published->archs_confirmed ? "" : ", architectures inferred, unconfirmed") + ")";
    c.add_derived("image.gpu-arch", k_arch_title, missing.empty() ? Status::warn : Status::fail,
                  "the image states no architectures; the published image ships " + sm_list(published->archs) +
                      (missing.empty() ? "; the GPUs are served if the image is that build"
                                       : "; not served: " + util::join(missing, ", ") + k_err209),
                  missing.empty() ? k_state_fix : k_arch_fix, "archs", sm_list(published->archs), from);
  } else if (c.release != nullptr && n.cuda.empty() && !c.release->images.empty()) {
    check_release_archs(c);
  } else if (const auto* row = n.cuda.empty() ? nullptr : c.m.find_cuda(n.cuda); row != nullptr && !row->sm.empty()) {
    check_cuda_archs(c, *row);
  } else {
    c.add("image.gpu-arch", k_arch_title, Status::skip,
          "the image states no GPU architectures (io.paddle-image.gpu.archs)" +
              std::string(n.paddle.empty()       ? ""
                          : c.release == nullptr ? "; Paddle " + n.paddle + " is not in the matrix"
                                                 : ""));
  }
}

// Memory: each GPU's total as NVML reports it (GFD's nvidia.com/gpu.memory), which is
// below the marketed size; the need is io.paddle-image.gpu.memory-mib.
void check_gpu_memory(ImageCtx& c) {
  const ImageNeeds& n = c.n;
  const char* mem_title = "GPUs have the memory the image needs";
  std::vector<std::string> short_gpus;
  std::vector<std::string> mem_seen;
  bool mem_known = !c.host.gpus.empty();
  for (const auto& g : c.host.gpus) {
    if (g.memory_mib == 0) {
      mem_known = false;
      continue;
    }
    mem_seen.push_back(g.name + " " + std::to_string(g.memory_mib) + " MiB");
    if (g.memory_mib < n.gpu_memory_mib) {
      short_gpus.push_back(g.name + " (" + std::to_string(g.memory_mib) + " MiB)");
    }
  }
  std::sort(mem_seen.begin(), mem_seen.end());
  mem_seen.erase(std::unique(mem_seen.begin(), mem_seen.end()), mem_seen.end());
  if (n.gpu_memory_mib == 0) {
    c.add("image.gpu-memory", mem_title, Status::skip,
          "the image states no GPU memory need (io.paddle-image.gpu.memory-mib)");
  } else if (!mem_known) {
    c.add("image.gpu-memory", mem_title, Status::skip,
          "the image needs " + std::to_string(n.gpu_memory_mib) +
              " MiB per GPU; no GPU memory facts (NVML unavailable)");
  } else {
    std::sort(short_gpus.begin(), short_gpus.end());
    short_gpus.erase(std::unique(short_gpus.begin(), short_gpus.end()), short_gpus.end());
    c.add("image.gpu-memory", mem_title, short_gpus.empty() ? Status::pass : Status::fail,
          "the image needs " + std::to_string(n.gpu_memory_mib) + " MiB per GPU; NVML reports " +
              util::join(mem_seen, ", ") + (short_gpus.empty() ? "" : "; too small: " + util::join(short_gpus, ", ")),
          short_gpus.empty() ? ""
                             : "run on GPUs with more memory (render k8s-job selects them by nvidia.com/gpu.memory), "
                               "or lower requires.gpu_memory if the job fits");
  }
}

// What the layer scan found: driver files the image ships, and cuda-compat libraries it
// forces onto the library path.
void check_layer_files(ImageCtx& c) {
  const ImageNeeds& n = c.n;
  if (!n.scanned) {
    c.add("image.driver-files", "Image does not ship driver files", Status::skip, "layers not scanned (--scan-layers)");
    c.add("image.forward-compat", "Forward-compat libraries usable", Status::skip,
          "layers not scanned (--scan-layers)");
    return;
  }
  c.add("image.driver-files", "Image does not ship driver files", n.driver_files.empty() ? Status::pass : Status::fail,
        n.driver_files.empty() ? "no libcuda/libnvidia-ml/nvidia-smi in the image"
                               : "the image contains " + util::join(n.driver_files, ", "),
        n.driver_files.empty() ? ""
                               : "remove them: the container toolkit mounts the host's driver files; shipped ones "
                                 "shadow them (803/NVML mismatch)");
  if (n.compat_libs.empty()) {
    c.add("image.forward-compat", "Forward-compat libraries usable", Status::pass,
          "no cuda-compat libcuda in the image");
  } else if (!n.compat_forced) {
    c.add("image.forward-compat", "Forward-compat libraries usable", Status::pass,
          "cuda-compat present (" + n.compat_libs.front() + ") but not forced onto the library path");
  } else if (!c.all_datacenter) {
    c.add("image.forward-compat", "Forward-compat libraries usable", Status::fail,
          n.compat_evidence + " forces " + n.compat_libs.front() +
              " on GPUs that are not data-center GPUs (CUDA error 804)",
          "remove the compat path from the image, or use an image whose CUDA this driver supports natively");
  } else {
    c.add("image.forward-compat", "Forward-compat libraries usable", Status::warn,
          n.compat_evidence + " forces " + n.compat_libs.front() +
              "; it must match the driver branch (else CUDA error 803)",
          "check the cuda-compat package supports driver " + (c.driver ? c.driver->text : std::string("?")));
  }
}

} // namespace

void check_image(Report& report, const ImageNeeds& needs, const compat::Matrix& matrix) {
  check_image(report, report.probes ? *report.probes : host_probes_from_facts(report.facts), needs, matrix);
}

void check_image(Report& report, const HostProbes& host, const ImageNeeds& n, const compat::Matrix& m) {
  report.facts["image"] = {{"source", n.source},
                           {"cuda", n.cuda},
                           {"driver_min", n.driver_min},
                           {"driver_min_compat", n.driver_min_compat},
                           {"require_cuda", n.require_cuda},
                           {"archs", n.archs},
                           {"paddle", n.paddle},
                           {"gpu_memory_mib", n.gpu_memory_mib}};
  ImageCtx c{report, host, n, m};
  read_host(c);
  find_release(c);
  check_cuda_driver(c);
  check_require_cuda(c);
  check_gpu_arch(c);
  check_gpu_memory(c);
  if (!c.derived.empty()) {
    report.facts["image"]["derived"] = c.derived;
  }
  check_layer_files(c);
}

} // namespace doctor
