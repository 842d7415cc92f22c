#include "cli/version.hpp"

#include "cli/build_info.hpp"
#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "layers/compress.hpp"
#include "registry/http.hpp"
#include "signing/keys.hpp"

#include <sstream>

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

namespace cli {

const char* version() {
  return PI_VERSION;
}

nlohmann::json version_info() {
  return {{"version", PI_VERSION},
          {"git", {{"revision", PI_GIT_REVISION}, {"dirty", PI_GIT_DIRTY}}},
          {"build_type", PI_BUILD_TYPE},
          {"compiler", PI_COMPILER},
          {"libraries",
           {{"libcurl", registry::curl_version()},
            {"openssl", signing::openssl_version()},
            {"libarchive", layers::libarchive_version()},
            {"zstd", layers::zstd_version()},
            {"yaml-cpp", PI_YAML_CPP_VERSION},
            {"libsodium", signing::sodium_version()},
            {"nlohmann_json", std::to_string(NLOHMANN_JSON_VERSION_MAJOR) + "." +
                                  std::to_string(NLOHMANN_JSON_VERSION_MINOR) + "." +
                                  std::to_string(NLOHMANN_JSON_VERSION_PATCH)}}}};
}

std::string version_text() {
  nlohmann::json j = version_info();
  std::ostringstream s;
  std::string rev = j["git"]["revision"];
  s << "paddle-image " << PI_VERSION << " (git " << rev << (j["git"]["dirty"].get<bool>() ? ", dirty" : "") << ")\n";
  s << "build:     " << PI_BUILD_TYPE << ", " << PI_COMPILER << "\n";
  s << "libraries:";
  bool first = true;
  for (const auto& [name, v] : j["libraries"].items()) {
    s << (first ? " " : ", ") << name << " " << v.get<std::string>();
    first = false;
  }
  return s.str();
}

Action add_version(CLI::App& app) {
  auto json = std::make_shared<bool>(false);
  CLI::App* v =
      app.add_subcommand("version", "Say exactly what this binary is: version, git revision, build, libraries");
  v->add_flag("--json", *json, "JSON output");
  return [json] {
    Output out = Output::detect(*json, false);
    out.result(version_info(), version_text() + "\n"); // --version (CLI11) ends the text the same way
    return 0;
  };
}

} // namespace cli
