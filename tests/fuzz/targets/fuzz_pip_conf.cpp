// libFuzzer target for pip.conf (configparser's INI: sections, '=' or ':', indented
// continuation lines, comments), read from a file as the build reads the target's.
#include "python/pip_conf.hpp"
#include "tests/fuzz/support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto file = fuzz::write_input(fuzz::text(data, size), "pip.conf");
  python::IndexDefaults d;
  fuzz::refusal_ok([&] { python::read_pip_conf(file, d); });
  return 0;
}
