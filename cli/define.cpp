// The command line as one definition: main() parses with it, the man pages and
// completions can walk it, and the tests check every option of it.
#include "cli/commands.hpp"

namespace cli {

namespace {

void one_value_per_flag(CLI::App* app) {
  for (CLI::Option* o : app->get_options()) {
    if (!o->get_positional() && o->get_items_expected_max() > 1) {
      o->allow_extra_args(false);
    }
  }
  for (CLI::App* sub : app->get_subcommands([](CLI::App*) { return true; })) {
    one_value_per_flag(sub);
  }
}

} // namespace

std::vector<std::pair<CLI::App*, Action>> define_cli(CLI::App& app) {
  std::vector<std::pair<CLI::App*, Action>> actions;
  for (auto [name, add] :
       std::initializer_list<std::pair<const char*, Action (*)(CLI::App&)>>{{"build", add_build},
                                                                            {"inspect", add_inspect},
                                                                            {"cache", add_cache},
                                                                            {"resolve", add_resolve},
                                                                            {"matrix", add_matrix},
                                                                            {"doctor", add_doctor},
                                                                            {"version", add_version}}) {
    Action a = add(app);
    actions.emplace_back(app.get_subcommand(name), std::move(a));
  }
  add_registry_commands(app, actions);
  add_signing_commands(app, actions);
  add_lock_command(app, actions);
  add_template_commands(app, actions);
  add_warm_commands(app, actions);
  add_release_commands(app, actions);
  add_completion_commands(app, actions);
  one_value_per_flag(&app);
  return actions;
}

} // namespace cli
