#pragma once
// The dependency resolver behind `paddle-image lock`: requirements with ranges in, one
// version per project out, such that every Requires-Dist of every chosen version (its
// markers evaluated for the image's Python and platform) holds. It is PubGrub (the
// algorithm of Dart's pub, Poetry's and uv's resolvers): conflict-driven clause
// learning over "incompatibilities", so a conflict found deep in the graph is learned
// once and backtracking jumps straight to the decision that caused it, and a failure
// is explained as a derivation a person can follow, from the input lines down to the
// incompatible pair.
//
// It is a pure function over a Source (the versions a project offers and what each
// requires), which the lock implements over the package index and the base image and
// the unit tests over a map. Version sets are sets of the versions the source offers
// (a bit each), so complements and intersections of PEP 440 specifiers (wildcards,
// ~=, !=, ===) are exact.
#include "python/pep440.hpp"
#include "python/requirement.hpp"

#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace python::resolver {

// One version a source offers for a project.
struct Candidate {
  pep440::Version version;
  std::string text;       // as it is written in the lock ("2.31.0")
  bool yanked = false;    // PEP 592: every file of it yanked; taken only when pinned with == or ===
  bool installed = false; // the base image's copy (its requirements are the installed METADATA's)
};

// What the resolver asks of the world.
class Source {
public:
  virtual ~Source() = default;
  // The versions of `key` (a normalised project name) that have a file fitting the
  // target, in any order; empty when none does (the project is unknown, or no file fits).
  virtual std::vector<Candidate> candidates(const std::string& key) = 0;
  // Why `key` offers nothing, for the explanation ("no wheel for cp311 manylinux x86_64
  // among its 12 files"); "" when it is simply not on the index.
  virtual std::string why_none(const std::string& key) {
    (void)key;
    return "";
  }
  // The Requires-Dist of `key` at `c`, as written.
  virtual std::vector<std::string> requires_dist(const std::string& key, const Candidate& c) = 0;
  // These projects will be needed soon (their pages, the best candidate's metadata):
  // a source over the network fetches them side by side. A hint only.
  virtual void prefetch(const std::vector<std::string>& keys) { (void)keys; }
};

// A requirement of the input: a requirements line, a constraints line, or a rule of
// the base (what a distribution the base keeps requires).
struct Input {
  Requirement requirement;
  std::string where;       // "requirements.in:3"; for a base rule, "the base keeps paddlepaddle-gpu 2.4.2"
  bool constraint = false; // applies only when the project is in the closure for another reason
};

struct Options {
  std::map<std::string, std::string> markers; // PEP 508 marker environment of the target
  bool pre = false;                           // --pre: pre-releases are candidates like any version
  // Versions tried first when they fit (an existing lock's, the base's): key -> version.
  std::map<std::string, std::string> preferred;
  // The resolution stops with an error after this many decisions and conflicts.
  std::size_t max_steps = 200000;
};

struct Resolved {
  std::string key;  // normalised
  std::string name; // as first written by whoever required it
  Candidate candidate;
  std::set<std::string> extras; // the extras the closure asks of it
  // Who required it, in order: input lines ("requirements.in:3") and chosen packages
  // ("opencv-python 4.8.0.76").
  std::vector<std::string> via;
};

struct Resolution {
  std::vector<Resolved> packages; // sorted by key
  std::size_t decisions = 0;
  std::size_t conflicts = 0; // conflicts resolved by learning (each a backjump)
};

// Resolves `inputs`. Throws util::Error(input) when no set of versions satisfies them,
// its message the derivation (each step on a line), and util::Error(input) when
// max_steps is reached. Errors of the source (network, integrity) pass through.
Resolution resolve(const std::vector<Input>& inputs, Source& source, const Options& options);

} // namespace python::resolver
