// paddle-image release-supply-chain: the release's facts, SBOMs and provenance
// predicate, for scripts/release.sh (builder/release_supply_chain.hpp).
#include "builder/release_supply_chain.hpp"
#include "cli/commands.hpp"
#include "cli/version.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"

#include <memory>

namespace cli {

namespace {

using util::Error;
using util::ErrorKind;

struct ReleaseArgs {
  std::string output;
  std::string facts;
  std::string libs;
  std::string root = "/";
  // facts
  std::string build_dir;
  std::string repository;
  std::int64_t epoch = 0;
  std::string glibc_min;
  std::vector<std::string> tools; // NAME=VERSION (the tool's first --version line)
  std::vector<std::string> command;
  // sbom-archive, sbom-deb
  std::string archive;
  std::string deb;
  builder::DebFields deb_fields;
};

void write_json(const std::string& path, const nlohmann::json& doc) {
  util::write_file_atomic(path, doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

builder::ReleaseFacts read_facts(const std::string& path) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(util::read_file(path));
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::input, path + ": not JSON (" + e.what() + ")",
                "write it with paddle-image release-supply-chain facts");
  }
  return builder::ReleaseFacts::from_json(j, path);
}

int run_facts(const ReleaseArgs& a) {
  nlohmann::json v = version_info();
  builder::ReleaseFacts f;
  f.version = v.at("version").get<std::string>();
  f.commit = v.at("git").value("revision", "");
  f.dirty = v.at("git").value("dirty", false);
  f.repository = a.repository;
  f.epoch = a.epoch;
  f.glibc_min = a.glibc_min;
  f.command = a.command;
  f.tools["paddle-image"] = f.version;
  f.tools["compiler"] = v.value("compiler", "");
  for (const auto& t : a.tools) {
    auto eq = t.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw Error(ErrorKind::usage, "--tool " + t + ": not NAME=VERSION", "e.g. --tool \"cmake=$(cmake --version)\"");
    }
    if (eq + 1 < t.size()) { // a tool that said nothing is left out
      f.tools[t.substr(0, eq)] = t.substr(eq + 1, t.find('\n', eq) - eq - 1);
    }
  }
  builder::HostPackages host = builder::host_packages(a.root);
  write_json(a.output, builder::release_facts(f, a.build_dir, a.root, host).to_json());
  return 0;
}

int run_sbom_archive(const ReleaseArgs& a) {
  write_json(a.output, builder::archive_sbom(read_facts(a.facts), a.archive,
                                             builder::parse_bundled_libraries(util::read_file(a.libs)),
                                             builder::host_packages(a.root)));
  return 0;
}

int run_sbom_deb(const ReleaseArgs& a) {
  write_json(a.output, builder::deb_sbom(read_facts(a.facts), a.deb, a.deb_fields, builder::host_packages(a.root)));
  return 0;
}

int run_provenance(const ReleaseArgs& a) {
  write_json(a.output, builder::release_provenance(read_facts(a.facts),
                                                   builder::parse_bundled_libraries(util::read_file(a.libs))));
  return 0;
}

void add_common(CLI::App* c, ReleaseArgs& a, bool facts_in) {
  c->add_option("-o,--output", a.output, "Where to write the document")->required();
  if (facts_in) {
    c->add_option("--facts", a.facts, "The release's facts (what `facts` wrote)")->required()->check(CLI::ExistingFile);
  }
  c->add_option("--root", a.root, "The root whose dpkg status and copyright files are read (default /)");
}

} // namespace

void add_release_commands(CLI::App& app, std::vector<std::pair<CLI::App*, Action>>& actions) {
  auto a = std::make_shared<ReleaseArgs>();
  CLI::App* top =
      app.add_subcommand("release-supply-chain",
                         "paddle-image's own release documents (for scripts/release.sh): facts, SBOMs, provenance");
  top->group("Release");
  top->require_subcommand(1);
  {
    CLI::App* c = top->add_subcommand("facts", "Write what the release was made from and with (FACTS.json)");
    c->add_option("--build", a->build_dir, "The release build's directory (its CMakeCache.txt)")->required();
    c->add_option("--repository", a->repository, "The source repository's URL")->required();
    c->add_option("--epoch", a->epoch, "SOURCE_DATE_EPOCH")->required();
    c->add_option("--glibc-min", a->glibc_min, "The oldest glibc the archive runs on")->required();
    c->add_option("--tool", a->tools, "NAME=VERSION of a tool that made the release (its --version's first line)");
    c->add_option("command", a->command, "How release.sh was run (after --)");
    add_common(c, *a, false);
    actions.emplace_back(c, [a] { return run_facts(*a); });
  }
  {
    CLI::App* c = top->add_subcommand("sbom-archive", "Write the archive's SPDX 2.3 SBOM");
    c->add_option("--archive", a->archive, "The archive (NAME.tar.gz)")->required()->check(CLI::ExistingFile);
    c->add_option("--libs", a->libs, "The bundled libraries: SONAME, package, version, arch a line (tab-separated)")
        ->required()
        ->check(CLI::ExistingFile);
    add_common(c, *a, true);
    actions.emplace_back(c, [a] { return run_sbom_archive(*a); });
  }
  {
    CLI::App* c = top->add_subcommand("sbom-deb", "Write the .deb's SPDX 2.3 SBOM");
    c->add_option("--deb", a->deb, "The .deb")->required()->check(CLI::ExistingFile);
    c->add_option("--deb-version", a->deb_fields.version, "Its Version (dpkg-deb -f DEB Version)")->required();
    c->add_option("--deb-arch", a->deb_fields.arch, "Its Architecture")->required();
    c->add_option("--deb-depends", a->deb_fields.depends, "Its Depends")->required();
    add_common(c, *a, true);
    actions.emplace_back(c, [a] { return run_sbom_deb(*a); });
  }
  {
    CLI::App* c = top->add_subcommand("provenance", "Write the release's SLSA v1 provenance predicate");
    c->add_option("--libs", a->libs, "The bundled libraries (as for sbom-archive)")
        ->required()
        ->check(CLI::ExistingFile);
    add_common(c, *a, true);
    actions.emplace_back(c, [a] { return run_provenance(*a); });
  }
}

} // namespace cli
