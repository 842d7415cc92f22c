#include <doctest/doctest.h>

#include "compat_matrix/matrix.hpp"
#include "doctor/checks.hpp"
#include "doctor/image.hpp"
#include "doctor/parse.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"

#include <filesystem>

namespace unit_doctor_test {

namespace fs = std::filesystem;

TEST_CASE("doctor parse: the three forms of /proc/driver/nvidia/version and two-part versions") {
  CHECK(doctor::parse_driver_version(
            "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.129.03  Thu Oct 19 18:56:32 UTC 2023\n"
            "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n") == "535.129.03");
  CHECK(
      doctor::parse_driver_version("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.65.06  Release Build  "
                                   "(dvs-builder@U16-I3-B03-4-3)  Tue Jul 15 12:12:00 UTC 2025\n") == "580.65.06");
  CHECK(doctor::parse_driver_version(
            "NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  550.120  Release Build\n") == "550.120");
  CHECK_FALSE(doctor::parse_driver_version("").has_value());
  CHECK_FALSE(doctor::parse_driver_version("garbage 12.0.0.1 x\n").has_value());
  // Only the first line counts (the GCC line carries versions too).
  CHECK_FALSE(doctor::parse_driver_version("NVRM version: unknown\nGCC version: 12.2.0\n").has_value());
}

TEST_CASE("doctor parse: /proc/devices, /proc/modules and key-value files") {
  auto d =
      doctor::parse_proc_devices("Character devices:\n  1 mem\n195 nvidia-frontend\n508 nvidia-uvm\n\nBlock devices:\n"
                                 "  8 sd\n259 blkext\n");
  CHECK(d.at("nvidia-frontend") == 195);
  CHECK(d.at("nvidia-uvm") == 508);
  CHECK(d.count("sd") == 0); // block devices are not character devices
  auto m = doctor::parse_proc_modules(
      "nvidia_uvm 1531904 0 - Live 0x0000000000000000 (PO)\nnvidia 56823808 2 nvidia_uvm, Live 0x0\n");
  CHECK(m.count("nvidia") == 1);
  CHECK(m.count("nvidia_uvm") == 1);
  auto kv = doctor::parse_key_values("Model: \t NVIDIA H100 80GB HBM3\nDevice Minor: \t 3\nno colon here\n");
  CHECK(kv.at("Model") == "NVIDIA H100 80GB HBM3");
  CHECK(kv.at("Device Minor") == "3");
}

TEST_CASE("doctor parse: ld.so.cache of this machine, truncated and garbage caches") {
  std::string cache;
  if (fs::exists("/etc/ld.so.cache")) {
    cache = util::read_file("/etc/ld.so.cache");
    auto entries = doctor::parse_ld_so_cache(cache);
    REQUIRE_FALSE(entries.empty());
    bool libc = false;
    for (const auto& e : entries) {
      libc = libc || (e.name == "libc.so.6" && e.path.find("libc.so.6") != std::string::npos);
    }
    CHECK(libc);
    // Truncations never crash and never return entries pointing outside the data.
    for (std::size_t cut : {std::size_t{0}, std::size_t{20}, std::size_t{47}, std::size_t{48}, cache.size() / 2}) {
      (void)doctor::parse_ld_so_cache(std::string_view(cache).substr(0, cut));
    }
  }
  CHECK(doctor::parse_ld_so_cache("not a cache at all").empty());
  CHECK(doctor::parse_ld_so_cache(std::string("ld.so-1.7.0\0\xff\xff\xff\xff", 16)).empty());
}

TEST_CASE("doctor parse: requirements and library versions") {
  CHECK(doctor::parse_require_cuda("cuda>=12.6 brand=tesla,driver>=470,driver<471") == "12.6");
  CHECK_FALSE(doctor::parse_require_cuda("brand=tesla").has_value());
  auto r = doctor::parse_requires("cuda=12.6, sm=90,sm=80,driver=560.28.03,broken,=x");
  CHECK(r.at("cuda") == std::vector<std::string>{"12.6"});
  CHECK(r.at("sm") == std::vector<std::string>{"90", "80"});
  CHECK(r.count("broken") == 0);
  CHECK(doctor::version_from_soname("libcuda.so.535.129.03", "libcuda") == "535.129.03");
  CHECK(doctor::version_from_soname("libnvidia-ml.so.550.120", "libnvidia-ml") == "550.120");
  CHECK_FALSE(doctor::version_from_soname("libcuda.so.1", "libcuda").has_value());
  CHECK_FALSE(doctor::version_from_soname("libcudart.so.12.6", "libcuda").has_value());
}

TEST_CASE("doctor: an empty root is a clean report, never a crash") {
  util::TempDir root(fs::temp_directory_path(), "pi-doctor-test-");
  doctor::Report r = doctor::check_host(doctor::Host(root.path()), doctor::Options{});
  CHECK(r.count(doctor::Status::fail) == 1); // driver.module: no driver
  CHECK(r.checks.front().id == "driver.module");
  auto j = doctor::to_json(r);
  CHECK(j["summary"]["fail"] == 1);
  CHECK(j["checks"].size() == r.checks.size());
}

namespace {

// A host report as check_host leaves it: driver and NVML GPUs.
doctor::Report host_with(const std::string& driver, const std::string& gpu, const std::string& cc) {
  doctor::Report r;
  r.facts["driver"] = driver;
  r.facts["nvml"] = {{"gpus", nlohmann::json::array({{{"name", gpu}, {"cc", cc}}})}};
  return r;
}

const doctor::CheckResult& check_of(const doctor::Report& r, const std::string& id) {
  for (const auto& c : r.checks) {
    if (c.id == id) {
      return c;
    }
  }
  FAIL("no check " << id);
  return r.checks.front();
}

util::ErrorKind kind_of(const std::string& requires_text) {
  try {
    doctor::needs_from_requires(requires_text);
  } catch (const util::Error& e) {
    return e.kind();
  }
  return util::ErrorKind::internal;
}

} // namespace

TEST_CASE("doctor --requires: every key and value is validated") {
  auto n = doctor::needs_from_requires("cuda=12.6, sm=90,sm=sm_80,sm=8.6,paddle=3.0.0b1");
  CHECK(doctor::needs_from_requires("paddle=2.6.1.post117").paddle == "2.6.1.post117");
  CHECK(n.cuda == "12.6");
  CHECK(n.archs == std::vector<std::string>{"sm_90", "sm_80", "sm_86"});
  CHECK(n.paddle == "3.0.0b1");
  for (const char* bad :
       {"sm=abc", "sm=sm_abc", "sm=9", "sm=", "cuda=12.6,bogus", "cuda=banana", "driver=5x", "paddle=three",
        "cuda=12.6,cuda=12.4", "cudaa=12", "=12", "cuda=99999999999999999999", "sm=90,,cuda=12.6"}) {
    INFO(bad);
    CHECK(kind_of(bad) == util::ErrorKind::usage);
  }
  try {
    doctor::needs_from_requires("sm=abc");
  } catch (const util::Error& e) {
    CHECK(std::string(e.what()).find("sm_90, 90 or 9.0") != std::string::npos);
  }
}

TEST_CASE("doctor image checks: facts derived from the matrix never PASS and say where they came from") {
  auto m = compat::Matrix::builtin();
  auto run = [&](doctor::Report r, const std::string& req) {
    doctor::check_image(r, doctor::needs_from_requires(req), m);
    return r;
  };
  SUBCASE("stated architectures: PASS, nothing derived") {
    auto r = run(host_with("550.54.15", "NVIDIA H100 80GB HBM3", "9.0"), "cuda=12.4,sm=90");
    CHECK(check_of(r, "image.gpu-arch").status == doctor::Status::pass);
    CHECK(check_of(r, "image.gpu-arch").derived_from.empty());
    CHECK_FALSE(r.facts["image"].contains("derived"));
  }
  SUBCASE("CUDA alone: FAIL when the GPU is beyond every target of that CUDA") {
    auto r = run(host_with("550.54.15", "NVIDIA H100 80GB HBM3", "9.0"), "cuda=11.7");
    const auto& c = check_of(r, "image.gpu-arch");
    CHECK(c.status == doctor::Status::fail);
    CHECK(c.derived_from.find("CUDA 11.7 can target") != std::string::npos);
    CHECK(r.facts["image"]["derived"]["archs"]["from"] == c.derived_from);
    CHECK(doctor::to_json(r)["checks"].back().dump().find("derived_from") == std::string::npos); // layer skip
  }
  SUBCASE("CUDA alone: WARN (not PASS) when the CUDA can target the GPU") {
    auto r = run(host_with("550.54.15", "NVIDIA H100 80GB HBM3", "9.0"), "cuda=12.6");
    CHECK(check_of(r, "image.gpu-arch").status == doctor::Status::warn);
    CHECK_FALSE(check_of(r, "image.gpu-arch").derived_from.empty());
  }
  SUBCASE("Paddle + CUDA: the published image's architecture row") {
    auto r = run(host_with("550.54.15", "NVIDIA H100 80GB HBM3", "9.0"), "paddle=3.0.0,cuda=11.8");
    const auto& c = check_of(r, "image.gpu-arch");
    CHECK(c.status == doctor::Status::fail); // the cu118 build ships up to sm_89
    CHECK(c.derived_from.find("3.0.0-gpu-cuda11.8") != std::string::npos);
    auto ok = run(host_with("550.54.15", "NVIDIA H100 80GB HBM3", "9.0"), "paddle=3.0.0,cuda=12.6");
    CHECK(check_of(ok, "image.gpu-arch").status == doctor::Status::warn);
  }
  SUBCASE("Paddle alone: FAIL below the lowest candidate driver, else WARN") {
    auto r = run(host_with("470.82.01", "A100-PCIE-40GB", "8.0"), "paddle=3.3.0");
    const auto& c = check_of(r, "image.cuda-driver");
    CHECK(c.status == doctor::Status::fail); // 3.3.0: CUDA 12.6+ only, 525.60.13 at least
    CHECK(c.evidence.find("525.60.13") != std::string::npos);
    CHECK(c.derived_from.find("Paddle 3.3.0 was published with CUDA") != std::string::npos);
    CHECK(r.facts["image"]["derived"].contains("cuda"));
    auto w = run(host_with("580.65.06", "NVIDIA H100 80GB HBM3", "9.0"), "paddle=3.0.0");
    CHECK(check_of(w, "image.cuda-driver").status == doctor::Status::warn); // never PASS from a derived CUDA
    CHECK(check_of(w, "image.gpu-arch").status == doctor::Status::warn);
    auto t = run(host_with("580.65.06", "Tesla K80", "3.7"), "paddle=3.0.0");
    CHECK(check_of(t, "image.gpu-arch").status == doctor::Status::fail); // no 3.0.0 build serves sm_37
    auto post = run(host_with("470.82.01", "A100-PCIE-40GB", "8.0"), "paddle=3.3.0.post126");
    CHECK(check_of(post, "image.cuda-driver").status == doctor::Status::fail); // pip's local build of 3.3.0
  }
}

TEST_CASE("doctor image checks: the host's probe results are a typed value") {
  auto m = compat::Matrix::builtin();
  util::TempDir root(fs::temp_directory_path(), "pi-doctor-test-");
  doctor::Report empty = doctor::check_host(doctor::Host(root.path()), doctor::Options{});
  REQUIRE(empty.probes.has_value());
  CHECK_FALSE(empty.probes->driver.has_value());
  CHECK(empty.probes->cuda_driver == 0);
  CHECK(empty.probes->gpus.empty());

  nlohmann::json facts = {
      {"driver", "550.54.15"},
      {"nvml",
       {{"cuda_driver", 12040},
        {"gpus", {{{"name", "NVIDIA H100 80GB HBM3"}, {"cc", "9.0"}}, {{"name", "no capability"}}}}}},
      {"cuda", {{"driver_version", 12020}}}};
  doctor::HostProbes p = doctor::host_probes_from_facts(facts);
  CHECK(p.driver == std::optional<std::string>("550.54.15"));
  CHECK(p.cuda_driver == 12040); // NVML first, the CUDA probe only when NVML has none
  REQUIRE(p.gpus.size() == 1);
  CHECK(p.gpus[0].name == "NVIDIA H100 80GB HBM3");
  CHECK(p.gpus[0].cc == "9.0");
  facts["nvml"].erase("cuda_driver");
  CHECK(doctor::host_probes_from_facts(facts).cuda_driver == 12020);
  CHECK_FALSE(doctor::host_probes_from_facts(nlohmann::json::object()).driver.has_value());

  // The typed probes decide, not the report's facts.
  doctor::Report r;
  doctor::check_image(r, p, doctor::needs_from_requires("cuda=12.4,sm=90,require_cuda=12.4"), m);
  CHECK(check_of(r, "image.gpu-arch").status == doctor::Status::pass);
  CHECK(check_of(r, "image.cuda-driver").status == doctor::Status::pass);
  CHECK(check_of(r, "image.require-cuda").status == doctor::Status::pass);
  doctor::Report with_probes;
  with_probes.probes = doctor::HostProbes{std::string("470.82.01"), 11040, {{"Tesla T4", "7.5"}}};
  doctor::check_image(with_probes, doctor::needs_from_requires("cuda=12.4,sm=90"), m);
  CHECK(check_of(with_probes, "image.gpu-arch").status == doctor::Status::fail);
  CHECK(check_of(with_probes, "image.cuda-driver").status == doctor::Status::fail);
}

TEST_CASE("doctor image checks: GPU memory against io.paddle-image.gpu.memory-mib") {
  auto m = compat::Matrix::builtin();
  auto n = doctor::needs_from_requires("gpu_memory=143771Mi");
  CHECK(n.gpu_memory_mib == 143771);
  CHECK(doctor::needs_from_requires("gpu_memory=1.5Gi").gpu_memory_mib == 1536);
  CHECK(doctor::needs_from_requires("gpu_memory=80G").gpu_memory_mib == 76294); // 80e9 bytes, rounded up
  for (const char* bad : {"gpu_memory=lots", "gpu_memory=0", "gpu_memory=-1Gi", "gpu_memory=1Gi,gpu_memory=2Gi"}) {
    INFO(bad);
    CHECK(kind_of(bad) == util::ErrorKind::usage);
  }
  auto verdict = [&](doctor::HostProbes host, const std::string& req) {
    doctor::Report r;
    doctor::check_image(r, host, doctor::needs_from_requires(req), m);
    return check_of(r, "image.gpu-memory");
  };
  // An H200 as NVML reports it on a real machine: 143771 MiB.
  doctor::HostProbes h200{std::string("580.159.03"), 13000, {{"NVIDIA H200", "9.0", 143771}}};
  CHECK(verdict(h200, "gpu_memory=143771Mi").status == doctor::Status::pass);
  auto over = verdict(h200, "gpu_memory=143772Mi");
  CHECK(over.status == doctor::Status::fail);
  CHECK(over.evidence.find("NVIDIA H200 (143771 MiB)") != std::string::npos);
  CHECK_FALSE(over.fix.empty());
  CHECK(verdict(h200, "cuda=12.0").status == doctor::Status::skip); // no need stated
  // One small GPU among large ones fails the node; unknown memory skips.
  doctor::HostProbes mixed{
      std::string("550.54.15"), 12040, {{"NVIDIA H100 80GB HBM3", "9.0", 81559}, {"NVIDIA L4", "8.9", 23034}}};
  CHECK(verdict(mixed, "gpu_memory=40Gi").status == doctor::Status::fail);
  doctor::HostProbes unknown{std::string("550.54.15"), 12040, {{"NVIDIA H100 80GB HBM3", "9.0"}}};
  CHECK(verdict(unknown, "gpu_memory=40Gi").status == doctor::Status::skip);
  // The probes read memory_mib from the report's facts (doctor aggregate, JSON reports).
  nlohmann::json facts = {{"driver", "580.159.03"},
                          {"nvml", {{"gpus", {{{"name", "NVIDIA H200"}, {"cc", "9.0"}, {"memory_mib", 143771}}}}}}};
  CHECK(doctor::host_probes_from_facts(facts).gpus.at(0).memory_mib == 143771);
}

} // namespace unit_doctor_test
