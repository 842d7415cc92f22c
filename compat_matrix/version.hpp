#pragma once
// Dotted versions ("12.6", "525.60.13", "3.0.0b1") and ranges (">=2.6,<3.1").
#include <compare>
#include <string>
#include <vector>

namespace compat {

struct Version {
  std::vector<long> parts; // numeric components
  int pre_rank = 3;        // a < b < rc < final (0, 1, 2, 3)
  long pre_number = 0;
  std::string text;

  // Throws util::Error(input) naming `what` when malformed.
  static Version parse(const std::string& text, const std::string& what = "version");
  static bool valid(const std::string& text);
  std::strong_ordering operator<=>(const Version& other) const;
  bool operator==(const Version& other) const { return (*this <=> other) == 0; }
  int major() const { return parts.empty() ? 0 : static_cast<int>(parts[0]); }
  // "12.6" matches "12.6.2" and "12" matches "12.x" (prefix on components).
  bool has_prefix(const Version& prefix) const;
};

struct VersionRange {
  struct Clause {
    std::string op; // ">=", ">", "<=", "<", "==", "!="
    Version version;
  };
  std::vector<Clause> clauses; // all must hold; empty = any
  std::string text;
  static VersionRange parse(const std::string& text, const std::string& what = "version range");
  // "==" (or a bare version) matches every version it is a prefix of: "2.6" is 2.6.x.
  bool contains(const Version& v) const;
  // A clause names a pre-release (3.0.0b1): pre-releases are then candidates.
  bool admits_prereleases() const;
  // No version can satisfy it (">=3.0,<2.0").
  bool empty() const;
};

// "11.0-11.8" or "12.2": inclusive span of major.minor versions.
struct VersionSpan {
  Version low;
  Version high;
  static VersionSpan parse(const std::string& text, const std::string& what);
  bool contains(const Version& v) const { return low <= v && v <= high; }
};

} // namespace compat
