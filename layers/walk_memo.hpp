#pragma once
// What a walk of a layer's copy rules saw, kept so a no-change rebuild can tell that
// nothing changed by stat'ing what the walk stat'ed, without reading a directory,
// building the entry set or hashing it (the stat index that git keeps for the same
// reason). A directory's mtime changes when an entry is added, removed or renamed in
// it, a file's mtime or ctime when its content, mode, owner or xattrs change, so equal
// stat data means the walk would find the same entries with the same stat data, and
// so the same layer key.

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

struct stat;

namespace layers {

namespace fs = std::filesystem;

// The stat data a layer key is made from.
struct StatSig {
  std::uint64_t dev = 0;
  std::uint64_t ino = 0;
  std::uint32_t mode = 0;
  std::int64_t size = 0;
  std::int64_t mtime_ns = 0;
  std::int64_t ctime_ns = 0;
  bool operator==(const StatSig&) const = default;
};
StatSig stat_sig(const struct stat& st);

// Racily clean paths (git's rule): a file changed within the file system's timestamp
// granularity of a walk can change again without a change of its stat data (a
// same-size edit in the same second on a file system of 1-second timestamps), so stat
// data vouches for a path only when its mtime and ctime are older than the walk's start
// by more than that granularity. Content decides for the rest (layers::ContentChecks).
//
// The granularity of a path's timestamps: 2 s when both have no sub-second part (file
// systems of 1- or 2-second timestamps: ext4 with 128-byte inodes, FAT, some NFS and
// overlay set-ups), else the kernel's coarse clock tick with a margin (10 ms at least).
std::int64_t timestamp_granularity_ns(std::int64_t mtime_ns, std::int64_t ctime_ns);
// Whether a path with these times is racily clean relative to a walk started at `start_ns`.
bool racily_clean(std::int64_t mtime_ns, std::int64_t ctime_ns, std::int64_t start_ns);
// The wall clock now (CLOCK_REALTIME, the clock file times come from), in ns.
std::int64_t wall_clock_ns();

// Every lstat of a walk: each rule's source, then each directory read, with what the
// walk kept of it (names it excluded or ignored are not stat'ed; a new one still
// changes the directory's mtime).
struct WalkLog {
  struct Child {
    std::string name;
    StatSig sig;
  };
  struct Dir {
    std::string host;
    std::vector<Child> children;
  };
  std::vector<std::pair<std::string, StatSig>> roots;
  std::vector<Dir> dirs;
};

// True when every path of the log still has the stat data it had (directories are
// checked by `threads` threads of util::parallel_for; after the first difference the
// rest are skipped). Throws Error(interrupted) on a signal, as parallel_for does.
bool walk_unchanged(const WalkLog& log, int threads);
// Whether any path of the log is racily clean relative to `start_ns`: then the log
// cannot vouch for the walk (an entry added to a directory in the same second leaves
// its mtime as it was) and is not kept as a memo.
bool log_has_racy_paths(const WalkLog& log, std::int64_t start_ns);

// A walk's log with what the build made of it: the layer key, the layer's tree
// (layers::entry_tree) and the base's symlinks its destinations went through, which
// also depend on what the layer landed on (`landing`, a digest the caller makes).
struct WalkMemo {
  std::string landing;
  std::string key;
  nlohmann::json tree = nlohmann::json::array();
  std::vector<std::string> links;
  WalkLog log;
};

// Written atomically. Throws util::Error(io) when the file cannot be written.
void write_walk_memo(const fs::path& file, const WalkMemo& memo);
// nullopt when the file is missing, of another format version or malformed.
std::optional<WalkMemo> read_walk_memo(const fs::path& file);
// The key line of a memo file, without reading the rest ("" when unreadable).
std::string walk_memo_key(const fs::path& file);

// The memo's whole life, here: whether the memo at `file` may stand in for a walk of
// the layer `layer` landing on `landing` (read, of this format, made on the same
// landing, every path stat'ing as it did; `debug` says which), nullopt otherwise.
std::optional<WalkMemo> reusable_walk_memo(const fs::path& file, const std::string& landing, int threads,
                                           const std::string& layer,
                                           const std::function<void(const std::string&)>& debug);
// After a walk: its memo kept for the next build, or (`racy`: paths changed within the
// walk's timestamp granularity, which stat data cannot vouch for) the old one removed.
// Best effort: a memo that cannot be written is said in `debug`; an interruption throws.
void keep_walk_memo(const fs::path& file, const WalkMemo& memo, bool racy, const std::string& layer,
                    const std::function<void(const std::string&)>& debug);
// Removes the memos in `dir` whose layer key `has_key` no longer finds (they cannot
// spare a walk any more), or every one with `all`.
void prune_walk_memos(const fs::path& dir, const std::function<bool(const std::string& key)>& has_key, bool all);

} // namespace layers
