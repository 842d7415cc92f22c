#include "cli/build_stamp.hpp"

#include "cli/build_info.hpp"

#ifndef PI_VERSION
#define PI_VERSION "0.0.0"
#endif
#ifndef PI_BUILD_TYPE
#define PI_BUILD_TYPE "unknown"
#endif
#ifndef PI_COMPILER
#define PI_COMPILER "unknown"
#endif
#ifndef PI_YAML_CPP_VERSION
#define PI_YAML_CPP_VERSION "unknown"
#endif

namespace cli::stamp {

const char* version() {
  return PI_VERSION;
}
const char* git_revision() {
  return PI_GIT_REVISION;
}
bool git_dirty() {
  return PI_GIT_DIRTY;
}
const char* build_type() {
  return PI_BUILD_TYPE;
}
const char* compiler() {
  return PI_COMPILER;
}
const char* yaml_cpp_version() {
  return PI_YAML_CPP_VERSION;
}

} // namespace cli::stamp
