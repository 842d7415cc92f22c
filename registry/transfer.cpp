#include "registry/transfer.hpp"

#include "registry/error.hpp"

#include "util/encoding.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/parallel.hpp"

#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

namespace registry {

using util::Error;
using util::ErrorKind;

namespace {

struct Cancelled {};

// Streams a blob from a registry through a bounded buffer filled by a background
// download (registry-to-registry copies: never stored, never recompressed).
class RemotePipe {
public:
  RemotePipe(std::shared_ptr<Registry> reg, std::string repo, oci::Descriptor d, std::int64_t offset) : m_pos(offset) {
    m_thread = std::thread([this, reg, repo, d, offset] {
      try {
        reg->fetch_blob(
            repo, d, offset,
            [this](const char* data, std::size_t len) {
              std::unique_lock<std::mutex> g(m_mutex);
              if (m_skip > 0) {
                std::size_t k =
                    static_cast<std::size_t>(std::min<std::int64_t>(m_skip, static_cast<std::int64_t>(len)));
                m_skip -= static_cast<std::int64_t>(k);
                data += k;
                len -= k;
              }
              m_cv.wait(g, [this] { return m_cancelled || m_buffered < (8u << 20); });
              if (m_cancelled) {
                throw Cancelled{};
              }
              if (len > 0) {
                m_chunks.emplace_back(data, len);
                m_buffered += len;
                m_fetched += static_cast<std::int64_t>(len);
              }
              m_cv.notify_all();
            },
            [this] {
              // The source ignored our Range: skip what was already passed on.
              std::lock_guard<std::mutex> g(m_mutex);
              m_skip = m_pos + m_fetched;
              m_pos = 0;
              m_fetched = 0;
            });
      } catch (const Cancelled&) {
      } catch (...) {
        std::lock_guard<std::mutex> g(m_mutex);
        m_error = std::current_exception();
      }
      std::lock_guard<std::mutex> g(m_mutex);
      m_done = true;
      m_cv.notify_all();
    });
  }
  ~RemotePipe() {
    {
      std::lock_guard<std::mutex> g(m_mutex);
      m_cancelled = true;
      m_cv.notify_all();
    }
    m_thread.join();
  }
  std::size_t read(char* buf, std::size_t len) {
    std::unique_lock<std::mutex> g(m_mutex);
    m_cv.wait(g, [this] { return !m_chunks.empty() || m_done; });
    if (m_chunks.empty()) {
      if (m_error) {
        std::rethrow_exception(m_error);
      }
      return 0;
    }
    std::string& front = m_chunks.front();
    std::size_t k = std::min(len, front.size() - m_front_off);
    std::memcpy(buf, front.data() + m_front_off, k);
    m_front_off += k;
    if (m_front_off == front.size()) {
      m_buffered -= front.size();
      m_chunks.pop_front();
      m_front_off = 0;
      m_cv.notify_all();
    }
    return k;
  }

private:
  std::mutex m_mutex;
  std::condition_variable m_cv;
  std::deque<std::string> m_chunks;
  std::size_t m_front_off = 0;
  std::size_t m_buffered = 0;
  std::int64_t m_pos;
  std::int64_t m_fetched = 0;
  std::int64_t m_skip = 0;
  bool m_done = false;
  bool m_cancelled = false;
  std::exception_ptr m_error;
  std::thread m_thread;
};

class RemoteImage : public oci::Image {
public:
  RemoteImage(std::shared_ptr<Registry> reg, const oci::ImageRef& ref)
      : m_reg(std::move(reg)), m_repo(ref.repository), m_name(ref.str()) {
    m_root = m_reg->get_manifest(m_repo, ref.digest.empty() ? ref.tag : ref.digest);
  }
  const std::string& name() const override { return m_name; }
  const oci::ManifestBlob& root() const override { return m_root; }
  oci::ManifestBlob manifest(const oci::Descriptor& d) const override {
    return m_reg->get_manifest(m_repo, d.digest.str());
  }
  // Streams through a bounded buffer filled by a background download (a push to
  // another registry reads this way: nothing is stored).
  oci::Reader open_blob(const oci::Descriptor& d, std::int64_t offset) const override {
    auto pipe = std::make_shared<RemotePipe>(m_reg, m_repo, d, offset);
    return [pipe](char* buf, std::size_t len) { return pipe->read(buf, len); };
  }
  // A download that resumes with Range requests; when the server ignores the range
  // and starts again at 0, what was passed on already is skipped. Handed on in 1 MiB
  // batches (libcurl delivers a few KiB at a time).
  void read_blob(const oci::Descriptor& d, const oci::Sink& sink) const override {
    constexpr std::size_t k_batch = 1u << 20;
    std::string batch;
    batch.reserve(k_batch);
    std::int64_t passed = 0; // bytes handed to sink or batched
    std::int64_t skip = 0;
    m_reg->fetch_blob(
        m_repo, d, 0,
        [&](const char* data, std::size_t len) {
          if (skip > 0) {
            auto k = static_cast<std::size_t>(std::min<std::int64_t>(skip, static_cast<std::int64_t>(len)));
            skip -= static_cast<std::int64_t>(k);
            data += k;
            len -= k;
          }
          passed += static_cast<std::int64_t>(len);
          if (passed > d.size) {
            throw Error(ErrorKind::integrity, m_reg->host() + "/" + m_repo + " served more than the " +
                                                  std::to_string(d.size) + " bytes of " + d.digest.str());
          }
          batch.append(data, len);
          if (batch.size() >= k_batch) {
            sink(batch.data(), batch.size());
            batch.clear();
          }
        },
        [&] { skip = passed; });
    if (!batch.empty()) {
      sink(batch.data(), batch.size());
    }
  }
  oci::BlobHints hints(const oci::Descriptor&) const override {
    oci::BlobHints h;
    h.registry = m_reg->host();
    h.repository = m_repo;
    h.verified = false;
    return h;
  }
  // cosign's tags (sha256-<hex>.sig/.att/.sbom, probed with HEAD) and the referrers
  // API (or its fallback tag sha256-<hex>).
  std::vector<oci::Attachment> attachments(const oci::Digest& subject) const override {
    std::vector<oci::Attachment> out;
    std::vector<std::string> tags = oci::attachment_tags(subject);
    for (std::size_t i = 0; i + 1 < tags.size(); ++i) {
      if (auto d = m_reg->head_manifest(m_repo, tags[i])) {
        out.push_back(oci::Attachment{*d, tags[i]});
      }
    }
    bool fallback = false;
    oci::Index idx = m_reg->referrers(m_repo, subject, &fallback);
    if (fallback) {
      if (!idx.manifests.empty()) {
        if (auto d = m_reg->head_manifest(m_repo, tags.back())) {
          out.push_back(oci::Attachment{*d, tags.back()});
        }
      }
    } else {
      for (const auto& r : idx.manifests) {
        out.push_back(oci::Attachment{r, ""});
      }
    }
    return out;
  }

private:
  std::shared_ptr<Registry> m_reg;
  std::string m_repo;
  std::string m_name;
  oci::ManifestBlob m_root;
};

// One blob into reg/repo: skipped when there, mounted from another repository of the
// same registry, else uploaded from a local file or the source's stream.
void push_blob(const oci::Image& img, const oci::Descriptor& d, Registry& reg, const std::string& repo,
               const TransferOptions& opt) {
  Stats& st = reg.stats();
  auto settled = [&](const std::string& how) {
    st.record(BlobOutcome{reg.host(), repo, d.digest.str(), d.size, how});
    if (opt.settled) {
      opt.settled(d.digest, d.size, how);
    } else if (opt.progress) {
      opt.progress(d.digest, d.size, d.size);
    }
  };
  if (reg.blob_size(repo, d.digest)) {
    st.bytes_skipped += d.size;
    ++st.blobs_skipped;
    settled("already there");
    return;
  }
  oci::BlobHints h = img.hints(d);
  if (!h.registry.empty() && h.registry == reg.host() && h.repository != repo) {
    try {
      if (reg.mount_blob(repo, d.digest, h.repository)) {
        st.bytes_mounted += d.size;
        ++st.blobs_mounted;
        settled("mounted from " + h.repository);
        return;
      }
    } catch (const Error& e) {
      if (opt.info) {
        opt.info("mounting " + d.digest.str() + " from " + h.repository + " failed (" + e.what() + "); uploading");
      }
    }
  }
  oci::BlobOpener open;
  if (!h.file.empty()) {
    open = [file = h.file](std::int64_t offset) { return util::file_reader(file, offset); };
  } else {
    open = [&img, d](std::int64_t offset) { return img.open_blob(d, offset); };
  }
  reg.upload_blob(repo, d, open, opt.progress);
  st.record(BlobOutcome{reg.host(), repo, d.digest.str(), d.size, "uploaded"});
}

void push_blobs(const oci::Image& img, const oci::ManifestBlob& m, Registry& reg, const std::string& repo,
                const TransferOptions& opt) {
  std::vector<oci::Descriptor> blobs = oci::image_blobs(m, img.name());
  util::parallel_for(blobs.size(), opt.jobs, [&](std::size_t i) { push_blob(img, blobs[i], reg, repo, opt); });
}

} // namespace

RegistryAttachments::RegistryAttachments(std::shared_ptr<Registry> reg, std::string repo)
    : m_reg(std::move(reg)), m_repo(std::move(repo)) {}

std::optional<oci::ManifestBlob> RegistryAttachments::tagged(const std::string& tag) {
  // A GET, not a HEAD: a registry that answers HEAD without Docker-Content-Digest
  // must not make an existing signature look absent (it would be overwritten).
  try {
    return m_reg->get_manifest(m_repo, tag);
  } catch (const RegistryError& e) {
    if (e.status() == 404) {
      return std::nullopt;
    }
    throw;
  }
}

std::string RegistryAttachments::read_small(const oci::Descriptor& d) {
  return m_reg->read_blob(m_repo, d);
}

void RegistryAttachments::put_blob(const oci::Descriptor& d, const std::string& bytes) {
  if (m_reg->blob_size(m_repo, d.digest)) {
    return;
  }
  auto data = std::make_shared<std::string>(bytes);
  m_reg->upload_blob(m_repo, d, [data](std::int64_t offset) -> oci::Reader {
    auto pos = std::make_shared<std::size_t>(static_cast<std::size_t>(offset));
    return [data, pos](char* buf, std::size_t len) {
      std::size_t n = std::min(len, data->size() - std::min(*pos, data->size()));
      std::copy_n(data->data() + *pos, n, buf);
      *pos += n;
      return n;
    };
  });
}

void RegistryAttachments::put_manifest(const std::string& tag, const oci::ManifestBlob& m) {
  m_reg->put_manifest(m_repo, tag, m);
}

oci::ImagePtr open_registry_image(std::shared_ptr<Registry> reg, const oci::ImageRef& ref) {
  return std::make_shared<RemoteImage>(std::move(reg), ref);
}

TransferResult push_image(const oci::Image& img, const std::shared_ptr<Registry>& reg, const std::string& repo,
                          const std::vector<std::string>& tags, const TransferOptions& opt, bool check_blobs) {
  oci::CopyPlan plan = oci::plan_copy(img, opt);
  TransferResult res;
  res.manifest = plan.top;
  Stats& st = reg->stats();
  bool multi = plan.images.size() > 1;
  for (const oci::ManifestBlob& m : plan.images) {
    bool have = reg->head_manifest(repo, m.digest.str()).has_value();
    if (have && check_blobs) {
      // A mirror that lost a blob still answers for the manifest: HEAD every blob and
      // upload what is missing (warm push --to repairs it).
      push_blobs(img, m, *reg, repo, opt);
      if (opt.info) {
        opt.info(reg->host() + "/" + repo + " already has " + m.digest.str() + "; its blobs were checked");
      }
      continue;
    }
    if (have) {
      // The registry holds this manifest, so it holds all its blobs.
      for (const auto& b : oci::image_blobs(m, img.name())) {
        st.bytes_skipped += b.size;
        ++st.blobs_skipped;
      }
      if (opt.info) {
        opt.info(reg->host() + "/" + repo + " already has " + m.digest.str());
      }
      continue;
    }
    push_blobs(img, m, *reg, repo, opt);
    // Children go by digest; the top manifest gets the tags.
    if (multi || tags.empty()) {
      reg->put_manifest(repo, m.digest.str(), m);
    }
  }
  if (multi && tags.empty() && !reg->head_manifest(repo, plan.top.digest.str())) {
    reg->put_manifest(repo, plan.top.digest.str(), plan.top);
  }
  for (const auto& t : tags) {
    auto have = reg->head_manifest(repo, t);
    if (!have || have->digest != plan.top.digest) {
      reg->put_manifest(repo, t, plan.top);
    }
    res.refs.push_back(reg->host() + "/" + repo + ":" + t + "@" + plan.top.digest.str());
  }
  if (tags.empty()) {
    res.refs.push_back(reg->host() + "/" + repo + "@" + plan.top.digest.str());
  }
  // Attachments: their blobs, then the manifest under its tag (or by digest);
  // signatures and attestations merge with what the tag already holds.
  RegistryAttachments store(reg, repo);
  for (const auto& a : plan.attached) {
    if (!a.manifest.is_index()) {
      push_blobs(img, a.manifest, *reg, repo, opt);
    }
    if (oci::is_mergeable_attachment_tag(a.attachment.tag)) {
      oci::merge_attachment(store, a.attachment.tag, a.manifest, reg->host() + "/" + repo);
      ++res.attachments;
      continue;
    }
    const std::string& ref = a.attachment.tag.empty() ? a.manifest.digest.str() : a.attachment.tag;
    auto have = reg->head_manifest(repo, ref);
    if (!have || have->digest != a.manifest.digest) {
      reg->put_manifest(repo, ref, a.manifest);
    }
    if (!a.attachment.tag.empty()) {
      ++res.attachments;
    }
  }
  return res;
}

} // namespace registry
