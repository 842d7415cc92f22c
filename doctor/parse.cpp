#include "doctor/parse.hpp"
#include "util/text.hpp"

#include <cctype>
#include <cstring>

namespace doctor {

namespace {

std::vector<std::string_view> lines(std::string_view text) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < text.size()) {
    auto j = text.find('\n', i);
    if (j == std::string_view::npos) {
      j = text.size();
    }
    out.push_back(text.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

std::vector<std::string_view> words(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) {
      ++i;
    }
    std::size_t j = i;
    while (j < line.size() && !std::isspace(static_cast<unsigned char>(line[j]))) {
      ++j;
    }
    if (j > i) {
      out.push_back(line.substr(i, j - i));
    }
    i = j;
  }
  return out;
}

bool is_version(std::string_view w) {
  // N.N or N.N.N, digits only
  int dots = 0;
  bool digit = false;
  for (char c : w) {
    if (c == '.') {
      if (!digit) {
        return false;
      }
      ++dots;
      digit = false;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      digit = true;
    } else {
      return false;
    }
  }
  return digit && (dots == 1 || dots == 2);
}

std::uint32_t u32(std::string_view b, std::size_t off) {
  std::uint32_t v = 0;
  std::memcpy(&v, b.data() + off, 4);
  return v;
}

std::string c_string(std::string_view b, std::size_t off) {
  if (off >= b.size()) {
    return {};
  }
  auto end = b.find('\0', off);
  if (end == std::string_view::npos) {
    return {};
  }
  return std::string(b.substr(off, end - off));
}

} // namespace

std::optional<std::string> parse_driver_version(std::string_view text) {
  auto ls = lines(text);
  if (ls.empty()) {
    return std::nullopt;
  }
  for (auto w : words(ls.front())) {
    if (is_version(w)) {
      return std::string(w);
    }
  }
  return std::nullopt;
}

std::map<std::string, int> parse_proc_devices(std::string_view text) {
  std::map<std::string, int> out;
  bool chars = false;
  for (auto l : lines(text)) {
    auto t = util::trim_view(l, util::k_c_space);
    if (t == "Character devices:") {
      chars = true;
      continue;
    }
    if (t == "Block devices:") {
      chars = false;
      continue;
    }
    if (!chars) {
      continue;
    }
    auto w = words(t);
    if (w.size() != 2 || w[0].size() > 6) {
      continue;
    }
    bool numeric = !w[0].empty();
    for (char c : w[0]) {
      numeric = numeric && std::isdigit(static_cast<unsigned char>(c));
    }
    if (numeric) {
      out[std::string(w[1])] = std::stoi(std::string(w[0]));
    }
  }
  return out;
}

std::set<std::string> parse_proc_modules(std::string_view text) {
  std::set<std::string> out;
  for (auto l : lines(text)) {
    auto w = words(l);
    if (!w.empty()) {
      out.insert(std::string(w[0]));
    }
  }
  return out;
}

std::map<std::string, std::string> parse_key_values(std::string_view text) {
  std::map<std::string, std::string> out;
  for (auto l : lines(text)) {
    auto colon = l.find(':');
    if (colon == std::string_view::npos) {
      continue;
    }
    auto k = util::trim_view(l.substr(0, colon), util::k_c_space);
    if (!k.empty()) {
      out[std::string(k)] = std::string(util::trim_view(l.substr(colon + 1), util::k_c_space));
    }
  }
  return out;
}

std::vector<CacheEntry> parse_ld_so_cache(std::string_view b) {
  std::vector<CacheEntry> out;
  std::size_t base = 0;
  const std::string_view old_magic = "ld.so-1.7.0";
  const std::string_view new_magic = "glibc-ld.so.cache1.1";
  if (b.substr(0, old_magic.size()) == old_magic) {
    if (b.size() < 16) {
      return out;
    }
    std::uint64_t n = u32(b, 12);
    std::uint64_t end = 16 + n * 12;
    base = static_cast<std::size_t>((end + 7) & ~std::uint64_t{7});
    if (end > b.size() || base > b.size()) {
      return out;
    }
  }
  if (b.size() < base + 48 || b.substr(base, new_magic.size()) != new_magic) {
    return out;
  }
  std::uint64_t n = u32(b, base + 20);
  std::string_view nb = b.substr(base);
  for (std::uint64_t i = 0; i < n; ++i) {
    std::uint64_t off = 48 + i * 24;
    if (off + 24 > nb.size()) {
      break;
    }
    std::uint32_t key = u32(nb, static_cast<std::size_t>(off + 4));
    std::uint32_t value = u32(nb, static_cast<std::size_t>(off + 8));
    CacheEntry e{c_string(nb, key), c_string(nb, value)};
    if (!e.name.empty() && !e.path.empty()) {
      out.push_back(std::move(e));
    }
  }
  return out;
}

std::optional<std::string> parse_require_cuda(std::string_view value) {
  for (auto w : words(value)) {
    if (w.substr(0, 6) == "cuda>=" && is_version(w.substr(6))) {
      return std::string(w.substr(6));
    }
  }
  return std::nullopt;
}

std::map<std::string, std::vector<std::string>> parse_requires(std::string_view value) {
  std::map<std::string, std::vector<std::string>> out;
  std::size_t i = 0;
  while (i <= value.size()) {
    auto j = value.find(',', i);
    auto item =
        util::trim_view(value.substr(i, j == std::string_view::npos ? std::string_view::npos : j - i), util::k_c_space);
    auto eq = item.find('=');
    if (eq != std::string_view::npos && eq > 0 && eq + 1 < item.size()) {
      out[std::string(util::trim_view(item.substr(0, eq), util::k_c_space))].push_back(
          std::string(util::trim_view(item.substr(eq + 1), util::k_c_space)));
    }
    if (j == std::string_view::npos) {
      break;
    }
    i = j + 1;
  }
  return out;
}

std::optional<std::string> version_from_soname(std::string_view file_name, std::string_view stem) {
  std::string prefix = std::string(stem) + ".so.";
  if (file_name.substr(0, prefix.size()) != prefix) {
    return std::nullopt;
  }
  auto v = file_name.substr(prefix.size());
  if (!is_version(v)) {
    return std::nullopt;
  }
  return std::string(v);
}

} // namespace doctor
