#pragma once
// PEP 508 dependency specifiers ("requests[socks]>=2.31; python_version >= '3.8'") and
// their environment markers, evaluated for the image's interpreter rather than the
// machine running the build: the build host's Python is irrelevant to what the image
// needs.
#include "python/pep440.hpp"
#include "python/wheel.hpp"

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>

namespace python {

class MarkerParser;

// An environment marker, parsed to a tree and evaluated against an environment.
class Marker {
public:
  // Throws std::invalid_argument("invalid marker '...': expected ... at column N"),
  // the column counted from 1.
  static Marker parse(std::string_view text);

  // env maps marker variables (python_version, python_full_version, os_name,
  // sys_platform, platform_system, platform_machine, platform_release,
  // platform_version, platform_python_implementation, implementation_name,
  // implementation_version) to their values; the legacy dotted names (os.name,
  // sys.platform, platform.machine, ...) read the same entries.
  //
  // `extra` is not looked up in env: `extra == "x"` holds when the normalised x is
  // among `extras` (normalised names), `extra != "x"` when it is not; other operators
  // hold when they hold for some extra ("" standing in when there are none). So with
  // no extras every `extra == ...` clause is false.
  //
  // Version operators compare as PEP 440 specifiers (pre-releases admitted) when both
  // sides are versions ("3.10" > "3.9"), otherwise as strings; `in` / `not in` test for
  // a substring. Throws std::invalid_argument for a variable missing from env or a
  // `~=` between strings that are not versions.
  bool evaluate(const std::map<std::string, std::string>& env, const std::set<std::string>& extras = {}) const;

  // Normalised text: canonical variable names, values in double quotes, single spaces,
  // parentheses only where `or` sits inside `and`.
  std::string str() const;

  struct Node;

private:
  friend class MarkerParser;
  explicit Marker(std::shared_ptr<const Node> root) : m_root(std::move(root)) {}
  std::shared_ptr<const Node> m_root; // immutable, so copies share it
};

struct Requirement {
  std::string name;             // as written
  std::string key;              // normalize_project_name(name)
  std::set<std::string> extras; // normalised
  pep440::SpecifierSet specifier;
  std::string url; // the "name @ url" form
  std::optional<Marker> marker;

  // PEP 508: name, optional [extras], then specifiers with or without parentheses or
  // "@ url", then optionally "; marker". Throws std::invalid_argument naming the text
  // and the column of the problem.
  static Requirement parse(std::string_view text);
  // Normalised text that parses back to the same requirement.
  std::string str() const;
};

// The marker environment of a CPython target on Linux. platform_release and
// platform_version describe the kernel the container will run on, which a build cannot
// know: they are empty, so markers testing them compare against "".
std::map<std::string, std::string> marker_environment(const PythonTarget& target,
                                                      const std::string& python_full_version);

} // namespace python
