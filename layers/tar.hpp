#pragma once
// Deterministic tar (libarchive, pax_restricted: plain ustar unless a field needs a
// PAX record) and a header-level reader for existing layers.
#include "layers/tree.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace layers {

struct TarOptions {
  std::int64_t mtime = 0; // every entry's mtime is SET to this (SOURCE_DATE_EPOCH)
};

using ByteSink = std::function<void(const char*, std::size_t)>;

// Writes entries in their (sorted) order. A source file whose size changed while
// building is an input error (no silently truncated or padded file).
void write_tar(const EntrySet& entries, const TarOptions& options, const ByteSink& sink);

// A tar writer for arbitrary generated members (docker-archive, tests).
class TarBuilder {
public:
  TarBuilder(std::int64_t mtime, ByteSink sink);
  ~TarBuilder();
  TarBuilder(const TarBuilder&) = delete;
  TarBuilder& operator=(const TarBuilder&) = delete;
  void add_bytes(const std::string& path, const std::string& bytes, std::uint32_t mode = 0644);
  // A member whose size is known and whose bytes are produced by `producer`.
  void add_stream(const std::string& path, std::int64_t size, const std::function<void(const ByteSink&)>& producer,
                  std::uint32_t mode = 0644);
  void add_dir(const std::string& path);
  void finish();

  struct Impl;

private:
  Impl* m_impl;
};

struct TarMember {
  std::string path; // as stored, without leading "./" or "/"
  char type = '0';  // '0' file, '5' dir, '2' symlink, '1' hardlink, '3' char, '4' block device, '6' FIFO
  std::int64_t size = 0;
  std::string link_target;
  std::uint32_t mode = 0; // permission bits (with setuid, setgid, sticky)
  std::int64_t uid = 0, gid = 0;
  std::string uname, gname;
  std::vector<std::pair<std::string, std::string>> xattrs; // PAX SCHILY.xattr / LIBARCHIVE.xattr records
};

// Reads member headers of a (possibly compressed) tar file. The visitor returns
// true to receive the member's content through `content` (small files only).
void scan_tar(const std::filesystem::path& file, const std::function<bool(const TarMember&)>& want_content,
              const std::function<void(const TarMember&, const std::string& content)>& on_content);
// The same over a stream (a blob of any image); `what` names it in errors.
void scan_tar(const std::function<std::size_t(char*, std::size_t)>& read, const std::string& what,
              const std::function<bool(const TarMember&)>& want_content,
              const std::function<void(const TarMember&, const std::string& content)>& on_content);

} // namespace layers
