// libFuzzer target for requirements and lock files (pip's format: options, hashes,
// continuations, environment markers, includes), read from a file as the build reads
// them. The first byte picks the mode: a lock (pinned and hashed) or `lock`'s input.
#include "python/requirements.hpp"
#include "tests/fuzz/support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) {
    return 0;
  }
  auto file = fuzz::write_input(fuzz::text(data + 1, size - 1), "requirements.txt");
  auto mode = (data[0] & 1) != 0 ? python::RequirementsMode::pinned : python::RequirementsMode::lock;
  fuzz::refusal_ok([&] {
    auto r = python::parse_requirements(file, mode);
    for (const auto& l : r.requirements) {
      (void)l.pinned();
      (void)l.where();
    }
  });
  return 0;
}
