#pragma once
// Layer byte pipeline: tar bytes -> diff_id hash -> compressor -> digest hash -> file,
// in one pass and bounded memory.
//
// gzip: the stream is cut into fixed 1 MiB chunks, each compressed independently as
// raw deflate ending on a sync flush (pigz-style), then framed as ONE gzip member
// with a fixed header (no name, mtime 0, OS 255). Chunks whose content does not
// compress (judged from the chunk's bytes alone) are written as stored blocks
// without deflating. The bytes depend only on input and level, never on the number
// of threads.
// zstd: libzstd with nbWorkers >= 1 always (its multi-threaded format is identical
// for any worker count >= 1): threads - 1 workers, at least one.
#include "oci/types.hpp"
#include "util/fs.hpp"

#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <string>

namespace layers {

using Compression = oci::Compression;

struct CompressOptions {
  Compression kind = Compression::gzip;
  int level = 6;   // gzip 1-9 (default 6), zstd 1-19 (default 3)
  int threads = 1; // worker threads (does not change the output)
};

std::string media_type_for(Compression c);
Compression compression_from_media_type(const std::string& media_type);

struct BlobInfo {
  oci::Digest digest;  // of the compressed bytes
  oci::Digest diff_id; // of the uncompressed tar
  std::int64_t size = 0;
  std::int64_t uncompressed_size = 0;
  std::string media_type;
};

class LayerStream {
public:
  // Writes compressed output to `out` (not committed here).
  LayerStream(const CompressOptions& options, util::AtomicFile& out);
  ~LayerStream();
  LayerStream(const LayerStream&) = delete;
  LayerStream& operator=(const LayerStream&) = delete;
  void write(const char* data, std::size_t size);
  BlobInfo finish();

private:
  struct Impl;
  std::unique_ptr<Impl> m_impl;
};

// Push-style decompression of a (gzip, zstd or plain) layer: compressed bytes in,
// uncompressed bytes out to sink; finish() reports a stream that ends early. `what`
// names the blob in errors.
class Decompressor {
public:
  Decompressor(const std::string& media_type, std::function<void(const char*, std::size_t)> sink, std::string what);
  ~Decompressor();
  Decompressor(const Decompressor&) = delete;
  Decompressor& operator=(const Decompressor&) = delete;
  void write(const char* data, std::size_t len);
  void finish();

private:
  struct Impl;
  std::unique_ptr<Impl> m_impl;
};

// Streams the uncompressed content of a (gzip, zstd or plain) tar blob into sink.
void decompress_file(const std::filesystem::path& blob, const std::string& media_type,
                     const std::function<void(const char*, std::size_t)>& sink);

// Checks a layer blob, streamed through write(), against the info its cache record
// gives: finish() says what is wrong ("" when nothing): its bytes are not of the media
// type's format, or it or its uncompressed content has another digest or size.
class BlobCheck {
public:
  explicit BlobCheck(BlobInfo info);
  ~BlobCheck();
  BlobCheck(const BlobCheck&) = delete;
  BlobCheck& operator=(const BlobCheck&) = delete;
  void write(const char* data, std::size_t len);
  std::string finish();

private:
  struct Impl;
  std::unique_ptr<Impl> m_impl;
};
// The same for a blob in a file.
std::string blob_mismatch(const std::filesystem::path& blob, const BlobInfo& info);
// The same for the first bytes of a blob (`head`, at most the whole blob): its magic is
// the media type's compression and what it starts with decompresses to a tar header.
std::string blob_head_mismatch(const std::string& head, const std::string& media_type);

// The versions of libarchive and zstd linked in, as they report themselves at run time.
std::string libarchive_version();
std::string zstd_version();
std::string zlib_library_version();

} // namespace layers
