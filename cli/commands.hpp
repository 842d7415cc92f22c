#pragma once
#include <CLI/CLI.hpp>
#include <functional>
#include <utility>
#include <vector>

namespace cli {

// Each command registers its subcommand and returns the action to run when chosen.
using Action = std::function<int()>;
Action add_build(CLI::App& app);
Action add_inspect(CLI::App& app);
Action add_cache(CLI::App& app);
Action add_resolve(CLI::App& app);
Action add_matrix(CLI::App& app);
Action add_doctor(CLI::App& app);
// version: what this binary is (cli/version.hpp).
Action add_version(CLI::App& app);
// push, pull, copy, tags, login, logout.
void add_registry_commands(CLI::App& app, std::vector<std::pair<CLI::App*, Action>>& actions);

// key generate, sign, attest, verify, sbom.
void add_signing_commands(CLI::App& app, std::vector<std::pair<CLI::App*, Action>>& actions);

// lock: hash-locked requirements for a spec's wheels layer.
void add_lock_command(CLI::App& app, std::vector<std::pair<CLI::App*, Action>>& actions);

// render (dockerfile, CI pipelines), init.
void add_template_commands(CLI::App& app, std::vector<std::pair<CLI::App*, Action>>& actions);

// warm plan, push, export, hosts, verify.
void add_warm_commands(CLI::App& app, std::vector<std::pair<CLI::App*, Action>>& actions);

// The whole command line: every command above on `app`, each with its action; then
// every option that takes several values takes one value per occurrence
// (`--insecure-registry H r.txt` leaves r.txt to the positional, as CLI11 would not).
std::vector<std::pair<CLI::App*, Action>> define_cli(CLI::App& app);

} // namespace cli
