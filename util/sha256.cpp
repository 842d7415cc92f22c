#include "util/sha256.hpp"

#include "util/encoding.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"

#include <openssl/evp.h>
#include <stdexcept>

namespace util {

Sha256::Sha256() : m_ctx(EVP_MD_CTX_new()) {
  if (m_ctx == nullptr) {
    throw Error(ErrorKind::internal, "cannot initialise SHA-256");
  }
  reset();
}

void Sha256::reset() {
  if (EVP_DigestInit_ex(static_cast<EVP_MD_CTX*>(m_ctx), EVP_sha256(), nullptr) != 1) {
    throw Error(ErrorKind::internal, "cannot initialise SHA-256");
  }
}

Sha256::~Sha256() {
  EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(m_ctx));
}

void Sha256::update(const void* data, std::size_t size) {
  if (size > 0) {
    EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(m_ctx), data, size);
  }
}

std::array<std::uint8_t, 32> Sha256::finish_raw() {
  std::array<std::uint8_t, 32> out{};
  unsigned int len = 0;
  EVP_DigestFinal_ex(static_cast<EVP_MD_CTX*>(m_ctx), out.data(), &len);
  return out;
}

std::string Sha256::finish_hex() {
  auto raw = finish_raw();
  return hex_encode(std::string_view(reinterpret_cast<const char*>(raw.data()), raw.size()));
}

std::string sha256_hex(std::string_view data) {
  Sha256 h;
  h.update(data);
  return h.finish_hex();
}

std::string sha256_file_hex(const std::filesystem::path& path) {
  Sha256 h;
  read_file_chunks(path, [&](const char* data, std::size_t n) { h.update(data, n); });
  return h.finish_hex();
}

namespace {

std::string digest_hex(std::string_view data, const EVP_MD* md, const char* name) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> out{};
  unsigned int len = 0;
  if (EVP_Digest(data.data(), data.size(), out.data(), &len, md, nullptr) != 1) {
    throw std::runtime_error(std::string("EVP_Digest(") + name + ") failed");
  }
  return hex_encode(std::string_view(reinterpret_cast<const char*>(out.data()), len));
}

} // namespace

std::string sha1_hex(std::string_view data) {
  return digest_hex(data, EVP_sha1(), "sha1");
}

std::string md5_hex(std::string_view data) {
  return digest_hex(data, EVP_md5(), "md5");
}

Md5::Md5() : m_ctx(EVP_MD_CTX_new()) {
  if (m_ctx == nullptr || EVP_DigestInit_ex(static_cast<EVP_MD_CTX*>(m_ctx), EVP_md5(), nullptr) != 1) {
    EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(m_ctx));
    throw Error(ErrorKind::internal, "cannot initialise MD5");
  }
}

Md5::~Md5() {
  EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(m_ctx));
}

void Md5::update(const void* data, std::size_t size) {
  if (size > 0) {
    EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(m_ctx), data, size);
  }
}

std::string Md5::finish_hex() {
  std::array<unsigned char, EVP_MAX_MD_SIZE> out{};
  unsigned int len = 0;
  EVP_DigestFinal_ex(static_cast<EVP_MD_CTX*>(m_ctx), out.data(), &len);
  return hex_encode(std::string_view(reinterpret_cast<const char*>(out.data()), len));
}

} // namespace util
