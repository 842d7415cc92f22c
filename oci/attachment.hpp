#pragma once
// cosign's attachment manifests: what hangs off an image digest under the tags
// "sha256-<hex>.sig" (simple-signing payloads) and "sha256-<hex>.att" (DSSE
// envelopes). Each is an OCI image manifest with one layer per signature or
// attestation and a config that lists the layer digests as diff_ids. Adding one never
// replaces what a tag holds: the layers are merged (cosign appends the same way), so
// signatures from several keys and copies from several sources add up.
#include "oci/image.hpp"

#include <optional>
#include <string>
#include <vector>

namespace oci {

struct ArtifactManifest {
  ManifestBlob manifest;
  Descriptor config;
  std::string config_bytes;
};

// The manifest and config cosign writes for these layers (in this order).
ArtifactManifest attachment_manifest(const std::vector<Descriptor>& layers);
// The layers of an attachment manifest; `name` names it in errors.
std::vector<Descriptor> attachment_layers(const ManifestBlob& m, const std::string& name);
// `base` followed by the layers of `extra` it does not have (same digest, media type
// and annotations).
std::vector<Descriptor> union_layers(const std::vector<Descriptor>& base, const std::vector<Descriptor>& extra);

// The signature or attestation tags ("...sig", "...att", "...sbom"), which merge; the
// referrers fallback index ("sha256-<hex>") does not.
bool is_mergeable_attachment_tag(const std::string& tag);

// A place attachments are added to: an OCI layout, a registry repository.
class AttachmentStore {
public:
  virtual ~AttachmentStore() = default;
  // What the tag holds now (nullopt: nothing).
  virtual std::optional<ManifestBlob> tagged(const std::string& tag) = 0;
  virtual std::string read_small(const Descriptor& d) = 0;
  virtual void put_blob(const Descriptor& d, const std::string& bytes) = 0;
  virtual void put_manifest(const std::string& tag, const ManifestBlob& m) = 0;
};

struct MergeResult {
  ManifestBlob manifest; // what the tag holds afterwards
  bool changed = false;  // false: it held all of these layers already
};
// Puts `incoming` (whose layers and config the store already has) under tag, merged
// with what the tag holds: the union of layers, a new config and manifest when both
// had layers the other lacks.
MergeResult merge_attachment(AttachmentStore& store, const std::string& tag, const ManifestBlob& incoming,
                             const std::string& name);
// Adds layers whose bytes are given (a new signature) under tag, merged likewise.
MergeResult add_attachment_layers(AttachmentStore& store, const std::string& tag,
                                  const std::vector<std::pair<Descriptor, std::string>>& layers,
                                  const std::string& name);

} // namespace oci
