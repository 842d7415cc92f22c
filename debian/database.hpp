#pragma once
// The part of a system's dpkg database that unpacking a package is checked against, as
// dpkg reads it: which package owns each path (var/lib/dpkg/info/*.list), the
// diversions (var/lib/dpkg/diversions: from, to, package a triple of lines; ":" for a
// local one), the stat overrides (var/lib/dpkg/statoverride: "USER GROUP MODE PATH",
// names from etc/passwd and etc/group, "#ID" for a number) and the installed versions
// (var/lib/dpkg/status). Ownership moves as dpkg moves it when a package that Replaces
// another overwrites one of its files; the .list files it changed come back rewritten.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace debian {

struct Diversion {
  std::string from, to;
  std::string package; // "" for a local diversion
  bool operator==(const Diversion&) const = default;
};
std::vector<Diversion> parse_diversions(const std::string& text, const std::string& what);

struct StatOverride {
  std::int64_t uid = 0, gid = 0;
  std::string user, group; // names as the base spells them ("" for "#ID")
  std::uint32_t mode = 0;  // permission bits with setuid/setgid/sticky
  bool operator==(const StatOverride&) const = default;
};
// path ("usr/bin/x", no leading '/') -> override. `passwd` and `group` give the ids of
// names; Error(input) naming `what` and the line for a malformed line or an unknown name.
std::map<std::string, StatOverride> parse_statoverride(const std::string& text, const std::string& passwd,
                                                       const std::string& group, const std::string& what);

// The names of etc/passwd or etc/group with their ids ("root" -> 0).
std::map<std::string, std::int64_t> parse_id_file(const std::string& text);

class Database {
public:
  // `files`: the system's small files by path ("var/lib/dpkg/info/libc6:amd64.list",
  // "var/lib/dpkg/diversions", "var/lib/dpkg/statoverride", "etc/passwd", "etc/group",
  // "var/lib/dpkg/status"). `canonical` maps a recorded path ("bin/ls") to where it is
  // in the tree ("usr/bin/ls" on a merged-/usr system), so owners are found by where
  // files are.
  Database(const std::map<std::string, std::string>& files,
           const std::function<std::string(const std::string&)>& canonical);

  // The packages (info names: "NAME" or "NAME:ARCH") whose .list holds `canonical_path`
  // and that have not given it up.
  std::vector<std::string> owners(const std::string& canonical_path) const;
  // The installed version of package NAME ("" when not installed).
  std::string version_of(const std::string& name) const;
  // `info_name` gives up `canonical_path` (a package that Replaces it took the file over).
  void disown(const std::string& canonical_path, const std::string& info_name);
  // The .list files `disown` changed: "var/lib/dpkg/info/NAME.list" -> its new content.
  std::map<std::string, std::string> changed_lists() const;

  // The diversion of `path` ("usr/bin/x"), nullptr when none.
  const Diversion* diversion(const std::string& path) const;
  // The stat override of `path` ("usr/bin/x"), nullptr when none.
  const StatOverride* statoverride(const std::string& path) const;

private:
  struct Listed {
    std::string name;               // info name
    std::string text;               // the .list as the system has it
    std::set<std::string> disowned; // recorded paths ("/usr/bin/x") given up
  };
  std::vector<Listed> m_lists;
  std::map<std::string, std::vector<std::pair<std::size_t, std::string>>> m_owners; // canonical -> (list, recorded)
  std::map<std::string, std::string> m_versions;
  std::map<std::string, Diversion> m_diversions; // by from, without the '/'
  std::map<std::string, StatOverride> m_overrides;
};

} // namespace debian
