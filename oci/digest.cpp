#include "oci/digest.hpp"

#include "util/encoding.hpp"
#include "util/error.hpp"

namespace oci {

Digest Digest::parse(std::string_view text) {
  auto colon = text.find(':');
  if (colon == std::string_view::npos) {
    throw util::Error(util::ErrorKind::input, "invalid digest '" + std::string(text) + "'",
                      "a digest looks like sha256:<64 hex digits>");
  }
  Digest d{std::string(text.substr(0, colon)), std::string(text.substr(colon + 1))};
  std::size_t want = d.algorithm == "sha256" ? 64 : d.algorithm == "sha512" ? 128 : 0;
  if (want == 0 || d.hex.size() != want || !util::is_lower_hex(d.hex)) {
    throw util::Error(util::ErrorKind::input, "invalid digest '" + std::string(text) + "'",
                      "a digest looks like sha256:<64 lowercase hex digits>");
  }
  return d;
}

Digest Digest::sha256(std::string hex_value) {
  return Digest{"sha256", std::move(hex_value)};
}

} // namespace oci
