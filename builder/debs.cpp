#include "builder/debs.hpp"

#include "builder/base.hpp"
#include "python/wheel_fetch.hpp"
#include "util/encoding.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/sha256.hpp"
#include "util/url.hpp"

namespace builder {

using util::Error;
using util::ErrorKind;
namespace fs = std::filesystem;

std::string dpkg_architecture(const oci::Platform& p) {
  if (p.architecture == "amd64" || p.architecture == "arm64") {
    return p.architecture;
  }
  throw Error(ErrorKind::input, "a debs layer installs packages for linux/amd64 or linux/arm64, not " + p.architecture);
}

debian::Request debs_request(const spec::BuildSpec& s, const spec::LayerSpec& l) {
  debian::Request r;
  r.packages = l.debs().packages;
  r.architecture = dpkg_architecture(s.platform);
  for (const auto& rs : l.debs().repositories) {
    r.repositories.push_back(debian::Repository{rs.url, rs.suite, rs.components, rs.keyring, rs.origin});
  }
  return r;
}

std::string landing_dpkg_status(const layers::BaseView& view, const std::string& where) {
  const auto& contents = view.contents();
  auto it = contents.find("var/lib/dpkg/status");
  if (it != contents.end()) {
    return it->second;
  }
  const layers::ViewNode* n = view.find("var/lib/dpkg/status");
  if (n != nullptr && n->type == '0') {
    throw Error(ErrorKind::input,
                where + ": the base's var/lib/dpkg/status (" + std::to_string(n->size) + " bytes) is too large to read",
                "a debs layer needs the base's dpkg status to know what is installed");
  }
  return "";
}

std::unique_ptr<DebsFetcher> debs_fetcher(const spec::LayerSpec& l, const BuildOptions& o) {
  std::vector<std::string> urls;
  for (const auto& r : l.debs().repositories) {
    urls.push_back(r.url);
  }
  return url_fetcher(urls, o);
}

std::unique_ptr<DebsFetcher> url_fetcher(const std::vector<std::string>& urls, const BuildOptions& o) {
  auto f = std::make_unique<DebsFetcher>();
  python::Sources src;
  src.sources.netrc = o.index.defaults.netrc;
  for (const auto& u : urls) {
    src.sources.find_links.push_back(u); // for --insecure's hosts; never listed as a page
  }
  f->index = python::open_index(src, o.index, f->stats);
  python::PackageIndex* idx = f->index.get();
  f->fetch = [idx](const std::string& url, const std::function<void(const char*, std::size_t)>& write,
                   const std::function<void()>& restart) {
    python::IndexFile file;
    file.url = url;
    file.filename = url.substr(url.rfind('/') + 1);
    file.page = url;
    try {
      idx->download(file, write, restart);
    } catch (const util::Error& e) {
      // The index client's hint speaks of a package index's listing; this URL is the spec's.
      if (e.hint().find("the index lists a file") == std::string::npos) {
        throw;
      }
      throw util::Error(e.kind(), e.what(),
                        "check the URL: the server has no such file (a download's URL is in the spec, an apt "
                        "repository's in its debs layer)");
    }
  };
  return f;
}

const spec::LayerSpec* debs_layer_named(const spec::BuildSpec& s, const std::string& layer) {
  const spec::LayerSpec* only = nullptr;
  int lockable = 0;
  for (const auto& l : s.layers) {
    if (!layer.empty() && l.name == layer) {
      return l.as_debs() != nullptr ? &l : nullptr;
    }
    if (l.as_debs() != nullptr || l.from_index()) {
      ++lockable;
      if (l.as_debs() != nullptr) {
        only = &l;
      }
    }
  }
  return layer.empty() && lockable == 1 ? only : nullptr;
}

DebsLockResult lock_debs(const spec::BuildSpec& s, const std::string& layer_name, const BuildOptions& o,
                         const Events& ev) {
  const spec::LayerSpec* l = debs_layer_named(s, layer_name);
  if (l == nullptr) {
    throw Error(ErrorKind::usage,
                s.file.string() + " has no debs layer" + (layer_name.empty() ? "" : " '" + layer_name + "'"),
                "name it with --layer NAME");
  }
  const std::string where = l->origin + ": layer '" + l->name + "'";
  debian::Request req = debs_request(s, *l);
  layers::LayerCache cache(o.cache_dir, ev.debug);
  auto cache_use = cache.use();
  Base base = open_build_base(s, o, cache, ev);
  std::string status = base.view ? landing_dpkg_status(*base.view, where) : "";
  auto fetcher = debs_fetcher(*l, o);
  util::TempDir work(cache.layout().staging(), "debs-lock-");
  std::vector<debian::RepositoryIndex> repos;
  DebsLockResult out;
  for (const auto& r : req.repositories) {
    ev.info("  verifying " + util::redact_url(r.url) + " " + r.suite + " (" + util::join(r.components, " ") +
            ") with " + r.keyring.string());
    repos.push_back(debian::fetch_repository(r, req.architecture, fetcher->fetch, work.path()));
    out.lock.release_sha256.push_back(repos.back().release_sha256);
    out.lock.signed_by.push_back(repos.back().signed_by);
  }
  ev.info("  resolving " + util::join(req.packages, " ") + " with apt against the base's " +
          (status.empty() ? "empty dpkg status" : "dpkg status"));
  debian::Resolution res = debian::resolve(repos, status, req.packages, req.architecture, work.path(), where);
  out.lock.request = req;
  out.lock.base_status_sha256 = status.empty() ? "" : util::sha256_hex(status);
  out.lock.packages = res.packages;
  out.lock.already = res.already;
  out.text = debian::lock_text(out.lock);
  out.file = l->debs().lock_file;
  out.layer = l->name;
  return out;
}

} // namespace builder
