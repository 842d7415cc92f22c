#include "signing/provenance.hpp"

namespace signing {

namespace {

// SPDX ids allow letters, digits, '.' and '-'.
std::string spdx_id(const std::string& prefix, const std::string& text, std::size_t n) {
  return "SPDXRef-" + prefix + "-" + spdx_idstring(text) + "-" + std::to_string(n);
}

std::string supplier_note(const SbomComponent& c) {
  if (!c.origin.empty()) {
    return c.origin;
  }
  return c.kind == "deb" ? "dpkg" : c.kind == "pypi" ? "python dist-info" : "image layer";
}

std::string string_at(const nlohmann::json& j, const char* key) {
  return j.contains(key) && j.at(key).is_string() ? j.at(key).get<std::string>() : std::string();
}

std::string purl_of(const nlohmann::json& pkg) {
  if (!pkg.contains("externalRefs") || !pkg.at("externalRefs").is_array()) {
    return {};
  }
  for (const auto& r : pkg.at("externalRefs")) {
    if (r.is_object() && string_at(r, "referenceType") == "purl" &&
        string_at(r, "referenceLocator").rfind("pkg:", 0) == 0) {
      return string_at(r, "referenceLocator");
    }
  }
  return {};
}

std::string sha256_of(const nlohmann::json& pkg) {
  if (!pkg.contains("checksums") || !pkg.at("checksums").is_array()) {
    return {};
  }
  for (const auto& c : pkg.at("checksums")) {
    if (c.is_object() && string_at(c, "algorithm") == "SHA256") {
      return string_at(c, "checksumValue");
    }
  }
  return {};
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
    if (!c.license.empty()) {
      p["licenseDeclared"] = c.license;
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
  return {{"spdxVersion", "SPDX-2.3"},
          {"dataLicense", "CC0-1.0"},
          {"SPDXID", "SPDXRef-DOCUMENT"},
          {"name", in.image_name + "@" + in.image.str()},
          {"documentNamespace", "https://paddle-image.dev/spdxdocs/" + spdx_idstring(in.image_name) + "-" + uuid},
          {"creationInfo", {{"created", in.created}, {"creators", {"Tool: paddle-image-" + in.tool_version}}}},
          {"packages", packages},
          {"relationships", relationships}};
}

std::vector<SbomComponent> spdx_components(const nlohmann::json& doc, const std::string& location) {
  std::vector<SbomComponent> out;
  if (!doc.is_object() || string_at(doc, "spdxVersion").rfind("SPDX-2.", 0) != 0 || !doc.contains("packages") ||
      !doc.at("packages").is_array()) {
    return out;
  }
  for (const auto& pkg : doc.at("packages")) {
    std::string purl = pkg.is_object() ? purl_of(pkg) : std::string();
    if (purl.empty() || purl.find_first_of(" \t\r\n") != std::string::npos || string_at(pkg, "name").empty()) {
      continue;
    }
    SbomComponent c;
    auto slash = purl.find('/');
    c.kind = slash == std::string::npos ? "generic" : purl.substr(4, slash - 4);
    c.name = string_at(pkg, "name");
    c.version = string_at(pkg, "versionInfo");
    c.purl = purl;
    c.location = location;
    // What another tool wrote is taken only where it is well-formed.
    std::string sha = sha256_of(pkg);
    if (sha.size() == 64 && sha.find_first_not_of("0123456789abcdef") == std::string::npos) {
      c.sha256 = sha;
    }
    std::string license = string_at(pkg, "licenseDeclared");
    if (!license.empty() && license.find("LicenseRef-") == std::string::npos &&
        license.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.+-() ") ==
            std::string::npos) {
      c.license = license;
    }
    c.origin = "an SPDX document";
    out.push_back(std::move(c));
  }
  return out;
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

std::string spdx_idstring(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-';
    if (!ok) {
      c = '-';
    }
  }
  return out;
}

} // namespace signing
