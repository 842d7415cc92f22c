#pragma once
// File-system helpers: atomic writes (temp file in the same directory, fsync,
// rename, fsync of the directory), bounded-memory reads, advisory locks.
#include <cstddef>
#include <cstdint>
#include <ctime>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

namespace util {

namespace fs = std::filesystem;

// A file that becomes visible under its final name only when commit() succeeds.
// Destroyed without commit(), the temporary file is removed.
class AtomicFile {
public:
  // Temporary file ".NAME.tmp-<pid>-XXXXXX" beside final_path (remove_stale_temps_beside).
  explicit AtomicFile(fs::path final_path);
  // Temporary file in temp_dir (same file system as final_path), named "<pid>-XXXXXX"
  // so stale leftovers of killed processes can be recognised (remove_stale_temps).
  AtomicFile(fs::path final_path, const fs::path& temp_dir);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  void write(const void* data, std::size_t size);
  void write(std::string_view s) { write(s.data(), s.size()); }
  // fsync + rename over final_path + fsync of the directory.
  void commit();
  // Rename to a different final name (used when the name is known only after hashing).
  void commit_as(const fs::path& final_path);
  const fs::path& temp_path() const { return m_temp; }
  int fd() const { return m_fd; }

private:
  fs::path m_final;
  fs::path m_temp;
  static constexpr std::size_t k_writeback_every = std::size_t{8} << 20;
  int m_fd = -1;
  bool m_done = false;
  std::size_t m_unflushed = 0; // bytes written since write-back was last started
};

// Creates dir and its missing parents (std::filesystem::create_directories) and turns
// a failure into Error(io): "cannot create WHAT DIR: reason", with `hint` when given.
void create_dirs(const fs::path& dir, const std::string& what, const std::string& hint = {});
// Removes "<pid>-*" files and directories in dir whose process no longer exists (a
// run killed with SIGKILL); a live run's, concurrent or this one's, are kept.
void remove_stale_temps(const fs::path& dir);
// The same for the ".NAME.tmp-<pid>-*" files AtomicFile(final_path) leaves beside
// final_path when killed.
void remove_stale_temps_beside(const fs::path& final_path);
// A timespec (st_mtim, st_ctim) in nanoseconds since the epoch: how stat data is kept
// in cache keys, records and memos.
inline std::int64_t timespec_ns(const struct timespec& ts) {
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}
void write_file_atomic(const fs::path& path, std::string_view content);
std::string read_file(const fs::path& path);
// Calls sink with successive chunks of the file (1 MiB at most each).
void read_file_chunks(const fs::path& path, const std::function<void(const char*, std::size_t)>& sink);
void fsync_dir(const fs::path& dir);
// A reader over [offset, offset + length) of a file (length < 0: to the end), by pread;
// fills buf and returns the count, 0 at the end. The file stays open while the reader lives.
std::function<std::size_t(char* buf, std::size_t len)> file_reader(const fs::path& file, std::int64_t offset,
                                                                   std::int64_t length = -1);
// The `length` bytes of `file` from `offset`, through file_reader (so a file that ends
// first is the same Error(input)).
std::string read_file_range(const fs::path& file, std::int64_t offset, std::int64_t length);
// Hard-links src to dst when on one file system, copies otherwise; atomic at dst.
void link_or_copy(const fs::path& src, const fs::path& dst);

// flock(2)-based advisory lock on a lock file (created when missing). Blocks. A holder
// may remove the lock file while it holds the lock: a waiter that locked the removed
// file notices (the path names another file, or none) and locks the one there now.
class FileLock {
public:
  enum class Mode { shared, exclusive };
  FileLock(const fs::path& lock_file, Mode mode);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

private:
  int m_fd = -1;
};

// A directory "<pid>-PREFIX..." under parent, removed recursively on destruction.
class TempDir {
public:
  explicit TempDir(const fs::path& parent, std::string_view prefix = "paddle-image-");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return m_path; }

private:
  fs::path m_path;
};

} // namespace util
