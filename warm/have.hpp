#pragma once
// The blobs a node already has: the output of `ctr -n k8s.io content ls -q` (one
// digest per line). Blank lines and lines starting with '#' are skipped; anything
// else that is not a digest is an input error naming FILE:LINE.
#include <cstddef>
#include <filesystem>
#include <set>
#include <string>

namespace warm {

struct HaveList {
  std::set<std::string> digests; // "sha256:<hex>"
  std::string source;            // the file, for messages
  std::size_t lines = 0;         // lines read

  bool has(const std::string& digest) const { return digests.count(digest) != 0; }
};

// Parses the text of a --have file; `file` names it in errors.
HaveList parse_have(const std::string& text, const std::string& file);
// Reads and parses a --have file (I/O errors name it; "-" is not special).
HaveList read_have(const std::filesystem::path& file);

} // namespace warm
