#include "builder/build.hpp"
#include "builder/registry_cache.hpp"
#include "builder/sign_build.hpp"
#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "cli/registry_flags.hpp"
#include "cli/signing_flags.hpp"
#include "layers/cache.hpp"
#include "oci/layout_image.hpp"
#include "spec/spec.hpp"
#include "util/encoding.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/text.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <malloc.h>
#include <memory>
#include <optional>
#include <sstream>
#include <thread>

namespace cli {

using util::Error;
using util::ErrorKind;

namespace {

struct BuildArgs {
  std::string spec_file;
  std::vector<std::string> outputs;
  std::vector<std::string> tags;
  std::string cache_dir;
  std::string epoch;
  std::string compression;
  int threads = 0;
  std::string revision;
  std::string source;
  std::vector<std::string> matrix_files;
  std::string digest_file;
  std::string metadata_file;
  std::vector<std::string> pushes;
  std::string image_refs;
  std::string cache_max;
  bool json = false;
  bool quiet = false;
  RegistryFlags flags;
  bool sign = false;
  KeyFlags key;
  std::string identity;
  std::string sbom_format = "spdx";
  std::string sbom_base = "scan";
  std::vector<std::string> cache_from, cache_to; // registry cache repositories
  std::string cache_sign_key, cache_verify_key;
};

// Runs `git -C DIR ARGS` (no shell expansion of DIR) and returns its stdout, or nullopt
// when git fails or is missing.
std::optional<std::string> run_git(const std::filesystem::path& dir, const std::string& args) {
  std::string cmd = "git -C " + util::shell_quote(dir.string()) + " " + args + " 2>/dev/null";
  FILE* f = popen(cmd.c_str(), "r");
  if (f == nullptr) {
    return std::nullopt;
  }
  std::array<char, 256> buf{};
  std::string out;
  while (fgets(buf.data(), buf.size(), f) != nullptr) {
    out += buf.data();
  }
  if (pclose(f) != 0) {
    return std::nullopt;
  }
  return out;
}

// HEAD of the spec directory's work tree, with "-dirty" appended (as `git describe
// --dirty` does) when tracked files have uncommitted changes; "" outside a work tree.
std::string git_revision(const std::filesystem::path& dir) {
  // One git run says both: "# branch.oid SHA" ("(initial)" before the first commit),
  // then a line per changed tracked file.
  auto status = run_git(dir, "status --porcelain=v2 --branch --untracked-files=no");
  if (!status) {
    return {};
  }
  std::string oid;
  bool dirty = false;
  std::size_t pos = 0;
  while (pos < status->size()) {
    std::size_t end = status->find('\n', pos);
    std::string line = status->substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    pos = end == std::string::npos ? status->size() : end + 1;
    if (line.rfind("# branch.oid ", 0) == 0) {
      oid = line.substr(13);
    } else if (!line.empty() && line[0] != '#') {
      dirty = true;
    }
  }
  if ((oid.size() != 40 && oid.size() != 64) || oid.find_first_not_of("0123456789abcdef") != std::string::npos) {
    return {};
  }
  return dirty ? oid + "-dirty" : oid;
}

std::int64_t parse_epoch(const std::string& text, const std::string& where) {
  try {
    std::size_t pos = 0;
    long long v = std::stoll(text, &pos);
    if (pos == text.size() && v >= 0 && v <= spec::k_max_epoch) {
      return v;
    }
  } catch (const std::exception&) { // not a number at all, or out of long long's range: the error below
  }
  throw util::Error(util::ErrorKind::usage,
                    where + ": '" + text + "' is not a Unix time in seconds from 0 to " +
                        std::to_string(spec::k_max_epoch) + " (9999-12-31T23:59:59Z)",
                    "e.g. SOURCE_DATE_EPOCH=$(git log -1 --format=%ct)");
}

constexpr const char* k_tool_version = "0.1.0";

// --source-date-epoch, else $SOURCE_DATE_EPOCH, else the spec's, else the default.
std::int64_t chosen_epoch(const BuildArgs& a, const spec::BuildSpec& s) {
  if (!a.epoch.empty()) {
    return parse_epoch(a.epoch, "--source-date-epoch");
  }
  if (const char* env = std::getenv("SOURCE_DATE_EPOCH"); env != nullptr && *env != '\0') {
    return parse_epoch(env, "SOURCE_DATE_EPOCH");
  }
  return s.source_date_epoch ? *s.source_date_epoch : builder::k_default_epoch;
}

// --compression: a format at its default level, or gpu-node (the spec's name for zstd
// at a fixed level).
void set_compression(const BuildArgs& a, builder::BuildOptions& o) {
  if (a.compression == "gpu-node") {
    o.compression = oci::Compression::zstd;
    o.compression_level = spec::k_gpu_node_zstd_level;
  } else if (!a.compression.empty()) {
    o.compression = oci::parse_compression(a.compression); // CLI11 admits only the four names
  }
}

// --cache-max-size, else $PADDLE_IMAGE_CACHE_MAX_SIZE; none when neither is set.
std::optional<std::int64_t> cache_max_size(const BuildArgs& a) {
  if (!a.cache_max.empty()) {
    return parse_size(a.cache_max, "--cache-max-size");
  }
  if (const char* env = std::getenv("PADDLE_IMAGE_CACHE_MAX_SIZE"); env != nullptr && *env != '\0') {
    return parse_size(env, "PADDLE_IMAGE_CACHE_MAX_SIZE");
  }
  return std::nullopt;
}

// -o and --push as given, in that order; a --push must name a registry by tag. Checked
// before the build, so a wrong one wastes none.
std::vector<oci::ImageRef> parse_outputs(const BuildArgs& a) {
  std::vector<oci::ImageRef> outputs;
  for (const auto& r : a.outputs) {
    outputs.push_back(util::with_context("--output", [&] { return oci::ImageRef::parse(r); }));
    imageio::check_destination(outputs.back(), "--output");
  }
  for (const auto& r : a.pushes) {
    auto ref = util::with_context("--push", [&] { return oci::ImageRef::parse(r); });
    if (ref.kind != oci::ImageRef::Kind::registry) {
      throw util::Error(util::ErrorKind::usage, "--push " + r + ": not a registry reference",
                        "e.g. --push registry.example.com/team/ocr:1.4.0 (use --output for oci:, docker-archive: "
                        "and oci-archive:)");
    }
    imageio::check_destination(ref, "--push");
    outputs.push_back(ref);
  }
  return outputs;
}

// Where the image goes: the outputs asked for, else the default layout.
std::vector<oci::ImageRef> destinations(const spec::BuildSpec& s, const std::vector<oci::ImageRef>& outputs) {
  return outputs.empty() ? std::vector<oci::ImageRef>{builder::default_output(s)} : outputs;
}

// The host whose credentials the session starts with: the first registry output's.
std::string push_host(const std::vector<oci::ImageRef>& outputs) {
  for (const auto& ref : outputs) {
    if (ref.kind == oci::ImageRef::Kind::registry) {
      return ref.registry;
    }
  }
  return {};
}

// A flag's values, else the environment variable's (repositories separated by commas
// or white space; unset or empty: none).
std::vector<std::string> flag_or_env(const std::vector<std::string>& flag, const char* env) {
  if (!flag.empty()) {
    return flag;
  }
  std::vector<std::string> out;
  const char* v = std::getenv(env);
  std::string text = v == nullptr ? "" : v;
  std::replace(text.begin(), text.end(), ',', ' ');
  std::istringstream in(text);
  for (std::string word; in >> word;) {
    out.push_back(word);
  }
  return out;
}

std::string flag_or_env(const std::string& flag, const char* env) {
  const char* v = std::getenv(env);
  return !flag.empty() ? flag : v == nullptr ? std::string() : std::string(v);
}

// One malloc arena for every thread (called before any starts), unless the user chose
// (MALLOC_ARENA_MAX, GLIBC_TUNABLES): for builds that write a registry cache, whose
// stores' threads each kept an arena of their own, 3 MB more peak RSS on a cold build;
// with one, none more, in the same time (bench/registry_cache.sh). Not for other builds:
// their compression is 5-15% faster with glibc's default (bench/compare.sh).
void one_malloc_arena() {
  if (std::getenv("MALLOC_ARENA_MAX") == nullptr && std::getenv("GLIBC_TUNABLES") == nullptr) {
    mallopt(M_ARENA_MAX, 1);
  }
}

// The registry cache's keys (--cache-sign-key, --cache-verify-key or their variables).
// A signed build (--sign) with neither reads no cache: a signature vouches for every
// layer, and none may come from an entry nobody verified.
void set_cache_keys(const BuildArgs& a, const Output& out, bool signs, builder::RegistryCacheOptions& rc) {
  std::string sign = flag_or_env(a.cache_sign_key, "PADDLE_IMAGE_CACHE_SIGN_KEY");
  std::string verify = flag_or_env(a.cache_verify_key, "PADDLE_IMAGE_CACHE_VERIFY_KEY");
  if (!sign.empty()) {
    rc.sign_key = load_private_key(KeyFlags{sign, a.key.passphrase_file}, "--cache-sign-key");
  }
  if (!verify.empty()) {
    rc.verify_key = load_public_key(verify, "--cache-verify-key");
  }
  if (signs && !rc.from.empty() && !rc.verify_key && !rc.sign_key) {
    out.info("warning: --sign without --cache-verify-key: the registry cache is not read (" +
             util::join(flag_or_env(a.cache_from, "PADDLE_IMAGE_CACHE_FROM"), ", ") +
             "); pass --cache-verify-key PUB to use entries signed by that key");
    rc.from.clear();
  }
}

// --cache-from/--cache-to (or PADDLE_IMAGE_CACHE_FROM/_TO): the registry cache, with its
// signing and verification keys; null when no repository is named.
std::shared_ptr<builder::RegistryCache> registry_cache(const BuildArgs& a, const std::filesystem::path& cache_dir,
                                                       RegistrySession& sess, const Output& out, bool signs) {
  builder::RegistryCacheOptions rc;
  rc.state_dir = layers::CacheLayout(cache_dir).registry_cache_state();
  for (const auto& r : flag_or_env(a.cache_from, "PADDLE_IMAGE_CACHE_FROM")) {
    rc.from.push_back(builder::parse_cache_repository(r, "--cache-from"));
  }
  for (const auto& r : flag_or_env(a.cache_to, "PADDLE_IMAGE_CACHE_TO")) {
    rc.to.push_back(builder::parse_cache_repository(r, "--cache-to"));
  }
  if (rc.from.empty() && rc.to.empty()) {
    if (!a.cache_sign_key.empty() || !a.cache_verify_key.empty()) {
      throw Error(ErrorKind::usage, "--cache-sign-key and --cache-verify-key need a registry cache",
                  "add --cache-from REPO and/or --cache-to REPO");
    }
    return nullptr;
  }
  set_cache_keys(a, out, signs, rc);
  if (!rc.to.empty()) {
    one_malloc_arena();
  }
  rc.connect = [&sess](const std::string& host) { return sess.connect(host); };
  rc.lookup_connect = [&sess](const std::string& host) {
    return sess.connect_quick(host, builder::k_cache_lookup_deadline_s);
  };
  rc.copy = sess.transfer_options();
  rc.versions = builder::cache_versions(k_tool_version);
  rc.warn = [&out](const std::string& line) { out.info(line); };
  rc.debug = [&sess](const std::string& line) { sess.log(2, line); };
  return std::make_shared<builder::RegistryCache>(std::move(rc));
}

// Everything but the outputs, the registry access and the hooks, from the flags.
void set_build_flags(const BuildArgs& a, const spec::BuildSpec& s, builder::BuildOptions& o) {
  o.source_date_epoch = chosen_epoch(a, s);
  set_compression(a, o);
  o.threads = a.threads > 0 ? a.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (a.revision.empty()) {
    // git runs while the layers build; the labels wait for it.
    o.pending_revision = std::async(std::launch::async, [dir = s.dir] { return git_revision(dir); }).share();
  } else {
    o.revision = a.revision;
  }
  o.source = a.source;
  o.matrix_files = a.matrix_files;
  auto start = std::chrono::steady_clock::now();
  o.clock = [start] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
}

builder::Events build_events(const Output& out, RegistrySession& sess) {
  builder::Events ev;
  ev.info = [&out](const std::string& line) { out.info(line); };
  ev.debug = [&sess](const std::string& line) { sess.log(2, line); }; // --log-level debug, -vv
  ev.progress = [&out](const std::string& layer, std::int64_t done, std::int64_t total) {
    out.progress(layer, done, total);
  };
  return ev;
}

// --sign's key, read before the build so a wrong passphrase does not waste one.
std::optional<signing::PrivateKey> sign_key(const BuildArgs& a, const std::vector<oci::ImageRef>& outputs) {
  if (!a.sign) {
    if (!a.key.key.empty()) {
      throw Error(ErrorKind::usage, "--key is given without --sign", "add --sign to sign the image");
    }
    return std::nullopt;
  }
  if (a.key.key.empty()) {
    throw Error(ErrorKind::usage, "--sign needs --key", "e.g. --sign --key cosign.key");
  }
  builder::check_signable(outputs);
  return load_private_key(a.key);
}

// What --sign attaches: the provenance's context, and the SBOM read from the image as
// the build assembled it (its own layers from the layer cache, a registry base's layers
// pulled into it once), before any push.
struct Attestations {
  builder::ProvenanceContext ctx;
  signing::SbomInput sbom;
};

void read_attestations(const BuildArgs& a, const spec::BuildSpec& s, const builder::BuildOptions& o,
                       const builder::BuildResult& built, const std::vector<oci::ImageRef>& outputs, Attestations& at,
                       const Output& out) {
  at.sbom = builder::built_image_sbom(built.image(), built.report, o, a.sbom_base == "scan",
                                      builder::sbom_subject(s, a.identity, outputs), k_tool_version,
                                      [&out](const std::string& line) { out.info(line); });
  at.ctx.labels = builder::image_labels(built.image());
}

// The built image to every destination: layouts and archives in one thread and a fixed
// order (links and one streaming pass each), then the pushes with the session's jobs
// and progress, a registry base's layers mounted from where they are.
std::vector<imageio::Published> publish_built(const BuildArgs& a, const spec::BuildSpec& s,
                                              const builder::BuildOptions& o, const builder::BuildResult& built,
                                              const std::vector<oci::ImageRef>& outputs, RegistrySession& sess,
                                              const Output& out) {
  imageio::PublishOptions po;
  po.tags = a.tags;
  po.fallback = builder::fallback_tags(s);
  po.push = sess.transfer_options();
  po.local = po.push;
  po.local.progress = nullptr; // local copies are links or one streaming pass: no per-blob progress
  po.local.attachments = false;
  po.local.jobs = 1; // links and small writes, in one thread and a fixed order (as the interrupt test expects)
  po.connect = [&sess](const std::string& host) { return sess.connect(host); };
  bool archive = std::any_of(outputs.begin(), outputs.end(), [](const oci::ImageRef& r) {
    return r.kind == oci::ImageRef::Kind::docker_archive || r.kind == oci::ImageRef::Kind::oci_archive;
  });
  if (archive && !s.name.empty()) {
    po.image_name = oci::ImageRef::parse(s.name);
  }
  po.archive_mtime = o.source_date_epoch;
  po.registry_image = &built.registry_image();
  po.info = [&out](const std::string& line) { out.info(line); };
  return imageio::publish(built.image(), destinations(s, outputs), po);
}

// After a build: the layer cache pruned to --cache-max-size, least recently used first
// (what this build just used is kept longest).
void prune_cache(const std::filesystem::path& cache_dir, std::optional<std::int64_t> cache_max, const Output& out) {
  if (!cache_max) {
    return;
  }
  auto pr = layers::LayerCache(cache_dir).prune(*cache_max);
  if (pr.layers_removed > 0 || pr.blobs_removed > 0) {
    out.info("cache: pruned to " + human_size(pr.bytes_after) + " (limit " + human_size(*cache_max) + ")");
  }
}

// The references written, one per line: each output with the digest, each push.
std::string written_refs(const builder::BuildReport& rep) {
  std::string text;
  for (const auto& o2 : rep.outputs) {
    text += o2 + "@" + rep.manifest.digest.str() + "\n";
  }
  for (const auto& p : rep.pushed) {
    text += p + "\n";
  }
  return text;
}

// --digest-file, --metadata-file and --image-refs.
void write_build_files(const BuildArgs& a, const builder::BuildReport& rep, const nlohmann::json& meta,
                       const std::string& refs) {
  if (!a.digest_file.empty()) {
    util::write_file_atomic(a.digest_file, rep.manifest.digest.str() + "\n");
  }
  if (!a.metadata_file.empty()) {
    util::write_file_atomic(a.metadata_file, meta.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  }
  if (!a.image_refs.empty()) {
    util::write_file_atomic(a.image_refs, refs);
  }
}

// ", K from the registry cache (U unverified: LAYERS)" of the summary line.
std::string cache_summary(const builder::BuildReport& rep) {
  std::size_t from_cache = 0;
  std::vector<std::string> unverified;
  for (const auto& l : rep.layers) {
    if (!l.cache_repository.empty()) {
      ++from_cache;
      if (!l.cache_verified) {
        unverified.push_back(l.name);
      }
    }
  }
  if (from_cache == 0) {
    return {};
  }
  return ", " + std::to_string(from_cache) + " from the registry cache" +
         (unverified.empty() ? std::string()
                             : " (" + std::to_string(unverified.size()) +
                                   " unverified, without --cache-verify-key: " + util::join(unverified, ", ") + ")");
}

// "built DIGEST in S s (N layer(s) rebuilt, M reused)", and what a push moved.
void print_build_summary(const builder::BuildReport& rep, RegistrySession& sess, const Output& out) {
  std::size_t rebuilt = 0;
  std::size_t reused = 0;
  for (const auto& l : rep.layers) {
    if (l.kind != "base") {
      (l.rebuilt ? rebuilt : reused)++;
    }
  }
  out.info("built " + rep.manifest.digest.str() + " in " + std::to_string(rep.seconds).substr(0, 5) + " s (" +
           std::to_string(rebuilt) + " layer(s) rebuilt, " + std::to_string(reused) + " reused" + cache_summary(rep) +
           ")");
  if (!rep.pushed.empty()) {
    const auto& st = sess.stats();
    out.info("pushed: " + human_size(st.bytes_uploaded) + " uploaded, " + human_size(st.bytes_mounted) + " mounted, " +
             human_size(st.bytes_skipped) + " already there, " + std::to_string(st.retries.load()) + " retries");
  }
}

// Signs every layout output and push (builder::sign_outputs) with the command's session.
nlohmann::json sign_built(const BuildArgs& a, const spec::BuildSpec& s, const builder::BuildOptions& o,
                          const builder::BuildReport& rep, const std::vector<imageio::Published>& published,
                          const signing::PrivateKey& key, Attestations& at, RegistrySession& sess, const Output& out) {
  at.ctx.finished_on = now_rfc3339();
  builder::SignOutputsOptions so;
  so.identity = a.identity;
  so.sbom_format = a.sbom_format;
  so.connect = [&sess](const std::string& host) { return sess.connect(host); };
  so.info = [&out](const std::string& line) { out.info(line); };
  return builder::sign_outputs(s, o, rep, published, at.sbom, key, at.ctx, so);
}

// The provenance's context: the invocation and what the user asked for.
Attestations start_attestations(const BuildArgs& a, const std::vector<oci::ImageRef>& outputs) {
  Attestations at;
  at.ctx.tool_version = k_tool_version;
  at.ctx.invocation_id = random_uuid();
  at.ctx.started_on = now_rfc3339();
  at.ctx.outputs = outputs;
  at.ctx.tags = a.tags;
  return at;
}

// The report's JSON with the session's and the registry cache's figures and the signatures.
nlohmann::json build_metadata(const builder::BuildReport& rep, const RegistrySession& sess,
                              const std::shared_ptr<builder::RegistryCache>& rcache, const nlohmann::json* signatures) {
  nlohmann::json meta = rep.to_json();
  meta["registry"] = sess.stats_json();
  if (rcache) {
    meta["registry_cache"] = rcache->stats().to_json();
  }
  if (signatures != nullptr) {
    meta["signatures"] = *signatures;
  }
  return meta;
}

int run_build(const BuildArgs& a) {
  Output out = Output::detect(a.json, a.quiet);
  spec::BuildSpec s = spec::load(a.spec_file);
  builder::BuildOptions o;
  o.cache_dir = a.cache_dir.empty() ? default_cache_dir() : std::filesystem::path(a.cache_dir);
  const std::vector<oci::ImageRef> outputs = parse_outputs(a);
  oci::check_tag_flags(a.tags);
  RegistrySession sess(a.flags, out, push_host(outputs));
  o.connect = [&sess](const std::string& host) { return sess.connect(host); };
  o.transfer = sess.transfer_options();
  o.index = sess.index_access(index_defaults_from_env());
  set_build_flags(a, s, o);
  builder::Events ev = build_events(out, sess);
  std::optional<std::int64_t> cache_max = cache_max_size(a); // checked before the build, so a bad value wastes none
  std::optional<signing::PrivateKey> key = sign_key(a, outputs);
  Attestations at = start_attestations(a, outputs);
  std::shared_ptr<builder::RegistryCache> rcache = registry_cache(a, o.cache_dir, sess, out, key.has_value());
  o.remote_cache = rcache;
  o.only_verified_cache = key.has_value() || (rcache && rcache->verifies());
  const std::vector<oci::ImageRef> dests = destinations(s, outputs);
  o.local_image = key.has_value() || std::any_of(dests.begin(), dests.end(), [](const oci::ImageRef& r) {
                    return r.kind != oci::ImageRef::Kind::registry;
                  });
  builder::BuildResult built = builder::build(s, o, ev);
  if (key) {
    read_attestations(a, s, o, built, outputs, at, out);
  }
  std::vector<imageio::Published> published = publish_built(a, s, o, built, outputs, sess, out);
  builder::record_published(built.report, published);
  built.close(); // before the prune below, which waits for the cache's users
  const builder::BuildReport& rep = built.report;
  sess.finish();
  nlohmann::json signatures = key ? sign_built(a, s, o, rep, published, *key, at, sess, out) : nlohmann::json();
  prune_cache(o.cache_dir, cache_max, out);
  nlohmann::json meta = build_metadata(rep, sess, rcache, key ? &signatures : nullptr);
  std::string text = written_refs(rep);
  write_build_files(a, rep, meta, text);
  print_build_summary(rep, sess, out);
  out.result(meta, text);
  return 0;
}

} // namespace

Action add_build(CLI::App& app) {
  auto a = std::make_shared<BuildArgs>();
  CLI::App* c = app.add_subcommand("build", "Build a layered, reproducible OCI image from a spec.yaml");
  c->add_option("spec", a->spec_file, "Path to spec.yaml")->required();
  c->add_option("-o,--output", a->outputs,
                "Where to write: oci:DIR[:TAG], docker-archive:FILE, oci-archive:FILE[:TAG] or a registry (repeatable; "
                "default oci:out/NAME "
                "unless --push is given)");
  c->add_option("--push", a->pushes, "Push to this registry reference (repeatable; tags from it or --tag)");
  c->add_option("--image-refs", a->image_refs, "Write the written references (one per line) to this file");
  c->add_option("--cache-max-size", a->cache_max,
                "After the build, prune the layer cache to this size, least recently used first "
                "(default $PADDLE_IMAGE_CACHE_MAX_SIZE; none)");
  c->add_option("-t,--tag", a->tags,
                "Tag(s) for every output and push, beside the reference's own tag (replace image.tags)");
  c->add_option("--cache-dir", a->cache_dir,
                "Layer cache directory (default $PADDLE_IMAGE_CACHE or ~/.cache/paddle-image)");
  c->add_option("--source-date-epoch", a->epoch,
                "Timestamp for every file and the config (overrides $SOURCE_DATE_EPOCH)");
  c->add_option("--compression", a->compression, "Override every layer's compression")
      ->check(CLI::IsMember({"gzip", "zstd", "none", "gpu-node"}));
  c->add_option("-j,--threads", a->threads, "Compression threads (default: all cores; output does not depend on it)")
      ->check(CLI::Range(1, 256));
  c->add_option("--revision", a->revision, "Source revision for org.opencontainers.image.revision (default: git HEAD)");
  c->add_option("--source", a->source, "Source URL for org.opencontainers.image.source (overrides image.source)");
  c->add_option("--matrix", a->matrix_files, "Extra compatibility-matrix file(s) for base: auto");
  c->add_option("--digest-file", a->digest_file, "Write the manifest digest to this file");
  c->add_option("--metadata-file", a->metadata_file, "Write build metadata (JSON) to this file");
  c->add_flag("--json", a->json, "Print the build metadata as JSON on stdout");
  c->add_flag("-q,--quiet", a->quiet, "No progress output");
  c->add_flag("--sign", a->sign,
              "Sign every layout output and push, and attach SLSA provenance and an SBOM (needs --key)");
  c->add_option("--key", a->key.key, "Private key for --sign (cosign.key, or a PKCS#8/SEC1 EC PEM)");
  c->add_option("--passphrase-file", a->key.passphrase_file,
                "Read the key's passphrase from this file (default $COSIGN_PASSWORD, else a prompt on a terminal)");
  c->add_option("--identity", a->identity,
                "The docker-reference layout outputs are signed for (default: image.name and the tag)");
  c->add_option("--sbom-format", a->sbom_format, "SBOM attestation with --sign: spdx, cyclonedx or both")
      ->check(CLI::IsMember({"spdx", "cyclonedx", "both"}));
  c->add_option("--sbom-base", a->sbom_base,
                "scan: the SBOM lists the base's packages too (reads its layers once, cached per layer); skip: only "
                "paddle-image's layers")
      ->check(CLI::IsMember({"scan", "skip"}));
  c->add_option("--cache-from", a->cache_from,
                "Registry cache repository to read layers and base views from on a local miss (repeatable; "
                "default $PADDLE_IMAGE_CACHE_FROM)");
  c->add_option("--cache-to", a->cache_to,
                "Registry cache repository to write layers and base views to (repeatable; default "
                "$PADDLE_IMAGE_CACHE_TO; protected branches only: docs/registry-cache.md)");
  c->add_option("--cache-sign-key", a->cache_sign_key,
                "Sign the registry cache entries written with this key (default $PADDLE_IMAGE_CACHE_SIGN_KEY)");
  c->add_option("--cache-verify-key", a->cache_verify_key,
                "Use only registry cache entries signed by this public key (default "
                "$PADDLE_IMAGE_CACHE_VERIFY_KEY)");
  a->flags.add(c, true, false);
  return [a] { return run_build(*a); };
}

} // namespace cli
