#include "python/pep440.hpp"
#include "util/encoding.hpp"
#include "util/text.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <stdexcept>

namespace python::pep440 {

namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

bool is_sep(char c) {
  return c == '.' || c == '-' || c == '_';
}

// A hand-written reader for the PEP 440 grammar (appendix B of the PEP): each part is
// optional and in a fixed order, so one left-to-right pass with a little look-ahead
// accepts the same texts the PEP's regular expression does.
class Reader {
public:
  explicit Reader(std::string_view s) : m_s(s) {}

  bool at_end() const { return m_i == m_s.size(); }
  char peek(std::size_t k = 0) const { return m_i + k < m_s.size() ? m_s[m_i + k] : '\0'; }
  std::size_t pos() const { return m_i; }
  void seek(std::size_t i) { m_i = i; }
  void skip(std::size_t n = 1) { m_i += n; }

  bool eat(std::string_view word) {
    if (m_s.substr(m_i, word.size()) == word) {
      m_i += word.size();
      return true;
    }
    return false;
  }

  // Digits at the cursor as a number; false when there are none or they overflow.
  bool number(long long& out) {
    std::size_t j = m_i;
    while (j < m_s.size() && is_digit(m_s[j])) {
      ++j;
    }
    if (j == m_i) {
      return false;
    }
    auto [end, ec] = std::from_chars(m_s.data() + m_i, m_s.data() + j, out);
    if (ec != std::errc() || end != m_s.data() + j) {
      m_overflow = true;
      return false;
    }
    m_i = j;
    return true;
  }
  bool overflowed() const { return m_overflow; }

  // After a pre/post/dev label: an optional separator and an optional number. The PEP's
  // expression lets the separator stand even with no number after it ("1.0a." is
  // 1.0a0), so a separator is consumed either way.
  long long label_number() {
    long long n = 0;
    if (is_sep(peek()) && is_digit(peek(1))) {
      skip();
    } else if (is_sep(peek())) {
      skip();
      return 0;
    }
    if (is_digit(peek()) && !number(n)) {
      return -1;
    }
    return n;
  }

  // An optional separator then one of `labels` (longest spellings listed first); the
  // canonical spelling, or "" with the cursor unmoved.
  std::string label(std::initializer_list<std::pair<std::string_view, std::string_view>> labels) {
    std::size_t start = m_i;
    if (is_sep(peek())) {
      skip();
    }
    for (const auto& [spelling, canonical] : labels) {
      if (eat(spelling)) {
        return std::string(canonical);
      }
    }
    m_i = start;
    return {};
  }

  std::string_view rest() const { return m_s.substr(m_i); }

private:
  std::string_view m_s; // the lower-cased text, owned by the caller
  std::size_t m_i = 0;
  bool m_overflow = false;
};

bool valid_local(const std::vector<std::string>& segments) {
  return std::all_of(segments.begin(), segments.end(), [](const std::string& seg) {
    return !seg.empty() &&
           std::all_of(seg.begin(), seg.end(), [](char c) { return is_digit(c) || (c >= 'a' && c <= 'z'); });
  });
}

std::vector<std::string> split_local(std::string_view text) {
  std::vector<std::string> out(1);
  for (char c : text) {
    if (is_sep(c)) {
      out.emplace_back();
    } else {
      out.back().push_back(c);
    }
  }
  for (auto& seg : out) {
    if (!seg.empty() && std::all_of(seg.begin(), seg.end(), is_digit)) {
      seg.erase(0, std::min(seg.find_first_not_of('0'), seg.size() - 1));
    }
  }
  return out;
}

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), is_digit);
}

int compare_numbers(long long a, long long b) {
  return a < b ? -1 : (a > b ? 1 : 0);
}

// Release segments compare as if the shorter were padded with zeros (1.0 == 1.0.0).
int compare_release(const std::vector<long long>& a, const std::vector<long long>& b) {
  for (std::size_t k = 0; k < std::max(a.size(), b.size()); ++k) {
    long long x = k < a.size() ? a[k] : 0;
    long long y = k < b.size() ? b[k] : 0;
    if (int c = compare_numbers(x, y)) {
      return c;
    }
  }
  return 0;
}

// Rank of the pre-release part: a development release of the release itself (1.0.dev1)
// sorts before every pre-release of it, no pre-release after all of them.
int compare_pre(const Version& a, const Version& b) {
  auto rank = [](const Version& v) {
    if (v.pre) {
      return 1;
    }
    return !v.post && v.dev ? 0 : 2;
  };
  if (int c = compare_numbers(rank(a), rank(b))) {
    return c;
  }
  if (!a.pre) {
    return 0;
  }
  if (a.pre->first != b.pre->first) {
    return a.pre->first < b.pre->first ? -1 : 1; // "a" < "b" < "rc"
  }
  return compare_numbers(a.pre->second, b.pre->second);
}

int compare_local(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  if (a.empty() != b.empty()) {
    return a.empty() ? -1 : 1;
  }
  for (std::size_t k = 0; k < std::min(a.size(), b.size()); ++k) {
    bool na = all_digits(a[k]);
    bool nb = all_digits(b[k]);
    if (na != nb) {
      return na ? 1 : -1;
    }
    if (na) {
      // Without leading zeros, a longer digit string is the larger number.
      if (a[k].size() != b[k].size()) {
        return a[k].size() < b[k].size() ? -1 : 1;
      }
    }
    if (int c = a[k].compare(b[k])) {
      return c < 0 ? -1 : 1;
    }
  }
  return compare_numbers(static_cast<long long>(a.size()), static_cast<long long>(b.size()));
}

// The release segment of v, padded with zeros, starts with `prefix` (same epoch): the
// "==X.Y.*" match, which ignores everything after the release.
bool prefix_match(const Version& v, long long epoch, const std::vector<long long>& prefix) {
  if (v.epoch != epoch) {
    return false;
  }
  for (std::size_t k = 0; k < prefix.size(); ++k) {
    if ((k < v.release.size() ? v.release[k] : 0) != prefix[k]) {
      return false;
    }
  }
  return true;
}

bool ends_with_wildcard(std::string_view s) {
  return s.size() >= 2 && s.substr(s.size() - 2) == ".*";
}

constexpr std::array<std::string_view, 8> operators = {"===", "~=", "==", "!=", "<=", ">=", "<", ">"};

[[noreturn]] void bad_specifier(std::string_view text, const std::string& why) {
  throw std::invalid_argument("invalid version specifier '" + std::string(text) + "': " + why);
}

// The version of a clause, checked against what its operator allows; `wildcard` tells
// whether it ended in ".*" (which is then not part of the returned version).
Version clause_version(const Specifier& s, std::string_view text, bool& wildcard) {
  std::string_view v = s.version;
  if (v.empty()) {
    bad_specifier(text, "no version after '" + s.op + "'");
  }
  if (std::any_of(v.begin(), v.end(), is_space)) {
    bad_specifier(text, "a version cannot contain spaces");
  }
  wildcard = ends_with_wildcard(v);
  if (wildcard && s.op != "==" && s.op != "!=") {
    bad_specifier(text, "'.*' is only allowed with == and !=");
  }
  auto parsed = Version::parse(wildcard ? v.substr(0, v.size() - 2) : v);
  if (!parsed) {
    bad_specifier(text, "'" + std::string(v) + "' is not a PEP 440 version");
  }
  if (wildcard && (parsed->pre || parsed->post || parsed->dev || !parsed->local.empty())) {
    bad_specifier(text, "'.*' must follow the release numbers directly (as in ==2.6.*)");
  }
  if (!parsed->local.empty() && s.op != "==" && s.op != "!=") {
    bad_specifier(text, "a local version label is only allowed with == and !=");
  }
  if (s.op == "~=" && parsed->release.size() < 2) {
    bad_specifier(text, "'~=' needs at least two release numbers (~=2.2 means >=2.2,==2.*)");
  }
  return *parsed;
}

} // namespace

std::optional<Version> Version::parse(std::string_view text) {
  const std::string lowered = util::ascii_lower(util::trim_view(text, util::k_c_space));
  Reader r(lowered);
  Version v;
  r.eat("v");
  long long n = 0;
  if (!r.number(n)) {
    return std::nullopt;
  }
  if (r.peek() == '!') {
    v.epoch = n;
    r.skip();
    if (!r.number(n)) {
      return std::nullopt;
    }
  }
  v.release.push_back(n);
  while (r.peek() == '.' && is_digit(r.peek(1))) {
    r.skip();
    if (!r.number(n)) {
      return std::nullopt;
    }
    v.release.push_back(n);
  }
  std::string pre = r.label({{"alpha", "a"},
                             {"a", "a"},
                             {"beta", "b"},
                             {"b", "b"},
                             {"preview", "rc"},
                             {"pre", "rc"},
                             {"rc", "rc"},
                             {"c", "rc"}});
  if (!pre.empty()) {
    long long num = r.label_number();
    if (num < 0) {
      return std::nullopt;
    }
    v.pre = std::pair{pre, num};
  }
  if (r.peek() == '-' && is_digit(r.peek(1))) {
    r.skip(); // "1.0-1": the implicit post-release spelling
    if (!r.number(n)) {
      return std::nullopt;
    }
    v.post = n;
  } else if (!r.label({{"post", "post"}, {"rev", "post"}, {"r", "post"}}).empty()) {
    long long num = r.label_number();
    if (num < 0) {
      return std::nullopt;
    }
    v.post = num;
  }
  if (!r.label({{"dev", "dev"}}).empty()) {
    long long num = r.label_number();
    if (num < 0) {
      return std::nullopt;
    }
    v.dev = num;
  }
  if (r.peek() == '+') {
    r.skip();
    v.local = split_local(r.rest());
    if (!valid_local(v.local)) {
      return std::nullopt;
    }
    r.skip(r.rest().size());
  }
  if (!r.at_end() || r.overflowed()) {
    return std::nullopt;
  }
  return v;
}

std::string Version::public_str() const {
  std::string out = epoch != 0 ? std::to_string(epoch) + "!" : "";
  for (std::size_t k = 0; k < release.size(); ++k) {
    out += (k == 0 ? "" : ".") + std::to_string(release[k]);
  }
  if (pre) {
    out += pre->first + std::to_string(pre->second);
  }
  if (post) {
    out += ".post" + std::to_string(*post);
  }
  if (dev) {
    out += ".dev" + std::to_string(*dev);
  }
  return out;
}

std::string Version::str() const {
  std::string out = public_str();
  for (std::size_t k = 0; k < local.size(); ++k) {
    out += (k == 0 ? "+" : ".") + local[k];
  }
  return out;
}

Version Version::public_version() const {
  Version v = *this;
  v.local.clear();
  return v;
}

Version Version::base_version() const {
  Version v;
  v.epoch = epoch;
  v.release = release;
  return v;
}

bool Version::is_prerelease() const {
  return pre.has_value() || dev.has_value();
}

bool Version::is_postrelease() const {
  return post.has_value();
}

int compare(const Version& a, const Version& b) {
  if (int c = compare_numbers(a.epoch, b.epoch)) {
    return c;
  }
  if (int c = compare_release(a.release, b.release)) {
    return c;
  }
  if (int c = compare_pre(a, b)) {
    return c;
  }
  // No post-release sorts first, no dev release last.
  if (int c = compare_numbers(a.post ? *a.post : -1, b.post ? *b.post : -1)) {
    return c;
  }
  if (a.dev.has_value() != b.dev.has_value()) {
    return a.dev ? -1 : 1;
  }
  if (a.dev) {
    if (int c = compare_numbers(*a.dev, *b.dev)) {
      return c;
    }
  }
  return compare_local(a.local, b.local);
}

Specifier Specifier::parse(std::string_view text) {
  std::string_view t = util::trim_view(text, util::k_c_space);
  Specifier s;
  for (auto op : operators) {
    if (t.substr(0, op.size()) == op) {
      s.op = std::string(op);
      break;
    }
  }
  if (s.op.empty()) {
    bad_specifier(text, "expected an operator (==, !=, <=, >=, <, >, ~= or ===) before the version");
  }
  s.version = std::string(util::trim_view(t.substr(s.op.size()), util::k_c_space));
  if (s.op == "===") {
    // Arbitrary equality compares text, so any text without spaces or separators is
    // allowed.
    if (s.version.empty() || s.version.find_first_of(" \t,;()") != std::string::npos) {
      bad_specifier(text, "'===' needs a version without spaces, commas or parentheses");
    }
    return s;
  }
  bool wildcard = false;
  clause_version(s, text, wildcard);
  return s;
}

bool Specifier::contains(const Version& v) const {
  if (op == "===") {
    return util::ascii_lower(v.str()) == util::ascii_lower(util::trim_view(version, util::k_c_space));
  }
  bool wildcard = false;
  Version spec = clause_version(*this, str(), wildcard);
  if (op == "==" || op == "!=") {
    bool equal = false;
    if (wildcard) {
      equal = prefix_match(v, spec.epoch, spec.release);
    } else if (spec.local.empty()) {
      equal = compare(v.public_version(), spec) == 0; // "==2.6.1" accepts 2.6.1+cu118
    } else {
      equal = compare(v, spec) == 0;
    }
    return op == "==" ? equal : !equal;
  }
  if (op == "<=") {
    return compare(v.public_version(), spec) <= 0;
  }
  if (op == ">=") {
    return compare(v.public_version(), spec) >= 0;
  }
  if (op == "~=") {
    std::vector<long long> prefix(spec.release.begin(), spec.release.end() - 1);
    return compare(v.public_version(), spec) >= 0 && prefix_match(v, spec.epoch, prefix);
  }
  bool same_base = compare(v.base_version(), spec.base_version()) == 0;
  if (op == "<") {
    // "<3.0" must not admit 3.0rc1: a pre-release of the bound is not "less" in the
    // sense a user means, unless the bound is itself a pre-release.
    return compare(v, spec) < 0 && !(v.is_prerelease() && !spec.is_prerelease() && same_base);
  }
  if (op == ">") {
    // Likewise ">3.0" does not admit 3.0.post1 or 3.0+local.
    return compare(v, spec) > 0 && !(v.is_postrelease() && !spec.is_postrelease() && same_base) &&
           !(!v.local.empty() && same_base);
  }
  throw std::invalid_argument("invalid version specifier '" + str() + "': unknown operator '" + op + "'");
}

bool Specifier::names_prerelease() const {
  if (op == "!=") {
    return false;
  }
  std::string_view v = version;
  if (op == "==" && ends_with_wildcard(v)) {
    v.remove_suffix(2);
  }
  auto parsed = Version::parse(v);
  return parsed && parsed->is_prerelease();
}

SpecifierSet SpecifierSet::parse(std::string_view text) {
  SpecifierSet set;
  std::size_t i = 0;
  while (i <= text.size()) {
    std::size_t j = std::min(text.find(',', i), text.size());
    // Empty clauses (">=1.0,", ">=1.0,,<2") are skipped, as packaging does: metadata
    // in the wild has them and pip installs it.
    if (std::string_view clause = util::trim_view(text.substr(i, j - i), util::k_c_space); !clause.empty()) {
      set.items.push_back(Specifier::parse(clause));
    }
    i = j + 1;
  }
  return set;
}

bool SpecifierSet::contains(const Version& v, bool prereleases) const {
  if (v.is_prerelease() && !prereleases &&
      std::none_of(items.begin(), items.end(), [](const Specifier& s) { return s.names_prerelease(); })) {
    return false;
  }
  return std::all_of(items.begin(), items.end(), [&](const Specifier& s) { return s.contains(v); });
}

std::string SpecifierSet::str() const {
  std::string out;
  for (const auto& s : items) {
    out += (out.empty() ? "" : ",") + s.str();
  }
  return out;
}

} // namespace python::pep440
