#include "util/text.hpp"

namespace util {

std::string_view trim_view(std::string_view s, std::string_view chars) {
  auto b = s.find_first_not_of(chars);
  if (b == std::string_view::npos) {
    return {};
  }
  auto e = s.find_last_not_of(chars);
  return s.substr(b, e - b + 1);
}

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  std::size_t b = 0;
  while (true) {
    std::size_t e = s.find(sep, b);
    out.emplace_back(s.substr(b, e == std::string_view::npos ? std::string_view::npos : e - b));
    if (e == std::string_view::npos) {
      return out;
    }
    b = e + 1;
  }
}

std::string trim(std::string_view s, std::string_view chars) {
  return std::string(trim_view(s, chars));
}

std::string trim_left(std::string_view s, std::string_view chars) {
  auto b = s.find_first_not_of(chars);
  return b == std::string_view::npos ? std::string{} : std::string(s.substr(b));
}

std::string trim_right(std::string_view s, std::string_view chars) {
  auto e = s.find_last_not_of(chars);
  return e == std::string_view::npos ? std::string{} : std::string(s.substr(0, e + 1));
}

std::string shell_quote(std::string_view word) {
  static constexpr std::string_view k_plain =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%+=:,./_-";
  if (!word.empty() && word.find_first_not_of(k_plain) == std::string_view::npos) {
    return std::string(word);
  }
  std::string out = "'";
  for (char c : word) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

} // namespace util
