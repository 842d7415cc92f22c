#include "signing/envelope.hpp"

#include "util/encoding.hpp"
#include "util/error.hpp"

#include <set>

namespace signing {

using util::Error;
using util::ErrorKind;

namespace {

[[noreturn]] void refuse(const std::string& what, const std::string& why) {
  throw Error(ErrorKind::verification, what + ": " + why,
              "the signature manifest was not written by cosign or paddle-image, or was altered");
}

// containers/image refuses any object whose keys are not exactly the expected set.
const nlohmann::json& exact_object(const nlohmann::json& j, const std::set<std::string>& keys,
                                   const std::string& what) {
  if (!j.is_object()) {
    refuse("simple-signing payload", what + " is not an object");
  }
  std::set<std::string> have;
  for (const auto& [k, v] : j.items()) {
    have.insert(k);
  }
  if (have != keys) {
    std::string list;
    for (const auto& k : have) {
      list += (list.empty() ? "" : ", ") + k;
    }
    refuse("simple-signing payload", what + " has keys {" + list + "}, not exactly the expected set");
  }
  return j;
}

std::string string_at(const nlohmann::json& j, const char* key, const std::string& what) {
  if (!j.at(key).is_string()) {
    refuse(what, std::string(key) + " is not a string");
  }
  return j.at(key).get<std::string>();
}

} // namespace

std::string simple_signing_payload(const std::string& docker_reference, const oci::Digest& manifest) {
  // nlohmann orders keys alphabetically, which is the order cosign writes:
  // critical{identity, image, type}, optional.
  nlohmann::json j = {{"critical",
                       {{"identity", {{"docker-reference", docker_reference}}},
                        {"image", {{"docker-manifest-digest", manifest.str()}}},
                        {"type", k_simple_signing_type}}},
                      {"optional", nullptr}};
  return j.dump();
}

SimpleSigning parse_simple_signing(const std::string& payload) {
  nlohmann::json j = nlohmann::json::parse(payload, nullptr, false);
  if (j.is_discarded()) {
    refuse("simple-signing payload", "not JSON");
  }
  exact_object(j, {"critical", "optional"}, "the payload");
  const auto& critical = exact_object(j.at("critical"), {"identity", "image", "type"}, "critical");
  if (!critical.at("type").is_string() || critical.at("type").get<std::string>() != k_simple_signing_type) {
    refuse("simple-signing payload", "critical.type is not \"" + std::string(k_simple_signing_type) + "\"");
  }
  const auto& image = exact_object(critical.at("image"), {"docker-manifest-digest"}, "critical.image");
  const auto& identity = exact_object(critical.at("identity"), {"docker-reference"}, "critical.identity");
  const auto& optional = j.at("optional");
  if (!optional.is_null() && !optional.is_object()) {
    refuse("simple-signing payload", "optional is neither null nor an object");
  }
  SimpleSigning s;
  s.docker_reference = string_at(identity, "docker-reference", "simple-signing payload");
  std::string digest = string_at(image, "docker-manifest-digest", "simple-signing payload");
  try {
    s.manifest = oci::Digest::parse(digest);
  } catch (const Error&) {
    refuse("simple-signing payload", "docker-manifest-digest '" + util::escape_bytes(digest) + "' is not a digest");
  }
  return s;
}

std::string pae(const std::string& payload_type, const std::string& body) {
  return "DSSEv1 " + std::to_string(payload_type.size()) + " " + payload_type + " " + std::to_string(body.size()) +
         " " + body;
}

std::string envelope_json(const Envelope& e) {
  nlohmann::json sigs = nlohmann::json::array();
  for (const auto& s : e.signatures) {
    sigs.push_back({{"keyid", s.keyid}, {"sig", util::base64_encode(s.sig)}});
  }
  nlohmann::json j = {
      {"payloadType", e.payload_type}, {"payload", util::base64_encode(e.payload)}, {"signatures", sigs}};
  return j.dump();
}

Envelope parse_envelope(const std::string& bytes) {
  const std::string what = "DSSE envelope";
  nlohmann::json j = nlohmann::json::parse(bytes, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    refuse(what, "not a JSON object (truncated?)");
  }
  for (const char* key : {"payloadType", "payload", "signatures"}) {
    if (!j.contains(key)) {
      refuse(what, std::string("no '") + key + "'");
    }
  }
  Envelope e;
  e.payload_type = string_at(j, "payloadType", what);
  if (!util::base64_decode(string_at(j, "payload", what), e.payload)) {
    refuse(what, "payload is not base64");
  }
  if (!j.at("signatures").is_array() || j.at("signatures").empty()) {
    refuse(what, "no signatures");
  }
  for (const auto& s : j.at("signatures")) {
    if (!s.is_object() || !s.contains("sig") || !s.at("sig").is_string()) {
      refuse(what, "a signature without 'sig'");
    }
    DsseSignature d;
    if (s.contains("keyid") && s.at("keyid").is_string()) {
      d.keyid = s.at("keyid").get<std::string>();
    }
    if (!util::base64_decode(s.at("sig").get<std::string>(), d.sig) || d.sig.empty()) {
      refuse(what, "a signature that is not base64");
    }
    e.signatures.push_back(std::move(d));
  }
  return e;
}

nlohmann::json statement(const std::string& subject_name, const oci::Digest& subject, const std::string& predicate_type,
                         const nlohmann::json& predicate) {
  return {
      {"_type", k_statement_type},
      {"subject", nlohmann::json::array({{{"name", subject_name}, {"digest", {{subject.algorithm, subject.hex}}}}})},
      {"predicateType", predicate_type},
      {"predicate", predicate}};
}

nlohmann::json parse_statement(const std::string& payload, const oci::Digest& image,
                               const std::string& predicate_type) {
  nlohmann::json st = nlohmann::json::parse(payload, nullptr, false);
  if (st.is_discarded() || !st.is_object() || !st.contains("_type") || st.at("_type") != k_statement_type) {
    throw Error(ErrorKind::verification, "the payload is not an in-toto Statement v1");
  }
  bool subject_ok = false;
  if (st.contains("subject") && st.at("subject").is_array()) {
    for (const auto& s : st.at("subject")) {
      if (s.is_object() && s.contains("digest") && s.at("digest").is_object()) {
        const auto& d = s.at("digest");
        subject_ok = subject_ok || (d.contains(image.algorithm) && d.at(image.algorithm) == image.hex);
      }
    }
  }
  if (!subject_ok) {
    throw Error(ErrorKind::verification, "the statement's subject is not " + image.str());
  }
  const nlohmann::json* type = st.contains("predicateType") ? &st.at("predicateType") : nullptr;
  if (type == nullptr || !type->is_string() || type->get<std::string>() != predicate_type) {
    throw Error(ErrorKind::verification, "the statement's predicateType " + (type ? type->dump() : "(none)") +
                                             " differs from the layer's annotation '" + predicate_type + "'");
  }
  if (!st.contains("predicate") || !st.at("predicate").is_object()) {
    throw Error(ErrorKind::verification, "the statement has no predicate object");
  }
  return st.at("predicate");
}

} // namespace signing
