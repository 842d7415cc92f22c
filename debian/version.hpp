#pragma once
// Debian package versions compared as dpkg compares them ([epoch:]upstream[-revision],
// '~' before everything, letters before other characters, digit runs as numbers), and
// the package relations of a control field (Replaces, Breaks, ...: "name[:arch]
// [(op version)]", comma-separated) tested against an installed package.
#include <string>
#include <string_view>
#include <vector>

namespace debian {

// <0, 0 or >0 as a sorts before, equal to or after b (dpkg --compare-versions).
int compare_versions(std::string_view a, std::string_view b);

struct Relation {
  std::string name;
  std::string arch;    // ":any", ":amd64" qualifier without the ':'; "" when none
  std::string op;      // "<<", "<=", "=", ">=", ">>"; "" for any version
  std::string version; // "" when op is ""
  bool operator==(const Relation&) const = default;
};

// The relations of a field without alternatives (Replaces, Conflicts, Breaks).
// Error(input) naming `what` for a relation that does not parse or an alternative ('|').
std::vector<Relation> parse_relations(std::string_view field, const std::string& what);

// Whether `r` names the package `name` (arch qualifiers match any architecture, as
// for a single-architecture layer) and its version `version` satisfies r's constraint.
bool relation_matches(const Relation& r, const std::string& name, const std::string& version);

} // namespace debian
