#pragma once
// The sources lock: what `paddle-image lock --sources` records for the remote sources a
// spec leaves open (a download's sha256 and size, the commit a git ref names), in
// STEM.sources.lock beside the spec (JSON, sorted, one entry per URL or URL and ref).
// spec::load reads it and fills in the rules' pins (an image source's manifest digest
// too); a build refuses a source that
// neither the spec nor the lock pins. The lock holds no credentials (a spec's URLs
// carry none).
#include "spec/spec.hpp"

#include <optional>

namespace spec {

struct SourcesLock {
  struct Download {
    std::string url;
    std::string sha256; // 64 hex digits
    std::int64_t size = -1;
  };
  struct Git {
    std::string url;
    std::string ref;
    std::string commit; // 40 hex digits
  };
  struct Image {
    std::string image;    // the reference as the spec writes it
    std::string platform; // "linux/amd64": the spec's, which the digest's manifest is for
    std::string digest;   // "sha256:HEX"
  };
  std::vector<Download> downloads; // sorted by url
  std::vector<Git> git;            // sorted by url, then ref
  std::vector<Image> images;       // sorted by image, then platform
  const Download* download(const std::string& url) const;
  const Git* git_pin(const std::string& url, const std::string& ref) const;
  const Image* image_pin(const std::string& image, const std::string& platform) const;
};

// STEM.sources.lock beside the spec file (spec.yaml -> spec.sources.lock).
fs::path sources_lock_path(const fs::path& spec_file);

// The lock at `file`; nullopt when there is none. Error(input) naming the file, the
// entry and the fix (lock again) for one that is malformed.
std::optional<SourcesLock> read_sources_lock(const fs::path& file);

// The lock's text: JSON with its entries sorted, ending in a newline.
std::string sources_lock_text(SourcesLock lock);

// Fills each rule the spec leaves open from s.sources_lock (when it exists and pins it),
// setting RemoteSpec::pinned_by to "lock".
void apply_sources_lock(BuildSpec& s);

// The remote rules, then the image rules, that neither the spec nor the lock pins, each
// in spec order.
std::vector<const CopySpec*> unpinned_sources(const BuildSpec& s);

} // namespace spec
