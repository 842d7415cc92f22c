#include "registry/client.hpp"

#include "registry/error.hpp"
#include "util/error.hpp"
#include "util/sha256.hpp"
#include "util/url.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <unistd.h>

namespace registry {

using util::Error;
using util::ErrorKind;

std::string manifest_accept() {
  return std::string("Accept: ") + oci::media::k_manifest + ", " + oci::media::k_index + ", " +
         oci::media::k_docker_manifest + ", " + oci::media::k_docker_index;
}

Registry::Registry(std::string host, std::shared_ptr<Transport> http, ClientOptions options, Credential credential,
                   Stats& stats)
    : m_session(std::move(host), std::move(http), std::move(options), std::move(credential), stats) {}

std::string Registry::repo_url(const std::string& repo) const {
  return m_session.base_url() + "/v2/" + repo;
}

void Registry::ping() {
  m_session.ping();
}

void Registry::verify_login() {
  m_session.verify_login();
}

std::optional<std::int64_t> Registry::blob_size(const std::string& repo, const oci::Digest& d) {
  Response r = m_session.send(
      [&] {
        Request q;
        q.method = "HEAD";
        q.url = repo_url(repo) + "/blobs/" + d.str();
        return q;
      },
      pull_scope(repo), "checking blob " + d.str() + " in " + repo, {200, 404});
  if (r.status == 404) {
    return std::nullopt;
  }
  std::string len = r.headers.get("content-length");
  return len.empty() ? std::int64_t{-1} : std::stoll(len);
}

void Registry::fetch_blob(const std::string& repo, const oci::Descriptor& d, std::int64_t offset,
                          const std::function<void(const char*, std::size_t)>& sink,
                          const std::function<void()>& restart, const Progress& progress) {
  std::int64_t pos = offset;
  std::int64_t last_report = 0;
  m_session.send(
      [&] {
        Request q;
        q.url = repo_url(repo) + "/blobs/" + d.digest.str();
        if (pos > 0) {
          q.headers.push_back("Range: bytes=" + std::to_string(pos) + "-");
          m_session.log(1, "resuming download of " + d.digest.str() + " at byte " + std::to_string(pos));
        }
        q.on_body_start = [&](long status) {
          if (status == 200 && pos > 0) {
            restart();
            pos = 0;
          }
        };
        q.sink = [&](const char* data, std::size_t len) {
          sink(data, len);
          pos += static_cast<std::int64_t>(len);
          stats().bytes_downloaded += static_cast<std::int64_t>(len);
          if (progress && (pos - last_report >= (1 << 20) || pos == d.size)) {
            last_report = pos;
            progress(d.digest, pos, d.size);
          }
          return true;
        };
        return q;
      },
      pull_scope(repo), "downloading " + d.digest.str() + " from " + repo, {200, 206});
  // Counted here, once per blob fetched to its end, so blobs_downloaded and
  // bytes_downloaded agree whoever fetched it (a layout, a streamed copy, a config).
  if (pos == d.size) {
    ++stats().blobs_downloaded;
  }
}

std::string Registry::read_blob_head(const std::string& repo, const oci::Digest& d, std::size_t max_bytes) {
  struct Enough {}; // thrown out of the sink once max_bytes are here: the transfer stops
  std::string out;
  try {
    m_session.send(
        [&] {
          out.clear();
          Request q;
          q.url = repo_url(repo) + "/blobs/" + d.str();
          q.headers.push_back("Range: bytes=0-" + std::to_string(max_bytes - 1));
          q.sink = [&](const char* data, std::size_t len) {
            std::size_t take = std::min(len, max_bytes - out.size());
            out.append(data, take);
            stats().bytes_downloaded += static_cast<std::int64_t>(take);
            if (out.size() >= max_bytes) {
              throw Enough{};
            }
            return true;
          };
          return q;
        },
        pull_scope(repo), "reading the start of " + d.str() + " from " + repo, {200, 206});
  } catch (const Enough&) { // NOLINT(bugprone-empty-catch): the bytes asked for are here
  }
  return out;
}

void Registry::download_blob(const std::string& repo, const oci::Descriptor& d, oci::BlobStore& store,
                             const Progress& progress) {
  auto tmp = store.begin_write();
  download_into(repo, d, *tmp, progress);
  store.commit(*tmp, d.digest);
}

std::string Registry::read_blob(const std::string& repo, const oci::Descriptor& d, std::int64_t max_size) {
  if (d.size > max_size) {
    throw Error(ErrorKind::input, d.digest.str() + " in " + repo + " is " + std::to_string(d.size) +
                                      " bytes, more than expected for a config");
  }
  std::string out;
  fetch_blob(
      repo, d, 0,
      [&](const char* data, std::size_t len) {
        out.append(data, len);
        if (static_cast<std::int64_t>(out.size()) > d.size) {
          throw Error(ErrorKind::integrity, host() + "/" + repo + " served more than " + std::to_string(d.size) +
                                                " bytes for " + d.digest.str());
        }
      },
      [&] { out.clear(); });
  std::string got = util::sha256_hex(out);
  if (got != d.digest.hex) {
    throw Error(ErrorKind::integrity,
                host() + "/" + repo + " served content for " + d.digest.str() + " hashing to sha256:" + got,
                "the registry or a proxy corrupted the blob");
  }
  return out;
}

void Registry::download_into(const std::string& repo, const oci::Descriptor& d, util::AtomicFile& tmp_file,
                             const Progress& progress) {
  util::AtomicFile* tmp = &tmp_file;
  auto hash = std::make_unique<util::Sha256>();
  std::int64_t n = 0;
  // libcurl hands over a few KiB at a time; hashing and writing go in 1 MiB batches.
  constexpr std::size_t k_batch = 1u << 20;
  std::string batch;
  batch.reserve(k_batch);
  auto flush = [&] {
    hash->update(batch.data(), batch.size());
    tmp->write(batch.data(), batch.size());
    batch.clear();
  };
  fetch_blob(
      repo, d, 0,
      [&](const char* data, std::size_t len) {
        n += static_cast<std::int64_t>(len);
        if (n > d.size) {
          throw Error(ErrorKind::integrity, host() + "/" + repo + " served more than the " + std::to_string(d.size) +
                                                " bytes of " + d.digest.str());
        }
        batch.append(data, len);
        if (batch.size() >= k_batch) {
          flush();
        }
      },
      [&] {
        batch.clear();
        if (::ftruncate(tmp->fd(), 0) != 0 || ::lseek(tmp->fd(), 0, SEEK_SET) != 0) {
          util::throw_errno("truncating " + tmp->temp_path().string());
        }
        hash = std::make_unique<util::Sha256>();
        n = 0;
      },
      progress);
  flush();
  std::string got = hash->finish_hex();
  if (n != d.size || got != d.digest.hex) {
    throw Error(ErrorKind::integrity,
                host() + "/" + repo + " served content for " + d.digest.str() + " that does not match it (got " +
                    std::to_string(n) + " bytes hashing to sha256:" + got + ")",
                "the registry or a proxy corrupted the blob; nothing was stored. Try again, or check the registry");
  }
}

bool Registry::mount_blob(const std::string& repo, const oci::Digest& d, const std::string& from_repo) {
  Response r = m_session.send(
      [&] {
        Request q;
        q.method = "POST";
        q.url = repo_url(repo) + "/blobs/uploads/?mount=" + util::percent_encode(d.str()) +
                "&from=" + util::percent_encode(from_repo);
        return q;
      },
      push_scope(repo) + " " + pull_scope(from_repo), "mounting " + d.str() + " from " + from_repo, {201, 202});
  if (r.status == 201) {
    return true;
  }
  // 202: the registry opened an upload session instead; cancel it (best effort).
  std::string loc = r.headers.get("location");
  if (!loc.empty()) {
    try {
      m_session.send(
          [&] {
            Request q;
            q.method = "DELETE";
            q.url = m_session.absolute(loc);
            return q;
          },
          push_scope(repo), "cancelling an upload", {204, 404, 405}, true);
    } catch (const Error& e) {
      // Best effort: an abandoned session expires on its own in the registry, and the
      // caller goes on to upload the blob, so this failure changes nothing.
      m_session.log(2, "cancelling the upload session " + loc + " failed (ignored): " + e.what());
    }
  }
  return false;
}

void Registry::upload_blob(const std::string& repo, const oci::Descriptor& d, const BlobOpener& open,
                           const Progress& progress) {
  m_session.ping();
  Upload(m_session, m_upload_hints, repo, d, open, progress).run();
}

std::optional<oci::Descriptor> Registry::head_manifest(const std::string& repo, const std::string& reference) {
  Response r = m_session.send(
      [&] {
        Request q;
        q.method = "HEAD";
        q.url = repo_url(repo) + "/manifests/" + reference;
        q.headers.push_back(manifest_accept());
        return q;
      },
      pull_scope(repo), "checking manifest " + repo + ":" + reference, {200, 404});
  if (r.status == 404) {
    return std::nullopt;
  }
  oci::Descriptor d;
  d.media_type = r.headers.get("content-type");
  std::string dig = r.headers.get("docker-content-digest");
  if (dig.empty()) {
    return std::nullopt; // cannot tell without the bytes
  }
  d.digest = oci::Digest::parse(dig);
  std::string len = r.headers.get("content-length");
  d.size = len.empty() ? 0 : std::stoll(len);
  return d;
}

ManifestData Registry::get_manifest(const std::string& repo, const std::string& reference) {
  std::string what =
      "reading manifest " + host() + "/" + repo + (reference.find(':') != std::string::npos ? "@" : ":") + reference;
  Response r = m_session.send(
      [&] {
        Request q;
        q.url = repo_url(repo) + "/manifests/" + reference;
        q.headers.push_back(manifest_accept());
        q.max_body = 4u << 20;
        return q;
      },
      pull_scope(repo), what, {200, 404}, true);
  if (r.status == 404) {
    ErrorBody body = parse_error_body(r.body);
    throw RegistryError(r.status, body.codes, what + ": not found (" + body.summary + ")",
                        "check the repository and tag; `paddle-image tags " + host() + "/" + repo +
                            "` lists the tags there");
  }
  if (r.status != 200) {
    m_session.fail_status(r, what, pull_scope(repo));
  }
  ManifestData m;
  m.bytes = r.body;
  std::string got = util::sha256_hex(m.bytes);
  if (reference.rfind("sha256:", 0) == 0 && reference.substr(7) != got) {
    throw Error(ErrorKind::integrity, what + ": the registry served bytes hashing to sha256:" + got,
                "the registry or a proxy corrupted the manifest");
  }
  std::string hdr = r.headers.get("docker-content-digest");
  if (!hdr.empty() && hdr.rfind("sha256:", 0) == 0 && hdr.substr(7) != got) {
    throw Error(ErrorKind::integrity,
                what + ": Docker-Content-Digest says " + hdr + " but the bytes hash to sha256:" + got,
                "the registry or a proxy corrupted the manifest");
  }
  m.digest = oci::Digest::sha256(got);
  m.media_type = oci::sniff_media_type(m.bytes);
  std::string ct = r.headers.get("content-type");
  if (!ct.empty() && ct.find("json") != std::string::npos && ct != "application/json") {
    m.media_type = ct.substr(0, ct.find(';'));
  }
  return m;
}

void Registry::put_manifest(const std::string& repo, const std::string& reference, const ManifestData& m) {
  m_session.send(
      [&] {
        Request q;
        q.method = "PUT";
        q.url = repo_url(repo) + "/manifests/" + reference;
        q.headers.push_back("Content-Type: " + m.media_type);
        q.body = m.bytes;
        return q;
      },
      push_scope(repo), "putting manifest " + m.digest.str() + " as " + repo + ":" + reference, {201, 200});
  ++stats().manifests_put;
}

void Registry::delete_manifest(const std::string& repo, const oci::Digest& d) {
  std::string what = "deleting manifest " + host() + "/" + repo + "@" + d.str();
  Response r = m_session.send(
      [&] {
        Request q;
        q.method = "DELETE";
        q.url = repo_url(repo) + "/manifests/" + d.str();
        return q;
      },
      push_scope(repo), what, {202, 200, 404, 405}, true);
  if (r.status == 405) {
    ErrorBody body = parse_error_body(r.body);
    throw RegistryError(r.status, body.codes, what + ": the registry does not allow deletes (405)",
                        "enable deletes on the registry (distribution: storage.delete.enabled: true, or "
                        "REGISTRY_STORAGE_DELETE_ENABLED=true), or prune with the registry's own tools");
  }
  if (r.status != 202 && r.status != 200 && r.status != 404) {
    m_session.fail_status(r, what, push_scope(repo));
  }
}

std::vector<std::string> Registry::list_tags(const std::string& repo) {
  std::vector<std::string> out;
  m_session.ping();
  std::string url = repo_url(repo) + "/tags/list?n=1000";
  for (int page = 0; page < 10000 && !url.empty(); ++page) {
    Response r = m_session.send(
        [&] {
          Request q;
          q.url = url;
          return q;
        },
        pull_scope(repo), "listing tags of " + repo, {200});
    try {
      auto j = nlohmann::json::parse(r.body);
      if (j.contains("tags") && j["tags"].is_array()) {
        for (const auto& t : j["tags"]) {
          out.push_back(t.get<std::string>());
        }
      }
    } catch (const nlohmann::json::exception&) {
      throw Error(ErrorKind::registry, host() + ": the tag list of " + repo + " is not valid JSON");
    }
    std::string link = r.headers.get("link");
    url.clear();
    auto lt = link.find('<');
    auto gt = link.find('>');
    if (lt != std::string::npos && gt != std::string::npos && link.find("rel=\"next\"") != std::string::npos) {
      url = m_session.absolute(link.substr(lt + 1, gt - lt - 1));
    }
  }
  return out;
}

oci::Index Registry::referrers(const std::string& repo, const oci::Digest& d, bool* used_fallback) {
  Response r = m_session.send(
      [&] {
        Request q;
        q.url = repo_url(repo) + "/referrers/" + d.str();
        q.headers.push_back(std::string("Accept: ") + oci::media::k_index);
        return q;
      },
      pull_scope(repo), "listing referrers of " + d.str(), {200, 404}, true);
  if (r.status == 200 && r.headers.get("content-type").find(oci::media::k_index) != std::string::npos) {
    if (used_fallback) {
      *used_fallback = false;
    }
    return oci::index_from_json(oci::parse_json(r.body, "referrers of " + d.str()));
  }
  if (used_fallback) {
    *used_fallback = true;
  }
  std::string tag = d.algorithm + "-" + d.hex;
  if (!head_manifest(repo, tag)) {
    return oci::Index{};
  }
  ManifestData m = get_manifest(repo, tag);
  return oci::index_from_json(oci::parse_json(m.bytes, "referrers tag " + tag));
}

} // namespace registry
