// push, pull, copy, tags, login, logout: image transfers between registries, OCI
// layouts and docker-archive files (docs/registry.md).
#include "builder/build.hpp"
#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "cli/registry_flags.hpp"
#include "imageio/copy.hpp"
#include "oci/layout_image.hpp"
#include "oci/reference.hpp"
#include "registry/transfer.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/sha256.hpp"

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
  std::string name; // repository for a docker-archive destination's RepoTags
  bool json = false;
  bool quiet = false;
  RegistryFlags flags;
};

// The transfer's JSON: references, the manifest written, what moved.
nlohmann::json copy_meta(const imageio::CopyRefs& refs, const oci::CopyResult& res, const RegistrySession& sess,
                         double secs) {
  return {{"source", refs.src.str()},
          {"destination", refs.dst.str()},
          {"digest", res.manifest.digest.str()},
          {"media_type", res.manifest.media_type},
          {"refs", res.refs},
          {"attachments", res.attachments},
          {"stats", sess.stats_json()},
          {"seconds", secs}};
}

// --digest-file, --image-refs (the references written, one per line) and --metadata-file.
void write_copy_files(const CopyArgs& a, const oci::CopyResult& res, const std::string& refs,
                      const nlohmann::json& meta) {
  if (!a.digest_file.empty()) {
    util::write_file_atomic(a.digest_file, res.manifest.digest.str() + "\n");
  }
  if (!a.image_refs.empty()) {
    util::write_file_atomic(a.image_refs, refs);
  }
  if (!a.metadata_file.empty()) {
    util::write_file_atomic(a.metadata_file, meta.dump(2) + "\n");
  }
}

int run_copy(const CopyArgs& a, imageio::CopyMode mode) {
  Output out = Output::detect(a.json, a.quiet);
  auto t0 = std::chrono::steady_clock::now();
  imageio::CopyRequest req{mode, a.src, a.dst, a.tags, a.name};
  imageio::CopyRefs refs = imageio::parse_copy(req);
  RegistrySession sess(a.flags, out, refs.credential_host());
  imageio::CopyRun run{sess.transfer_options(), [&sess](const std::string& host) { return sess.connect(host); },
                       builder::k_default_epoch, // the archive's member times: never the wall clock
                       [&out](const std::string& line) { out.info(line); }};
  oci::CopyResult res = imageio::copy_image(req, refs, run).written;
  sess.finish();
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  nlohmann::json meta = copy_meta(refs, res, sess, secs);
  std::string text;
  for (const auto& r : res.refs) {
    text += r + "\n";
  }
  write_copy_files(a, res, text, meta);
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
  c->add_option("--name", a->name,
                "Repository for a docker-archive destination's RepoTags when the source names none (e.g. team/app)");
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

int run_login(const LoginArgs& a) {
  Output out = Output::detect(a.json, false);
  std::string host = oci::login_host(a.host);
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
  std::string host = oci::login_host(a.host);
  registry::CredentialStore store(auth_files_from_env());
  bool removed = store.erase(host);
  out.result({{"registry", host}, {"removed", removed}},
             removed ? "Removed login credentials for " + host + "\n" : "Not logged in to " + host + "\n");
  return 0;
}

struct TagsArgs {
  std::string repo;
  bool json = false;
  bool all = false; // also cosign's sha256-<hex>.sig/.att/.sbom tags
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
  if (!a.all) {
    std::erase_if(tags, [](const std::string& t) { return oci::is_attachment_tag(t); });
  }
  std::string text;
  for (const auto& t : tags) {
    text += t + "\n";
  }
  out.result({{"repository", ref.registry + "/" + ref.repository}, {"tags", tags}}, text);
  return 0;
}

} // namespace

struct GcArgs {
  std::string layout;
  bool dry_run = false;
  bool json = false;
  bool quiet = false;
};

int run_gc(const GcArgs& a) {
  Output out = Output::detect(a.json, a.quiet);
  oci::ImageRef ref = util::with_context("gc", [&] { return oci::ImageRef::parse(a.layout); });
  if (ref.kind != oci::ImageRef::Kind::oci_layout || !ref.tag.empty()) {
    throw Error(ErrorKind::usage, "gc: '" + a.layout + "' is not an oci:DIR layout",
                "e.g. paddle-image gc oci:out/app");
  }
  auto lock = oci::OciLayout::lock_dir(ref.path);
  auto layout = oci::OciLayout::open_existing(ref.path);
  oci::OciLayout::GcResult r = layout.gc(a.dry_run);
  nlohmann::json removed = nlohmann::json::array();
  std::string text;
  for (const auto& d : r.removed) {
    removed.push_back(d.str());
    text += (a.dry_run ? "would remove " : "removed ") + d.str() + "\n";
  }
  text += std::string(a.dry_run ? "would free " : "freed ") + human_size(r.bytes) + " (" +
          std::to_string(r.removed.size()) + " blob(s)); " + std::to_string(r.kept) + " blob(s) kept\n";
  out.result({{"layout", ref.path},
              {"dry_run", a.dry_run},
              {"removed", removed},
              {"bytes_freed", a.dry_run ? 0 : r.bytes},
              {"bytes_unreferenced", r.bytes},
              {"kept", r.kept}},
             text);
  return 0;
}

void add_registry_commands(CLI::App& app, std::vector<std::pair<CLI::App*, Action>>& actions) {
  auto push = std::make_shared<CopyArgs>();
  CLI::App* c = app.add_subcommand("push", "Push an OCI layout image to a registry");
  c->add_option("source", push->src,
                "oci:DIR[:TAG], docker-archive:FILE, oci-archive:FILE[:TAG] or a registry reference")
      ->required();
  c->add_option("destination", push->dst, "REGISTRY/REPO[:TAG]")->required();
  add_copy_flags(c, push);
  actions.emplace_back(c, [push] { return run_copy(*push, imageio::CopyMode::push); });

  auto pull = std::make_shared<CopyArgs>();
  c = app.add_subcommand("pull", "Pull an image from a registry into an OCI layout (or docker-archive)");
  c->add_option("source", pull->src, "REGISTRY/REPO[:TAG][@DIGEST]")->required();
  c->add_option("-o,--output", pull->dst, "oci:DIR[:TAG], docker-archive:FILE or oci-archive:FILE[:TAG]")->required();
  add_copy_flags(c, pull);
  actions.emplace_back(c, [pull] { return run_copy(*pull, imageio::CopyMode::pull); });

  auto copy = std::make_shared<CopyArgs>();
  c = app.add_subcommand("copy", "Copy an image between registries, OCI layouts and docker-archive files");
  c->add_option("source", copy->src, "registry reference, oci:DIR[:TAG], docker-archive:FILE or oci-archive:FILE[:TAG]")
      ->required();
  c->add_option("destination", copy->dst,
                "registry reference, oci:DIR[:TAG], docker-archive:FILE or oci-archive:FILE[:TAG]")
      ->required();
  add_copy_flags(c, copy);
  actions.emplace_back(c, [copy] { return run_copy(*copy, imageio::CopyMode::copy); });

  auto tags = std::make_shared<TagsArgs>();
  c = app.add_subcommand("tags", "List the tags of a registry repository");
  c->add_option("repository", tags->repo, "REGISTRY/REPO")->required();
  c->add_flag("--json", tags->json, "JSON output");
  c->add_flag("--all", tags->all, "Also list signature and attestation tags (sha256-<hex>.sig, .att, .sbom)");
  tags->flags.add(c, false, false);
  actions.emplace_back(c, [tags] { return run_tags(*tags); });

  auto login = std::make_shared<LoginArgs>();
  c = app.add_subcommand("login", "Check credentials against a registry and store them in the docker config");
  c->add_option("registry", login->host, "Registry host[:port]")->required();
  c->add_flag("--json", login->json, "JSON output");
  login->flags.add(c, false);
  actions.emplace_back(c, [login] { return run_login(*login); });

  auto gc = std::make_shared<GcArgs>();
  c = app.add_subcommand("gc", "Remove blobs that no tag, manifest or signature of an OCI layout refers to");
  c->add_option("layout", gc->layout, "oci:DIR")->required();
  c->add_flag("--dry-run", gc->dry_run, "Only list what would be removed");
  c->add_flag("--json", gc->json, "JSON output");
  c->add_flag("-q,--quiet", gc->quiet, "No progress output");
  actions.emplace_back(c, [gc] { return run_gc(*gc); });

  auto logout = std::make_shared<LoginArgs>();
  c = app.add_subcommand("logout", "Remove stored credentials for a registry");
  c->add_option("registry", logout->host, "Registry host[:port]")->required();
  c->add_flag("--json", logout->json, "JSON output");
  actions.emplace_back(c, [logout] { return run_logout(*logout); });
}

} // namespace cli
