#include "layers/tree.hpp"

#include "util/error.hpp"

#include <cerrno>
#include <dirent.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <functional>
#include <unistd.h>
#include <sys/stat.h>

namespace layers {

using util::Error;
using util::ErrorKind;

namespace {

std::int64_t ns(const struct timespec& ts) { return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec; }

struct stat lstat_or_throw(const fs::path& p, const std::string& origin) {
  struct stat st {};
  if (::lstat(p.c_str(), &st) != 0) {
    throw Error(ErrorKind::input, origin + ": source '" + p.string() + "' does not exist",
                "check the path; relative paths are resolved against the spec file's directory");
  }
  return st;
}

std::string join(const std::string& dir, const std::string& name) { return dir.empty() ? name : dir + "/" + name; }

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

bool excluded(const std::vector<std::string>& patterns, const std::string& rel_path) {
  std::string base = rel_path.substr(rel_path.rfind('/') == std::string::npos ? 0 : rel_path.rfind('/') + 1);
  for (const auto& pat : patterns) {
    std::string p = pat;
    while (!p.empty() && p.back() == '/') {
      p.pop_back();
    }
    if (p.find('/') == std::string::npos) {
      if (::fnmatch(p.c_str(), base.c_str(), FNM_PERIOD) == 0 || p == base) {
        return true;
      }
    } else {
      if (p.front() == '/') {
        p.erase(0, 1);
      }
      if (::fnmatch(p.c_str(), rel_path.c_str(), 0) == 0) {
        return true;
      }
    }
  }
  return false;
}

void EntrySet::put(Entry e, const std::string& origin) {
  if (e.path.empty()) {
    return; // the root directory is implied
  }
  auto [it, inserted] = m_entries.try_emplace(e.path, e);
  if (!inserted) {
    if (it->second.type == Entry::Type::dir && e.type == Entry::Type::dir) {
      return;
    }
    if (it->second.type == Entry::Type::dir || e.type == Entry::Type::dir) {
      throw Error(ErrorKind::input, origin + ": '/" + e.path + "' is both a directory and a file in this layer",
                  "change one of the 'to:' paths");
    }
    it->second = e; // a later rule overrides an earlier file
  }
}

void EntrySet::add_file(const std::string& image_path, const fs::path& source, std::uint32_t mode, const Owner& owner) {
  struct stat st = lstat_or_throw(source, image_path);
  Entry e;
  e.path = normalize_image_path(image_path, image_path);
  e.type = Entry::Type::file;
  e.mode = mode;
  e.owner = owner;
  e.size = st.st_size;
  e.source = source.string();
  e.dev = st.st_dev;
  e.ino = st.st_ino;
  e.mtime_ns = ns(st.st_mtim);
  e.ctime_ns = ns(st.st_ctim);
  put(e, image_path);
}

void EntrySet::add(const CopyRule& rule) {
  struct stat root_st = lstat_or_throw(rule.from, rule.origin);
  bool into = !rule.to.empty() && rule.to.back() == '/';
  std::string to = normalize_image_path(rule.to, rule.origin);

  MakeEntry make_entry = [&](const std::string& host, const struct stat& st, const std::string& image_path,
                             const std::string& rel) -> Entry {
    Entry e;
    e.path = image_path;
    e.owner = rule.owner;
    e.dev = st.st_dev;
    e.ino = st.st_ino;
    e.mtime_ns = ns(st.st_mtim);
    e.ctime_ns = ns(st.st_ctim);
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
                      rule.origin + ": symlink '" + host + "' points outside the source tree (to " +
                          e.link_target + ")",
                      "make it relative inside '" + rule.from.string() +
                          "', exclude it, or set allow_absolute_symlinks: true if the target is an image path");
        }
      } else {
        // Resolve lexically against the link's own directory inside the source tree.
        std::string parent = rel.find('/') == std::string::npos ? "" : rel.substr(0, rel.rfind('/'));
        std::string probe = "/" + join(parent, e.link_target);
        try {
          (void)normalize_image_path(probe, rule.origin);
        } catch (const Error&) {
          throw Error(ErrorKind::input,
                      rule.origin + ": symlink '" + host + "' points outside the source tree (to " +
                          e.link_target + ")",
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
  // Walk with openat/fstatat: no repeated path resolution, no std::filesystem::path
  // parsing per file (the no-change rebuild of a large tree is mostly this walk).
  std::string from = rule.from.string();
  int root_fd = ::open(from.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (root_fd < 0) {
    util::throw_errno(rule.origin + ": cannot read directory " + from);
  }
  walk(root_fd, from, "", to, rule, make_entry);
}

void EntrySet::walk(int dir_fd, const std::string& host_dir, const std::string& rel_dir, const std::string& to,
                    const CopyRule& rule, const MakeEntry& make_entry) {
  DIR* d = ::fdopendir(dir_fd);
  if (d == nullptr) {
    ::close(dir_fd);
    util::throw_errno(rule.origin + ": cannot read directory " + host_dir);
  }
  std::vector<std::string> names;
  errno = 0;
  while (struct dirent* de = ::readdir(d)) {
    std::string name = de->d_name;
    if (name != "." && name != "..") {
      names.push_back(std::move(name));
    }
  }
  try {
    for (const auto& name : names) {
      std::string rel = rel_dir.empty() ? name : rel_dir + "/" + name;
      if (excluded(rule.exclude, rel)) {
        continue;
      }
      struct stat st {};
      if (::fstatat(::dirfd(d), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
        util::throw_errno(rule.origin + ": cannot stat " + host_dir + "/" + name);
      }
      std::string host = host_dir + "/" + name;
      put(make_entry(host, st, join(to, rel), rel), rule.origin);
      if (S_ISDIR(st.st_mode)) {
        int fd = ::openat(::dirfd(d), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
          util::throw_errno(rule.origin + ": cannot read directory " + host);
        }
        walk(fd, host, rel, to, rule, make_entry);
      }
    }
  } catch (...) {
    ::closedir(d);
    throw;
  }
  ::closedir(d);
}

void EntrySet::finalize(const Owner& parent_owner) {
  // Only the immediate parent is looked up per entry; a missing one is created
  // together with its own missing ancestors.
  std::vector<std::string> missing;
  for (const auto& [path, e] : m_entries) {
    auto slash = path.rfind('/');
    while (slash != std::string::npos) {
      std::string parent = path.substr(0, slash);
      if (m_entries.count(parent) > 0 || (!missing.empty() && missing.back() == parent)) {
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
  // The first path (in sorted order) of an inode holds the data; later ones link to it.
  std::map<std::pair<std::uint64_t, std::uint64_t>, std::string> seen;
  for (auto& [path, e] : m_entries) {
    if (e.type != Entry::Type::file || e.ino == 0) {
      continue;
    }
    auto [it, inserted] = seen.try_emplace({e.dev, e.ino}, path);
    if (!inserted) {
      e.type = Entry::Type::hardlink;
      e.link_target = it->second;
      e.size = 0;
    }
  }
}

std::int64_t EntrySet::total_size() const {
  std::int64_t total = 0;
  for (const auto& [p, e] : m_entries) {
    total += e.size;
  }
  return total;
}

} // namespace layers
