#include "doctor/host.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

namespace doctor {

std::filesystem::path Host::under(const std::string& path) const {
  std::string rel = path;
  while (!rel.empty() && rel.front() == '/') {
    rel.erase(0, 1);
  }
  return m_root / rel;
}

FileRead Host::read(const std::string& path, std::size_t max_bytes) const {
  FileRead r;
  std::string p = under(path).string();
  int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    r.state = errno == ENOENT || errno == ENOTDIR ? FileRead::State::missing : FileRead::State::unreadable;
    r.error = std::strerror(errno);
    return r;
  }
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      r.state = FileRead::State::unreadable;
      r.error = std::strerror(errno);
      ::close(fd);
      return r;
    }
    if (n == 0) {
      break;
    }
    r.content.append(buf, static_cast<std::size_t>(n));
    if (r.content.size() >= max_bytes) {
      r.content.resize(max_bytes);
      break;
    }
  }
  ::close(fd);
  r.state = FileRead::State::ok;
  return r;
}

bool Host::exists(const std::string& path) const {
  struct stat st {};
  return ::lstat(under(path).c_str(), &st) == 0;
}

std::vector<std::string> Host::list(const std::string& dir) const {
  std::vector<std::string> out;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(under(dir), ec), end; !ec && it != end; it.increment(ec)) {
    out.push_back(it->path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<std::pair<unsigned, unsigned>> Host::char_device(const std::string& path) const {
  struct stat st {};
  if (::stat(under(path).c_str(), &st) != 0 || !S_ISCHR(st.st_mode)) {
    return std::nullopt;
  }
  return std::pair{major(st.st_rdev), minor(st.st_rdev)};
}

std::optional<std::string> Host::link_target(const std::string& path) const {
  std::error_code ec;
  auto t = std::filesystem::read_symlink(under(path), ec);
  if (ec) {
    return std::nullopt;
  }
  return t.string();
}

bool Host::executable(const std::string& path) const {
  return ::access(under(path).c_str(), X_OK) == 0;
}

} // namespace doctor
