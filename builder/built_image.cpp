#include "builder/built_image.hpp"

#include "util/error.hpp"
#include "util/fs.hpp"

namespace builder {

using util::Error;
using util::ErrorKind;

BuiltImage::BuiltImage(std::string name, oci::ManifestBlob manifest, oci::Descriptor config,
                       std::filesystem::path config_file, std::vector<BuiltLayer> layers, const Base& base,
                       BaseBlobs mode)
    : m_name(std::move(name)), m_root(std::move(manifest)), m_config(std::move(config)),
      m_config_file(std::move(config_file)), m_layers(std::move(layers)), m_base(base), m_mode(mode) {}

oci::ManifestBlob BuiltImage::manifest(const oci::Descriptor& d) const {
  if (d.digest != m_root.digest) {
    throw Error(ErrorKind::internal, m_name + " has no manifest " + d.digest.str());
  }
  return m_root;
}

const BuiltLayer* BuiltImage::find(const oci::Descriptor& d) const {
  if (d.digest == m_config.digest) {
    return nullptr;
  }
  for (const auto& l : m_layers) {
    if (l.descriptor.digest == d.digest) {
      return &l;
    }
  }
  throw Error(ErrorKind::internal, "no blob " + d.digest.str() + " in " + m_name);
}

bool BuiltImage::streams_from_base(const BuiltLayer& l) const {
  return l.from_base && m_mode == BaseBlobs::remote && m_base.image &&
         !m_base.image->hints(l.descriptor).registry.empty();
}

std::filesystem::path BuiltImage::local_file(const BuiltLayer& l) const {
  if (!l.from_base) {
    return l.cache != nullptr ? l.cache->local_blob(l.descriptor.digest) : l.file;
  }
  std::lock_guard<std::mutex> g(m_base_mutex);
  return m_base.local_blob(l.descriptor);
}

oci::Reader BuiltImage::open_blob(const oci::Descriptor& d, std::int64_t offset) const {
  const BuiltLayer* l = find(d);
  if (l == nullptr) {
    return util::file_reader(m_config_file, offset);
  }
  if (streams_from_base(*l)) {
    return m_base.image->open_blob(d, offset);
  }
  return util::file_reader(local_file(*l), offset);
}

void BuiltImage::read_blob(const oci::Descriptor& d, const oci::Sink& sink) const {
  const BuiltLayer* l = find(d);
  if (l != nullptr && streams_from_base(*l)) {
    m_base.image->read_blob(d, sink);
    return;
  }
  Image::read_blob(d, sink);
}

oci::BlobHints BuiltImage::hints(const oci::Descriptor& d) const {
  oci::BlobHints h;
  const BuiltLayer* l = find(d);
  if (l == nullptr) {
    h.file = m_config_file;
    return h;
  }
  h.uncompressed_size = l->uncompressed_size;
  if (streams_from_base(*l)) {
    oci::BlobHints from = m_base.image->hints(d);
    h.registry = from.registry;
    h.repository = from.repository;
    h.verified = false;
    return h;
  }
  if (m_mode == BaseBlobs::remote && !l->mount_registry.empty()) {
    h.registry = l->mount_registry; // mounted from the cache repository, else uploaded
    h.repository = l->mount_repository;
    if (l->cache != nullptr && !l->cache->blobs().has(d.digest)) {
      h.verified = false; // not here yet: open_blob downloads it (checked) only if the mount fails
      return h;
    }
  }
  h.file = local_file(*l);
  return h;
}

} // namespace builder
