#pragma once
// ECDSA P-256 keys in the formats cosign and containers/image use: PKIX public keys
// (PEM "PUBLIC KEY") and cosign's encrypted private key (PEM "ENCRYPTED COSIGN PRIVATE
// KEY" or "ENCRYPTED SIGSTORE PRIVATE KEY": scrypt-derived key, NaCl secretbox over the
// PKCS#8 DER). Plain PKCS#8 ("PRIVATE KEY", "ENCRYPTED PRIVATE KEY") and SEC1 ("EC
// PRIVATE KEY") PEM keys are read too. OpenSSL stays behind this header; key material
// is wiped when a key object goes away and never appears in an error message.
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace signing {

// Asked for the passphrase only when a key needs one; throws (e.g. no TTY) to refuse.
using PassphraseSource = std::function<std::string()>;

// A verification key: the public half.
class PublicKey {
public:
  // Reads a PKIX PEM public key ("PUBLIC KEY"); `source` names the file in errors.
  static PublicKey from_pem(std::string_view pem, const std::string& source);
  bool verify(std::string_view data, std::string_view der_signature) const;
  // The same over a SHA-256 already computed (32 bytes): a file hashed as it streams.
  bool verify_digest(std::string_view sha256, std::string_view der_signature) const;
  std::string pem() const;
  // sha256 of the DER SubjectPublicKeyInfo, hex: a stable name for the key in reports.
  std::string fingerprint() const;

  struct Impl;
  explicit PublicKey(std::shared_ptr<Impl> impl);

private:
  std::shared_ptr<Impl> m_impl;
};

class PrivateKey {
public:
  static PrivateKey generate();
  // Reads any supported private key PEM; the passphrase is asked for only when the key
  // is encrypted. Errors (input): wrong passphrase or damaged key, truncated or
  // malformed PEM, RSA, Ed25519 or another curve; each names `source`.
  static PrivateKey from_pem(std::string_view pem, const std::string& source, const PassphraseSource& passphrase);
  // DER ECDSA signature over SHA-256 of data (randomised: OpenSSL 3.0 has no RFC 6979).
  std::string sign(std::string_view data) const;
  // The same signature over a SHA-256 already computed (32 bytes): what `sign(data)`
  // gives for data with that digest, without holding data (cosign sign-blob's form).
  std::string sign_digest(std::string_view sha256) const;
  PublicKey public_key() const;
  // The cosign encrypted format with scrypt N=32768, r=8, p=1 and fresh salt and nonce.
  std::string to_cosign_pem(const std::string& passphrase) const;

  struct Impl;
  explicit PrivateKey(std::shared_ptr<Impl> impl);

private:
  std::shared_ptr<Impl> m_impl;
};

// A PEM block's type and base64-decoded body; empty type when the text has none.
struct PemBlock {
  std::string type;
  std::string der;
  bool headers = false; // RFC 1421 headers (a legacy encrypted key): der is empty
};
// The first block whose type ends with type_suffix (else the first block).
PemBlock read_pem(std::string_view text, const std::string& source, const std::string& type_suffix = {});
std::string write_pem(const std::string& type, std::string_view der);

// The versions of the crypto libraries linked in, as they report themselves at run time.
std::string openssl_version();
std::string sodium_version();

} // namespace signing
