#pragma once
// Reads a host's files under a root directory (--root; "/" on a real node, a
// fixture tree in tests, the host mount in a DaemonSet). Never throws: every
// result says what happened (missing, unreadable, ok).
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace doctor {

struct FileRead {
  enum class State { ok, missing, unreadable };
  State state = State::missing;
  std::string content;
  std::string error; // strerror text when unreadable
  bool ok() const { return state == State::ok; }
};

class Host {
public:
  explicit Host(std::filesystem::path root) : m_root(std::move(root)) {}
  const std::filesystem::path& root() const { return m_root; }
  // `path` is absolute on the host ("/proc/modules").
  std::filesystem::path under(const std::string& path) const;
  FileRead read(const std::string& path, std::size_t max_bytes = 4 << 20) const;
  bool exists(const std::string& path) const;
  std::vector<std::string> list(const std::string& dir) const; // names, sorted
  // Char device major:minor when `path` is a character device.
  std::optional<std::pair<unsigned, unsigned>> char_device(const std::string& path) const;
  // Symlink target (one level), as stored.
  std::optional<std::string> link_target(const std::string& path) const;
  bool executable(const std::string& path) const;

private:
  std::filesystem::path m_root;
};

} // namespace doctor
