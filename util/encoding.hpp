#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace util {

// RFC 4648 base64 with the URL-safe alphabet and no padding (as wheel RECORD files use).
std::string base64url_nopad(std::span<const std::uint8_t> data);
std::string hex_to_base64url_nopad(std::string_view hex);
// RFC 4648 base64, standard alphabet with padding (HTTP Basic auth, docker config).
std::string base64_encode(std::string_view data);
// Decodes standard or URL-safe base64 (padding optional) into out; false on bad input.
bool base64_decode(std::string_view text, std::string& out);
// Edit distance, for "did you mean" suggestions.
std::size_t levenshtein(std::string_view a, std::string_view b);
// The strings joined with `sep` between them.
std::string join(const std::vector<std::string>& parts, std::string_view sep);
// The candidate closest to `word` when it is plausibly a typo of it, else "".
std::string closest(std::string_view word, const std::vector<std::string>& candidates);
// A Kubernetes resource quantity of bytes ("40Gi", "46068Mi", "40G", "1.5Gi", "1024"):
// binary suffixes Ki Mi Gi Ti Pi, decimal k M G T P, or none (bytes), as whole bytes
// (rounded up); nullopt for anything else (exponents, negative values, overflow).
std::optional<std::uint64_t> parse_byte_quantity(std::string_view text);
// Whole MiB holding `bytes`, rounded up (a memory need: 1 byte needs 1 MiB).
constexpr std::uint64_t mib_rounded_up(std::uint64_t bytes) {
  return (bytes + (1ULL << 20) - 1) >> 20;
}
// ASCII letters lower-cased, every other byte as it is (independent of the locale).
std::string ascii_lower(std::string_view s);
// RFC 3339 UTC time ("2024-01-02T03:04:05Z") for a Unix time.
std::string rfc3339_utc(std::int64_t seconds);
bool is_lower_hex(std::string_view s);
// The bytes as lower-case hex, two digits each.
std::string hex_encode(std::string_view bytes);
// Well-formed UTF-8 (no overlongs, surrogates or code points above U+10FFFF).
bool is_valid_utf8(std::string_view s);
// The text with control bytes and bytes that are not valid UTF-8 written as \xNN.
std::string escape_bytes(std::string_view s);

} // namespace util
