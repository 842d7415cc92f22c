#include "debian/version.hpp"

#include "util/error.hpp"
#include "util/text.hpp"

#include <cctype>
#include <regex>

namespace debian {

using util::Error;
using util::ErrorKind;

namespace {

// dpkg's order for the non-digit parts: '~' first, then the end of the part, then
// letters, then everything else by its code.
int order(char c) {
  if (std::isdigit(static_cast<unsigned char>(c)) != 0) {
    return 0;
  }
  if (std::isalpha(static_cast<unsigned char>(c)) != 0) {
    return static_cast<unsigned char>(c);
  }
  if (c == '~') {
    return -1;
  }
  return c != 0 ? static_cast<unsigned char>(c) + 256 : 0;
}

int compare_part(std::string_view a, std::string_view b) {
  std::size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    int first_diff = 0;
    while ((i < a.size() && std::isdigit(static_cast<unsigned char>(a[i])) == 0) ||
           (j < b.size() && std::isdigit(static_cast<unsigned char>(b[j])) == 0)) {
      int ac = i < a.size() ? order(a[i]) : 0;
      int bc = j < b.size() ? order(b[j]) : 0;
      if (ac != bc) {
        return ac - bc;
      }
      ++i;
      ++j;
    }
    while (i < a.size() && a[i] == '0') {
      ++i;
    }
    while (j < b.size() && b[j] == '0') {
      ++j;
    }
    while (i < a.size() && j < b.size() && std::isdigit(static_cast<unsigned char>(a[i])) != 0 &&
           std::isdigit(static_cast<unsigned char>(b[j])) != 0) {
      if (first_diff == 0) {
        first_diff = a[i] - b[j];
      }
      ++i;
      ++j;
    }
    if (i < a.size() && std::isdigit(static_cast<unsigned char>(a[i])) != 0) {
      return 1;
    }
    if (j < b.size() && std::isdigit(static_cast<unsigned char>(b[j])) != 0) {
      return -1;
    }
    if (first_diff != 0) {
      return first_diff;
    }
  }
  return 0;
}

struct Parts {
  long epoch = 0;
  std::string_view upstream, revision;
};

Parts split_version(std::string_view v) {
  Parts p;
  auto colon = v.find(':');
  if (colon != std::string_view::npos) {
    p.epoch = std::strtol(std::string(v.substr(0, colon)).c_str(), nullptr, 10);
    v.remove_prefix(colon + 1);
  }
  auto dash = v.rfind('-');
  p.upstream = dash == std::string_view::npos ? v : v.substr(0, dash);
  p.revision = dash == std::string_view::npos ? std::string_view() : v.substr(dash + 1);
  return p;
}

} // namespace

int compare_versions(std::string_view a, std::string_view b) {
  Parts x = split_version(a), y = split_version(b);
  if (x.epoch != y.epoch) {
    return x.epoch < y.epoch ? -1 : 1;
  }
  int c = compare_part(x.upstream, y.upstream);
  return c != 0 ? c : compare_part(x.revision, y.revision);
}

std::vector<Relation> parse_relations(std::string_view field, const std::string& what) {
  static const std::regex one(R"(^([a-z0-9][a-z0-9+.-]*)(?::([a-z0-9-]+))?(?:\s*\(\s*(<<|<=|=|>=|>>|<|>)\s*)"
                              R"(([A-Za-z0-9.+~:-]+)\s*\))?$)");
  std::vector<Relation> out;
  for (const auto& raw : util::split(std::string(field), ',')) {
    std::string t = util::trim(raw);
    // A multi-line field's continuation lines carry their newline.
    for (auto& c : t) {
      if (c == '\n' || c == '\t') {
        c = ' ';
      }
    }
    t = util::trim(t);
    if (t.empty()) {
      continue;
    }
    std::smatch m;
    if (t.find('|') != std::string::npos || !std::regex_match(t, m, one)) {
      throw Error(ErrorKind::input, what + ": '" + t.substr(0, 120) + "' is not a package relation dpkg accepts here",
                  "a relation is NAME[:ARCH] [(OP VERSION)], OP one of << <= = >= >>, without alternatives");
    }
    Relation r{m[1], m[2], m[3], m[4]};
    // dpkg still reads the obsolete '<' and '>' as '<=' and '>='.
    if (r.op == "<") {
      r.op = "<=";
    } else if (r.op == ">") {
      r.op = ">=";
    }
    out.push_back(r);
  }
  return out;
}

bool relation_matches(const Relation& r, const std::string& name, const std::string& version) {
  if (r.name != name) {
    return false;
  }
  if (r.op.empty()) {
    return true;
  }
  int c = compare_versions(version, r.version);
  if (r.op == "<<") {
    return c < 0;
  }
  if (r.op == "<=") {
    return c <= 0;
  }
  if (r.op == "=") {
    return c == 0;
  }
  if (r.op == ">=") {
    return c >= 0;
  }
  return c > 0;
}

} // namespace debian
