// paddle-image lock: pinned requirements in, pip's hash-checking format out, for the
// Python and platform of a spec's wheels layer.
#include "builder/build.hpp"
#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "cli/registry_flags.hpp"
#include "spec/spec.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"

#include <algorithm>
#include <memory>
#include <thread>

namespace cli {

using util::Error;
using util::ErrorKind;

namespace {

struct LockArgs {
  std::string requirements;
  std::string output;
  std::string spec_file;
  std::string layer;
  bool all_platforms = false;
  std::vector<std::string> index_urls;
  std::vector<std::string> find_links;
  std::string cache_dir;
  bool json = false;
  bool quiet = false;
  RegistryFlags flags;
};

int run_lock(const LockArgs& a) {
  Output out = Output::detect(a.json, a.quiet);
  if (a.spec_file.empty()) {
    throw Error(ErrorKind::usage, "lock needs --spec FILE (and --layer NAME when it has several wheels layers)",
                "the spec's base and python settings decide which wheels fit: paddle-image lock " + a.requirements +
                    " -o requirements.lock --spec spec.yaml --layer framework");
  }
  for (const auto& u : a.index_urls) {
    if (u.rfind("http://", 0) != 0 && u.rfind("https://", 0) != 0) {
      throw Error(ErrorKind::usage, "--index-url " + u + ": not an http(s) URL",
                  "give the simple-API root, e.g. https://mirror.example/simple");
    }
  }
  spec::BuildSpec s = spec::load(a.spec_file);
  builder::BuildOptions o;
  o.cache_dir = a.cache_dir.empty() ? default_cache_dir() : std::filesystem::path(a.cache_dir);
  RegistrySession sess(a.flags, out);
  o.connect = [&sess](const std::string& host) { return sess.connect(host); };
  o.transfer = sess.transfer_options();
  o.index = sess.index_access(index_defaults_from_env());
  o.threads = std::max(1, a.flags.jobs);
  python::LockOptions lo;
  lo.all_platforms = a.all_platforms;
  lo.indexes = a.index_urls;
  lo.find_links = a.find_links;
  builder::Events ev;
  ev.info = [&](const std::string& line) { out.info(line); };
  python::LockResult r = builder::lock(s, a.layer, a.requirements, lo, o, ev);
  for (const auto& w : r.warnings) {
    out.info("warning: " + w);
  }
  if (!a.output.empty() && a.output != "-") {
    util::write_file_atomic(a.output, r.text);
  }
  nlohmann::json lines = nlohmann::json::array();
  std::string summary;
  for (const auto& l : r.lines) {
    lines.push_back({{"name", l.name}, {"version", l.version}, {"files", l.files}});
    summary += l.name + "==" + l.version + ": " + std::to_string(l.files.size()) + " file(s)\n";
  }
  nlohmann::json sources = nlohmann::json::array();
  for (const auto& u : r.sources.sources.indexes) {
    sources.push_back(util::redact_url(u));
  }
  nlohmann::json fl = nlohmann::json::array();
  for (const auto& u : r.sources.sources.find_links) {
    fl.push_back(util::redact_url(u));
  }
  nlohmann::json j = {
      {"requirements", a.requirements},
      {"output", a.output.empty() || a.output == "-" ? nlohmann::json(nullptr) : nlohmann::json(a.output)},
      {"indexes", sources},
      {"find_links", fl},
      {"index_from", r.sources.described},
      {"all_platforms", a.all_platforms},
      {"lines", lines},
      {"warnings", r.warnings}};
  if (a.output.empty() || a.output == "-") {
    // The lock itself is the result; --json wraps it.
    j["lock"] = r.text;
    out.result(j, r.text);
  } else {
    out.result(j, summary + "wrote " + a.output + "\n");
  }
  return 0;
}

} // namespace

void add_lock_command(CLI::App& app, std::vector<std::pair<CLI::App*, Action>>& actions) {
  auto a = std::make_shared<LockArgs>();
  CLI::App* c = app.add_subcommand(
      "lock", "Write pip's hash-checking lock for pinned requirements: the sha256 of every wheel that fits a spec's "
              "wheels layer");
  c->add_option("requirements", a->requirements, "Pinned requirements (NAME==VERSION lines; -r includes followed)")
      ->required();
  c->add_option("-o,--output", a->output, "Where to write the lock (default: stdout)");
  c->add_option("--spec", a->spec_file, "The spec whose base and python settings decide which wheels fit");
  c->add_option("--layer", a->layer, "The wheels layer to lock for (needed when the spec has several)");
  c->add_flag("--all-platforms", a->all_platforms,
              "Hash every wheel of each pinned version, so the lock works for any Python and platform");
  c->add_option("-i,--index-url", a->index_urls,
                "Package index (simple API root); overrides the layer's index (repeatable: first is the primary)");
  c->add_option("-f,--find-links", a->find_links, "Flat page or directory of wheels (repeatable)");
  c->add_option("--cache-dir", a->cache_dir,
                "Layer cache directory, which keeps downloaded wheels (default $PADDLE_IMAGE_CACHE or "
                "~/.cache/paddle-image)");
  c->add_flag("--json", a->json, "Print the result as JSON on stdout");
  c->add_flag("-q,--quiet", a->quiet, "No progress output");
  // The index's credentials come from its URL or netrc (docs/wheels.md): no -u here.
  a->flags.add(c, false, false, false);
  actions.emplace_back(c, [a] { return run_lock(*a); });
}

} // namespace cli
