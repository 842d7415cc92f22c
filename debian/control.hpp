#pragma once
// Debian's control-file format (deb822): the paragraphs of a Packages index, a Release
// file, dpkg's status file and a package's control file, read and written with their
// fields in order and their continuation lines kept exactly, so a paragraph written
// back is the one read.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace debian {

struct Paragraph {
  // Field name as written, and its value: the first line's text (leading blanks
  // dropped), then "\n" and each continuation line as written (its leading blank kept).
  std::vector<std::pair<std::string, std::string>> fields;
  int line = 0; // where it starts in its file (1-based)

  // The value of a field, matched case-insensitively as dpkg does; nullptr when absent.
  const std::string* get(std::string_view name) const;
  std::string value(std::string_view name) const; // "" when absent
  // Sets a field: replaced in place when present, else inserted before `before` (or
  // appended when `before` is absent or empty).
  void set(const std::string& name, const std::string& value, std::string_view before = {});
  void erase(std::string_view name);
  // The paragraph as text, every field on its own line, without the blank line after it.
  std::string text() const;
};

// The paragraphs of a deb822 file. `what` names the file in errors: a line that is
// neither a field, a continuation nor blank is Error(input) "what:LINE: ...".
// PGP armour is not undone here (verify first, then parse the signed text).
std::vector<Paragraph> parse_paragraphs(std::string_view text, const std::string& what);

// One package of a Packages index (what resolution and the lock need of it).
struct PackageRecord {
  std::string package, version, architecture, multi_arch, filename, sha256, source;
  std::int64_t size = -1;
};
// The record of a Packages paragraph; nullopt when it lacks Package, Version,
// Architecture or Filename.
std::optional<PackageRecord> package_record(const Paragraph& p);

} // namespace debian
