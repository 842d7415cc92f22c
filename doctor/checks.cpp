#include "doctor/checks.hpp"

#include "compat_matrix/version.hpp"
#include "doctor/parse.hpp"
#include "doctor/probe.hpp"
#include "util/encoding.hpp"

#include <algorithm>
#include <regex>
#include <set>
#include <toml++/toml.h>

namespace doctor {

using nlohmann::json;

std::string to_string(Status s) {
  switch (s) {
  case Status::pass:
    return "PASS";
  case Status::warn:
    return "WARN";
  case Status::fail:
    return "FAIL";
  case Status::skip:
    return "SKIP";
  }
  return "SKIP";
}

int Report::count(Status s) const {
  return static_cast<int>(
      std::count_if(checks.begin(), checks.end(), [&](const CheckResult& c) { return c.status == s; }));
}

json to_json(const Report& r) {
  json checks = json::array();
  for (const auto& c : r.checks) {
    json j = {
        {"id", c.id}, {"title", c.title}, {"status", to_string(c.status)}, {"evidence", c.evidence}, {"fix", c.fix}};
    if (!c.derived_from.empty()) {
      j["derived_from"] = c.derived_from;
    }
    checks.push_back(std::move(j));
  }
  return {{"checks", checks},
          {"summary",
           {{"pass", r.count(Status::pass)},
            {"warn", r.count(Status::warn)},
            {"fail", r.count(Status::fail)},
            {"skip", r.count(Status::skip)}}},
          {"facts", r.facts}};
}

namespace {

const char* nvml_meaning(int rc) {
  switch (rc) {
  case 4:
    return "no permission to the device nodes";
  case 9:
    return "the NVIDIA kernel driver is not loaded";
  case 12:
    return "libnvidia-ml.so.1 was not found";
  case 13:
    return "a function is missing: the driver is older than this NVML client expects";
  case 14:
    return "corrupted infoROM";
  case 15:
    return "the GPU has fallen off the bus (Xid 79)";
  case 16:
    return "the GPU needs a reset";
  case 17:
    return "blocked by the operating system or cgroups";
  case 18:
    return "the NVML library and the kernel module differ (libraries upgraded without a reboot)";
  case 999:
    return "unknown error; inside a container usually lost cgroup device access";
  default:
    return "";
  }
}

const char* nvml_fix(int rc) {
  switch (rc) {
  case 9:
    return "load the driver (modprobe nvidia) or install it";
  case 18:
    return "reboot, or reload the kernel modules, so the kernel module matches the libraries";
  case 999:
    return "restart the container; with the systemd cgroup driver use CDI mode or create /dev/char symlinks "
           "(nvidia-ctk system create-dev-char-symlinks)";
  case 17:
    return "check cgroup device rules and seccomp for the container";
  case 4:
    return "give the process access to /dev/nvidia*";
  default:
    return "check the driver installation (dmesg | grep NVRM)";
  }
}

const char* cuda_fix(int rc) {
  switch (rc) {
  case 34:
    return "a CUDA toolkit stub libcuda.so shadows the driver's: remove the stubs directory from the library path";
  case 100:
    return "no usable GPU: check the device nodes and CUDA_VISIBLE_DEVICES";
  case 802:
    return "start nvidia-fabricmanager (same version as the driver) on this NVSwitch system";
  case 803:
    return "the libcuda in use does not match the kernel module (a forward-compat libcuda?): remove cuda-compat from "
           "the library path or match versions";
  case 804:
    return "forward compatibility works only on data-center GPUs: use an image whose CUDA this driver supports "
           "natively";
  case 999:
    return "often the nvidia_uvm module is missing: modprobe nvidia-uvm (or run nvidia-modprobe -u -c=0)";
  default:
    return "check dmesg for NVRM/Xid messages";
  }
}

struct Ctx {
  const Host& host;
  Report& report;
  void add(std::string id, std::string title, Status s, std::string evidence, std::string fix = {}) {
    report.checks.push_back({std::move(id), std::move(title), s, std::move(evidence), std::move(fix), {}});
  }
};

std::string join(const std::vector<std::string>& v, std::string_view sep = ", ") {
  return util::join(v, sep);
}

// Follows symlinks inside the root (absolute targets are host paths).
std::string resolve_in_root(const Host& host, std::string path) {
  for (int i = 0; i < 16; ++i) {
    auto t = host.link_target(path);
    if (!t) {
      return path;
    }
    path = t->front() == '/' ? *t : std::filesystem::path(path).parent_path().string() + "/" + *t;
  }
  return path;
}

struct Library {
  std::string host_path; // as found (ld.so.cache entry or directory)
  std::string real_path; // after symlinks
  std::string version;   // from the real file name
  std::string how;       // "ld.so.cache" or "directory scan"
};

std::optional<Library> find_library(const Host& host, const std::string& soname, const std::string& stem,
                                    std::vector<std::string>& looked) {
  auto cache = host.read("/etc/ld.so.cache", 64 << 20);
  looked.push_back(
      "/etc/ld.so.cache" +
      std::string(cache.ok() ? "" : " (" + (cache.error.empty() ? std::string("missing") : cache.error) + ")"));
  std::optional<Library> found;
  if (cache.ok()) {
    for (const auto& e : parse_ld_so_cache(cache.content)) {
      if (e.name == soname && host.exists(e.path)) {
        found = Library{e.path, "", "", "ld.so.cache"};
        break;
      }
    }
  }
  if (!found) {
    // Then the usual directories, and where Kubernetes device plugins put the driver:
    // GKE mounts it read-only at /usr/local/nvidia (the node's /home/kubernetes/bin/nvidia)
    // and finds it through LD_LIBRARY_PATH, not ld.so.cache.
    for (const char* dir :
         {"/usr/lib64", "/usr/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu/nvidia/current",
          "/usr/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu/nvidia/current", "/lib64", "/lib/x86_64-linux-gnu",
          "/lib/aarch64-linux-gnu", "/usr/lib", "/usr/local/nvidia/lib64", "/home/kubernetes/bin/nvidia/lib64"}) {
      std::string p = std::string(dir) + "/" + soname;
      looked.push_back(dir);
      if (host.exists(p)) {
        found = Library{p, "", "", "directory scan"};
        break;
      }
    }
  }
  if (found) {
    found->real_path = resolve_in_root(host, found->host_path);
    found->version =
        version_from_soname(std::filesystem::path(found->real_path).filename().string(), stem).value_or("");
  }
  return found;
}

// A library named on the command line (a path on this machine, not under --root).
std::optional<Library> override_library(const std::string& path, const std::string& stem, const std::string& flag) {
  std::error_code ec;
  auto real = std::filesystem::canonical(path, ec);
  std::string name = (ec ? std::filesystem::path(path) : real).filename().string();
  return Library{path, ec ? path : real.string(), version_from_soname(name, stem).value_or(""), flag};
}

// --- driver, modules, device nodes
std::optional<std::string> check_driver(Ctx& c, bool& driver_present, std::map<std::string, int>& majors) {
  auto modules_file = c.host.read("/proc/modules");
  std::set<std::string> modules = parse_proc_modules(modules_file.content);
  auto version_file = c.host.read("/proc/driver/nvidia/version");
  driver_present = modules.count("nvidia") > 0 || version_file.ok();
  c.report.facts["modules"] = json::array();
  for (const char* m : {"nvidia", "nvidia_uvm", "nvidia_modeset", "nvidia_drm", "nvidia_peermem"}) {
    if (modules.count(m)) {
      c.report.facts["modules"].push_back(m);
    }
  }
  if (!modules_file.ok()) {
    std::string why = "/proc/modules " +
                      (modules_file.state == FileRead::State::missing ? std::string("missing") : modules_file.error);
    if (version_file.ok()) {
      c.add("driver.module", "NVIDIA kernel module loaded", Status::pass,
            why + "; /proc/driver/nvidia/version present");
    } else {
      c.add("driver.module", "NVIDIA kernel module loaded", Status::fail,
            "no NVIDIA driver on this host: " + why + ", /proc/driver/nvidia/version missing",
            "install the NVIDIA driver (or point --root at the host's / when running in a container)");
    }
  } else if (modules.count("nvidia")) {
    c.add("driver.module", "NVIDIA kernel module loaded", Status::pass, "/proc/modules lists nvidia");
  } else {
    c.add("driver.module", "NVIDIA kernel module loaded", Status::fail,
          "/proc/modules has no nvidia module" + std::string(modules.count("nouveau") ? " (nouveau is loaded)" : ""),
          "install the NVIDIA driver and load it (modprobe nvidia); blacklist nouveau");
  }
  std::optional<std::string> version;
  if (version_file.ok()) {
    version = parse_driver_version(version_file.content);
  }
  auto sys_version = c.host.read("/sys/module/nvidia/version");
  std::string sys_v = sys_version.ok() ? std::string(parse_driver_version(sys_version.content).value_or("")) : "";
  if (version) {
    std::string ev = "/proc/driver/nvidia/version: " + *version;
    Status st = Status::pass;
    std::string fix;
    if (!sys_v.empty() && sys_v != *version) {
      st = Status::warn;
      ev += "; /sys/module/nvidia/version: " + sys_v;
      fix = "the loaded module and the installed one differ: reboot";
    }
    c.add("driver.version", "Driver version readable", st, ev, fix);
    c.report.facts["driver"] = *version;
  } else if (version_file.ok()) {
    c.add("driver.version", "Driver version readable", Status::fail,
          "/proc/driver/nvidia/version has no version on its first line: '" +
              version_file.content.substr(0, std::min<std::size_t>(80, version_file.content.find('\n'))) + "'",
          "reinstall the driver");
  } else {
    c.add("driver.version", "Driver version readable", driver_present ? Status::fail : Status::skip,
          "/proc/driver/nvidia/version " +
              (version_file.state == FileRead::State::missing ? std::string("missing") : version_file.error),
          driver_present ? "the driver is loaded but does not expose its version: reinstall it" : "");
  }
  if (driver_present && modules_file.ok()) {
    if (modules.count("nvidia_uvm")) {
      c.add("driver.uvm", "Unified memory module (nvidia_uvm)", Status::pass, "/proc/modules lists nvidia_uvm");
    } else {
      c.add("driver.uvm", "Unified memory module (nvidia_uvm)", Status::fail,
            "/proc/modules has no nvidia_uvm (CUDA fails with error 999 without it)",
            "modprobe nvidia-uvm on the host (containers cannot load it), or run nvidia-modprobe -u -c=0 at boot");
    }
  } else {
    c.add("driver.uvm", "Unified memory module (nvidia_uvm)", Status::skip, "no NVIDIA driver loaded");
  }
  auto devices = c.host.read("/proc/devices");
  majors = parse_proc_devices(devices.content);
  return version;
}

void check_device_nodes(Ctx& c, bool driver_present, const std::map<std::string, int>& majors,
                        std::vector<std::map<std::string, std::string>>& proc_gpus) {
  for (const auto& bus : c.host.list("/proc/driver/nvidia/gpus")) {
    auto info = c.host.read("/proc/driver/nvidia/gpus/" + bus + "/information");
    auto kv = parse_key_values(info.content);
    kv["Bus"] = bus;
    proc_gpus.push_back(kv);
  }
  json gpus = json::array();
  for (const auto& g : proc_gpus) {
    gpus.push_back(g);
  }
  c.report.facts["proc_gpus"] = gpus;
  if (!driver_present) {
    c.add("driver.devices", "Device nodes", Status::skip, "no NVIDIA driver loaded");
    return;
  }
  std::vector<std::string> missing;
  std::vector<std::string> wrong;
  int frontend = -1;
  std::string frontend_name;
  for (const char* n : {"nvidia", "nvidia-frontend"}) {
    if (auto it = majors.find(n); it != majors.end()) {
      frontend = it->second;
      frontend_name = n;
    }
  }
  auto expect = [&](const std::string& path, int maj, int min) {
    if (!c.host.exists(path)) {
      missing.push_back(path);
      return;
    }
    if (auto dev = c.host.char_device(path)) {
      if (maj >= 0 && (static_cast<int>(dev->first) != maj || static_cast<int>(dev->second) != min)) {
        wrong.push_back(path + " is " + std::to_string(dev->first) + ":" + std::to_string(dev->second) + ", expected " +
                        std::to_string(maj) + ":" + std::to_string(min));
      }
    }
  };
  expect("/dev/nvidiactl", frontend, 255);
  for (const auto& g : proc_gpus) {
    auto it = g.find("Device Minor");
    if (it != g.end() && !it->second.empty() && std::all_of(it->second.begin(), it->second.end(), ::isdigit)) {
      expect("/dev/nvidia" + it->second, frontend, std::stoi(it->second));
    }
  }
  int uvm = majors.count("nvidia-uvm") ? majors.at("nvidia-uvm") : -1;
  expect("/dev/nvidia-uvm", uvm, 0);
  std::string ev = "/proc/devices: " +
                   (frontend >= 0 ? std::to_string(frontend) + " " + frontend_name : std::string("no nvidia entry")) +
                   (uvm >= 0 ? ", " + std::to_string(uvm) + " nvidia-uvm" : ", no nvidia-uvm") + "; " +
                   std::to_string(proc_gpus.size()) + " GPU(s) in /proc/driver/nvidia/gpus";
  if (missing.empty() && wrong.empty() && frontend >= 0) {
    c.add("driver.devices", "Device nodes", Status::pass, ev);
  } else {
    c.add("driver.devices", "Device nodes", Status::fail,
          ev + (missing.empty() ? "" : "; missing: " + join(missing)) + (wrong.empty() ? "" : "; " + join(wrong)),
          "create the nodes (nvidia-modprobe -c=N -u, or nvidia-smi once as root); in a container, pass them in "
          "(device plugin / CDI)");
  }
}

// --- NVML and CUDA
void check_nvml_cuda(Ctx& c, const Options& o, bool driver_present, const std::optional<std::string>& kernel_version,
                     json& nvml, json& cuda) {
  std::vector<std::string> looked;
  auto nvml_lib = o.nvml_lib.empty() ? find_library(c.host, "libnvidia-ml.so.1", "libnvidia-ml", looked)
                                     : override_library(o.nvml_lib, "libnvidia-ml", "--nvml-lib");
  std::vector<std::string> looked_cuda;
  auto cuda_lib = o.cuda_lib.empty() ? find_library(c.host, "libcuda.so.1", "libcuda", looked_cuda)
                                     : override_library(o.cuda_lib, "libcuda", "--cuda-lib");
  std::string libs_ev;
  for (const auto& [name, lib] : {std::pair{"libnvidia-ml.so.1", &nvml_lib}, std::pair{"libcuda.so.1", &cuda_lib}}) {
    libs_ev += std::string(libs_ev.empty() ? "" : "; ") + name + ": " +
               (*lib ? (*lib)->real_path + " via " + (*lib)->how : std::string("not found"));
  }
  if (nvml_lib && cuda_lib) {
    c.add("libs.found", "Driver libraries found", Status::pass, libs_ev);
  } else {
    c.add("libs.found", "Driver libraries found", driver_present ? Status::fail : Status::skip,
          libs_ev + " (looked in " + join(looked) + ")",
          driver_present ? "install the driver's user-space libraries and run ldconfig (a driver container uses "
                           "--root /run/nvidia/driver)"
                         : "");
  }
  std::vector<std::string> versions;
  for (const auto* lib : {&nvml_lib, &cuda_lib}) {
    if (*lib && !(*lib)->version.empty()) {
      versions.push_back((*lib)->version);
    }
  }
  if (!kernel_version || versions.empty()) {
    c.add("libs.version", "Library versions match the kernel module", Status::skip,
          !kernel_version ? "kernel module version unknown" : "library file names carry no version");
  } else {
    bool match =
        std::all_of(versions.begin(), versions.end(), [&](const std::string& v) { return v == *kernel_version; });
    c.add("libs.version", "Library versions match the kernel module", match ? Status::pass : Status::fail,
          "kernel module " + *kernel_version + "; libraries " + join(versions),
          match ? "" : "the driver libraries were upgraded without reloading the module: reboot (NVML reports 18)");
  }
  // NVML
  if (!nvml_lib) {
    c.add("nvml.init", "NVML initialises", driver_present ? Status::fail : Status::skip, "libnvidia-ml.so.1 not found",
          driver_present ? "install the driver libraries" : "");
  } else {
    std::string path = o.nvml_lib.empty() ? c.host.under(nvml_lib->host_path).string() : o.nvml_lib;
    nvml = probe_nvml(path, o.timeout_ms);
    c.report.facts["nvml"] = nvml;
    if (nvml.value("timeout", false)) {
      c.add("nvml.init", "NVML initialises", Status::fail,
            "nvmlInit did not return within " + std::to_string(o.timeout_ms) + " ms",
            "the driver is hung: check dmesg for Xid errors; a reboot may be needed");
    } else if (nvml.value("crashed", false)) {
      c.add("nvml.init", "NVML initialises", Status::fail,
            "the NVML probe crashed (signal " + std::to_string(nvml.value("signal", 0)) + ")",
            "reinstall the driver libraries");
    } else if (!nvml.value("loaded", false)) {
      c.add("nvml.init", "NVML initialises", Status::fail,
            "dlopen " + path + ": " + nvml.value("error", std::string("failed")), "reinstall the driver libraries");
    } else if (nvml.value("init", -1) != 0) {
      int rc = nvml.value("init", -1);
      c.add("nvml.init", "NVML initialises", Status::fail,
            "nvmlInit_v2 returned " + std::to_string(rc) + " (" + nvml.value("init_error", std::string("")) +
                "): " + nvml_meaning(rc),
            nvml_fix(rc));
    } else {
      c.add("nvml.init", "NVML initialises", Status::pass,
            "driver " + nvml.value("driver", std::string("?")) + ", CUDA " +
                std::to_string(nvml.value("cuda_driver", 0) / 1000) + "." +
                std::to_string((nvml.value("cuda_driver", 0) % 1000) / 10) + ", " +
                std::to_string(nvml["gpus"].size()) + " GPU(s)");
    }
  }
  // CUDA driver API
  if (!cuda_lib) {
    c.add("cuda.init", "CUDA driver initialises", driver_present ? Status::fail : Status::skip,
          "libcuda.so.1 not found", driver_present ? "install the driver libraries" : "");
  } else {
    std::string path = o.cuda_lib.empty() ? c.host.under(cuda_lib->host_path).string() : o.cuda_lib;
    cuda = probe_cuda(path, o.timeout_ms);
    c.report.facts["cuda"] = cuda;
    if (cuda.value("timeout", false)) {
      c.add(
          "cuda.init", "CUDA driver initialises", Status::fail,
          "cuInit did not return within " + std::to_string(o.timeout_ms) + " ms",
          "the driver is hung (a known cuInit failure mode): check dmesg for Xid errors, Fabric Manager, persistence");
    } else if (cuda.value("crashed", false)) {
      c.add("cuda.init", "CUDA driver initialises", Status::fail, "the CUDA probe crashed", "reinstall the driver");
    } else if (!cuda.value("loaded", false)) {
      c.add("cuda.init", "CUDA driver initialises", Status::fail,
            "dlopen " + path + ": " + cuda.value("error", std::string("failed")), "reinstall the driver libraries");
    } else if (cuda.value("init", -1) != 0) {
      int rc = cuda.value("init", -1);
      c.add("cuda.init", "CUDA driver initialises", Status::fail,
            "cuInit returned " + std::to_string(rc) + " (" + cuda.value("init_name", std::string("?")) + ")",
            cuda_fix(rc));
    } else {
      c.add("cuda.init", "CUDA driver initialises", Status::pass,
            "cuInit ok, " + std::to_string(cuda.value("count", 0)) + " device(s), driver API " +
                std::to_string(cuda.value("driver_version", 0)));
    }
  }
}

void check_gpus(Ctx& c, const json& nvml, bool driver_present) {
  if (!nvml.is_object() || nvml.value("init", -1) != 0) {
    for (const char* id : {"gpu.health", "gpu.persistence", "mig.consistency"}) {
      c.add(id,
            id == std::string("gpu.health")        ? "GPU health (ECC, row remapping)"
            : id == std::string("gpu.persistence") ? "Persistence mode"
                                                   : "MIG consistency",
            Status::skip, driver_present ? "NVML did not initialise" : "no NVIDIA driver loaded");
    }
    return;
  }
  std::vector<std::string> bad;
  std::vector<std::string> no_persist;
  std::vector<std::string> mig_fail;
  std::vector<std::string> mig_warn;
  std::vector<std::string> mig_ok;
  for (const auto& g : nvml["gpus"]) {
    std::string id = "GPU" + std::to_string(g.value("index", 0)) + " (" + g.value("name", std::string("?")) + ")";
    if (g.value("ecc_uncorrected", 0ULL) > 0) {
      bad.push_back(id + ": " + std::to_string(g.value("ecc_uncorrected", 0ULL)) + " uncorrected ECC errors");
    }
    if (g.value("remapped_failure", 0) != 0) {
      bad.push_back(id + ": row remapping failed");
    } else if (g.value("remapped_pending", 0) != 0) {
      bad.push_back(id + ": row remapping pending (reset the GPU)");
    }
    if (g.contains("persistence") && g.value("persistence", 0) == 0) {
      no_persist.push_back(id);
    }
    if (g.contains("mig_current")) {
      unsigned cur = g.value("mig_current", 0U);
      unsigned pend = g.value("mig_pending", 0U);
      if (cur != pend) {
        mig_warn.push_back(id + ": MIG mode " + std::to_string(cur) + ", pending " + std::to_string(pend));
      }
      if (cur == 1 && g.value("mig_devices", 0U) == 0) {
        mig_fail.push_back(id + ": MIG enabled with no MIG instances");
      } else if (cur == 1) {
        mig_ok.push_back(id + ": " + std::to_string(g.value("mig_devices", 0U)) + " MIG instance(s)");
      }
    }
  }
  c.add("gpu.health", "GPU health (ECC, row remapping)", bad.empty() ? Status::pass : Status::fail,
        bad.empty()
            ? std::to_string(nvml["gpus"].size()) + " GPU(s) without uncorrected ECC errors or remapping failures"
            : join(bad, "; "),
        bad.empty() ? "" : "drain the node and reset the GPU (nvidia-smi -r) or replace it if remapping failed");
  c.add("gpu.persistence", "Persistence mode", no_persist.empty() ? Status::pass : Status::warn,
        no_persist.empty() ? "enabled on every GPU" : "off on " + join(no_persist),
        no_persist.empty() ? "" : "enable nvidia-persistenced (slow first CUDA start and lost state otherwise)");
  if (!mig_fail.empty()) {
    c.add("mig.consistency", "MIG consistency", Status::fail,
          join(mig_fail, "; ") + (mig_warn.empty() ? "" : "; " + join(mig_warn, "; ")),
          "create GPU and compute instances (nvidia-smi mig -cgi ... -C) or disable MIG (nvidia-smi -mig 0)");
  } else if (!mig_warn.empty()) {
    c.add("mig.consistency", "MIG consistency", Status::warn, join(mig_warn, "; "),
          "reset the GPUs or reboot to apply the pending MIG mode");
  } else {
    c.add("mig.consistency", "MIG consistency", Status::pass,
          mig_ok.empty() ? "MIG disabled on every GPU" : join(mig_ok, "; "));
  }
}

void check_fabric(Ctx& c, const std::map<std::string, int>& majors, const json& nvml,
                  const std::optional<std::string>& driver) {
  // NVSwitches are seen by their device nodes (/dev/nvidia-nvswitchctl, nvidia-nvswitchN)
  // and by NVML's fabric state. The `nvidia-nvswitch` major in /proc/devices is not
  // evidence: the driver registers it on every node, as on an H200 VM with one PCIe GPU
  // and no switch (driver 580.159.04, read on a real machine; docs/doctor.md).
  std::vector<std::string> nodes;
  for (const auto& name : c.host.list("/dev")) {
    if (name.rfind("nvidia-nvswitch", 0) == 0) {
      nodes.push_back("/dev/" + name);
    }
  }
  std::vector<std::string> not_ready;
  std::vector<std::string> states;
  bool fabric = false; // some GPU is attached to a fabric (state 1 not started, 2 in progress, 3 completed)
  if (nvml.is_object() && nvml.contains("gpus")) {
    for (const auto& g : nvml["gpus"]) {
      if (!g.contains("fabric_state")) {
        continue;
      }
      int state = g.value("fabric_state", 0);
      states.push_back("GPU" + std::to_string(g.value("index", 0)) + " fabric state " + std::to_string(state));
      fabric = fabric || state != 0;
      if (state != 3) {
        not_ready.push_back(states.back());
      }
    }
  }
  if (nodes.empty() && !fabric) {
    c.add("fabric.manager", "NVSwitch Fabric Manager", Status::skip,
          "no NVSwitch on this node: no /dev/nvidia-nvswitch* nodes" +
              std::string(states.empty() ? "" : ", NVML fabric state 0 (not supported) on every GPU") +
              (majors.count("nvidia-nvswitch") ? " (the nvidia-nvswitch major in /proc/devices is registered by the "
                                                 "driver with or without switches)"
                                               : ""));
    return;
  }
  bool running = false;
  for (const auto& pid : c.host.list("/proc")) {
    if (pid.empty() || !std::all_of(pid.begin(), pid.end(), ::isdigit)) {
      continue;
    }
    auto comm = c.host.read("/proc/" + pid + "/comm");
    if (comm.ok() && comm.content.rfind("nv-fabricmanage", 0) == 0) {
      running = true;
    }
  }
  std::string ev = std::string(nodes.empty() ? "GPUs attached to an NVLink fabric (NVML)"
                                             : "NVSwitch present (" + std::to_string(nodes.size()) + " device nodes)") +
                   "; nv-fabricmanager " + std::string(running ? "running" : "not running") +
                   (not_ready.empty() ? "" : "; " + join(not_ready));
  if (not_ready.empty() && running) {
    c.add("fabric.manager", "NVSwitch Fabric Manager", Status::pass, ev);
  } else if (not_ready.empty() && !states.empty()) {
    // The fabric is up on every GPU, so Fabric Manager did its work, but it is not seen
    // now (stopped, or this process has no view of the host's processes).
    c.add("fabric.manager", "NVSwitch Fabric Manager", Status::warn,
          ev + " (NVML reports the fabric completed on every GPU)",
          "check nvidia-fabricmanager is running (systemctl status nvidia-fabricmanager); in a pod, give the doctor "
          "hostPID to see it");
  } else {
    c.add("fabric.manager", "NVSwitch Fabric Manager", Status::fail, ev + " (CUDA reports 802, system not ready)",
          "install and start nvidia-fabricmanager " + driver.value_or("of the driver's version") +
              " (systemctl enable --now nvidia-fabricmanager)");
  }
}

// --- container runtimes
std::optional<toml::table> read_toml(const Host& host, const std::string& path, std::string& error) {
  auto f = host.read(path);
  if (!f.ok()) {
    error = f.state == FileRead::State::missing ? "missing" : f.error;
    return std::nullopt;
  }
  try {
    return toml::parse(f.content, path);
  } catch (const toml::parse_error& e) {
    error = std::string("malformed TOML at line ") + std::to_string(e.source().begin.line) + ": " +
            std::string(e.description());
    return std::nullopt;
  }
}

const toml::table* containerd_runtimes(const toml::table& t) {
  for (const char* plugin : {"io.containerd.grpc.v1.cri", "io.containerd.cri.v1.runtime"}) {
    if (auto r = t["plugins"][plugin]["containerd"]["runtimes"].as_table()) {
      return r;
    }
  }
  return nullptr;
}

struct RuntimeFacts {
  bool systemd_cgroup = false;
  std::string toolkit_mode;
  bool any_runtime = false;
};

void check_docker(Ctx& c, RuntimeFacts& rf) {
  bool installed = c.host.exists("/etc/docker") || c.host.exists("/usr/bin/dockerd");
  if (!installed) {
    c.add("runtime.docker", "Docker GPU runtime", Status::skip, "Docker is not installed");
    return;
  }
  rf.any_runtime = true;
  bool hook = c.host.exists("/usr/bin/nvidia-container-runtime-hook");
  auto f = c.host.read("/etc/docker/daemon.json");
  json d = json::object();
  if (f.ok()) {
    try {
      d = json::parse(f.content);
    } catch (const std::exception& e) {
      c.add("runtime.docker", "Docker GPU runtime", Status::fail,
            "/etc/docker/daemon.json is malformed JSON: " + std::string(e.what()),
            "fix the file (nvidia-ctk runtime configure --runtime=docker rewrites it), then restart dockerd");
      return;
    }
  }
  bool nvidia =
      d.is_object() && d.contains("runtimes") && d["runtimes"].is_object() && d["runtimes"].contains("nvidia");
  bool cdi = d.is_object() && d.contains("features") && d["features"].is_object() && d["features"].value("cdi", false);
  for (const auto& opt : d.value("exec-opts", json::array())) {
    if (opt.is_string() && opt.get<std::string>() == "native.cgroupdriver=systemd") {
      rf.systemd_cgroup = true;
    }
  }
  std::string ev = std::string(f.ok() ? "/etc/docker/daemon.json" : "no /etc/docker/daemon.json") +
                   ": nvidia runtime " + (nvidia ? "configured" : "absent") +
                   (d.contains("default-runtime") ? ", default-runtime " + d["default-runtime"].dump() : "") +
                   (cdi ? ", CDI enabled" : "") + "; nvidia-container-runtime-hook " + (hook ? "present" : "missing");
  if (nvidia || cdi || hook) {
    c.add("runtime.docker", "Docker GPU runtime", (nvidia || cdi) ? Status::pass : Status::warn, ev,
          (nvidia || cdi) ? ""
                          : "--gpus relies on the hook being on dockerd's PATH when it started: restart dockerd after "
                            "installing the toolkit");
  } else {
    c.add("runtime.docker", "Docker GPU runtime", Status::fail,
          ev + " (docker run --gpus fails: could not select device driver \"\" with capabilities: [[gpu]])",
          "install nvidia-container-toolkit, run nvidia-ctk runtime configure --runtime=docker, restart dockerd");
  }
}

void check_containerd(Ctx& c, RuntimeFacts& rf) {
  std::string path;
  for (const char* p : {"/etc/containerd/config.toml", "/var/lib/rancher/k3s/agent/etc/containerd/config.toml"}) {
    if (c.host.exists(p)) {
      path = p;
      break;
    }
  }
  bool installed = !path.empty() || c.host.exists("/usr/bin/containerd");
  if (!installed) {
    c.add("runtime.containerd", "containerd GPU runtime", Status::skip, "containerd is not installed");
    return;
  }
  rf.any_runtime = true;
  if (path.empty()) {
    c.add("runtime.containerd", "containerd GPU runtime", Status::fail,
          "containerd is installed but has no config.toml",
          "nvidia-ctk runtime configure --runtime=containerd, then restart containerd");
    return;
  }
  std::string error;
  auto main = read_toml(c.host, path, error);
  if (!main) {
    c.add("runtime.containerd", "containerd GPU runtime", Status::fail, path + ": " + error,
          "fix the file, then restart containerd");
    return;
  }
  std::vector<std::pair<std::string, toml::table>> files{{path, *main}};
  std::vector<std::string> imports;
  if (auto arr = (*main)["imports"].as_array()) {
    for (const auto& v : *arr) {
      if (auto s = v.value<std::string>()) {
        imports.push_back(*s);
      }
    }
  }
  std::vector<std::string> unimported;
  for (const auto& name : c.host.list("/etc/containerd/conf.d")) {
    std::string p = "/etc/containerd/conf.d/" + name;
    bool imported = std::any_of(imports.begin(), imports.end(), [&](const std::string& glob) {
      return glob == p || (glob.size() > 1 && glob.back() == 'l' && glob.find('*') != std::string::npos &&
                           p.rfind(glob.substr(0, glob.find('*')), 0) == 0);
    });
    if (!imported) {
      unimported.push_back(p);
      continue;
    }
    std::string e2;
    if (auto t = read_toml(c.host, p, e2)) {
      files.emplace_back(p, *t);
    } else {
      c.add("runtime.containerd", "containerd GPU runtime", Status::fail, p + ": " + e2,
            "fix the drop-in, then restart containerd");
      return;
    }
  }
  std::string nvidia_in;
  std::string binary;
  std::string default_runtime = "runc";
  bool cdi = false;
  for (const auto& [p, t] : files) {
    if (auto rts = containerd_runtimes(t)) {
      if (auto nv = (*rts)["nvidia"].as_table()) {
        nvidia_in = p;
        binary = (*nv)["options"]["BinaryName"].value_or(std::string{});
      }
      for (auto&& [name, rt] : *rts) {
        if (auto tbl = rt.as_table(); tbl && (*tbl)["options"]["SystemdCgroup"].value_or(false)) {
          rf.systemd_cgroup = true;
        }
      }
    }
    for (const char* plugin : {"io.containerd.grpc.v1.cri", "io.containerd.cri.v1.runtime"}) {
      if (auto d = t["plugins"][plugin]["containerd"]["default_runtime_name"].value<std::string>()) {
        default_runtime = *d;
      }
      if (t["plugins"][plugin]["enable_cdi"].value_or(false)) {
        cdi = true;
      }
    }
  }
  std::string ev = path + ": nvidia runtime " + (nvidia_in.empty() ? std::string("absent") : "in " + nvidia_in) +
                   (binary.empty() ? "" : " (BinaryName " + binary + ")") + ", default runtime " + default_runtime +
                   (cdi ? ", CDI enabled" : "") + (unimported.empty() ? "" : "; not imported: " + join(unimported));
  if (!nvidia_in.empty()) {
    bool binary_ok = binary.empty() || c.host.exists(binary);
    c.add("runtime.containerd", "containerd GPU runtime", binary_ok ? Status::pass : Status::fail, ev,
          binary_ok ? (default_runtime != "nvidia"
                           ? "pods need runtimeClassName: nvidia (or set default_runtime_name = \"nvidia\")"
                           : "")
                    : "BinaryName " + binary + " does not exist: install nvidia-container-toolkit");
  } else if (cdi) {
    c.add("runtime.containerd", "containerd GPU runtime", Status::pass, ev);
  } else {
    c.add("runtime.containerd", "containerd GPU runtime", Status::fail, ev,
          unimported.empty()
              ? "nvidia-ctk runtime configure --runtime=containerd" +
                    std::string(path.find("k3s") != std::string::npos ? " --config " + path : "") +
                    ", then restart containerd"
              : "add imports = [\"/etc/containerd/conf.d/*.toml\"] to " + path + ", then restart containerd");
  }
}

void check_crio(Ctx& c, RuntimeFacts& rf) {
  bool installed = c.host.exists("/etc/crio") || c.host.exists("/usr/bin/crio");
  if (!installed) {
    c.add("runtime.crio", "CRI-O GPU runtime", Status::skip, "CRI-O is not installed");
    return;
  }
  rf.any_runtime = true;
  std::vector<std::string> nv;
  for (const auto& f : c.host.list("/etc/crio/crio.conf.d")) {
    auto t = c.host.read("/etc/crio/crio.conf.d/" + f);
    if (t.ok() && t.content.find("nvidia") != std::string::npos) {
      nv.push_back(f);
    }
  }
  c.add("runtime.crio", "CRI-O GPU runtime", nv.empty() ? Status::fail : Status::pass,
        nv.empty() ? "no drop-in in /etc/crio/crio.conf.d mentions nvidia" : "/etc/crio/crio.conf.d: " + join(nv),
        nv.empty() ? "nvidia-ctk runtime configure --runtime=crio, then restart crio" : "");
}

void check_toolkit(Ctx& c, RuntimeFacts& rf) {
  const std::string path = "/etc/nvidia-container-runtime/config.toml";
  std::string error;
  auto t = read_toml(c.host, path, error);
  if (!t) {
    c.add("runtime.toolkit", "NVIDIA Container Toolkit config",
          error == "missing" && !rf.any_runtime ? Status::skip
          : error == "missing"                  ? Status::warn
                                                : Status::fail,
          path + ": " + error,
          error == "missing" ? (rf.any_runtime ? "install nvidia-container-toolkit" : "")
                             : "fix the file (or regenerate it with nvidia-ctk config)");
    return;
  }
  rf.toolkit_mode = (*t)["nvidia-container-runtime"]["mode"].value_or(std::string("auto"));
  bool no_cgroups = (*t)["nvidia-container-cli"]["no-cgroups"].value_or(false);
  std::string ldconfig = (*t)["nvidia-container-cli"]["ldconfig"].value_or(std::string{});
  std::string ev = path + ": mode " + rf.toolkit_mode + (no_cgroups ? ", no-cgroups = true" : "") +
                   (ldconfig.empty() ? "" : ", ldconfig " + ldconfig);
  std::string ld = ldconfig.empty() ? "" : (ldconfig[0] == '@' ? ldconfig.substr(1) : ldconfig);
  if (!ld.empty() && !c.host.exists(ld)) {
    c.add("runtime.toolkit", "NVIDIA Container Toolkit config", Status::fail, ev + " (" + ld + " does not exist)",
          "set [nvidia-container-cli] ldconfig to this distribution's ldconfig (e.g. @/sbin/ldconfig)");
    return;
  }
  c.add("runtime.toolkit", "NVIDIA Container Toolkit config", Status::pass, ev);
}

void check_cdi(Ctx& c, const std::optional<std::string>& driver) {
  std::vector<std::string> specs;
  for (const char* dir : {"/etc/cdi", "/var/run/cdi"}) {
    for (const auto& f : c.host.list(dir)) {
      auto t = c.host.read(std::string(dir) + "/" + f);
      if (t.ok() && t.content.find("nvidia.com/gpu") != std::string::npos) {
        specs.push_back(std::string(dir) + "/" + f);
      }
    }
  }
  if (specs.empty()) {
    c.add("runtime.cdi", "CDI specs", Status::skip, "no nvidia.com/gpu CDI spec in /etc/cdi or /var/run/cdi");
    return;
  }
  if (!driver) {
    c.add("runtime.cdi", "CDI specs", Status::skip, join(specs) + " present; driver version unknown");
    return;
  }
  static const std::regex lib_re("libcuda\\.so\\.([0-9]+\\.[0-9]+(?:\\.[0-9]+)?)");
  static const std::regex hdv_re("--host-driver-version=([0-9]+\\.[0-9]+(?:\\.[0-9]+)?)");
  std::vector<std::string> stale;
  for (const auto& s : specs) {
    std::string text = c.host.read(s).content;
    std::set<std::string> seen;
    for (const auto* re : {&lib_re, &hdv_re}) {
      for (std::sregex_iterator it(text.begin(), text.end(), *re), end; it != end; ++it) {
        seen.insert((*it)[1]);
      }
    }
    for (const auto& v : seen) {
      if (v != *driver) {
        stale.push_back(s + " refers to driver " + v);
      }
    }
  }
  c.add("runtime.cdi", "CDI specs", stale.empty() ? Status::pass : Status::fail,
        stale.empty() ? join(specs) + " match driver " + *driver : join(stale, "; ") + "; the driver is " + *driver,
        stale.empty() ? ""
                      : "regenerate: nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml (the spec is stale after a "
                        "driver upgrade)");
}

void check_cgroup_pitfall(Ctx& c, const RuntimeFacts& rf, const json& nvml) {
  if (!rf.systemd_cgroup) {
    c.add("runtime.cgroup-devices", "Device access survives systemd reloads", Status::skip,
          "no runtime uses the systemd cgroup driver");
    return;
  }
  bool legacy = rf.toolkit_mode.empty() || rf.toolkit_mode == "legacy" || rf.toolkit_mode == "auto";
  bool links = c.host.exists("/dev/char/195:255");
  std::string ev = "systemd cgroup driver, toolkit mode " +
                   (rf.toolkit_mode.empty() ? std::string("unknown") : rf.toolkit_mode) +
                   ", /dev/char/195:* symlinks " + (links ? "present" : "missing");
  bool lost = nvml.is_object() && nvml.value("init", 0) == 999;
  if (legacy && !links) {
    c.add("runtime.cgroup-devices", "Device access survives systemd reloads", lost ? Status::fail : Status::warn,
          ev + (lost ? "; NVML already reports 999 (Failed to initialize NVML: Unknown Error)" : ""),
          "create the symlinks (nvidia-ctk system create-dev-char-symlinks --create-all) or switch the toolkit to CDI "
          "mode");
  } else {
    c.add("runtime.cgroup-devices", "Device access survives systemd reloads", Status::pass, ev);
  }
}

void check_xid(Ctx& c) {
  for (const char* log : {"/var/log/kern.log", "/var/log/messages"}) {
    auto f = c.host.read(log, 32 << 20);
    if (!f.ok()) {
      continue;
    }
    std::vector<std::string> xids;
    std::size_t pos = 0;
    while ((pos = f.content.find("NVRM: Xid", pos)) != std::string::npos) {
      auto end = f.content.find('\n', pos);
      xids.push_back(f.content.substr(
          pos, std::min<std::size_t>(end == std::string::npos ? f.content.size() - pos : end - pos, 120)));
      pos += 9;
    }
    c.add("kernel.xid", "Xid errors in the kernel log", xids.empty() ? Status::pass : Status::warn,
          xids.empty() ? std::string(log) + ": no Xid errors"
                       : std::string(log) + ": " + std::to_string(xids.size()) + " Xid error(s), last: " + xids.back(),
          xids.empty() ? "" : "look up the Xid numbers (NVIDIA Xid catalog); 48/63/64/79/94/95 need attention");
    return;
  }
  c.add("kernel.xid", "Xid errors in the kernel log", Status::skip,
        "no readable kernel log (/var/log/kern.log, /var/log/messages)");
}

// The probes the image checks use, from the driver version and the outputs of the NVML
// and CUDA probes (JSON from the probe's child process).
HostProbes probes_from(const std::optional<std::string>& driver, const json& nvml, const json& cuda) {
  HostProbes p;
  p.driver = driver;
  if (nvml.is_object()) {
    p.cuda_driver = nvml.value("cuda_driver", 0);
  }
  if (p.cuda_driver == 0 && cuda.is_object()) {
    p.cuda_driver = cuda.value("driver_version", 0);
  }
  if (nvml.is_object() && nvml.contains("gpus")) {
    for (const auto& g : nvml["gpus"]) {
      if (g.contains("cc")) {
        std::uint64_t mib = 0;
        if (auto m = g.find("memory_mib"); m != g.end() && m->is_number_integer() && m->get<std::int64_t>() > 0) {
          mib = m->get<std::uint64_t>();
        }
        p.gpus.push_back({g.value("name", std::string("GPU")), g["cc"].get<std::string>(), mib});
      }
    }
  }
  return p;
}

} // namespace

HostProbes host_probes_from_facts(const json& facts) {
  std::optional<std::string> driver;
  if (facts.contains("driver") && facts["driver"].is_string()) {
    driver = facts["driver"].get<std::string>();
  }
  return probes_from(driver, facts.value("nvml", json()), facts.value("cuda", json()));
}

Report check_host(const Host& host, const Options& options) {
  Report report;
  Ctx c{host, report};
  report.facts["root"] = host.root().string();
  bool driver_present = false;
  std::map<std::string, int> majors;
  auto driver = check_driver(c, driver_present, majors);
  std::vector<std::map<std::string, std::string>> proc_gpus;
  check_device_nodes(c, driver_present, majors, proc_gpus);
  json nvml;
  json cuda;
  check_nvml_cuda(c, options, driver_present, driver, nvml, cuda);
  std::optional<std::string> driver_version = driver; // /proc's, else NVML's
  if (!driver && nvml.is_object() && nvml.contains("driver")) {
    report.facts["driver"] = nvml["driver"];
    if (nvml["driver"].is_string()) {
      driver_version = nvml["driver"].get<std::string>();
    }
  }
  check_gpus(c, nvml, driver_present);
  check_fabric(c, majors, nvml, driver);
  RuntimeFacts rf;
  check_docker(c, rf);
  check_containerd(c, rf);
  check_crio(c, rf);
  check_toolkit(c, rf);
  check_cdi(c, driver);
  check_cgroup_pitfall(c, rf, nvml);
  check_xid(c);
  report.probes = probes_from(driver_version, nvml, cuda);
  return report;
}

} // namespace doctor
