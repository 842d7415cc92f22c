#include "layers/docker_archive.hpp"

#include "layers/compress.hpp"
#include "layers/tar.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/sha256.hpp"

#include <nlohmann/json.hpp>
#include <set>

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
