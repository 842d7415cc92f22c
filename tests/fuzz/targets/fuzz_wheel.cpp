// libFuzzer target for wheels (zip archives): member names (no escaping the install
// root), .dist-info METADATA, WHEEL and RECORD, hashes against RECORD, scripts. The
// input is the .whl file; it is read for its METADATA and installed into a scratch
// staging directory, as a wheels layer does.
#include "python/wheel.hpp"
#include "tests/fuzz/support.hpp"

#include <map>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string name = "fuzzpkg-1.0-py3-none-any.whl";
  auto wheel = fuzz::write_input(fuzz::text(data, size), "wheel/" + name);
  auto staging = fuzz::scratch() / "wheel" / "staging";
  std::filesystem::remove_all(staging);
  std::filesystem::create_directories(staging);
  fuzz::refusal_ok([&] { (void)python::read_wheel_metadata(wheel, name); });
  python::PythonTarget target;
  target.major = 3;
  target.minor = 11;
  target.prefix = "/usr/local";
  target.interpreter = "/usr/local/bin/python3.11";
  target.site_packages = "/usr/local/lib/python3.11/site-packages";
  target.scripts_dir = "/usr/local/bin";
  std::map<std::string, std::string> owners;
  fuzz::refusal_ok([&] { (void)python::install_wheel(wheel, target, staging, owners); });
  // Whatever the wheel says, nothing lands outside the staging root.
  for (const auto& e : std::filesystem::recursive_directory_iterator(fuzz::scratch() / "wheel")) {
    auto rel = e.path().lexically_relative(fuzz::scratch() / "wheel").string();
    if (rel != name && rel.rfind("staging", 0) != 0) {
      __builtin_trap();
    }
  }
  return 0;
}
