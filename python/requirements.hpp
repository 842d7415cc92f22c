#pragma once
// pip's requirements-file format, as pip reads it and as `pip-compile
// --generate-hashes` writes it: one requirement a line (PEP 508, with environment
// markers and extras), "\" continuations, "#" comments, per-requirement
// `--hash=sha256:HEX` options, and the global options -i/--index-url,
// --extra-index-url, --no-index, -f/--find-links and -r/--requirement includes
// (followed relative to the including file). A lock is such a file in which every
// requirement is pinned with == and carries at least one sha256.
#include "python/requirement.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace python {

namespace fs = std::filesystem;

struct RequirementLine {
  Requirement requirement;
  std::string text;                // the requirement as written, without options
  std::vector<std::string> sha256; // lower-case hex
  fs::path file;                   // where it was read (an include names its own file)
  int line = 0;
  std::string where() const { return file.string() + ":" + std::to_string(line); }
  // The pinned version ("" unless the specifier is a single == or === without "*").
  std::string pinned() const;
};

struct RequirementsFile {
  std::vector<RequirementLine> requirements;
  std::optional<std::string> index_url; // the last -i/--index-url
  std::vector<std::string> extra_index_urls;
  std::vector<std::string> find_links; // URLs, or paths made absolute against the file's directory
  bool no_index = false;
  bool pre = false; // --pre (resolve mode: pre-releases are candidates like any version)
  // -c/--constraint files' lines (resolve mode): they bind a project only when the
  // requirements bring it in.
  std::vector<RequirementLine> constraints;
  std::string first_index_option; // "FILE:LINE: OPTION" of the first index option, for messages
};

enum class RequirementsMode {
  lock,   // every requirement pinned with == and hashed (a build input)
  pinned, // every requirement pinned with ==, hashes optional
  // `paddle-image lock` input: ranges, names alone, -c constraints files, --pre; a
  // project may be listed more than once (the resolver intersects the lines).
  resolve,
};

// Reads `path` and its includes. Throws util::Error(input) naming the file and line
// (an unpinned or hashless requirement in a lock, an unknown option, a malformed
// requirement, a direct URL, an include cycle, a project listed twice) and
// util::Error(io) when a file cannot be read.
RequirementsFile parse_requirements(const fs::path& path, RequirementsMode mode);

} // namespace python
