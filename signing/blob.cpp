#include "signing/blob.hpp"

#include "util/encoding.hpp"
#include "util/error.hpp"

namespace signing {

using util::Error;
using util::ErrorKind;

std::string attest_files(const std::vector<FileSubject>& subjects, const std::string& predicate_type,
                         const nlohmann::json& predicate, const PrivateKey& key) {
  nlohmann::json subject = nlohmann::json::array();
  for (const auto& s : subjects) {
    subject.push_back({{"name", s.name}, {"digest", {{"sha256", s.sha256}}}});
  }
  nlohmann::json st = {
      {"_type", k_statement_type}, {"subject", subject}, {"predicateType", predicate_type}, {"predicate", predicate}};
  Envelope e;
  e.payload_type = k_in_toto_payload_type;
  e.payload = st.dump();
  e.signatures.push_back({"", key.sign(pae(e.payload_type, e.payload))});
  return envelope_json(e);
}

namespace {

// An envelope, or what holds one: a cosign bundle's base64Signature (the envelope,
// base64) or a Sigstore bundle's dsseEnvelope.
Envelope envelope_of(const std::string& json_text, const std::string& where) {
  nlohmann::json j = nlohmann::json::parse(json_text, nullptr, false);
  if (j.is_object() && j.contains("dsseEnvelope") && j.at("dsseEnvelope").is_object()) {
    return parse_envelope(j.at("dsseEnvelope").dump());
  }
  if (j.is_object() && j.contains("base64Signature") && j.at("base64Signature").is_string()) {
    std::string inner;
    if (!util::base64_decode(j.at("base64Signature").get<std::string>(), inner)) {
      throw Error(ErrorKind::verification, where + ": base64Signature is not base64");
    }
    return parse_envelope(inner);
  }
  return parse_envelope(json_text);
}

bool blank(const std::string& s) {
  return s.find_first_not_of(" \t\r\n") == std::string::npos;
}

} // namespace

std::vector<Envelope> read_attestations(const std::string& text, const std::string& source) {
  const std::string hint = "give the file attest-blob --output-attestation (or cosign attest-blob) wrote";
  std::vector<Envelope> out;
  if (blank(text)) {
    throw Error(ErrorKind::verification, source + " is empty: it holds no attestation", hint);
  }
  // One JSON document (an envelope over several lines, or a bundle) first; JSON Lines
  // otherwise.
  if (!nlohmann::json::parse(text, nullptr, false).is_discarded()) {
    try {
      out.push_back(envelope_of(text, source));
      return out;
    } catch (const Error& e) {
      throw Error(ErrorKind::verification, source + ": " + e.what(), hint);
    }
  }
  std::size_t pos = 0, line_no = 0;
  while (pos < text.size()) {
    std::size_t nl = text.find('\n', pos);
    std::string line = text.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    pos = nl == std::string::npos ? text.size() : nl + 1;
    ++line_no;
    if (blank(line)) {
      continue;
    }
    try {
      out.push_back(envelope_of(line, source + " line " + std::to_string(line_no)));
    } catch (const Error& e) {
      throw Error(ErrorKind::verification, source + " line " + std::to_string(line_no) + ": " + e.what(), hint);
    }
  }
  return out;
}

namespace {

// How far an envelope got; a later stage is a better explanation of a failure.
enum Stage { k_payload_type, k_signature, k_statement, k_type, k_subject, k_ok };

struct Checked {
  Stage stage = k_payload_type;
  std::string failure;
  FileAttestation result;
};

std::string subject_list(const std::vector<FileSubject>& subjects) {
  std::string out;
  for (std::size_t i = 0; i < subjects.size() && i < 8; ++i) {
    out += (i == 0 ? "" : ", ") + subjects[i].name;
  }
  if (subjects.size() > 8) {
    out += ", ... (" + std::to_string(subjects.size()) + " in all)";
  }
  return out.empty() ? "none" : out;
}

// The statement's subjects with a sha256 (others are left out); false when the payload
// is not an in-toto Statement v1 with a predicate object.
bool read_statement(const std::string& payload, FileAttestation& r) {
  nlohmann::json st = nlohmann::json::parse(payload, nullptr, false);
  if (st.is_discarded() || !st.is_object() || st.value("_type", nlohmann::json()) != k_statement_type ||
      !st.contains("subject") || !st.at("subject").is_array() || !st.contains("predicateType") ||
      !st.at("predicateType").is_string() || !st.contains("predicate") || !st.at("predicate").is_object()) {
    return false;
  }
  for (const auto& s : st.at("subject")) {
    if (s.is_object() && s.contains("digest") && s.at("digest").is_object() && s.at("digest").contains("sha256") &&
        s.at("digest").at("sha256").is_string()) {
      std::string name = s.contains("name") && s.at("name").is_string() ? s.at("name").get<std::string>() : "";
      r.subjects.push_back({name, s.at("digest").at("sha256").get<std::string>()});
    }
  }
  r.predicate_type = st.at("predicateType").get<std::string>();
  r.predicate = st.at("predicate");
  return true;
}

Checked check_envelope(const Envelope& e, const std::string& sha256, const PublicKey& key,
                       const std::string& predicate_type, const std::string& file, const std::string& where,
                       const std::string& key_name) {
  Checked c;
  if (e.payload_type != k_in_toto_payload_type) {
    c.failure = where + " has payloadType '" + util::escape_bytes(e.payload_type) + "', not " + k_in_toto_payload_type +
                ": it is not an in-toto attestation";
    return c;
  }
  c.stage = k_signature;
  bool signed_by_key = false;
  for (const auto& s : e.signatures) {
    signed_by_key = signed_by_key || key.verify(pae(e.payload_type, e.payload), s.sig);
  }
  if (!signed_by_key) {
    c.failure = "no signature in " + where + " verifies with " + key_name +
                " (another key signed it, or its payload was altered); check that " + key_name +
                " is the release's public key";
    return c;
  }
  c.stage = k_statement;
  if (!read_statement(e.payload, c.result)) {
    c.failure = "the payload of " + where + " is not an in-toto Statement v1 with a predicate";
    return c;
  }
  c.stage = k_type;
  if (!predicate_type.empty() && c.result.predicate_type != predicate_type) {
    c.failure = where + " attests " + c.result.predicate_type + ", not " + predicate_type +
                " (--type names the kind of attestation to look for)";
    return c;
  }
  c.stage = k_subject;
  for (const auto& s : c.result.subjects) {
    if (s.sha256 == sha256) {
      c.result.subject = s.name;
      c.stage = k_ok;
      return c;
    }
  }
  c.failure = file + " (sha256:" + sha256 + ") is not a subject of " + where +
              " (its subjects: " + subject_list(c.result.subjects) +
              "); the file changed after it was attested, or the attestation is another release's";
  return c;
}

} // namespace

FileAttestation verify_file_attestation(const std::vector<Envelope>& envelopes, const std::string& sha256,
                                        const PublicKey& key, const std::string& predicate_type,
                                        const std::string& file, const std::string& source,
                                        const std::string& key_name) {
  Checked best;
  bool any = false;
  for (std::size_t i = 0; i < envelopes.size(); ++i) {
    std::string where = envelopes.size() == 1 ? source : source + " (envelope " + std::to_string(i + 1) + ")";
    Checked c = check_envelope(envelopes[i], sha256, key, predicate_type, file, where, key_name);
    c.result.envelope = i;
    if (c.stage == k_ok) {
      c.result.ok = true;
      return c.result;
    }
    if (!any || c.stage > best.stage) {
      best = std::move(c);
      any = true;
    }
  }
  FileAttestation r = best.result;
  r.ok = false;
  r.failure = any ? best.failure : source + " holds no attestation";
  return r;
}

} // namespace signing
