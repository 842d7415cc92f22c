#include "builder/remote_sources.hpp"

#include "builder/debs.hpp"
#include "builder/image_sources.hpp"
#include "layers/extract.hpp"
#include "spec/sources_lock.hpp"
#include "util/encoding.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/process.hpp"
#include "util/sha256.hpp"
#include "util/url.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <fstream>
#include <map>
#include <unistd.h>

namespace builder {

using util::Error;
using util::ErrorKind;
namespace fs = std::filesystem;

namespace {

// What fetching a source needs: the cache, the options' transport, the events.
struct Fetching {
  layers::LayerCache& cache;
  const BuildOptions& options;
  const Events& events;
};

// The downloaded file in the blob store, fetched now when the cache lacks it.
// fetcher->fetch(url), an error from the transport named by the rule's file:line (the
// checks' own errors name it already).
void fetch_for_rule(DebsFetcher& fetcher, const std::string& url, const std::string& origin,
                    const std::function<void(const char*, std::size_t)>& write, const std::function<void()>& restart) {
  try {
    fetcher.fetch(url, write, restart);
  } catch (const Error& e) {
    if (std::string_view(e.what()).rfind(origin, 0) == 0) {
      throw;
    }
    std::rethrow_exception(e.in_context(origin));
  }
}

// The blob store's key of a download by its SHA-256: the same for every URL that serves it.
std::string download_key(const std::string& sha256) {
  return util::sha256_hex("remote-file\n" + sha256);
}

fs::path fetch_remote(const spec::RemoteSpec& r, const std::string& origin, const Fetching& cx,
                      std::unique_ptr<DebsFetcher>& fetcher, bool& downloaded) {
  const std::string shown = util::redact_url(r.url);
  auto mismatch = [&](const std::string& got, const std::string& detail) {
    return Error(ErrorKind::integrity,
                 origin + ": " + shown + " " + detail + "; expected sha256:" + r.sha256 +
                     (r.size >= 0 ? " (" + std::to_string(r.size) + " bytes)" : "") + ", got " +
                     (got.empty() ? std::string("more") : "sha256:" + got) + "; nothing was stored",
                 "the server sends other bytes than the spec pins: if the file was republished on purpose, check it "
                 "and put its new sha256 in the spec");
  };
  layers::BlobInfo blob = layers::cached_download(
      cx.cache, download_key(r.sha256), "application/octet-stream",
      [&](const layers::DownloadSink& write, const std::function<void()>& restart) {
        if (!fetcher) {
          fetcher = url_fetcher({r.url}, cx.options);
        }
        std::int64_t size = 0;
        cx.events.info("  downloading " + shown);
        fetch_for_rule(
            *fetcher, r.url, origin,
            [&](const char* data, std::size_t len) {
              size += static_cast<std::int64_t>(len);
              if (r.size >= 0 && size > r.size) {
                throw mismatch("", "sends more than " + std::to_string(r.size) + " bytes");
              }
              write(data, len);
            },
            [&] {
              size = 0;
              restart();
            });
      },
      [&](const std::string& got, std::int64_t size) {
        if (got != r.sha256) {
          throw mismatch(got, "sent " + std::to_string(size) + " bytes of other content");
        }
        if (r.size >= 0 && size != r.size) {
          throw mismatch(got, "sent " + std::to_string(size) + " bytes");
        }
      },
      downloaded);
  if (blob.digest.hex != r.sha256) {
    throw Error(ErrorKind::integrity, origin + ": the cache holds other bytes for " + shown,
                "run paddle-image cache prune --all");
  }
  return cx.cache.blobs().blob_path(blob.digest);
}

// Moves a finished staging directory to `dest`; another build that got there first wins.
void publish_dir(const fs::path& staged, const fs::path& dest) {
  util::create_dirs(dest.parent_path(), "the cache's sources directory");
  if (::rename(staged.c_str(), dest.c_str()) != 0 && errno != EEXIST && errno != ENOTEMPTY) {
    util::throw_errno("cannot rename " + staged.string() + " to " + dest.string());
  }
}

// Unpacks `archive` as the rule says (strip_components, include) into `dir`/tree: in a
// staging directory first, then moved into place whole. `what` names it in errors and
// in the line that tells what was unpacked.
void unpack_into(const spec::RemoteSpec& r, const fs::path& archive, const fs::path& dir, const std::string& what,
                 const LayerContext& cx) {
  layers::ExtractOptions eo;
  eo.strip_components = r.strip_components;
  eo.include = r.include;
  util::TempDir tmp(cx.cache.layout().staging(), "source-");
  layers::ExtractResult res = layers::extract_archive(archive, tmp.path() / "tree", eo, what);
  cx.events.info("  unpacked " + what + ": " + std::to_string(res.members) + " entries (" + std::to_string(res.bytes) +
                 " bytes)" + (res.skipped > 0 ? ", " + std::to_string(res.skipped) + " left out" : ""));
  publish_dir(tmp.path(), dir);
}

// The rule's file or tree in the cache's sources directory.
fs::path lay_out(const spec::RemoteSpec& r, const std::string& origin, const fs::path& file, const LayerContext& cx) {
  KeyHasher id;
  id.add({{"remote-source", 1},
          {"sha256", r.sha256},
          {"extract", r.extract},
          {"strip_components", r.strip_components},
          {"include", r.include},
          {"filename", r.extract ? "" : r.filename}});
  const fs::path dir = cx.cache.layout().sources() / id.finish();
  const fs::path out = r.extract ? dir / "tree" : dir / r.filename;
  std::error_code ec;
  if (fs::exists(out, ec)) {
    return out;
  }
  util::create_dirs(cx.cache.layout().staging(), "the cache's staging directory");
  if (r.extract) {
    unpack_into(r, file, dir, origin + ": " + util::redact_url(r.url), cx);
    return out;
  }
  util::TempDir tmp(cx.cache.layout().staging(), "source-");
  util::link_or_copy(file, tmp.path() / r.filename);
  publish_dir(tmp.path(), dir);
  return out;
}

// Runs git with the environment a build wants: no prompt, no system config.
std::string run_git(const std::vector<std::string>& args, const std::string& what) {
  std::vector<std::string> argv{"git"};
  argv.insert(argv.end(), args.begin(), args.end());
  util::ProcessOptions po;
  po.env_set = {"GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_NOSYSTEM=1", "GIT_ASKPASS=/bin/false", "LC_ALL=C"};
  po.timeout_s = 1800;
  util::ProcessResult r = util::run_process(argv, po, "install git (apt-get install git)");
  if (r.exit_code != 0) {
    std::string err = util::redact_text(r.err);
    while (!err.empty() && (err.back() == '\n' || err.back() == ' ')) {
      err.pop_back();
    }
    throw Error(ErrorKind::network, what + ": " + (r.timed_out ? std::string("git timed out") : err),
                "check that the repository is reachable and holds the commit (git's credentials come from its "
                "credential helpers or ~/.netrc)");
  }
  return r.out;
}

// A git source's tree in the cache: fetched at its commit, exported without .git
// (git archive, umask 022) and unpacked as an archive is. Keyed by the commit and the
// extraction only: the same commit from a mirror is the same tree.
fs::path lay_out_git(const spec::RemoteSpec& r, const std::string& origin, const LayerContext& cx, bool& fetched) {
  KeyHasher id;
  id.add(
      {{"git-source", 1}, {"commit", r.git_commit}, {"strip_components", r.strip_components}, {"include", r.include}});
  const fs::path dir = cx.cache.layout().sources() / id.finish();
  const fs::path out = dir / "tree";
  std::error_code ec;
  fetched = false;
  if (fs::exists(out, ec)) {
    return out;
  }
  fetched = true;
  const std::string shown = util::redact_url(r.url);
  const std::string what = origin + ": " + shown + " at " + r.git_commit;
  util::create_dirs(cx.cache.layout().staging(), "the cache's staging directory");
  util::TempDir tmp(cx.cache.layout().staging(), "source-");
  // Absolute: git runs with -C in the repository.
  const std::string repo = fs::absolute(tmp.path() / "repo.git").string();
  cx.events.info("  fetching " + shown + " at " + r.git_commit);
  run_git({"init", "-q", "--bare", repo}, what);
  try {
    run_git({"-C", repo, "fetch", "-q", "--depth", "1", "--no-tags", r.url, r.git_commit}, what);
  } catch (const Error&) {
    // A server that serves only its refs' tips: everything, then the commit among it.
    run_git({"-C", repo, "fetch", "-q", "--no-tags", r.url, "+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*"},
            what);
  }
  try {
    run_git({"-C", repo, "cat-file", "-e", r.git_commit + "^{commit}"}, what);
  } catch (const Error&) {
    throw Error(ErrorKind::input, what + ": the repository has no such commit",
                "git ls-remote " + shown + " lists what it has; pin one of its commits");
  }
  const std::string tar = fs::absolute(tmp.path() / "export.tar").string();
  run_git({"-C", repo, "-c", "tar.umask=0022", "archive", "--format=tar", "-o", tar, r.git_commit}, what);
  unpack_into(r, tar, dir, what, cx);
  return out;
}

} // namespace

bool has_remote_sources(const spec::LayerSpec& l) {
  if (const auto* c = l.as_copy()) {
    for (const auto& cs : c->copies) {
      if (cs.remote || cs.image) {
        return true;
      }
    }
  }
  return false;
}

bool spec_has_remote_sources(const spec::BuildSpec& s) {
  return std::any_of(s.layers.begin(), s.layers.end(), [](const spec::LayerSpec& l) { return has_remote_sources(l); });
}

spec::LayerSpec with_remote_sources(const spec::LayerSpec& l, const LayerContext& cx, nlohmann::json& report) {
  spec::LayerSpec out = l;
  report = nlohmann::json::array();
  std::unique_ptr<DebsFetcher> fetcher;
  for (auto& cs : out.copy().copies) {
    if (cs.image) {
      nlohmann::json e;
      cs.from = lay_out_image(cs, cx, e);
      cs.allow_outside = true;
      cs.allow_absolute_symlinks = true; // the image's own links, as COPY --from keeps them
      cs.ignore.clear();
      cs.ignore_prefix.clear();
      report.push_back(e);
      continue;
    }
    if (!cs.remote) {
      continue;
    }
    const spec::RemoteSpec& r = *cs.remote;
    bool downloaded = false;
    cs.allow_outside = true;
    cs.ignore.clear();
    cs.ignore_prefix.clear();
    if (r.is_git()) {
      cs.from = lay_out_git(r, cs.origin, cx, downloaded);
      report.push_back(
          {{"git", util::redact_url(r.url)}, {"commit", r.git_commit}, {"to", cs.to}, {"downloaded", downloaded}});
      continue;
    }
    fs::path file = fetch_remote(r, cs.origin, Fetching{cx.cache, cx.options, cx.events}, fetcher, downloaded);
    cs.from = lay_out(r, cs.origin, file, cx);
    report.push_back({{"url", util::redact_url(r.url)},
                      {"sha256", r.sha256},
                      {"size", static_cast<std::int64_t>(fs::file_size(file))},
                      {"extract", r.extract},
                      {"to", cs.to},
                      {"downloaded", downloaded}});
  }
  return out;
}

// --- paddle-image lock --sources ---

namespace {

// Streams `file` (a download on this machine) to `write` in pieces.
void stream_file(const fs::path& file, const layers::DownloadSink& write) {
  std::ifstream in(file, std::ios::binary);
  std::vector<char> buf(std::size_t{1} << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    if (in.gcount() > 0) {
      write(buf.data(), static_cast<std::size_t>(in.gcount()));
    }
  }
  if (in.bad()) {
    util::throw_errno("cannot read " + file.string());
  }
}

// Downloads an unpinned file once, hashing it as it streams, and keeps it in the blob
// store under the key a build looks it up by: the build that follows sends no request.
spec::SourcesLock::Download lock_download(const spec::RemoteSpec& r, const std::string& origin, const Fetching& f,
                                          std::unique_ptr<DebsFetcher>& fetcher) {
  const std::string shown = util::redact_url(r.url);
  util::create_dirs(f.cache.layout().staging(), "the cache's staging directory");
  util::TempDir tmp(f.cache.layout().staging(), "lock-");
  const fs::path file = tmp.path() / "download";
  util::Sha256 hash;
  std::int64_t size = 0;
  {
    util::AtomicFile out(file, tmp.path());
    if (!fetcher) {
      fetcher = url_fetcher({r.url}, f.options);
    }
    f.events.info("  downloading " + shown + " to hash it");
    fetch_for_rule(
        *fetcher, r.url, origin,
        [&](const char* data, std::size_t len) {
          out.write(data, len);
          hash.update(data, len);
          size += static_cast<std::int64_t>(len);
          if (r.size >= 0 && size > r.size) {
            throw Error(ErrorKind::integrity,
                        origin + ": " + shown + " sends more than the spec's size of " + std::to_string(r.size) +
                            " bytes; nothing was locked",
                        "check the URL, or correct size: in the spec");
          }
        },
        [&] {
          if (::ftruncate(out.fd(), 0) != 0 || ::lseek(out.fd(), 0, SEEK_SET) != 0) {
            util::throw_errno("cannot rewind " + out.temp_path().string());
          }
          hash.reset();
          size = 0;
        });
    out.commit();
  }
  spec::SourcesLock::Download d{r.url, hash.finish_hex(), size};
  if (r.size >= 0 && size != r.size) {
    throw Error(ErrorKind::integrity,
                origin + ": " + shown + " sent " + std::to_string(size) + " bytes, the spec's size is " +
                    std::to_string(r.size) + "; nothing was locked",
                "check the URL, or correct size: in the spec");
  }
  bool stored = false;
  layers::cached_download(
      f.cache, download_key(d.sha256), "application/octet-stream",
      [&](const layers::DownloadSink& write, const std::function<void()>&) { stream_file(file, write); },
      [&](const std::string& got, std::int64_t) {
        if (got != d.sha256) {
          throw Error(ErrorKind::io, file.string() + " changed while it was stored in the cache");
        }
      },
      stored);
  return d;
}

bool is_commit(const std::string& s) {
  return s.size() == 40 && util::is_lower_hex(s);
}

// The commit a branch or tag of the repository names now, as git looks a name up:
// an annotated tag's commit, then a tag, then a branch, then the ref as written (HEAD).
std::string resolve_ref(const spec::RemoteSpec& r, const std::string& origin) {
  if (is_commit(r.git_ref)) {
    return r.git_ref;
  }
  const std::string shown = util::redact_url(r.url);
  std::string listing = run_git({"ls-remote", "--", r.url}, origin + ": " + shown);
  std::map<std::string, std::string> refs;
  std::size_t pos = 0;
  while (pos < listing.size()) {
    std::size_t end = listing.find('\n', pos);
    std::string line = listing.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    pos = end == std::string::npos ? listing.size() : end + 1;
    std::size_t tab = line.find('\t');
    if (tab == 40 && is_commit(line.substr(0, 40))) {
      refs[line.substr(41)] = line.substr(0, 40);
    }
  }
  for (const std::string& name :
       {"refs/tags/" + r.git_ref + "^{}", "refs/tags/" + r.git_ref, "refs/heads/" + r.git_ref, r.git_ref}) {
    if (auto it = refs.find(name); it != refs.end()) {
      return it->second;
    }
  }
  throw Error(ErrorKind::input, origin + ": " + shown + " has no branch or tag '" + r.git_ref + "'",
              "git ls-remote " + shown + " lists its branches and tags; correct ref: in the spec");
}

// An image source's digest for the spec's platform: the old lock's, else resolved now.
void lock_image(const spec::BuildSpec& s, const spec::CopySpec& cs, const BuildOptions& o, const Events& ev,
                const std::optional<spec::SourcesLock>& old, SourcesLockResult& out) {
  const spec::ImageSourceSpec& im = *cs.image;
  const std::string platform = oci::platform_str(s.platform);
  if (out.lock.image_pin(im.ref, platform) != nullptr) {
    return;
  }
  const auto* kept = old ? old->image_pin(im.ref, platform) : nullptr;
  std::string digest = kept ? kept->digest : image_source_digest(im, s.platform, o, ev, cs.origin);
  out.lock.images.push_back({im.ref, platform, digest});
  out.entries.push_back({{"origin", cs.origin},
                         {"image", im.ref},
                         {"platform", platform},
                         {"digest", digest},
                         {"resolved", kept == nullptr}});
  ev.info("  " + im.ref + " (" + platform + "): " + digest + (kept ? " (kept)" : ""));
}

} // namespace

void check_sources_pinned(const spec::BuildSpec& s) {
  std::vector<const spec::CopySpec*> open = spec::unpinned_sources(s);
  if (open.empty()) {
    return;
  }
  std::string what;
  if (const auto& im = open.front()->image) {
    what = "image " + im->ref + " has no digest for " + oci::platform_str(s.platform);
  } else {
    const spec::RemoteSpec& r = *open.front()->remote;
    what = r.is_git() ? util::redact_url(r.url) + " at ref " + r.git_ref + " has no commit"
                      : util::redact_url(r.url) + " has no sha256";
  }
  std::string more = open.size() > 1 ? " (and " + std::to_string(open.size() - 1) + " more source(s))" : "";
  throw Error(ErrorKind::input,
              open.front()->origin + ": " + what + " in the spec or in " + s.sources_lock.filename().string() + more +
                  ": a build fetches nothing that is not pinned",
              "run paddle-image lock --sources --spec " + s.file.string() +
                  " (it fetches each source once, records its sha256 or commit in " +
                  s.sources_lock.filename().string() + "; commit that file with the spec)");
}

SourcesLockResult lock_sources(const spec::BuildSpec& s, const BuildOptions& o, bool update, const Events& ev) {
  SourcesLockResult out;
  out.file = s.sources_lock;
  out.entries = nlohmann::json::array();
  std::optional<spec::SourcesLock> old = update ? std::nullopt : spec::read_sources_lock(s.sources_lock);
  layers::LayerCache cache(o.cache_dir, ev.debug);
  auto cache_use = cache.use();
  Fetching f{cache, o, ev};
  std::unique_ptr<DebsFetcher> fetcher;
  for (const auto& l : s.layers) {
    const spec::CopyLayerSpec* c = l.as_copy();
    if (c == nullptr) {
      continue;
    }
    for (const auto& cs : c->copies) {
      if (cs.image && cs.image->pinned_by != "spec") {
        lock_image(s, cs, o, ev, old, out);
        continue;
      }
      if (!cs.remote || cs.remote->pinned_by == "spec") {
        continue;
      }
      const spec::RemoteSpec& r = *cs.remote;
      nlohmann::json e = {{"origin", cs.origin}, {"layer", l.name}};
      if (r.is_git()) {
        if (out.lock.git_pin(r.url, r.git_ref) != nullptr) {
          continue;
        }
        const auto* kept = old ? old->git_pin(r.url, r.git_ref) : nullptr;
        std::string commit = kept ? kept->commit : resolve_ref(r, cs.origin);
        out.lock.git.push_back({r.url, r.git_ref, commit});
        e.update({{"git", util::redact_url(r.url)}, {"ref", r.git_ref}, {"commit", commit}, {"resolved", !kept}});
        ev.info("  " + util::redact_url(r.url) + " " + r.git_ref + ": " + commit + (kept ? " (kept)" : ""));
      } else {
        if (out.lock.download(r.url) != nullptr) {
          continue;
        }
        const auto* kept = old ? old->download(r.url) : nullptr;
        spec::SourcesLock::Download d = kept ? *kept : lock_download(r, cs.origin, f, fetcher);
        out.lock.downloads.push_back(d);
        e.update({{"url", util::redact_url(r.url)}, {"sha256", d.sha256}, {"size", d.size}, {"downloaded", !kept}});
        ev.info("  " + util::redact_url(r.url) + ": sha256:" + d.sha256 + " (" + std::to_string(d.size) + " bytes)" +
                (kept ? " (kept)" : ""));
      }
      out.entries.push_back(e);
    }
  }
  out.text = spec::sources_lock_text(out.lock);
  return out;
}

} // namespace builder
