#include "oci/attachment.hpp"

#include "oci/layout.hpp"
#include "util/error.hpp"
#include "util/sha256.hpp"

namespace oci {

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool same_layer(const Descriptor& a, const Descriptor& b) {
  return a.digest == b.digest && a.media_type == b.media_type && a.annotations == b.annotations;
}

} // namespace

ArtifactManifest attachment_manifest(const std::vector<Descriptor>& layers) {
  nlohmann::json diff_ids = nlohmann::json::array();
  for (const auto& l : layers) {
    diff_ids.push_back(l.digest.str());
  }
  // A valid OCI image config, as cosign writes it: empty platform, one diff_id per layer.
  nlohmann::json config = {{"architecture", ""},
                           {"os", ""},
                           {"config", nlohmann::json::object()},
                           {"rootfs", {{"type", "layers"}, {"diff_ids", diff_ids}}}};
  ArtifactManifest a;
  a.config_bytes = canonical(config);
  a.config.media_type = media::k_config;
  a.config.digest = Digest::sha256(util::sha256_hex(a.config_bytes));
  a.config.size = static_cast<std::int64_t>(a.config_bytes.size());
  Manifest m;
  m.config = a.config;
  m.layers = layers;
  a.manifest = manifest_blob(canonical(to_json(m)), media::k_manifest);
  return a;
}

std::vector<Descriptor> attachment_layers(const ManifestBlob& m, const std::string& name) {
  if (m.is_index()) {
    throw util::Error(util::ErrorKind::input, name + " is an index, not a signature or attestation manifest");
  }
  return manifest_from_json(parse_json(m.bytes, name)).layers;
}

std::vector<Descriptor> union_layers(const std::vector<Descriptor>& base, const std::vector<Descriptor>& extra) {
  std::vector<Descriptor> out = base;
  for (const auto& l : extra) {
    bool seen = false;
    for (const auto& o : out) {
      seen = seen || same_layer(o, l);
    }
    if (!seen) {
      out.push_back(l);
    }
  }
  return out;
}

bool is_mergeable_attachment_tag(const std::string& tag) {
  return is_attachment_tag(tag) && (ends_with(tag, ".sig") || ends_with(tag, ".att") || ends_with(tag, ".sbom"));
}

MergeResult merge_attachment(AttachmentStore& store, const std::string& tag, const ManifestBlob& incoming,
                             const std::string& name) {
  std::optional<ManifestBlob> have = store.tagged(tag);
  if (!have) {
    store.put_manifest(tag, incoming);
    return {incoming, true};
  }
  if (have->digest == incoming.digest) {
    return {*have, false};
  }
  std::vector<Descriptor> old_layers = attachment_layers(*have, name + ":" + tag);
  std::vector<Descriptor> merged = union_layers(old_layers, attachment_layers(incoming, name + ":" + tag));
  if (merged.size() == old_layers.size()) {
    return {*have, false};
  }
  ArtifactManifest a = attachment_manifest(merged);
  store.put_blob(a.config, a.config_bytes);
  store.put_manifest(tag, a.manifest);
  return {a.manifest, true};
}

MergeResult add_attachment_layers(AttachmentStore& store, const std::string& tag,
                                  const std::vector<std::pair<Descriptor, std::string>>& layers,
                                  const std::string& name) {
  std::vector<Descriptor> descs;
  for (const auto& [d, bytes] : layers) {
    store.put_blob(d, bytes);
    descs.push_back(d);
  }
  // The config of the new layers alone goes in first, so that `incoming` is complete
  // in the store even when nothing was there to merge with.
  ArtifactManifest a = attachment_manifest(descs);
  store.put_blob(a.config, a.config_bytes);
  return merge_attachment(store, tag, a.manifest, name);
}

} // namespace oci
