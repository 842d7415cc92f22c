// libFuzzer target for the JSON documents a registry or an image layout serves: image
// manifests, indexes and image configs (each input is tried as all three), and
// descriptors. What parses must print back to JSON that parses to the same thing.
#include "oci/types.hpp"
#include "tests/fuzz/support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string in(fuzz::text(data, size));
  nlohmann::json j;
  try {
    j = oci::parse_json(in, "fuzz input");
  } catch (const util::Error&) {
    return 0;
  }
  fuzz::refusal_ok([&] {
    auto m = oci::manifest_from_json(j);
    if (!(oci::manifest_from_json(oci::to_json(m)).config == m.config)) {
      __builtin_trap();
    }
  });
  fuzz::refusal_ok([&] {
    auto i = oci::index_from_json(j);
    if (oci::index_from_json(oci::to_json(i)).manifests.size() != i.manifests.size()) {
      __builtin_trap();
    }
  });
  fuzz::refusal_ok([&] {
    auto c = oci::config_from_json(j);
    if (!(oci::config_from_json(oci::to_json(c)) == c)) {
      __builtin_trap();
    }
  });
  fuzz::refusal_ok([&] { (void)oci::descriptor_from_json(j); });
  return 0;
}
