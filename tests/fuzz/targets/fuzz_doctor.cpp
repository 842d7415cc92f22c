// libFuzzer target for the doctor's parsers of host files (/proc files,
// ld.so.cache, requirement strings). The first byte picks the parser.
// Seeds: the fixture hosts' files (tests/fuzz/corpus/fuzz_doctor).
#include "doctor/parse.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) {
    return 0;
  }
  std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 7) {
  case 0:
    (void)doctor::parse_driver_version(in);
    break;
  case 1:
    (void)doctor::parse_proc_devices(in);
    break;
  case 2:
    (void)doctor::parse_proc_modules(in);
    break;
  case 3:
    (void)doctor::parse_key_values(in);
    break;
  case 4:
    (void)doctor::parse_ld_so_cache(in);
    break;
  case 5:
    (void)doctor::parse_require_cuda(in);
    break;
  default:
    (void)doctor::parse_requires(in);
    (void)doctor::version_from_soname(in, "libcuda");
    break;
  }
  return 0;
}
