#pragma once
// The resolver's view of the world for `paddle-image lock`: the versions a package
// index offers that have a wheel for the image's Python and platform (tags ranked as
// pip ranks them, Requires-Python, PEP 592 yanking), what each requires (PEP 658
// metadata files where the index has them, else the wheel's own METADATA; cached on
// disk by hash, fetched side by side), and the distributions the base image already
// holds. A base distribution the input does not name is kept: the base's copy is its
// only candidate, and what it requires binds the resolution (keep_rules). One the input
// names may be replaced by an index version; the base's copy is still preferred.
#include "python/index.hpp"
#include "python/resolver.hpp"
#include "python/wheel_fetch.hpp"

#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace python {

namespace fs = std::filesystem;

struct BaseDistribution {
  std::string name, version;
  std::vector<std::string> requires_dist;
};

class IndexSource : public resolver::Source {
public:
  // `named`: the normalised projects the input names (they may replace the base's);
  // `metadata_dir`: where metadata files are kept by hash ("" : not kept).
  IndexSource(PackageIndex& index, const TargetFacts& facts, std::map<std::string, BaseDistribution> base,
              std::set<std::string> named, fs::path metadata_dir, int jobs);

  std::vector<resolver::Candidate> candidates(const std::string& key) override;
  std::string why_none(const std::string& key) override;
  std::vector<std::string> requires_dist(const std::string& key, const resolver::Candidate& c) override;
  void prefetch(const std::vector<std::string>& keys) override;

  // What the kept base distributions require of others, as constraints: each
  // Requires-Dist (markers of the target) that the base itself satisfies.
  std::vector<resolver::Input> keep_rules() const;
  // The index page of a project (fetched once).
  const std::vector<IndexFile>& page(const std::string& key);

  // How a wheel without a PEP 658 metadata file but with an advertised sha256 is read:
  // the lock fetches it into the layer cache (where the build finds it) and returns its
  // METADATA. Unset, or for a file without a hash, it is downloaded to a scratch file.
  void set_wheel_metadata(std::function<std::string(const IndexFile&)> read) { m_wheel_metadata = std::move(read); }

  std::size_t metadata_fetched() const { return m_metadata_fetched; }
  std::size_t metadata_cached() const { return m_metadata_cached; }

private:
  struct Version {
    resolver::Candidate candidate;
    std::vector<const IndexFile*> files; // fitting wheels, best first
  };
  struct Project {
    std::vector<IndexFile> page;
    std::vector<Version> versions;
    std::size_t files = 0, refused = 0;
    std::string refusal; // one example of why a file does not fit
  };
  Project& project(const std::string& key);
  std::string fetch_metadata(const IndexFile& file);

  PackageIndex& m_index;
  const TargetFacts& m_facts;
  std::map<std::string, BaseDistribution> m_base;
  std::set<std::string> m_named;
  fs::path m_metadata_dir;
  int m_jobs;
  std::mutex m_mutex;
  std::map<std::string, std::unique_ptr<Project>> m_projects;
  std::map<std::string, std::unique_ptr<std::once_flag>> m_loading;
  std::mutex m_meta_mutex;
  std::map<std::string, std::vector<std::string>> m_meta; // url -> Requires-Dist
  std::size_t m_metadata_fetched = 0, m_metadata_cached = 0;
  std::function<std::string(const IndexFile&)> m_wheel_metadata;
};

} // namespace python
