#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace util {

// Streaming SHA-256 (OpenSSL EVP). Feed bytes as they pass; never buffers input.
class Sha256 {
public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void update(const void* data, std::size_t size);
  void update(std::string_view data) { update(data.data(), data.size()); }
  // Starts over, as if new (a download that restarts from its first byte).
  void reset();
  std::array<std::uint8_t, 32> finish_raw();
  std::string finish_hex();

private:
  void* m_ctx;
};

std::string sha256_hex(std::string_view data);
// Hashes a file in bounded memory; returns lowercase hex.
std::string sha256_file_hex(const std::filesystem::path& path);

// SHA-1, for the documents that still list it beside SHA-256 (SPDX file checksums).
std::string sha1_hex(std::string_view data);
// MD5, for what only dpkg's records still use it (a conffile's recorded sum, the
// md5sums dpkg writes for a package that ships none), whole or streamed.
std::string md5_hex(std::string_view data);
class Md5 {
public:
  Md5();
  ~Md5();
  Md5(const Md5&) = delete;
  Md5& operator=(const Md5&) = delete;
  void update(const void* data, std::size_t size);
  std::string finish_hex();

private:
  void* m_ctx;
};

} // namespace util
