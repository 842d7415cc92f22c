#include "imageio/copy.hpp"

#include "imageio/publish.hpp"
#include "util/error.hpp"

#include <utility>

namespace imageio {

using util::Error;
using util::ErrorKind;

std::string archive_repository(const oci::ImageRef& src_ref, const std::string& archive_repo, const oci::Manifest& m,
                               const oci::ImageConfig& cfg, const std::string& name_flag) {
  auto parse_name = [](const std::string& text, const std::string& what) {
    oci::ImageRef r = util::with_context(what, [&] { return oci::ImageRef::parse(text); });
    if (r.kind != oci::ImageRef::Kind::registry) {
      throw Error(ErrorKind::usage, what + ": '" + text + "' is not a repository name", "e.g. team/ocr-train");
    }
    return repo_tag_name(r);
  };
  if (!name_flag.empty()) {
    return parse_name(name_flag, "--name");
  }
  if (src_ref.kind == oci::ImageRef::Kind::registry) {
    return repo_tag_name(src_ref);
  }
  if (!archive_repo.empty()) {
    return archive_repo;
  }
  std::string title;
  if (auto it = m.annotations.find("org.opencontainers.image.title"); it != m.annotations.end()) {
    title = it->second;
  } else if (auto lt = cfg.config.labels.find("org.opencontainers.image.title"); lt != cfg.config.labels.end()) {
    title = lt->second;
  }
  if (!title.empty()) {
    return parse_name(title, "org.opencontainers.image.title");
  }
  throw Error(ErrorKind::usage,
              "the docker-archive needs a repository name for its RepoTags, and " + src_ref.str() +
                  " names none (no registry reference, no RepoTags, no org.opencontainers.image.title)",
              "pass --name REPOSITORY, e.g. --name team/ocr-train");
}

std::string CopyRefs::credential_host() const {
  return dst.kind == oci::ImageRef::Kind::registry ? dst.registry : src.registry;
}

CopyRefs parse_copy(const CopyRequest& req) {
  CopyRefs r;
  r.src = util::with_context("source", [&] { return oci::ImageRef::parse(req.src); });
  r.dst = util::with_context("destination", [&] { return oci::ImageRef::parse(req.dst); });
  if (req.mode == CopyMode::push && r.dst.kind != oci::ImageRef::Kind::registry) {
    throw Error(ErrorKind::usage, "push: '" + req.dst + "' is not a registry reference",
                "e.g. paddle-image push oci:out/app:1.0 registry.example.com/team/app:1.0");
  }
  if (req.mode == CopyMode::pull && r.src.kind != oci::ImageRef::Kind::registry) {
    throw Error(ErrorKind::usage, "pull: '" + req.src + "' is not a registry reference",
                "e.g. paddle-image pull registry.example.com/team/app:1.0 --output oci:app");
  }
  if (r.dst.kind == oci::ImageRef::Kind::registry && !r.dst.digest.empty()) {
    throw Error(ErrorKind::usage, r.dst.str() + ": a destination takes a tag, not a digest",
                "drop the @sha256:... part");
  }
  oci::check_tag_flags(req.tags);
  return r;
}

namespace {

// The RepoTags repository of a docker-archive destination, read from the source's
// selected manifest `mb` before anything is written (a missing name is refused first).
std::string archive_repository_of(const oci::Image& src, const oci::ManifestBlob& mb, const oci::ImageRef& src_ref,
                                  const std::string& archive_repo, const std::string& name_flag,
                                  const oci::ImageRef& dst, const oci::CopyOptions& topt) {
  if (topt.all_platforms) {
    throw Error(ErrorKind::usage, dst.str() + ": a docker-archive holds one platform; drop --all");
  }
  oci::Manifest m = oci::manifest_from_json(oci::parse_json(mb.bytes, "manifest of " + src.name()));
  oci::ImageConfig cfg = oci::read_config(src, m);
  return archive_repository(src_ref, archive_repo, m, cfg, name_flag);
}

// A source archive's "repo:tag" entries: its repository (the first entry's), and the
// tags it has under that repository.
std::pair<std::string, std::vector<std::string>> archive_names(const std::vector<std::string>& repo_tags) {
  std::string repo;
  std::vector<std::string> tags;
  for (const auto& rt : repo_tags) {
    auto colon = rt.rfind(':');
    if (colon != std::string::npos && rt.find('/', colon) == std::string::npos) {
      if (repo.empty()) {
        repo = rt.substr(0, colon);
      }
      if (rt.substr(0, colon) == repo) {
        tags.push_back(rt.substr(colon + 1));
      }
    }
  }
  return {repo, tags};
}

} // namespace

Published copy_image(const CopyRequest& req, const CopyRefs& refs, const CopyRun& run) {
  std::vector<std::string> archive_repo_tags;
  oci::ImagePtr source = open_source(refs.src, run.connect, &archive_repo_tags);
  // An explicit --platform also applies to a single-platform image: a mismatch is
  // refused (exit 9) before anything is copied.
  oci::ManifestBlob selected = oci::select_platform(*source, run.copy);
  auto [archive_repo, archive_tags] = archive_names(archive_repo_tags);
  PublishOptions po;
  po.tags = req.tags;
  // The source's tags stand in when neither the destination nor --tag names one.
  po.fallback =
      !archive_tags.empty() ? archive_tags : std::vector<std::string>{!refs.src.tag.empty() ? refs.src.tag : "latest"};
  po.local = run.copy;
  po.push = run.copy;
  po.connect = run.connect;
  po.archive_mtime = run.archive_mtime;
  if (refs.dst.kind == oci::ImageRef::Kind::docker_archive) {
    po.image_name = oci::ImageRef::parse(util::with_context("writing " + refs.dst.str(), [&, &repo = archive_repo] {
      return archive_repository_of(*source, selected, refs.src, repo, req.name, refs.dst, run.copy);
    }));
  } else if (refs.dst.kind == oci::ImageRef::Kind::oci_archive) {
    // containerd's names when the source has one; an unnamed image keeps its tags only.
    oci::Manifest m;
    oci::ImageConfig cfg;
    if (!selected.is_index()) {
      m = oci::manifest_from_json(oci::parse_json(selected.bytes, "manifest of " + source->name()));
      cfg = oci::read_config(*source, m);
    }
    try {
      po.image_name = oci::ImageRef::parse(archive_repository(refs.src, archive_repo, m, cfg, req.name));
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::usage || !req.name.empty()) {
        throw;
      }
    }
  }
  run.info("copying " + source->name() + " (" + source->root().digest.str() + ") to " + refs.dst.str());
  return publish(*source, {refs.dst}, po).front();
}

} // namespace imageio
