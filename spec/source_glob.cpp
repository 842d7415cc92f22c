#include "spec/source_glob.hpp"

#include "util/path_match.hpp"
#include "util/text.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <system_error>

namespace spec {

namespace fs = std::filesystem;

bool has_wildcard(const std::string& from) {
  for (std::size_t i = 0; i < from.size(); ++i) {
    if (from[i] == '\\') {
      ++i;
    } else if (from[i] == '*' || from[i] == '?' || from[i] == '[') {
      return true;
    }
  }
  return false;
}

namespace {

// The pattern's parts between '/', without empty ones and ".".
std::vector<std::string> parts_of(const std::string& pattern) {
  std::vector<std::string> parts = util::split(pattern, '/');
  parts.erase(std::remove_if(parts.begin(), parts.end(), [](const std::string& p) { return p.empty() || p == "."; }),
              parts.end());
  return parts;
}

// A literal part with its escapes removed ("a\*b" names the file "a*b").
std::string unescaped(const std::string& part) {
  std::string out;
  for (std::size_t i = 0; i < part.size(); ++i) {
    if (part[i] == '\\' && i + 1 < part.size()) {
      ++i;
    }
    out += part[i];
  }
  return out;
}

} // namespace

std::vector<fs::path> glob_sources(const std::string& pattern, const fs::path& dir,
                                   const std::vector<std::string>& ignore) {
  const bool absolute = !pattern.empty() && pattern[0] == '/';
  // (path on this machine, path relative to dir: what .paddleimageignore is matched against)
  std::vector<std::pair<fs::path, std::string>> level = {{absolute ? fs::path("/") : dir, ""}};
  const std::vector<std::string> parts = parts_of(pattern);
  for (std::size_t k = 0; k < parts.size(); ++k) {
    const std::string& part = parts[k];
    const bool last = k + 1 == parts.size();
    std::vector<std::pair<fs::path, std::string>> next;
    for (const auto& entry : level) {
      const fs::path& at = entry.first;
      const std::string& rel = entry.second; // a structured binding no lambda may capture
      std::error_code ec;
      auto keep = [&](const fs::path& p, const std::string& name) {
        std::string r = rel.empty() ? name : rel + "/" + name;
        if (!absolute && util::ignored(ignore, r)) {
          return;
        }
        if (!last && !fs::is_directory(p, ec)) {
          return; // a part after it needs a directory
        }
        next.emplace_back(p, r);
      };
      if (!has_wildcard(part)) {
        std::string name = unescaped(part);
        fs::path p = at / name;
        if (name == ".." || fs::exists(fs::symlink_status(p, ec))) {
          keep(p, name);
        }
        continue;
      }
      std::vector<std::string> names;
      for (fs::directory_iterator it(at, ec), end; !ec && it != end; it.increment(ec)) {
        names.push_back(it->path().filename().string());
      }
      std::sort(names.begin(), names.end());
      for (const auto& name : names) {
        if (::fnmatch(part.c_str(), name.c_str(), 0) == 0) {
          keep(at / name, name);
        }
      }
    }
    level = std::move(next);
  }
  std::vector<fs::path> out;
  for (const auto& [p, rel] : level) {
    out.push_back(p.lexically_normal());
  }
  return out;
}

} // namespace spec
