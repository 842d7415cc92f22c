#pragma once
// The image a build produces, as an oci::Image: manifest and config made by the
// build, its own layers from the layer cache, base layers from wherever the base
// lives. Two views of the same bytes: for local outputs (a layout, an archive) every
// base layer is a local file (a registry base's layers pulled once into the layer
// cache); for pushes a registry base's layers stay where they are (mounted or streamed
// across, never stored).
#include "builder/base.hpp"
#include "oci/image.hpp"

#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace builder {

struct BuiltLayer {
  oci::Descriptor descriptor;
  std::filesystem::path file;                    // our layers: the cache blob
  std::optional<std::int64_t> uncompressed_size; // known for our layers
  bool from_base = false;
  // Our layer taken from a registry cache: the cache, which downloads it once when a
  // local output needs it (until then a push has no file to upload it from).
  layers::LayerCache* cache = nullptr;
  // Our layer in a registry cache repository (taken from it, or stored into it by
  // --cache-to): a push to that registry mounts it from there.
  std::string mount_registry, mount_repository;
};

class BuiltImage : public oci::Image {
public:
  enum class BaseBlobs { local, remote };
  BuiltImage(std::string name, oci::ManifestBlob manifest, oci::Descriptor config, std::filesystem::path config_file,
             std::vector<BuiltLayer> layers, const Base& base, BaseBlobs mode);
  const std::string& name() const override { return m_name; }
  const oci::ManifestBlob& root() const override { return m_root; }
  oci::ManifestBlob manifest(const oci::Descriptor& d) const override;
  oci::Reader open_blob(const oci::Descriptor& d, std::int64_t offset) const override;
  void read_blob(const oci::Descriptor& d, const oci::Sink& sink) const override;
  oci::BlobHints hints(const oci::Descriptor& d) const override;

private:
  const BuiltLayer* find(const oci::Descriptor& d) const;
  bool streams_from_base(const BuiltLayer& l) const;
  std::filesystem::path local_file(const BuiltLayer& l) const;

  std::string m_name;
  oci::ManifestBlob m_root;
  oci::Descriptor m_config;
  std::filesystem::path m_config_file;
  std::vector<BuiltLayer> m_layers;
  const Base& m_base;
  BaseBlobs m_mode;
  mutable std::mutex m_base_mutex; // one base pull into the cache at a time
};

} // namespace builder
