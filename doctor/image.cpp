#include "doctor/image.hpp"

#include "compat_matrix/resolver.hpp"
#include "doctor/parse.hpp"
#include "layers/tar.hpp"
#include "oci/layout.hpp"
#include "oci/reference.hpp"
#include "util/encoding.hpp"
#include "util/error.hpp"

#include <algorithm>
#include <regex>

namespace doctor {

using nlohmann::json;
using util::Error;
using util::ErrorKind;

namespace {

void from_config(ImageNeeds& n, const oci::ImageConfig& cfg) {
  const auto& l = cfg.config.labels;
  auto label = [&](const char* k) {
    auto it = l.find(k);
    return it == l.end() ? std::string{} : it->second;
  };
  n.cuda = label("io.paddle-image.cuda.version");
  n.driver_min = label("io.paddle-image.driver.min");
  n.driver_min_compat = label("io.paddle-image.driver.min-compat");
  n.paddle = label("io.paddle-image.paddle.version");
  std::string archs = label("io.paddle-image.gpu.archs");
  std::size_t i = 0;
  while (!archs.empty() && i <= archs.size()) {
    auto j = archs.find(',', i);
    std::string a = archs.substr(i, j == std::string::npos ? std::string::npos : j - i);
    if (!a.empty()) {
      n.archs.push_back(a);
    }
    if (j == std::string::npos) {
      break;
    }
    i = j + 1;
  }
  if (n.cuda.empty()) {
    if (auto v = cfg.get_env("CUDA_VERSION")) {
      static const std::regex re("([0-9]+\\.[0-9]+).*");
      std::smatch m;
      if (std::regex_match(*v, m, re)) {
        n.cuda = m[1];
      }
    }
  }
  if (auto req = cfg.get_env("NVIDIA_REQUIRE_CUDA")) {
    n.require_cuda = parse_require_cuda(*req).value_or("");
  }
  if (auto ld = cfg.get_env("LD_LIBRARY_PATH"); ld && ld->find("compat") != std::string::npos) {
    n.compat_forced = true;
    n.compat_evidence = "LD_LIBRARY_PATH=" + *ld;
  }
}

void scan(ImageNeeds& n, const std::vector<std::filesystem::path>& layer_files) {
  n.scanned = true;
  static const std::regex driver_re("(?:.*/)?(libcuda\\.so\\.[0-9.]+|libnvidia-ml\\.so\\.[0-9.]+|nvidia-smi)");
  static const std::regex compat_re("usr/local/cuda[^/]*/compat/libcuda\\.so\\.[0-9.]+");
  for (const auto& f : layer_files) {
    layers::scan_tar(
        f,
        [&](const layers::TarMember& m) {
          if (std::regex_match(m.path, compat_re)) {
            n.compat_libs.push_back("/" + m.path);
          } else if (std::regex_match(m.path, driver_re)) {
            n.driver_files.push_back("/" + m.path);
          }
          return m.path.rfind("etc/ld.so.conf.d/", 0) == 0 && m.size < 65536;
        },
        [&](const layers::TarMember& m, const std::string& content) {
          if (content.find("/compat") != std::string::npos) {
            n.compat_forced = true;
            n.compat_evidence = "/" + m.path + " lists " + content.substr(0, content.find('\n'));
          }
        });
  }
}

} // namespace

ImageNeeds read_image_needs(const std::string& reference, bool scan_layers) {
  ImageNeeds n;
  n.source = reference;
  oci::ImageRef ref = oci::ImageRef::parse(reference);
  if (ref.kind == oci::ImageRef::Kind::registry) {
    throw Error(ErrorKind::usage, "--image " + reference + ": reading a registry image is not supported yet",
                "copy it locally first (skopeo copy docker://" + ref.str() +
                    " oci:img:TAG) and pass --image oci:img:TAG, "
                    "or give the needs with --requires");
  }
  if (ref.kind == oci::ImageRef::Kind::oci_layout) {
    auto layout = oci::OciLayout::open_existing(ref.path);
    auto m = layout.read_manifest(layout.resolve(ref.tag));
    from_config(n, layout.read_config(m));
    if (scan_layers) {
      std::vector<std::filesystem::path> files;
      for (const auto& l : m.layers) {
        files.push_back(layout.blobs().blob_path(l.digest));
      }
      scan(n, files);
    }
    return n;
  }
  // docker-archive: manifest.json names the config and the layer files.
  std::map<std::string, std::string> small;
  layers::scan_tar(
      ref.path,
      [&](const layers::TarMember& m) {
        return m.path == "manifest.json" ||
               (m.path.size() > 5 && m.path.substr(m.path.size() - 5) == ".json" && m.size < (16 << 20));
      },
      [&](const layers::TarMember& m, const std::string& content) { small[m.path] = content; });
  if (!small.count("manifest.json")) {
    throw Error(ErrorKind::input, ref.path + " is not a docker-archive (no manifest.json)");
  }
  json manifest = oci::parse_json(small["manifest.json"], ref.path + ": manifest.json");
  if (!manifest.is_array() || manifest.empty() || !manifest[0].contains("Config")) {
    throw Error(ErrorKind::input, ref.path + ": manifest.json names no image");
  }
  std::string config_name = manifest[0]["Config"].get<std::string>();
  if (!small.count(config_name)) {
    throw Error(ErrorKind::input, ref.path + ": config " + config_name + " is missing");
  }
  from_config(n, oci::config_from_json(oci::parse_json(small[config_name], config_name)));
  if (scan_layers) {
    throw Error(ErrorKind::usage, "--scan-layers reads OCI layouts only in this version",
                "convert with skopeo copy docker-archive:" + ref.path + " oci:img:TAG");
  }
  return n;
}

ImageNeeds needs_from_requires(const std::string& text) {
  ImageNeeds n;
  n.source = "--requires " + text;
  auto kv = parse_requires(text);
  for (const auto& [k, vs] : kv) {
    if (k != "cuda" && k != "sm" && k != "driver" && k != "driver_compat" && k != "require_cuda" && k != "paddle") {
      throw Error(ErrorKind::usage, "--requires: unknown key '" + k + "'",
                  "use cuda=12.6, sm=90 (repeatable), driver=..., driver_compat=..., require_cuda=..., paddle=...");
    }
  }
  if (kv.empty()) {
    throw Error(ErrorKind::usage, "--requires: '" + text + "' names nothing", "e.g. --requires cuda=12.6,sm=90");
  }
  auto one = [&](const char* k) { return kv.count(k) ? kv[k].back() : std::string{}; };
  n.cuda = one("cuda");
  n.driver_min = one("driver");
  n.driver_min_compat = one("driver_compat");
  n.require_cuda = one("require_cuda");
  n.paddle = one("paddle");
  for (const auto& s : kv["sm"]) {
    n.archs.push_back(s.rfind("sm_", 0) == 0 ? s : "sm_" + s);
  }
  for (const auto& [k, vs] : kv) {
    for (const auto& v : vs) {
      if ((k == "cuda" || k == "driver" || k == "driver_compat" || k == "require_cuda") && !compat::Version::valid(v)) {
        throw Error(ErrorKind::usage, "--requires: " + k + "=" + v + " is not a version");
      }
    }
  }
  return n;
}

namespace {

std::optional<compat::Version> host_driver(const Report& r) {
  if (r.facts.contains("driver") && r.facts["driver"].is_string()) {
    return compat::Version::parse(r.facts["driver"].get<std::string>());
  }
  return std::nullopt;
}

} // namespace

void check_image(Report& report, const ImageNeeds& n, const compat::Matrix& m) {
  auto add = [&](std::string id, std::string title, Status s, std::string ev, std::string fix = {}) {
    report.checks.push_back({std::move(id), std::move(title), s, std::move(ev), std::move(fix)});
  };
  report.facts["image"] = {{"source", n.source},
                           {"cuda", n.cuda},
                           {"driver_min", n.driver_min},
                           {"driver_min_compat", n.driver_min_compat},
                           {"require_cuda", n.require_cuda},
                           {"archs", n.archs},
                           {"paddle", n.paddle}};
  auto driver = host_driver(report);
  // GPUs from NVML.
  std::vector<std::pair<std::string, compat::Version>> gpus;
  std::vector<std::string> gpu_classes;
  if (report.facts.contains("nvml") && report.facts["nvml"].contains("gpus")) {
    for (const auto& g : report.facts["nvml"]["gpus"]) {
      if (g.contains("cc")) {
        gpus.emplace_back(g.value("name", std::string("GPU")), compat::Version::parse(g["cc"].get<std::string>()));
        try {
          gpu_classes.push_back(compat::find_gpu(m, g.value("name", std::string("?")), "nvml").gpu_class);
        } catch (const util::Error&) {
          gpu_classes.push_back("");
        }
      }
    }
  }
  bool all_datacenter = !gpu_classes.empty() && std::all_of(gpu_classes.begin(), gpu_classes.end(),
                                                            [](const std::string& c) { return c == "datacenter"; });
  // CUDA vs driver.
  std::string full = n.driver_min;
  std::string minor = n.driver_min_compat;
  if (!n.cuda.empty()) {
    if (const auto* row = m.find_cuda(n.cuda); row != nullptr && row->released) {
      full = full.empty() ? row->driver_full : full;
      minor = minor.empty() ? row->driver_minor : minor;
    }
  }
  if (!driver) {
    add("image.cuda-driver", "Image CUDA runs on this driver", Status::skip, "host driver version unknown");
  } else if (full.empty()) {
    add("image.cuda-driver", "Image CUDA runs on this driver", Status::skip,
        "the image states no CUDA version or minimum driver (no io.paddle-image.cuda.version, CUDA_VERSION or driver "
        "label)");
  } else {
    std::string what = "image CUDA " + (n.cuda.empty() ? std::string("?") : n.cuda) + " needs driver " + full +
                       (minor.empty() ? "" : " (" + minor + " under minor-version compatibility)") + "; host driver " +
                       driver->text;
    if (*driver >= compat::Version::parse(full)) {
      add("image.cuda-driver", "Image CUDA runs on this driver", Status::pass, what);
    } else if (!minor.empty() && *driver >= compat::Version::parse(minor)) {
      add("image.cuda-driver", "Image CUDA runs on this driver", Status::warn,
          what + ": runs under minor-version compatibility; PTX JIT of newer code may fail (CUDA error 222)",
          "upgrade the driver to " + full + " to remove this caveat");
    } else if (n.compat_forced && all_datacenter) {
      add("image.cuda-driver", "Image CUDA runs on this driver", Status::warn,
          what + ": relies on the image's forward-compat libcuda (" + n.compat_evidence + ")",
          "forward compatibility needs a supported data-center driver branch; upgrade to " + full + " to be safe");
    } else {
      add("image.cuda-driver", "Image CUDA runs on this driver", Status::fail,
          what + " (the job would fail: CUDA driver version is insufficient for CUDA runtime version)",
          "upgrade the driver to " + (minor.empty() ? full : minor) +
              " or newer, or choose an image this driver runs: "
              "paddle-image resolve --driver " +
              driver->text);
    }
  }
  // NVIDIA_REQUIRE_CUDA against the driver's CUDA version.
  int cuda_driver = 0;
  if (report.facts.contains("nvml")) {
    cuda_driver = report.facts["nvml"].value("cuda_driver", 0);
  }
  if (cuda_driver == 0 && report.facts.contains("cuda")) {
    cuda_driver = report.facts["cuda"].value("driver_version", 0);
  }
  if (n.require_cuda.empty()) {
    add("image.require-cuda", "NVIDIA_REQUIRE_CUDA satisfied", Status::skip, "the image sets no NVIDIA_REQUIRE_CUDA");
  } else if (cuda_driver == 0) {
    add("image.require-cuda", "NVIDIA_REQUIRE_CUDA satisfied", Status::skip,
        "the driver's CUDA version is unknown (NVML and CUDA unavailable)");
  } else {
    std::string host_cuda = std::to_string(cuda_driver / 1000) + "." + std::to_string((cuda_driver % 1000) / 10);
    bool ok = compat::Version::parse(host_cuda) >= compat::Version::parse(n.require_cuda);
    add("image.require-cuda", "NVIDIA_REQUIRE_CUDA satisfied", ok ? Status::pass : Status::fail,
        "NVIDIA_REQUIRE_CUDA cuda>=" + n.require_cuda + "; the driver supports CUDA " + host_cuda +
            (ok ? ""
                : " (nvidia-container-cli: requirement error: unsatisfied condition: cuda>=" + n.require_cuda + ")"),
        ok ? ""
           : "upgrade the driver, or (only if minor-version compatibility is enough) set NVIDIA_DISABLE_REQUIRE=1");
  }
  // Architectures.
  if (n.archs.empty()) {
    add("image.gpu-arch", "Image ships code for these GPUs", Status::skip,
        "the image states no GPU architectures (io.paddle-image.gpu.archs)");
  } else if (gpus.empty()) {
    add("image.gpu-arch", "Image ships code for these GPUs", Status::skip, "no GPU facts (NVML unavailable)");
  } else {
    std::vector<int> archs;
    for (const auto& a : n.archs) {
      std::string d = a.rfind("sm_", 0) == 0 ? a.substr(3) : a;
      if (!d.empty() && std::all_of(d.begin(), d.end(), ::isdigit)) {
        archs.push_back(std::stoi(d));
      }
    }
    std::vector<std::string> missing;
    for (const auto& [name, cc] : gpus) {
      int major = static_cast<int>(cc.parts.at(0));
      int minor_cc = cc.parts.size() > 1 ? static_cast<int>(cc.parts[1]) : 0;
      bool ok = std::any_of(archs.begin(), archs.end(), [&](int a) { return a / 10 == major && a % 10 <= minor_cc; });
      if (!ok) {
        missing.push_back(name + " (sm_" + std::to_string(major) + std::to_string(minor_cc) + ")");
      }
    }
    std::sort(missing.begin(), missing.end());
    missing.erase(std::unique(missing.begin(), missing.end()), missing.end());
    add("image.gpu-arch", "Image ships code for these GPUs", missing.empty() ? Status::pass : Status::fail,
        "image ships " + util::join(n.archs, ",") +
            (missing.empty() ? ""
                             : "; not served: " + util::join(missing, ", ") +
                                   " (no kernel image is available for execution on the device, CUDA error 209)"),
        missing.empty()
            ? ""
            : "use a build that ships these architectures: paddle-image resolve --gpu <model> --driver <version>");
  }
  if (!n.scanned) {
    add("image.driver-files", "Image does not ship driver files", Status::skip, "layers not scanned (--scan-layers)");
    add("image.forward-compat", "Forward-compat libraries usable", Status::skip, "layers not scanned (--scan-layers)");
    return;
  }
  add("image.driver-files", "Image does not ship driver files", n.driver_files.empty() ? Status::pass : Status::fail,
      n.driver_files.empty() ? "no libcuda/libnvidia-ml/nvidia-smi in the image"
                             : "the image contains " + util::join(n.driver_files, ", "),
      n.driver_files.empty() ? ""
                             : "remove them: the container toolkit mounts the host's driver files; shipped ones shadow "
                               "them (803/NVML mismatch)");
  if (n.compat_libs.empty()) {
    add("image.forward-compat", "Forward-compat libraries usable", Status::pass, "no cuda-compat libcuda in the image");
  } else if (!n.compat_forced) {
    add("image.forward-compat", "Forward-compat libraries usable", Status::pass,
        "cuda-compat present (" + n.compat_libs.front() + ") but not forced onto the library path");
  } else if (!all_datacenter) {
    add("image.forward-compat", "Forward-compat libraries usable", Status::fail,
        n.compat_evidence + " forces " + n.compat_libs.front() +
            " on GPUs that are not data-center GPUs (CUDA error 804)",
        "remove the compat path from the image, or use an image whose CUDA this driver supports natively");
  } else {
    add("image.forward-compat", "Forward-compat libraries usable", Status::warn,
        n.compat_evidence + " forces " + n.compat_libs.front() +
            "; it must match the driver branch (else CUDA error 803)",
        "check the cuda-compat package supports driver " + (driver ? driver->text : std::string("?")));
  }
}

} // namespace doctor
