#include "layers/compress.hpp"

#include "util/error.hpp"
#include "util/interrupt.hpp"
#include "util/sha256.hpp"

#include <algorithm>
#include <archive.h>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <string_view>
#include <vector>
#include <zlib.h>
#include <zstd.h>

namespace layers {

using util::Error;
using util::ErrorKind;

namespace {

constexpr std::size_t k_chunk = 1 << 20;

// Compress a small sample spread over the chunk at level 1; if it does not shrink
// by at least 3%, the chunk is stored. Content-only decision => deterministic.
bool looks_incompressible(const std::string& chunk) {
  if (chunk.size() < 4096) {
    return false;
  }
  constexpr std::size_t k_slice = 8192;
  std::string sample;
  std::size_t slices = std::min<std::size_t>(4, chunk.size() / k_slice);
  if (slices == 0) {
    sample = chunk;
  } else {
    std::size_t stride = chunk.size() / slices;
    for (std::size_t i = 0; i < slices; ++i) {
      sample.append(chunk, i * stride, k_slice);
    }
  }
  uLongf cap = compressBound(static_cast<uLong>(sample.size()));
  std::vector<Bytef> out(cap);
  if (compress2(out.data(), &cap, reinterpret_cast<const Bytef*>(sample.data()), static_cast<uLong>(sample.size()),
                1) != Z_OK) {
    return false;
  }
  return static_cast<double>(cap) > 0.97 * static_cast<double>(sample.size());
}

void append_stored(std::string& out, const char* data, std::size_t size) {
  while (size > 0) {
    std::size_t n = std::min<std::size_t>(size, 65535);
    out.push_back('\0'); // BFINAL=0, BTYPE=00, aligned
    out.push_back(static_cast<char>(n & 0xff));
    out.push_back(static_cast<char>(n >> 8));
    out.push_back(static_cast<char>(~n & 0xff));
    out.push_back(static_cast<char>((~n >> 8) & 0xff));
    out.append(data, n);
    data += n;
    size -= n;
  }
}

struct ChunkResult {
  std::string bytes;
  uLong crc = 0;
  std::size_t in_size = 0;
};

ChunkResult deflate_chunk(const std::string& chunk, int level) {
  ChunkResult r;
  r.in_size = chunk.size();
  r.crc = crc32(0L, reinterpret_cast<const Bytef*>(chunk.data()), static_cast<uInt>(chunk.size()));
  if (looks_incompressible(chunk)) {
    append_stored(r.bytes, chunk.data(), chunk.size());
    return r;
  }
  z_stream zs{};
  if (deflateInit2(&zs, level, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    throw Error(ErrorKind::internal, "deflateInit2 failed");
  }
  // deflateBound's worst case, not zero-filled (a string's resize would write every
  // byte once more before deflate does); the chunk then waits in the queue holding only
  // what deflate wrote.
  const std::size_t bound = deflateBound(&zs, static_cast<uLong>(chunk.size())) + 16;
  std::unique_ptr<Bytef[]> out(new Bytef[bound]);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(chunk.data()));
  zs.avail_in = static_cast<uInt>(chunk.size());
  zs.next_out = out.get();
  zs.avail_out = static_cast<uInt>(bound);
  int rc = deflate(&zs, Z_SYNC_FLUSH);
  if (rc != Z_OK || zs.avail_in != 0) {
    deflateEnd(&zs);
    throw Error(ErrorKind::internal, "deflate failed");
  }
  r.bytes.assign(reinterpret_cast<const char*>(out.get()), zs.total_out);
  out.reset();
  deflateEnd(&zs);
  if (r.bytes.size() > chunk.size() + 5 * (chunk.size() / 65535 + 1)) {
    r.bytes.clear();
    append_stored(r.bytes, chunk.data(), chunk.size());
  }
  return r;
}

void put_le32(std::string& s, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) {
    s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
}

} // namespace

std::string media_type_for(Compression c) {
  switch (c) {
  case Compression::gzip:
    return oci::media::k_layer_gzip;
  case Compression::zstd:
    return oci::media::k_layer_zstd;
  case Compression::none:
    return oci::media::k_layer_tar;
  }
  return oci::media::k_layer_tar;
}

Compression compression_from_media_type(const std::string& mt) {
  if (mt == oci::media::k_layer_gzip || mt == oci::media::k_docker_layer_gzip ||
      mt == "application/vnd.oci.image.layer.nondistributable.v1.tar+gzip") {
    return Compression::gzip;
  }
  if (mt == oci::media::k_layer_zstd) {
    return Compression::zstd;
  }
  if (mt == oci::media::k_layer_tar || mt == "application/vnd.docker.image.rootfs.diff.tar") {
    return Compression::none;
  }
  throw Error(ErrorKind::input, "unsupported layer media type '" + mt + "'");
}

// zstd contexts abandoned by an interrupted build (see ~Impl): kept reachable so that
// LeakSanitizer does not count them, and never freed, as the process is ending.
static void abandon_zstd_context(ZSTD_CCtx* c) {
  static std::mutex m;
  static std::vector<ZSTD_CCtx*>* kept = new std::vector<ZSTD_CCtx*>();
  std::lock_guard<std::mutex> g(m);
  kept->push_back(c);
}

struct LayerStream::Impl {
  CompressOptions opts;
  util::AtomicFile& out;
  util::Sha256 diff_hash;
  util::Sha256 blob_hash;
  std::int64_t in_size = 0;
  std::int64_t out_size = 0;
  // gzip
  std::string chunk;
  std::deque<std::future<ChunkResult>> pending;
  uLong crc = 0;
  // zstd
  ZSTD_CCtx* zctx = nullptr;
  std::vector<char> zbuf;

  Impl(const CompressOptions& o, util::AtomicFile& f) : opts(o), out(f) {
    if (opts.kind == Compression::gzip) {
      if (opts.level < 1 || opts.level > 9) {
        throw Error(ErrorKind::input, "gzip level must be 1-9, got " + std::to_string(opts.level));
      }
      std::string header("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff", 10);
      emit(header.data(), header.size());
      chunk.reserve(k_chunk);
    } else if (opts.kind == Compression::zstd) {
      if (opts.level < 1 || opts.level > 19) {
        throw Error(ErrorKind::input, "zstd level must be 1-19, got " + std::to_string(opts.level));
      }
      zctx = ZSTD_createCCtx();
      ZSTD_CCtx_setParameter(zctx, ZSTD_c_compressionLevel, opts.level);
      ZSTD_CCtx_setParameter(zctx, ZSTD_c_checksumFlag, 1);
      // Always multi-threaded format (>= 1 worker): identical output for any count.
      // The calling thread makes, hashes and feeds the tar stream, so it keeps one of
      // the threads: threads - 1 workers. Each worker holds its own 8 MiB job in and out
      // (level 3) on top of the shared input buffer; at -j2 the second worker cost 11 MB
      // of a 87 MB build and gained 3-5% of its time (bench/README.md).
      if (ZSTD_isError(ZSTD_CCtx_setParameter(zctx, ZSTD_c_nbWorkers, std::max(1, opts.threads - 1)))) {
        throw Error(ErrorKind::internal, "this libzstd has no multi-threading support");
      }
      zbuf.resize(ZSTD_CStreamOutSize());
    }
  }

  ~Impl() {
    for (auto& f : pending) {
      if (f.valid()) {
        f.wait();
      }
    }
    if (zctx != nullptr) {
      if (util::interrupted() != 0) {
        // Freeing waits for zstd's workers to finish the job they are on (seconds at
        // level 19); the process is stopping, so the context is left to the exit
        // (reachable, not a leak).
        abandon_zstd_context(zctx);
      } else {
        ZSTD_freeCCtx(zctx);
      }
    }
  }

  void emit(const char* d, std::size_t n) {
    blob_hash.update(d, n);
    out.write(d, n);
    out_size += static_cast<std::int64_t>(n);
  }

  void drain_one() {
    ChunkResult r = pending.front().get();
    pending.pop_front();
    crc = crc32_combine(crc, r.crc, static_cast<z_off_t>(r.in_size));
    emit(r.bytes.data(), r.bytes.size());
  }

  void submit_chunk() {
    if (chunk.empty()) {
      return;
    }
    int level = opts.level;
    if (opts.threads <= 1) {
      std::promise<ChunkResult> p;
      p.set_value(deflate_chunk(chunk, level));
      pending.push_back(p.get_future());
      drain_one();
    } else {
      // The task frees its input as soon as it is compressed; one chunk more than there
      // are threads waits, so the workers never idle while this thread reads the next.
      pending.push_back(std::async(std::launch::async, [c = std::move(chunk), level]() mutable {
        ChunkResult r = deflate_chunk(c, level);
        std::string().swap(c);
        return r;
      }));
      while (pending.size() > static_cast<std::size_t>(opts.threads) + 1) {
        drain_one();
      }
    }
    chunk.clear();
    chunk.reserve(k_chunk);
  }

  void zstd_feed(const char* d, std::size_t n, ZSTD_EndDirective mode) {
    ZSTD_inBuffer in{d, n, 0};
    for (;;) {
      ZSTD_outBuffer o{zbuf.data(), zbuf.size(), 0};
      std::size_t rem = ZSTD_compressStream2(zctx, &o, &in, mode);
      if (ZSTD_isError(rem)) {
        throw Error(ErrorKind::internal, std::string("zstd: ") + ZSTD_getErrorName(rem));
      }
      emit(zbuf.data(), o.pos);
      bool done = mode == ZSTD_e_end ? rem == 0 : in.pos == in.size;
      if (done) {
        break;
      }
      // A call returns after at most one of zstd's 512 KiB output sections (a fraction
      // of a second at level 19), so a signal is seen here within about a second.
      util::check_interrupted();
    }
  }

  void write(const char* d, std::size_t n) {
    diff_hash.update(d, n);
    in_size += static_cast<std::int64_t>(n);
    switch (opts.kind) {
    case Compression::none:
      emit(d, n);
      break;
    case Compression::zstd:
      zstd_feed(d, n, ZSTD_e_continue);
      break;
    case Compression::gzip:
      while (n > 0) {
        std::size_t take = std::min(n, k_chunk - chunk.size());
        chunk.append(d, take);
        d += take;
        n -= take;
        if (chunk.size() == k_chunk) {
          submit_chunk();
        }
      }
      break;
    }
  }

  BlobInfo finish() {
    if (opts.kind == Compression::gzip) {
      submit_chunk();
      while (!pending.empty()) {
        drain_one();
      }
      std::string tail("\x03\x00", 2); // final empty fixed-Huffman block
      put_le32(tail, static_cast<std::uint32_t>(crc));
      put_le32(tail, static_cast<std::uint32_t>(in_size & 0xffffffff));
      emit(tail.data(), tail.size());
    } else if (opts.kind == Compression::zstd) {
      zstd_feed(nullptr, 0, ZSTD_e_end);
    }
    BlobInfo info;
    info.diff_id = oci::Digest::sha256(diff_hash.finish_hex());
    info.digest = oci::Digest::sha256(blob_hash.finish_hex());
    info.size = out_size;
    info.uncompressed_size = in_size;
    info.media_type = media_type_for(opts.kind);
    return info;
  }
};

LayerStream::LayerStream(const CompressOptions& options, util::AtomicFile& out)
    : m_impl(std::make_unique<Impl>(options, out)) {}
LayerStream::~LayerStream() = default;
void LayerStream::write(const char* data, std::size_t size) {
  m_impl->write(data, size);
}
BlobInfo LayerStream::finish() {
  return m_impl->finish();
}

struct Decompressor::Impl {
  Compression kind;
  std::function<void(const char*, std::size_t)> sink;
  std::string what;
  std::vector<char> outbuf = std::vector<char>(1 << 20);
  z_stream zs{};
  bool z_ended = false;
  ZSTD_DCtx* dctx = nullptr;
  std::size_t last = 0;

  void gzip(const char* d, std::size_t n) {
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(d));
    zs.avail_in = static_cast<uInt>(n);
    while (zs.avail_in > 0) {
      if (z_ended) { // another gzip member follows
        inflateReset(&zs);
        z_ended = false;
      }
      zs.next_out = reinterpret_cast<Bytef*>(outbuf.data());
      zs.avail_out = static_cast<uInt>(outbuf.size());
      int rc = inflate(&zs, Z_NO_FLUSH);
      if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) {
        throw Error(ErrorKind::integrity, "corrupt gzip data in " + what);
      }
      sink(outbuf.data(), outbuf.size() - zs.avail_out);
      if (rc == Z_STREAM_END) {
        z_ended = true;
      }
      if (rc == Z_BUF_ERROR && zs.avail_in == 0) {
        break;
      }
    }
  }
  void zstd(const char* d, std::size_t n) {
    ZSTD_inBuffer in{d, n, 0};
    for (;;) {
      ZSTD_outBuffer o{outbuf.data(), outbuf.size(), 0};
      last = ZSTD_decompressStream(dctx, &o, &in);
      if (ZSTD_isError(last)) {
        throw Error(ErrorKind::integrity, "corrupt zstd data in " + what + ": " + ZSTD_getErrorName(last));
      }
      sink(outbuf.data(), o.pos);
      // All input consumed and the output not full: the decoder holds nothing more.
      if (in.pos == in.size && o.pos < o.size) {
        break;
      }
    }
  }
};

Decompressor::Decompressor(const std::string& media_type, std::function<void(const char*, std::size_t)> sink,
                           std::string what)
    : m_impl(std::make_unique<Impl>()) {
  m_impl->kind = compression_from_media_type(media_type);
  m_impl->sink = std::move(sink);
  m_impl->what = std::move(what);
  if (m_impl->kind == Compression::gzip) {
    if (inflateInit2(&m_impl->zs, 15 + 32) != Z_OK) {
      throw Error(ErrorKind::internal, "inflateInit2 failed");
    }
  } else if (m_impl->kind == Compression::zstd) {
    m_impl->dctx = ZSTD_createDCtx();
    if (m_impl->dctx == nullptr) {
      throw Error(ErrorKind::internal, "ZSTD_createDCtx failed");
    }
  }
}

Decompressor::~Decompressor() {
  if (m_impl->kind == Compression::gzip) {
    inflateEnd(&m_impl->zs);
  } else if (m_impl->kind == Compression::zstd) {
    ZSTD_freeDCtx(m_impl->dctx);
  }
}

void Decompressor::write(const char* data, std::size_t len) {
  switch (m_impl->kind) {
  case Compression::none:
    m_impl->sink(data, len);
    break;
  case Compression::gzip:
    m_impl->gzip(data, len);
    break;
  case Compression::zstd:
    m_impl->zstd(data, len);
    break;
  }
}

void Decompressor::finish() {
  if (m_impl->kind == Compression::gzip && !m_impl->z_ended) {
    throw Error(ErrorKind::integrity, "truncated gzip data in " + m_impl->what);
  }
  if (m_impl->kind == Compression::zstd && m_impl->last != 0) {
    throw Error(ErrorKind::integrity, "truncated zstd data in " + m_impl->what);
  }
}

void decompress_file(const std::filesystem::path& blob, const std::string& media_type,
                     const std::function<void(const char*, std::size_t)>& sink) {
  Decompressor d(media_type, sink, blob.string());
  util::read_file_chunks(blob, [&](const char* p, std::size_t n) { d.write(p, n); });
  d.finish();
}

namespace {

std::string format_mismatch(std::string_view start, const std::string& media_type) {
  Compression c = compression_from_media_type(media_type);
  auto starts = [&](std::string_view magic) { return start.substr(0, magic.size()) == magic; };
  if (c == Compression::gzip && !starts("\x1f\x8b")) {
    return "is not gzip, as its media type " + media_type + " says";
  }
  if (c == Compression::zstd && !starts("\x28\xb5\x2f\xfd")) {
    return "is not zstd, as its media type " + media_type + " says";
  }
  if (c == Compression::none && (starts("\x1f\x8b") || starts("\x28\xb5\x2f\xfd"))) {
    return "is compressed, and its media type " + media_type + " says a plain tar";
  }
  return {};
}

// A tar stream's first block: a header whose checksum holds, or the end of an empty archive.
bool tar_start(std::string_view b) {
  if (b.size() < 512) {
    return false;
  }
  if (b.find_first_not_of('\0', 0) >= 512) {
    return true;
  }
  unsigned long sum = 0;
  for (std::size_t i = 0; i < 512; ++i) {
    sum += (i >= 148 && i < 156) ? ' ' : static_cast<unsigned char>(b[i]);
  }
  std::string field(b.substr(148, 8));
  return std::strtoul(field.c_str(), nullptr, 8) == sum;
}

} // namespace

struct BlobCheck::Impl {
  BlobInfo info;
  util::Sha256 digest, diff;
  std::int64_t size = 0, uncompressed = 0;
  std::string head; // the first bytes, for the format
  std::string failed;
  std::unique_ptr<Decompressor> dec;

  // Runs a step of the decompressor; what it refuses is the blob's failure.
  void guard(const std::function<void()>& step) {
    try {
      step();
    } catch (const util::Error& e) {
      if (e.kind() == util::ErrorKind::interrupted) {
        throw;
      }
      failed = std::string("does not decompress (") + e.what() + ")";
    }
  }
  // Once the format is known (or the blob ended): the decompressor, fed the first
  // `held` bytes of the head.
  void start(std::size_t held) {
    failed = format_mismatch(head, info.media_type);
    if (!failed.empty()) {
      return;
    }
    dec = std::make_unique<Decompressor>(
        info.media_type,
        [this](const char* p, std::size_t n) {
          diff.update(p, n);
          uncompressed += static_cast<std::int64_t>(n);
        },
        info.digest.str());
    guard([&] { dec->write(head.data(), held); });
  }
};

BlobCheck::BlobCheck(BlobInfo info) : m_impl(std::make_unique<Impl>()) {
  m_impl->info = std::move(info);
}

BlobCheck::~BlobCheck() = default;

void BlobCheck::write(const char* data, std::size_t len) {
  Impl& m = *m_impl;
  m.digest.update(data, len);
  m.size += static_cast<std::int64_t>(len);
  if (!m.failed.empty()) {
    return;
  }
  if (!m.dec) {
    const std::size_t before = m.head.size(); // the bytes of earlier pieces
    m.head.append(data, std::min<std::size_t>(len, 4 - std::min<std::size_t>(4, m.head.size())));
    if (m.head.size() < 4) {
      return; // not enough to tell the format yet (the rest of this piece waits too)
    }
    m.start(before); // this piece follows whole, below
    if (!m.failed.empty()) {
      return;
    }
  }
  m.guard([&] { m.dec->write(data, len); });
}

std::string BlobCheck::finish() {
  Impl& m = *m_impl;
  if (m.failed.empty() && !m.dec) {
    m.start(m.head.size()); // a blob of under 4 bytes
  }
  if (m.failed.empty()) {
    m.guard([&] { m.dec->finish(); });
  }
  oci::Digest got = oci::Digest::sha256(m.digest.finish_hex());
  if (got != m.info.digest || m.size != m.info.size) {
    return "is " + got.str() + " (" + std::to_string(m.size) + " bytes), its record names " + m.info.digest.str() +
           " (" + std::to_string(m.info.size) + " bytes)";
  }
  if (!m.failed.empty()) {
    return m.failed;
  }
  oci::Digest diff = oci::Digest::sha256(m.diff.finish_hex());
  if (diff != m.info.diff_id) {
    return "has content of digest " + diff.str() + ", its record's diff_id is " + m.info.diff_id.str();
  }
  if (m.uncompressed != m.info.uncompressed_size) {
    return "has " + std::to_string(m.uncompressed) + " bytes of content, its record says " +
           std::to_string(m.info.uncompressed_size);
  }
  return {};
}

std::string blob_mismatch(const std::filesystem::path& blob, const BlobInfo& info) {
  BlobCheck check(info);
  util::read_file_chunks(blob, [&](const char* p, std::size_t n) { check.write(p, n); });
  return check.finish();
}

std::string blob_head_mismatch(const std::string& head, const std::string& media_type) {
  if (std::string why = format_mismatch(head, media_type); !why.empty()) {
    return why;
  }
  std::string out;
  try {
    Decompressor d(
        media_type,
        [&](const char* p, std::size_t n) {
          if (out.size() < 1024) {
            out.append(p, std::min<std::size_t>(n, 1024 - out.size()));
          }
        },
        "the blob's start");
    d.write(head.data(), head.size()); // no finish(): only the start is here
  } catch (const util::Error& e) {
    if (e.kind() == util::ErrorKind::interrupted) {
      throw;
    }
    return std::string("does not decompress (") + e.what() + ")";
  }
  if (out.size() >= 512 && !tar_start(out)) {
    return "does not start with a tar header";
  }
  return {};
}

std::string libarchive_version() {
  std::string s = archive_version_string(); // "libarchive 3.6.2"
  return s.rfind("libarchive ", 0) == 0 ? s.substr(11) : s;
}

std::string zstd_version() {
  return ZSTD_versionString();
}

std::string zlib_library_version() {
  return zlibVersion();
}

} // namespace layers
