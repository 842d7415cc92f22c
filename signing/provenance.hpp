#pragma once
// SLSA provenance v1 predicates and SBOM documents (SPDX 2.3 JSON, CycloneDX 1.5
// JSON) from facts the caller gathered. Pure functions: equal inputs give equal
// documents (the SPDX namespace and the CycloneDX serial number derive from the image
// digest, times come from the caller).
#include "oci/digest.hpp"

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace signing {

inline constexpr const char* k_build_type = "https://paddle-image.dev/buildtypes/build/v1";
inline constexpr const char* k_builder_id = "https://paddle-image.dev/paddle-image";

struct ResourceDescriptor {
  std::string name;
  std::string uri;
  std::map<std::string, std::string> digest; // algorithm -> hex
  nlohmann::json annotations = nlohmann::json::object();
};

struct ProvenanceInput {
  std::string build_type = k_build_type;
  std::string builder_id = k_builder_id;
  std::string builder_version; // builder.version {"paddle-image": ...}
  // More of builder.version (the release's tools: cmake, the compiler, the OS...).
  std::map<std::string, std::string> builder_tools;
  std::string invocation_id;
  std::string started_on; // RFC 3339 UTC
  std::string finished_on;
  nlohmann::json external_parameters = nlohmann::json::object();
  nlohmann::json internal_parameters = nlohmann::json::object();
  std::vector<ResourceDescriptor> dependencies;
  std::vector<ResourceDescriptor> byproducts;
};
nlohmann::json provenance_predicate(const ProvenanceInput& in);

struct SbomComponent {
  std::string kind; // "deb", "pypi", "data" (a data/files layer: one component)
  std::string name;
  std::string version;
  std::string purl;     // deb and pypi
  std::string location; // where in the image
  std::string layer;    // the layer digest that provides it
  std::string sha256;   // data: the layer's digest hex; an embedded SPDX package's own SHA-256
  std::string license;  // the declared license (an SPDX expression), when known
  std::string origin;   // what listed it, for the comment ("" : by kind: dpkg, python dist-info, layer)
};

struct SbomInput {
  std::string image_name; // "host/repo" or the layout image's title
  oci::Digest image;
  std::string created; // RFC 3339 UTC (SOURCE_DATE_EPOCH)
  std::string tool_version;
  std::string os_id, os_version;
  std::vector<SbomComponent> components;
};
nlohmann::json spdx_document(const SbomInput& in);
nlohmann::json cyclonedx_bom(const SbomInput& in);

// The packages an SPDX 2.x JSON document lists with a purl (externalRefs
// PACKAGE-MANAGER purl): name, versionInfo, purl, its SHA256 checksum, a declared
// license that names no LicenseRef (whose text lives in that document only); kind is
// the purl's type ("deb", "github", "generic"). `location` is where the document lies.
// Anything that is not such a document gives none.
std::vector<SbomComponent> spdx_components(const nlohmann::json& doc, const std::string& location);

// `text` as an SPDX idstring (letters, digits, '.', '-'): every other byte becomes '-'.
std::string spdx_idstring(std::string_view text);

// RFC 4122 version 5 UUID (SHA-1, URL namespace) of name.
std::string uuid_v5(const std::string& name);

} // namespace signing
