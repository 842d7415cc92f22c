#include "util/fs.hpp"

#include "util/error.hpp"
#include "util/interrupt.hpp"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <fcntl.h>
#include <memory>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace util {

namespace {

// ".NAME.tmp-": what the temporary files beside NAME start with.
std::string beside_prefix(const fs::path& final_path) {
  // Built by appending: GCC 12 at -O3 reports a false -Wrestrict for `"." + string`.
  std::string name(1, '.');
  name.append(final_path.filename().string());
  name.append(".tmp-");
  return name;
}

fs::path make_temp_name(const fs::path& final_path) {
  return final_path.parent_path() / (beside_prefix(final_path) + std::to_string(::getpid()) + "-XXXXXX");
}

// The pid that "<pid>-..." (after `prefix`) names, or 0.
pid_t owner_pid(const std::string& name, std::string_view prefix) {
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) {
    return 0;
  }
  std::size_t i = prefix.size(), j = i;
  while (j < name.size() && name[j] >= '0' && name[j] <= '9') {
    ++j;
  }
  if (j == i || j >= name.size() || name[j] != '-' || j - i > 10) {
    return 0;
  }
  return static_cast<pid_t>(std::atol(name.substr(i, j - i).c_str()));
}

bool owner_dead(pid_t pid) {
  return pid > 0 && pid != ::getpid() && ::kill(pid, 0) != 0 && errno == ESRCH;
}

void remove_dead(const fs::path& dir, std::string_view prefix) {
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (owner_dead(owner_pid(it->path().filename().string(), prefix))) {
      std::error_code rm;
      fs::remove_all(it->path(), rm);
    }
  }
}

} // namespace

AtomicFile::AtomicFile(fs::path final_path) : AtomicFile(final_path, fs::path{}) {}

AtomicFile::AtomicFile(fs::path final_path, const fs::path& temp_dir) : m_final(std::move(final_path)) {
  std::string pattern = temp_dir.empty() ? make_temp_name(m_final).string()
                                         : (temp_dir / (std::to_string(::getpid()) + "-XXXXXX")).string();
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  m_fd = mkostemp(buf.data(), O_CLOEXEC);
  if (m_fd < 0) {
    throw_errno("cannot create a temporary file next to " + m_final.string());
  }
  m_temp = buf.data();
  ::fchmod(m_fd, 0644);
}

AtomicFile::~AtomicFile() {
  if (m_fd >= 0) {
    ::close(m_fd);
  }
  if (!m_done) {
    ::unlink(m_temp.c_str());
  }
}

void AtomicFile::write(const void* data, std::size_t size) {
  check_interrupted();
  // Start the write-back of what is written every few MiB, so the disk works while
  // the rest arrives and commit()'s fsync has little left to wait for (large blobs
  // otherwise sit in the page cache until the fsync). Advisory: a file system that
  // does not support it (ESPIPE, EINVAL) loses nothing.
  m_unflushed += size;
  if (m_unflushed >= k_writeback_every) {
    m_unflushed = 0;
    ::sync_file_range(m_fd, 0, 0, SYNC_FILE_RANGE_WRITE);
  }
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = ::write(m_fd, p, size);
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      throw_errno("cannot write " + m_temp.string());
    }
    p += n;
    size -= static_cast<std::size_t>(n);
  }
}

void AtomicFile::commit() {
  commit_as(m_final);
}

void AtomicFile::commit_as(const fs::path& final_path) {
  if (::fsync(m_fd) != 0) {
    throw_errno("cannot fsync " + m_temp.string());
  }
  ::close(m_fd);
  m_fd = -1;
  if (::rename(m_temp.c_str(), final_path.c_str()) != 0) {
    throw_errno("cannot rename " + m_temp.string() + " to " + final_path.string());
  }
  m_done = true;
  fsync_dir(final_path.parent_path());
}

void create_dirs(const fs::path& dir, const std::string& what, const std::string& hint) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    throw Error(ErrorKind::io, "cannot create " + what + " " + dir.string() + ": " + ec.message(), hint);
  }
}

void remove_stale_temps(const fs::path& dir) {
  remove_dead(dir, "");
}

void remove_stale_temps_beside(const fs::path& final_path) {
  remove_dead(final_path.parent_path().empty() ? fs::path(".") : final_path.parent_path(), beside_prefix(final_path));
}

void write_file_atomic(const fs::path& path, std::string_view content) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
    // A device, FIFO or socket (-o /dev/stdout, /dev/null, a pipe): written in place;
    // renaming a file over it would replace the device node.
    int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
      throw_errno("cannot open " + path.string());
    }
    std::size_t done = 0;
    while (done < content.size()) {
      ssize_t n = ::write(fd, content.data() + done, content.size() - done);
      if (n < 0 && errno == EINTR) {
        continue;
      }
      if (n < 0) {
        int saved = errno;
        ::close(fd);
        errno = saved;
        throw_errno("cannot write " + path.string());
      }
      done += static_cast<std::size_t>(n);
    }
    ::close(fd);
    return;
  }
  remove_stale_temps_beside(path);
  AtomicFile f(path);
  f.write(content);
  f.commit();
}

std::string read_file(const fs::path& path) {
  std::string out;
  read_file_chunks(path, [&](const char* d, std::size_t n) { out.append(d, n); });
  return out;
}

void read_file_chunks(const fs::path& path, const std::function<void(const char*, std::size_t)>& sink) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    throw_errno("cannot open " + path.string());
  }
  // A buffer the size of the file (up to 1 MiB), not zero-filled: a layer of 30,000
  // small files called this with a fresh zeroed megabyte each time.
  constexpr std::size_t k_max_buffer = std::size_t{1} << 20;
  std::size_t want = k_max_buffer;
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= 0) {
    want = std::clamp<std::size_t>(static_cast<std::size_t>(st.st_size), 4096, k_max_buffer);
  }
  std::unique_ptr<char[]> buf(new char[want]);
  for (;;) {
    if (interrupted() != 0) {
      ::close(fd);
      throw_interrupted();
    }
    ssize_t n = ::read(fd, buf.get(), want);
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      int err = errno;
      ::close(fd);
      errno = err;
      throw_errno("cannot read " + path.string());
    }
    if (n == 0) {
      break;
    }
    try {
      sink(buf.get(), static_cast<std::size_t>(n));
    } catch (...) {
      ::close(fd);
      throw;
    }
  }
  ::close(fd);
}

void fsync_dir(const fs::path& dir) {
  int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

void link_or_copy(const fs::path& src, const fs::path& dst) {
  std::error_code ec;
  if (fs::exists(dst, ec)) {
    return;
  }
  AtomicFile tmp(dst);
  // Try a hard link to a fresh temporary name first (cheap, same content by construction).
  fs::path link_tmp = tmp.temp_path().string() + ".ln";
  if (::link(src.c_str(), link_tmp.c_str()) == 0) {
    if (::rename(link_tmp.c_str(), dst.c_str()) != 0) {
      ::unlink(link_tmp.c_str());
      throw_errno("cannot rename " + link_tmp.string() + " to " + dst.string());
    }
    fsync_dir(dst.parent_path());
    return;
  }
  read_file_chunks(src, [&](const char* d, std::size_t n) { tmp.write(d, n); });
  tmp.commit();
}

namespace {
// Whether path still names the file open on fd: a holder may unlink the lock file
// while it holds the lock (a layout's lock goes when its writer is done), and a waiter
// that opened the old file must then lock the new one instead.
bool names_open_file(const fs::path& path, int fd) {
  struct stat at_path {};
  struct stat open {};
  return ::stat(path.c_str(), &at_path) == 0 && ::fstat(fd, &open) == 0 && at_path.st_dev == open.st_dev &&
         at_path.st_ino == open.st_ino;
}
} // namespace

FileLock::FileLock(const fs::path& lock_file, Mode mode) {
  int op = (mode == Mode::shared ? LOCK_SH : LOCK_EX) | LOCK_NB;
  for (;;) {
    m_fd = ::open(lock_file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (m_fd < 0) {
      throw_errno("cannot open lock file " + lock_file.string());
    }
    // Polled, not blocking, so a signal stops a run that waits for another's lock.
    while (::flock(m_fd, op) != 0) {
      if (errno != EINTR && errno != EWOULDBLOCK) {
        int err = errno;
        ::close(m_fd);
        errno = err;
        throw_errno("cannot lock " + lock_file.string());
      }
      try {
        sleep_interruptible(0.02);
      } catch (...) {
        ::close(m_fd);
        throw;
      }
    }
    if (names_open_file(lock_file, m_fd)) {
      return;
    }
    ::close(m_fd); // the file was removed by the holder before us: lock the one there now
  }
}

FileLock::~FileLock() {
  if (m_fd >= 0) {
    ::close(m_fd);
  }
}

TempDir::TempDir(const fs::path& parent, std::string_view prefix) {
  create_dirs(parent, "the parent of a temporary directory");
  // "<pid>-PREFIX...": remove_stale_temps(parent) knows it once its owner is gone.
  std::string pattern = (parent / (std::to_string(::getpid()) + "-" + std::string(prefix) + "XXXXXX")).string();
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data()) == nullptr) {
    throw_errno("cannot create a temporary directory in " + parent.string());
  }
  m_path = buf.data();
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(m_path, ec);
}

std::function<std::size_t(char*, std::size_t)> file_reader(const fs::path& file, std::int64_t offset,
                                                           std::int64_t length) {
  int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    throw_errno("open " + file.string());
  }
  auto holder = std::shared_ptr<int>(new int(fd), [](int* p) {
    ::close(*p);
    delete p;
  });
  auto pos = std::make_shared<std::int64_t>(offset);
  std::int64_t end = length < 0 ? -1 : offset + length;
  return [holder, pos, end, file](char* buf, std::size_t len) -> std::size_t {
    if (end >= 0) {
      len = static_cast<std::size_t>(std::min<std::int64_t>(static_cast<std::int64_t>(len), end - *pos));
      if (len == 0) {
        return 0;
      }
    }
    check_interrupted();
    while (true) {
      ssize_t n = ::pread(*holder, buf, len, static_cast<off_t>(*pos));
      if (n < 0 && errno == EINTR) {
        continue;
      }
      if (n < 0) {
        throw_errno("read " + file.string());
      }
      if (n == 0 && end >= 0) {
        throw util::Error(util::ErrorKind::input, file.string() + " ends early (truncated?)",
                          "copy or write the file again");
      }
      *pos += n;
      return static_cast<std::size_t>(n);
    }
  };
}

std::string read_file_range(const fs::path& file, std::int64_t offset, std::int64_t length) {
  std::string bytes(static_cast<std::size_t>(length), '\0');
  auto r = file_reader(file, offset, length);
  std::size_t got = 0;
  while (got < bytes.size()) {
    std::size_t n = r(bytes.data() + got, bytes.size() - got);
    if (n == 0) {
      break; // not reached: the reader throws when the file ends first
    }
    got += n;
  }
  return bytes;
}

} // namespace util
