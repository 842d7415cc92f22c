#include "util/encoding.hpp"

#include <algorithm>
#include <cctype>
#include <ctime>
#include <limits>
#include <vector>

namespace util {

std::string base64url_nopad(std::span<const std::uint8_t> data) {
  static const char* k_alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  std::size_t i = 0;
  while (i + 3 <= data.size()) {
    std::uint32_t v = (std::uint32_t{data[i]} << 16) | (std::uint32_t{data[i + 1]} << 8) | data[i + 2];
    out.push_back(k_alphabet[(v >> 18) & 63]);
    out.push_back(k_alphabet[(v >> 12) & 63]);
    out.push_back(k_alphabet[(v >> 6) & 63]);
    out.push_back(k_alphabet[v & 63]);
    i += 3;
  }
  std::size_t rest = data.size() - i;
  if (rest == 1) {
    std::uint32_t v = std::uint32_t{data[i]} << 16;
    out.push_back(k_alphabet[(v >> 18) & 63]);
    out.push_back(k_alphabet[(v >> 12) & 63]);
  } else if (rest == 2) {
    std::uint32_t v = (std::uint32_t{data[i]} << 16) | (std::uint32_t{data[i + 1]} << 8);
    out.push_back(k_alphabet[(v >> 18) & 63]);
    out.push_back(k_alphabet[(v >> 12) & 63]);
    out.push_back(k_alphabet[(v >> 6) & 63]);
  }
  return out;
}

std::string hex_to_base64url_nopad(std::string_view hex) {
  std::vector<std::uint8_t> bytes;
  auto nibble = [](char c) -> std::uint8_t { return static_cast<std::uint8_t>(c <= '9' ? c - '0' : c - 'a' + 10); };
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    bytes.push_back(static_cast<std::uint8_t>((nibble(hex[i]) << 4) | nibble(hex[i + 1])));
  }
  return base64url_nopad(bytes);
}

std::size_t levenshtein(std::string_view a, std::string_view b) {
  std::vector<std::size_t> prev(b.size() + 1);
  std::vector<std::size_t> cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) {
    prev[j] = j;
  }
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (const auto& p : parts) {
    if (!out.empty()) {
      out += sep;
    }
    out += p;
  }
  return out;
}

std::string closest(std::string_view word, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_d = std::string::npos;
  for (const auto& c : candidates) {
    std::size_t d = levenshtein(word, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best_d <= std::max<std::size_t>(2, word.size() / 3) ? best : std::string{};
}

std::string rfc3339_utc(std::int64_t seconds) {
  std::time_t t = static_cast<std::time_t>(seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

bool is_lower_hex(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

std::string base64_encode(std::string_view data) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((data.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 2 < data.size(); i += 3) {
    unsigned v = (static_cast<unsigned char>(data[i]) << 16) | (static_cast<unsigned char>(data[i + 1]) << 8) |
                 static_cast<unsigned char>(data[i + 2]);
    out += k[(v >> 18) & 63];
    out += k[(v >> 12) & 63];
    out += k[(v >> 6) & 63];
    out += k[v & 63];
  }
  if (i < data.size()) {
    unsigned v = static_cast<unsigned char>(data[i]) << 16;
    if (i + 1 < data.size()) {
      v |= static_cast<unsigned char>(data[i + 1]) << 8;
    }
    out += k[(v >> 18) & 63];
    out += k[(v >> 12) & 63];
    out += i + 1 < data.size() ? k[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

bool base64_decode(std::string_view text, std::string& out) {
  out.clear();
  unsigned acc = 0;
  int bits = 0;
  for (char c : text) {
    int v;
    if (c >= 'A' && c <= 'Z') {
      v = c - 'A';
    } else if (c >= 'a' && c <= 'z') {
      v = c - 'a' + 26;
    } else if (c >= '0' && c <= '9') {
      v = c - '0' + 52;
    } else if (c == '+' || c == '-') {
      v = 62;
    } else if (c == '/' || c == '_') {
      v = 63;
    } else if (c == '=' || c == '\n' || c == '\r') {
      continue;
    } else {
      return false;
    }
    acc = (acc << 6) | static_cast<unsigned>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xff);
    }
  }
  return true;
}

namespace {

// Length of the well-formed UTF-8 sequence at s[i], or 0.
std::size_t utf8_sequence(std::string_view s, std::size_t i) {
  auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = b(i);
  if (c < 0x80) {
    return 1;
  }
  std::size_t n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
  if (n == 0 || i + n > s.size()) {
    return 0;
  }
  for (std::size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xc0) != 0x80) {
      return 0;
    }
  }
  unsigned char c1 = b(i + 1);
  if ((c == 0xe0 && c1 < 0xa0) || (c == 0xed && c1 > 0x9f) || (c == 0xf0 && c1 < 0x90) || (c == 0xf4 && c1 > 0x8f)) {
    return 0; // overlong, surrogate, or beyond U+10FFFF
  }
  return n;
}

} // namespace

bool is_valid_utf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    std::size_t n = utf8_sequence(s, i);
    if (n == 0) {
      return false;
    }
    i += n;
  }
  return true;
}

std::string hex_encode(std::string_view bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out.push_back(digits[c >> 4]);
    out.push_back(digits[c & 15]);
  }
  return out;
}

std::string escape_bytes(std::string_view s) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < s.size();) {
    std::size_t n = utf8_sequence(s, i);
    auto c = static_cast<unsigned char>(s[i]);
    if (n == 0 || c < 0x20 || c == 0x7f) {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

std::string ascii_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') {
      c = static_cast<char>(c - 'A' + 'a');
    }
  }
  return out;
}

std::optional<std::uint64_t> parse_byte_quantity(std::string_view text) {
  static const std::vector<std::pair<std::string_view, std::uint64_t>> suffixes = {
      {"Ki", 1ULL << 10},        {"Mi", 1ULL << 20},   {"Gi", 1ULL << 30},
      {"Ti", 1ULL << 40},        {"Pi", 1ULL << 50},   {"k", 1000ULL},
      {"M", 1000000ULL},         {"G", 1000000000ULL}, {"T", 1000000000000ULL},
      {"P", 1000000000000000ULL}};
  std::size_t digits = 0;
  while (digits < text.size() && (std::isdigit(static_cast<unsigned char>(text[digits])) != 0 || text[digits] == '.')) {
    ++digits;
  }
  std::string_view number = text.substr(0, digits);
  std::string_view suffix = text.substr(digits);
  std::uint64_t unit = 1;
  if (!suffix.empty()) {
    auto it = std::find_if(suffixes.begin(), suffixes.end(), [&](const auto& s) { return s.first == suffix; });
    if (it == suffixes.end()) {
      return std::nullopt;
    }
    unit = it->second;
  }
  auto dot = number.find('.');
  std::string_view whole = number.substr(0, dot);
  std::string_view frac = dot == std::string_view::npos ? std::string_view{} : number.substr(dot + 1);
  if (whole.empty() || (dot != std::string_view::npos && (frac.empty() || frac.find('.') != std::string_view::npos)) ||
      frac.size() > 9) {
    return std::nullopt;
  }
  // whole * unit + ceil(frac * unit), with overflow caught.
  constexpr std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
  std::uint64_t total = 0;
  for (char c : whole) {
    auto d = static_cast<std::uint64_t>(c - '0');
    if (total > (max - d) / 10) {
      return std::nullopt;
    }
    total = total * 10 + d;
  }
  if (total > max / unit) {
    return std::nullopt;
  }
  total *= unit;
  std::uint64_t num = 0; // frac as num / den, den <= 10^9
  std::uint64_t den = 1;
  for (char c : frac) {
    num = num * 10 + static_cast<std::uint64_t>(c - '0');
    den *= 10;
  }
  // num * unit / den = num * (unit / den) + num * (unit % den) / den; num * (unit % den) < 10^18.
  std::uint64_t part = num * (unit / den) + (num * (unit % den) + den - 1) / den;
  if (total > max - part) {
    return std::nullopt;
  }
  total += part;
  return total;
}

} // namespace util
