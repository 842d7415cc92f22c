#pragma once
// Path patterns as the spec's `exclude` and .paddleimageignore read them (fnmatch(3)
// patterns against a path relative to a source root), for layers (walking a copy
// rule's tree) and spec (a wildcard `from`'s matches, as Docker leaves out what
// .dockerignore names).
#include <string>
#include <vector>

namespace util {

// True when name matches an exclude pattern (no '/' in pattern: any path component's
// name; with '/': the path relative to the source root; '*' matches across '/').
bool excluded(const std::vector<std::string>& patterns, const std::string& rel_path);
// gitignore-style: the last pattern that matches decides; "!pattern" re-includes.
bool ignored(const std::vector<std::string>& patterns, const std::string& rel_path);

} // namespace util
