// libFuzzer target for spec.yaml (yaml-cpp, then every field checked with its line).
#include "spec/spec.hpp"
#include "tests/fuzz/support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string in(fuzz::text(data, size));
  fuzz::refusal_ok([&] { (void)spec::parse(in, "/work/app/spec.yaml"); });
  return 0;
}
