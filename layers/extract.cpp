#include "layers/extract.hpp"

#include "util/encoding.hpp"
#include "util/error.hpp"
#include "util/text.hpp"

#include <archive.h>
#include <archive_entry.h>
#include <cerrno>
#include <fcntl.h>
#include <fnmatch.h>
#include <memory>
#include <sys/stat.h>
#include <unistd.h>

namespace layers {

using util::Error;
using util::ErrorKind;
namespace fs = std::filesystem;

namespace {

// A member path's components, without empty ones and ".".
std::vector<std::string> member_components(const std::string& path) {
  std::vector<std::string> out;
  for (auto& c : util::split(path, '/')) {
    if (!c.empty() && c != ".") {
      out.push_back(std::move(c));
    }
  }
  return out;
}

std::string join_components(const std::vector<std::string>& parts, std::size_t from = 0) {
  return util::join(std::vector<std::string>(parts.begin() + static_cast<std::ptrdiff_t>(from), parts.end()), "/");
}

struct ArchiveCloser {
  void operator()(struct archive* a) const { archive_read_free(a); }
};

class Extractor {
public:
  Extractor(fs::path dest, const ExtractOptions& o, std::string what)
      : m_dest(std::move(dest)), m_options(o), m_what(std::move(what)) {}

  [[noreturn]] void refuse(const std::string& member, const std::string& why) const {
    throw Error(ErrorKind::integrity, m_what + ": member '" + member + "' " + why + "; nothing was extracted",
                "an archive for an image must stay inside its target: fix the archive (or its strip_components), "
                "or do not use it");
  }

  // The member's path after stripping, or "" when it is left out. Refuses what climbs.
  std::string member_path(const std::string& name, bool& kept) {
    kept = false;
    if (!name.empty() && name.front() == '/') {
      refuse(name, "has an absolute path");
    }
    std::vector<std::string> parts = member_components(name);
    for (const auto& p : parts) {
      if (p == "..") {
        refuse(name, "climbs out with '..'");
      }
    }
    if (parts.size() <= static_cast<std::size_t>(m_options.strip_components)) {
      return "";
    }
    std::string rel = join_components(parts, static_cast<std::size_t>(m_options.strip_components));
    kept = m_options.want ? m_options.want(rel) : included(m_options.include, rel);
    return rel;
  }

  // Creates rel's parent directories, refusing a path through a symlink or a file.
  void make_parents(const std::string& member, const std::string& rel) {
    std::vector<std::string> parts = member_components(rel);
    fs::path at = m_dest;
    for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
      at /= parts[i];
      struct stat st {};
      if (::lstat(at.c_str(), &st) == 0) {
        if (S_ISLNK(st.st_mode)) {
          refuse(member,
                 "is written through the symlink '" + join_components({parts.begin(), parts.begin() + i + 1}) + "'");
        }
        if (!S_ISDIR(st.st_mode)) {
          refuse(member,
                 "lies below '" + join_components({parts.begin(), parts.begin() + i + 1}) + "', which is a file");
        }
        continue;
      }
      if (::mkdir(at.c_str(), 0700) != 0 && errno != EEXIST) {
        util::throw_errno("creating " + at.string());
      }
      m_dirs.emplace_back(at, 0755);
    }
  }

  // Makes room for a non-directory at `p` (a later member of the same path wins, as tar does).
  void clear(const std::string& member, const fs::path& p) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0) {
      return;
    }
    if (S_ISDIR(st.st_mode)) {
      refuse(member, "replaces a directory of the same archive");
    }
    if (::unlink(p.c_str()) != 0) {
      util::throw_errno("removing " + p.string());
    }
  }

  void symlink_member(const std::string& member, const std::string& rel, const std::string& target) {
    if (target.empty() || (target.front() == '/' && !m_options.absolute_symlinks)) {
      refuse(member, "is a symlink to the absolute path '" + target + "', outside the extracted tree");
    }
    std::vector<std::string> at = member_components(rel);
    at.pop_back();
    for (const auto& c : target.front() == '/' ? std::vector<std::string>{} : member_components(target)) {
      if (c == "..") {
        if (at.empty()) {
          refuse(member, "is a symlink to '" + target + "', which points out of the extracted tree");
        }
        at.pop_back();
      } else {
        at.push_back(c);
      }
    }
    fs::path p = m_dest / rel;
    clear(member, p);
    if (::symlink(target.c_str(), p.c_str()) != 0) {
      util::throw_errno("creating the symlink " + p.string());
    }
  }

  void hardlink_member(const std::string& member, const std::string& rel, const std::string& target_name) {
    if (!target_name.empty() && target_name.front() == '/') {
      refuse(member, "is a hard link to the absolute path '" + target_name + "', outside the extracted tree");
    }
    for (const auto& c : member_components(target_name)) {
      if (c == "..") {
        refuse(member, "is a hard link to '" + target_name + "', which points out of the extracted tree");
      }
    }
    bool kept = false;
    std::string target = member_path(target_name, kept);
    struct stat st {};
    fs::path t = m_dest / target;
    if (target.empty() || !kept || ::lstat(t.c_str(), &st) != 0 || S_ISDIR(st.st_mode)) {
      refuse(member, "is a hard link to '" + target_name + "', which is not a file extracted before it");
    }
    fs::path p = m_dest / rel;
    clear(member, p);
    if (::link(t.c_str(), p.c_str()) != 0) {
      util::throw_errno("linking " + p.string());
    }
  }

  void file_member(struct archive* a, const std::string& member, const std::string& rel, std::uint32_t perm) {
    fs::path p = m_dest / rel;
    clear(member, p);
    int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
      util::throw_errno("creating " + p.string());
    }
    std::unique_ptr<int, void (*)(int*)> guard(&fd, [](int* f) { ::close(*f); });
    const void* buf = nullptr;
    size_t len = 0;
    la_int64_t offset = 0;
    la_int64_t written = 0;
    for (;;) {
      int r = archive_read_data_block(a, &buf, &len, &offset);
      if (r == ARCHIVE_EOF) {
        break;
      }
      if (r < ARCHIVE_WARN) {
        throw Error(ErrorKind::input, m_what + ": member '" + member + "': " + archive_error_string(a),
                    "the archive is damaged or truncated: download it again");
      }
      if (offset > written) { // a sparse hole
        if (::lseek(fd, offset, SEEK_SET) < 0) {
          util::throw_errno("writing " + p.string());
        }
        written = offset;
      }
      const char* c = static_cast<const char*>(buf);
      for (size_t done = 0; done < len;) {
        ssize_t n = ::write(fd, c + done, len - done);
        if (n < 0) {
          if (errno == EINTR) {
            continue;
          }
          util::throw_errno("writing " + p.string());
        }
        done += static_cast<size_t>(n);
      }
      written += static_cast<la_int64_t>(len);
      m_result.bytes += static_cast<std::int64_t>(len);
    }
    if (::ftruncate(fd, written) != 0 || ::fchmod(fd, perm) != 0) {
      util::throw_errno("writing " + p.string());
    }
  }

  ExtractResult run(const fs::path& archive) {
    std::unique_ptr<struct archive, ArchiveCloser> a(archive_read_new());
    archive_read_support_filter_all(a.get());
    archive_read_support_format_tar(a.get());
    archive_read_support_format_gnutar(a.get());
    archive_read_support_format_zip(a.get());
    if (archive_read_open_filename(a.get(), archive.c_str(), 1 << 16) != ARCHIVE_OK) {
      throw Error(ErrorKind::input, m_what + ": " + archive_error_string(a.get()),
                  "extract reads tar (plain, gzip, bzip2, xz, zstd, lz4) and zip archives");
    }
    if (::mkdir(m_dest.c_str(), 0700) != 0 && !(m_options.into_existing && errno == EEXIST)) {
      util::throw_errno("creating " + m_dest.string());
    }
    struct archive_entry* e = nullptr;
    for (;;) {
      int r = archive_read_next_header(a.get(), &e);
      if (r == ARCHIVE_EOF) {
        break;
      }
      if (r < ARCHIVE_WARN) {
        throw Error(ErrorKind::input, m_what + ": " + archive_error_string(a.get()),
                    "extract reads tar (plain, gzip, bzip2, xz, zstd, lz4) and zip archives; this one is damaged, "
                    "truncated or of another format");
      }
      const char* pn = archive_entry_pathname(e);
      std::string name = pn != nullptr ? pn : "";
      bool kept = false;
      std::string rel = member_path(name, kept);
      const char* hl = archive_entry_hardlink(e);
      const mode_t type = archive_entry_filetype(e);
      if (hl == nullptr && type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK) {
        refuse(name, "is a device, FIFO or socket");
      }
      if (rel.empty() || !kept) {
        if (!rel.empty() || name.find_first_not_of("./") != std::string::npos) {
          ++m_result.skipped;
        }
        continue;
      }
      std::uint32_t perm = static_cast<std::uint32_t>(archive_entry_perm(e)) & 0777;
      make_parents(name, rel);
      if (hl != nullptr) {
        hardlink_member(name, rel, hl);
      } else if (type == AE_IFDIR) {
        fs::path p = m_dest / rel;
        struct stat st {};
        if (::lstat(p.c_str(), &st) == 0) {
          if (!S_ISDIR(st.st_mode)) {
            refuse(name, "is a directory where the archive has a file or link");
          }
        } else if (::mkdir(p.c_str(), 0700) != 0) {
          util::throw_errno("creating " + p.string());
        }
        m_dirs.emplace_back(p, (perm == 0 ? 0755 : perm) | 0500);
      } else if (type == AE_IFLNK) {
        const char* t = archive_entry_symlink(e);
        symlink_member(name, rel, t != nullptr ? t : "");
      } else {
        file_member(a.get(), name, rel, (perm == 0 ? 0644 : perm) | 0400);
      }
      ++m_result.members;
    }
    // Directory modes last (a read-only directory of the archive still took its members),
    // deepest first.
    for (auto it = m_dirs.rbegin(); it != m_dirs.rend(); ++it) {
      if (::chmod(it->first.c_str(), it->second) != 0) {
        util::throw_errno("setting the mode of " + it->first.string());
      }
    }
    return m_result;
  }

private:
  fs::path m_dest;
  const ExtractOptions& m_options;
  std::string m_what;
  std::vector<std::pair<fs::path, mode_t>> m_dirs;
  ExtractResult m_result;
};

} // namespace

bool included(const std::vector<std::string>& include, const std::string& rel) {
  if (include.empty()) {
    return true;
  }
  for (const auto& pattern : include) {
    std::string p = pattern;
    while (!p.empty() && p.back() == '/') {
      p.pop_back();
    }
    if (fnmatch(p.c_str(), rel.c_str(), 0) == 0) {
      return true;
    }
    // Below a directory the pattern names.
    for (auto slash = rel.find('/'); slash != std::string::npos; slash = rel.find('/', slash + 1)) {
      if (fnmatch(p.c_str(), rel.substr(0, slash).c_str(), 0) == 0) {
        return true;
      }
    }
  }
  return false;
}

ExtractResult extract_archive(const fs::path& archive, const fs::path& dest, const ExtractOptions& options,
                              const std::string& what) {
  return Extractor(dest, options, what).run(archive);
}

} // namespace layers
