// libFuzzer's entry point for one target: its code is compiled once, as pi_fuzz_NAME
// (tests/CMakeLists.txt), for the fuzz executable and the unit tests' replay alike;
// PI_FUZZ_ENTRY names it.
#include <cstddef>
#include <cstdint>

extern "C" int PI_FUZZ_ENTRY(const std::uint8_t* data, std::size_t size);

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return PI_FUZZ_ENTRY(data, size);
}
