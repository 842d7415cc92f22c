#include "debian/deb.hpp"

#include "util/error.hpp"

#include <archive.h>
#include <archive_entry.h>
#include <memory>

namespace debian {

using util::Error;
using util::ErrorKind;

namespace {

using Archive = std::unique_ptr<archive, decltype(&archive_read_free)>;

Archive new_reader() {
  Archive a(archive_read_new(), archive_read_free);
  archive_read_support_filter_all(a.get());
  archive_read_support_format_tar(a.get());
  archive_read_support_format_gnutar(a.get());
  return a;
}

// An inner tar read straight from the outer ar member's data.
struct Nested {
  archive* outer;
  char buf[65536];
};

la_ssize_t nested_read(archive*, void* data, const void** out) {
  auto* n = static_cast<Nested*>(data);
  la_ssize_t got = archive_read_data(n->outer, n->buf, sizeof n->buf);
  *out = n->buf;
  return got;
}

std::string clean_path(std::string p, const std::string& what) {
  if (p.rfind("./", 0) == 0) {
    p.erase(0, 2);
  } else if (p == ".") {
    p.clear();
  }
  while (!p.empty() && p.back() == '/') {
    p.pop_back();
  }
  if (!p.empty() && p.front() == '/') {
    throw Error(ErrorKind::input, what + ": member '" + p + "' has an absolute path",
                "this is not a package dpkg installs");
  }
  std::size_t start = 0;
  while (start <= p.size()) {
    std::size_t end = p.find('/', start);
    std::string seg = p.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (seg == "..") {
      throw Error(ErrorKind::input, what + ": member '" + p + "' leaves the root ('..')",
                  "this is not a package dpkg installs");
    }
    if (end == std::string::npos) {
      break;
    }
    start = end + 1;
  }
  return p;
}

void read_control(archive* outer, const std::string& what, DebControl& out) {
  Nested n{outer, {}};
  Archive a = new_reader();
  if (archive_read_open(a.get(), &n, nullptr, nested_read, nullptr) != ARCHIVE_OK) {
    throw Error(ErrorKind::input, what + ": control archive: " + archive_error_string(a.get()));
  }
  archive_entry* e = nullptr;
  int rc;
  while ((rc = archive_read_next_header(a.get(), &e)) == ARCHIVE_OK) {
    if (archive_entry_filetype(e) != AE_IFREG) {
      continue;
    }
    std::string name = clean_path(archive_entry_pathname(e), what);
    if (name.find('/') != std::string::npos) {
      continue;
    }
    std::string content;
    char buf[65536];
    la_ssize_t got;
    while ((got = archive_read_data(a.get(), buf, sizeof buf)) > 0) {
      content.append(buf, static_cast<std::size_t>(got));
      if (content.size() > (std::size_t{64} << 20)) {
        throw Error(ErrorKind::input, what + ": control member " + name + " is over 64 MiB");
      }
    }
    if (got < 0) {
      throw Error(ErrorKind::input, what + ": control member " + name + ": " + archive_error_string(a.get()));
    }
    if (name == "control") {
      auto paras = parse_paragraphs(content, what + ": control");
      if (paras.size() != 1) {
        throw Error(ErrorKind::input,
                    what + ": the control file holds " + std::to_string(paras.size()) + " paragraphs, not one");
      }
      out.control = paras.front();
    } else {
      out.files[name] = std::move(content);
    }
  }
  if (rc != ARCHIVE_EOF) {
    throw Error(ErrorKind::input, what + ": control archive: " + archive_error_string(a.get()));
  }
}

void read_data(archive* outer, const std::string& what,
               const std::function<void(const DataMember&, const ReadData&)>& each) {
  Nested n{outer, {}};
  Archive a = new_reader();
  if (archive_read_open(a.get(), &n, nullptr, nested_read, nullptr) != ARCHIVE_OK) {
    throw Error(ErrorKind::input, what + ": data archive: " + archive_error_string(a.get()));
  }
  archive_entry* e = nullptr;
  int rc;
  while ((rc = archive_read_next_header(a.get(), &e)) == ARCHIVE_OK) {
    DataMember m;
    m.path = clean_path(archive_entry_pathname(e), what);
    m.mode = archive_entry_perm(e) & 07777;
    m.uid = archive_entry_uid(e);
    m.gid = archive_entry_gid(e);
    m.uname = archive_entry_uname(e) != nullptr ? archive_entry_uname(e) : "";
    m.gname = archive_entry_gname(e) != nullptr ? archive_entry_gname(e) : "";
    m.size = archive_entry_size(e);
    if (const char* hl = archive_entry_hardlink(e)) {
      m.type = '1';
      m.link = clean_path(hl, what);
      m.size = 0;
    } else {
      switch (archive_entry_filetype(e)) {
      case AE_IFREG:
        m.type = '0';
        break;
      case AE_IFDIR:
        m.type = '5';
        m.size = 0;
        break;
      case AE_IFLNK:
        m.type = '2';
        m.link = archive_entry_symlink(e) != nullptr ? archive_entry_symlink(e) : "";
        m.size = 0;
        break;
      default:
        throw Error(ErrorKind::input, what + ": member '" + m.path + "' is a device, socket or FIFO",
                    "a debs layer installs files, directories and links only");
      }
    }
    archive* ar = a.get();
    const std::string member = m.path;
    each(m, [ar, &what, &member](char* buf, std::size_t len) -> std::size_t {
      la_ssize_t got = archive_read_data(ar, buf, len);
      if (got < 0) {
        throw Error(ErrorKind::input, what + ": member '" + member + "': " + archive_error_string(ar));
      }
      return static_cast<std::size_t>(got);
    });
  }
  if (rc != ARCHIVE_EOF) {
    throw Error(ErrorKind::input, what + ": data archive: " + archive_error_string(a.get()));
  }
}

} // namespace

DebControl read_deb(const fs::path& deb, const std::string& what,
                    const std::function<void(const DebControl&)>& on_control,
                    const std::function<void(const DataMember&, const ReadData&)>& each) {
  Archive outer(archive_read_new(), archive_read_free);
  archive_read_support_format_ar(outer.get());
  if (archive_read_open_filename(outer.get(), deb.c_str(), 1 << 16) != ARCHIVE_OK) {
    throw Error(ErrorKind::input, what + ": not a .deb (" + std::string(archive_error_string(outer.get())) + ")");
  }
  DebControl out;
  bool saw_version = false, saw_control = false, saw_data = false;
  archive_entry* e = nullptr;
  int rc;
  while ((rc = archive_read_next_header(outer.get(), &e)) == ARCHIVE_OK) {
    std::string name = archive_entry_pathname(e);
    if (name == "debian-binary") {
      char buf[16] = {};
      la_ssize_t got = archive_read_data(outer.get(), buf, sizeof buf - 1);
      if (got < 3 || std::string(buf, 3) != "2.0") {
        throw Error(ErrorKind::input, what + ": debian-binary is not 2.x: not a package dpkg reads");
      }
      saw_version = true;
    } else if (name.rfind("control.tar", 0) == 0) {
      read_control(outer.get(), what, out);
      saw_control = true;
    } else if (name.rfind("data.tar", 0) == 0) {
      if (!saw_control) {
        throw Error(ErrorKind::input, what + ": data.tar comes before control.tar");
      }
      if (out.control.fields.empty()) {
        throw Error(ErrorKind::input, what + ": control.tar has no control file");
      }
      on_control(out);
      read_data(outer.get(), what, each);
      saw_data = true;
    }
  }
  if (rc != ARCHIVE_EOF) {
    throw Error(ErrorKind::input, what + ": " + archive_error_string(outer.get()));
  }
  if (!saw_version || !saw_control || !saw_data || out.control.fields.empty()) {
    throw Error(ErrorKind::input, what + ": not a .deb (debian-binary, control.tar and data.tar are needed)");
  }
  return out;
}

} // namespace debian
