#include "layers/docker_archive.hpp"

#include "layers/compress.hpp"
#include "layers/tar.hpp"
#include "oci/reference.hpp"
#include "util/encoding.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/sha256.hpp"

#include <algorithm>
#include <array>
#include <fcntl.h>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string_view>
#include <unistd.h>

namespace layers {

using util::Error;
using util::ErrorKind;
namespace fs = std::filesystem;

namespace {

std::string clean_member(std::string p) {
  while (p.rfind("./", 0) == 0) {
    p.erase(0, 2);
  }
  while (!p.empty() && p.front() == '/') {
    p.erase(0, 1);
  }
  return p;
}

std::string field(const char* p, std::size_t n) {
  std::size_t len = 0;
  while (len < n && p[len] != '\0') {
    ++len;
  }
  return std::string(p, len);
}

std::int64_t octal(const char* p, std::size_t n, bool& ok) {
  if ((static_cast<unsigned char>(p[0]) & 0x80) != 0) { // GNU base-256
    std::int64_t v = static_cast<unsigned char>(p[0]) & 0x3f;
    for (std::size_t i = 1; i < n; ++i) {
      v = (v << 8) | static_cast<unsigned char>(p[i]);
    }
    return v;
  }
  std::int64_t v = 0;
  std::size_t i = 0;
  while (i < n && p[i] == ' ') {
    ++i;
  }
  bool any = false;
  for (; i < n && p[i] >= '0' && p[i] <= '7'; ++i) {
    v = v * 8 + (p[i] - '0');
    any = true;
  }
  for (; i < n; ++i) {
    if (p[i] != ' ' && p[i] != '\0') {
      ok = false;
    }
  }
  if (!any) {
    ok = ok && (p[0] == '\0' || p[0] == ' ');
  }
  return v;
}

bool checksum_ok(const std::array<char, 512>& h) {
  bool ok = true;
  std::int64_t want = octal(h.data() + 148, 8, ok);
  std::int64_t u = 0;
  std::int64_t s = 0;
  for (std::size_t i = 0; i < 512; ++i) {
    bool in_sum = i >= 148 && i < 156;
    u += in_sum ? ' ' : static_cast<unsigned char>(h[i]);
    s += in_sum ? ' ' : static_cast<signed char>(h[i]);
  }
  return ok && (want == u || want == s);
}

// PAX records: "<len> key=value\n".
void parse_pax(const std::string& data, std::map<std::string, std::string>& out) {
  std::size_t pos = 0;
  while (pos < data.size()) {
    std::size_t sp = data.find(' ', pos);
    if (sp == std::string::npos) {
      return;
    }
    std::size_t len = 0;
    try {
      len = static_cast<std::size_t>(std::stoull(data.substr(pos, sp - pos)));
    } catch (const std::exception&) {
      return; // a malformed record ends the list; what was read so far stands
    }
    if (len == 0 || pos + len > data.size()) {
      return;
    }
    std::string rec = data.substr(sp + 1, pos + len - sp - 2);
    auto eq = rec.find('=');
    if (eq != std::string::npos) {
      out[rec.substr(0, eq)] = rec.substr(eq + 1);
    }
    pos += len;
  }
}

std::string sniff_layer_type(const unsigned char* b, std::size_t n) {
  if (n >= 2 && b[0] == 0x1f && b[1] == 0x8b) {
    return oci::media::k_layer_gzip;
  }
  if (n >= 4 && b[0] == 0x28 && b[1] == 0xb5 && b[2] == 0x2f && b[3] == 0xfd) {
    return oci::media::k_layer_zstd;
  }
  return oci::media::k_layer_tar;
}

// The tar file open for positioned reads, its size, and the error that says it is
// damaged.
class TarFile {
public:
  explicit TarFile(const fs::path& file) : m_file(file) {
    m_fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    if (m_fd < 0) {
      util::throw_errno("open " + file.string());
    }
    std::error_code ec;
    m_size = static_cast<std::int64_t>(fs::file_size(file, ec));
    if (ec) {
      ::close(m_fd);
      throw Error(ErrorKind::input, "cannot read " + file.string() + ": " + ec.message());
    }
  }
  ~TarFile() { ::close(m_fd); }
  TarFile(const TarFile&) = delete;
  TarFile& operator=(const TarFile&) = delete;

  const fs::path& path() const { return m_file; }
  std::int64_t size() const { return m_size; }

  // Up to n bytes at off (fewer only at the end of the file).
  std::size_t pread_all(char* buf, std::size_t n, std::int64_t off) const {
    std::size_t got = 0;
    while (got < n) {
      ssize_t r = ::pread(m_fd, buf + got, n - got, static_cast<off_t>(off) + static_cast<off_t>(got));
      if (r < 0 && errno == EINTR) {
        continue;
      }
      if (r < 0) {
        util::throw_errno("read " + m_file.string());
      }
      if (r == 0) {
        break;
      }
      got += static_cast<std::size_t>(r);
    }
    return got;
  }

  Error truncated(const std::string& why) const {
    return Error(ErrorKind::input, m_file.string() + " is truncated or corrupt (" + why + ")",
                 "copy or save the archive again (`docker save`, `podman save`, paddle-image pull -o "
                 "docker-archive:FILE)");
  }

private:
  const fs::path& m_file;
  int m_fd = -1;
  std::int64_t m_size = 0;
};

// What the extended headers before a member say about it: PAX records, GNU long name
// and long link.
struct ExtendedHeaders {
  std::map<std::string, std::string> pax;
  std::string long_name;
  std::string long_link;
};

// Reads the header block at pos into h; false at the end of the archive (zero blocks,
// or the file ends after a member). A file that is no tar, or breaks off, throws.
bool read_header(const TarFile& tar, std::int64_t pos, bool have_members, std::array<char, 512>& h) {
  const fs::path& file = tar.path();
  std::size_t got = tar.pread_all(h.data(), h.size(), pos);
  if (got == 0 && have_members) {
    return false; // no end-of-archive blocks: accepted, as tar does
  }
  if (got < h.size()) {
    if (!have_members) {
      throw Error(ErrorKind::input, file.string() + " is not a tar file");
    }
    throw tar.truncated("a header breaks off at byte " + std::to_string(pos));
  }
  bool zero = std::all_of(h.begin(), h.end(), [](char c) { return c == '\0'; });
  if (zero) {
    if (!have_members && pos == 0) {
      throw Error(ErrorKind::input, file.string() + " is not a tar file (it starts with a zero block)");
    }
    return false;
  }
  if (!checksum_ok(h)) {
    if (!have_members && pos == 0) {
      throw Error(ErrorKind::input, file.string() + " is not a tar file");
    }
    throw tar.truncated("bad header checksum at byte " + std::to_string(pos));
  }
  return true;
}

// An extended header ('x' PAX, 'g' global PAX, 'L' long name, 'K' long link) of `size`
// bytes at `data`, kept for the member that follows (a global one is skipped).
void read_extended(const TarFile& tar, char type, std::int64_t size, std::int64_t data, ExtendedHeaders& ext) {
  if (size > (16 << 20)) {
    throw tar.truncated("a " + std::string(1, type) + " header of " + std::to_string(size) + " bytes");
  }
  std::string body(static_cast<std::size_t>(size), '\0');
  if (tar.pread_all(body.data(), body.size(), data) < body.size()) {
    throw tar.truncated("an extended header breaks off");
  }
  if (type == 'x') {
    parse_pax(body, ext.pax);
  } else if (type == 'L') {
    ext.long_name = field(body.data(), body.size());
  } else if (type == 'K') {
    ext.long_link = field(body.data(), body.size());
  }
}

// The member whose header h is at pos: its name and link target from the ustar fields,
// overridden by the extended headers before it (which it uses up), and its data's
// place, checked against the file's size.
TarIndexEntry member_entry(const TarFile& tar, const std::array<char, 512>& h, char type, std::int64_t size, bool ok,
                           std::int64_t pos, ExtendedHeaders& ext) {
  TarIndexEntry e;
  std::string name = field(h.data(), 100);
  std::string_view magic(h.data() + 257, 6);
  if (magic == std::string_view("ustar\0", 6)) {
    std::string prefix = field(h.data() + 345, 155);
    if (!prefix.empty()) {
      name = prefix + "/" + name;
    }
  }
  e.link_target = field(h.data() + 157, 100);
  if (!ext.long_name.empty()) {
    name = ext.long_name;
  }
  if (!ext.long_link.empty()) {
    e.link_target = ext.long_link;
  }
  if (auto it = ext.pax.find("path"); it != ext.pax.end()) {
    name = it->second;
  }
  if (auto it = ext.pax.find("linkpath"); it != ext.pax.end()) {
    e.link_target = it->second;
  }
  if (auto it = ext.pax.find("size"); it != ext.pax.end()) {
    try {
      size = std::stoll(it->second);
    } catch (const std::exception&) {
      throw tar.truncated("a PAX size record '" + it->second + "'");
    }
  }
  if (!ok || size < 0) {
    throw tar.truncated("a bad size field at byte " + std::to_string(pos));
  }
  ext.pax.clear();
  ext.long_name.clear();
  ext.long_link.clear();
  e.path = clean_member(name);
  e.type = type;
  e.offset = pos + 512;
  e.size = (type == '1' || type == '2' || type == '5') ? 0 : size;
  if (e.offset + e.size > tar.size()) {
    throw tar.truncated("member " + e.path + " needs " + std::to_string(e.size) + " bytes at byte " +
                        std::to_string(e.offset) + ", the file has " + std::to_string(tar.size()));
  }
  return e;
}

} // namespace

std::vector<TarIndexEntry> index_tar(const fs::path& file) {
  TarFile tar(file);
  std::vector<TarIndexEntry> out;
  ExtendedHeaders ext;
  std::int64_t pos = 0;
  std::array<char, 512> h{};
  for (;;) {
    if (!read_header(tar, pos, !out.empty(), h)) {
      return out;
    }
    bool ok = true;
    std::int64_t size = octal(h.data() + 124, 12, ok);
    char type = h[156] == '\0' ? '0' : h[156];
    std::int64_t data = pos + 512;
    if (type == 'x' || type == 'g' || type == 'L' || type == 'K') {
      read_extended(tar, type, size, data, ext);
      pos = data + (size + 511) / 512 * 512;
      continue;
    }
    TarIndexEntry e = member_entry(tar, h, type, size, ok, pos, ext);
    out.push_back(e);
    pos = data + (e.size + 511) / 512 * 512;
  }
}

namespace {

// The archive's members; a file that is not a tar at all gives none (reported as "no
// manifest.json"), any other failure names the archive the way the user wrote it.
std::vector<TarIndexEntry> index_archive(const fs::path& file, const std::string& name) {
  std::vector<TarIndexEntry> members;
  try {
    members = index_tar(file);
  } catch (const Error& e) {
    std::string msg = e.what();
    if (msg.find("is not a tar file") == std::string::npos) {
      if (msg.rfind(file.string() + " ", 0) == 0) {
        msg = name + msg.substr(file.string().size());
      }
      throw Error(e.kind(), msg, e.hint());
    }
  }
  return members;
}

// A docker-archive's members by path, read whole in place.
class ArchiveMembers {
public:
  ArchiveMembers(const std::vector<TarIndexEntry>& members, const fs::path& file, const std::string& name)
      : m_file(file), m_name(name) {
    for (const auto& m : members) {
      m_by_path[m.path] = &m;
    }
  }

  bool has(const std::string& path) const { return m_by_path.count(path) != 0; }

  // The member manifest.json names, through the links (hard or symbolic) with which
  // older `docker save` stores repeated layers.
  const TarIndexEntry& find(const std::string& wanted) const {
    std::string n = wanted;
    for (int hops = 0; hops < 8; ++hops) {
      auto it = m_by_path.find(n);
      if (it == m_by_path.end()) {
        break;
      }
      const TarIndexEntry& e = *it->second;
      if (e.type == '1') {
        n = clean_member(e.link_target);
      } else if (e.type == '2') {
        n = clean_member((fs::path(n).parent_path() / e.link_target).lexically_normal().string());
      } else {
        return e;
      }
    }
    throw Error(ErrorKind::input, m_name + ": manifest.json names " + wanted + ", which the archive lacks");
  }

  // A member's bytes, refused past `max`.
  std::string read(const TarIndexEntry& e, std::int64_t max) const {
    if (e.size > max) {
      throw Error(ErrorKind::input,
                  m_name + ": member " + e.path + " is too large (" + std::to_string(e.size) + " bytes)");
    }
    return util::read_file_range(m_file, e.offset, e.size);
  }

private:
  const fs::path& m_file;
  const std::string& m_name;
  std::map<std::string, const TarIndexEntry*> m_by_path;
};

// What the first image of manifest.json names: its config and layer members and its tags.
struct ArchiveManifest {
  std::string config;
  std::vector<std::string> layers;
  std::vector<std::string> repo_tags;
};

// A RepoTags entry must be a reference with a tag ("team/app:v1", "host:5000/app:v1"),
// nothing else: it becomes a layout's ref name or a registry tag as it is.
void check_repo_tag(const std::string& t, const std::string& name) {
  bool ok = true;
  try {
    oci::ImageRef r = oci::ImageRef::parse(t);
    ok = r.kind == oci::ImageRef::Kind::registry && r.digest.empty() && !r.tag_defaulted;
  } catch (const Error&) {
    ok = false;
  }
  if (!ok) {
    throw Error(ErrorKind::input,
                name + ": manifest.json RepoTags entry '" + util::escape_bytes(t) +
                    "' is not a repository and a tag (REPOSITORY:TAG)",
                "the archive is damaged or was made by a tool that wrote a bad tag: make it again, or name the "
                "destination's tags yourself");
  }
}

// Reads manifest.json; malformed JSON or a wrong shape is an input error in our words.
ArchiveManifest parse_archive_manifest(const ArchiveMembers& members, const std::string& name) {
  ArchiveManifest am;
  try {
    auto j = nlohmann::json::parse(members.read(members.find("manifest.json"), 16 << 20));
    const auto& first = j.at(0);
    am.config = clean_member(first.at("Config").get<std::string>());
    if (first.contains("RepoTags") && first["RepoTags"].is_array()) {
      for (const auto& t : first["RepoTags"]) {
        am.repo_tags.push_back(t.get<std::string>());
      }
    }
    for (const auto& l : first.at("Layers")) {
      am.layers.push_back(clean_member(l.get<std::string>()));
    }
    for (const auto& t : am.repo_tags) {
      check_repo_tag(t, name);
    }
  } catch (const nlohmann::json::parse_error& e) {
    // Our own words, not nlohmann's (which quote the bytes it stopped at).
    throw Error(ErrorKind::input,
                name + ": manifest.json is not valid JSON (a syntax error at byte " + std::to_string(e.byte) + ")",
                "the archive is damaged or not a docker-archive: make it again with docker save or paddle-image");
  } catch (const nlohmann::json::exception&) {
    throw Error(ErrorKind::input,
                name + ": manifest.json is not a docker-archive manifest (an array whose first object has a "
                       "string Config, a Layers array of strings and optional RepoTags strings)",
                "the archive is damaged or not a docker-archive: make it again with docker save or paddle-image");
  }
  return am;
}

// A layer member as the manifest describes it: its media type, sniffed from its first
// bytes, and its digest: the diff_id for a layer stored uncompressed, else hashed in
// place once (read, never copied).
struct StoredLayer {
  std::string type;
  oci::Digest digest;
  bool compressed = false;
};

StoredLayer stored_layer(const fs::path& file, const TarIndexEntry& e, const oci::Digest& diff_id) {
  std::array<unsigned char, 4> head{};
  std::size_t n = util::file_reader(file, e.offset, std::min<std::int64_t>(e.size, 4))(
      reinterpret_cast<char*>(head.data()), head.size());
  StoredLayer l{sniff_layer_type(head.data(), n), diff_id, false};
  if (l.type != oci::media::k_layer_tar) {
    util::Sha256 h;
    auto r = util::file_reader(file, e.offset, e.size);
    std::vector<char> buf(1 << 20);
    while (std::size_t k = r(buf.data(), buf.size())) {
      h.update(buf.data(), k);
    }
    l.digest = oci::Digest::sha256(h.finish_hex());
    l.compressed = true;
  }
  return l;
}

} // namespace

ArchiveImage::ArchiveImage(const fs::path& file, std::string name) : m_file(file), m_name(std::move(name)) {
  std::vector<TarIndexEntry> entries = index_archive(file, m_name);
  ArchiveMembers members(entries, m_file, m_name);
  if (!members.has("manifest.json")) {
    throw Error(ErrorKind::input, m_name + ": no manifest.json, so not a docker-archive",
                "write one with `docker save`, `podman save` or `paddle-image pull -o docker-archive:FILE`");
  }
  ArchiveManifest am = parse_archive_manifest(members, m_name);
  m_repo_tags = am.repo_tags;
  const TarIndexEntry& cm = members.find(am.config);
  m_config_bytes = members.read(cm, 16 << 20);
  oci::Manifest man;
  man.config = oci::Descriptor{oci::media::k_config,
                               oci::Digest::sha256(util::sha256_hex(m_config_bytes)),
                               static_cast<std::int64_t>(m_config_bytes.size()),
                               {},
                               {}};
  m_blobs.push_back({man.config.digest, Blob{cm.offset, cm.size, true, -1}});
  oci::ImageConfig cfg = oci::config_from_json(oci::parse_json(m_config_bytes, m_name + ": config " + am.config));
  if (cfg.diff_ids.size() != am.layers.size()) {
    throw Error(ErrorKind::input, m_name + ": the config lists " + std::to_string(cfg.diff_ids.size()) +
                                      " diff_ids for " + std::to_string(am.layers.size()) + " layers");
  }
  for (std::size_t i = 0; i < am.layers.size(); ++i) {
    const TarIndexEntry& e = members.find(am.layers[i]);
    StoredLayer l = stored_layer(m_file, e, cfg.diff_ids[i]);
    // Stored uncompressed: its digest is its diff_id, checked by whoever copies it;
    // compressed: hashed in place, so verified.
    Blob b{e.offset, e.size, l.compressed, l.compressed ? -1 : e.size};
    man.layers.push_back(oci::Descriptor{l.type, l.digest, e.size, {}, {}});
    m_blobs.push_back({l.digest, b});
  }
  m_root = oci::manifest_blob(oci::canonical(oci::to_json(man)), oci::media::k_manifest);
}

const ArchiveImage::Blob& ArchiveImage::find(const oci::Descriptor& d) const {
  for (const auto& [digest, b] : m_blobs) {
    if (digest == d.digest) {
      return b;
    }
  }
  throw Error(ErrorKind::input, m_name + " has no blob " + d.digest.str());
}

oci::ManifestBlob ArchiveImage::manifest(const oci::Descriptor& d) const {
  if (d.digest != m_root.digest) {
    throw Error(ErrorKind::input, m_name + " has no manifest " + d.digest.str());
  }
  return m_root;
}

oci::Reader ArchiveImage::open_blob(const oci::Descriptor& d, std::int64_t offset) const {
  const Blob& b = find(d);
  return util::file_reader(m_file, b.offset + offset, b.size - offset);
}

oci::BlobHints ArchiveImage::hints(const oci::Descriptor& d) const {
  const Blob& b = find(d);
  oci::BlobHints h;
  h.verified = b.verified;
  if (b.uncompressed_size >= 0) {
    h.uncompressed_size = b.uncompressed_size;
  }
  return h;
}

namespace {

// Copies one layer into the archive as an uncompressed member, checking its diff_id
// and, when the source has not, its digest.
struct LayerCopy {
  const oci::Image& img;
  const oci::Descriptor& desc;
  const oci::Digest& diff_id;
  const oci::CopyOptions& opt;

  // Streams the uncompressed bytes into sink; returns their count.
  std::int64_t run(const ByteSink& sink) const {
    bool check_digest = !img.hints(desc).verified;
    util::Sha256 diff;
    std::int64_t n = 0;
    Decompressor dec(
        desc.media_type,
        [&](const char* p, std::size_t k) {
          diff.update(p, k);
          n += static_cast<std::int64_t>(k);
          sink(p, k);
        },
        img.name() + " layer " + desc.digest.str());
    oci::VerifyingSink v(desc, img.name(), [&](const char* p, std::size_t k) { dec.write(p, k); });
    std::int64_t read = 0;
    img.read_blob(desc, [&](const char* p, std::size_t k) {
      if (check_digest) {
        v(p, k);
      } else {
        dec.write(p, k);
      }
      read += static_cast<std::int64_t>(k);
      if (opt.progress) {
        opt.progress(desc.digest, std::min(read, desc.size), desc.size);
      }
    });
    dec.finish();
    if (check_digest) {
      v.check();
    }
    if (diff.finish_hex() != diff_id.hex) {
      throw Error(ErrorKind::integrity,
                  img.name() + ": layer " + desc.digest.str() + " does not decompress to its diff_id " + diff_id.str());
    }
    return n;
  }
};

} // namespace

oci::CopyResult write_docker_archive(const oci::Image& img, const fs::path& out, const ArchiveOptions& opt) {
  if (opt.copy.all_platforms) {
    throw Error(ErrorKind::usage,
                "docker-archive:" + out.string() + ": a docker-archive holds one platform; drop --all");
  }
  oci::ManifestBlob mb = oci::select_platform(img, opt.copy);
  oci::Manifest m = oci::manifest_from_json(oci::parse_json(mb.bytes, "manifest of " + img.name()));
  std::string config_bytes = oci::read_small_blob(img, m.config);
  oci::ImageConfig cfg = oci::config_from_json(oci::parse_json(config_bytes, "config of " + img.name()));
  if (cfg.diff_ids.size() != m.layers.size()) {
    throw Error(ErrorKind::input, img.name() + ": the config lists " + std::to_string(cfg.diff_ids.size()) +
                                      " diff_ids for " + std::to_string(m.layers.size()) + " layers");
  }
  std::error_code ec;
  if (!out.parent_path().empty()) {
    fs::create_directories(out.parent_path(), ec);
  }
  if (fs::is_directory(out, ec)) {
    throw Error(ErrorKind::input, "docker-archive output '" + out.string() + "' is a directory",
                "name a file, e.g. docker-archive:image.tar");
  }
  fs::path spool_path = out.parent_path().empty() ? fs::path(".spool") : out.parent_path() / ".spool";
  util::remove_stale_temps_beside(out);
  util::remove_stale_temps_beside(spool_path);
  util::AtomicFile file(out);
  ByteSink sink = [&](const char* d, std::size_t n) { file.write(d, n); };
  TarBuilder tar(opt.mtime, sink);

  nlohmann::json layer_names = nlohmann::json::array();
  std::set<std::string> written;
  tar.add_bytes(m.config.digest.hex + ".json", config_bytes);
  for (std::size_t i = 0; i < m.layers.size(); ++i) {
    const oci::Descriptor& d = m.layers[i];
    const oci::Digest& diff_id = cfg.diff_ids[i];
    std::string name = diff_id.hex + ".tar";
    layer_names.push_back(name);
    if (!written.insert(name).second) {
      continue;
    }
    LayerCopy copy{img, d, diff_id, opt.copy};
    oci::BlobHints h = img.hints(d);
    std::optional<std::int64_t> usize = h.uncompressed_size;
    if (!usize && compression_from_media_type(d.media_type) == Compression::none) {
      usize = d.size;
    }
    if (usize) {
      tar.add_stream(name, *usize, [&](const ByteSink& member) {
        std::int64_t n = copy.run(member);
        if (n != *usize) {
          throw Error(ErrorKind::integrity, img.name() + ": layer " + d.digest.str() + " has " + std::to_string(n) +
                                                " uncompressed bytes, not the " + std::to_string(*usize) + " expected");
        }
      });
    } else {
      // A tar header needs the size first: decompress once into a spool file.
      util::AtomicFile spool(spool_path);
      std::int64_t n = copy.run([&](const char* p, std::size_t k) { spool.write(p, k); });
      tar.add_stream(name, n, [&](const ByteSink& member) {
        auto r = util::file_reader(spool.temp_path(), 0, n);
        std::vector<char> buf(1 << 20);
        while (std::size_t k = r(buf.data(), buf.size())) {
          member(buf.data(), k);
        }
      });
    }
    if (opt.copy.progress) {
      opt.copy.progress(d.digest, d.size, d.size);
    }
  }
  nlohmann::json manifest = nlohmann::json::array();
  nlohmann::json entry = {{"Config", m.config.digest.hex + ".json"}, {"Layers", layer_names}};
  entry["RepoTags"] = opt.repo_tags;
  manifest.push_back(entry);
  tar.add_bytes("manifest.json", manifest.dump());
  if (!opt.repo_tags.empty()) {
    nlohmann::json repos = nlohmann::json::object();
    for (const auto& t : opt.repo_tags) {
      auto colon = t.rfind(':');
      repos[t.substr(0, colon)][t.substr(colon + 1)] =
          layer_names.empty() ? "" : layer_names.back().get<std::string>().substr(0, 64);
    }
    tar.add_bytes("repositories", repos.dump());
  }
  tar.finish();
  file.commit();
  oci::CopyResult res;
  res.manifest = mb;
  res.refs.push_back("docker-archive:" + out.string() + "@" + mb.digest.str());
  return res;
}

} // namespace layers
