#pragma once
// Wheels from a package index: a hash-locked requirements file is turned into the
// exact wheel files for the image's Python and platform (selected by tags as pip
// ranks them), downloaded in parallel into the layer cache's content-addressed store
// (hashed while they stream, refused and never stored when the hash is not in the
// lock), and checked for dependency closure before anything is installed. `lock`
// does the selection without installing, writing the hashes the index advertises.
#include "layers/cache.hpp"
#include "python/index.hpp"
#include "python/metadata.hpp"
#include "python/requirements.hpp"
#include "python/wheel.hpp"

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace python {

namespace fs = std::filesystem;

// Index settings from the environment, read by the CLI: PIP_INDEX_URL,
// PIP_EXTRA_INDEX_URL and pip.conf (PIP_CONFIG_FILE, /etc/pip.conf,
// $XDG_CONFIG_HOME/pip/pip.conf, ~/.pip/pip.conf), and the netrc file.
struct IndexDefaults {
  std::optional<std::string> index_url;
  std::string index_url_from; // "PIP_INDEX_URL", "/etc/pip.conf", ... (for messages)
  std::vector<std::string> extra_index_urls;
  std::vector<std::string> find_links;
  fs::path netrc; // $NETRC or ~/.netrc
};

// How the index client reaches hosts: TLS (--insecure-registry, --ca-file), retries,
// log; `http` shared with the registry client when both run in one command.
struct IndexAccess {
  IndexDefaults defaults;
  registry::ClientOptions client;
  std::shared_ptr<registry::Transport> http; // null: a fresh registry::Http
  bool insecure_all = false;                 // --insecure: every index host too
};

// A client for `s` over `access` (its own HTTP stack when access.http is null); with
// access.insecure_all, TLS is not verified for the hosts of s's URLs. Also what a debs
// layer fetches apt repositories with (the same TLS rules, proxies, retries and netrc).
struct Sources;
std::unique_ptr<python::PackageIndex> open_index(const Sources& s, const IndexAccess& access, registry::Stats& stats);

// What selection and the closure check need to know of the target.
struct TargetFacts {
  python::PythonTarget target;
  std::string python_full_version;               // "3.11.2"
  std::map<std::string, std::string> markers;    // PEP 508 marker environment
  std::vector<std::string> tags;                 // supported tags, best first
  std::map<std::string, std::string> base_dists; // normalised name -> version, Python distributions in the base
  std::map<std::string, std::vector<std::string>> base_requires; // normalised name -> its Requires-Dist
};
TargetFacts target_facts(const python::PythonTarget& target, const std::string& python_full_version,
                         std::map<std::string, std::string> base_dists);

// Where a layer's wheels come from: spec > the lock's -i > PIP_INDEX_URL > pip.conf >
// PyPI for the primary index; extra indexes and find-links add up. `described` says
// where the primary came from.
struct Sources {
  python::IndexSources sources;
  std::string described;
  // Every index, then every find-links entry, without credentials (messages, keys).
  std::vector<std::string> redacted() const;
};
Sources layer_sources(const std::vector<std::string>& spec_indexes, const std::vector<std::string>& spec_find_links,
                      const python::RequirementsFile& lock, const IndexDefaults& defaults,
                      const std::string& indexes_from = "the spec's wheels.index");

// The file chosen for one requirement.
struct Selected {
  const python::RequirementLine* line = nullptr;
  python::IndexFile file;
  python::WheelName wheel;
  std::string note; // a warning to show (a yanked file taken because it is pinned)
};
// Picks the best wheel for the target among `files` (pip's order: best tag, then
// newest matching version), skipping sdists, other versions, files whose advertised
// hash the lock does not list (`check_hash`), unsupported Requires-Python and tags,
// and yanked files while an unyanked one fits. Throws util::Error(incompatible)
// listing every file of the pinned version and why it was refused.
Selected select_wheel(const python::RequirementLine& line, const std::vector<python::IndexFile>& files,
                      const TargetFacts& facts, bool check_hash);

// A distribution that will be in the image: from the lock (with the extras asked for
// it) or already in the base.
struct ClosureInput {
  std::string name; // normalised
  std::string version;
  std::set<std::string> extras;
  Metadata metadata;
  std::string where; // "requirements.lock:12"
};
// Every Requires-Dist whose marker holds for the target (and the extras asked for) must
// be met by a locked distribution or one in the base; otherwise util::Error(input)
// listing each missing or conflicting requirement and who needs it.
void check_closure(const std::vector<ClosureInput>& locked, const TargetFacts& facts, const std::string& lock_name);

// A wheel downloaded (or found) in the cache.
struct FetchedWheel {
  Selected selected;
  fs::path path;      // the cache blob
  std::string sha256; // verified
  bool downloaded = false;
};
struct FetchStats {
  std::size_t downloaded = 0, cached = 0;
  std::int64_t bytes = 0;
};
// Downloads the selected files into the cache (parallel, resumed after cuts), each
// hashed as it streams; a hash not in its lock line is util::Error(integrity) and
// nothing is stored.
// Progress of one download: file name, bytes so far, total (-1 unknown).
using FetchProgress = std::function<void(const std::string& file, std::int64_t done, std::int64_t total)>;
std::vector<FetchedWheel> fetch_wheels(const std::vector<Selected>& selected, python::PackageIndex& index,
                                       layers::LayerCache& cache, int jobs,
                                       const std::function<void(const std::string&)>& info, FetchStats& stats,
                                       const FetchProgress& progress = {});

// The locked wheels of a wheels layer: the parsed lock and its sources (read once,
// for the layer key and the fetch), then the wheels fetched and closure-checked.
struct LockedLayer {
  fs::path file;
  python::RequirementsFile lock;
  Sources sources;
  std::vector<FetchedWheel> wheels;
  FetchStats stats;
};
// A wheels layer as the spec states it.
struct LockedLayerInput {
  fs::path file;      // the lock file
  std::string origin; // "spec.yaml:12:7" of the lock field, for errors
  std::string layer;  // the layer's name
  std::vector<std::string> indexes, find_links;
};
// Reads the layer's lock (util::Error(input) naming the spec line when it is missing)
// and settles its sources.
LockedLayer open_locked_layer(const LockedLayerInput& layer, const IndexDefaults& defaults);
// Selects, downloads and closure-checks the lock's wheels for the target.
void fetch_locked_layer(LockedLayer& locked, const TargetFacts& facts, const IndexAccess& access,
                        layers::LayerCache& cache, int jobs, const std::function<void(const std::string&)>& info,
                        const FetchProgress& progress = {});

// `paddle-image lock`: requirements in (ranges, names, constraints, pinned lines;
// python/lock_resolve.hpp resolves them for the target and the base), one pinned line
// per package of the closure out, with the hashes of every wheel of that version
// fitting the target (or, with all_platforms, every wheel of it).
struct LockOptions {
  bool all_platforms = false;
  std::vector<std::string> indexes; // --index-url / the spec layer's
  std::vector<std::string> find_links;
  std::string indexes_from = "the spec's wheels.index"; // what the report calls `indexes`
  fs::path existing;                      // the lock being rewritten (-o): its pins are kept when they fit
  bool upgrade = false;                   // --upgrade: keep none of them
  std::set<std::string> upgrade_packages; // --upgrade-package NAME: keep all but these (normalised)
  bool pre = false;                       // --pre
};
struct LockResult {
  std::string text; // the lock file
  struct Line {
    std::string name, version;
    std::vector<std::string> files; // file names whose hashes were written
  };
  std::vector<Line> lines;
  std::vector<std::string> warnings;
  Sources sources;
  std::vector<std::string> in_base; // "numpy==1.24.4 (via requirements.in:2)": the base meets it, not locked
  std::size_t decisions = 0, conflicts = 0, metadata_fetched = 0, metadata_cached = 0;
};
LockResult write_lock(const fs::path& requirements, const TargetFacts& facts, const LockOptions& options,
                      const IndexAccess& access, layers::LayerCache& cache, int jobs,
                      const std::function<void(const std::string&)>& info);

} // namespace python
