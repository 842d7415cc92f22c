#include "signing/provenance.hpp"

#include <cctype>

namespace signing {

namespace {

// SPDX ids allow letters, digits, '.' and '-'.
std::string spdx_id(const std::string& prefix, const std::string& text, std::size_t n) {
  std::string out = "SPDXRef-" + prefix + "-";
  for (char c : text) {
    out += (std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '-') ? c : '-';
  }
  return out + "-" + std::to_string(n);
}

std::string supplier_note(const SbomComponent& c) {
  return c.kind == "deb" ? "dpkg" : c.kind == "pypi" ? "python dist-info" : "image layer";
}

} // namespace

nlohmann::json spdx_document(const SbomInput& in) {
  std::string uuid = uuid_v5("spdx:" + in.image.str());
  nlohmann::json image_pkg = {
      {"SPDXID", "SPDXRef-Image"},
      {"name", in.image_name},
      {"versionInfo", in.image.str()},
      {"downloadLocation", "NOASSERTION"},
      {"filesAnalyzed", false},
      {"primaryPackagePurpose", "CONTAINER"},
      {"checksums", nlohmann::json::array({{{"algorithm", "SHA256"}, {"checksumValue", in.image.hex}}})},
  };
  nlohmann::json packages = nlohmann::json::array({image_pkg});
  nlohmann::json relationships = nlohmann::json::array({{{"spdxElementId", "SPDXRef-DOCUMENT"},
                                                         {"relationshipType", "DESCRIBES"},
                                                         {"relatedSpdxElement", "SPDXRef-Image"}}});
  std::size_t n = 0;
  for (const auto& c : in.components) {
    std::string id = spdx_id(c.kind, c.name, ++n);
    nlohmann::json p = {{"SPDXID", id},
                        {"name", c.name},
                        {"downloadLocation", "NOASSERTION"},
                        {"filesAnalyzed", false},
                        {"comment", "from " + supplier_note(c) + " at " + c.location + " in layer " + c.layer}};
    if (!c.version.empty()) {
      p["versionInfo"] = c.version;
    }
    if (!c.purl.empty()) {
      p["externalRefs"] = nlohmann::json::array(
          {{{"referenceCategory", "PACKAGE-MANAGER"}, {"referenceType", "purl"}, {"referenceLocator", c.purl}}});
    }
    if (!c.sha256.empty()) {
      p["checksums"] = nlohmann::json::array({{{"algorithm", "SHA256"}, {"checksumValue", c.sha256}}});
    }
    if (c.kind == "data") {
      p["primaryPackagePurpose"] = "FILE";
    } else {
      p["primaryPackagePurpose"] = "LIBRARY";
    }
    packages.push_back(p);
    relationships.push_back(
        {{"spdxElementId", "SPDXRef-Image"}, {"relationshipType", "CONTAINS"}, {"relatedSpdxElement", id}});
  }
  std::string safe_name;
  for (char c : in.image_name) {
    safe_name += (std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '-') ? c : '-';
  }
  return {{"spdxVersion", "SPDX-2.3"},
          {"dataLicense", "CC0-1.0"},
          {"SPDXID", "SPDXRef-DOCUMENT"},
          {"name", in.image_name + "@" + in.image.str()},
          {"documentNamespace", "https://paddle-image.dev/spdxdocs/" + safe_name + "-" + uuid},
          {"creationInfo", {{"created", in.created}, {"creators", {"Tool: paddle-image-" + in.tool_version}}}},
          {"packages", packages},
          {"relationships", relationships}};
}

nlohmann::json cyclonedx_bom(const SbomInput& in) {
  nlohmann::json components = nlohmann::json::array();
  std::size_t n = 0;
  for (const auto& c : in.components) {
    nlohmann::json j = {{"type", c.kind == "data" ? "data" : "library"},
                        {"bom-ref", c.kind + ":" + std::to_string(++n) + ":" + c.name},
                        {"name", c.name}};
    if (!c.version.empty()) {
      j["version"] = c.version;
    }
    if (!c.purl.empty()) {
      j["purl"] = c.purl;
    }
    if (!c.sha256.empty()) {
      j["hashes"] = nlohmann::json::array({{{"alg", "SHA-256"}, {"content", c.sha256}}});
    }
    j["properties"] = nlohmann::json::array({{{"name", "paddle-image:location"}, {"value", c.location}},
                                             {{"name", "paddle-image:layer"}, {"value", c.layer}}});
    components.push_back(j);
  }
  nlohmann::json image = {{"type", "container"},
                          {"bom-ref", "image"},
                          {"name", in.image_name},
                          {"version", in.image.str()},
                          {"hashes", nlohmann::json::array({{{"alg", "SHA-256"}, {"content", in.image.hex}}})}};
  return {
      {"bomFormat", "CycloneDX"},
      {"specVersion", "1.5"},
      {"serialNumber", "urn:uuid:" + uuid_v5("cyclonedx:" + in.image.str())},
      {"version", 1},
      {"metadata",
       {{"timestamp", in.created},
        {"tools",
         {{"components", nlohmann::json::array(
                             {{{"type", "application"}, {"name", "paddle-image"}, {"version", in.tool_version}}})}}},
        {"component", image}}},
      {"components", components}};
}

} // namespace signing
