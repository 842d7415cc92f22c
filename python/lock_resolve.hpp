#pragma once
// From what `paddle-image lock` reads (requirements with ranges, constraints, pinned
// lines) to what it writes (one NAME==VERSION line per package of the closure), for
// the image's Python and platform and the base it lands on: the resolver
// (python/resolver.hpp) over the index and the base (python/index_source.hpp).
#include "python/index_source.hpp"
#include "python/requirements.hpp"
#include "python/wheel_fetch.hpp"

#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace python {

struct ResolvedLock {
  // The lines the lock writes, sorted by project: pinned input lines as written, and
  // NAME[EXTRAS]==VERSION for every other package of the closure the base does not hold;
  // the input's index options.
  RequirementsFile lines;
  std::vector<std::string> via;     // per line: who needs it ("requirements.in:3", "opencv-python 4.8.0.76")
  std::vector<std::string> in_base; // "numpy==1.24.4 (via requirements.in:2)": met by the base, not locked
  std::size_t decisions = 0, conflicts = 0;
  std::size_t metadata_fetched = 0, metadata_cached = 0;
};

struct ResolveLockOptions {
  bool pre = false;
  // Versions to keep when they still fit: an existing lock's (key -> version).
  std::map<std::string, std::string> keep;
  fs::path metadata_dir; // "" : metadata is not kept between runs
  int jobs = 4;
  std::function<std::string(const IndexFile&)> wheel_metadata; // IndexSource::set_wheel_metadata
};

// The base's Python distributions as the resolver needs them (normalised name ->
// version and Requires-Dist), from what the target interpreter sees.
std::map<std::string, BaseDistribution> base_distributions(const TargetFacts& facts);

// Resolves `input` (parsed in RequirementsMode::resolve). Throws util::Error(input) with
// the derivation when nothing satisfies it; the index's errors pass through.
ResolvedLock resolve_lock(const RequirementsFile& input, const TargetFacts& facts, PackageIndex& index,
                          const ResolveLockOptions& options);

// The pins of an existing lock to keep (--upgrade: none; --upgrade-package NAME: all
// but those); an unreadable or hand-broken lock keeps nothing, with a warning.
std::map<std::string, std::string> existing_pins(const fs::path& lock, bool upgrade,
                                                 const std::set<std::string>& upgrade_packages,
                                                 std::vector<std::string>& warnings);

} // namespace python
