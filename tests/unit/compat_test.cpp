#include <doctest/doctest.h>

#include "tests/unit/support.hpp"

#include "compat_matrix/facts.hpp"
#include "compat_matrix/matrix.hpp"
#include "compat_matrix/resolver.hpp"
#include "compat_matrix/rules.hpp"
#include "compat_matrix/version.hpp"
#include "util/error.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <set>
#include <string>
#include <vector>

// Constraints are written with designated initializers; members left out keep their
// defaults on purpose, which GCC 12 reports under -Wextra.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace unit_compat_test {

using compat::Constraints;
using compat::DriverLevel;
using compat::Resolution;
using compat::Version;
using compat::VersionRange;
using test_support::contains;
using test_support::error_of;

namespace {

const compat::Matrix& builtin() {
  static const compat::Matrix m = compat::Matrix::builtin();
  return m;
}

Resolution run(const Constraints& c) {
  return compat::resolve(builtin(), c);
}

const compat::Candidate* find_tag(const Resolution& r, const std::string& tag) {
  for (const auto& c : r.candidates) {
    if (c.image->tag == tag) {
      return &c;
    }
  }
  return nullptr;
}

bool any_of_strings(const std::vector<std::string>& list, const std::string& needle) {
  return std::any_of(list.begin(), list.end(), [&](const std::string& s) { return contains(s, needle); });
}

const compat::Violation* find_violation(const Resolution& r, const std::string& constraint_part) {
  for (const auto& v : r.violations) {
    if (contains(v.constraint, constraint_part)) {
      return &v;
    }
  }
  return nullptr;
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.rfind(prefix, 0) == 0;
}

// "user.yaml:" followed by a line number.
bool names_file_line(const std::string& msg, const std::string& file) {
  auto pos = msg.find(file + ":");
  if (pos == std::string::npos) {
    return false;
  }
  pos += file.size() + 1;
  return pos < msg.size() && std::isdigit(static_cast<unsigned char>(msg[pos])) != 0;
}

std::string full_text(const util::Error& e) {
  return std::string(e.what()) + " | " + e.hint();
}

} // namespace

// ---------------------------------------------------------------- Version

TEST_CASE("compat version: parse and compare") {
  struct Case {
    const char* lower;
    const char* higher;
  };
  const std::array<Case, 9> cases{{
      {"550.54.14", "550.120"},
      {"3.0.0b0", "3.0.0b2"},
      {"3.0.0b2", "3.0.0"},
      {"3.0.0b0", "3.0.0"},
      {"3.0.0a1", "3.0.0b0"},
      {"3.0.0b1", "3.0.0rc0"},
      {"12.6", "12.8"},
      {"525.60.12", "525.60.13"},
      {"11.8", "12.0"},
  }};
  for (const auto& tc : cases) {
    CAPTURE(tc.lower);
    CAPTURE(tc.higher);
    Version lo = Version::parse(tc.lower);
    Version hi = Version::parse(tc.higher);
    CHECK(lo < hi);
    CHECK(hi > lo);
    CHECK_FALSE(lo == hi);
  }
  CHECK(Version::parse("12") == Version::parse("12.0"));
  CHECK(Version::parse("3.0.0b1").pre_rank == 1);
  CHECK(Version::parse("3.0.0b1").pre_number == 1);
  CHECK(Version::parse("550.120").parts == std::vector<long>{550, 120});
  CHECK(Version::parse("12.6").major() == 12);
  CHECK(Version::valid("535.104.05"));
  CHECK_FALSE(Version::valid("abc"));
  CHECK_FALSE(Version::valid("12."));
  CHECK_FALSE(Version::valid(""));
}

TEST_CASE("compat version: prefix on components") {
  CHECK(Version::parse("12.6").has_prefix(Version::parse("12")));
  CHECK(Version::parse("12.6.2").has_prefix(Version::parse("12.6")));
  CHECK(Version::parse("12.6").has_prefix(Version::parse("12.6")));
  CHECK_FALSE(Version::parse("12").has_prefix(Version::parse("12.6")));
  CHECK_FALSE(Version::parse("12.6").has_prefix(Version::parse("12.8")));
  CHECK_FALSE(Version::parse("1.26").has_prefix(Version::parse("12")));
}

TEST_CASE("compat version: range contains") {
  struct Case {
    const char* range;
    const char* version;
    bool inside;
  };
  const std::array<Case, 12> cases{{
      {">=2.6,<3.1", "3.0.0", true},
      {">=2.6,<3.1", "3.1.0", false},
      {">=2.6,<3.1", "2.6.0", true},
      {">=2.6,<3.1", "2.5.2", false},
      {">=2.6,<3.1", "3.0.0b2", true},
      {"", "1.0", true},
      {"3.0.0", "3.0.0", true},
      {"3.0.0", "3.0.0b2", false},
      {"!=3.0.0", "3.0.0", false},
      {"<=3.0.0b1", "3.0.0b2", false},
      {">=3.0.0b2", "3.0.0b2", true},
      {"> 2.6 , <= 3.0", "3.0", true},
  }};
  for (const auto& tc : cases) {
    CAPTURE(tc.range);
    CAPTURE(tc.version);
    CHECK(VersionRange::parse(tc.range).contains(Version::parse(tc.version)) == tc.inside);
  }
}

TEST_CASE("compat version: malformed input names the field") {
  auto e = error_of([] { (void)Version::parse("abc", "--paddle"); });
  CHECK(e.kind() == util::ErrorKind::input);
  CHECK(contains(e.what(), "--paddle"));
  CHECK(contains(e.what(), "'abc'"));

  auto r = error_of([] { (void)VersionRange::parse(">=2.6,~3", "resolve.paddle"); });
  CHECK(r.kind() == util::ErrorKind::input);
  CHECK(contains(r.what(), "resolve.paddle"));

  auto s = error_of([] { (void)compat::VersionSpan::parse("12.2-12.0", "cuda"); });
  CHECK(s.kind() == util::ErrorKind::input);
  CHECK(contains(s.what(), "backwards"));
  auto span = compat::VersionSpan::parse("11.0-11.8", "cuda");
  CHECK(span.contains(Version::parse("11.4")));
  CHECK_FALSE(span.contains(Version::parse("12.0")));
}

// ---------------------------------------------------------------- Driver boundaries

TEST_CASE("compat resolve: driver boundaries from NVIDIA's table") {
  const std::string cu120 = "2.6.1-gpu-cuda12.0-cudnn8.9-trt8.6";

  SUBCASE("exactly at 525.60.13: cuda12.0 image with full compatibility") {
    auto r = run({.paddle = "2.6.1", .gpus = {"T4"}, .drivers = {"525.60.13"}});
    const auto* c = find_tag(r, cu120);
    REQUIRE(c != nullptr);
    CHECK(c->level == DriverLevel::full);
    CHECK(c->min_driver == "525.60.13");
    CHECK(r.candidates.front().image->tag == cu120);
  }
  SUBCASE("one below (525.60.12) refuses cuda12.0, with and without --strict-driver") {
    for (bool strict : {true, false}) {
      CAPTURE(strict);
      auto r = run({.paddle = "2.6.1", .gpus = {"T4"}, .drivers = {"525.60.12"}, .strict_driver = strict});
      REQUIRE_FALSE(r.candidates.empty());
      CHECK(find_tag(r, cu120) == nullptr);
      CHECK(starts_with(r.candidates.front().image->cuda, "11."));
      CHECK(r.candidates.front().level == DriverLevel::full);
      for (const auto& c : r.candidates) {
        CHECK(Version::parse(c.image->cuda) < Version::parse("12"));
      }
    }
  }
  SUBCASE("two-part driver 550.120 runs Paddle 3.0.0 cuda12.6 under minor-version compatibility") {
    auto r = run({.paddle = "3.0.0", .drivers = {"550.120"}});
    const auto* c = find_tag(r, "3.0.0-gpu-cuda12.6-cudnn9.5-trt10.5");
    REQUIRE(c != nullptr);
    CHECK(c->level == DriverLevel::minor);
    CHECK(any_of_strings(c->caveats, "560.28.03"));
    // The CUDA 11.8 image runs with full compatibility and ranks first.
    CHECK(r.candidates.front().level == DriverLevel::full);
    CHECK(r.candidates.front().image->cuda == "11.8");
  }
  SUBCASE("at 560.28.03 the cuda12.6 image is full") {
    auto r = run({.paddle = "3.0.0", .gpus = {"H100"}, .drivers = {"560.28.03"}});
    REQUIRE(r.candidates.size() == 1);
    CHECK(r.candidates[0].level == DriverLevel::full);
    CHECK(any_of_strings(r.candidates[0].reasons, "full compatibility"));
  }
}

TEST_CASE("compat resolve: CUDA 12.7 was never released") {
  auto e = error_of([] { (void)run({.cuda = "12.7"}); });
  CHECK(e.kind() == util::ErrorKind::input);
  CHECK(contains(e.what(), "never released"));
  CHECK(contains(e.what(), "--cuda"));

  auto unknown = error_of([] { (void)run({.cuda = "12.10"}); });
  CHECK(unknown.kind() == util::ErrorKind::input);
  CHECK(contains(unknown.what(), "--cuda"));
}

// ---------------------------------------------------------------- GPUs

TEST_CASE("compat resolve: H100 with Paddle 2.6 needs the CUDA 12 image") {
  auto r = run({.paddle = "2.6.1", .gpus = {"H100"}, .drivers = {"535.104.05"}});
  REQUIRE_FALSE(r.candidates.empty());
  const auto& best = r.candidates.front();
  CHECK(best.image->tag == "2.6.1-gpu-cuda12.0-cudnn8.9-trt8.6");
  CHECK(starts_with(best.reference, "docker.io/paddlepaddle/paddle:"));
  CHECK(best.reference == "docker.io/paddlepaddle/paddle:2.6.1-gpu-cuda12.0-cudnn8.9-trt8.6");
  CHECK(best.level == DriverLevel::full);
  CHECK(r.candidates.size() == 1);
  REQUIRE(r.gpus.size() == 1);
  CHECK(r.gpus[0].sm() == "sm_90");
}

TEST_CASE("compat resolve: RTX 5090 (sm_120) needs Paddle 3.2.0 cu129 or newer") {
  SUBCASE("no paddle constraint") {
    auto r = run({.gpus = {"RTX 5090"}, .drivers = {"575.57.08"}});
    REQUIRE_FALSE(r.candidates.empty());
    for (const auto& c : r.candidates) {
      CAPTURE(c.reference);
      CHECK(Version::parse(c.paddle) >= Version::parse("3.2.0"));
      CHECK(Version::parse(c.image->cuda) >= Version::parse("12.9"));
      CHECK(std::find(c.gpu_archs.begin(), c.gpu_archs.end(), "sm_120") != c.gpu_archs.end());
    }
    CHECK(r.candidates.front().image->tag == "3.3.0-gpu-cuda12.9-cudnn9.9");
    // cuda13.0 needs 580.65.06, and a GeForce card cannot use forward compatibility.
    CHECK(find_tag(r, "3.3.0-gpu-cuda13.0-cudnn9.13") == nullptr);
  }
  SUBCASE("with 580 driver the cu130 image is offered") {
    auto r = run({.gpus = {"RTX 5090"}, .drivers = {"580.65.06"}});
    CHECK(find_tag(r, "3.3.0-gpu-cuda13.0-cudnn9.13") != nullptr);
  }
  SUBCASE("Paddle 3.1.0 refuses") {
    auto r = run({.paddle = "3.1.0", .gpus = {"RTX 5090"}, .drivers = {"575.57.08"}});
    CHECK(r.candidates.empty());
    const auto* v = find_violation(r, "gpu");
    REQUIRE(v != nullptr);
    CHECK(contains(v->message, "sm_120"));
    CHECK(any_of_strings(v->fixes, "3.2.0"));
    CHECK(find_violation(r, "driver") == nullptr);
  }
}

TEST_CASE("compat resolve: old driver 470.82.01 with Paddle 3.0.0") {
  SUBCASE("T4: CUDA 11.8 image through minor-version compatibility") {
    auto r = run({.paddle = "3.0.0", .gpus = {"T4"}, .drivers = {"470.82.01"}});
    REQUIRE(r.candidates.size() == 1);
    const auto& c = r.candidates[0];
    CHECK(c.image->tag == "3.0.0-gpu-cuda11.8-cudnn8.9-trt8.6");
    CHECK(c.level == DriverLevel::minor);
    CHECK(any_of_strings(c.caveats, "minor-version"));
    CHECK(c.minor_driver == "450.80.02");
  }
  SUBCASE("T4 with --strict-driver: refused") {
    auto r = run({.paddle = "3.0.0", .gpus = {"T4"}, .drivers = {"470.82.01"}, .strict_driver = true});
    CHECK(r.candidates.empty());
    const auto* v = find_violation(r, "driver");
    REQUIRE(v != nullptr);
    CHECK(contains(v->constraint, "driver"));
    CHECK(any_of_strings(v->fixes, "520.61.05"));
    CHECK(any_of_strings(v->fixes, "--strict-driver"));
    CHECK(contains(v->message, "470.82.01"));
  }
  SUBCASE("H100: refused for both the GPU and the driver") {
    auto r = run({.paddle = "3.0.0", .gpus = {"H100"}, .drivers = {"470.82.01"}});
    CHECK(r.candidates.empty());
    const auto* gpu = find_violation(r, "gpu");
    REQUIRE(gpu != nullptr);
    CHECK(contains(gpu->message, "sm_90"));
    CHECK(contains(gpu->message, "3.0.0-gpu-cuda11.8-cudnn8.9-trt8.6"));
    const auto* drv = find_violation(r, "driver");
    REQUIRE(drv != nullptr);
    CHECK(contains(drv->message, "12.6"));
    CHECK(contains(drv->message, "560.28.03"));
    CHECK(contains(drv->message, "525.60.13"));
    CHECK(any_of_strings(drv->fixes, "560.28.03"));
    CHECK(any_of_strings(drv->fixes, "525.60.13"));
  }
}

TEST_CASE("compat resolve: mixed fleet T4 + H100 shares the cuda12.6 image") {
  auto r = run({.paddle = "3.0.0", .gpus = {"T4", "H100"}, .drivers = {"525.60.13", "535.104.05"}});
  REQUIRE(r.candidates.size() == 1);
  const auto& c = r.candidates[0];
  CHECK(c.image->tag == "3.0.0-gpu-cuda12.6-cudnn9.5-trt10.5");
  CHECK(c.level == DriverLevel::minor);
  CHECK(any_of_strings(c.reasons, "T4"));
  CHECK(any_of_strings(c.reasons, "H100"));
  CHECK(any_of_strings(c.reasons, "525.60.13"));
  CHECK(any_of_strings(c.reasons, "535.104.05"));
}

TEST_CASE("compat resolve: forward compatibility only when allowed and on data-center GPUs") {
  Constraints base{.paddle = "3.3.0", .cuda = "13.0", .gpus = {"A100"}, .drivers = {"535.104.05"}};
  SUBCASE("not allowed") {
    auto r = run(base);
    CHECK(r.candidates.empty());
    const auto* v = find_violation(r, "driver");
    REQUIRE(v != nullptr);
    CHECK(any_of_strings(v->fixes, "580.65.06"));
    CHECK(any_of_strings(v->fixes, "--allow-forward-compat"));
  }
  SUBCASE("allowed on A100") {
    Constraints c = base;
    c.allow_forward_compat = true;
    auto r = run(c);
    REQUIRE(r.candidates.size() == 1);
    CHECK(r.candidates[0].image->tag == "3.3.0-gpu-cuda13.0-cudnn9.13");
    CHECK(r.candidates[0].level == DriverLevel::forward);
    CHECK(any_of_strings(r.candidates[0].caveats, "cuda-compat"));
    CHECK(compat::to_string(r.candidates[0].level) == "forward");
  }
  SUBCASE("allowed but RTX 4090 is GeForce") {
    Constraints c = base;
    c.allow_forward_compat = true;
    c.gpus = {"RTX 4090"};
    auto r = run(c);
    CHECK(r.candidates.empty());
    CHECK(find_violation(r, "driver") != nullptr);
  }
}

TEST_CASE("compat matrix: GPU names resolve to compute capabilities") {
  struct Case {
    const char* input;
    const char* cc;
    const char* sm;
  };
  const std::array<Case, 14> cases{{
      {"NVIDIA H100 80GB HBM3", "9.0", "sm_90"}, // as nvidia-smi prints it
      {"NVIDIA A800 80GB PCIe", "8.0", "sm_80"},
      {"Tesla V100 32GB", "7.0", "sm_70"},
      {"NVIDIA A10 24GB", "8.6", "sm_86"},
      {"A100-SXM4-80GB", "8.0", "sm_80"},
      {"Tesla T4", "7.5", "sm_75"},
      {"NVIDIA H100 PCIe", "9.0", "sm_90"},
      {"sm_90", "9.0", "sm_90"},
      {"9.0", "9.0", "sm_90"},
      {"sm_120", "12.0", "sm_120"},
      {"NVIDIA GeForce RTX 4090", "8.9", "sm_89"},
      {"l40s", "8.9", "sm_89"},
      {"A10", "8.6", "sm_86"},
      {"Tesla V100-SXM2-16GB", "7.0", "sm_70"},
  }};
  for (const auto& tc : cases) {
    CAPTURE(tc.input);
    auto g = compat::find_gpu(builtin(), tc.input, "--gpu");
    CHECK(g.cc == Version::parse(tc.cc));
    CHECK(g.sm() == tc.sm);
    CHECK(g.input == tc.input);
  }
  CHECK(compat::find_gpu(builtin(), "Tesla T4", "--gpu").name == "T4");
  CHECK(compat::find_gpu(builtin(), "Tesla T4", "--gpu").gpu_class == "datacenter");
  CHECK(compat::find_gpu(builtin(), "sm_90", "--gpu").gpu_class.empty());
  CHECK_FALSE(compat::find_gpu(builtin(), "H20", "--gpu").confirmed);

  SUBCASE("typos get a did-you-mean") {
    for (const char* typo : {"A1000", "H10O"}) {
      CAPTURE(typo);
      auto e = error_of([&] { (void)compat::find_gpu(builtin(), typo, "--gpu[0]"); });
      CHECK(e.kind() == util::ErrorKind::input);
      CHECK(contains(e.what(), "--gpu[0]"));
      CHECK(contains(e.what(), typo));
      CHECK(contains(e.hint(), "did you mean"));
    }
    auto e = error_of([] { (void)compat::find_gpu(builtin(), "H10O", "--gpu"); });
    CHECK(contains(e.hint(), "did you mean 'H100'"));
  }
  SUBCASE("unknown names are errors") {
    auto e = error_of([] { (void)compat::find_gpu(builtin(), "Rtx 409O", "--gpu"); });
    CHECK(e.kind() == util::ErrorKind::input);
    CHECK(contains(e.what(), "Rtx 409O"));
  }
}

TEST_CASE("compat resolve: malformed and contradictory constraints") {
  auto contradiction = error_of([] { (void)run({.cuda = "11.8", .cudnn = "9.9"}); });
  CHECK(contradiction.kind() == util::ErrorKind::input);
  CHECK(contains(contradiction.what(), "--cuda"));
  CHECK(contains(contradiction.what(), "--cudnn"));

  auto driver = error_of([] { (void)run({.drivers = {"abc"}}); });
  CHECK(driver.kind() == util::ErrorKind::input);
  CHECK(contains(driver.what(), "--driver[0]"));

  auto not_nvidia = error_of([] { (void)run({.drivers = {"535.104.05", "12.6"}}); });
  CHECK(contains(not_nvidia.what(), "--driver[1]"));

  auto gpu = error_of([] { (void)run({.gpus = {"T4", "A1000"}}); });
  CHECK(contains(gpu.what(), "--gpu[1]"));

  auto paddle = error_of([] { (void)run({.paddle = ">=2.6,~3"}); });
  CHECK(contains(paddle.what(), "--paddle"));

  auto kind = error_of([] { (void)run({.kind = "debug"}); });
  CHECK(contains(kind.what(), "--kind"));

  // The field namer is used for spec files.
  Constraints c{.gpus = {"T4", "H10O"}};
  c.field = [](const std::string& f, int i) {
    return "spec.yaml:9:5: resolve." + f + (i >= 0 ? "[" + std::to_string(i) + "]" : "");
  };
  auto named = error_of([&] { (void)run(c); });
  CHECK(contains(named.what(), "spec.yaml:9:5: resolve.gpu[1]"));

  // Compatible pairs pass.
  CHECK_NOTHROW((void)run({.cuda = "12.9", .cudnn = "9.9"}));
}

// ---------------------------------------------------------------- Ranking and registries

TEST_CASE("compat resolve: ranking by driver level, then newest Paddle") {
  auto r = run({.gpus = {"V100"}, .drivers = {"560.35.03"}});
  REQUIRE(r.candidates.size() > 2);
  CHECK(r.candidates.front().level == DriverLevel::full);
  CHECK(r.candidates.front().paddle == "3.3.0");
  bool saw_minor = false;
  for (std::size_t i = 1; i < r.candidates.size(); ++i) {
    const auto& a = r.candidates[i - 1];
    const auto& b = r.candidates[i];
    CAPTURE(a.reference);
    CAPTURE(b.reference);
    CHECK(a.level <= b.level);
    if (a.level == b.level) {
      CHECK(Version::parse(a.paddle) >= Version::parse(b.paddle));
    }
    saw_minor = saw_minor || b.level == DriverLevel::minor;
  }
  CHECK(saw_minor); // the cu129 images need 575.51.03
  // V100 (sm_70) is not in the CUDA 13 image.
  CHECK(find_tag(r, "3.3.0-gpu-cuda13.0-cudnn9.13") == nullptr);
}

TEST_CASE("compat resolve: registries") {
  SUBCASE("baidu before 3.0.0b2") {
    auto r = run({.paddle = "2.6.1", .registry = "baidu"});
    REQUIRE_FALSE(r.candidates.empty());
    for (const auto& c : r.candidates) {
      CHECK(starts_with(c.reference, "registry.baidubce.com/paddlepaddle/paddle:"));
    }
  }
  SUBCASE("baidu from 3.0.0b2") {
    auto r = run({.paddle = "3.0.0", .registry = "baidu"});
    REQUIRE_FALSE(r.candidates.empty());
    for (const auto& c : r.candidates) {
      CHECK(starts_with(c.reference, "ccr-2vdh3abv-pub.cnc.bj.baidubce.com/paddlepaddle/paddle:"));
    }
  }
  SUBCASE("a mirror keeps the tags") {
    auto r = run({.paddle = "3.0.0", .registry = "mirror.example.com/pp/paddle"});
    REQUIRE_FALSE(r.candidates.empty());
    for (const auto& c : r.candidates) {
      CHECK(c.reference == "mirror.example.com/pp/paddle:" + c.image->tag);
    }
  }
  SUBCASE("nonsense") {
    auto e = error_of([] { (void)run({.registry = "nonsense"}); });
    CHECK(e.kind() == util::ErrorKind::input);
    CHECK(contains(e.what(), "--registry"));
    CHECK(contains(e.what(), "nonsense"));
  }
  SUBCASE("unknown release: explains which exist") {
    auto r = run({.paddle = "9.9.9"});
    CHECK(r.candidates.empty());
    REQUIRE(r.violations.size() == 1);
    CHECK(r.violations[0].constraint == "--paddle");
    CHECK(any_of_strings(r.violations[0].fixes, "3.0.0"));
  }
}

TEST_CASE("compat resolve: never invents a tag") {
  std::set<std::string> tags;
  for (const auto& rel : builtin().paddle) {
    for (const auto& img : rel.images) {
      tags.insert(img.tag);
    }
  }
  REQUIRE(tags.count("2.6.1-gpu-cuda12.0-cudnn8.9-trt8.6") == 1);
  CHECK(tags.count("2.6.0-gpu-cuda11.8-cudnn8") == 0);

  const std::vector<Constraints> queries{
      {},
      {.paddle = "2.6.0", .cuda = "11.8"},
      {.paddle = ">=2.6,<3.1", .gpus = {"A100"}, .drivers = {"535.104.05"}},
      {.paddle = "2.6.2", .kind = "dev"},
      {.cuda = "12", .gpus = {"L4"}, .registry = "baidu"},
      {.gpus = {"RTX 5090", "B200"}, .drivers = {"580.95.05"}},
      {.paddle = "3.0.0b1", .gpus = {"T4"}, .drivers = {"470.82.01"}},
      {.need_tensorrt = true, .python = "3.10", .gpus = {"H100"}},
  };
  std::size_t seen = 0;
  for (std::size_t i = 0; i < queries.size(); ++i) {
    CAPTURE(i);
    auto r = run(queries[i]);
    for (const auto& c : r.candidates) {
      CAPTURE(c.reference);
      CHECK(tags.count(c.image->tag) == 1);
      auto colon = c.reference.rfind(':');
      REQUIRE(colon != std::string::npos);
      CHECK(tags.count(c.reference.substr(colon + 1)) == 1);
      ++seen;
    }
  }
  CHECK(seen > 20);
  // 2.6.0 has no CUDA 11.8 runtime image: nothing to offer rather than an invented tag.
  CHECK(run(queries[1]).candidates.empty());
}

// ---------------------------------------------------------------- Merge / override

TEST_CASE("compat matrix: merge adds and overrides rows") {
  SUBCASE("a new Paddle release") {
    compat::Matrix m = compat::Matrix::builtin();
    m.merge(R"(paddle:
  - version: "9.9.0"
    min_cc: "6.0"
    images:
      - tag: "9.9.0-gpu-cuda12.6-cudnn9.5"
        cuda: "12.6"
        cudnn: "9.5"
        archs: [80, 90]
        source: "test"
)",
            "user.yaml");
    auto r = compat::resolve(m, {.paddle = "9.9.0", .gpus = {"A100"}});
    REQUIRE(r.candidates.size() == 1);
    CHECK(r.candidates[0].reference == "docker.io/paddlepaddle/paddle:9.9.0-gpu-cuda12.6-cudnn9.5");
    CHECK(r.candidates[0].image->origin == "user.yaml:5");
    CHECK(r.candidates[0].image->kind == "runtime");
    // Not for a T4: sm_75 is not shipped.
    CHECK(compat::resolve(m, {.paddle = "9.9.0", .gpus = {"T4"}}).candidates.empty());
  }
  SUBCASE("a registry row is replaced by name and range (a mirror for Docker Hub)") {
    compat::Matrix m = compat::Matrix::builtin();
    auto before = m.registries.size();
    m.merge(R"(registries:
  - name: dockerhub
    repository: "mirror.local/pp/paddle"
    versions: ">=0"
)",
            "user.yaml");
    CHECK(m.registries.size() == before);
    auto r = compat::resolve(m, {.paddle = "3.0.0", .gpus = {"A100"}});
    REQUIRE_FALSE(r.candidates.empty());
    CHECK(r.candidates[0].reference.rfind("mirror.local/pp/paddle:", 0) == 0);
  }
  SUBCASE("a row for an existing release replaces the fields it states") {
    compat::Matrix m = compat::Matrix::builtin();
    m.merge(R"(paddle:
  - version: "3.0.0"
    confirmed: false
    source: "mine"
    pip_cuda: [cu999]
)",
            "user.yaml");
    auto r = compat::resolve(m, {.paddle = "3.0.0", .gpus = {"A100"}});
    REQUIRE_FALSE(r.candidates.empty());
    CHECK_FALSE(r.candidates[0].confirmed);
    for (const auto& rel : m.paddle) {
      if (rel.version == "3.0.0") {
        CHECK(rel.source == "mine");
        CHECK(rel.pip_cuda == std::vector<std::string>{"cu999"});
        CHECK(rel.images.size() >= 2); // images kept
      }
    }
  }
  SUBCASE("an existing CUDA row is replaced") {
    compat::Matrix m = compat::Matrix::builtin();
    auto before = m.cuda.size();
    m.merge(R"(cuda:
  - version: "12.0"
    driver_full: "530.0.0"
    driver_minor: "525.60.13"
    sm: [50, 60, 70, 75, 80, 86, 89, 90]
)",
            "user.yaml");
    CHECK(m.cuda.size() == before);
    REQUIRE(m.find_cuda("12.0") != nullptr);
    CHECK(m.find_cuda("12.0")->driver_full == "530.0.0");
    auto r = compat::resolve(m, {.paddle = "2.6.1", .gpus = {"T4"}, .drivers = {"525.60.13"}});
    const auto* c = find_tag(r, "2.6.1-gpu-cuda12.0-cudnn8.9-trt8.6");
    REQUIRE(c != nullptr);
    CHECK(c->level == DriverLevel::minor);
  }
  SUBCASE("an existing release gains an image and keeps the others") {
    compat::Matrix m = compat::Matrix::builtin();
    m.merge(R"(paddle:
  - version: "3.0.0"
    images:
      - tag: "3.0.0-gpu-cuda12.9-custom"
        cuda: "12.9"
        archs: [80, 90, 120]
)",
            "user.yaml");
    auto r = compat::resolve(m, {.paddle = "3.0.0"});
    CHECK(r.candidates.size() == 3);
    CHECK(find_tag(r, "3.0.0-gpu-cuda12.9-custom") != nullptr);
  }
  SUBCASE("empty document changes nothing") {
    compat::Matrix m = compat::Matrix::builtin();
    auto n = m.paddle.size();
    m.merge("", "user.yaml");
    CHECK(m.paddle.size() == n);
  }
}

TEST_CASE("compat matrix: merge errors name file:line") {
  SUBCASE("unknown key") {
    compat::Matrix m = compat::Matrix::builtin();
    auto e = error_of([&] {
      m.merge(R"(paddle:
  - version: "9.9.0"
    images:
      - tagg: "9.9.0-gpu-cuda12.6-cudnn9.5"
        cuda: "12.6"
        archs: [80]
)",
              "user.yaml");
    });
    CHECK(e.kind() == util::ErrorKind::input);
    CHECK(contains(e.what(), "user.yaml:4:"));
    CHECK(contains(e.what(), "tagg"));
    CHECK(contains(full_text(e), "did you mean 'tag'"));
  }
  SUBCASE("unknown CUDA version") {
    compat::Matrix m = compat::Matrix::builtin();
    auto e = error_of([&] {
      m.merge(R"(paddle:
  - version: "9.9.1"
    images:
      - tag: "9.9.1-gpu-cuda99.9"
        cuda: "99.9"
        archs: [80]
)",
              "user.yaml");
    });
    CHECK(e.kind() == util::ErrorKind::input);
    CHECK(contains(e.what(), "user.yaml:4"));
    CHECK(contains(e.what(), "9.9.1-gpu-cuda99.9"));
    CHECK(contains(e.what(), "99.9"));
  }
  SUBCASE("never-released CUDA version") {
    compat::Matrix m = compat::Matrix::builtin();
    auto e = error_of([&] {
      m.merge(
          "paddle:\n  - version: \"9.9.2\"\n    images:\n      - {tag: \"x-cuda12.7\", cuda: \"12.7\", archs: [80]}\n",
          "user.yaml");
    });
    CHECK(contains(e.what(), "never released"));
    CHECK(names_file_line(e.what(), "user.yaml"));
  }
  SUBCASE("invalid YAML") {
    compat::Matrix m = compat::Matrix::builtin();
    auto e = error_of([&] { m.merge("paddle:\n  - version: \"1.0\"\n    images: [unclosed\n", "user.yaml"); });
    CHECK(e.kind() == util::ErrorKind::input);
    CHECK(names_file_line(e.what(), "user.yaml"));
    CHECK(contains(e.what(), "invalid YAML"));
  }
  SUBCASE("bad values") {
    struct Case {
      const char* yaml;
      const char* expect;
    };
    const std::array<Case, 5> cases{{
        {"gpus:\n  - {name: \"X1\", cc: \"nine\", class: datacenter}\n", "user.yaml:2"},
        {"gpus:\n  - {name: \"X1\", cc: \"9.0\", class: gaming}\n", "unknown class"},
        {"cudnn:\n  - {version: \"9.99\", cuda: [\"12.9-12.0\"]}\n", "backwards"},
        {"bogus: []\n", "unknown key 'bogus'"},
        {"cuda:\n  - {version: \"12.99\", driver_full: \"600\", sm: []}\n", "'sm'"},
    }};
    for (const auto& tc : cases) {
      CAPTURE(tc.yaml);
      compat::Matrix m = compat::Matrix::builtin();
      auto e = error_of([&] { m.merge(tc.yaml, "user.yaml"); });
      CHECK(e.kind() == util::ErrorKind::input);
      CHECK(contains(e.what(), tc.expect));
      CHECK(names_file_line(e.what(), "user.yaml"));
    }
  }
}

TEST_CASE("compat matrix: builtin data is consistent") {
  const auto& m = builtin();
  CHECK_NOTHROW(m.validate());
  REQUIRE(m.find_cuda("12.7") != nullptr);
  CHECK_FALSE(m.find_cuda("12.7")->released);
  struct Case {
    const char* cuda;
    const char* full;
    const char* minor;
  };
  const std::array<Case, 6> table{{
      {"11.8", "520.61.05", "450.80.02"},
      {"12.0", "525.60.13", "525.60.13"},
      {"12.4", "550.54.14", "525.60.13"},
      {"12.6", "560.28.03", "525.60.13"},
      {"12.9", "575.51.03", "525.60.13"},
      {"10.2", "440.33", ""},
  }};
  for (const auto& tc : table) {
    CAPTURE(tc.cuda);
    const auto* row = m.find_cuda(tc.cuda);
    REQUIRE(row != nullptr);
    CHECK(row->driver_full == tc.full);
    CHECK(row->driver_minor == tc.minor);
    CHECK_FALSE(row->source.empty());
    CHECK(contains(row->origin, "cuda.yaml:"));
  }
}

// ---------------------------------------------------------------- Reports

TEST_CASE("compat resolve: describe and to_json") {
  SUBCASE("a choice") {
    auto r = run({.paddle = "2.6.1", .gpus = {"H100"}, .drivers = {"535.104.05"}});
    REQUIRE_FALSE(r.candidates.empty());
    const std::string ref = r.candidates[0].reference;
    auto text = compat::describe(r, false);
    CHECK(contains(text, ref));
    CHECK(contains(text, "driver compatibility: full"));
    auto j = compat::to_json(r, false);
    CHECK(j["choice"] == ref);
    CHECK(j["candidates"].size() == 1);
    CHECK(j["candidates"][0]["reference"] == ref);
    CHECK(j["candidates"][0]["driver_compatibility"] == "full");
    CHECK(j["candidates"][0]["cuda"] == "12.0");
    CHECK(j["violations"].empty());
    CHECK(j["gpus"][0]["sm"] == "sm_90");
    CHECK(j["candidate_count"] == r.candidates.size());
  }
  SUBCASE("all candidates") {
    auto r = run({.paddle = "2.6.1", .gpus = {"T4"}, .drivers = {"535.104.05"}});
    REQUIRE(r.candidates.size() == 3);
    CHECK(compat::to_json(r, true)["candidates"].size() == 3);
    auto text = compat::describe(r, true);
    for (const auto& c : r.candidates) {
      CHECK(contains(text, c.reference));
    }
    CHECK(contains(compat::describe(r, false), "2 more candidate(s)"));
  }
  SUBCASE("a refusal") {
    auto r = run({.paddle = "3.0.0", .gpus = {"H100"}, .drivers = {"470.82.01"}});
    REQUIRE(r.candidates.empty());
    auto text = compat::describe(r, false);
    CHECK(contains(text, "no compatible image"));
    CHECK(contains(text, "fix:"));
    CHECK(contains(text, "560.28.03"));
    auto j = compat::to_json(r, true);
    CHECK(j["choice"].is_null());
    CHECK(j["candidates"].empty());
    REQUIRE_FALSE(j["violations"].empty());
    CHECK_FALSE(j["violations"][0]["fixes"].empty());
  }
}

namespace {

template <class F> Resolution resolve_with(F set) {
  Constraints c;
  set(c);
  return run(c);
}

} // namespace

TEST_CASE("compat resolve: pre-releases only when asked for, partial versions mean the newest patch") {
  // The built-in data has 3.0.0b2 images; a stable release wins without --pre.
  auto stable = resolve_with([](compat::Constraints&) {});
  REQUIRE_FALSE(stable.candidates.empty());
  for (const auto& cand : stable.candidates) {
    CHECK(compat::Version::parse(cand.paddle).pre_rank == 3);
  }
  auto with_pre = resolve_with([](compat::Constraints& c) { c.paddle = "3.0.0b2"; });
  REQUIRE_FALSE(with_pre.candidates.empty());
  CHECK(with_pre.candidates.front().paddle == "3.0.0b2"); // naming a pre-release admits it
  auto partial = resolve_with([](compat::Constraints& c) { c.paddle = "2.6"; });
  REQUIRE_FALSE(partial.candidates.empty());
  CHECK(partial.candidates.front().paddle == "2.6.2");
  auto bounded = resolve_with([](compat::Constraints& c) { c.paddle = ">=2.5,<2.6"; });
  CHECK(bounded.candidates.front().paddle == "2.5.2");
  // Only a pre-release fits these constraints: exit 9 saying "add --pre".
  auto only_pre = resolve_with([](compat::Constraints& c) { c.paddle = ">=3.0.0b1,<3.0.0"; });
  CHECK_FALSE(only_pre.candidates.empty()); // the bound names a pre-release: admitted
  auto none = resolve_with([](compat::Constraints& c) {
    c.paddle = "3.0";
    c.cuda = "12.3";
  });
  REQUIRE(none.candidates.empty());
  {
    REQUIRE(none.violations.size() == 1);
    CHECK(none.violations[0].constraint == "--pre");
    CHECK(contains(none.violations[0].message, "only pre-releases fit: Paddle 3.0.0b"));
    CHECK(contains(none.violations[0].message, "3.0.0b2"));
    CHECK(contains(none.violations[0].fixes.at(0), "add --pre"));
    auto allowed = resolve_with([](compat::Constraints& c) {
      c.paddle = "3.0";
      c.cuda = "12.3";
      c.pre = true;
    });
    REQUIRE_FALSE(allowed.candidates.empty());
    CHECK(allowed.candidates.front().paddle == "3.0.0b2");
  }
  compat::VersionRange r = compat::VersionRange::parse("3.0.0");
  CHECK_FALSE(r.contains(compat::Version::parse("3.0.0b2")));
  CHECK(compat::VersionRange::parse("2.6").contains(compat::Version::parse("2.6.2")));
  CHECK_FALSE(compat::VersionRange::parse("2.6").contains(compat::Version::parse("2.7.0")));
  CHECK(compat::VersionRange::parse(">=3.0,<2.0").empty());
  CHECK(compat::VersionRange::parse(">2.6,<=2.6").empty());
  CHECK_FALSE(compat::VersionRange::parse(">=2.6,<=2.6").empty());
}

TEST_CASE("compat resolve: impossible constraints are input errors of one line") {
  auto cuda = error_of([] { resolve_with([](compat::Constraints& c) { c.cuda = "99"; }); });
  CHECK(cuda.kind() == util::ErrorKind::input);
  CHECK(contains(cuda.what(), "--cuda: CUDA 99 is not a known CUDA release"));
  CHECK(contains(cuda.hint(), "12.6"));
  CHECK(std::string(cuda.what()).find('\n') == std::string::npos);
  auto empty = error_of([] { resolve_with([](compat::Constraints& c) { c.paddle = ">=3.0,<2.0"; }); });
  CHECK(empty.kind() == util::ErrorKind::input);
  CHECK(contains(empty.what(), "--paddle: '>=3.0,<2.0' admits no version"));
}

TEST_CASE("compat resolve: a driver branch number is read as its first release, and said so") {
  auto r = resolve_with([](compat::Constraints& c) { c.drivers = {"470"}; });
  REQUIRE(r.notes.size() == 1);
  CHECK(contains(r.notes[0], "driver 470 read as 470.0"));
  CHECK(contains(compat::describe(r, false), "note: driver 470 read as 470.0"));
  auto exact = resolve_with([](compat::Constraints& c) { c.drivers = {"470.0"}; });
  CHECK(exact.candidates.size() == r.candidates.size());
}

TEST_CASE("compat matrix: empty and newly listed GPU names") {
  auto e = error_of([] { (void)compat::find_gpu(builtin(), "", "--gpu[0]"); });
  CHECK(e.kind() == util::ErrorKind::input);
  CHECK(contains(e.what(), "--gpu[0]: the GPU name is empty"));
  CHECK_FALSE(contains(e.hint(), "T4"));
  CHECK(compat::find_gpu(builtin(), "NVIDIA RTX A6000", "--gpu").cc.text == "8.6");
  CHECK(compat::find_gpu(builtin(), "Tesla P4", "--gpu").cc.text == "6.1");
  CHECK(compat::find_gpu(builtin(), "P40", "--gpu").name == "P40");
  CHECK(compat::find_gpu(builtin(), "NVIDIA L4", "--gpu").name == "L4");
  CHECK(compat::find_gpu(builtin(), "NVIDIA L40S", "--gpu").name == "L40S");
  auto unknown = error_of([] { (void)compat::find_gpu(builtin(), "Quadro Zz9", "--gpu"); });
  CHECK(contains(unknown.what(), "unknown GPU 'Quadro Zz9'"));
}

TEST_CASE("compat rules: architecture names and binary compatibility") {
  CHECK(compat::sm_name(90) == "sm_90");
  CHECK(compat::sm_number("sm_90") == 90);
  CHECK(compat::sm_number("sm_90a") == 90);
  CHECK(compat::sm_number("86") == 86);
  CHECK(compat::sm_number("sm_120") == 120);
  for (const char* bad : {"", "sm_", "sm_abc", "9.0", "sm_1000", "a"}) {
    INFO(bad);
    CHECK_FALSE(compat::sm_number(bad).has_value());
  }
  CHECK(compat::sm_of(Version::parse("9.0")) == 90);
  CHECK(compat::sm_of(Version::parse("8.6")) == 86);
  CHECK(compat::sm_of(Version::parse("12")) == 120);
  // Code for sm_XY runs on X.Z with Z >= Y, never across majors.
  const std::vector<int> archs = {75, 80};
  CHECK(compat::ships_code_for(archs, Version::parse("8.0")));
  CHECK(compat::ships_code_for(archs, Version::parse("8.6")));
  CHECK(compat::ships_code_for(archs, Version::parse("7.5")));
  CHECK_FALSE(compat::ships_code_for(archs, Version::parse("7.0")));
  CHECK_FALSE(compat::ships_code_for(archs, Version::parse("9.0")));
  CHECK_FALSE(compat::ships_code_for({}, Version::parse("8.0")));
  compat::ReleaseRow rel;
  CHECK(compat::meets_min_cc(rel, Version::parse("3.0"))); // no minimum
  rel.min_cc = "6.0";
  CHECK(compat::meets_min_cc(rel, Version::parse("6.0")));
  CHECK(compat::meets_min_cc(rel, Version::parse("9.0")));
  CHECK_FALSE(compat::meets_min_cc(rel, Version::parse("5.2")));
}

TEST_CASE("compat rules: driver levels") {
  const compat::DriverNeeds needs{"560.28.03", "525.60.13"};
  auto level = [&](const char* driver, bool strict) {
    return compat::native_driver_level(Version::parse(driver), needs, strict);
  };
  CHECK(level("560.28.03", false) == DriverLevel::full);
  CHECK(level("570.86.10", true) == DriverLevel::full);
  CHECK(level("560.28.02", false) == DriverLevel::minor);
  CHECK(level("525.60.13", false) == DriverLevel::minor);
  CHECK_FALSE(level("525.60.13", true).has_value()); // strict: minor-version compatibility refused
  CHECK_FALSE(level("525.60.12", false).has_value());
  const compat::DriverNeeds full_only{"450.80.02", ""};
  CHECK_FALSE(compat::native_driver_level(Version::parse("449.0"), full_only, false).has_value());
  CHECK(needs.lowest(false) == "525.60.13");
  CHECK(needs.lowest(true) == "560.28.03");
  CHECK(full_only.lowest(false) == "450.80.02");
  const auto* row = builtin().find_cuda("12.6");
  REQUIRE(row != nullptr);
  CHECK(compat::DriverNeeds::of(*row).full == row->driver_full);
  CHECK(compat::DriverNeeds::of(*row).minor == row->driver_minor);
  CHECK(compat::to_string(DriverLevel::minor) == "minor-version");

  // Forward compatibility: only when every GPU is of a class the matrix lists.
  CHECK(compat::forward_compat_gpus(builtin(), {"datacenter", "datacenter"}));
  CHECK_FALSE(compat::forward_compat_gpus(builtin(), {"datacenter", "geforce"}));
  CHECK_FALSE(compat::forward_compat_gpus(builtin(), {"datacenter", ""}));
  CHECK_FALSE(compat::forward_compat_gpus(builtin(), {}));
  const auto* fb = compat::forward_branch(builtin(), Version::parse("535.104.05"), 12);
  REQUIRE(fb != nullptr);
  CHECK(fb->branch == "R535");
  CHECK(compat::forward_branch(builtin(), Version::parse("535.104.05"), 11) == nullptr);
  CHECK(compat::forward_branch(builtin(), Version::parse("540.1"), 12) == nullptr);
}

TEST_CASE("ImageFacts: what the build writes as labels is what the readers get back; a bad label is named") {
  compat::ImageFacts f;
  f.cuda = "12.0";
  f.cudnn = "8.9";
  f.tensorrt = "8.6";
  f.paddle = "2.6.1.post120";
  f.python = "3.11";
  f.driver_min = "525.60.13";
  f.driver_min_compat = "525.60.13";
  f.archs = {"sm_80", "sm_90"};
  f.gpu_memory_mib = 40960;
  auto labels = f.labels();
  CHECK(labels.at("io.paddle-image.gpu.archs") == "sm_80,sm_90");
  CHECK(labels.at("io.paddle-image.gpu.memory-mib") == "40960");
  CHECK(labels.size() == 9);
  auto back = compat::ImageFacts::from_labels(labels, "oci:x:v1");
  CHECK(back.labels() == labels);
  CHECK(back.source == "oci:x:v1");
  CHECK(back.archs == std::vector<std::string>{"sm_80", "sm_90"});
  // Unstated facts write no label; other forms of an architecture are read normalised.
  CHECK(compat::ImageFacts{}.labels().empty());
  auto forms = compat::ImageFacts::from_labels({{"io.paddle-image.gpu.archs", "9.0,86,sm_90a"}}, "img");
  CHECK(forms.archs == std::vector<std::string>{"sm_90", "sm_86", "sm_90a"});
  for (const auto& [k, v] :
       std::vector<std::pair<std::string, std::string>>{{"io.paddle-image.cuda.version", "twelve"},
                                                        {"io.paddle-image.python.version", "3.x"},
                                                        {"io.paddle-image.gpu.archs", "sm_80,ampere"},
                                                        {"io.paddle-image.gpu.memory-mib", "-1"},
                                                        {"io.paddle-image.paddle.version", "2.6;rm"}}) {
    try {
      compat::ImageFacts::from_labels({{k, v}}, "img");
      FAIL("accepted " << k << "=" << v);
    } catch (const util::Error& e) {
      CHECK(e.kind() == util::ErrorKind::input);
      CHECK(std::string(e.what()).find(k) != std::string::npos);
    }
  }
}

TEST_CASE("the matrix finds a stated Paddle version's release and its published image") {
  const compat::Matrix m = compat::Matrix::builtin();
  const compat::ReleaseRow* r = m.find_release("2.4.1.post117");
  REQUIRE(r != nullptr);
  CHECK(r->version == "2.4.1");
  CHECK(m.find_release("2.4.1") == r);
  CHECK(m.find_release("") == nullptr);
  CHECK(m.find_release("not-a-version") == nullptr);
  CHECK(m.find_release("0.0.1") == nullptr);
  const compat::ImageRow* img = compat::find_published(*r, "11.7");
  REQUIRE(img != nullptr);
  CHECK(img->tag == "2.4.1-gpu-cuda11.7-cudnn8.4-trt8.4");
  CHECK(compat::find_published(*r, "9.0") == nullptr);
  // A runtime image is preferred to a devel one of the same CUDA, in either order.
  compat::ReleaseRow two;
  compat::ImageRow dev;
  dev.tag = "dev";
  dev.kind = "devel";
  dev.cuda = "12.0";
  compat::ImageRow run = dev;
  run.tag = "run";
  run.kind = "runtime";
  two.images = {dev, run};
  CHECK(compat::find_published(two, "12.0")->tag == "run");
  two.images = {run, dev};
  CHECK(compat::find_published(two, "12.0")->tag == "run");
}

} // namespace unit_compat_test
