#pragma once
#include <compare>
#include <string>
#include <string_view>

namespace oci {

// A content address, "sha256:<64 lowercase hex>". Only sha256 is produced; sha512
// is accepted when reading.
struct Digest {
  std::string algorithm;
  std::string hex;

  static Digest parse(std::string_view text); // throws util::Error(input)
  static Digest sha256(std::string hex_value);
  std::string str() const { return algorithm + ":" + hex; }
  bool empty() const { return hex.empty(); }
  auto operator<=>(const Digest&) const = default;
};

} // namespace oci
