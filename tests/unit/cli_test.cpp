#include <doctest/doctest.h>

#include "cli/commands.hpp"
#include "cli/version.hpp"
#include "util/error.hpp"

#include <cctype>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace unit_cli_test {

namespace {

// Every subcommand under `app`, with the words that reach it.
void walk(CLI::App* app, std::vector<std::string> path,
          std::vector<std::pair<std::vector<std::string>, CLI::App*>>& out) {
  for (CLI::App* sub : app->get_subcommands([](CLI::App*) { return true; })) {
    auto p = path;
    p.push_back(sub->get_name());
    out.emplace_back(p, sub);
    walk(sub, p, out);
  }
}

} // namespace

TEST_CASE("cli: every option that takes values takes one per occurrence, in every command") {
  CLI::App app{"paddle-image"};
  app.require_subcommand(1);
  auto actions = cli::define_cli(app);
  std::vector<std::pair<std::vector<std::string>, CLI::App*>> subs;
  walk(&app, {}, subs);
  CHECK(subs.size() > 30);
  int checked = 0;
  for (const auto& [path, sub] : subs) {
    for (CLI::Option* o : sub->get_options()) {
      if (o->get_positional() || o->get_items_expected_max() <= 1 || o->get_name(false, true).empty()) {
        continue;
      }
      std::string flag = o->get_lnames().empty() ? "-" + o->get_snames().front() : "--" + o->get_lnames().front();
      CLI::App fresh{"paddle-image"};
      fresh.require_subcommand(1);
      auto fresh_actions = cli::define_cli(fresh); // the actions own the values the options write
      std::vector<std::string> words = {"paddle-image"};
      words.insert(words.end(), path.begin(), path.end());
      words.push_back(flag);
      words.push_back("value-one");
      words.push_back("word-after");
      std::vector<const char*> argv;
      for (const auto& w : words) {
        argv.push_back(w.c_str());
      }
      try {
        fresh.parse(static_cast<int>(argv.size()), argv.data());
      } catch (const CLI::ParseError&) {
        // A required positional or a validator may refuse the words; what counts is
        // what the option took.
      }
      CLI::App* target = &fresh;
      for (const auto& p : path) {
        target = target->get_subcommand(p);
      }
      CLI::Option* same = target->get_option(flag);
      INFO(words[1] << " " << flag);
      CHECK(same->results().size() <= 1);
      ++checked;
    }
  }
  CHECK(checked > 10);
}

TEST_CASE("version_info names the version, the revision, the build and every library linked in") {
  nlohmann::json j = cli::version_info();
  CHECK(j["version"] == cli::version());
  std::string rev = j["git"]["revision"];
  CHECK((rev == "unknown" || rev.size() == 40));
  CHECK(j["git"]["dirty"].is_boolean());
  for (const char* lib : {"libcurl", "openssl", "libarchive", "zstd", "yaml-cpp", "libsodium", "nlohmann_json"}) {
    std::string v = j["libraries"][lib];
    CHECK_MESSAGE(!v.empty(), lib);
    CHECK_MESSAGE(std::isdigit(static_cast<unsigned char>(v[0])), lib << " " << v);
  }
  std::string text = cli::version_text();
  CHECK(text.rfind(std::string("paddle-image ") + cli::version() + " (git ", 0) == 0);
  CHECK(text.find("libcurl ") != std::string::npos);
}

TEST_CASE("man pages and completions come from the CLI definition, escaped for roff and the shells") {
  CLI::App app{"top"};
  CLI::App* sub = app.add_subcommand("tool", ".starts with a dot, has a \\ backslash and it's quoted");
  bool flag = false;
  std::string value;
  sub->add_flag("--dry-run", flag, "'quoted' help");
  sub->add_option("--out,-o", value, "where\n.TH injected");
  auto pages = cli::man_pages(app);
  REQUIRE(pages.size() == 2);
  // the top page lists each command as a sentence, then its page
  CHECK(pages[0].second.find("it's quoted. See \\fBpaddle\\-image\\-tool\\fR(1).") != std::string::npos);
  CHECK(pages[1].first == "paddle-image-tool.1");
  const std::string& page = pages[1].second;
  CHECK(page.find("\\&.starts with a dot") != std::string::npos);
  CHECK(page.find("\\e backslash") != std::string::npos);
  CHECK(page.find("\\fB\\-\\-out\\fR, \\fB\\-o\\fR \\fIVALUE\\fR") != std::string::npos);
  CHECK(page.find("\\fB\\-\\-dry\\-run\\fR\n") != std::string::npos); // a flag takes no value
  CHECK(page.find("\n.TH injected") == std::string::npos);
  CHECK(page.find("\n\\&.TH injected") != std::string::npos);
  std::string bash = cli::completion_script(app, "bash");
  CHECK(bash.find("_pi_vals['.tool']='--out -o'") != std::string::npos);
  std::string fish = cli::completion_script(app, "fish");
  CHECK(fish.find("-d '\\'quoted\\' help'") != std::string::npos);
  CHECK_THROWS_AS(cli::completion_script(app, "tcsh"), util::Error);
}

} // namespace unit_cli_test
