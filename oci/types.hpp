#pragma once
// OCI value types: descriptors, manifests, indexes, image configs, with JSON
// conversion. Serialisation is canonical (sorted keys, no whitespace), so equal
// values give equal bytes and equal digests.
#include "oci/digest.hpp"

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace oci {

namespace media {
inline constexpr const char* k_index = "application/vnd.oci.image.index.v1+json";
inline constexpr const char* k_manifest = "application/vnd.oci.image.manifest.v1+json";
inline constexpr const char* k_config = "application/vnd.oci.image.config.v1+json";
inline constexpr const char* k_layer_tar = "application/vnd.oci.image.layer.v1.tar";
inline constexpr const char* k_layer_gzip = "application/vnd.oci.image.layer.v1.tar+gzip";
inline constexpr const char* k_layer_zstd = "application/vnd.oci.image.layer.v1.tar+zstd";
inline constexpr const char* k_docker_manifest = "application/vnd.docker.distribution.manifest.v2+json";
inline constexpr const char* k_docker_layer_gzip = "application/vnd.docker.image.rootfs.diff.tar.gzip";
inline constexpr const char* k_docker_index = "application/vnd.docker.distribution.manifest.list.v2+json";
} // namespace media

// How a layer's tar is compressed (its media type says which).
enum class Compression { gzip, zstd, none };
std::string compression_name(Compression c);                           // "gzip", "zstd", "none"
std::optional<Compression> parse_compression(const std::string& name); // nullopt for anything else
int default_level(Compression c);                                      // gzip 6, zstd 3, none 0
int max_level(Compression c);                                          // gzip 9, zstd 19, none 0

inline constexpr const char* k_ref_name_annotation = "org.opencontainers.image.ref.name";

using Annotations = std::map<std::string, std::string>;

struct Platform {
  std::string architecture;
  std::string os;
  std::string variant;
  bool operator==(const Platform&) const = default;
};

struct Descriptor {
  std::string media_type;
  Digest digest;
  std::int64_t size = 0;
  Annotations annotations;
  std::optional<Platform> platform;
  // Fields this tool does not model (urls, artifactType, data, ...), kept as read so a
  // rewrite of index.json or a manifest never drops them.
  std::map<std::string, nlohmann::json> extra{};
  bool operator==(const Descriptor&) const = default;
};

struct Manifest {
  std::string media_type = media::k_manifest;
  Descriptor config;
  std::vector<Descriptor> layers;
  Annotations annotations;
  bool operator==(const Manifest&) const = default;
};

struct Index {
  std::vector<Descriptor> manifests;
  Annotations annotations;
  std::map<std::string, nlohmann::json> extra; // unknown top-level fields (artifactType, subject, ...)
  bool operator==(const Index&) const = default;
};

struct HistoryEntry {
  std::string created;
  std::string created_by;
  std::string comment;
  bool empty_layer = false;
  bool operator==(const HistoryEntry&) const = default;
};

// The runtime part of an image config ("config" in the JSON).
struct RuntimeConfig {
  std::string user;
  std::vector<std::string> env; // "KEY=value", order kept
  std::optional<std::vector<std::string>> entrypoint;
  std::optional<std::vector<std::string>> cmd;
  std::string working_dir;
  std::map<std::string, std::string> labels;
  std::vector<std::string> exposed_ports; // "8080/tcp", sorted
  std::string stop_signal;
  bool operator==(const RuntimeConfig&) const = default;
};

struct ImageConfig {
  std::string created;
  std::string architecture = "amd64";
  std::string os = "linux";
  std::string variant;
  RuntimeConfig config;
  std::vector<Digest> diff_ids;
  std::vector<HistoryEntry> history;
  bool operator==(const ImageConfig&) const = default;

  // Sets or replaces KEY in env.
  void set_env(const std::string& key, const std::string& value);
  std::optional<std::string> get_env(const std::string& key) const;
};

nlohmann::json to_json(const Descriptor& d);
nlohmann::json to_json(const Manifest& m);
nlohmann::json to_json(const Index& i);
nlohmann::json to_json(const ImageConfig& c);
Descriptor descriptor_from_json(const nlohmann::json& j);
Manifest manifest_from_json(const nlohmann::json& j);
Index index_from_json(const nlohmann::json& j);
ImageConfig config_from_json(const nlohmann::json& j);

// Canonical bytes: sorted keys, compact.
std::string canonical(const nlohmann::json& j);
// Parses JSON, turning parse errors into util::Error(input) naming `what`.
nlohmann::json parse_json(const std::string& text, const std::string& what);

} // namespace oci
