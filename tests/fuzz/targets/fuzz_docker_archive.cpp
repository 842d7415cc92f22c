// libFuzzer target for a docker-archive's manifest.json (`docker save`'s index of the
// archive: Config, RepoTags, Layers, links between members). The input is manifest.json
// inside an otherwise well-formed archive holding a config and one layer, opened as a
// build opens a `docker-archive:` base.
#include "layers/docker_archive.hpp"
#include "tests/fuzz/support.hpp"

#include <cstdio>
#include <cstring>

namespace {

// One ustar member: header and data padded to 512 bytes.
void member(std::string& tar, const std::string& name, std::string_view body) {
  char h[512] = {};
  std::snprintf(h, 100, "%s", name.c_str());
  std::snprintf(h + 100, 8, "%07o", 0644);
  std::snprintf(h + 108, 8, "%07o", 0);
  std::snprintf(h + 116, 8, "%07o", 0);
  std::snprintf(h + 124, 12, "%011llo", static_cast<unsigned long long>(body.size()));
  std::snprintf(h + 136, 12, "%011o", 0);
  h[156] = '0';
  std::memcpy(h + 257,
              "ustar\0"
              "00",
              8);
  std::memset(h + 148, ' ', 8);
  unsigned sum = 0;
  for (unsigned char c : h) {
    sum += c;
  }
  std::snprintf(h + 148, 8, "%06o", sum);
  tar.append(h, 512);
  tar.append(body);
  tar.append((512 - body.size() % 512) % 512, '\0');
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string config =
      R"({"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]},"config":{}})";
  std::string tar;
  member(tar, "manifest.json", fuzz::text(data, size));
  member(tar, "config.json", config);
  member(tar, "layer.tar", std::string(1024, '\0'));
  tar.append(1024, '\0');
  auto file = fuzz::write_input(tar, "image.tar");
  fuzz::refusal_ok([&] {
    layers::ArchiveImage img(file, "docker-archive:image.tar");
    (void)img.repo_tags();
    auto m = oci::manifest_from_json(oci::parse_json(img.root().bytes, "manifest"));
    (void)oci::read_config(img, m);
    for (const auto& l : oci::image_blobs(img.root(), img.name())) {
      (void)img.hints(l);
    }
  });
  return 0;
}
