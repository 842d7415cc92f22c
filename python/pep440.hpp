#pragma once
// PEP 440 versions and version specifiers, as pip (the "packaging" library) reads them:
// picking a wheel for a requirement or a Requires-Python string must agree with what
// pip would pick, or an image differs from the one `pip install` builds.
#include <compare>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace python::pep440 {

struct Version {
  long long epoch = 0;
  std::vector<long long> release;
  std::optional<std::pair<std::string, long long>> pre; // "a", "b" or "rc"
  std::optional<long long> post;
  std::optional<long long> dev;
  // Local label segments, lower-cased; numeric ones without leading zeros ("+01" is
  // "+1", as packaging compares them as numbers).
  std::vector<std::string> local;

  // Any spelling PEP 440 allows (leading "v", alpha/beta/c/pre/preview, rev/r, the
  // implicit post-release "1.0-1", separators . - _ or none, surrounding whitespace);
  // nullopt when the text is not a PEP 440 version or a number does not fit 64 bits.
  static std::optional<Version> parse(std::string_view text);

  // Canonical form: "1.0rc1", "2.6.1.post118", "1!2.0.dev3", "2.6.1+cu118". Release
  // numbers are kept as given ("1.0.0" stays "1.0.0"; equality ignores trailing zeros).
  std::string str() const;
  std::string public_str() const; // str() without the local label
  Version public_version() const; // the version without its local label
  Version base_version() const;   // epoch and release only
  bool is_prerelease() const;     // a pre-release or a development release
  bool is_postrelease() const;
};

// PEP 440 ordering: 1.0.dev0 < 1.0a1.dev1 < 1.0a1 < 1.0 < 1.0+local < 1.0.post1.dev1 <
// 1.0.post1. Local labels: a numeric segment sorts above an alphanumeric one, and
// with equal leading segments the label with more segments is greater.
int compare(const Version& a, const Version& b);
inline bool operator==(const Version& a, const Version& b) {
  return compare(a, b) == 0;
}
inline std::strong_ordering operator<=>(const Version& a, const Version& b) {
  return compare(a, b) <=> 0;
}

// One clause of a specifier set: op is one of == != <= >= < > ~= ===, version the text
// after it ("2.6.*" for a prefix match).
struct Specifier {
  std::string op;
  std::string version;

  // "==2.6.*", "~= 1.4.2", ">=3.8": throws std::invalid_argument for an unknown
  // operator or a version the operator does not allow (a local label or ".*" outside
  // == and !=, "~=" with a single release number).
  static Specifier parse(std::string_view text);

  // The operator alone. Whether pre-releases are admitted at all is the set's decision
  // (SpecifierSet::contains), as in packaging. Throws std::invalid_argument when the
  // version is not valid for the operator (only possible when built by hand).
  bool contains(const Version& v) const;
  // Whether this clause names a pre-release, which lets a set admit pre-releases
  // (">=1.0b1" does; "!=1.0b1" does not).
  bool names_prerelease() const;
  std::string str() const { return op + version; }
};

struct SpecifierSet {
  std::vector<Specifier> items;

  // Comma-separated clauses; "" is the empty set. Throws std::invalid_argument naming
  // the bad clause.
  static SpecifierSet parse(std::string_view text);

  // Every clause contains v. Pre-releases (and development releases) are excluded unless
  // `prereleases` is set or a clause names a pre-release; this holds for the empty set
  // too, which otherwise contains everything.
  bool contains(const Version& v, bool prereleases = false) const;
  std::string str() const; // clauses in written order, joined by ","
  bool empty() const { return items.empty(); }
};

} // namespace python::pep440
