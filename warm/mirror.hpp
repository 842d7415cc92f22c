#pragma once
// Putting an image where nodes will find it: a mirror (a registry containerd asks
// first, hosts.toml) and a pull-through cache (a registry in proxy mode). containerd
// asks a mirror for the upstream's repository path, so the image keeps its path.
#include "oci/image.hpp"
#include "registry/client.hpp"
#include "warm/target.hpp"

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace warm {

struct MirrorResult {
  oci::CopyResult copy;          // manifest, written refs, attachments
  std::vector<std::string> tags; // tags put (or already pointing at the digest)
};

// Pushes img to `mirror` under `repo`: each blob the mirror lacks (HEAD first, a
// cross-repository mount when the source is the same registry, else streamed
// across), the manifest by digest, then each tag. Signatures and attestations go
// along unless opt.attachments is off.
MirrorResult push_to_mirror(const oci::Image& img, const std::shared_ptr<registry::Registry>& mirror,
                            const std::string& repo, const std::vector<std::string>& tags, const oci::CopyOptions& opt);

struct ThroughBlob {
  oci::Descriptor desc;
  std::string kind;      // "config", "layer", "attachment"
  std::int64_t read = 0; // bytes the cache served (all of them, digest checked)
};

struct ThroughResult {
  oci::ManifestBlob top;
  std::vector<oci::Digest> manifests; // read by digest through the cache
  std::vector<ThroughBlob> blobs;
  std::int64_t bytes = 0;
  std::size_t attachments = 0;
};

// Reads the image `reference` (a tag or a digest) of `repo` and everything it needs
// through a pull-through cache: the manifest by its name and by digest, each child
// and attached manifest, and every blob streamed whole and hashed (a cache stores a
// blob once it has served all of it; a HEAD is answered from upstream and proves
// nothing). Each blob is checked against its digest as it arrives.
ThroughResult warm_through(const std::shared_ptr<registry::Registry>& cache, const std::string& repo,
                           const std::string& reference, const oci::CopyOptions& opt);

// What `warm push` was asked: IMAGE, one of --to MIRROR and --through URL, and --tag.
struct PushRequest {
  std::string image;
  std::string to;
  std::string through;
  bool tag = false;
};

// Where `warm push` goes.
struct PushTarget {
  oci::ImageRef ref;             // IMAGE, a registry reference
  RegistryTarget target;         // the mirror (--to) or the pull-through cache (--through)
  bool to_mirror = false;        // --to
  std::vector<std::string> tags; // put on the mirror: IMAGE's tag with --tag, else none
};

// Checks the flags that go together, before any request (usage errors): exactly one of
// --to and --through; --tag only for an IMAGE with a tag and only with --to; a mirror
// other than IMAGE's own registry.
PushTarget push_target(const PushRequest& req);

// The JSON reports of a push to a mirror and of a read through a cache (cli adds the
// session's "stats").
nlohmann::json to_json(const MirrorResult& r, const oci::ImageRef& ref, const std::string& mirror);
nlohmann::json to_json(const ThroughResult& r, const oci::ImageRef& ref, const std::string& cache);

} // namespace warm
