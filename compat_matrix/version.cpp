#include "compat_matrix/version.hpp"

#include "util/error.hpp"

#include <algorithm>
#include <regex>

namespace compat {

namespace {

const std::regex& version_re() {
  static const std::regex re("([0-9]+(?:\\.[0-9]+)*)(?:(a|b|rc)([0-9]+))?");
  return re;
}

} // namespace

bool Version::valid(const std::string& text) {
  return std::regex_match(text, version_re());
}

Version Version::parse(const std::string& text, const std::string& what) {
  std::smatch m;
  if (!std::regex_match(text, m, version_re())) {
    throw util::Error(util::ErrorKind::input, what + ": '" + text + "' is not a version",
                      "use dotted numbers, e.g. 12.6, 535.104.05 or 3.0.0b1");
  }
  Version v;
  v.text = text;
  std::string nums = m[1];
  std::size_t i = 0;
  while (i <= nums.size()) {
    auto j = nums.find('.', i);
    v.parts.push_back(std::stol(nums.substr(i, j == std::string::npos ? std::string::npos : j - i)));
    if (j == std::string::npos) {
      break;
    }
    i = j + 1;
  }
  if (m[2].matched) {
    v.pre_rank = m[2] == "a" ? 0 : m[2] == "b" ? 1 : 2;
    v.pre_number = std::stol(m[3]);
  }
  return v;
}

std::strong_ordering Version::operator<=>(const Version& o) const {
  std::size_t n = std::max(parts.size(), o.parts.size());
  for (std::size_t i = 0; i < n; ++i) {
    long a = i < parts.size() ? parts[i] : 0;
    long b = i < o.parts.size() ? o.parts[i] : 0;
    if (a != b) {
      return a <=> b;
    }
  }
  if (pre_rank != o.pre_rank) {
    return pre_rank <=> o.pre_rank;
  }
  return pre_number <=> o.pre_number;
}

bool Version::has_prefix(const Version& p) const {
  if (p.parts.size() > parts.size()) {
    return false;
  }
  for (std::size_t i = 0; i < p.parts.size(); ++i) {
    if (parts[i] != p.parts[i]) {
      return false;
    }
  }
  return true;
}

VersionRange VersionRange::parse(const std::string& text, const std::string& what) {
  VersionRange r;
  r.text = text;
  std::size_t i = 0;
  while (i <= text.size()) {
    auto j = text.find(',', i);
    std::string clause = text.substr(i, j == std::string::npos ? std::string::npos : j - i);
    clause.erase(0, clause.find_first_not_of(' '));
    clause.erase(clause.find_last_not_of(' ') + 1);
    if (!clause.empty()) {
      std::string op = "==";
      for (const char* candidate : {">=", "<=", "==", "!=", ">", "<"}) {
        if (clause.rfind(candidate, 0) == 0) {
          op = candidate;
          clause = clause.substr(op.size());
          break;
        }
      }
      clause.erase(0, clause.find_first_not_of(' '));
      if (!Version::valid(clause)) {
        throw util::Error(util::ErrorKind::input, what + ": '" + text + "' is not a version or range",
                          "e.g. 3.0.0, >=2.6, or >=2.6,<3.1");
      }
      r.clauses.push_back(Clause{op, Version::parse(clause, what)});
    }
    if (j == std::string::npos) {
      break;
    }
    i = j + 1;
  }
  return r;
}

bool VersionRange::admits_prereleases() const {
  return std::any_of(clauses.begin(), clauses.end(), [](const Clause& c) { return c.version.pre_rank != 3; });
}

bool VersionRange::empty() const {
  // The tightest lower and upper bound; equal bounds leave a version only when both
  // include it.
  const Clause* low = nullptr;
  const Clause* high = nullptr;
  for (const auto& c : clauses) {
    if (c.op == ">=" || c.op == ">") {
      if (low == nullptr || c.version > low->version || (c.version == low->version && c.op == ">")) {
        low = &c;
      }
    } else if (c.op == "<=" || c.op == "<") {
      if (high == nullptr || c.version < high->version || (c.version == high->version && c.op == "<")) {
        high = &c;
      }
    }
  }
  if (low == nullptr || high == nullptr) {
    return false;
  }
  auto cmp = low->version <=> high->version;
  return cmp > 0 || (cmp == 0 && (low->op == ">" || high->op == "<"));
}

// "==2.6" means any 2.6.x (a partial version names the newest patch within it), but
// "==3.0.0" is not met by its pre-release 3.0.0b2.
static bool matches_exactly(const Version& v, const Version& want) {
  if (want.pre_rank != 3) {
    return v == want;
  }
  if (!v.has_prefix(want)) {
    return v == want; // "2.6" == "2.6.0": padded zeros are equal
  }
  return v.pre_rank == 3 || want.parts.size() < v.parts.size();
}

bool VersionRange::contains(const Version& v) const {
  for (const auto& c : clauses) {
    auto cmp = v <=> c.version;
    bool ok = c.op == ">="   ? cmp >= 0
              : c.op == ">"  ? cmp > 0
              : c.op == "<=" ? cmp <= 0
              : c.op == "<"  ? cmp < 0
              : c.op == "!=" ? !matches_exactly(v, c.version)
                             : matches_exactly(v, c.version);
    if (!ok) {
      return false;
    }
  }
  return true;
}

VersionSpan VersionSpan::parse(const std::string& text, const std::string& what) {
  auto dash = text.find('-');
  VersionSpan s;
  s.low = Version::parse(text.substr(0, dash), what);
  s.high = dash == std::string::npos ? s.low : Version::parse(text.substr(dash + 1), what);
  if (s.high < s.low) {
    throw util::Error(util::ErrorKind::input, what + ": span '" + text + "' runs backwards");
  }
  return s;
}

} // namespace compat
