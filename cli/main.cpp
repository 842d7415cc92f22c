// paddle-image: builds, inspects and caches PaddlePaddle GPU container images.
#include "cli/commands.hpp"
#include "cli/version.hpp"
#include "util/error.hpp"
#include "util/interrupt.hpp"
#include "util/url.hpp"

#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

namespace {

// Text for one line of a terminal or a log: control characters (a file name with a
// newline, an escape sequence from a server) and the Unicode line separators
// U+2028/U+2029 written as escapes, and credentials hidden (util::redact_text), so an
// error message cannot forge lines of its own nor carry a secret. A list or a derivation
// the message gives keeps its indented lines ("\n  - ", "\n  (1) because", a newline
// followed by two spaces): an indented line cannot pass for one of paddle-image's own.
std::string one_line(const std::string& text) {
  static const char* hex = "0123456789abcdef";
  std::string in = util::redact_text(text);
  std::string out;
  for (std::size_t i = 0; i < in.size(); ++i) {
    auto c = static_cast<unsigned char>(in[i]);
    if (c == '\n' && in.compare(i + 1, 2, "  ") == 0) {
      out += '\n'; // an indented line of a list or a derivation the message gives
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      out += std::string("\\x") + hex[c >> 4] + hex[c & 15];
    } else if (c == 0xe2 && i + 2 < in.size() && static_cast<unsigned char>(in[i + 1]) == 0x80 &&
               (static_cast<unsigned char>(in[i + 2]) == 0xa8 || static_cast<unsigned char>(in[i + 2]) == 0xa9)) {
      out += static_cast<unsigned char>(in[i + 2]) == 0xa8 ? "\\u2028" : "\\u2029";
      i += 2;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

// Prints an error on stderr (and, with --json, as {"error": {...}} on stdout); returns
// its exit code. Both go through one_line.
int report(bool json, util::ErrorKind kind, const std::string& raw_message, const std::string& raw_hint) {
  std::string message = one_line(raw_message);
  std::string hint = one_line(raw_hint);
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

// Runs the action of the subcommand given (usage exit status without one).
int run_parsed(const std::vector<std::pair<CLI::App*, cli::Action>>& actions) {
  for (const auto& [sub, action] : actions) {
    if (sub->parsed()) {
      int rc = action();
      // A signal that came after the last check point: the work was finished (and
      // kept, whole), but the caller asked to stop, and the exit code says it did.
      if (rc == 0 && util::interrupted() != 0) {
        util::throw_interrupted();
      }
      return rc;
    }
  }
  return util::exit_code(util::ErrorKind::usage);
}

// CLI11's own message (and --help, --version, exit 0), with the JSON error object when
// --json was given.
int parse_error(CLI::App& app, const CLI::ParseError& e, bool want_json) {
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
}

// The error's text and the paths it names.
std::string fs_error_text(const std::filesystem::filesystem_error& e) {
  std::string msg = e.code().message();
  for (const auto& p : {e.path1(), e.path2()}) {
    if (!p.empty()) {
      msg += ": " + p.string();
    }
  }
  return msg;
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
    return run_parsed(actions);
  } catch (const CLI::ParseError& e) {
    return parse_error(app, e, want_json);
  } catch (const util::Error& e) {
    return report(want_json, e.kind(), e.what(), e.hint());
  } catch (const std::filesystem::filesystem_error& e) {
    // A file-system call that no module turned into a util::Error: still an I/O error
    // naming the path, and the JSON object the README promises.
    return report(want_json, util::ErrorKind::io, fs_error_text(e), "check the path and its permissions");
  } catch (const std::exception& e) {
    return report(want_json, util::ErrorKind::internal, std::string("internal error: ") + e.what(),
                  "this is a bug: please report it with the command line");
  }
}
