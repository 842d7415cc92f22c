#include "signing/provenance.hpp"

#include "util/error.hpp"

#include <openssl/evp.h>

#include <cstdio>

namespace signing {

namespace {

nlohmann::json resource_json(const ResourceDescriptor& r) {
  nlohmann::json j = nlohmann::json::object();
  if (!r.name.empty()) {
    j["name"] = r.name;
  }
  if (!r.uri.empty()) {
    j["uri"] = r.uri;
  }
  if (!r.digest.empty()) {
    j["digest"] = r.digest;
  }
  if (!r.annotations.empty()) {
    j["annotations"] = r.annotations;
  }
  return j;
}

nlohmann::json resources(const std::vector<ResourceDescriptor>& rs) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& r : rs) {
    a.push_back(resource_json(r));
  }
  return a;
}

} // namespace

nlohmann::json provenance_predicate(const ProvenanceInput& in) {
  nlohmann::json builder = {{"id", in.builder_id}};
  nlohmann::json versions = nlohmann::json::object();
  for (const auto& [tool, v] : in.builder_tools) {
    versions[tool] = v;
  }
  if (!in.builder_version.empty()) {
    versions["paddle-image"] = in.builder_version;
  }
  if (!versions.empty()) {
    builder["version"] = versions;
  }
  nlohmann::json metadata = nlohmann::json::object();
  if (!in.invocation_id.empty()) {
    metadata["invocationId"] = in.invocation_id;
  }
  if (!in.started_on.empty()) {
    metadata["startedOn"] = in.started_on;
  }
  if (!in.finished_on.empty()) {
    metadata["finishedOn"] = in.finished_on;
  }
  nlohmann::json run = {{"builder", builder}, {"metadata", metadata}};
  if (!in.byproducts.empty()) {
    run["byproducts"] = resources(in.byproducts);
  }
  return {{"buildDefinition",
           {{"buildType", in.build_type},
            {"externalParameters", in.external_parameters},
            {"internalParameters", in.internal_parameters},
            {"resolvedDependencies", resources(in.dependencies)}}},
          {"runDetails", run}};
}

std::string uuid_v5(const std::string& name) {
  // RFC 4122 4.3: SHA-1 of namespace bytes + name; version 5, variant 10.
  static const unsigned char k_url_ns[16] = {0x6b, 0xa7, 0xb8, 0x11, 0x9d, 0xad, 0x11, 0xd1,
                                             0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4, 0x30, 0xc8};
  std::string data(reinterpret_cast<const char*>(k_url_ns), 16);
  data += name;
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(data.data(), data.size(), md, &len, EVP_sha1(), nullptr) != 1) {
    throw util::Error(util::ErrorKind::internal, "SHA-1 failed");
  }
  md[6] = static_cast<unsigned char>((md[6] & 0x0f) | 0x50);
  md[8] = static_cast<unsigned char>((md[8] & 0x3f) | 0x80);
  std::string out;
  char buf[3];
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) {
      out += '-';
    }
    std::snprintf(buf, sizeof buf, "%02x", md[i]);
    out += buf;
  }
  return out;
}

} // namespace signing
