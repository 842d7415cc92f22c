// libFuzzer target for wheels (zip archives): member names (no escaping the install
// root), .dist-info METADATA, WHEEL and RECORD, hashes against RECORD, scripts. The
// input is the .whl file; it is read for its METADATA and installed into a scratch
// staging directory, as a wheels layer does.
#include "python/wheel.hpp"
#include "tests/fuzz/support.hpp"

#include <map>
#include <set>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string name = "fuzzpkg-1.0-py3-none-any.whl";
  // Staging two levels down, so a member escaping it by up to three ".." lands where
  // the check below looks.
  auto wheel = fuzz::write_input(fuzz::text(data, size), "wheel/box/" + name);
  auto staging = fuzz::scratch() / "wheel" / "box" / "staging";
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
  // Whatever the wheel says, nothing lands outside the staging root: under scratch()
  // only this target's own paths, and the files other targets write there when the
  // unit suite replays them all in one process.
  static const std::set<std::string> others = {"requirements.txt", "pip.conf", "auth.json",          "layer.tar",
                                               "image.tar",        "docker",   "docker/config.json", "empty-path"};
  for (const auto& e : std::filesystem::recursive_directory_iterator(fuzz::scratch())) {
    auto rel = e.path().lexically_relative(fuzz::scratch()).string();
    bool ours =
        rel == "wheel" || rel == "wheel/box" || rel == "wheel/box/" + name || rel.rfind("wheel/box/staging", 0) == 0;
    if (!ours && others.count(rel) == 0) {
      __builtin_trap();
    }
  }
  return 0;
}
