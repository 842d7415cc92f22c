#pragma once
// What this binary is: the version, the git revision it was built from (and whether the
// tree had uncommitted changes), the build type, the compiler, and the versions of the
// libraries linked in (`paddle-image version`, `--version`).
#include <nlohmann/json.hpp>

#include <string>

namespace cli {

// The release version ("0.1.0"); what provenance records as the builder's version.
const char* version();
// {"version", "git": {"revision", "dirty"}, "build_type", "compiler", "libraries": {...}}.
nlohmann::json version_info();
// The same as lines: "paddle-image 0.1.0 (git 1a2b3c4d…, dirty)" and one line each.
std::string version_text();

} // namespace cli
