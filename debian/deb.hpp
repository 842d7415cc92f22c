#pragma once
// A binary package (.deb) read as dpkg-deb reads it: an ar archive holding
// debian-binary ("2.0"), control.tar[.gz|.xz|.zst] and data.tar[.gz|.xz|.zst|.bz2],
// streamed (the data archive is never unpacked to disk here). The control archive's
// files come back in memory; each data member goes to a callback with a reader for its
// bytes.
#include "debian/control.hpp"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>

namespace debian {

namespace fs = std::filesystem;

struct DataMember {
  std::string path;          // "usr/lib/x.so" ("" for the root "./")
  char type = '0';           // '0' file, '5' directory, '2' symlink, '1' hard link
  std::uint32_t mode = 0644; // permission bits with setuid/setgid/sticky
  std::int64_t uid = 0, gid = 0;
  std::string uname, gname;
  std::int64_t size = 0;
  std::string link; // symlink target, or the member a hard link names ("usr/bin/x")
};

struct DebControl {
  Paragraph control;                        // the control file
  std::map<std::string, std::string> files; // every other control member: md5sums, conffiles, postinst...
};

using ReadData = std::function<std::size_t(char*, std::size_t)>;

// Reads `deb`; `each` sees every data member in archive order (for a regular file it
// may read the bytes through the reader; what it leaves is skipped). `what` names the
// package in errors: Error(input) for a file that is not a .deb, a member with an
// absolute path or '..', or a device or FIFO.
// `on_control` sees the control members before any data member is read.
DebControl read_deb(const fs::path& deb, const std::string& what,
                    const std::function<void(const DebControl&)>& on_control,
                    const std::function<void(const DataMember&, const ReadData&)>& each);

} // namespace debian
