#include "util/path_match.hpp"

#include <fnmatch.h>

namespace util {

namespace {

bool matches(const std::string& pattern, const std::string& rel_path, const std::string& base) {
  std::string p = pattern;
  while (!p.empty() && p.back() == '/') {
    p.pop_back();
  }
  if (p.find('/') == std::string::npos) {
    return ::fnmatch(p.c_str(), base.c_str(), FNM_PERIOD) == 0 || p == base;
  }
  if (p.front() == '/') {
    p.erase(0, 1);
  }
  return ::fnmatch(p.c_str(), rel_path.c_str(), 0) == 0;
}

std::string base_name(const std::string& rel_path) {
  return rel_path.substr(rel_path.rfind('/') == std::string::npos ? 0 : rel_path.rfind('/') + 1);
}

} // namespace

bool ignored(const std::vector<std::string>& patterns, const std::string& rel_path) {
  std::string base = base_name(rel_path);
  bool out = false;
  for (const auto& pat : patterns) {
    bool negated = !pat.empty() && pat.front() == '!';
    if (matches(negated ? pat.substr(1) : pat, rel_path, base)) {
      out = !negated;
    }
  }
  return out;
}

bool excluded(const std::vector<std::string>& patterns, const std::string& rel_path) {
  std::string base = base_name(rel_path);
  for (const auto& pat : patterns) {
    std::string p = pat;
    while (!p.empty() && p.back() == '/') {
      p.pop_back();
    }
    if (p.find('/') == std::string::npos) {
      if (::fnmatch(p.c_str(), base.c_str(), FNM_PERIOD) == 0 || p == base) {
        return true;
      }
    } else {
      if (p.front() == '/') {
        p.erase(0, 1);
      }
      if (::fnmatch(p.c_str(), rel_path.c_str(), 0) == 0) {
        return true;
      }
    }
  }
  return false;
}

} // namespace util
