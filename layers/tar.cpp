#include "layers/tar.hpp"

#include "util/error.hpp"
#include "util/fs.hpp"

#include <archive.h>
#include <archive_entry.h>
#include <cerrno>
#include <exception>
#include <fcntl.h>
#include <memory>
#include <unistd.h>
#include <vector>

namespace layers {

using util::Error;
using util::ErrorKind;

namespace {

la_ssize_t write_cb(struct archive*, void* client, const void* buf, size_t n) {
  auto* sink = static_cast<const ByteSink*>(client);
  try {
    (*sink)(static_cast<const char*>(buf), n);
  } catch (...) {
    // Safe: nothing is lost. An exception must not cross libarchive's C frames; the
    // sink is TarBuilder's guarded sink, which kept the exception (sink_error) and
    // stops passing bytes on; every TarBuilder call checks sink_error after libarchive
    // returns and rethrows it. The write is reported as done: an archive libarchive
    // has marked failed leaks its block buffer on free (libarchive 3.6), one that
    // merely stops reaching the sink closes cleanly. No log sink reaches this callback.
    return static_cast<la_ssize_t>(n);
  }
  return static_cast<la_ssize_t>(n);
}

struct ArchiveDeleter {
  void operator()(struct archive* a) const { archive_write_free(a); }
};

struct EntryDeleter {
  void operator()(archive_entry* e) const { archive_entry_free(e); }
};

} // namespace

struct TarBuilder::Impl {
  ByteSink sink;
  std::int64_t mtime;
  std::exception_ptr sink_error;
  ByteSink guarded;
  // Declared last, so destroyed first: archive_write_free flushes an archive that was
  // not closed (an error left it half-written) through write_cb, which reaches guarded
  // and sink_error (declared before it, they outlive it).
  std::unique_ptr<struct archive, ArchiveDeleter> a;

  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  // The sink's own error, once it failed (write_cb reported the write as done).
  void check_sink() const {
    if (sink_error) {
      std::rethrow_exception(sink_error);
    }
  }

  void close() {
    int rc = archive_write_close(a.get());
    check_sink();
    if (rc != ARCHIVE_OK) {
      fail("cannot finish tar stream");
    }
  }

  Impl(std::int64_t t, ByteSink s) : sink(std::move(s)), mtime(t), a(archive_write_new()) {
    guarded = [this](const char* d, std::size_t n) {
      if (sink_error) {
        return; // the sink failed already: nothing more reaches it
      }
      try {
        sink(d, n);
      } catch (...) {
        sink_error = std::current_exception();
        throw;
      }
    };
    archive_write_set_format_pax_restricted(a.get());
    archive_write_add_filter_none(a.get());
    if (archive_write_open(a.get(), &guarded, nullptr, write_cb, nullptr) != ARCHIVE_OK) {
      fail("cannot start tar stream");
    }
  }

  [[noreturn]] void fail(const std::string& what) {
    if (sink_error) {
      std::rethrow_exception(sink_error);
    }
    throw Error(ErrorKind::io, what + ": " + (archive_error_string(a.get()) ? archive_error_string(a.get()) : "?"));
  }

  std::unique_ptr<archive_entry, EntryDeleter> make(const std::string& path, mode_t type, std::uint32_t mode,
                                                    const Owner& owner) {
    std::unique_ptr<archive_entry, EntryDeleter> e(archive_entry_new());
    archive_entry_copy_pathname(e.get(), path.c_str());
    archive_entry_set_filetype(e.get(), type);
    archive_entry_set_perm(e.get(), mode & 07777);
    archive_entry_set_uid(e.get(), owner.uid);
    archive_entry_set_gid(e.get(), owner.gid);
    if (!owner.uname.empty()) {
      archive_entry_copy_uname(e.get(), owner.uname.c_str());
    }
    if (!owner.gname.empty()) {
      archive_entry_copy_gname(e.get(), owner.gname.c_str());
    }
    archive_entry_set_mtime(e.get(), static_cast<time_t>(mtime), 0);
    return e;
  }

  void header(archive_entry* e) {
    int rc = archive_write_header(a.get(), e);
    check_sink();
    if (rc != ARCHIVE_OK) {
      fail(std::string("cannot write tar header for ") + archive_entry_pathname(e));
    }
  }

  void data(const char* d, std::size_t n) {
    la_ssize_t rc = archive_write_data(a.get(), d, n);
    check_sink();
    if (rc < 0) {
      fail("cannot write tar data");
    }
  }

  void write_entry(const Entry& en) {
    switch (en.type) {
    case Entry::Type::dir: {
      auto e = make(en.path + "/", AE_IFDIR, en.mode, en.owner);
      if (en.xattrs) {
        for (const auto& [name, value] : *en.xattrs) {
          archive_entry_xattr_add_entry(e.get(), name.c_str(), value.data(), value.size());
        }
      }
      header(e.get());
      break;
    }
    case Entry::Type::symlink: {
      auto e = make(en.path, AE_IFLNK, 0777, en.owner);
      archive_entry_copy_symlink(e.get(), en.link_target.c_str());
      header(e.get());
      break;
    }
    case Entry::Type::hardlink: {
      auto e = make(en.path, AE_IFREG, en.mode, en.owner);
      archive_entry_copy_hardlink(e.get(), en.link_target.c_str());
      archive_entry_set_size(e.get(), 0);
      header(e.get());
      break;
    }
    case Entry::Type::file: {
      auto e = make(en.path, AE_IFREG, en.mode, en.owner);
      archive_entry_set_size(e.get(), en.size);
      header(e.get());
      if (en.source.empty() && en.size == 0) {
        break; // an empty file made here (a whiteout), not copied from the host
      }
      std::int64_t written = 0;
      util::read_file_chunks(en.source, [&](const char* d, std::size_t n) {
        if (written + static_cast<std::int64_t>(n) > en.size) {
          throw Error(ErrorKind::input, "'" + en.source + "' grew while the layer was being built",
                      "do not modify sources during a build; run it again");
        }
        data(d, n);
        written += static_cast<std::int64_t>(n);
      });
      if (written != en.size) {
        throw Error(ErrorKind::input, "'" + en.source + "' shrank while the layer was being built",
                    "do not modify sources during a build; run it again");
      }
      break;
    }
    }
  }
};

TarBuilder::TarBuilder(std::int64_t mtime, ByteSink sink) : m_impl(new Impl(mtime, std::move(sink))) {}
TarBuilder::~TarBuilder() {
  delete m_impl;
}

void TarBuilder::add_bytes(const std::string& path, const std::string& bytes, std::uint32_t mode) {
  auto e = m_impl->make(path, AE_IFREG, mode, Owner{});
  archive_entry_set_size(e.get(), static_cast<la_int64_t>(bytes.size()));
  m_impl->header(e.get());
  m_impl->data(bytes.data(), bytes.size());
}

void TarBuilder::add_stream(const std::string& path, std::int64_t size,
                            const std::function<void(const ByteSink&)>& producer, std::uint32_t mode) {
  auto e = m_impl->make(path, AE_IFREG, mode, Owner{});
  archive_entry_set_size(e.get(), size);
  m_impl->header(e.get());
  std::int64_t written = 0;
  producer([&](const char* d, std::size_t n) {
    written += static_cast<std::int64_t>(n);
    if (written > size) {
      throw Error(ErrorKind::integrity, "member " + path + " is larger than announced");
    }
    m_impl->data(d, n);
  });
  if (written != size) {
    throw Error(ErrorKind::integrity, "member " + path + " is smaller than announced");
  }
}

void TarBuilder::add_dir(const std::string& path) {
  auto e = m_impl->make(path + "/", AE_IFDIR, 0755, Owner{});
  m_impl->header(e.get());
}

void TarBuilder::finish() {
  m_impl->close();
}

void write_tar(const EntrySet& entries, const TarOptions& options, const ByteSink& sink) {
  TarBuilder::Impl impl(options.mtime, sink);
  for (const auto& [path, e] : entries.entries()) {
    impl.write_entry(e);
  }
  impl.close();
}

namespace {

// libarchive's message for the last error: NULL when it set none (a damaged stream can
// end that way), which a std::string must not be built from.
std::string archive_why(struct archive* a) {
  const char* why = archive_error_string(a);
  return why != nullptr ? why : "unreadable tar data (libarchive gave no reason)";
}

// Reads members from an opened archive (see scan_tar).
void scan_members(struct archive* a, const std::string& what, const std::function<bool(const TarMember&)>& want_content,
                  const std::function<void(const TarMember&, const std::string& content)>& on_content,
                  const std::exception_ptr* source_error) {
  auto fail = [&](const std::string& why) {
    if (source_error != nullptr && *source_error) {
      std::rethrow_exception(*source_error); // the stream's own error says more than libarchive's
    }
    throw Error(ErrorKind::integrity, "corrupt layer " + what + ": " + why);
  };
  // A member's path as the tree knows it: no "./" or '/' in front, no '/' at the end.
  auto tree_path = [](std::string p) {
    while (p.rfind("./", 0) == 0 || (!p.empty() && p.front() == '/')) {
      p.erase(0, p.front() == '/' ? 1 : 2);
    }
    while (!p.empty() && p.back() == '/') {
      p.pop_back();
    }
    return p;
  };
  archive_entry* e = nullptr;
  int rc = 0;
  while ((rc = archive_read_next_header(a, &e)) == ARCHIVE_OK || rc == ARCHIVE_WARN) {
    TarMember m;
    m.path = tree_path(archive_entry_pathname(e) ? archive_entry_pathname(e) : "");
    m.size = archive_entry_size(e);
    m.mode = static_cast<std::uint32_t>(archive_entry_perm(e));
    m.uid = archive_entry_uid(e);
    m.gid = archive_entry_gid(e);
    m.uname = archive_entry_uname(e) ? archive_entry_uname(e) : "";
    m.gname = archive_entry_gname(e) ? archive_entry_gname(e) : "";
    if (archive_entry_xattr_reset(e) > 0) {
      const char* name = nullptr;
      const void* value = nullptr;
      std::size_t size = 0;
      while (archive_entry_xattr_next(e, &name, &value, &size) == ARCHIVE_OK) {
        m.xattrs.emplace_back(name ? name : "", std::string(static_cast<const char*>(value), size));
      }
    }
    if (archive_entry_hardlink(e) != nullptr) {
      m.type = '1';
      m.link_target = tree_path(archive_entry_hardlink(e)); // "./usr/x" names the member "usr/x"
    } else if (archive_entry_filetype(e) == AE_IFDIR) {
      m.type = '5';
    } else if (archive_entry_filetype(e) == AE_IFLNK) {
      m.type = '2';
      m.link_target = archive_entry_symlink(e) ? archive_entry_symlink(e) : "";
    } else if (archive_entry_filetype(e) == AE_IFCHR) {
      m.type = '3';
    } else if (archive_entry_filetype(e) == AE_IFBLK) {
      m.type = '4';
    } else if (archive_entry_filetype(e) == AE_IFIFO) {
      m.type = '6';
    }
    if (want_content(m) && m.type == '0') {
      std::string content;
      std::vector<char> buf(1 << 16);
      la_ssize_t n = 0;
      while ((n = archive_read_data(a, buf.data(), buf.size())) > 0) {
        content.append(buf.data(), static_cast<std::size_t>(n));
      }
      if (n < 0) {
        fail(archive_why(a));
      }
      on_content(m, content);
    }
  }
  if (rc != ARCHIVE_EOF) {
    fail(archive_why(a));
  }
}

struct StreamSource {
  const std::function<std::size_t(char*, std::size_t)>* read;
  std::vector<char> buf = std::vector<char>(1 << 20);
  std::exception_ptr error;
};

la_ssize_t stream_read(struct archive* a, void* data, const void** out) {
  auto* src = static_cast<StreamSource*>(data);
  try {
    std::size_t n = (*src->read)(src->buf.data(), src->buf.size());
    *out = src->buf.data();
    return static_cast<la_ssize_t>(n);
  } catch (...) { // not across libarchive's C frames: kept and rethrown by scan_members
    src->error = std::current_exception();
    archive_set_error(a, EIO, "the layer stream failed");
    return -1;
  }
}

} // namespace

void scan_tar(const std::filesystem::path& file, const std::function<bool(const TarMember&)>& want_content,
              const std::function<void(const TarMember&, const std::string& content)>& on_content) {
  struct archive* a = archive_read_new();
  std::unique_ptr<struct archive, decltype(&archive_read_free)> guard(a, archive_read_free);
  archive_read_support_filter_all(a);
  archive_read_support_format_tar(a);
  if (archive_read_open_filename(a, file.c_str(), 1 << 20) != ARCHIVE_OK) {
    throw Error(ErrorKind::input, "cannot read layer " + file.string() + ": " + archive_why(a));
  }
  scan_members(a, file.string(), want_content, on_content, nullptr);
}

void scan_tar(const std::function<std::size_t(char*, std::size_t)>& read, const std::string& what,
              const std::function<bool(const TarMember&)>& want_content,
              const std::function<void(const TarMember&, const std::string& content)>& on_content) {
  // src before the archive: it outlives archive_read_free, which may still reach it.
  StreamSource src{&read, std::vector<char>(1 << 20), nullptr};
  struct archive* a = archive_read_new();
  std::unique_ptr<struct archive, decltype(&archive_read_free)> guard(a, archive_read_free);
  archive_read_support_filter_all(a);
  archive_read_support_format_tar(a);
  if (archive_read_open(a, &src, nullptr, stream_read, nullptr) != ARCHIVE_OK) {
    if (src.error) {
      std::rethrow_exception(src.error);
    }
    throw Error(ErrorKind::input, "cannot read layer " + what + ": " + archive_why(a));
  }
  scan_members(a, what, want_content, on_content, &src.error);
}

} // namespace layers
