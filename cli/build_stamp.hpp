#pragma once
// The facts fixed when this binary was compiled: the version, the git revision (and
// whether the tree had uncommitted changes), the build type, the compiler, yaml-cpp's
// version. build_stamp.cpp alone sees the generated header and the build's
// definitions: it changes at every commit, and it is a few lines, so a new revision
// recompiles those lines, not a batch of the CLI (cli/version.cpp says them).
namespace cli::stamp {

const char* version();
const char* git_revision();
bool git_dirty();
const char* build_type();
const char* compiler();
const char* yaml_cpp_version();

} // namespace cli::stamp
