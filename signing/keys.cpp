#include "signing/keys.hpp"

#include "util/encoding.hpp"
#include "util/error.hpp"
#include "util/sha256.hpp"

#include <nlohmann/json.hpp>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <sodium.h>

#include <vector>

namespace signing {

using util::Error;
using util::ErrorKind;

namespace {

constexpr const char* k_cosign_pem = "ENCRYPTED COSIGN PRIVATE KEY";
constexpr const char* k_sigstore_pem = "ENCRYPTED SIGSTORE PRIVATE KEY";
constexpr std::uint64_t k_scrypt_n = 32768;
constexpr std::uint64_t k_scrypt_r = 8;
constexpr std::uint64_t k_scrypt_p = 1;
// scrypt needs 128 * N * r bytes: 32 MiB at N=2^15, 128 MiB at 2^17 (OpenSSL's default
// limit is 32 MiB, which refuses even cosign's default).
constexpr std::uint64_t k_scrypt_maxmem = 256ull << 20;

// Bytes that are wiped when they go away (passphrases, derived keys, private DER).
class Secret {
public:
  Secret() = default;
  explicit Secret(std::string s) : m_bytes(std::move(s)) {}
  ~Secret() { wipe(); }
  Secret(const Secret&) = delete;
  Secret& operator=(const Secret&) = delete;
  std::string& str() { return m_bytes; }
  const std::string& str() const { return m_bytes; }
  void wipe() {
    if (!m_bytes.empty()) {
      OPENSSL_cleanse(m_bytes.data(), m_bytes.size());
    }
    m_bytes.clear();
  }

private:
  std::string m_bytes;
};

struct PkeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyFree>;

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;

// The last OpenSSL error as text, queue cleared (never contains key material).
std::string openssl_error() {
  unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) {
    return "unknown OpenSSL error";
  }
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  return buf;
}

// Only ECDSA P-256 keys are signing keys here (cosign's default, and what every
// verifier accepts); others get a message that names what they are.
void require_p256(EVP_PKEY* k, const std::string& source) {
  int id = EVP_PKEY_get_base_id(k);
  if (id == EVP_PKEY_RSA || id == EVP_PKEY_RSA_PSS) {
    throw Error(ErrorKind::input, source + ": an RSA key; paddle-image signs with ECDSA P-256 keys only",
                "create one with 'paddle-image key generate'");
  }
  if (id == EVP_PKEY_ED25519 || id == EVP_PKEY_ED448) {
    throw Error(ErrorKind::input,
                source + ": an Ed25519/Ed448 key; cosign and containers/image disagree on Ed25519 signatures, so "
                         "only ECDSA P-256 keys are used",
                "create one with 'paddle-image key generate'");
  }
  if (id != EVP_PKEY_EC) {
    throw Error(ErrorKind::input, source + ": not an EC key", "create one with 'paddle-image key generate'");
  }
  char group[64] = {0};
  std::size_t len = 0;
  if (EVP_PKEY_get_utf8_string_param(k, OSSL_PKEY_PARAM_GROUP_NAME, group, sizeof group, &len) != 1 ||
      std::string(group) != "prime256v1") {
    throw Error(ErrorKind::input,
                source + ": an EC key on curve " + (group[0] != 0 ? std::string(group) : std::string("?")) +
                    "; only P-256 (prime256v1) is supported",
                "create one with 'paddle-image key generate'");
  }
}

PkeyPtr private_from_pkcs8_der(const std::string& der, const std::string& source) {
  const auto* p = reinterpret_cast<const unsigned char*>(der.data());
  PKCS8_PRIV_KEY_INFO* p8 = d2i_PKCS8_PRIV_KEY_INFO(nullptr, &p, static_cast<long>(der.size()));
  if (p8 == nullptr) {
    ERR_clear_error();
    throw Error(ErrorKind::input, source + ": the decrypted key is not a PKCS#8 private key (damaged key file)",
                "use the key file 'paddle-image key generate' or 'cosign generate-key-pair' wrote");
  }
  EVP_PKEY* k = EVP_PKCS82PKEY(p8);
  PKCS8_PRIV_KEY_INFO_free(p8);
  if (k == nullptr) {
    throw Error(ErrorKind::input, source + ": unreadable private key (" + openssl_error() + ")",
                "use the key file 'paddle-image key generate' or 'cosign generate-key-pair' wrote");
  }
  return PkeyPtr(k);
}

std::string b64field(const nlohmann::json& j, const char* key, const std::string& source) {
  if (!j.is_object() || !j.contains(key) || !j.at(key).is_string()) {
    throw Error(ErrorKind::input, source + ": damaged cosign key (no '" + std::string(key) + "')",
                "the key file is truncated or edited; use the original");
  }
  std::string out;
  if (!util::base64_decode(j.at(key).get<std::string>(), out)) {
    throw Error(ErrorKind::input, source + ": damaged cosign key ('" + std::string(key) + "' is not base64)",
                "the key file is truncated or edited; use the original");
  }
  return out;
}

void scrypt(const std::string& pass, const std::string& salt, std::uint64_t n, std::uint64_t r, std::uint64_t p,
            unsigned char* out, std::size_t out_len) {
  if (EVP_PBE_scrypt(pass.data(), pass.size(), reinterpret_cast<const unsigned char*>(salt.data()), salt.size(), n, r,
                     p, k_scrypt_maxmem, out, out_len) != 1) {
    throw Error(ErrorKind::internal, "scrypt failed (" + openssl_error() + ")");
  }
}

void init_sodium() {
  if (sodium_init() < 0) {
    throw Error(ErrorKind::internal, "libsodium could not be initialised");
  }
}

// The cosign body: {"kdf":{"name":"scrypt","params":{N,r,p},"salt"},"cipher":{"name":
// "nacl/secretbox","nonce"},"ciphertext"} over the PKCS#8 DER.
PkeyPtr decrypt_cosign(const std::string& body, const std::string& source, const PassphraseSource& passphrase) {
  nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    throw Error(ErrorKind::input, source + ": damaged cosign key (its body is not JSON)",
                "the key file is truncated or edited; use the original");
  }
  auto field = [&](const nlohmann::json& o, const char* key) -> const nlohmann::json& {
    if (!o.is_object() || !o.contains(key)) {
      throw Error(ErrorKind::input, source + ": damaged cosign key (no '" + std::string(key) + "')",
                  "the key file is truncated or edited; use the original");
    }
    return o.at(key);
  };
  const auto& kdf = field(j, "kdf");
  const auto& cipher = field(j, "cipher");
  if (field(kdf, "name") != "scrypt" || field(cipher, "name") != "nacl/secretbox") {
    throw Error(ErrorKind::input,
                source + ": unsupported cosign key (kdf " + field(kdf, "name").dump() + ", cipher " +
                    field(cipher, "name").dump() + "; expected scrypt and nacl/secretbox)",
                "re-create the key with 'paddle-image key generate'");
  }
  const auto& params = field(kdf, "params");
  auto num = [&](const char* key) -> std::uint64_t {
    const auto& v = field(params, key);
    if (!v.is_number_unsigned()) {
      throw Error(ErrorKind::input, source + ": damaged cosign key (scrypt " + std::string(key) + " is not a number)",
                  "the key file is truncated or edited; use the original");
    }
    return v.get<std::uint64_t>();
  };
  std::uint64_t n = num("N"), r = num("r"), p = num("p");
  // cosign has written N = 2^15 (default) and 2^16/2^17 (older and stronger settings).
  if (n < (1u << 15) || n > (1u << 17) || (n & (n - 1)) != 0 || r != 8 || p != 1) {
    throw Error(ErrorKind::input,
                source + ": unsupported scrypt parameters N=" + std::to_string(n) + " r=" + std::to_string(r) +
                    " p=" + std::to_string(p) + " (read: N from 2^15 to 2^17, r=8, p=1)",
                "re-create the key with 'paddle-image key generate'");
  }
  std::string salt = b64field(kdf, "salt", source);
  std::string nonce = b64field(cipher, "nonce", source);
  std::string ct = b64field(j, "ciphertext", source);
  if (nonce.size() != crypto_secretbox_NONCEBYTES || ct.size() <= crypto_secretbox_MACBYTES) {
    throw Error(ErrorKind::input, source + ": damaged cosign key (nonce or ciphertext too short)",
                "the key file is truncated or edited; use the original");
  }
  init_sodium();
  Secret pass(passphrase());
  unsigned char key[crypto_secretbox_KEYBYTES];
  scrypt(pass.str(), salt, n, r, p, key, sizeof key);
  pass.wipe();
  Secret der(std::string(ct.size() - crypto_secretbox_MACBYTES, '\0'));
  int rc = crypto_secretbox_open_easy(reinterpret_cast<unsigned char*>(der.str().data()),
                                      reinterpret_cast<const unsigned char*>(ct.data()), ct.size(),
                                      reinterpret_cast<const unsigned char*>(nonce.data()), key);
  sodium_memzero(key, sizeof key);
  if (rc != 0) {
    throw Error(ErrorKind::input, source + ": wrong passphrase or damaged key (the key did not decrypt)",
                "check the passphrase (COSIGN_PASSWORD, --passphrase-file or the prompt) and that the file is intact");
  }
  return private_from_pkcs8_der(der.str(), source);
}

std::string spki_der(EVP_PKEY* k) {
  unsigned char* buf = nullptr;
  int len = i2d_PUBKEY(k, &buf);
  if (len <= 0) {
    throw Error(ErrorKind::internal, "cannot encode a public key (" + openssl_error() + ")");
  }
  std::string out(reinterpret_cast<char*>(buf), static_cast<std::size_t>(len));
  OPENSSL_free(buf);
  return out;
}

} // namespace

struct PublicKey::Impl {
  PkeyPtr key;
};

struct PrivateKey::Impl {
  PkeyPtr key;
};

PublicKey::PublicKey(std::shared_ptr<Impl> impl) : m_impl(std::move(impl)) {}
PrivateKey::PrivateKey(std::shared_ptr<Impl> impl) : m_impl(std::move(impl)) {}

PemBlock read_pem(std::string_view text, const std::string& source, const std::string& type_suffix) {
  auto begin = text.find("-----BEGIN ");
  // Skip blocks of other types (openssl ecparam -genkey writes EC PARAMETERS first).
  while (!type_suffix.empty() && begin != std::string_view::npos) {
    auto end_of_type = text.find("-----", begin + 11);
    if (end_of_type == std::string_view::npos) {
      break;
    }
    std::string_view type = text.substr(begin + 11, end_of_type - begin - 11);
    if (type.size() >= type_suffix.size() && type.substr(type.size() - type_suffix.size()) == type_suffix) {
      break;
    }
    auto next = text.find("-----BEGIN ", end_of_type);
    if (next == std::string_view::npos) {
      break; // none of that type: the first block is reported below
    }
    begin = next;
  }
  if (begin == std::string_view::npos) {
    return {};
  }
  auto type_end = text.find("-----", begin + 11);
  if (type_end == std::string_view::npos) {
    throw Error(ErrorKind::input, source + ": malformed PEM header", "the file is truncated or edited");
  }
  PemBlock b;
  b.type = std::string(text.substr(begin + 11, type_end - begin - 11));
  std::string footer = "-----END " + b.type + "-----";
  auto body_start = type_end + 5;
  auto end = text.find(footer, body_start);
  if (end == std::string_view::npos) {
    throw Error(ErrorKind::input, source + ": truncated PEM (no '" + footer + "' line)",
                "the file is truncated; use the complete key file");
  }
  std::string_view raw = text.substr(body_start, end - body_start);
  if (raw.find(':') != std::string_view::npos) {
    // RFC 1421 headers (Proc-Type, DEK-Info: a legacy encrypted key): OpenSSL reads it.
    b.headers = true;
    return b;
  }
  std::string body;
  for (char c : raw) {
    if (c != '\n' && c != '\r' && c != ' ' && c != '\t') {
      body += c;
    }
  }
  if (!util::base64_decode(body, b.der) || b.der.empty()) {
    throw Error(ErrorKind::input, source + ": damaged PEM (the body is not base64)",
                "the file is truncated or edited; use the original");
  }
  return b;
}

std::string write_pem(const std::string& type, std::string_view der) {
  std::string b64 = util::base64_encode(der);
  std::string out = "-----BEGIN " + type + "-----\n";
  for (std::size_t i = 0; i < b64.size(); i += 64) {
    out += b64.substr(i, 64) + "\n";
  }
  out += "-----END " + type + "-----\n";
  return out;
}

PublicKey PublicKey::from_pem(std::string_view pem, const std::string& source) {
  PemBlock b = read_pem(pem, source, "PUBLIC KEY");
  if (b.type.empty()) {
    throw Error(ErrorKind::input, source + ": not a PEM file", "pass the public key (cosign.pub)");
  }
  if (b.type != "PUBLIC KEY" || b.headers) {
    throw Error(ErrorKind::input, source + ": a PEM '" + b.type + "', not a 'PUBLIC KEY'",
                b.type.find("PRIVATE") != std::string::npos ? "verify with the public key (the .pub file)"
                                                            : "pass a PKIX public key PEM");
  }
  const auto* p = reinterpret_cast<const unsigned char*>(b.der.data());
  EVP_PKEY* k = d2i_PUBKEY(nullptr, &p, static_cast<long>(b.der.size()));
  if (k == nullptr) {
    ERR_clear_error();
    throw Error(ErrorKind::input, source + ": damaged public key", "the file is truncated or edited");
  }
  PkeyPtr key(k);
  require_p256(key.get(), source);
  return PublicKey(std::make_shared<Impl>(Impl{std::move(key)}));
}

bool PublicKey::verify(std::string_view data, std::string_view der_signature) const {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  bool ok = EVP_DigestVerifyInit(ctx, nullptr, EVP_sha256(), nullptr, m_impl->key.get()) == 1 &&
            EVP_DigestVerify(ctx, reinterpret_cast<const unsigned char*>(der_signature.data()), der_signature.size(),
                             reinterpret_cast<const unsigned char*>(data.data()), data.size()) == 1;
  EVP_MD_CTX_free(ctx);
  ERR_clear_error();
  return ok;
}

bool PublicKey::verify_digest(std::string_view sha256, std::string_view der_signature) const {
  if (sha256.size() != 32) {
    return false;
  }
  EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new(m_impl->key.get(), nullptr);
  bool ok = ctx != nullptr && EVP_PKEY_verify_init(ctx) == 1 && EVP_PKEY_CTX_set_signature_md(ctx, EVP_sha256()) == 1 &&
            EVP_PKEY_verify(ctx, reinterpret_cast<const unsigned char*>(der_signature.data()), der_signature.size(),
                            reinterpret_cast<const unsigned char*>(sha256.data()), sha256.size()) == 1;
  EVP_PKEY_CTX_free(ctx);
  ERR_clear_error();
  return ok;
}

std::string PublicKey::pem() const {
  return write_pem("PUBLIC KEY", spki_der(m_impl->key.get()));
}

std::string PublicKey::fingerprint() const {
  util::Sha256 h;
  std::string der = spki_der(m_impl->key.get());
  h.update(der.data(), der.size());
  return h.finish_hex();
}

PrivateKey PrivateKey::generate() {
  EVP_PKEY* k = EVP_EC_gen("P-256");
  if (k == nullptr) {
    throw Error(ErrorKind::internal, "cannot generate a P-256 key (" + openssl_error() + ")");
  }
  return PrivateKey(std::make_shared<Impl>(Impl{PkeyPtr(k)}));
}

PrivateKey PrivateKey::from_pem(std::string_view pem, const std::string& source, const PassphraseSource& passphrase) {
  PemBlock b = read_pem(pem, source, "PRIVATE KEY");
  // The decoded body of a private key is wiped however this ends.
  struct Wipe {
    std::string& der;
    ~Wipe() { OPENSSL_cleanse(der.data(), der.size()); }
  } wipe{b.der};
  if (b.type.empty()) {
    throw Error(ErrorKind::input, source + ": not a PEM key file",
                "pass a cosign key (cosign.key) or a PKCS#8/SEC1 EC PEM key");
  }
  PkeyPtr key;
  if (b.type == k_cosign_pem || b.type == k_sigstore_pem) {
    key = decrypt_cosign(b.der, source, passphrase);
  } else if (b.type == "PRIVATE KEY" || b.type == "EC PRIVATE KEY" || b.type == "ENCRYPTED PRIVATE KEY" ||
             b.type == "RSA PRIVATE KEY") {
    BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
    // The passphrase is asked for before OpenSSL reads an encrypted key and handed over
    // as the default callback's password string (no C callback of ours: an exception
    // must not cross OpenSSL's frames, and OpenSSL 3.0 hands a legacy-encrypted key's
    // callback data of its own). Unencrypted keys never ask.
    bool encrypted = b.type == "ENCRYPTED PRIVATE KEY" || b.headers;
    Secret pass(encrypted ? passphrase() : std::string());
    EVP_PKEY* k = PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, pass.str().data());
    if (k == nullptr) {
      std::string why = openssl_error();
      bool bad_pass = b.type == "ENCRYPTED PRIVATE KEY" || b.headers;
      throw Error(ErrorKind::input,
                  source + (bad_pass ? ": wrong passphrase or damaged key" : ": damaged private key") + " (" + why +
                      ")",
                  bad_pass ? "check the passphrase and that the file is intact" : "the file is truncated or edited");
    }
    key.reset(k);
  } else if (b.type == "PUBLIC KEY") {
    throw Error(ErrorKind::input, source + ": a public key, not a private key",
                "sign with the private key (cosign.key)");
  } else {
    throw Error(ErrorKind::input, source + ": a PEM '" + b.type + "', not a private key",
                "pass a cosign key (cosign.key) or a PKCS#8/SEC1 EC PEM key");
  }
  require_p256(key.get(), source);
  return PrivateKey(std::make_shared<Impl>(Impl{std::move(key)}));
}

std::string PrivateKey::sign(std::string_view data) const {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  std::size_t len = 0;
  std::string sig;
  bool ok = EVP_DigestSignInit(ctx, nullptr, EVP_sha256(), nullptr, m_impl->key.get()) == 1 &&
            EVP_DigestSign(ctx, nullptr, &len, reinterpret_cast<const unsigned char*>(data.data()), data.size()) == 1;
  if (ok) {
    sig.resize(len);
    ok = EVP_DigestSign(ctx, reinterpret_cast<unsigned char*>(sig.data()), &len,
                        reinterpret_cast<const unsigned char*>(data.data()), data.size()) == 1;
    sig.resize(len);
  }
  EVP_MD_CTX_free(ctx);
  if (!ok) {
    throw Error(ErrorKind::internal, "signing failed (" + openssl_error() + ")");
  }
  return sig;
}

std::string PrivateKey::sign_digest(std::string_view sha256) const {
  if (sha256.size() != 32) {
    throw Error(ErrorKind::internal, "sign_digest takes a 32-byte SHA-256");
  }
  EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new(m_impl->key.get(), nullptr);
  std::size_t len = 0;
  std::string sig;
  const auto* md = reinterpret_cast<const unsigned char*>(sha256.data());
  bool ok = ctx != nullptr && EVP_PKEY_sign_init(ctx) == 1 && EVP_PKEY_CTX_set_signature_md(ctx, EVP_sha256()) == 1 &&
            EVP_PKEY_sign(ctx, nullptr, &len, md, sha256.size()) == 1;
  if (ok) {
    sig.resize(len);
    ok = EVP_PKEY_sign(ctx, reinterpret_cast<unsigned char*>(sig.data()), &len, md, sha256.size()) == 1;
    sig.resize(len);
  }
  EVP_PKEY_CTX_free(ctx);
  if (!ok) {
    throw Error(ErrorKind::internal, "signing failed (" + openssl_error() + ")");
  }
  return sig;
}

PublicKey PrivateKey::public_key() const {
  std::string der = spki_der(m_impl->key.get());
  const auto* p = reinterpret_cast<const unsigned char*>(der.data());
  EVP_PKEY* k = d2i_PUBKEY(nullptr, &p, static_cast<long>(der.size()));
  if (k == nullptr) {
    throw Error(ErrorKind::internal, "cannot derive the public key (" + openssl_error() + ")");
  }
  return PublicKey(std::make_shared<PublicKey::Impl>(PublicKey::Impl{PkeyPtr(k)}));
}

std::string PrivateKey::to_cosign_pem(const std::string& passphrase) const {
  PKCS8_PRIV_KEY_INFO* p8 = EVP_PKEY2PKCS8(m_impl->key.get());
  if (p8 == nullptr) {
    throw Error(ErrorKind::internal, "cannot encode the private key (" + openssl_error() + ")");
  }
  unsigned char* buf = nullptr;
  int len = i2d_PKCS8_PRIV_KEY_INFO(p8, &buf);
  PKCS8_PRIV_KEY_INFO_free(p8);
  if (len <= 0) {
    throw Error(ErrorKind::internal, "cannot encode the private key (" + openssl_error() + ")");
  }
  Secret der(std::string(reinterpret_cast<char*>(buf), static_cast<std::size_t>(len)));
  OPENSSL_clear_free(buf, static_cast<std::size_t>(len));

  init_sodium();
  std::string salt(32, '\0'), nonce(crypto_secretbox_NONCEBYTES, '\0');
  randombytes_buf(salt.data(), salt.size());
  randombytes_buf(nonce.data(), nonce.size());
  unsigned char key[crypto_secretbox_KEYBYTES];
  scrypt(passphrase, salt, k_scrypt_n, k_scrypt_r, k_scrypt_p, key, sizeof key);
  std::string ct(der.str().size() + crypto_secretbox_MACBYTES, '\0');
  crypto_secretbox_easy(reinterpret_cast<unsigned char*>(ct.data()),
                        reinterpret_cast<const unsigned char*>(der.str().data()), der.str().size(),
                        reinterpret_cast<const unsigned char*>(nonce.data()), key);
  sodium_memzero(key, sizeof key);
  nlohmann::json body = {
      {"kdf",
       {{"name", "scrypt"},
        {"params", {{"N", k_scrypt_n}, {"r", k_scrypt_r}, {"p", k_scrypt_p}}},
        {"salt", util::base64_encode(salt)}}},
      {"cipher", {{"name", "nacl/secretbox"}, {"nonce", util::base64_encode(nonce)}}},
      {"ciphertext", util::base64_encode(ct)},
  };
  return write_pem(k_cosign_pem, body.dump());
}

std::string openssl_version() {
  return OpenSSL_version(OPENSSL_VERSION_STRING);
}

std::string sodium_version() {
  return sodium_version_string();
}

} // namespace signing
