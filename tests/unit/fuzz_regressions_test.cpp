// Every committed fuzz input replayed through its target, in every build (the targets
// are compiled in under the names pi_fuzz_*; tests/CMakeLists.txt): the minimised
// inputs of crashes found and fixed (tests/fuzz/regressions/TARGET/) and the seed
// corpora (tests/fuzz/corpus/TARGET/). A crash or a stray exception fails here, in the
// unit suite, even where clang and libFuzzer are not installed.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

namespace unit_fuzz_regressions_test {

namespace fs = std::filesystem;

#define PI_FUZZ_TARGET(name) extern "C" int pi_##name(const std::uint8_t* data, std::size_t size);
PI_FUZZ_TARGET(fuzz_doctor)
PI_FUZZ_TARGET(fuzz_python)
PI_FUZZ_TARGET(fuzz_index_page)
PI_FUZZ_TARGET(fuzz_requirements)
PI_FUZZ_TARGET(fuzz_pip_conf)
PI_FUZZ_TARGET(fuzz_wheel)
PI_FUZZ_TARGET(fuzz_dockerfile)
PI_FUZZ_TARGET(fuzz_spec)
PI_FUZZ_TARGET(fuzz_registry_answers)
PI_FUZZ_TARGET(fuzz_oci_json)
PI_FUZZ_TARGET(fuzz_docker_config)
PI_FUZZ_TARGET(fuzz_tar)
PI_FUZZ_TARGET(fuzz_docker_archive)
PI_FUZZ_TARGET(fuzz_keys)
PI_FUZZ_TARGET(fuzz_dsse)
#undef PI_FUZZ_TARGET

namespace {

using Target = int (*)(const std::uint8_t*, std::size_t);

const std::map<std::string, Target>& targets() {
  static const std::map<std::string, Target> t = {
      {"fuzz_doctor", pi_fuzz_doctor},
      {"fuzz_python", pi_fuzz_python},
      {"fuzz_index_page", pi_fuzz_index_page},
      {"fuzz_requirements", pi_fuzz_requirements},
      {"fuzz_pip_conf", pi_fuzz_pip_conf},
      {"fuzz_wheel", pi_fuzz_wheel},
      {"fuzz_dockerfile", pi_fuzz_dockerfile},
      {"fuzz_spec", pi_fuzz_spec},
      {"fuzz_registry_answers", pi_fuzz_registry_answers},
      {"fuzz_oci_json", pi_fuzz_oci_json},
      {"fuzz_docker_config", pi_fuzz_docker_config},
      {"fuzz_tar", pi_fuzz_tar},
      {"fuzz_docker_archive", pi_fuzz_docker_archive},
      {"fuzz_keys", pi_fuzz_keys},
      {"fuzz_dsse", pi_fuzz_dsse},
  };
  return t;
}

// Replays every file under PI_FUZZ_DIR/KIND/TARGET; returns how many.
std::size_t replay(const std::string& kind) {
  std::size_t n = 0;
  fs::path root = fs::path(PI_FUZZ_DIR) / kind;
  REQUIRE(fs::is_directory(root));
  for (const auto& dir : fs::directory_iterator(root)) {
    if (!dir.is_directory()) {
      continue; // README.md
    }
    auto it = targets().find(dir.path().filename().string());
    INFO("directory " << dir.path());
    REQUIRE(it != targets().end()); // a directory names a target
    std::vector<fs::path> files;
    for (const auto& f : fs::directory_iterator(dir.path())) {
      files.push_back(f.path());
    }
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      std::ifstream in(f, std::ios::binary);
      std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      INFO("input " << f);
      CHECK_NOTHROW(it->second(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()));
      ++n;
    }
  }
  return n;
}

} // namespace

TEST_SUITE("fuzz") {
  TEST_CASE("every fixed crash's minimised input stays fixed") {
    CHECK(replay("regressions") > 0);
  }
  TEST_CASE("every seed input is answered without a crash or a stray exception") {
    CHECK(replay("corpus") > 0);
  }
  TEST_CASE("every target has a seed corpus") {
    for (const auto& target : targets()) {
      const std::string& name = target.first;
      CAPTURE(name);
      CHECK(fs::is_directory(fs::path(PI_FUZZ_DIR) / "corpus" / name));
    }
  }
}

} // namespace unit_fuzz_regressions_test
