// paddle-image: builds, inspects and caches PaddlePaddle GPU container images.
#include "cli/commands.hpp"
#include "cli/version.hpp"
#include "util/error.hpp"
#include "util/interrupt.hpp"

#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

namespace {

// Prints an error on stderr (and, with --json, as {"error": {...}} on stdout); returns
// its exit code.
int report(bool json, util::ErrorKind kind, const std::string& message, const std::string& hint) {
  std::cerr << "paddle-image: error: " << message << "\n";
  if (!hint.empty()) {
    std::cerr << "  hint: " << hint << "\n";
  }
  if (json) {
    nlohmann::json j = {{"error",
                         {{"kind", std::string(util::kind_name(kind))},
                          {"message", message},
                          {"hint", hint},
                          {"exit_code", util::exit_code(kind)}}}};
    std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << std::endl;
  }
  return util::exit_code(kind);
}

} // namespace

int main(int argc, char** argv) {
  util::install_interrupt_handlers();
  CLI::App app{"paddle-image: build, ship and check PaddlePaddle GPU images"};
  app.set_version_flag("--version", [] { return cli::version_text(); });
  app.require_subcommand(1);
  std::vector<std::pair<CLI::App*, cli::Action>> actions = cli::define_cli(app);
  bool want_json = false;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--json") {
      want_json = true;
    }
  }
  try {
    app.parse(argc, argv);
    for (const auto& [sub, action] : actions) {
      if (sub->parsed()) {
        return action();
      }
    }
    return util::exit_code(util::ErrorKind::usage);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    if (rc != 0 && want_json) {
      nlohmann::json j = {{"error",
                           {{"kind", "usage"},
                            {"message", e.what()},
                            {"hint", "see --help"},
                            {"exit_code", util::exit_code(util::ErrorKind::usage)}}}};
      std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << std::endl;
    }
    return rc == 0 ? 0 : util::exit_code(util::ErrorKind::usage);
  } catch (const util::Error& e) {
    return report(want_json, e.kind(), e.what(), e.hint());
  } catch (const std::filesystem::filesystem_error& e) {
    // A file-system call that no module turned into a util::Error: still an I/O error
    // naming the path, and the JSON object the README promises.
    std::string msg = e.code().message();
    for (const auto& p : {e.path1(), e.path2()}) {
      if (!p.empty()) {
        msg += ": " + p.string();
      }
    }
    return report(want_json, util::ErrorKind::io, msg, "check the path and its permissions");
  } catch (const std::exception& e) {
    return report(want_json, util::ErrorKind::internal, std::string("internal error: ") + e.what(),
                  "this is a bug: please report it with the command line");
  }
}
