// warm plan, push, export, hosts, verify: put an image where GPU nodes will find it
// before the pods arrive (docs/warm.md).
#include "builder/build.hpp"
#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "cli/registry_flags.hpp"
#include "imageio/source.hpp"
#include "oci/reference.hpp"
#include "registry/transfer.hpp"
#include "templates/k8s.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"
#include "warm/export.hpp"
#include "warm/have.hpp"
#include "warm/hosts.hpp"
#include "warm/manifests.hpp"
#include "warm/mirror.hpp"
#include "warm/plan.hpp"
#include "warm/target.hpp"
#include "warm/verify.hpp"

#include <iostream>
#include <memory>
#include <sstream>

namespace cli {

using util::Error;
using util::ErrorKind;

namespace {

std::string short_digest(const oci::Digest& d) {
  return d.algorithm + ":" + d.hex.substr(0, 12);
}

std::string pad(std::string s, std::size_t n) {
  if (s.size() < n) {
    s.append(n - s.size(), ' ');
  }
  return s;
}

using warm::parse_registry_image;

// The flags with consent to plain HTTP for a target written http://.
RegistryFlags with_target(const RegistryFlags& given, const warm::RegistryTarget& target) {
  RegistryFlags flags = given;
  if (target.plain_http) {
    flags.insecure_hosts.push_back(target.host);
  }
  return flags;
}

// --- plan --------------------------------------------------------------------------

struct PlanArgs {
  std::string image;
  std::string against;
  std::string have;
  bool json = false;
  RegistryFlags flags;
};

// warm plan's table: a line per layer, the config, the total.
std::string plan_text(const warm::Plan& p) {
  std::ostringstream t;
  t << p.image << " (" << p.digest.str() << ", " << oci::platform_str(p.platform) << ") against " << p.baseline << "\n";
  t << "  " << pad("LAYER", 21) << pad("SIZE", 11) << pad("STATUS", 8) << pad("DIFF_ID", 21) << "CHAIN_ID\n";
  for (const auto& l : p.layers) {
    std::string status = l.shared ? "shared" : "new";
    if (warm::unpacks_again(l)) {
      status = "shared*"; // the blob is there, the unpacked chain is not
    }
    t << "  " << pad(short_digest(l.digest), 21) << pad(human_size(l.size), 11) << pad(status, 8)
      << pad(short_digest(l.diff_id), 21) << short_digest(l.chain_id) << "\n";
  }
  t << "  " << pad("config", 21) << pad(human_size(p.config.size), 11) << (p.config_shared ? "shared" : "new") << "\n";
  if (std::any_of(p.layers.begin(), p.layers.end(), warm::unpacks_again)) {
    t << "  * the blob is shared but a layer below it differs: the node unpacks it again\n";
  }
  t << "to move: " << p.layers_new << " of " << p.layers.size() << " layers, " << human_size(p.bytes_to_move) << " of "
    << human_size(p.bytes_total) << " (" << p.bytes_to_move << " bytes, manifest and config included)\n";
  return t.str();
}

int run_plan(const PlanArgs& a) {
  Output out = Output::detect(a.json, true);
  warm::check_one_baseline(a.against, a.have);
  oci::ImageRef ref = util::with_context("IMAGE", [&] { return oci::ImageRef::parse(a.image); });
  std::optional<warm::HaveList> have;
  if (!a.have.empty()) {
    have = warm::read_have(a.have); // before any request: a bad file fails fast
  }
  RegistrySession sess(a.flags, out, ref.registry);
  oci::CopyOptions opt = sess.transfer_options();
  oci::ImagePtr img = open_image(ref, sess);
  warm::Baseline base = warm::empty_baseline();
  if (have) {
    base = warm::baseline_from_have(*have);
  } else if (!a.against.empty()) {
    oci::ImageRef aref = util::with_context("--against", [&] { return oci::ImageRef::parse(a.against); });
    oci::ImagePtr against = util::with_context("--against " + aref.str(), [&] { return open_image(aref, sess); });
    base = util::with_context("--against " + aref.str(), [&] { return warm::baseline_from_image(*against, opt); });
  }
  warm::Plan p = warm::make_plan(*img, opt, base);
  out.result(warm::to_json(p), plan_text(p));
  return 0;
}

// --- push --------------------------------------------------------------------------

struct PushArgs {
  std::string image;
  std::string to;
  std::string through;
  bool tag = false;
  bool json = false;
  bool quiet = false;
  RegistryFlags flags;
};

// --to: pushes what the mirror lacks, by digest, then the tags.
int push_to_mirror(const warm::PushTarget& p, RegistrySession& sess, const Output& out,
                   const std::shared_ptr<registry::Registry>& reg, const oci::CopyOptions& opt) {
  const oci::ImageRef& ref = p.ref;
  const std::string& host = p.target.host;
  oci::ImagePtr img = open_image(ref, sess);
  out.info("pushing " + img->name() + " (" + img->root().digest.str() + ") to " + host + "/" + ref.repository);
  warm::MirrorResult r = util::with_context("pushing to " + host + "/" + ref.repository, [&] {
    return warm::push_to_mirror(*img, reg, ref.repository, p.tags, opt);
  });
  sess.finish();
  const auto& st = sess.stats();
  std::string text;
  for (const auto& x : r.copy.refs) {
    text += x + "\n";
  }
  out.info(human_size(st.bytes_uploaded) + " uploaded (" + std::to_string(st.blobs_uploaded.load()) + " blobs), " +
           human_size(st.bytes_mounted) + " mounted, " + human_size(st.bytes_skipped) + " already there (" +
           std::to_string(st.blobs_skipped.load()) + " blobs); " + std::to_string(r.copy.attachments) +
           " signature/attestation manifest(s) along");
  nlohmann::json j = warm::to_json(r, ref, host);
  j["stats"] = sess.stats_json();
  out.result(j, text);
  return 0;
}

// --through: reads the image and everything it needs through the pull-through cache.
int push_through(const warm::PushTarget& p, RegistrySession& sess, const Output& out,
                 const std::shared_ptr<registry::Registry>& reg, const oci::CopyOptions& opt) {
  const oci::ImageRef& ref = p.ref;
  const std::string& host = p.target.host;
  std::string reference = warm::reference_of(ref);
  out.info("reading " + ref.repository + ":" + reference + " through " + host);
  warm::ThroughResult r = util::with_context("warming " + host + "/" + ref.repository,
                                             [&] { return warm::warm_through(reg, ref.repository, reference, opt); });
  sess.finish();
  std::string text = host + "/" + ref.repository + "@" + r.top.digest.str() + ": " +
                     std::to_string(r.manifests.size()) + " manifest(s) and " + std::to_string(r.blobs.size()) +
                     " blob(s), " + human_size(r.bytes) + ", read through the cache with every digest checked\n";
  nlohmann::json j = warm::to_json(r, ref, host);
  j["stats"] = sess.stats_json();
  out.result(j, text);
  return 0;
}

int run_push(const PushArgs& a) {
  Output out = Output::detect(a.json, a.quiet);
  warm::PushTarget p = warm::push_target({a.image, a.to, a.through, a.tag});
  RegistrySession sess(with_target(a.flags, p.target), out, p.target.host);
  oci::CopyOptions opt = sess.transfer_options();
  auto reg = sess.connect(p.target.host);
  util::with_context(p.target.host, [&] { reg->ping(); }); // a mirror that is down fails before anything is read
  return p.to_mirror ? push_to_mirror(p, sess, out, reg, opt) : push_through(p, sess, out, reg, opt);
}

// --- export ------------------------------------------------------------------------

struct ExportArgs {
  std::string image;
  std::string output;
  std::string format = "oci-archive";
  std::string name;
  std::string have;
  bool thin = false;
  bool pin = false;
  bool json = false;
  bool quiet = false;
  RegistryFlags flags;
};

// What the node's user should know about this archive (printed even with --quiet: it
// changes what to run on the node).
std::vector<std::string> export_notes(const ExportArgs& a, const warm::ExportResult& r) {
  std::vector<std::string> notes;
  if (!r.omitted.empty()) {
    std::int64_t left = 0;
    for (const auto& d : r.omitted) {
      left += d.size;
    }
    notes.push_back("this archive is thin: " + std::to_string(r.omitted.size()) + " layer(s) (" + human_size(left) +
                    ") listed in " + a.have +
                    " are left out; ctr import needs them in the node's content store, or it fails to unpack");
  } else if (a.thin) {
    notes.push_back("--thin: the node has none of this image's layers, so the archive holds all of them");
  }
  if (a.pin) {
    notes.push_back("Debian 12's containerd 1.6 has no `ctr images import --label`: the label command pins the "
                    "image after the import; the CRI honours io.cri-containerd.pinned from containerd 1.7.3 on "
                    "(older ones keep the label, but the kubelet may still garbage-collect the image)");
  }
  if (r.format == warm::ArchiveFormat::docker_archive) {
    notes.push_back("containerd rebuilds a docker-archive's manifest (uncompressed layers): on the node the image "
                    "has another digest, so pods pinned by digest will not find it; use --format oci-archive for "
                    "those");
  }
  return notes;
}

nlohmann::json digests_json(const std::vector<oci::Descriptor>& ds) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& d : ds) {
    list.push_back(d.digest.str());
  }
  return list;
}

nlohmann::json export_json(const ExportArgs& a, const oci::ImageRef& ref, const warm::ExportResult& r,
                           const std::vector<std::string>& notes) {
  return {{"image", ref.str()},
          {"file", a.output},
          {"format", warm::format_name(r.format)},
          {"digest", r.manifest.digest.str()},
          {"platform", oci::platform_str(r.platform)},
          {"names", r.names},
          {"thin", a.thin},
          {"blobs", digests_json(r.written)},
          {"omitted", digests_json(r.omitted)},
          {"bytes", r.archive_bytes},
          {"commands", r.commands},
          {"notes", notes}};
}

int run_export(const ExportArgs& a) {
  Output out = Output::detect(a.json, a.quiet);
  warm::ExportOptions eo;
  eo.format = warm::parse_archive_format(a.format, "--format");
  eo.pin = a.pin;
  oci::ImageRef ref = util::with_context("IMAGE", [&] { return oci::ImageRef::parse(a.image); });
  warm::set_export_name(eo, ref, a.name);
  // Flags that go together are checked before any file is read or request made.
  warm::ExportOptions pre = eo;
  if (!a.have.empty()) {
    pre.have = warm::HaveList{};
  }
  warm::check_export_options(pre, a.thin);
  if (a.thin) {
    eo.have = warm::read_have(a.have);
  }
  eo.mtime = builder::k_default_epoch;
  RegistrySession sess(a.flags, out, ref.registry);
  eo.copy = sess.transfer_options();
  oci::ImagePtr img = open_image(ref, sess);
  out.info("writing " + warm::format_name(eo.format) + " " + a.output + " from " + img->name());
  warm::ExportResult r = warm::export_archive(*img, a.output, eo); // errors name the file
  sess.finish();
  std::vector<std::string> notes = export_notes(a, r);
  for (const auto& n : notes) {
    std::cerr << "note: " << n << "\n";
  }
  std::string text;
  for (const auto& c : r.commands) {
    text += c + "\n";
  }
  out.result(export_json(a, ref, r, notes), text);
  return 0;
}

// --- hosts -------------------------------------------------------------------------

struct HostsArgs {
  warm::HostsOptions opt;
  std::string ca;
  std::string output;
  std::string certs_dir = "/etc/containerd/certs.d";
  bool json = false;
};

int run_hosts(HostsArgs a) {
  Output out = Output::detect(a.json, false);
  a.opt.ca_file = a.ca;
  warm::HostsFile f = warm::render_hosts(a.opt);
  warm::HostsWritten w = warm::write_hosts(f, a.opt, a.output);
  std::string v2 = warm::config_path_snippet(a.certs_dir, 2);
  std::string v3 = warm::config_path_snippet(a.certs_dir, 3);
  std::ostringstream t;
  t << "wrote " << w.hosts_toml.string() << " (mirrors for " << f.host_dir << ", in order: ";
  for (std::size_t i = 0; i < f.mirrors.size(); ++i) {
    t << (i ? ", " : "") << f.mirrors[i];
  }
  t << (f.server.empty() ? "" : "; then " + f.server) << ")\n";
  if (!w.ca.empty()) {
    t << "wrote " << w.ca.string() << " (the CA hosts.toml names)\n";
  }
  t << "\nNothing was installed. On each node, copy " << a.output << "/" << f.host_dir << "/ into " << a.certs_dir
    << "/ and point containerd's CRI at it (/etc/containerd/config.toml; takes effect after a restart, the\n"
    << "hosts.toml files themselves are re-read on every pull):\n\n"
    << "# containerd 1.x (config version 2)\n"
    << v2 << "\n# containerd 2.x (config version 3)\n"
    << v3 << "\nTry it without the CRI: ctr -n k8s.io images pull --hosts-dir " << a.certs_dir << " "
    << (f.host_dir == "_default" ? std::string("REGISTRY") : f.host_dir) << "/REPO@sha256:...\n";
  out.result({{"hosts_toml", w.hosts_toml.string()},
              {"host", f.host_dir},
              {"server", f.server},
              {"mirrors", f.mirrors},
              {"ca", w.ca.string()},
              {"config_path", {{"v2", v2}, {"v3", v3}}}},
             t.str());
  return 0;
}

// --- verify ------------------------------------------------------------------------

struct WarmVerifyArgs {
  std::string image;
  std::string registry;
  std::string content_dir;
  bool json = false;
  bool quiet = false;
  RegistryFlags flags;
};

// --content-dir: the blobs of the image, pinned by digest, in a node's content store
// or a layout.
warm::VerifyReport check_content_dir(const WarmVerifyArgs& a, const Output& out) {
  oci::Digest digest = warm::content_dir_digest(a.image);
  RegistrySession sess(a.flags, out);
  oci::CopyOptions opt = sess.transfer_options();
  warm::VerifyReport rep = warm::verify_content_dir(a.content_dir, digest, opt);
  sess.finish();
  return rep;
}

// --registry: the image on a mirror or a cache; a tag checked on a registry other than
// the image's own is resolved there first.
warm::VerifyReport check_registry(const WarmVerifyArgs& a, const Output& out) {
  oci::ImageRef ref = parse_registry_image(a.image, "IMAGE");
  warm::RegistryTarget target = warm::parse_target(a.registry, "--registry");
  RegistrySession sess(with_target(a.flags, target), out, target.host);
  oci::CopyOptions opt = sess.transfer_options();
  std::string reference = warm::reference_of(ref);
  if (warm::resolves_upstream(ref, target.host)) {
    reference = warm::upstream_digest(sess.connect(ref.registry), ref).str();
    out.info(ref.str() + " is " + reference);
  }
  auto reg = sess.connect(target.host);
  warm::VerifyReport rep = util::with_context("verifying " + target.host + "/" + ref.repository, [&] {
    return warm::verify_registry(reg, ref.repository, reference, opt);
  });
  sess.finish();
  return rep;
}

// warm verify's table: a line per blob, then the summary.
std::string verify_text(const warm::VerifyReport& rep) {
  std::ostringstream t;
  for (const auto& b : rep.blobs) {
    const char* s = b.status == warm::BlobStatus::ok        ? "ok     "
                    : b.status == warm::BlobStatus::missing ? "MISSING"
                                                            : "CORRUPT";
    t << s << "  " << pad(b.kind, 11) << b.desc.digest.str() << "  " << human_size(b.desc.size) << "\n";
  }
  t << rep.summary() << "\n";
  return t.str();
}

// A check that failed: the report on stdout (the JSON with the error in it, or the
// table), the error on stderr, and the exit status of the failure's kind.
int verify_failed(const WarmVerifyArgs& a, const warm::VerifyReport& rep, nlohmann::json j, const std::string& text) {
  ErrorKind kind = rep.failure_kind();
  std::string msg = warm::failure_message(rep, a.image);
  std::string hint = warm::failure_hint(kind);
  if (a.json) {
    j["error"] = {{"kind", std::string(util::kind_name(kind))},
                  {"message", msg},
                  {"hint", hint},
                  {"exit_code", util::exit_code(kind)}};
    std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << std::endl;
  } else {
    std::cout << text << std::flush;
  }
  std::cerr << "paddle-image: error: " << msg << "\n  hint: " << hint << "\n";
  return util::exit_code(kind);
}

int run_warm_verify(const WarmVerifyArgs& a) {
  Output out = Output::detect(a.json, a.quiet);
  warm::check_one_store(a.registry, a.content_dir);
  warm::VerifyReport rep = a.content_dir.empty() ? check_registry(a, out) : check_content_dir(a, out);
  std::string text = verify_text(rep);
  nlohmann::json j = warm::to_json(rep);
  j["image"] = a.image;
  if (!rep.passed()) {
    return verify_failed(a, rep, j, text);
  }
  out.result(j, text);
  return 0;
}

// --- manifests ---------------------------------------------------------------------

struct ManifestsArgs {
  std::vector<std::string> images;
  std::string kind;
  std::vector<std::string> node_selector;
  std::vector<std::string> tolerations;
  std::string ns;
  std::string name = "paddle-image-warm";
  std::string pause_image = "registry.k8s.io/pause:3.10";
  std::string command;
  std::string kruise_api = "v1alpha1";
  std::string bandwidth = "50MB/s";
  std::vector<std::string> pull_secrets;
  std::string output;
  bool json = false;
  RegistryFlags flags;
};

// A registry reference pinned by digest: a tag is resolved through its registry. With
// `bytes`, what a node pulls for it (the platform `opt` selects).
std::string pin(const std::string& text, const std::string& what, RegistrySession& sess, const Output& out,
                const oci::CopyOptions* opt, std::int64_t* bytes) {
  oci::ImageRef ref = parse_registry_image(text, what);
  auto reg = sess.connect(ref.registry);
  oci::ImagePtr img = util::with_context(
      what + " " + ref.str(), [&] { return imageio::open_source(ref, [&reg](const std::string&) { return reg; }); });
  std::string pinned = ref.name() + "@" + img->root().digest.str();
  if (ref.digest.empty()) {
    out.info(what + " " + ref.str() + " is " + img->root().digest.str() + " (resolved in " + ref.registry + ")");
  }
  if (bytes != nullptr) {
    *bytes = warm::pull_bytes(*img, *opt);
  }
  return pinned;
}

// The objects' input as the flags give it (the images are pinned afterwards).
warm::ManifestsInput manifests_input(const ManifestsArgs& a) {
  warm::ManifestsInput in;
  in.kind = warm::parse_manifest_kind(a.kind, "--kind");
  in.name = a.name;
  in.ns = a.ns;
  in.kruise_api = a.kruise_api;
  in.bandwidth = warm::parse_bandwidth(a.bandwidth, "--assume-bandwidth");
  in.pull_secrets = a.pull_secrets;
  for (const auto& s : a.node_selector) {
    in.node_selector.push_back(templates::k8s::parse_selector(s, "--node-selector"));
  }
  for (const auto& t : a.tolerations) {
    in.tolerations.push_back(templates::k8s::parse_toleration(t));
  }
  if (!a.command.empty()) {
    in.command = warm::parse_command(a.command);
  }
  return in;
}

int run_manifests(const ManifestsArgs& a) {
  Output out = Output::detect(a.json, false);
  warm::ManifestsInput in = manifests_input(a);
  RegistrySession sess(a.flags, out);
  oci::CopyOptions opt = sess.transfer_options();
  for (const auto& text : a.images) {
    warm::WarmImage im;
    im.given = text;
    im.pinned = pin(text, "IMAGE", sess, out, &opt, &im.bytes);
    in.images.push_back(im);
  }
  if (in.kind == warm::ManifestKind::daemonset) {
    in.pause_image = pin(a.pause_image, "--pause-image", sess, out, nullptr, nullptr);
  }
  warm::Rendered r = warm::render_manifests(in);
  std::string header = warm::manifests_header(in, r, a.kind, a.bandwidth);
  for (const auto& n : r.notes) {
    std::cerr << "note: " << n << "\n";
  }
  std::string yaml = templates::k8s::to_yaml_stream(r.docs, header);
  if (!a.output.empty()) {
    util::write_file_atomic(a.output, yaml);
    out.info("wrote " + a.output);
  }
  out.result(warm::to_json(in, r, a.kind, a.output), a.output.empty() ? yaml : "");
  return 0;
}

} // namespace

void add_warm_commands(CLI::App& app, std::vector<std::pair<CLI::App*, Action>>& actions) {
  CLI::App* w =
      app.add_subcommand("warm", "Put an image where GPU nodes find it before the pods arrive (docs/warm.md)");
  w->require_subcommand(1);

  auto plan = std::make_shared<PlanArgs>();
  CLI::App* c =
      w->add_subcommand("plan", "Which layers a node must fetch: digest, diff_id, chain id, size, new or shared");
  c->add_option("image", plan->image, "The image (registry reference, oci:DIR[:TAG] or docker-archive:FILE)")
      ->required();
  c->add_option("--against", plan->against, "Compare with an image the node already has");
  c->add_option("--have", plan->have, "Compare with the node's content store: `ctr -n k8s.io content ls -q` output");
  c->add_flag("--json", plan->json, "JSON output");
  plan->flags.add(c, false);
  actions.emplace_back(c, [plan] { return run_plan(*plan); });

  auto push = std::make_shared<PushArgs>();
  c = w->add_subcommand("push", "Push what a mirror lacks (same repository path), or read everything through a "
                                "pull-through cache");
  c->add_option("image", push->image, "REGISTRY/REPO[:TAG][@DIGEST]")->required();
  c->add_option("--to", push->to, "The mirror nodes pull from: HOST[:PORT] (http:// allows plain HTTP)");
  c->add_option("--through", push->through, "A pull-through cache to warm: URL (http:// allows plain HTTP)");
  c->add_flag("--tag", push->tag, "Also put IMAGE's tag on the mirror (the manifest always goes by digest)");
  c->add_flag("--json", push->json, "JSON output");
  c->add_flag("-q,--quiet", push->quiet, "No progress output");
  push->flags.add(c, true);
  actions.emplace_back(c, [push] { return run_push(*push); });

  auto exp = std::make_shared<ExportArgs>();
  c = w->add_subcommand("export", "Write an archive for `ctr -n k8s.io images import` and print the commands to run");
  c->add_option("image", exp->image, "The image (registry reference, oci:DIR[:TAG] or docker-archive:FILE)")
      ->required();
  c->add_option("-o,--output", exp->output, "The archive file")->required();
  c->add_option("--format", exp->format, "oci-archive (default) or docker-archive");
  c->add_option("--name", exp->name, "The name on the node (REGISTRY/REPO[:TAG]); default: IMAGE's");
  c->add_flag("--thin", exp->thin, "Leave out the layers the node has (oci-archive, with --have)");
  c->add_option("--have", exp->have, "The node's `ctr -n k8s.io content ls -q` output (with --thin)");
  c->add_flag("--pin", exp->pin, "Also print the label command that pins the image against kubelet GC");
  c->add_flag("--json", exp->json, "JSON output");
  c->add_flag("-q,--quiet", exp->quiet, "No progress output");
  exp->flags.add(c, false);
  exp->flags.jobs = 4;
  actions.emplace_back(c, [exp] { return run_export(*exp); });

  auto hosts = std::make_shared<HostsArgs>();
  c = w->add_subcommand("hosts", "Write containerd hosts.toml files for mirrors (DIR/<host>/hosts.toml; never "
                                 "installed)");
  c->add_option("--upstream", hosts->opt.upstream,
                "The registry the mirrors stand in for (host[:port], URL, "
                "docker.io or _default)")
      ->required();
  c->add_option("--mirror", hosts->opt.mirrors, "A mirror URL (repeatable, tried in order)")->required();
  c->add_option("--capabilities", hosts->opt.capabilities,
                "Of each mirror, comma separated: pull (by digest), resolve (tags), push; default pull,resolve")
      ->delimiter(',');
  c->add_flag("--skip-verify", hosts->opt.skip_verify, "Do not verify https mirrors' certificates (tests only)");
  c->add_option("--ca", hosts->ca, "A CA (PEM) for https mirrors, copied beside hosts.toml")->check(CLI::ExistingFile);
  c->add_option("-o,--output", hosts->output, "The directory to write <host>/hosts.toml into")->required();
  c->add_option("--certs-dir", hosts->certs_dir,
                "Where the files go on the nodes, for the printed config (default /etc/containerd/certs.d)");
  c->add_flag("--json", hosts->json, "JSON output");
  actions.emplace_back(c, [hosts] { return run_hosts(*hosts); });

  auto man = std::make_shared<ManifestsArgs>();
  c = w->add_subcommand("manifests", "Kubernetes objects that pull images onto GPU nodes ahead of the pods: DaemonSet, "
                                     "OpenKruise ImagePullJob or kube-fledged ImageCache, pinned by digest");
  c->add_option("image", man->images, "Registry references (a tag is resolved to its digest)")->required();
  c->add_option("--kind", man->kind, "daemonset, imagepulljob or imagecache")->required();
  c->add_option("--node-selector", man->node_selector, "KEY=VALUE the nodes carry (repeatable)");
  c->add_option("--toleration", man->tolerations, "KEY[=VALUE][:EFFECT] (repeatable; DaemonSet only)");
  c->add_option("-n,--namespace", man->ns, "The objects' namespace");
  c->add_option("--name", man->name, "The objects' name (default paddle-image-warm)");
  c->add_option("--pause-image", man->pause_image,
                "The DaemonSet's main container (default registry.k8s.io/pause:3.10; a tag is resolved to its digest)");
  c->add_option("--command", man->command,
                "What each init container runs (default /bin/sh -c true): words, or a JSON array for images "
                "without a shell");
  c->add_option("--kruise-api", man->kruise_api, "ImagePullJob API version: v1alpha1 (default) or v1beta1");
  c->add_option("--assume-bandwidth", man->bandwidth,
                "Per-node pull bandwidth for the deadlines (default 50MB/s): timeout = max(600 s, 3 x size / it)");
  c->add_option("--pull-secret", man->pull_secrets, "An image pull Secret's name (repeatable)");
  c->add_option("-o,--output", man->output, "Write the YAML here (atomically) instead of stdout");
  c->add_flag("--json", man->json, "JSON output (the objects as JSON)");
  man->flags.add(c, false);
  actions.emplace_back(c, [man] { return run_manifests(*man); });

  auto ver = std::make_shared<WarmVerifyArgs>();
  c = w->add_subcommand("verify", "Check a mirror or a content store holds every blob of an image (read and hashed)");
  c->add_option("image", ver->image, "REGISTRY/REPO[:TAG][@DIGEST] (--content-dir: pinned by digest)")->required();
  c->add_option("--registry", ver->registry, "The registry to check: HOST[:PORT] (http:// allows plain HTTP)");
  c->add_option("--content-dir", ver->content_dir,
                "A directory of blobs/sha256/<hex>: /var/lib/containerd/io.containerd.content.v1.content, an OCI "
                "layout");
  c->add_flag("--json", ver->json, "JSON output");
  c->add_flag("-q,--quiet", ver->quiet, "No progress output");
  c->add_option("--jobs", ver->flags.jobs, "Blobs read in parallel (default 4)")->check(CLI::Range(1, 64));
  c->add_flag("--all", ver->flags.all_platforms, "Check every image of an index");
  c->add_flag("--no-signatures", ver->flags.no_signatures,
              "Do not check the signatures and attestations the registry holds for the image");
  ver->flags.add(c, false);
  actions.emplace_back(c, [ver] { return run_warm_verify(*ver); });
}

} // namespace cli
