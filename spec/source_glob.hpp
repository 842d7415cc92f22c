#pragma once
// Wildcard sources of copy rules, matched as Docker matches COPY's: the pattern is split
// at '/', each part with '*', '?' or '[...]' matched (fnmatch(3), no FNM_PERIOD: Go's
// filepath.Match lets '*' match a leading '.') against the names in the directory the
// parts before it lead to, so no wildcard crosses a '/'; what .paddleimageignore names
// is not there to match, as .dockerignore'd files are not in Docker's context.
#include <filesystem>
#include <string>
#include <vector>

namespace spec {

// Whether `from` has a wildcard ('*', '?', '[' not escaped with '\').
bool has_wildcard(const std::string& from);

// The paths `pattern` (relative to `dir`, or absolute) matches, sorted by their
// relative path; an ignored path (`ignore`, matched against its path relative to
// `dir`) and everything under it are left out. Empty when nothing matches.
std::vector<std::filesystem::path> glob_sources(const std::string& pattern, const std::filesystem::path& dir,
                                                const std::vector<std::string>& ignore);

} // namespace spec
