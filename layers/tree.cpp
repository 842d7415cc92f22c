#include "layers/tree.hpp"

#include "util/encoding.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <deque>
#include <dirent.h>
#include <fcntl.h>
#include <functional>
#include <memory>
#include <mutex>
#include <sys/stat.h>
#include <thread>
#include <tuple>
#include <unistd.h>
#include <unordered_set>

namespace layers {

using util::Error;
using util::ErrorKind;

namespace {

struct stat lstat_or_throw(const fs::path& p, const std::string& origin) {
  struct stat st {};
  if (::lstat(p.c_str(), &st) != 0) {
    throw Error(ErrorKind::input, origin + ": source '" + p.string() + "' does not exist",
                "check the path; relative paths are resolved against the spec file's directory");
  }
  return st;
}

std::string join(const std::string& dir, const std::string& name) {
  return dir.empty() ? name : dir + "/" + name;
}

// One directory of a walk waiting to be read: where it is on the host, and its path
// below the rule's source.
struct WalkDir {
  std::string host;
  std::string rel;
};

// Reads one directory of a walk: its entries (as `make_entry` makes them, leaving out
// what the rule excludes or ignores) into `out`, its subdirectories into `subdirs`;
// children are stat'ed with fstatat relative to the directory.
template <typename MakeEntry>
void scan_directory(const WalkDir& dir, const std::string& to, const CopyRule& rule, const MakeEntry& make_entry,
                    std::vector<Entry>& out, std::vector<WalkDir>& subdirs, std::vector<WalkLog::Child>* seen) {
  int fd = ::open(dir.host.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    util::throw_errno(rule.origin + ": cannot read directory " + dir.host);
  }
  DIR* d = ::fdopendir(fd);
  if (d == nullptr) {
    ::close(fd);
    util::throw_errno(rule.origin + ": cannot read directory " + dir.host);
  }
  std::unique_ptr<DIR, int (*)(DIR*)> guard(d, ::closedir);
  while (struct dirent* de = ::readdir(d)) {
    std::string name = de->d_name;
    if (name == "." || name == "..") {
      continue;
    }
    std::string rel = dir.rel.empty() ? name : dir.rel + "/" + name;
    if (excluded(rule.exclude, rel) ||
        (!rule.ignore.empty() &&
         ignored(rule.ignore, rule.ignore_prefix.empty() ? rel : rule.ignore_prefix + "/" + rel))) {
      continue;
    }
    if (!util::is_valid_utf8(name)) {
      // Tar headers (PAX) carry UTF-8 names; anything else cannot be written faithfully.
      throw Error(ErrorKind::input,
                  rule.origin + ": file name '" + util::escape_bytes(dir.host + "/" + name) + "' is not valid UTF-8",
                  "rename it, or leave it out with an exclude: or .paddleimageignore pattern that matches it "
                  "(a glob with '?' or '*' in place of the odd bytes); image file names must be UTF-8");
    }
    struct stat st {};
    if (::fstatat(fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      util::throw_errno(rule.origin + ": cannot stat " + dir.host + "/" + name);
    }
    if (seen != nullptr) {
      seen->push_back(WalkLog::Child{name, stat_sig(st)});
    }
    std::string host = dir.host + "/" + name;
    out.push_back(make_entry(host, st, join(to, rel), rel));
    if (S_ISDIR(st.st_mode)) {
      subdirs.push_back(WalkDir{std::move(host), std::move(rel)});
    }
  }
}

} // namespace

std::string normalize_image_path(const std::string& path, const std::string& origin) {
  std::vector<std::string> parts;
  std::size_t i = 0;
  while (i <= path.size()) {
    auto j = path.find('/', i);
    std::string comp = path.substr(i, j == std::string::npos ? std::string::npos : j - i);
    if (comp == "..") {
      if (parts.empty()) {
        throw Error(ErrorKind::input, origin + ": path '" + path + "' escapes the image root",
                    "use an absolute image path without '..', e.g. /app");
      }
      parts.pop_back();
    } else if (!comp.empty() && comp != ".") {
      parts.push_back(comp);
    }
    if (j == std::string::npos) {
      break;
    }
    i = j + 1;
  }
  std::string out;
  for (const auto& p : parts) {
    out = join(out, p);
  }
  return out;
}

const std::string* Name::intern(const std::string& text) {
  // Never freed: the names a process meets are few (a hostile base's many names cost
  // what their strings cost before, once each).
  static std::mutex mu;
  static auto* names = new std::unordered_set<std::string>();
  std::lock_guard<std::mutex> lock(mu);
  return &*names->insert(text).first;
}

const std::string& Name::empty_text() {
  static const std::string empty;
  return empty;
}

void EntrySet::put(Entry e, const std::string& origin) {
  if (e.path.empty()) {
    return; // the root directory is implied
  }
  // The key is copied first: the entry itself is moved in (a copy of every string of
  // a 30,000-file layer would double the set's memory while the walk hands it over).
  std::string key = e.path;
  auto [it, inserted] = m_entries.try_emplace(std::move(key), std::move(e));
  if (!inserted) {
    if (it->second.type == Entry::Type::dir && e.type == Entry::Type::dir) {
      return;
    }
    if (it->second.type == Entry::Type::dir || e.type == Entry::Type::dir) {
      throw Error(ErrorKind::input, origin + ": '/" + e.path + "' is both a directory and a file in this layer",
                  "change one of the 'to:' paths");
    }
    it->second = std::move(e); // a later rule overrides an earlier file
  }
}

// A directory rule's entry: its mode and owner win over a directory an earlier rule of
// the layer made there (a copy into it, its parent), as `mkdir -m` and a later `chmod`
// would leave it; a file or symlink already at the path is a clash.
void EntrySet::add_directory(const CopyRule& rule) {
  Entry e;
  e.path = normalize_image_path(rule.to, rule.origin);
  if (e.path.empty()) {
    throw Error(ErrorKind::input, rule.origin + ": a directory rule for '/' makes nothing",
                "name the directory to make, e.g. directory: /data/models");
  }
  e.type = Entry::Type::dir;
  e.mode = rule.dir_mode.value_or(0755);
  e.owner = rule.owner;
  auto it = m_entries.find(e.path);
  if (it != m_entries.end() && it->second.type == Entry::Type::dir) {
    it->second.mode = e.mode;
    it->second.owner = e.owner;
    return;
  }
  put(std::move(e), rule.origin);
}

void EntrySet::add(const CopyRule& rule) {
  if (rule.symlink) {
    Entry e;
    e.path = normalize_image_path(rule.to, rule.origin);
    e.type = Entry::Type::symlink;
    e.mode = 0777;
    e.owner = rule.owner;
    e.link_target = *rule.symlink;
    put(std::move(e), rule.origin);
    return;
  }
  if (rule.directory) {
    add_directory(rule);
    return;
  }
  struct stat root_st = lstat_or_throw(rule.from, rule.origin);
  if (m_log != nullptr) {
    m_log->roots.emplace_back(rule.from.string(), stat_sig(root_st));
  }
  bool into = !rule.to.empty() && rule.to.back() == '/';
  std::string to = normalize_image_path(rule.to, rule.origin);

  MakeEntry make_entry = [&](const std::string& host, const struct stat& st, const std::string& image_path,
                             const std::string& rel) -> Entry {
    Entry e;
    e.path = image_path;
    e.owner = rule.owner;
    e.dev = st.st_dev;
    e.ino = st.st_ino;
    e.mtime_ns = util::timespec_ns(st.st_mtim);
    e.ctime_ns = util::timespec_ns(st.st_ctim);
    if (S_ISDIR(st.st_mode)) {
      e.type = Entry::Type::dir;
      e.mode = rule.dir_mode.value_or(0755);
    } else if (S_ISREG(st.st_mode)) {
      e.type = Entry::Type::file;
      e.mode = rule.file_mode.value_or((st.st_mode & 0111) != 0 ? 0755 : 0644);
      e.size = st.st_size;
      e.source = host;
    } else if (S_ISLNK(st.st_mode)) {
      e.type = Entry::Type::symlink;
      e.mode = 0777;
      std::error_code ec;
      e.link_target = fs::read_symlink(host, ec).string();
      if (ec) {
        throw Error(ErrorKind::io, rule.origin + ": cannot read symlink " + host);
      }
      if (!e.link_target.empty() && e.link_target.front() == '/') {
        if (!rule.allow_absolute_symlinks) {
          throw Error(ErrorKind::input,
                      rule.origin + ": symlink '" + host + "' points outside the source tree (to " + e.link_target +
                          ")",
                      "make it relative inside '" + rule.from.string() +
                          "', exclude it, or set allow_absolute_symlinks: true if the target is an image path");
        }
      } else {
        // Resolve lexically against the link's own directory inside the source tree.
        std::string parent = rel.find('/') == std::string::npos ? "" : rel.substr(0, rel.rfind('/'));
        std::string probe(1, '/'); // appended: GCC 12 -O3 gives a false -Wrestrict for "/" + string
        probe.append(join(parent, e.link_target));
        try {
          (void)normalize_image_path(probe, rule.origin);
        } catch (const Error&) {
          throw Error(ErrorKind::input,
                      rule.origin + ": symlink '" + host + "' points outside the source tree (to " + e.link_target +
                          ")",
                      "copy the target itself, or exclude the link");
        }
      }
    } else {
      throw Error(ErrorKind::input,
                  rule.origin + ": '" + host + "' is a device, fifo or socket, which layers cannot hold",
                  "add it to 'exclude:'");
    }
    return e;
  };

  if (!S_ISDIR(root_st.st_mode)) {
    std::string name = rule.from.filename().string();
    std::string dst = into || to.empty() ? join(to, name) : to;
    put(make_entry(rule.from.string(), root_st, dst, name), rule.origin);
    return;
  }
  if (!to.empty()) {
    put(make_entry(rule.from.string(), root_st, to, ""), rule.origin);
  }
  walk(rule.from.string(), to, rule, make_entry);
}

// Directories are scanned by up to m_threads workers sharing a queue (a no-change
// rebuild of a big tree is mostly this stat-bound walk); children are stat'ed with
// fstatat relative to their directory. Entries go into the sorted map afterwards, so
// the result does not depend on the scheduling.
void EntrySet::walk(const std::string& from, const std::string& to, const CopyRule& rule, const MakeEntry& make_entry) {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<WalkDir> queue{WalkDir{from, ""}};
  int busy = 0;
  std::exception_ptr error;
  int n = std::max(1, m_threads);

  // Each directory's entries go into the set as soon as it is read (paths within one
  // walk are distinct, so the order of the puts does not change the result); holding
  // the whole walk in per-thread lists first cost a second copy of every entry.
  auto worker = [&]() {
    std::vector<Entry> found;
    for (;;) {
      WalkDir dir;
      {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return !queue.empty() || busy == 0 || error; });
        if (error || queue.empty()) {
          cv.notify_all();
          return;
        }
        dir = std::move(queue.front());
        queue.pop_front();
        ++busy;
      }
      std::vector<WalkDir> subdirs;
      std::vector<WalkLog::Child> seen;
      std::exception_ptr failed;
      found.clear();
      try {
        scan_directory(dir, to, rule, make_entry, found, subdirs, m_log != nullptr ? &seen : nullptr);
      } catch (...) {
        failed = std::current_exception();
      }
      {
        std::lock_guard<std::mutex> lock(mu);
        if (!failed && !error) {
          try {
            for (auto& e : found) {
              put(std::move(e), rule.origin);
            }
          } catch (...) {
            failed = std::current_exception();
          }
        }
        if (failed && !error) {
          error = failed;
        }
        for (auto& s : subdirs) {
          queue.push_back(std::move(s));
        }
        if (m_log != nullptr && !failed) {
          m_log->dirs.push_back(WalkLog::Dir{std::move(dir.host), std::move(seen)});
        }
        --busy;
      }
      cv.notify_all();
    }
  };
  if (n == 1) {
    worker();
  } else {
    std::vector<std::thread> threads;
    for (int i = 0; i < n; ++i) {
      threads.emplace_back(worker);
    }
    for (auto& t : threads) {
      t.join();
    }
  }
  if (error) {
    std::rethrow_exception(error);
  }
}

void EntrySet::finalize(const Owner& parent_owner) {
  add_missing_parents(parent_owner);
  // The first path (in sorted order) of an inode holds the data; later ones link to it,
  // but only when everything the header carries is the same: a hard link shares the
  // inode, so a link with another mode or owner would unpack with the first one's.
  using LinkKey =
      std::tuple<std::uint64_t, std::uint64_t, std::uint32_t, std::int64_t, std::int64_t, std::string, std::string>;
  // Only an inode met more than once can become a link: counting them first keeps the
  // key map (a path and two names per file) to those few instead of every file.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> inodes;
  for (const auto& [path, e] : m_entries) {
    if (e.type == Entry::Type::file && e.ino != 0) {
      inodes.emplace_back(e.dev, e.ino);
    }
  }
  std::sort(inodes.begin(), inodes.end());
  auto repeated = [&](const Entry& e) {
    auto range = std::equal_range(inodes.begin(), inodes.end(), std::make_pair(e.dev, e.ino));
    return range.second - range.first > 1;
  };
  std::map<LinkKey, std::string> seen;
  for (auto& [path, e] : m_entries) {
    if (e.type != Entry::Type::file || e.ino == 0 || !repeated(e)) {
      continue;
    }
    auto [it, inserted] =
        seen.try_emplace(LinkKey{e.dev, e.ino, e.mode, e.owner.uid, e.owner.gid, e.owner.uname, e.owner.gname}, path);
    if (!inserted) {
      e.type = Entry::Type::hardlink;
      e.link_target = it->second;
      e.size = 0;
    }
  }
}

void EntrySet::add_missing_parents(const Owner& parent_owner) {
  // Only the immediate parent is looked up per entry; a missing one is created
  // together with its own missing ancestors. In sorted order siblings follow one
  // another, so the last parent found present answers most entries without a lookup
  // (or a copy of the parent's path).
  std::vector<std::string> missing;
  std::string present;
  for (const auto& [path, e] : m_entries) {
    auto slash = path.rfind('/');
    if (slash != std::string::npos && slash == present.size() && path.compare(0, slash, present) == 0) {
      continue;
    }
    bool immediate = true;
    while (slash != std::string::npos) {
      std::string parent = path.substr(0, slash);
      if (m_entries.count(parent) > 0) {
        if (immediate) {
          present = std::move(parent);
        }
        break;
      }
      immediate = false;
      if (!missing.empty() && missing.back() == parent) {
        break;
      }
      missing.push_back(parent);
      slash = parent.rfind('/');
    }
  }
  for (auto& p : missing) {
    Entry d;
    d.path = std::move(p);
    d.type = Entry::Type::dir;
    d.mode = 0755;
    d.owner = parent_owner;
    m_entries.try_emplace(d.path, d);
  }
}

void EntrySet::set_owner(const std::string& path, const Owner& owner) {
  if (auto it = m_entries.find(path); it != m_entries.end()) {
    it->second.owner = owner;
  }
}

std::int64_t EntrySet::total_size() const {
  std::int64_t total = 0;
  for (const auto& [p, e] : m_entries) {
    total += e.size;
  }
  return total;
}

namespace {

// Adds e to part, after the directories above it that part lacks.
void add_with_parents(std::map<std::string, Entry>& part, const std::map<std::string, Entry>& all, const Entry& e) {
  std::vector<std::string> missing;
  std::string dir = e.path;
  for (auto slash = dir.rfind('/'); slash != std::string::npos && slash > 0; slash = dir.rfind('/')) {
    dir.resize(slash);
    if (part.count(dir) != 0) {
      break;
    }
    missing.push_back(dir);
  }
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (auto found = all.find(*it); found != all.end()) {
      part.emplace(found->first, found->second);
    }
  }
  part.emplace(e.path, e);
}

} // namespace

std::vector<std::map<std::string, Entry>> split_entries(const std::map<std::string, Entry>& entries,
                                                        std::uint64_t part_bytes, std::size_t max_parts) {
  std::uint64_t total = 0;
  for (const auto& [path, e] : entries) {
    if (e.type == Entry::Type::file) {
      total += static_cast<std::uint64_t>(e.size);
    }
  }
  const std::uint64_t wanted = part_bytes == 0 ? 1 : total / part_bytes + (total % part_bytes != 0 ? 1 : 0);
  const std::size_t n = static_cast<std::size_t>(
      std::clamp<std::uint64_t>(wanted, 1, std::max<std::uint64_t>(1, static_cast<std::uint64_t>(max_parts))));
  std::vector<std::map<std::string, Entry>> parts(n);
  if (n == 1) {
    parts[0] = entries;
    return parts;
  }
  // Fixed boundaries where the files allow: a file changed in one part moves no
  // other part's boundary unless its size crosses one (an even share of the total
  // would move every boundary with every size). Past max_parts, an even share.
  const std::uint64_t target = wanted <= n ? part_bytes : (total + n - 1) / n;
  std::size_t cur = 0;
  std::uint64_t filled = 0;
  std::map<std::string_view, std::size_t> file_part; // where each file went: its hard links follow it
  for (const auto& [path, e] : entries) {
    std::size_t k = cur;
    if (e.type == Entry::Type::file) {
      if (filled >= target && cur + 1 < n) {
        ++cur;
        filled = 0;
      }
      k = cur;
      filled += static_cast<std::uint64_t>(e.size);
      file_part.emplace(path, k);
    } else if (e.type == Entry::Type::hardlink) {
      std::string_view target_path = e.link_target;
      if (!target_path.empty() && target_path.front() == '/') {
        target_path.remove_prefix(1);
      }
      if (auto f = file_part.find(target_path); f != file_part.end()) {
        k = f->second;
      }
    }
    add_with_parents(parts[k], entries, e);
  }
  while (parts.size() > 1 && parts.back().empty()) {
    parts.pop_back();
  }
  return parts;
}

} // namespace layers
