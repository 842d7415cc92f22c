#include "layers/docker_archive.hpp"

#include "layers/compress.hpp"
#include "layers/tar.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/sha256.hpp"

#include <archive.h>
#include <archive_entry.h>
#include <array>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string_view>

namespace layers {

void write_docker_archive(const std::filesystem::path& out, const std::string& config_bytes,
                          const oci::Digest& config_digest, const std::vector<ArchiveLayer>& layers,
                          const std::vector<std::string>& repo_tags, std::int64_t mtime) {
  std::error_code ec;
  if (!out.parent_path().empty()) {
    std::filesystem::create_directories(out.parent_path(), ec);
  }
  if (std::filesystem::is_directory(out, ec)) {
    throw util::Error(util::ErrorKind::input, "docker-archive output '" + out.string() + "' is a directory",
                      "name a file, e.g. docker-archive:image.tar");
  }
  util::AtomicFile file(out);
  ByteSink sink = [&](const char* d, std::size_t n) { file.write(d, n); };
  TarBuilder tar(mtime, sink);

  nlohmann::json layer_names = nlohmann::json::array();
  std::set<std::string> written;
  tar.add_bytes(config_digest.hex + ".json", config_bytes);
  for (const auto& l : layers) {
    std::string name = l.diff_id.hex + ".tar";
    layer_names.push_back(name);
    if (!written.insert(name).second) {
      continue;
    }
    std::int64_t size = 0;
    if (l.uncompressed_size) {
      size = *l.uncompressed_size;
    } else {
      decompress_file(l.blob, l.media_type, [&](const char*, std::size_t n) { size += static_cast<std::int64_t>(n); });
    }
    tar.add_stream(name, size, [&](const ByteSink& member) {
      util::Sha256 h;
      decompress_file(l.blob, l.media_type, [&](const char* d, std::size_t n) {
        h.update(d, n);
        member(d, n);
      });
      if (h.finish_hex() != l.diff_id.hex) {
        throw util::Error(util::ErrorKind::integrity,
                          "layer " + l.blob.string() + " does not decompress to its diff_id " + l.diff_id.str());
      }
    });
  }
  nlohmann::json manifest = nlohmann::json::array();
  nlohmann::json entry = {{"Config", config_digest.hex + ".json"}, {"Layers", layer_names}};
  entry["RepoTags"] = repo_tags;
  manifest.push_back(entry);
  tar.add_bytes("manifest.json", manifest.dump());
  if (!repo_tags.empty()) {
    nlohmann::json repos = nlohmann::json::object();
    for (const auto& t : repo_tags) {
      auto colon = t.rfind(':');
      repos[t.substr(0, colon)][t.substr(colon + 1)] =
          layer_names.empty() ? "" : layer_names.back().get<std::string>().substr(0, 64);
    }
    tar.add_bytes("repositories", repos.dump());
  }
  tar.finish();
  file.commit();
}

} // namespace layers

namespace layers {

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

std::string sniff_layer_type(const unsigned char* b, std::size_t n) {
  if (n >= 2 && b[0] == 0x1f && b[1] == 0x8b) {
    return oci::media::k_layer_gzip;
  }
  if (n >= 4 && b[0] == 0x28 && b[1] == 0xb5 && b[2] == 0x2f && b[3] == 0xfd) {
    return oci::media::k_layer_zstd;
  }
  return oci::media::k_layer_tar;
}

// The first 512-byte header block carries the POSIX/GNU "ustar" magic at offset 257.
bool looks_like_tar(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::array<char, 512> block{};
  if (!in.read(block.data(), block.size())) {
    return false;
  }
  return std::string_view(block.data() + 257, 5) == "ustar";
}

} // namespace

oci::Descriptor import_docker_archive(const std::filesystem::path& file, oci::OciLayout& layout, const std::string& tag,
                                      std::vector<std::string>* repo_tags) {
  using util::Error;
  using util::ErrorKind;
  std::string what = "docker-archive " + file.string();
  std::string manifest_text;
  try {
    scan_tar(
        file, [](const TarMember& m) { return m.path == "manifest.json"; },
        [&](const TarMember&, const std::string& c) { manifest_text = c; });
  } catch (const Error& e) {
    // A tar that breaks off (a copy or download cut short) fails mid-way: say so rather
    // than "no manifest.json". Anything that is not a tar at all is reported below.
    if (looks_like_tar(file)) {
      throw Error(
          ErrorKind::input, what + " is truncated or corrupt (" + std::string(e.what()).substr(0, 200) + ")",
          "copy or save the archive again (`docker save`, `podman save`, paddle-image pull -o docker-archive:FILE)");
    }
    manifest_text.clear();
  }
  if (manifest_text.empty()) {
    throw Error(ErrorKind::input, what + ": no manifest.json, so not a docker-archive",
                "write one with `docker save`, `podman save` or `paddle-image pull -o docker-archive:FILE`");
  }
  std::string config_name;
  std::vector<std::string> layer_names;
  try {
    auto j = nlohmann::json::parse(manifest_text);
    const auto& first = j.at(0);
    config_name = clean_member(first.at("Config").get<std::string>());
    if (repo_tags != nullptr && first.contains("RepoTags") && first["RepoTags"].is_array()) {
      for (const auto& t : first["RepoTags"]) {
        repo_tags->push_back(t.get<std::string>());
      }
    }
    for (const auto& l : first.at("Layers")) {
      layer_names.push_back(clean_member(l.get<std::string>()));
    }
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::input, what + ": manifest.json is not a docker-archive manifest (" + e.what() + ")");
  }
  std::set<std::string> wanted(layer_names.begin(), layer_names.end());
  wanted.insert(config_name);
  std::map<std::string, oci::Descriptor> got;
  std::map<std::string, std::string> links; // older `docker save` links repeated layers
  struct archive* a = archive_read_new();
  std::unique_ptr<struct archive, decltype(&archive_read_free)> guard(a, archive_read_free);
  archive_read_support_format_tar(a);
  if (archive_read_open_filename(a, file.c_str(), 1 << 20) != ARCHIVE_OK) {
    throw Error(ErrorKind::input, "cannot read " + what + ": " + archive_error_string(a));
  }
  archive_entry* e = nullptr;
  int rc = 0;
  std::vector<char> buf(1 << 20);
  while ((rc = archive_read_next_header(a, &e)) == ARCHIVE_OK || rc == ARCHIVE_WARN) {
    std::string name = clean_member(archive_entry_pathname(e) ? archive_entry_pathname(e) : "");
    if (!wanted.count(name) || got.count(name)) {
      continue;
    }
    if (archive_entry_hardlink(e) != nullptr || archive_entry_filetype(e) == AE_IFLNK) {
      const char* target = archive_entry_hardlink(e) ? archive_entry_hardlink(e) : archive_entry_symlink(e);
      std::string t = target ? std::string(target) : std::string();
      if (archive_entry_filetype(e) == AE_IFLNK) {
        t = (std::filesystem::path(name).parent_path() / t).lexically_normal().string();
      }
      links[name] = clean_member(t);
      continue;
    }
    auto tmp = layout.blobs().begin_write();
    util::Sha256 h;
    std::int64_t size = 0;
    std::string type;
    la_ssize_t n = 0;
    while ((n = archive_read_data(a, buf.data(), buf.size())) > 0) {
      if (type.empty()) {
        type = sniff_layer_type(reinterpret_cast<const unsigned char*>(buf.data()), static_cast<std::size_t>(n));
      }
      h.update(buf.data(), static_cast<std::size_t>(n));
      tmp->write(buf.data(), static_cast<std::size_t>(n));
      size += n;
    }
    if (n < 0) {
      throw Error(ErrorKind::integrity, what + ": member " + name + " is corrupt: " + archive_error_string(a));
    }
    oci::Digest d = oci::Digest::sha256(h.finish_hex());
    layout.blobs().commit(*tmp, d);
    got[name] = oci::Descriptor{name == config_name ? oci::media::k_config
                                : type.empty()      ? oci::media::k_layer_tar
                                                    : type,
                                d,
                                size,
                                {},
                                {}};
  }
  if (rc != ARCHIVE_EOF) {
    throw Error(ErrorKind::input, what + ": " + archive_error_string(a));
  }
  auto find = [&](const std::string& name) {
    std::string n = name;
    for (int hops = 0; hops < 8 && !got.count(n) && links.count(n); ++hops) {
      n = links[n];
    }
    auto it = got.find(n);
    if (it == got.end()) {
      throw Error(ErrorKind::input, what + ": manifest.json names " + name + ", which the archive lacks");
    }
    return it->second;
  };
  oci::Manifest m;
  m.config = find(config_name);
  m.config.media_type = oci::media::k_config;
  for (const auto& l : layer_names) {
    m.layers.push_back(find(l));
  }
  oci::ImageConfig cfg = oci::config_from_json(oci::parse_json(layout.blobs().read_small(m.config.digest), what));
  if (cfg.diff_ids.size() != m.layers.size()) {
    throw Error(ErrorKind::input, what + ": the config lists " + std::to_string(cfg.diff_ids.size()) +
                                      " diff_ids for " + std::to_string(m.layers.size()) + " layers");
  }
  oci::Descriptor md = layout.blobs().put_bytes(oci::media::k_manifest, oci::canonical(oci::to_json(m)));
  md.platform = oci::Platform{cfg.architecture, cfg.os, cfg.variant};
  layout.add_manifest(md, {tag});
  return md;
}

} // namespace layers
