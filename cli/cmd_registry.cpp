// push, pull, copy, tags, login, logout: image transfers between registries, OCI
// layouts and docker-archive files (docs/registry.md).
#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "cli/registry_flags.hpp"
#include "layers/docker_archive.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"

#include <chrono>
#include <memory>

namespace cli {

using util::Error;
using util::ErrorKind;

namespace {

struct CopyArgs {
  std::string src;
  std::string dst;
  std::vector<std::string> tags;
  std::string digest_file;
  std::string image_refs;
  std::string metadata_file;
  std::string cache_dir;
  bool json = false;
  bool quiet = false;
  RegistryFlags flags;
};

enum class Mode { push, pull, copy };

// A docker-archive source is read once into a scratch layout (kept alive by `scratch`).
registry::ImageSource open_source(const oci::ImageRef& ref, RegistrySession& sess,
                                  const std::filesystem::path& cache_dir, std::unique_ptr<util::TempDir>& scratch) {
  switch (ref.kind) {
  case oci::ImageRef::Kind::registry:
    return registry::registry_source(sess.connect(ref.registry), ref);
  case oci::ImageRef::Kind::oci_layout:
    return registry::layout_source(ref);
  case oci::ImageRef::Kind::docker_archive:
    break;
  }
  std::filesystem::create_directories(cache_dir);
  scratch = std::make_unique<util::TempDir>(cache_dir, "archive-");
  auto layout = oci::OciLayout::open_or_create(scratch->path() / "layout");
  util::with_context("reading " + ref.str(), [&] { layers::import_docker_archive(ref.path, layout, "image"); });
  oci::ImageRef lr;
  lr.kind = oci::ImageRef::Kind::oci_layout;
  lr.path = (scratch->path() / "layout").string();
  lr.tag = "image";
  registry::ImageSource src = registry::layout_source(lr);
  src.name = ref.str();
  return src;
}

// Writes a docker-archive through a temporary layout (blobs verified on the way).
std::vector<std::string> write_archive(const registry::ImageSource& src, const oci::ImageRef& src_ref,
                                       const oci::ImageRef& dst, const std::vector<std::string>& tags,
                                       registry::TransferOptions topt, const std::filesystem::path& cache_dir,
                                       registry::ManifestData& written) {
  if (topt.all_platforms) {
    throw Error(ErrorKind::usage, dst.str() + ": a docker-archive holds one platform; drop --all");
  }
  std::filesystem::create_directories(cache_dir);
  // (315532800 = 1980-01-01, the build's default SOURCE_DATE_EPOCH: never the wall clock)
  util::TempDir tmp(cache_dir, "copy-");
  registry::TransferResult r = registry::write_layout(src, tmp.path() / "layout", {"image"}, topt);
  written = r.manifest;
  auto layout = oci::OciLayout::open_existing(tmp.path() / "layout");
  oci::Manifest m = oci::manifest_from_json(oci::parse_json(r.manifest.bytes, src.name));
  std::string config_bytes = layout.blobs().read_small(m.config.digest);
  oci::ImageConfig cfg = oci::config_from_json(oci::parse_json(config_bytes, "config of " + src.name));
  if (cfg.diff_ids.size() != m.layers.size()) {
    throw Error(ErrorKind::input, src.name + ": the config lists " + std::to_string(cfg.diff_ids.size()) +
                                      " diff_ids for " + std::to_string(m.layers.size()) + " layers");
  }
  std::vector<layers::ArchiveLayer> al;
  for (std::size_t i = 0; i < m.layers.size(); ++i) {
    al.push_back({layout.blobs().blob_path(m.layers[i].digest), m.layers[i].media_type, cfg.diff_ids[i], std::nullopt});
  }
  std::vector<std::string> repo_tags;
  if (src_ref.kind == oci::ImageRef::Kind::registry) {
    std::string name =
        src_ref.registry == "docker.io" ? src_ref.repository : src_ref.registry + "/" + src_ref.repository;
    for (const auto& t : tags) {
      repo_tags.push_back(name + ":" + t);
    }
  }
  layers::write_docker_archive(dst.path, config_bytes, m.config.digest, al, repo_tags, 315532800);
  return {dst.str() + "@" + r.manifest.digest.str()};
}

int run_copy(const CopyArgs& a, Mode mode) {
  Output out = Output::detect(a.json, a.quiet);
  auto t0 = std::chrono::steady_clock::now();
  oci::ImageRef src = util::with_context("source", [&] { return oci::ImageRef::parse(a.src); });
  oci::ImageRef dst = util::with_context("destination", [&] { return oci::ImageRef::parse(a.dst); });
  if (mode == Mode::push && dst.kind != oci::ImageRef::Kind::registry) {
    throw Error(ErrorKind::usage, "push: '" + a.dst + "' is not a registry reference",
                "e.g. paddle-image push oci:out/app:1.0 registry.example.com/team/app:1.0");
  }
  if (mode == Mode::pull && src.kind != oci::ImageRef::Kind::registry) {
    throw Error(ErrorKind::usage, "pull: '" + a.src + "' is not a registry reference",
                "e.g. paddle-image pull registry.example.com/team/app:1.0 --output oci:app");
  }
  if (dst.kind == oci::ImageRef::Kind::registry && !dst.digest.empty()) {
    throw Error(ErrorKind::usage, dst.str() + ": a destination takes a tag, not a digest", "drop the @sha256:... part");
  }
  for (const auto& t : a.tags) {
    if (!oci::is_valid_tag(t)) {
      throw Error(ErrorKind::usage, "--tag '" + t + "' is not a valid tag",
                  "letters, digits, '_', '.', '-' (max 128, not starting with '.' or '-')");
    }
  }
  std::string cred_host = dst.kind == oci::ImageRef::Kind::registry ? dst.registry : src.registry;
  RegistrySession sess(a.flags, out, cred_host);
  std::filesystem::path cache = a.cache_dir.empty() ? default_cache_dir() : std::filesystem::path(a.cache_dir);
  std::unique_ptr<util::TempDir> scratch;
  registry::ImageSource source = open_source(src, sess, cache, scratch);
  registry::TransferOptions topt = sess.transfer_options();
  std::vector<std::string> tags;
  if (!dst.tag.empty()) {
    tags.push_back(dst.tag);
  } else if (dst.kind != oci::ImageRef::Kind::registry) {
    tags.push_back(!src.tag.empty() ? src.tag : "latest");
  }
  for (const auto& t : a.tags) {
    if (std::find(tags.begin(), tags.end(), t) == tags.end()) {
      tags.push_back(t);
    }
  }
  out.info("copying " + source.name + " (" + source.root.digest.str() + ") to " + dst.str());
  registry::TransferResult res;
  switch (dst.kind) {
  case oci::ImageRef::Kind::registry:
    res = util::with_context("pushing to " + dst.registry + "/" + dst.repository, [&] {
      return registry::push_image(source, sess.connect(dst.registry), dst.repository, tags, topt);
    });
    break;
  case oci::ImageRef::Kind::oci_layout:
    res = util::with_context("writing " + dst.str(),
                             [&] { return registry::write_layout(source, dst.path, tags, topt); });
    break;
  case oci::ImageRef::Kind::docker_archive: {
    res.refs = util::with_context("writing " + dst.str(),
                                  [&] { return write_archive(source, src, dst, tags, topt, cache, res.manifest); });
    break;
  }
  }
  sess.finish();
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  nlohmann::json meta = {{"source", src.str()},
                         {"destination", dst.str()},
                         {"digest", res.manifest.digest.str()},
                         {"media_type", res.manifest.media_type},
                         {"refs", res.refs},
                         {"stats", sess.stats_json()},
                         {"seconds", secs}};
  if (!a.digest_file.empty()) {
    util::write_file_atomic(a.digest_file, res.manifest.digest.str() + "\n");
  }
  std::string text;
  for (const auto& r : res.refs) {
    text += r + "\n";
  }
  if (!a.image_refs.empty()) {
    util::write_file_atomic(a.image_refs, text);
  }
  if (!a.metadata_file.empty()) {
    util::write_file_atomic(a.metadata_file, meta.dump(2) + "\n");
  }
  const auto& st = sess.stats();
  out.info("done in " + std::to_string(secs).substr(0, 5) + " s: " + human_size(st.bytes_uploaded) + " uploaded, " +
           human_size(st.bytes_mounted) + " mounted, " + human_size(st.bytes_skipped) + " already there, " +
           human_size(st.bytes_downloaded) + " downloaded, " + std::to_string(st.retries.load()) + " retries");
  out.result(meta, text);
  return 0;
}

CLI::App* add_copy_flags(CLI::App* c, const std::shared_ptr<CopyArgs>& a) {
  c->add_option("-t,--tag", a->tags, "Also tag the destination with this (repeatable)");
  c->add_option("--digest-file", a->digest_file, "Write the manifest digest to this file");
  c->add_option("--image-refs", a->image_refs, "Write the written references (one per line) to this file");
  c->add_option("--metadata-file", a->metadata_file, "Write transfer metadata (JSON) to this file");
  c->add_option("--cache-dir", a->cache_dir, "Scratch space for docker-archive files (default: the layer cache)");
  c->add_flag("--json", a->json, "Print the transfer metadata as JSON on stdout");
  c->add_flag("-q,--quiet", a->quiet, "No progress output");
  a->flags.add(c, true);
  return c;
}

struct LoginArgs {
  std::string host;
  bool json = false;
  RegistryFlags flags;
};

std::string host_of(const std::string& text) {
  std::string h = text;
  for (const char* scheme : {"https://", "http://", "docker://"}) {
    if (h.rfind(scheme, 0) == 0) {
      h = h.substr(std::string(scheme).size());
    }
  }
  h = h.substr(0, h.find('/'));
  if (h.empty() || h.find_first_of(" \t@") != std::string::npos) {
    throw Error(ErrorKind::usage, "'" + text + "' is not a registry host",
                "e.g. registry.example.com or 127.0.0.1:5000");
  }
  return h == "index.docker.io" || h == "registry-1.docker.io" ? "docker.io" : h;
}

int run_login(const LoginArgs& a) {
  Output out = Output::detect(a.json, false);
  std::string host = host_of(a.host);
  if (a.flags.username.empty() || !a.flags.password_stdin) {
    throw Error(ErrorKind::usage, "login needs --username and --password-stdin",
                "echo \"$PASSWORD\" | paddle-image login " + host + " --username USER --password-stdin");
  }
  RegistrySession sess(a.flags, out, host);
  auto reg = sess.connect(host);
  reg->verify_login();
  registry::Credential c = sess.credentials().lookup(host);
  std::string where = sess.credentials().store(host, c.username, c.password);
  out.info("login to " + host + " succeeded; credentials stored in " + where);
  out.result({{"registry", host}, {"stored_in", where}}, "Login Succeeded\n");
  return 0;
}

int run_logout(const LoginArgs& a) {
  Output out = Output::detect(a.json, false);
  std::string host = host_of(a.host);
  registry::CredentialStore store(auth_files_from_env());
  bool removed = store.erase(host);
  out.result({{"registry", host}, {"removed", removed}},
             removed ? "Removed login credentials for " + host + "\n" : "Not logged in to " + host + "\n");
  return 0;
}

struct TagsArgs {
  std::string repo;
  bool json = false;
  RegistryFlags flags;
};

int run_tags(const TagsArgs& a) {
  Output out = Output::detect(a.json, false);
  oci::ImageRef ref = oci::ImageRef::parse(a.repo);
  if (ref.kind != oci::ImageRef::Kind::registry) {
    throw Error(ErrorKind::usage, "tags lists a registry repository",
                "e.g. paddle-image tags registry.example.com/team/app");
  }
  RegistrySession sess(a.flags, out, ref.registry);
  auto tags = sess.connect(ref.registry)->list_tags(ref.repository);
  std::string text;
  for (const auto& t : tags) {
    text += t + "\n";
  }
  out.result({{"repository", ref.registry + "/" + ref.repository}, {"tags", tags}}, text);
  return 0;
}

} // namespace

void add_registry_commands(CLI::App& app, std::vector<std::pair<CLI::App*, Action>>& actions) {
  auto push = std::make_shared<CopyArgs>();
  CLI::App* c = app.add_subcommand("push", "Push an OCI layout image to a registry");
  c->add_option("source", push->src, "oci:DIR[:TAG], docker-archive:FILE or a registry reference")->required();
  c->add_option("destination", push->dst, "REGISTRY/REPO[:TAG]")->required();
  add_copy_flags(c, push);
  actions.emplace_back(c, [push] { return run_copy(*push, Mode::push); });

  auto pull = std::make_shared<CopyArgs>();
  c = app.add_subcommand("pull", "Pull an image from a registry into an OCI layout (or docker-archive)");
  c->add_option("source", pull->src, "REGISTRY/REPO[:TAG][@DIGEST]")->required();
  c->add_option("-o,--output", pull->dst, "oci:DIR[:TAG] or docker-archive:FILE")->required();
  add_copy_flags(c, pull);
  actions.emplace_back(c, [pull] { return run_copy(*pull, Mode::pull); });

  auto copy = std::make_shared<CopyArgs>();
  c = app.add_subcommand("copy", "Copy an image between registries, OCI layouts and docker-archive files");
  c->add_option("source", copy->src, "registry reference, oci:DIR[:TAG] or docker-archive:FILE")->required();
  c->add_option("destination", copy->dst, "registry reference, oci:DIR[:TAG] or docker-archive:FILE")->required();
  add_copy_flags(c, copy);
  actions.emplace_back(c, [copy] { return run_copy(*copy, Mode::copy); });

  auto tags = std::make_shared<TagsArgs>();
  c = app.add_subcommand("tags", "List the tags of a registry repository");
  c->add_option("repository", tags->repo, "REGISTRY/REPO")->required();
  c->add_flag("--json", tags->json, "JSON output");
  tags->flags.add(c, false);
  actions.emplace_back(c, [tags] { return run_tags(*tags); });

  auto login = std::make_shared<LoginArgs>();
  c = app.add_subcommand("login", "Check credentials against a registry and store them in the docker config");
  c->add_option("registry", login->host, "Registry host[:port]")->required();
  c->add_flag("--json", login->json, "JSON output");
  login->flags.add(c, false);
  actions.emplace_back(c, [login] { return run_login(*login); });

  auto logout = std::make_shared<LoginArgs>();
  c = app.add_subcommand("logout", "Remove stored credentials for a registry");
  c->add_option("registry", logout->host, "Registry host[:port]")->required();
  c->add_flag("--json", logout->json, "JSON output");
  actions.emplace_back(c, [logout] { return run_logout(*logout); });
}

} // namespace cli
