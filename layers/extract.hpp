#pragma once
// Unpacks a downloaded archive (a remote source of a files or data layer: every tar
// compression libarchive reads, and zip) into an empty directory, safely: a member
// whose path is absolute or climbs out with "..", a symlink or hard link pointing out
// of the tree, a member written through a symlink, and devices or FIFOs are refused
// with the member named, before anything of it is written. Modes come from the archive
// (permission bits only, the owner always able to read, and to enter directories);
// owners and times do not (the layer's rule and SOURCE_DATE_EPOCH give them), so the
// tree is the same on any machine.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace layers {

struct ExtractOptions {
  // Leading path components dropped from every member (tar --strip-components); a
  // member with no more than that many is skipped.
  int strip_components = 0;
  // Glob patterns ('*' also matches '/') for the members to keep, after stripping; a
  // pattern naming a directory keeps what lies below it. Empty: every member.
  std::vector<std::string> include;
  // When set, in place of `include`: the members kept, by their path after stripping
  // (an image's layer read for the paths a copy rule takes from it).
  std::function<bool(const std::string&)> want;
  // Symlinks to absolute paths are kept as they are (an image's own links, which point
  // within the image once it is a root), not refused.
  bool absolute_symlinks = false;
  // `dest` may exist already (an image's layers extracted into one tree, in order).
  bool into_existing = false;
};

struct ExtractResult {
  std::size_t members = 0; // written (directories, files, links)
  std::size_t skipped = 0; // left out by strip_components or include
  std::int64_t bytes = 0;  // file content written
};

// Whether `rel` (a member's path after stripping) is kept by the include patterns.
bool included(const std::vector<std::string>& include, const std::string& rel);

// Extracts `archive` into `dest` (created; must not exist). `what` names the source in
// errors ("https://host/model.tar"). Throws util::Error(integrity) for a member that
// would write outside `dest`, util::Error(input) for an archive it cannot read or a
// member of a type it refuses.
ExtractResult extract_archive(const std::filesystem::path& archive, const std::filesystem::path& dest,
                              const ExtractOptions& options, const std::string& what);

} // namespace layers
