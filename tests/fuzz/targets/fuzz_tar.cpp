// libFuzzer target for the tar readers: our own header reader (ustar, GNU long names,
// PAX records; it indexes docker-archives in place) and the libarchive-based scanner
// that reads base layers, each over the same bytes. Every member the index yields must
// lie inside the file.
#include "layers/docker_archive.hpp"
#include "layers/tar.hpp"
#include "tests/fuzz/support.hpp"

#include <cstring>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto file = fuzz::write_input(fuzz::text(data, size), "layer.tar");
  fuzz::refusal_ok([&] {
    for (const auto& e : layers::index_tar(file)) {
      if (e.offset < 0 || e.size < 0 || e.offset > static_cast<std::int64_t>(size) ||
          e.size > static_cast<std::int64_t>(size) - e.offset) {
        __builtin_trap();
      }
    }
  });
  std::size_t pos = 0;
  auto read = [&](char* buf, std::size_t n) {
    std::size_t k = std::min(n, size - pos);
    std::memcpy(buf, data + pos, k);
    pos += k;
    return k;
  };
  fuzz::refusal_ok([&] {
    layers::scan_tar(
        read, "fuzz layer", [](const layers::TarMember&) { return true; },
        [](const layers::TarMember&, const std::string&) {});
  });
  return 0;
}
