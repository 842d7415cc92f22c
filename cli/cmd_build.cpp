#include "builder/build.hpp"
#include "builder/supply_chain.hpp"
#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "cli/registry_flags.hpp"
#include "cli/signing_flags.hpp"
#include "layers/cache.hpp"
#include "oci/layout_image.hpp"
#include "signing/envelope.hpp"
#include "signing/sign.hpp"
#include "spec/spec.hpp"
#include "util/encoding.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <memory>
#include <optional>
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
};

// Runs `git -C DIR ARGS` (no shell expansion of DIR) and returns its stdout, or nullopt
// when git fails or is missing.
std::optional<std::string> run_git(const std::filesystem::path& dir, const std::string& args) {
  std::string quoted = "'";
  for (char c : dir.string()) {
    quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  }
  quoted += "'";
  std::string cmd = "git -C " + quoted + " " + args + " 2>/dev/null";
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

// What the SBOM describes: --identity's repository, else the image's name (as a
// registry reference's host/repo when it is one).
// The SBOM's name for the image: --identity; else, when every output is a push, the
// pushed repository (what `paddle-image sbom REF` names, so the two match byte for
// byte); else the spec's image name.
std::string sbom_subject(const spec::BuildSpec& s, const std::string& identity,
                         const std::vector<oci::ImageRef>& outputs) {
  bool push_only = !outputs.empty() && std::all_of(outputs.begin(), outputs.end(), [](const oci::ImageRef& r) {
    return r.kind == oci::ImageRef::Kind::registry;
  });
  if (identity.empty() && push_only) {
    return outputs.front().name();
  }
  std::string name = identity.empty() ? s.name : identity;
  try {
    oci::ImageRef r = oci::ImageRef::parse(name);
    if (r.kind == oci::ImageRef::Kind::registry) {
      return r.name();
    }
  } catch (const Error&) {
    // Not a reference (a display name): used as written.
  }
  return name.empty() ? std::string("image") : name;
}

// Signs every output that can carry a signature (each layout tag, each pushed tag)
// and attaches the build's provenance and SBOM, all for the one manifest digest.
nlohmann::json sign_outputs(const BuildArgs& a, const spec::BuildSpec& s, const builder::BuildOptions& o,
                            const builder::BuildReport& rep, const signing::SbomInput& sbom,
                            const signing::PrivateKey& key, RegistrySession& sess,
                            const builder::ProvenanceContext& ctx, const Output& out) {
  // (what to open, the identity to sign for): --identity names what layouts are signed
  // for; a push is opened by digest (a tag moved meanwhile does not matter) and signed
  // for its own host/repo:tag.
  // The third: the SBOM's name for that output. A push without --identity is
  // described as its own repository (what `paddle-image sbom REF` names), each push
  // target its own, not the first one's.
  struct Target {
    std::string ref, identity, sbom_name;
  };
  std::vector<Target> refs;
  for (const auto& w : rep.outputs) {
    if (w.rfind("oci:", 0) == 0) {
      refs.push_back({w, a.identity, sbom.image_name});
    }
  }
  for (const auto& p : rep.pushed) {
    std::string name = sbom.image_name;
    if (a.identity.empty()) {
      name = oci::ImageRef::parse(p).name();
    }
    refs.push_back({p, p.substr(0, p.find('@')), name});
  }
  nlohmann::json result = nlohmann::json::array();
  if (refs.empty()) {
    return result;
  }
  nlohmann::json provenance = signing::provenance_predicate(builder::build_provenance(s, o, rep, ctx));
  auto predicates_for = [&](const std::string& sbom_name) {
    signing::SbomInput named = sbom;
    named.image_name = sbom_name;
    std::vector<std::pair<std::string, nlohmann::json>> predicates = {{signing::k_slsa_provenance, provenance}};
    if (a.sbom_format == "spdx" || a.sbom_format == "both") {
      predicates.emplace_back(signing::k_spdx_document, signing::spdx_document(named));
    }
    if (a.sbom_format == "cyclonedx" || a.sbom_format == "both") {
      predicates.emplace_back(signing::k_cyclonedx_bom, signing::cyclonedx_bom(named));
    }
    return predicates;
  };
  for (const auto& [ref, identity, sbom_name] : refs) {
    auto predicates = predicates_for(sbom_name);
    SignTarget t = open_sign_target(ref, sess, identity, true);
    if (t.digest != rep.manifest.digest) {
      throw Error(ErrorKind::input,
                  ref + " was re-tagged while the build ran: it holds " + t.digest.str() +
                      ", not the image just built (" + rep.manifest.digest.str() + "); nothing was signed there",
                  "build again, or sign the built digest with 'paddle-image sign'");
    }
    auto sig = util::with_context(
        "signing " + ref, [&] { return signing::sign_image(*t.store, t.digest, t.identity, key, t.ref.str()); });
    nlohmann::json atts = nlohmann::json::array();
    for (const auto& entry : predicates) {
      const auto& type = entry.first;
      auto at = util::with_context("attesting " + ref, [&] {
        return signing::attest_image(*t.store, t.digest, t.subject_name, type, entry.second, key, t.ref.str());
      });
      atts.push_back({{"predicate_type", type}, {"layer", at.layer.str()}, {"added", at.added}});
    }
    out.info("signed " + ref + " as " + t.identity + " (provenance and SBOM attached)");
    result.push_back({{"reference", ref},
                      {"identity", t.identity},
                      {"signature", sig.layer.str()},
                      {"signature_tag", sig.tag},
                      {"attestations", atts}});
  }
  return result;
}

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

int run_build(const BuildArgs& a) {
  Output out = Output::detect(a.json, a.quiet);
  spec::BuildSpec s = spec::load(a.spec_file);
  builder::BuildOptions o;
  o.cache_dir = a.cache_dir.empty() ? default_cache_dir() : std::filesystem::path(a.cache_dir);
  std::string push_host;
  for (const auto& r : a.outputs) {
    o.outputs.push_back(util::with_context("--output", [&] { return oci::ImageRef::parse(r); }));
  }
  for (const auto& r : a.pushes) {
    auto ref = util::with_context("--push", [&] { return oci::ImageRef::parse(r); });
    if (ref.kind != oci::ImageRef::Kind::registry) {
      throw util::Error(util::ErrorKind::usage, "--push " + r + ": not a registry reference",
                        "e.g. --push registry.example.com/team/ocr:1.4.0 (use --output for oci: and docker-archive:)");
    }
    o.outputs.push_back(ref);
  }
  for (const auto& ref : o.outputs) {
    if (ref.kind == oci::ImageRef::Kind::registry && push_host.empty()) {
      push_host = ref.registry;
    }
  }
  RegistrySession sess(a.flags, out, push_host);
  o.connect = [&sess](const std::string& host) { return sess.connect(host); };
  o.transfer = sess.transfer_options();
  o.index = sess.index_access(index_defaults_from_env());
  for (const auto& t : a.tags) {
    if (!oci::is_valid_tag(t)) {
      throw util::Error(util::ErrorKind::usage, "--tag '" + t + "' is not a valid tag",
                        "letters, digits, '_', '.', '-' (max 128, not starting with '.' or '-')");
    }
  }
  o.tags = a.tags;
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
  builder::Events ev;
  ev.info = [&](const std::string& line) { out.info(line); };
  ev.debug = [&sess](const std::string& line) { sess.log(2, line); }; // --log-level debug, -vv
  ev.progress = [&](const std::string& layer, std::int64_t done, std::int64_t total) {
    out.progress(layer, done, total);
  };

  // Checked before the build, so a bad value does not waste one.
  std::optional<std::int64_t> cache_max = cache_max_size(a);
  // The key is read before the build, so a wrong passphrase does not waste one.
  std::optional<signing::PrivateKey> key;
  if (a.sign) {
    if (a.key.key.empty()) {
      throw Error(ErrorKind::usage, "--sign needs --key", "e.g. --sign --key cosign.key");
    }
    bool signable = o.outputs.empty();
    for (const auto& r : o.outputs) {
      signable = signable || r.kind != oci::ImageRef::Kind::docker_archive;
    }
    if (!signable) {
      throw Error(ErrorKind::usage, "--sign: a docker-archive cannot carry signatures, and it is the only output",
                  "add an OCI layout (-o oci:DIR) or a --push");
    }
    key = load_private_key(a.key);
  } else if (!a.key.key.empty()) {
    throw Error(ErrorKind::usage, "--key is given without --sign", "add --sign to sign the image");
  }
  builder::ProvenanceContext ctx;
  ctx.tool_version = k_tool_version;
  ctx.invocation_id = random_uuid();
  ctx.started_on = now_rfc3339();
  // The SBOM is read from the image as the build assembled it (its own layers from
  // the layer cache, a registry base's layers pulled into it once), before any push.
  signing::SbomInput sbom;
  if (key) {
    o.on_image = [&](const oci::Image& img, const builder::BuildReport& r) {
      builder::SbomOptions so;
      so.cache_dir = o.cache_dir;
      so.scan_base = a.sbom_base == "scan";
      so.store_view = false;
      for (const auto& l : r.layers) {
        if (l.kind == "base") {
          so.base_layers.insert(l.blob.digest.str());
        }
      }
      so.image_name = sbom_subject(s, a.identity, o.outputs);
      so.created = util::rfc3339_utc(o.source_date_epoch);
      so.tool_version = k_tool_version;
      so.info = [&out](const std::string& line) { out.info(line); };
      sbom = builder::image_sbom(img, img.root(), so);
      oci::Manifest m = oci::manifest_from_json(oci::parse_json(img.root().bytes, "the built manifest"));
      ctx.labels = oci::read_config(img, m).config.labels;
    };
  }
  builder::BuildReport rep = builder::build(s, o, ev);
  sess.finish();
  nlohmann::json signatures;
  if (key) {
    ctx.finished_on = now_rfc3339();
    signatures = sign_outputs(a, s, o, rep, sbom, *key, sess, ctx, out);
  }
  if (cache_max) {
    // Least recently used first: what this build just used is kept longest.
    auto pr = layers::LayerCache(o.cache_dir).prune(*cache_max);
    if (pr.layers_removed > 0 || pr.blobs_removed > 0) {
      out.info("cache: pruned to " + human_size(pr.bytes_after) + " (limit " + human_size(*cache_max) + ")");
    }
  }
  nlohmann::json meta = rep.to_json();
  meta["registry"] = sess.stats_json();
  if (key) {
    meta["signatures"] = signatures;
  }
  if (!a.digest_file.empty()) {
    util::write_file_atomic(a.digest_file, rep.manifest.digest.str() + "\n");
  }
  if (!a.metadata_file.empty()) {
    util::write_file_atomic(a.metadata_file, meta.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  }
  std::size_t rebuilt = 0;
  std::size_t reused = 0;
  for (const auto& l : rep.layers) {
    if (l.kind != "base") {
      (l.rebuilt ? rebuilt : reused)++;
    }
  }
  out.info("built " + rep.manifest.digest.str() + " in " + std::to_string(rep.seconds).substr(0, 5) + " s (" +
           std::to_string(rebuilt) + " layer(s) rebuilt, " + std::to_string(reused) + " reused)");
  std::string text;
  for (const auto& o2 : rep.outputs) {
    text += o2 + "@" + rep.manifest.digest.str() + "\n";
  }
  for (const auto& p : rep.pushed) {
    text += p + "\n";
  }
  if (!a.image_refs.empty()) {
    util::write_file_atomic(a.image_refs, text);
  }
  if (!rep.pushed.empty()) {
    const auto& st = sess.stats();
    out.info("pushed: " + human_size(st.bytes_uploaded) + " uploaded, " + human_size(st.bytes_mounted) + " mounted, " +
             human_size(st.bytes_skipped) + " already there, " + std::to_string(st.retries.load()) + " retries");
  }
  out.result(meta, text);
  return 0;
}

} // namespace

Action add_build(CLI::App& app) {
  auto a = std::make_shared<BuildArgs>();
  CLI::App* c = app.add_subcommand("build", "Build a layered, reproducible OCI image from a spec.yaml");
  c->add_option("spec", a->spec_file, "Path to spec.yaml")->required();
  c->add_option("-o,--output", a->outputs,
                "Where to write: oci:DIR[:TAG], docker-archive:FILE or a registry (repeatable; default oci:out/NAME "
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
  a->flags.add(c, true, false);
  return [a] { return run_build(*a); };
}

} // namespace cli
