#include "doctor/probe.hpp"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

namespace doctor {

using nlohmann::json;

namespace {

// NVML ABI (nvml.h), declared here: the header is not on build machines.
using nvmlReturn_t = int;
using nvmlDevice_t = void*;
struct nvmlPciInfo_t {
  char busIdLegacy[16];
  unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};
struct nvmlMemory_t {
  unsigned long long total, free, used;
};
struct nvmlGpuFabricInfo_t {
  unsigned char clusterUuid[16];
  nvmlReturn_t status;
  unsigned cliqueId;
  unsigned char state;
};

template <typename F> F sym(void* lib, std::initializer_list<const char*> names) {
  for (const char* n : names) {
    if (void* p = ::dlsym(lib, n)) {
      return reinterpret_cast<F>(p);
    }
  }
  return nullptr;
}

// dlopen with the outcome recorded in r ("loaded", and "error" on failure).
void* open_library(const std::string& path, json& r) {
  void* lib = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  r["loaded"] = lib != nullptr;
  if (lib == nullptr) {
    const char* e = ::dlerror();
    r["error"] = e != nullptr ? e : "dlopen failed";
  }
  return lib;
}

// The per-device NVML functions (null where the library lacks one).
struct NvmlDeviceFns {
  nvmlReturn_t (*name)(nvmlDevice_t, char*, unsigned);
  nvmlReturn_t (*uuid)(nvmlDevice_t, char*, unsigned);
  nvmlReturn_t (*pci)(nvmlDevice_t, nvmlPciInfo_t*);
  nvmlReturn_t (*minor_number)(nvmlDevice_t, unsigned*);
  nvmlReturn_t (*cc)(nvmlDevice_t, int*, int*);
  nvmlReturn_t (*mem)(nvmlDevice_t, nvmlMemory_t*);
  nvmlReturn_t (*mig)(nvmlDevice_t, unsigned*, unsigned*);
  nvmlReturn_t (*max_mig)(nvmlDevice_t, unsigned*);
  nvmlReturn_t (*mig_handle)(nvmlDevice_t, unsigned, nvmlDevice_t*);
  nvmlReturn_t (*persist)(nvmlDevice_t, int*);
  nvmlReturn_t (*ecc)(nvmlDevice_t, int, int, unsigned long long*);
  nvmlReturn_t (*remap)(nvmlDevice_t, unsigned*, unsigned*, unsigned*, unsigned*);
  nvmlReturn_t (*fabric)(nvmlDevice_t, nvmlGpuFabricInfo_t*);
};

// Looks the per-device functions up, in this order.
NvmlDeviceFns nvml_device_fns(void* lib) {
  NvmlDeviceFns f{};
  f.name = sym<decltype(f.name)>(lib, {"nvmlDeviceGetName"});
  f.uuid = sym<decltype(f.uuid)>(lib, {"nvmlDeviceGetUUID"});
  f.pci = sym<decltype(f.pci)>(lib, {"nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2"});
  f.minor_number = sym<decltype(f.minor_number)>(lib, {"nvmlDeviceGetMinorNumber"});
  f.cc = sym<decltype(f.cc)>(lib, {"nvmlDeviceGetCudaComputeCapability"});
  f.mem = sym<decltype(f.mem)>(lib, {"nvmlDeviceGetMemoryInfo"});
  f.mig = sym<decltype(f.mig)>(lib, {"nvmlDeviceGetMigMode"});
  f.max_mig = sym<decltype(f.max_mig)>(lib, {"nvmlDeviceGetMaxMigDeviceCount"});
  f.mig_handle = sym<decltype(f.mig_handle)>(lib, {"nvmlDeviceGetMigDeviceHandleByIndex"});
  f.persist = sym<decltype(f.persist)>(lib, {"nvmlDeviceGetPersistenceMode"});
  f.ecc = sym<decltype(f.ecc)>(lib, {"nvmlDeviceGetTotalEccErrors"});
  f.remap = sym<decltype(f.remap)>(lib, {"nvmlDeviceGetRemappedRows"});
  f.fabric = sym<decltype(f.fabric)>(lib, {"nvmlDeviceGetGpuFabricInfo"});
  return f;
}

// The device's MIG mode, and how many of its MIG devices exist, into g.
void nvml_mig(const NvmlDeviceFns& f, nvmlDevice_t d, json& g) {
  unsigned cur = 0;
  unsigned pend = 0;
  if (f.mig && f.mig(d, &cur, &pend) == 0) {
    g["mig_current"] = cur;
    g["mig_pending"] = pend;
    unsigned maxm = 0;
    if (f.max_mig && f.max_mig(d, &maxm) == 0) {
      g["max_mig_devices"] = maxm;
      unsigned present = 0;
      for (unsigned k = 0; f.mig_handle && k < maxm; ++k) {
        nvmlDevice_t md = nullptr;
        if (f.mig_handle(d, k, &md) == 0) {
          ++present;
        }
      }
      g["mig_devices"] = present;
    }
  }
}

// What NVML says of device i (handle d): each fact whose call succeeds.
json nvml_device(const NvmlDeviceFns& f, unsigned i, nvmlDevice_t d) {
  json g = {{"index", i}};
  char s[96] = {};
  if (f.name && f.name(d, s, sizeof s) == 0) {
    g["name"] = std::string(s);
  }
  char u[96] = {};
  if (f.uuid && f.uuid(d, u, sizeof u) == 0) {
    g["uuid"] = std::string(u);
  }
  nvmlPciInfo_t p{};
  if (f.pci && f.pci(d, &p) == 0) {
    g["pci"] = std::string(p.busId, strnlen(p.busId, sizeof p.busId));
  }
  unsigned m = 0;
  if (f.minor_number && f.minor_number(d, &m) == 0) {
    g["minor"] = m;
  }
  int major_cc = 0;
  int minor_cc = 0;
  if (f.cc && f.cc(d, &major_cc, &minor_cc) == 0) {
    g["cc"] = std::to_string(major_cc) + "." + std::to_string(minor_cc);
  }
  nvmlMemory_t mi{};
  if (f.mem && f.mem(d, &mi) == 0) {
    g["memory_mib"] = mi.total / (1024 * 1024);
  }
  nvml_mig(f, d, g);
  int pm = 0;
  if (f.persist && f.persist(d, &pm) == 0) {
    g["persistence"] = pm;
  }
  unsigned long long e = 0;
  if (f.ecc && f.ecc(d, 1 /* uncorrected */, 1 /* aggregate */, &e) == 0) {
    g["ecc_uncorrected"] = e;
  }
  unsigned corr = 0;
  unsigned unc = 0;
  unsigned pending = 0;
  unsigned failure = 0;
  if (f.remap && f.remap(d, &corr, &unc, &pending, &failure) == 0) {
    g["remapped_pending"] = pending;
    g["remapped_failure"] = failure;
  }
  nvmlGpuFabricInfo_t fi{};
  if (f.fabric && f.fabric(d, &fi) == 0) {
    g["fabric_state"] = fi.state;
    g["fabric_status"] = fi.status;
  }
  return g;
}

json nvml_in_child(const std::string& path) {
  json r;
  void* lib = open_library(path, r);
  if (lib == nullptr) {
    return r;
  }
  auto init = sym<nvmlReturn_t (*)()>(lib, {"nvmlInit_v2", "nvmlInit"});
  auto err = sym<const char* (*)(nvmlReturn_t)>(lib, {"nvmlErrorString"});
  if (init == nullptr) {
    r["error"] = "nvmlInit not found (library too old or not NVML)";
    return r;
  }
  nvmlReturn_t rc = init();
  r["init"] = rc;
  r["init_error"] = err != nullptr && err(rc) != nullptr ? err(rc) : "";
  if (rc != 0) {
    return r;
  }
  char buf[96] = {};
  if (auto f = sym<nvmlReturn_t (*)(char*, unsigned)>(lib, {"nvmlSystemGetDriverVersion"}); f && f(buf, 80) == 0) {
    r["driver"] = std::string(buf);
  }
  int cuda = 0;
  if (auto f =
          sym<nvmlReturn_t (*)(int*)>(lib, {"nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion"});
      f && f(&cuda) == 0) {
    r["cuda_driver"] = cuda;
  }
  unsigned count = 0;
  auto get_count = sym<nvmlReturn_t (*)(unsigned*)>(lib, {"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"});
  auto get_handle = sym<nvmlReturn_t (*)(unsigned, nvmlDevice_t*)>(
      lib, {"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"});
  r["gpus"] = json::array();
  if (get_count == nullptr || get_handle == nullptr || get_count(&count) != 0) {
    return r;
  }
  NvmlDeviceFns fns = nvml_device_fns(lib);
  for (unsigned i = 0; i < count && i < 64; ++i) {
    nvmlDevice_t d = nullptr;
    if (get_handle(i, &d) != 0) {
      continue;
    }
    json g = nvml_device(fns, i, d);
    r["gpus"].push_back(g);
  }
  if (auto shutdown = sym<nvmlReturn_t (*)()>(lib, {"nvmlShutdown"})) {
    shutdown();
  }
  return r;
}

json cuda_in_child(const std::string& path) {
  json r;
  void* lib = open_library(path, r);
  if (lib == nullptr) {
    return r;
  }
  auto version = sym<int (*)(int*)>(lib, {"cuDriverGetVersion"});
  auto init = sym<int (*)(unsigned)>(lib, {"cuInit"});
  auto err_name = sym<int (*)(int, const char**)>(lib, {"cuGetErrorName"});
  int v = 0;
  if (version != nullptr && version(&v) == 0) {
    r["driver_version"] = v;
  }
  if (init == nullptr) {
    r["error"] = "cuInit not found";
    return r;
  }
  // Written before cuInit so a hang still tells how far the probe got.
  int rc = init(0);
  r["init"] = rc;
  const char* n = nullptr;
  if (err_name != nullptr && err_name(rc, &n) == 0 && n != nullptr) {
    r["init_name"] = n;
  }
  if (rc != 0) {
    return r;
  }
  auto count = sym<int (*)(int*)>(lib, {"cuDeviceGetCount"});
  auto get = sym<int (*)(int*, int)>(lib, {"cuDeviceGet"});
  auto name = sym<int (*)(char*, int, int)>(lib, {"cuDeviceGetName"});
  auto attr = sym<int (*)(int*, int, int)>(lib, {"cuDeviceGetAttribute"});
  int c = 0;
  if (count != nullptr && count(&c) == 0) {
    r["count"] = c;
  }
  r["devices"] = json::array();
  for (int i = 0; i < c && i < 64 && get != nullptr; ++i) {
    int dev = 0;
    if (get(&dev, i) != 0) {
      continue;
    }
    json d;
    char s[128] = {};
    if (name != nullptr && name(s, sizeof s, dev) == 0) {
      d["name"] = std::string(s);
    }
    int ma = 0;
    int mi = 0;
    if (attr != nullptr && attr(&ma, 75, dev) == 0 && attr(&mi, 76, dev) == 0) {
      d["cc"] = std::to_string(ma) + "." + std::to_string(mi);
    }
    r["devices"].push_back(d);
  }
  return r;
}

json in_child(json (*fn)(const std::string&), const std::string& path, int timeout_ms) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    return {{"loaded", false}, {"error", std::string("pipe: ") + std::strerror(errno)}};
  }
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return {{"loaded", false}, {"error", std::string("fork: ") + std::strerror(errno)}};
  }
  if (pid == 0) {
    ::close(fds[0]);
    std::string out;
    try {
      out = fn(path).dump();
    } catch (...) {
      out = R"({"loaded":false,"error":"probe failed"})";
    }
    std::size_t off = 0;
    while (off < out.size()) {
      ssize_t n = ::write(fds[1], out.data() + off, out.size() - off);
      if (n <= 0) {
        break;
      }
      off += static_cast<std::size_t>(n);
    }
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string data;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  bool timed_out = false;
  for (;;) {
    auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    int pr = ::poll(&p, 1, static_cast<int>(left));
    if (pr < 0 && errno == EINTR) {
      continue;
    }
    if (pr <= 0) {
      timed_out = pr == 0;
      break;
    }
    char buf[4096];
    ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n <= 0) {
      break;
    }
    data.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  if (timed_out) {
    ::kill(pid, SIGKILL);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    return {{"loaded", true}, {"timeout", true}, {"timeout_ms", timeout_ms}};
  }
  if (WIFSIGNALED(status)) {
    return {{"loaded", true}, {"crashed", true}, {"signal", WTERMSIG(status)}};
  }
  try {
    return json::parse(data);
  } catch (const std::exception&) {
    return {{"loaded", false}, {"error", "the probe returned no result"}};
  }
}

} // namespace

json probe_nvml(const std::string& library_path, int timeout_ms) {
  return in_child(nvml_in_child, library_path, timeout_ms);
}
json probe_cuda(const std::string& library_path, int timeout_ms) {
  return in_child(cuda_in_child, library_path, timeout_ms);
}

} // namespace doctor
