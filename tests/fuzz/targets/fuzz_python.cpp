// libFuzzer target for the Python packaging parsers that read what strangers write
// (index pages name versions and requirements; wheels carry METADATA and RECORD):
// PEP 440 versions and specifiers, PEP 508 requirements and markers (parsed, printed,
// parsed again, evaluated), METADATA headers and RECORD lines. The first byte picks
// the parser: 0 version, 1 specifier set, 2 requirement, 3 METADATA, 4 RECORD and the
// normalisers, 5 WHEEL.
#include "python/metadata.hpp"
#include "python/pep440.hpp"
#include "python/requirement.hpp"
#include "tests/fuzz/support.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>

namespace {

const std::map<std::string, std::string>& environment() {
  static const std::map<std::string, std::string> env = {{"python_version", "3.11"},
                                                         {"python_full_version", "3.11.2"},
                                                         {"os_name", "posix"},
                                                         {"sys_platform", "linux"},
                                                         {"platform_system", "Linux"},
                                                         {"platform_machine", "x86_64"},
                                                         {"platform_release", ""},
                                                         {"platform_version", ""},
                                                         {"implementation_name", "cpython"},
                                                         {"implementation_version", "3.11.2"},
                                                         {"platform_python_implementation", "CPython"}};
  return env;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) {
    return 0;
  }
  std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    switch (data[0] % 6) {
    case 0: {
      if (auto v = python::pep440::Version::parse(in)) {
        // A normalised version parses back to an equal one.
        auto again = python::pep440::Version::parse(v->str());
        if (!again || !(*again == *v)) {
          __builtin_trap();
        }
      }
      break;
    }
    case 1: {
      auto set = python::pep440::SpecifierSet::parse(in);
      if (auto v = python::pep440::Version::parse("1.0.0")) {
        (void)set.contains(*v, true);
      }
      break;
    }
    case 2: {
      auto r = python::Requirement::parse(in);
      auto back = python::Requirement::parse(r.str()); // str() parses back
      if (back.str() != r.str()) {
        __builtin_trap();
      }
      if (r.marker) {
        (void)r.marker->evaluate(environment(), {"test"});
      }
      break;
    }
    case 3:
      (void)python::parse_metadata(in);
      break;
    case 5:
      (void)python::parse_wheel_file(in);
      break;
    default:
      (void)python::parse_record(in);
      (void)python::normalize_project_name(in);
      (void)python::normalize_version(in);
      break;
    }
  } catch (const std::invalid_argument&) {
    // a refusal with a message is the parsers' answer to bad input
  }
  return 0;
}
