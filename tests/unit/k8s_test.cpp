#include <doctest/doctest.h>

#include "compat_matrix/matrix.hpp"
#include "templates/k8s.hpp"
#include "tests/unit/error_text.hpp"
#include "util/encoding.hpp"
#include "util/error.hpp"

#include <functional>
#include <string>

namespace unit_k8s_test {

using templates::k8s::Object;

namespace {

// The expressions of each term as "key op value" strings.
std::vector<std::vector<std::string>> terms_of(const Object& affinity) {
  std::vector<std::vector<std::string>> out;
  for (const auto& t :
       affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]) {
    std::vector<std::string> e;
    for (const auto& x : t["matchExpressions"]) {
      e.push_back(x["key"].get<std::string>() + " " + x["operator"].get<std::string>() + " " +
                  x["values"][0].get<std::string>());
    }
    out.push_back(e);
  }
  return out;
}

templates::k8s::GpuNeeds needs(const std::string& driver, std::vector<int> archs, std::uint64_t mib = 0) {
  templates::k8s::GpuNeeds n;
  n.driver = driver;
  n.archs = std::move(archs);
  n.archs_from = "test";
  n.memory_mib = mib;
  return n;
}

const templates::k8s::GfdKeys keys{};

} // namespace

TEST_CASE("parse_byte_quantity: Kubernetes memory quantities in bytes, rounded up") {
  CHECK(util::parse_byte_quantity("40Gi") == 40ULL << 30);
  CHECK(util::parse_byte_quantity("46068Mi") == 46068ULL << 20);
  CHECK(util::parse_byte_quantity("40G") == 40000000000ULL);
  CHECK(util::parse_byte_quantity("1.5Gi") == 3ULL << 29);
  CHECK(util::parse_byte_quantity("0.1") == 1U); // a tenth of a byte is a byte
  CHECK(util::parse_byte_quantity("1024") == 1024U);
  for (const char* bad :
       {"", "Gi", "1e3", "-1Gi", "40GB", "4.Gi", ".5Gi", "1.2.3", "99999999999999Pi", "1.0000000001"}) {
    CAPTURE(bad);
    CHECK_FALSE(util::parse_byte_quantity(bad).has_value());
  }
}

TEST_CASE("to_yaml: strings quoted, unsafe keys quoted, lists of mappings, empty containers") {
  Object o{{"name", "a: \"b\"\nc"},     {"true", 1},
           {"nvidia.com/gpu", "2"},     {"list", Object::array({Object{{"k", "v"}, {"n", 2}}, "s", Object::array()})},
           {"empty", Object::object()}, {"flag", false}};
  CHECK(templates::k8s::to_yaml(o) == "name: \"a: \\\"b\\\"\\nc\"\n"
                                      "\"true\": 1\n"
                                      "nvidia.com/gpu: \"2\"\n"
                                      "list:\n"
                                      "  - k: \"v\"\n"
                                      "    \"n\": 2\n" // YAML 1.1 reads a plain n as false
                                      "  - \"s\"\n"
                                      "  - []\n"
                                      "empty: {}\n"
                                      "flag: false\n");
  CHECK(templates::k8s::to_yaml_stream({Object{{"a", "b"}}}, "one\n\ntwo") == "# one\n#\n# two\n---\na: \"b\"\n");
}

TEST_CASE("node_affinity: driver >= M.m.r as three Gt/Lt terms, times each compute capability") {
  templates::k8s::Placement p;
  p.capabilities = {{8, 0, false}, {9, 0, false}};
  auto t = terms_of(templates::k8s::node_affinity(needs("535.104.05", {80, 90}, 40960), p, keys));
  REQUIRE(t.size() == 6);
  CHECK(t[0] == std::vector<std::string>{"nvidia.com/cuda.driver.major Gt 535", "nvidia.com/gpu.compute.major Gt 7",
                                         "nvidia.com/gpu.compute.major Lt 9", "nvidia.com/gpu.memory Gt 40959"});
  CHECK(t[1] == std::vector<std::string>{"nvidia.com/cuda.driver.major Gt 534", "nvidia.com/cuda.driver.major Lt 536",
                                         "nvidia.com/cuda.driver.minor Gt 104", "nvidia.com/gpu.compute.major Gt 7",
                                         "nvidia.com/gpu.compute.major Lt 9", "nvidia.com/gpu.memory Gt 40959"});
  CHECK(t[2] == std::vector<std::string>{"nvidia.com/cuda.driver.major Gt 534", "nvidia.com/cuda.driver.major Lt 536",
                                         "nvidia.com/cuda.driver.minor Gt 103", "nvidia.com/cuda.driver.minor Lt 105",
                                         "nvidia.com/cuda.driver.rev Gt 4", "nvidia.com/gpu.compute.major Gt 7",
                                         "nvidia.com/gpu.compute.major Lt 9", "nvidia.com/gpu.memory Gt 40959"});
  CHECK(t[3][0] == "nvidia.com/cuda.driver.major Gt 535");
  CHECK(t[3][1] == "nvidia.com/gpu.compute.major Gt 8");
}

TEST_CASE("node_affinity: a two-part or rev-0 floor needs no rev term; Gt -1 is never written") {
  templates::k8s::Placement p;
  p.capabilities = {{8, 6, false}};
  for (const char* d : {"550.54", "550.54.00"}) {
    CAPTURE(d);
    auto t = terms_of(templates::k8s::node_affinity(needs(d, {86, 89}), p, keys));
    REQUIRE(t.size() == 2);
    CHECK(t[1] == std::vector<std::string>{"nvidia.com/cuda.driver.major Gt 549", "nvidia.com/cuda.driver.major Lt 551",
                                           "nvidia.com/cuda.driver.minor Gt 53", "nvidia.com/gpu.compute.major Gt 7",
                                           "nvidia.com/gpu.compute.major Lt 9", "nvidia.com/gpu.compute.minor Gt 5"});
  }
  p.capabilities = {{7, 0, true}};
  auto t = terms_of(templates::k8s::node_affinity(needs("470.0.0", {70}), p, keys));
  REQUIRE(t.size() == 2);
  CHECK(t[1] == std::vector<std::string>{"nvidia.com/cuda.driver.major Gt 469", "nvidia.com/cuda.driver.major Lt 471",
                                         "nvidia.com/gpu.compute.major Gt 6", "nvidia.com/gpu.compute.major Lt 8",
                                         "nvidia.com/gpu.compute.minor Lt 1"});
}

TEST_CASE("place: GPU choices are checked against the image's architectures") {
  compat::Matrix m = compat::Matrix::builtin();
  auto warn = [](const std::string&) {};
  auto n = needs("535.104.05", {80, 90});
  templates::k8s::GpuChoice c;
  c.gpu_types = {"T4"};
  CHECK(error_of([&] { templates::k8s::place(n, c, keys, m, warn); }).find("no kernels for T4") != std::string::npos);
  c.gpu_types = {"A100"};
  auto p = templates::k8s::place(n, c, keys, m, warn);
  REQUIRE(p.capabilities.size() == 1);
  CHECK((p.capabilities[0].major == 8 && p.capabilities[0].min_minor == 0 && p.capabilities[0].exact));
  c = {};
  c.products = {"Tesla-V100-SXM2-16GB"};
  CHECK(error_of([&] { templates::k8s::place(n, c, keys, m, warn); }).find("no kernels for") != std::string::npos);
  c.products = {"Mystery-GPU"};
  std::string warned;
  p = templates::k8s::place(n, c, keys, m, [&](const std::string& w) { warned = w; });
  CHECK(warned.find("does not know this GPU") != std::string::npos);
  CHECK(p.products == std::vector<std::string>{"Mystery-GPU"});
  c = {};
  c.node_labels = {{"nvidia.com/gpu.compute.major", "8"}};
  CHECK(error_of([&] { templates::k8s::place(n, c, keys, m, warn); }).find("--gpu-type") != std::string::npos);
  // The capabilities without a choice: the lowest minor per major.
  p = templates::k8s::place(needs("1.0", {75, 86, 80, 90}), {}, keys, m, warn);
  REQUIRE(p.capabilities.size() == 3);
  CHECK((p.capabilities[0].major == 7 && p.capabilities[0].min_minor == 5));
  CHECK((p.capabilities[1].major == 8 && p.capabilities[1].min_minor == 0));
}

TEST_CASE("gpu_needs: the image's labels, else the matrix; a clear error without either") {
  compat::Matrix m = compat::Matrix::builtin();
  templates::k8s::ImageFacts f;
  f.source = "oci:x";
  f.cuda = "12.6";
  f.archs = {"sm_80"};
  auto n = templates::k8s::gpu_needs(f, m, false);
  CHECK(n.driver == m.find_cuda("12.6")->driver_full);
  CHECK(templates::k8s::gpu_needs(f, m, true).driver == m.find_cuda("12.6")->driver_minor);
  f.driver_min = "560.28.03";
  CHECK(templates::k8s::gpu_needs(f, m, false).driver == "560.28.03");
  f.archs.clear();
  CHECK(error_of([&] { templates::k8s::gpu_needs(f, m, false); }).find("no-gpu-affinity") != std::string::npos);
  f = {};
  f.source = "oci:y";
  f.archs = {"sm_80"};
  CHECK(error_of([&] { templates::k8s::gpu_needs(f, m, false); }).find("states no minimum driver") !=
        std::string::npos);
}

TEST_CASE("GfdKeys, tolerations and selectors: usage errors with the fix") {
  templates::k8s::GfdKeys k;
  k.set("driver.rev=nvidia.com/cuda.driver-version.revision");
  CHECK(k.driver_rev == "nvidia.com/cuda.driver-version.revision");
  CHECK(error_of([&] { k.set("driver.revision=x.io/r"); }).find("did you mean 'driver.rev'") != std::string::npos);
  CHECK(error_of([&] { k.set("memory=not a key"); }).find("not a Kubernetes label key") != std::string::npos);
  auto t = templates::k8s::parse_toleration("pool=gpu:NoExecute");
  CHECK((t.key == "pool" && t.op == "Equal" && t.value == "gpu" && t.effect == "NoExecute"));
  t = templates::k8s::parse_toleration("nvidia.com/gpu");
  CHECK((t.op == "Exists" && t.effect.empty()));
  CHECK(error_of([] { templates::k8s::parse_toleration("a:NoSchedul"); }).find("did you mean 'NoSchedule'") !=
        std::string::npos);
  CHECK(error_of([] { templates::k8s::parse_selector("a=b\nc", "--node-selector"); }).find("label value") !=
        std::string::npos);
  CHECK(templates::k8s::parse_selector("nvidia.com/gpu.present=true", "--node-selector").second == "true");
}

} // namespace unit_k8s_test
