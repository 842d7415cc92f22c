// paddle-image lock: pinned requirements in, pip's hash-checking format out, for the
// Python and platform of a spec's wheels layer.
#include "builder/build.hpp"
#include "builder/debs.hpp"
#include "builder/lock_request.hpp"
#include "builder/remote_sources.hpp"
#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "cli/registry_flags.hpp"
#include "python/metadata.hpp"
#include "spec/spec.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"

#include <algorithm>
#include <memory>
#include <thread>

namespace cli {

namespace {

struct LockArgs {
  std::string requirements;
  std::string output;
  std::string spec_file;
  std::string layer;
  bool all_platforms = false;
  bool sources = false; // --sources: the remote sources of files and data layers
  bool update = false;
  bool upgrade = false;
  std::vector<std::string> upgrade_packages;
  bool pre = false;
  std::vector<std::string> index_urls;
  std::vector<std::string> find_links;
  std::string cache_dir;
  bool json = false;
  bool quiet = false;
  RegistryFlags flags;
};

// One line per locked requirement: how many files' hashes were written.
std::string lock_summary(const python::LockResult& r) {
  std::string summary;
  for (const auto& l : r.lines) {
    summary += l.name + "==" + l.version + ": " + std::to_string(l.files.size()) + " file(s)\n";
  }
  return summary;
}

// The warnings, the lock file (-o), and the result: the lock itself on stdout, else a
// summary of what was written.
void finish_lock(const Output& out, const LockArgs& a, const python::LockResult& r) {
  for (const auto& w : r.warnings) {
    out.info("warning: " + w);
  }
  bool to_stdout = builder::lock_to_stdout(a.output);
  if (!to_stdout) {
    util::write_file_atomic(a.output, r.text);
  }
  nlohmann::json j = builder::lock_report(r, a.requirements, a.output, a.all_platforms);
  out.result(j, to_stdout ? r.text : lock_summary(r) + "wrote " + a.output + "\n");
}

// A debs layer's lock: the spec names the packages; the lock goes to the layer's `lock`
// file (or -o FILE, or stdout with -o -).
int run_debs_lock(const Output& out, const LockArgs& a, const spec::BuildSpec& s, const builder::BuildOptions& o,
                  const builder::Events& ev) {
  if (!a.requirements.empty()) {
    throw util::Error(util::ErrorKind::usage,
                      "layer '" + builder::debs_layer_named(s, a.layer)->name +
                          "' is a debs layer: its packages are listed in the spec, not in " + a.requirements,
                      "run paddle-image lock --spec " + a.spec_file + " --layer " +
                          builder::debs_layer_named(s, a.layer)->name);
  }
  if (!a.index_urls.empty() || !a.find_links.empty() || a.all_platforms) {
    throw util::Error(util::ErrorKind::usage, "--index-url, --find-links and --all-platforms are for wheels layers",
                      "a debs layer's repositories are in the spec");
  }
  builder::DebsLockResult r = builder::lock_debs(s, a.layer, o, ev);
  std::string dest = a.output.empty() ? r.file.string() : a.output;
  bool to_stdout = dest == "-";
  if (!to_stdout) {
    util::write_file_atomic(dest, r.text);
  }
  nlohmann::json pk = nlohmann::json::array();
  std::string text;
  for (const auto& p : r.lock.packages) {
    pk.push_back({{"name", p.name}, {"version", p.version}, {"architecture", p.architecture}, {"sha256", p.sha256}});
    text += p.name + " " + p.version + " " + p.architecture + "\n";
  }
  for (const auto& p : r.lock.already) {
    text += p + " (already in the base)\n";
  }
  nlohmann::json j = {{"layer", r.layer},
                      {"kind", "debs"},
                      {"output", to_stdout ? nlohmann::json(nullptr) : nlohmann::json(dest)},
                      {"packages", pk},
                      {"already_installed", r.lock.already}};
  if (to_stdout) {
    j["lock"] = r.text;
  }
  out.result(j, to_stdout ? r.text : text + "wrote " + dest + "\n");
  return 0;
}

// The sources lock: each download and git ref the spec leaves open, pinned, in the
// STEM.sources.lock beside the spec.
int run_sources_lock(const Output& out, const LockArgs& a, const spec::BuildSpec& s, const builder::BuildOptions& o,
                     const builder::Events& ev) {
  if (!a.requirements.empty() || !a.output.empty() || !a.layer.empty() || !a.index_urls.empty() ||
      !a.find_links.empty() || a.all_platforms) {
    throw util::Error(util::ErrorKind::usage,
                      "--sources locks every remote source of the spec into " + s.sources_lock.filename().string() +
                          ": it takes no requirements, -o, --layer, --index-url, --find-links or --all-platforms",
                      "paddle-image lock --sources --spec " + a.spec_file);
  }
  if (!builder::spec_has_remote_sources(s)) {
    throw util::Error(util::ErrorKind::usage, a.spec_file + " has no url:, git: or image: rule to lock",
                      "a download (url:), git source (git:) or image source (image:) in a files or data layer is "
                      "what --sources pins");
  }
  builder::SourcesLockResult r = builder::lock_sources(s, o, a.update, ev);
  std::error_code ec;
  const bool write =
      !r.lock.downloads.empty() || !r.lock.git.empty() || !r.lock.images.empty() || std::filesystem::exists(r.file, ec);
  if (write) {
    util::write_file_atomic(r.file, r.text);
  }
  std::string text;
  for (const auto& e : r.entries) {
    text += e.contains("image") ? e["image"].get<std::string>() + " (" + e["platform"].get<std::string>() + ") -> " +
                                      e["digest"].get<std::string>() + "\n"
            : e.contains("git") ? e["git"].get<std::string>() + " " + e["ref"].get<std::string>() + " -> " +
                                      e["commit"].get<std::string>() + "\n"
                                : e["url"].get<std::string>() + " -> sha256:" + e["sha256"].get<std::string>() + "\n";
  }
  if (r.entries.empty()) {
    text += "every source is pinned in the spec: nothing to lock\n";
  }
  nlohmann::json j = {{"kind", "sources"},
                      {"output", write ? nlohmann::json(r.file.string()) : nlohmann::json(nullptr)},
                      {"sources", r.entries}};
  out.result(j, text + (write ? "wrote " + r.file.string() + "\n" : std::string()));
  return 0;
}

// What a wheels lock takes from the command line: the indexes, the platforms, and which
// versions of the existing output lock it may move (-U, -P).
python::LockOptions wheels_lock_options(const LockArgs& a) {
  python::LockOptions lo;
  lo.all_platforms = a.all_platforms;
  lo.indexes = a.index_urls;
  lo.find_links = a.find_links;
  lo.upgrade = a.upgrade;
  lo.pre = a.pre;
  for (const auto& p : a.upgrade_packages) {
    lo.upgrade_packages.insert(python::normalize_project_name(p));
  }
  if (!builder::lock_to_stdout(a.output)) {
    lo.existing = a.output;
  }
  return lo;
}

int run_lock(const LockArgs& a) {
  Output out = Output::detect(a.json, a.quiet);
  builder::check_lock_request(a.spec_file, a.requirements, a.index_urls);
  spec::BuildSpec s = spec::load(a.spec_file);
  const bool debs = !a.sources && builder::debs_layer_named(s, a.layer) != nullptr;
  const bool sources =
      a.sources || (!debs && a.requirements.empty() && a.layer.empty() && builder::spec_has_remote_sources(s));
  if (!debs && !sources && a.requirements.empty()) {
    throw util::Error(util::ErrorKind::usage, "lock needs REQUIREMENTS for a wheels layer",
                      "paddle-image lock requirements.txt -o requirements.lock --spec " + a.spec_file +
                          (a.layer.empty() ? "" : " --layer " + a.layer) +
                          " (a debs layer is locked with --spec and --layer alone)");
  }
  builder::BuildOptions o;
  o.cache_dir = a.cache_dir.empty() ? default_cache_dir() : std::filesystem::path(a.cache_dir);
  RegistrySession sess(a.flags, out);
  o.connect = [&sess](const std::string& host) { return sess.connect(host); };
  o.transfer = sess.transfer_options();
  o.index = sess.index_access(index_defaults_from_env());
  o.threads = std::max(1, a.flags.jobs);
  builder::Events ev;
  ev.info = [&](const std::string& line) { out.info(line); };
  if (sources) {
    return run_sources_lock(out, a, s, o, ev);
  }
  if (debs) {
    return run_debs_lock(out, a, s, o, ev);
  }
  finish_lock(out, a, builder::lock(s, a.layer, a.requirements, wheels_lock_options(a), o, ev));
  return 0;
}

} // namespace

void add_lock_command(CLI::App& app, std::vector<std::pair<CLI::App*, Action>>& actions) {
  auto a = std::make_shared<LockArgs>();
  CLI::App* c = app.add_subcommand(
      "lock", "Resolve requirements into pip's hash-checking lock for a spec's wheels layer: one NAME==VERSION per "
              "package of the closure (what the base already holds left out), with the sha256 of every wheel that "
              "fits; or a debs layer's lock: its packages resolved by apt against the base, each with its "
              "version and sha256; or (--sources) the sha256 of each download and the commit of each git ref the "
              "spec leaves open");
  c->add_option("requirements", a->requirements,
                "Requirements as pip reads them (names, ranges, extras, markers, pinned lines; -r, -c, -i, "
                "--extra-index-url, -f, --no-index, --pre), resolved for the spec's Python, platform and base; none "
                "for a debs layer, whose packages the spec lists");
  c->add_flag("-U,--upgrade", a->upgrade,
              "Resolve every package afresh; without it, the versions the existing lock (-o) holds are kept where "
              "they still fit");
  c->add_option("-P,--upgrade-package", a->upgrade_packages,
                "Resolve this package afresh, keeping the existing lock's other versions (repeatable)");
  c->add_flag("--pre", a->pre, "Take pre-releases and development releases like final ones");
  c->add_option("-o,--output", a->output, "Where to write the lock (default: stdout)");
  c->add_option("--spec", a->spec_file, "The spec whose base and python settings decide which wheels fit");
  c->add_option("--layer", a->layer, "The wheels or debs layer to lock for (needed when the spec has several)");
  c->add_flag("--all-platforms", a->all_platforms,
              "Hash every wheel of each pinned version, so the lock works for any Python and platform");
  c->add_option("-i,--index-url", a->index_urls,
                "Package index (simple API root); overrides the layer's index (repeatable: first is the primary)");
  c->add_option("-f,--find-links", a->find_links, "Flat page or directory of wheels (repeatable)");
  c->add_option("--cache-dir", a->cache_dir,
                "Layer cache directory, which keeps downloaded wheels (default $PADDLE_IMAGE_CACHE or "
                "~/.cache/paddle-image)");
  c->add_flag("--sources", a->sources,
              "Pin the spec's downloads (url: without sha256) and git refs (git: with ref:) in STEM.sources.lock "
              "beside the spec: each file fetched once and hashed, each ref resolved to its commit (the default "
              "for a spec with no debs layer and such sources)");
  c->add_flag("--update", a->update,
              "With --sources: fetch and resolve every open source again (a moved branch, a republished file), "
              "rather than keep the pins the lock holds");
  c->add_flag("--json", a->json, "Print the result as JSON on stdout");
  c->add_flag("-q,--quiet", a->quiet, "No progress output");
  // The index's credentials come from its URL or netrc (docs/wheels.md): no -u here.
  a->flags.add(c, false, false, false);
  c->add_option("-j,--jobs", a->flags.jobs,
                "Index pages, metadata files and wheels read in parallel (default 4); the lock is the same for any")
      ->check(CLI::Range(1, 64));
  actions.emplace_back(c, [a] { return run_lock(*a); });
}

} // namespace cli
