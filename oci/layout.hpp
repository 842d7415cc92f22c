#pragma once
// Content-addressed blob storage and the OCI image layout built on it.
#include "oci/types.hpp"
#include "util/fs.hpp"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace oci {

namespace fs = std::filesystem;

// blobs/<alg>/<hex> under a root, written atomically through <root>/.tmp.
class BlobStore {
public:
  explicit BlobStore(fs::path root);
  const fs::path& root() const { return m_root; }
  fs::path blob_path(const Digest& d) const;
  bool has(const Digest& d) const;
  // Writes bytes, returns the descriptor (sha256).
  Descriptor put_bytes(const std::string& media_type, const std::string& bytes);
  // Links (or copies) a blob file from elsewhere; the caller vouches for its bytes
  // (another content-addressed store). Nothing is hashed here.
  void put_file(const Digest& d, const fs::path& src);
  // A temporary file for a blob whose digest is known only after writing.
  std::unique_ptr<util::AtomicFile> begin_write();
  // Commits a temporary written through begin_write under digest d: renamed over the
  // blob's name, replacing a blob already there (same digest, so the same bytes).
  // Callers that can skip the write check has() first.
  void commit(util::AtomicFile& tmp, const Digest& d);
  // Reads a blob whole, checking size and digest (for small JSON blobs).
  std::string read_small(const Digest& d, std::int64_t max_size = 16 << 20) const;
  void remove_stale_temps() const;

private:
  fs::path m_root;
};

// cosign's tag scheme for what is attached to sha256:<hex>: "sha256-<hex>.sig",
// ".att", ".sbom", and "sha256-<hex>" for the referrers fallback index.
bool is_attachment_tag(const std::string& tag);
std::vector<std::string> attachment_tags(const Digest& subject);

// An OCI image layout directory (oci-layout, index.json, blobs/).
class OciLayout {
public:
  // Opens an existing layout or creates a new one. A directory that exists, is not
  // empty and is not a layout is refused (input error).
  static OciLayout open_or_create(const fs::path& dir);
  static OciLayout open_existing(const fs::path& dir);

  BlobStore& blobs() { return m_blobs; }
  const BlobStore& blobs() const { return m_blobs; }
  const fs::path& dir() const { return m_dir; }
  Index read_index() const;
  // Adds a manifest under each tag (org.opencontainers.image.ref.name), replacing any
  // earlier entry with the same tag; writes index.json atomically (callers hold lock_dir).
  void add_manifest(const Descriptor& manifest, const std::vector<std::string>& tags);
  // The manifest descriptor for tag; with an empty tag, the only image (attachment
  // tags such as sha256-<hex>.sig do not count).
  Descriptor resolve(const std::string& tag) const;
  Manifest read_manifest(const Descriptor& d) const;
  ImageConfig read_config(const Manifest& m) const;
  // Exclusive lock on the layout directory (file ".paddle-image.lock" inside it),
  // creating the directory if needed. Take it before open_or_create so concurrent
  // writers never see a half-created layout.
  // The lock leaves nothing behind: its lock file and an empty `.tmp/` go when it is
  // released (util::FileLock keeps removing it safe), and in a directory that did not
  // become a layout (one the tool refused, or a write that failed first) so does the
  // directory when lock_dir created it and it is still empty.
  class DirLock {
  public:
    DirLock(fs::path dir, bool created_dir);
    ~DirLock();
    DirLock(const DirLock&) = delete;
    DirLock& operator=(const DirLock&) = delete;

  private:
    fs::path m_dir;
    bool m_created_dir;
    util::FileLock m_lock;
  };
  static std::unique_ptr<DirLock> lock_dir(const fs::path& dir);

  // Drops blobs that nothing in index.json reaches (manifests, indexes, configs,
  // layers, recursively, plus manifests whose `subject` is reached: signatures and
  // attestations). Callers hold lock_dir. dry_run only lists them.
  struct GcResult {
    std::vector<Digest> removed;
    std::int64_t bytes = 0;
    std::size_t kept = 0;
  };
  GcResult gc(bool dry_run);

private:
  explicit OciLayout(fs::path dir);
  fs::path m_dir;
  BlobStore m_blobs;
};

// The entry of an index.json (a layout's, an oci-archive's) under `tag`; with an empty
// tag, the only image (attachment tags do not count). `what` names the container in
// errors ("layout DIR"), `ref` is how the user names it with a tag ("oci:DIR").
Descriptor select_entry(Index index, const std::string& tag, const std::string& what, const std::string& ref);

} // namespace oci
