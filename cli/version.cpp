#include "cli/version.hpp"

#include "cli/build_stamp.hpp"
#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "layers/compress.hpp"
#include "registry/http.hpp"
#include "signing/keys.hpp"

#include <sstream>

namespace cli {

const char* version() {
  return stamp::version();
}

nlohmann::json version_info() {
  return {{"version", stamp::version()},
          {"git", {{"revision", stamp::git_revision()}, {"dirty", stamp::git_dirty()}}},
          {"build_type", stamp::build_type()},
          {"compiler", stamp::compiler()},
          {"libraries",
           {{"libcurl", registry::curl_version()},
            {"openssl", signing::openssl_version()},
            {"libarchive", layers::libarchive_version()},
            {"zstd", layers::zstd_version()},
            {"yaml-cpp", stamp::yaml_cpp_version()},
            {"libsodium", signing::sodium_version()},
            {"nlohmann_json", std::to_string(NLOHMANN_JSON_VERSION_MAJOR) + "." +
                                  std::to_string(NLOHMANN_JSON_VERSION_MINOR) + "." +
                                  std::to_string(NLOHMANN_JSON_VERSION_PATCH)}}}};
}

std::string version_text() {
  nlohmann::json j = version_info();
  std::ostringstream s;
  std::string rev = j["git"]["revision"];
  s << "paddle-image " << stamp::version() << " (git " << rev << (j["git"]["dirty"].get<bool>() ? ", dirty" : "")
    << ")\n";
  s << "build:     " << stamp::build_type() << ", " << stamp::compiler() << "\n";
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
