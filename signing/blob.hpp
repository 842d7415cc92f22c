#pragma once
// Attestations about files, as `cosign attest-blob` and `cosign verify-blob-attestation`
// make and check them: an in-toto Statement v1 whose subjects are files by name and
// SHA-256, in a DSSE envelope signed with an ECDSA P-256 key (no transparency log). An
// attestation file holds one envelope per line (in-toto's JSON Lines, as
// slsa-github-generator's `multiple.intoto.jsonl`); a file with one envelope is what
// cosign reads with --signature. Pure: files come in as names, digests and bytes.
#include "signing/envelope.hpp"
#include "signing/keys.hpp"

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace signing {

struct FileSubject {
  std::string name;   // the file's name, without its directory
  std::string sha256; // lower-case hex
};

// The Statement about `subjects` (in the order given) with this predicate, signed into
// one DSSE envelope (payloadType application/vnd.in-toto+json): compact JSON, one line,
// without the newline.
std::string attest_files(const std::vector<FileSubject>& subjects, const std::string& predicate_type,
                         const nlohmann::json& predicate, const PrivateKey& key);

// The envelopes of an attestation file: JSON Lines of DSSE envelopes, one envelope
// (pretty-printed or not), or a cosign bundle holding one ("base64Signature", or a
// Sigstore bundle's "dsseEnvelope"). Throws Error(verification) naming `source` and the
// line for anything else.
std::vector<Envelope> read_attestations(const std::string& text, const std::string& source);

struct FileAttestation {
  bool ok = false;
  std::string failure;               // when not ok: what failed, naming the file and the fix
  std::size_t envelope = 0;          // the envelope (from 0) that verified, or got furthest
  std::string predicate_type;        // of that envelope's statement
  std::vector<FileSubject> subjects; // of that envelope's statement
  std::string subject;               // the subject that names the file (ok)
  nlohmann::json predicate;          // (ok)
};

// Whether one of `envelopes` is signed by `key` (DSSE PAE), holds an in-toto Statement
// v1 of `predicate_type` (any type when empty) and names a file with `sha256` among its
// subjects. `file`, `source` and `key_name` name the file, the attestation file and the
// key in the failure, which reports the envelope that got furthest.
FileAttestation verify_file_attestation(const std::vector<Envelope>& envelopes, const std::string& sha256,
                                        const PublicKey& key, const std::string& predicate_type,
                                        const std::string& file, const std::string& source,
                                        const std::string& key_name);

} // namespace signing
