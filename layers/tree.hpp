#pragma once
// The contents of one layer as a sorted set of entries, gathered from the file
// system without reading file data. Normalisation (modes, owners, parents) happens
// here; timestamps are applied by the tar writer from SOURCE_DATE_EPOCH.
#include "layers/walk_memo.hpp"
#include "util/path_match.hpp"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

struct stat;

namespace layers {

namespace fs = std::filesystem;

// A user or group name of a tar header. A layer's or a base's entries share the few
// names there are: each holds a pointer to one interned copy, not a string of its own
// (two strings per entry were 64 of its bytes, most of them empty).
class Name {
public:
  Name() = default;
  Name(const std::string& text) : m_text(text.empty() ? nullptr : intern(text)) {} // NOLINT: implicit
  Name(const char* text) : Name(std::string(text)) {}                              // NOLINT: implicit
  const std::string& str() const { return m_text != nullptr ? *m_text : empty_text(); }
  operator const std::string&() const { return str(); } // NOLINT: implicit, reads as a string
  bool empty() const { return m_text == nullptr; }
  const char* c_str() const { return str().c_str(); }
  // Interned: the same text is the same pointer.
  bool operator==(const Name& other) const { return m_text == other.m_text; }

private:
  static const std::string* intern(const std::string& text);
  static const std::string& empty_text();
  const std::string* m_text = nullptr;
};

struct Owner {
  std::int64_t uid = 0;
  std::int64_t gid = 0;
  Name uname;
  Name gname;
  bool operator==(const Owner&) const = default;
};

// A directory's extended attributes (a base directory's, kept when a layer writes into
// it): shared and absent for nearly every entry, so an entry holds a pointer.
using Xattrs = std::shared_ptr<const std::map<std::string, std::string>>;

struct Entry {
  enum class Type { file, dir, symlink, hardlink };
  std::string path; // image path without leading '/', e.g. "usr/local/bin/x"
  Type type = Type::file;
  std::uint32_t mode = 0644;
  Owner owner;
  std::int64_t size = 0;
  std::string source;      // regular files: where the bytes come from (host path)
  std::string link_target; // symlink target, or the path a hardlink points at
  Xattrs xattrs;           // written as PAX xattr records (a base directory's); null: none
  // Stat key (never written to the tar): lets the cache see any edit.
  std::uint64_t dev = 0;
  std::uint64_t ino = 0;
  std::int64_t mtime_ns = 0;
  std::int64_t ctime_ns = 0;
};

// One "copy FROM to TO" rule of a layer.
struct CopyRule {
  fs::path from;  // file or directory on the host
  std::string to; // absolute image path ("/app" or "/app/" = into; "/x.py" = as)
  std::vector<std::string> exclude;
  std::optional<std::uint32_t> file_mode; // forced mode for regular files
  std::optional<std::uint32_t> dir_mode;  // forced mode for directories
  Owner owner;
  bool allow_absolute_symlinks = false;
  std::string origin; // "spec.yaml:12:5" for error messages
  // .paddleimageignore patterns (gitignore syntax, later ones win, '!' re-includes),
  // matched against ignore_prefix/REL for everything beneath `from` (never `from` itself:
  // naming a path in a rule asks for it).
  std::vector<std::string> ignore;
  std::string ignore_prefix;
  // A link to make at `to` pointing here, in place of `from` (nothing read from disk).
  std::optional<std::string> symlink;
  // A directory to make at `to` (dir_mode, default 0755; owner), in place of `from`.
  bool directory = false;
};

class EntrySet {
public:
  // Adds everything a rule names. Throws util::Error(input) for missing sources,
  // escaping paths, symlinks leaving the source tree, special files.
  void add(const CopyRule& rule);
  // Creates missing parent directories and turns repeated inodes into hardlinks.
  void finalize(const Owner& parent_owner);
  // Adds a directory (0755, `owner`) for every missing parent.
  void add_missing_parents(const Owner& owner);
  // Replaces every entry (apply_base_view moves and adjusts them).
  void replace_entries(std::map<std::string, Entry> entries) { m_entries = std::move(entries); }
  // Hands every entry over (the set is left empty), so a caller can move and adjust
  // them without a copy, then give them back with replace_entries.
  std::map<std::string, Entry> take_entries() { return std::exchange(m_entries, {}); }
  const std::map<std::string, Entry>& entries() const { return m_entries; }
  // Threads for walking directories (the result does not depend on it).
  void set_threads(int threads) { m_threads = threads; }
  // Records every lstat of the rules added after this into `log` (a walk memo's), or
  // nothing when null. The log must outlive the adds.
  void set_walk_log(WalkLog* log) { m_log = log; }
  // Changes the owner of an existing entry (no-op when absent).
  void set_owner(const std::string& path, const Owner& owner);
  std::int64_t total_size() const;

private:
  using MakeEntry = std::function<Entry(const std::string& host, const struct stat& st, const std::string& image_path,
                                        const std::string& rel)>;
  void put(Entry e, const std::string& origin);
  void add_directory(const CopyRule& rule);
  void walk(const std::string& from, const std::string& to, const CopyRule& rule, const MakeEntry& make_entry);
  int m_threads = 1;
  WalkLog* m_log = nullptr;
  std::map<std::string, Entry> m_entries;
};

// A layer's entries cut into parts of about part_bytes of file content each (a part
// ends with the file that reaches part_bytes; the last holds the rest; past max_parts,
// max_parts even shares), in path order, so a node can
// unpack the first parts while the rest still downloads. Each part carries the
// directories above its entries (the same entries again, so every part lands them the
// same way), and a hard link goes into its target's part. One part holding every entry
// when the files add up to part_bytes or less (or part_bytes is 0).
std::vector<std::map<std::string, Entry>> split_entries(const std::map<std::string, Entry>& entries,
                                                        std::uint64_t part_bytes, std::size_t max_parts);

// Normalises an absolute image path ("/a/./b/") to "a/b"; rejects ".." that leaves
// the root. An empty result means the root itself.
std::string normalize_image_path(const std::string& path, const std::string& origin);
// exclude and .paddleimageignore patterns (util/path_match.hpp).
using util::excluded;
using util::ignored;

} // namespace layers
