#pragma once
// The one image model. An Image is read-only: the manifest (or index) a reference
// names, its child manifests, and every blob as a stream. Each source implements it
// (an OCI layout here, a registry repository in registry/, a docker-archive read in
// place in layers/, a fresh build in builder/), and each destination has one writer
// that takes any Image (write_layout here, registry::push_image, layers::
// write_docker_archive). Nothing is buffered whole except manifests and configs.
#include "oci/types.hpp"
#include "util/sha256.hpp"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace oci {

// Fills buf, returns the byte count; 0 at the end.
using Reader = std::function<std::size_t(char* buf, std::size_t len)>;
// A stream of a blob from an offset on (called again with a new offset to resume).
using BlobOpener = std::function<Reader(std::int64_t offset)>;
using Sink = std::function<void(const char* data, std::size_t len)>;
using Progress = std::function<void(const Digest& blob, std::int64_t done, std::int64_t total)>;
using InfoSink = std::function<void(const std::string& line)>;

// A manifest or index as bytes, with its digest and media type.
struct ManifestBlob {
  std::string media_type;
  std::string bytes;
  Digest digest;
  Descriptor descriptor() const;
  bool is_index() const;
};

bool is_index_media_type(const std::string& media_type);
// The media type of manifest bytes: the JSON's mediaType, else guessed from its shape.
std::string sniff_media_type(const std::string& bytes);
// A manifest blob from bytes (digest computed, media type given or sniffed).
ManifestBlob manifest_blob(std::string bytes, const std::string& media_type = {});

// What a source knows about a blob beyond its descriptor. Writers use these to avoid
// work (link a file instead of copying, mount instead of uploading, skip a size pass);
// open_blob always works without them.
struct BlobHints {
  std::filesystem::path file;                    // a local file holding exactly the blob's bytes
  std::string registry;                          // or a registry host ...
  std::string repository;                        // ... and repository holding it (mountable there)
  bool verified = true;                          // false: the bytes are not yet checked against the digest
  std::optional<std::int64_t> uncompressed_size; // of a layer, when known
};

// A manifest that refers to another one: a signature, an attestation, an SBOM. `tag`
// is its tag in the source ("sha256-<hex>.sig", cosign's scheme), empty when it is
// found through its `subject` (the referrers API).
struct Attachment {
  Descriptor descriptor;
  std::string tag;
  bool operator==(const Attachment&) const = default;
};

class Image {
public:
  virtual ~Image() = default;
  // For messages: "oci:out/app:1.0", "host/repo:tag", "docker-archive:x.tar".
  virtual const std::string& name() const = 0;
  // The manifest or index the reference names.
  virtual const ManifestBlob& root() const = 0;
  // A manifest by descriptor (an index's child, an attachment), verified.
  virtual ManifestBlob manifest(const Descriptor& d) const = 0;
  // A blob's bytes from `offset` on. Not verified here: writers hash what they copy
  // unless hints().verified says the source has done it.
  virtual Reader open_blob(const Descriptor& d, std::int64_t offset) const = 0;
  // The whole blob pushed into sink (the default reads open_blob(d, 0)); sources
  // that stream by callback (a registry download with resume) override it.
  virtual void read_blob(const Descriptor& d, const Sink& sink) const;
  virtual BlobHints hints(const Descriptor& d) const;
  // Manifests attached to `subject` (signatures, attestations), when the source has any.
  virtual std::vector<Attachment> attachments(const Digest& subject) const;
};

using ImagePtr = std::shared_ptr<const Image>;

// Config and layer descriptors of an image manifest (each digest once; foreign layers,
// which carry URLs, stay where they are and are left out).
std::vector<Descriptor> image_blobs(const ManifestBlob& m, const std::string& name);
// Child manifests of an index.
std::vector<Descriptor> index_children(const ManifestBlob& m, const std::string& name);
// A small blob (a config) read whole and checked against its digest and size.
std::string read_small_blob(const Image& img, const Descriptor& d, std::int64_t max_size = 16 << 20);
ImageConfig read_config(const Image& img, const Manifest& m);

// "os/arch[/variant]".
std::string platform_str(const Platform& p);
// Parses "os/arch[/variant]"; `what` names the flag or field in the error (usage).
Platform parse_platform(const std::string& text, const std::string& what);
// Whether an index entry's platform serves `want` (an empty wanted variant matches any).
bool platform_matches(const Platform& have, const Platform& want);
// The default platform of commands that read an index.
inline Platform default_platform() {
  return Platform{"amd64", "linux", ""};
}

struct CopyOptions {
  int jobs = 4; // parallel blob transfers
  Platform platform = default_platform();
  bool platform_explicit = false; // --platform given: a single-platform image must match too
  bool all_platforms = false;     // copy a whole index instead of one platform
  bool attachments = true;        // carry signatures and attestations along
  Progress progress;              // per blob
  // A blob that reached the destination without its bytes moving: "mounted" (from
  // another repository of the same registry) or "already there". Progress shows it so,
  // not as a transfer.
  std::function<void(const Digest& blob, std::int64_t size, const std::string& how)> settled;
  InfoSink info;
};

struct CopyResult {
  ManifestBlob manifest;         // what was written (the platform's manifest, or the index)
  std::vector<std::string> refs; // written references ("host/repo:tag@sha256:..")
  std::size_t attachments = 0;   // attached manifests copied along
};

// Picks the platform's manifest from an index (or returns an image manifest as is;
// with platform_explicit, its config must match). Errors name the platforms there are.
ManifestBlob select_platform(const Image& img, const CopyOptions& opt);

// What a copy writes: image manifests (children first), then the top manifest, then
// the attachments of each (each with its own blobs).
struct CopyPlan {
  ManifestBlob top;
  std::vector<ManifestBlob> images; // image manifests, children before the index
  struct Attached {
    Attachment attachment;
    ManifestBlob manifest;
  };
  std::vector<Attached> attached;
};
CopyPlan plan_copy(const Image& img, const CopyOptions& opt);

// Hashes a stream while it passes and checks it against a descriptor at the end.
class VerifyingSink {
public:
  VerifyingSink(const Descriptor& d, std::string what, Sink next);
  void operator()(const char* data, std::size_t len);
  std::int64_t bytes() const { return m_bytes; }
  // Throws util::Error(integrity) naming the blob when size or digest differ.
  void check();

private:
  Descriptor m_desc;
  std::string m_what;
  Sink m_next;
  util::Sha256 m_hash;
  std::int64_t m_bytes = 0;
};

} // namespace oci
