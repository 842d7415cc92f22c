#include "registry/transfer.hpp"

#include "util/encoding.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <fcntl.h>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>
#include <unistd.h>

namespace registry {

using util::Error;
using util::ErrorKind;
namespace fs = std::filesystem;

void parallel_for(std::size_t n, int jobs, const std::function<void(std::size_t)>& fn) {
  std::atomic<std::size_t> next{0};
  std::atomic<bool> stop{false};
  std::exception_ptr first;
  std::mutex m;
  auto work = [&] {
    while (!stop) {
      std::size_t i = next++;
      if (i >= n) {
        return;
      }
      try {
        fn(i);
      } catch (...) {
        std::lock_guard<std::mutex> g(m);
        if (!first) {
          first = std::current_exception();
        }
        stop = true;
      }
    }
  };
  std::size_t k = std::min<std::size_t>(n, static_cast<std::size_t>(std::max(jobs, 1)));
  std::vector<std::thread> threads;
  for (std::size_t t = 1; t < k; ++t) {
    threads.emplace_back(work);
  }
  work();
  for (auto& t : threads) {
    t.join();
  }
  if (first) {
    std::rethrow_exception(first);
  }
}

Reader file_reader(const fs::path& file, std::int64_t offset) {
  int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    util::throw_errno("open " + file.string());
  }
  auto holder = std::shared_ptr<int>(new int(fd), [](int* p) {
    ::close(*p);
    delete p;
  });
  auto pos = std::make_shared<std::int64_t>(offset);
  return [holder, pos, file](char* buf, std::size_t len) -> std::size_t {
    while (true) {
      ssize_t n = ::pread(*holder, buf, len, static_cast<off_t>(*pos));
      if (n < 0 && errno == EINTR) {
        continue;
      }
      if (n < 0) {
        util::throw_errno("read " + file.string());
      }
      *pos += n;
      return static_cast<std::size_t>(n);
    }
  };
}

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

BlobOpener opener_for(const BlobLocation& loc, const oci::Descriptor& d) {
  if (!loc.file.empty()) {
    return [file = loc.file](std::int64_t offset) { return file_reader(file, offset); };
  }
  return [loc, d](std::int64_t offset) -> Reader {
    auto pipe = std::make_shared<RemotePipe>(loc.registry, loc.repo, d, offset);
    return [pipe](char* buf, std::size_t len) { return pipe->read(buf, len); };
  };
}

std::vector<oci::Descriptor> image_blobs(const ManifestData& m, const std::string& name) {
  nlohmann::json j = oci::parse_json(m.bytes, "manifest of " + name);
  std::vector<oci::Descriptor> out;
  std::set<std::string> seen;
  auto add = [&](const nlohmann::json& dj) {
    oci::Descriptor d = oci::descriptor_from_json(dj);
    if (dj.contains("urls") || !seen.insert(d.digest.str()).second) {
      return; // foreign layers stay where their URLs point
    }
    out.push_back(d);
  };
  try {
    add(j.at("config"));
    for (const auto& l : j.at("layers")) {
      add(l);
    }
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::input, "manifest of " + name + " is not an image manifest: " + e.what());
  }
  return out;
}

std::vector<oci::Descriptor> index_children(const ManifestData& m, const std::string& name) {
  oci::Index idx = oci::index_from_json(oci::parse_json(m.bytes, "index of " + name));
  return idx.manifests;
}

std::string platform_str(const oci::Platform& p) {
  return p.os + "/" + p.architecture + (p.variant.empty() ? "" : "/" + p.variant);
}

} // namespace

ImageSource layout_source(const oci::ImageRef& ref) {
  auto layout = std::make_shared<oci::OciLayout>(oci::OciLayout::open_existing(ref.path));
  oci::Descriptor d = layout->resolve(ref.tag);
  ImageSource s;
  s.name = ref.str();
  auto read = [layout](const oci::Descriptor& desc) {
    ManifestData m;
    m.bytes = layout->blobs().read_small(desc.digest);
    m.digest = desc.digest;
    m.media_type = desc.media_type.empty() ? sniff_media_type(m.bytes) : desc.media_type;
    return m;
  };
  s.root = read(d);
  s.manifest = read;
  s.locate = [layout, name = s.name](const oci::Descriptor& desc) {
    BlobLocation loc;
    loc.file = layout->blobs().blob_path(desc.digest);
    std::error_code ec;
    auto size = fs::file_size(loc.file, ec);
    if (ec || static_cast<std::int64_t>(size) != desc.size) {
      throw Error(ErrorKind::integrity, name + ": blob " + desc.digest.str() + " is missing or has the wrong size",
                  "the layout is incomplete; build or pull it again");
    }
    return loc;
  };
  return s;
}

ImageSource registry_source(std::shared_ptr<Registry> reg, const oci::ImageRef& ref) {
  ImageSource s;
  s.name = ref.str();
  std::string repo = ref.repository;
  s.root = reg->get_manifest(repo, ref.digest.empty() ? ref.tag : ref.digest);
  s.manifest = [reg, repo](const oci::Descriptor& d) { return reg->get_manifest(repo, d.digest.str()); };
  s.locate = [reg, repo](const oci::Descriptor&) { return BlobLocation{{}, reg, repo}; };
  return s;
}

ManifestData select_platform(const ImageSource& src, const ManifestData& root, const oci::Platform& p) {
  if (!root.is_index()) {
    return root;
  }
  std::vector<std::string> seen;
  for (const auto& d : index_children(root, src.name)) {
    if (!d.platform) {
      continue;
    }
    seen.push_back(platform_str(*d.platform));
    if (d.platform->os == p.os && d.platform->architecture == p.architecture &&
        (p.variant.empty() || d.platform->variant == p.variant)) {
      ManifestData m = src.manifest(d);
      if (m.digest != d.digest) {
        throw Error(ErrorKind::integrity, src.name + ": child manifest " + d.digest.str() + " does not match");
      }
      return m;
    }
  }
  throw Error(ErrorKind::incompatible,
              src.name + " has no image for " + platform_str(p) +
                  (seen.empty() ? "" : " (it has " + util::join(seen, ", ") + ")"),
              "choose one with --platform, or copy all with --all");
}

namespace {

struct Plan {
  ManifestData top;
  std::vector<ManifestData> images; // image manifests, children before the index
};

Plan plan_for(const ImageSource& src, const TransferOptions& opt) {
  Plan p;
  if (opt.all_platforms && src.root.is_index()) {
    p.top = src.root;
    for (const auto& d : index_children(src.root, src.name)) {
      p.images.push_back(src.manifest(d));
    }
  } else {
    p.top = select_platform(src, src.root, opt.platform);
    p.images.push_back(p.top);
  }
  return p;
}

} // namespace

TransferResult push_image(const ImageSource& src, const std::shared_ptr<Registry>& reg, const std::string& repo,
                          const std::vector<std::string>& tags, const TransferOptions& opt) {
  Plan plan = plan_for(src, opt);
  TransferResult res;
  res.manifest = plan.top;
  Stats& st = reg->stats();
  for (const ManifestData& img : plan.images) {
    std::vector<oci::Descriptor> blobs = image_blobs(img, src.name);
    if (reg->head_manifest(repo, img.digest.str())) {
      // The registry holds this manifest, so it holds all its blobs.
      for (const auto& b : blobs) {
        st.bytes_skipped += b.size;
        ++st.blobs_skipped;
      }
      if (opt.info) {
        opt.info(reg->host() + "/" + repo + " already has " + img.digest.str());
      }
    } else {
      parallel_for(blobs.size(), opt.jobs, [&](std::size_t i) {
        const oci::Descriptor& d = blobs[i];
        if (reg->blob_size(repo, d.digest)) {
          st.bytes_skipped += d.size;
          ++st.blobs_skipped;
          if (opt.progress) {
            opt.progress(d.digest, d.size, d.size);
          }
          return;
        }
        BlobLocation loc = src.locate(d);
        if (loc.registry && loc.registry->host() == reg->host() && loc.repo != repo) {
          try {
            if (reg->mount_blob(repo, d.digest, loc.repo)) {
              st.bytes_mounted += d.size;
              ++st.blobs_mounted;
              if (opt.progress) {
                opt.progress(d.digest, d.size, d.size);
              }
              return;
            }
          } catch (const Error& e) {
            if (opt.info) {
              opt.info("mounting " + d.digest.str() + " from " + loc.repo + " failed (" + e.what() + "); uploading");
            }
          }
        }
        reg->upload_blob(repo, d, opener_for(loc, d), opt.progress);
      });
      // Children go by digest; the top manifest gets the tags.
      if (plan.images.size() > 1 || tags.empty()) {
        reg->put_manifest(repo, img.digest.str(), img);
      }
    }
  }
  if (plan.images.size() > 1 && !reg->head_manifest(repo, plan.top.digest.str())) {
    if (tags.empty()) {
      reg->put_manifest(repo, plan.top.digest.str(), plan.top);
    }
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
  return res;
}

TransferResult write_layout(const ImageSource& src, const fs::path& dir, const std::vector<std::string>& tags,
                            const TransferOptions& opt) {
  Plan plan = plan_for(src, opt);
  TransferResult res;
  res.manifest = plan.top;
  auto lock = oci::OciLayout::lock_dir(dir);
  auto layout = oci::OciLayout::open_or_create(dir);
  layout.blobs().remove_stale_temps();
  for (const ManifestData& img : plan.images) {
    std::vector<oci::Descriptor> blobs = image_blobs(img, src.name);
    parallel_for(blobs.size(), opt.jobs, [&](std::size_t i) {
      const oci::Descriptor& d = blobs[i];
      if (layout.blobs().has(d.digest)) {
        if (opt.progress) {
          opt.progress(d.digest, d.size, d.size);
        }
        return;
      }
      BlobLocation loc = src.locate(d);
      if (!loc.file.empty()) {
        layout.blobs().put_file(d.digest, loc.file);
      } else {
        loc.registry->download_blob(loc.repo, d, layout.blobs(), opt.progress);
      }
    });
    auto md = layout.blobs().put_bytes(img.media_type, img.bytes);
    (void)md;
  }
  if (plan.images.size() > 1) {
    layout.blobs().put_bytes(plan.top.media_type, plan.top.bytes);
  }
  oci::Descriptor top = plan.top.descriptor();
  if (!plan.top.is_index()) {
    try {
      auto cj = oci::parse_json(plan.top.bytes, src.name);
      oci::Descriptor cfg = oci::descriptor_from_json(cj.at("config"));
      oci::ImageConfig c = oci::config_from_json(oci::parse_json(layout.blobs().read_small(cfg.digest), src.name));
      top.platform = oci::Platform{c.architecture, c.os, c.variant};
    } catch (const std::exception&) {
    }
  }
  layout.add_manifest(top, tags);
  for (const auto& t : tags) {
    res.refs.push_back("oci:" + dir.string() + ":" + t + "@" + plan.top.digest.str());
  }
  if (tags.empty()) {
    res.refs.push_back("oci:" + dir.string() + "@" + plan.top.digest.str());
  }
  return res;
}

} // namespace registry
