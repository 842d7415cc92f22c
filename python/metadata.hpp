#pragma once
// The readers of what a distribution says about itself, one each: METADATA/PKG-INFO
// headers, RECORD lines, and the two normalisers every comparison goes through (PEP 503
// project names, PEP 440 versions).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace python {

// The headers of a METADATA or PKG-INFO file (RFC 822 style, up to the first empty
// line; the body is the long description). Keys are case-insensitive; a folded
// (indented) line continues the previous header, joined with one space; values are
// trimmed. Single-use fields (Name, Version, Requires-Python) keep their first value,
// as email.message and pip read them; Requires-Dist and Provides-Extra collect.
struct Metadata {
  std::string name;
  std::string version;
  std::optional<std::string> requires_python;
  std::vector<std::string> requires_dist;
  std::vector<std::string> provides_extra;
};
Metadata parse_metadata(std::string_view text);

// One RECORD line: the path (relative to the directory that holds the .dist-info), the
// hash ("sha256=..." or empty) and the size (empty when not given).
struct RecordEntry {
  std::string path;
  std::string hash;
  std::string size;
  bool operator==(const RecordEntry&) const = default;
};
// The WHEEL file of a .dist-info (the same header format): Wheel-Version is
// "MAJOR.MINOR"; Root-Is-Purelib "true" or not. Throws std::invalid_argument saying
// what is wrong ("it has no Wheel-Version") for the caller to name the wheel.
struct WheelFile {
  int major = 0;
  int minor = 0;
  bool root_is_purelib = false;
};
WheelFile parse_wheel_file(std::string_view text);

// RECORD is CSV: a quoted field may hold commas and doubled quotes. Empty lines are
// skipped; "\r\n" line ends are accepted.
std::vector<RecordEntry> parse_record(std::string_view text);

// PEP 503 / packaging's canonicalize_name: lower-cased, each run of '-', '_' and '.'
// one '-'. The one project-name normaliser.
std::string normalize_project_name(std::string_view name);

// A key under which two versions are equal as PEP 440 compares them ("1.0" and
// "1.0.0", "1.0-RC1" and "1.0rc1", "1.0+local_1" and "1.0.0+local.1"): the canonical
// form of pep440::Version with trailing zero release numbers dropped. A string that is
// not a PEP 440 version is its lower-cased, trimmed self.
std::string normalize_version(std::string_view version);

} // namespace python
