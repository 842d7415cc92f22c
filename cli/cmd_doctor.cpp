#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "cli/registry_flags.hpp"
#include "compat_matrix/matrix.hpp"
#include "doctor/checks.hpp"
#include "doctor/fleet.hpp"
#include "doctor/image.hpp"
#include "oci/layout.hpp"
#include "oci/layout_image.hpp"
#include "oci/reference.hpp"
#include "templates/k8s.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"

#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <unistd.h>

namespace cli {

namespace {

struct DoctorArgs {
  std::string root = "/";
  std::string image;
  std::string requires_;
  bool scan_layers = false;
  std::string nvml_lib;
  std::string cuda_lib;
  double timeout = 10;
  std::vector<std::string> matrix_files;
  std::string node;
  bool json = false;
  bool strict = false;
  std::string render;
  std::string doctor_image; // required with --render
  std::vector<std::string> node_selector;
  std::string ns = "kube-system";
  std::vector<std::string> aggregate_files;
  RegistryFlags flags; // for a registry --image
};

bool use_colour(const Output& out) {
  const char* nc = std::getenv("NO_COLOR");
  return out.tty && ::isatty(STDOUT_FILENO) == 1 && (nc == nullptr || *nc == '\0');
}

std::string render_text(const doctor::Report& r, bool colour) {
  std::ostringstream t;
  auto paint = [&](doctor::Status s) {
    std::string label = doctor::to_string(s);
    if (!colour) {
      return label;
    }
    const char* code = s == doctor::Status::pass   ? "32"
                       : s == doctor::Status::warn ? "33"
                       : s == doctor::Status::fail ? "31"
                                                   : "90";
    return "\033[" + std::string(code) + "m" + label + "\033[0m";
  };
  for (const auto& c : r.checks) {
    std::string id = c.id;
    id.resize(std::max<std::size_t>(id.size(), 24), ' ');
    t << paint(c.status) << "  " << id << c.evidence << "\n";
    if (!c.fix.empty() && (c.status == doctor::Status::fail || c.status == doctor::Status::warn)) {
      t << "      " << std::string(24, ' ') << "fix: " << c.fix << "\n";
    }
  }
  t << "summary: " << r.count(doctor::Status::pass) << " pass, " << r.count(doctor::Status::warn) << " warn, "
    << r.count(doctor::Status::fail) << " fail, " << r.count(doctor::Status::skip) << " skip\n";
  return t.str();
}

// Everything --render puts into the manifest is checked here (usage errors, exit 2)
// and quoted when written.
void validate_render(const DoctorArgs& a) {
  using util::Error;
  using util::ErrorKind;
  if (a.render != "daemonset") {
    throw Error(ErrorKind::usage, "--render " + a.render + ": only 'daemonset' can be rendered");
  }
  if (a.doctor_image.empty()) {
    throw Error(ErrorKind::usage, "--render daemonset needs --doctor-image",
                "build the doctor image from examples/doctor/ and push it, then pass --doctor-image "
                "REGISTRY/paddle-image-doctor:TAG");
  }
  oci::ImageRef ref;
  try {
    ref = oci::ImageRef::parse(a.doctor_image);
  } catch (const util::Error& e) {
    throw Error(ErrorKind::usage, "--doctor-image '" + a.doctor_image + "' is not an image reference: " + e.what(),
                "e.g. registry.example.com/tools/paddle-image-doctor:1.0");
  }
  if (ref.kind != oci::ImageRef::Kind::registry || a.doctor_image.rfind("docker://", 0) == 0) {
    throw Error(ErrorKind::usage,
                "--doctor-image '" + a.doctor_image + "' must be a registry reference (the kubelet pulls it)",
                "e.g. registry.example.com/tools/paddle-image-doctor:1.0");
  }
  if (!templates::k8s::dns1123_label(a.ns)) {
    throw Error(ErrorKind::usage,
                "--namespace '" + a.ns +
                    "' is not a Kubernetes namespace (a DNS-1123 label: lower-case letters, "
                    "digits and '-', starting and ending with a letter or digit, at most 63)",
                "e.g. --namespace kube-system");
  }
  for (const auto& kv : a.node_selector) {
    templates::k8s::parse_selector(kv, "--node-selector");
  }
}

// The DaemonSet comes from templates/ (docs/templates.md), as every rendered manifest does.
std::string render_daemonset(const DoctorArgs& a, const std::string& requires_arg) {
  templates::k8s::DaemonSetInput in;
  in.ns = a.ns;
  in.image = a.doctor_image;
  for (const auto& kv : a.node_selector) {
    in.node_selector.push_back(templates::k8s::parse_selector(kv, "--node-selector"));
  }
  in.command = {"/usr/local/bin/paddle-image", "doctor", "--root", "/host", "--json", "--node", "$(NODE_NAME)"};
  if (!requires_arg.empty()) {
    in.command.push_back("--requires");
    in.command.push_back(requires_arg);
  }
  return templates::k8s::to_yaml_stream(
      templates::k8s::doctor_daemonset(in),
      "paddle-image doctor on every GPU node: read-only host mounts, JSON report on stdout.\n"
      "Collect with: kubectl logs -n " +
          a.ns +
          " -l app=paddle-image-doctor --prefix=false > nodes.jsonl\n" // a validated DNS-1123 label
          "then: paddle-image doctor aggregate nodes.jsonl");
}

// The image's needs from its config (an index resolved to --platform); with
// --scan-layers its layers are read too: streamed from a registry or a docker-archive,
// read in place from a layout. Nothing is stored.
doctor::ImageNeeds image_needs(const DoctorArgs& a, const Output& out) {
  return util::with_context("--image " + a.image, [&] {
    oci::ImageRef ref = oci::ImageRef::parse(a.image);
    RegistrySession sess(a.flags, out, ref.registry);
    oci::ImagePtr img = open_image(ref, sess);
    oci::CopyOptions sel = sess.transfer_options();
    std::string source = a.image;
    if (ref.kind == oci::ImageRef::Kind::registry) {
      source = ref.str() + "@" + oci::select_platform(*img, sel).digest.str();
    }
    doctor::ImageNeeds n = doctor::image_needs(*img, sel, a.scan_layers, source);
    sess.finish();
    return n;
  });
}

// The needs the host is checked against: the image's (--image) or --requires', or
// none.
std::optional<doctor::ImageNeeds> requested_needs(const DoctorArgs& a, const Output& out) {
  if (!a.image.empty()) {
    return image_needs(a, out);
  }
  if (!a.requires_.empty()) {
    return doctor::needs_from_requires(a.requires_);
  }
  return std::nullopt;
}

// The host checks on the files under --root, with --node recorded in the facts.
doctor::Report check_root(const DoctorArgs& a) {
  std::error_code ec;
  if (!std::filesystem::is_directory(a.root, ec)) {
    throw util::Error(util::ErrorKind::usage, "--root " + a.root + " is not a directory",
                      "point at the host's / (or its mount)");
  }
  doctor::Options o;
  o.nvml_lib = a.nvml_lib;
  o.cuda_lib = a.cuda_lib;
  o.timeout_ms = static_cast<int>(a.timeout * 1000);
  doctor::Report r = doctor::check_host(doctor::Host(a.root), o);
  if (!a.node.empty()) {
    r.facts["node"] = a.node;
  }
  return r;
}

int run_doctor(const DoctorArgs& a) {
  Output out = Output::detect(a.json, false);
  if (!a.image.empty() && !a.requires_.empty()) {
    throw util::Error(util::ErrorKind::usage, "--image and --requires exclude each other", "give one of them");
  }
  if (!a.render.empty()) {
    validate_render(a); // before the image is read
  }
  std::optional<doctor::ImageNeeds> needs = requested_needs(a, out);
  if (!a.render.empty()) {
    std::cout << render_daemonset(a, needs ? doctor::needs_as_requires(*needs) : std::string{});
    return 0;
  }
  doctor::Report r = check_root(a);
  if (needs) {
    compat::Matrix m = compat::load_matrix(a.matrix_files);
    doctor::check_image(r, *needs, m);
  }
  nlohmann::json j = doctor::to_json(r);
  if (!a.node.empty()) {
    j["node"] = a.node;
  }
  out.result(j, render_text(r, use_colour(out)));
  return doctor::host_failed(r, a.strict) ? util::exit_code(util::ErrorKind::host) : 0;
}

// The reports in the files given (JSON, or JSON lines), stdin for none or "-".
std::vector<nlohmann::json> read_reports(const std::vector<std::string>& given) {
  std::vector<nlohmann::json> reports;
  std::vector<std::string> files = given.empty() ? std::vector<std::string>{"-"} : given;
  for (const auto& f : files) {
    std::vector<nlohmann::json> some;
    if (f == "-") {
      std::stringstream ss;
      ss << std::cin.rdbuf();
      some = doctor::parse_reports(ss.str(), "stdin");
    } else {
      some = doctor::parse_reports(util::read_file(f), f);
    }
    reports.insert(reports.end(), some.begin(), some.end());
  }
  return reports;
}

int run_aggregate(const DoctorArgs& a) {
  Output out = Output::detect(a.json, false);
  doctor::Fleet f = doctor::aggregate(read_reports(a.aggregate_files));
  out.result(doctor::to_json(f), doctor::to_text(f));
  return f.any_fail() ? util::exit_code(util::ErrorKind::host) : 0;
}

} // namespace

Action add_doctor(CLI::App& app) {
  auto a = std::make_shared<DoctorArgs>();
  CLI::App* d = app.add_subcommand("doctor", "Check a GPU node, and whether an image will see and use its GPUs");
  d->add_option("--root", a->root, "Read host files under this directory (default /)");
  d->add_option("--image", a->image,
                "Image to check against this host: oci:DIR[:TAG], docker-archive:FILE, oci-archive:FILE[:TAG] or a "
                "registry reference");
  d->add_option("--requires", a->requires_, "Image needs instead of --image, e.g. cuda=12.6,sm=90,driver=560.28.03");
  d->add_flag("--scan-layers", a->scan_layers,
              "Also look inside the image's layers (driver files, cuda-compat); a registry image's layers are then "
              "downloaded");
  d->add_option("--nvml-lib", a->nvml_lib, "Load this libnvidia-ml.so instead of looking it up under --root");
  d->add_option("--cuda-lib", a->cuda_lib, "Load this libcuda.so instead of looking it up under --root");
  d->add_option("--timeout", a->timeout, "Seconds NVML/CUDA probes may take (they run in a child process)")
      ->check(CLI::Range(0.1, 600.0));
  d->add_option("--matrix", a->matrix_files, "Extra compatibility-matrix files");
  d->add_option("--node", a->node, "Node name recorded in the report (for aggregate)");
  d->add_flag("--json", a->json, "JSON with every check");
  d->add_flag("--strict", a->strict, "Warnings fail too");
  d->add_option("--render", a->render, "Print a manifest instead of checking: daemonset");
  d->add_option("--doctor-image", a->doctor_image,
                "Image the DaemonSet runs (required with --render; build it from examples/doctor)");
  d->add_option("--node-selector", a->node_selector, "KEY=VALUE node selector for the DaemonSet (repeatable)");
  d->add_option("--namespace", a->ns, "Namespace of the DaemonSet");
  // Registry flags for a registry --image (docs/registry.md); the doctor's own --timeout
  // is the probe timeout, so the registry's is --registry-timeout.
  RegistryFlags& f = a->flags;
  d->add_flag("--insecure", f.insecure,
              "Allow plain HTTP or unverified TLS for the --image registry (local test "
              "registries only)");
  d->add_option("--insecure-registry", f.insecure_hosts, "Allow plain HTTP or unverified TLS for this host only");
  d->add_option("--ca-file", f.ca_file, "Trust this CA (PEM) in addition to the system's")->check(CLI::ExistingFile);
  d->add_option("-u,--username", f.username, "Registry user (with --password-stdin)");
  d->add_flag("--password-stdin", f.password_stdin, "Read the registry password or token from stdin");
  d->add_option("--retries", f.retries, "Registry attempts per request after the first (default 5)")
      ->check(CLI::Range(0, 50));
  d->add_option("--registry-timeout", f.timeout, "Seconds a stalled registry transfer may wait (default 30)")
      ->check(CLI::Range(1, 3600));
  d->add_option("--log-level", f.log_level, "Registry log: error, warn, info, debug or trace")
      ->check(CLI::IsMember({"error", "warn", "info", "debug", "trace"}));
  d->add_option("--platform", f.platform, "Image of an index to check (default linux/amd64)");
  CLI::App* agg = d->add_subcommand("aggregate", "Merge many nodes' doctor --json reports into one table");
  agg->add_option("files", a->aggregate_files, "Report files (JSON, or JSON lines); - or none for stdin");
  agg->add_flag("--json", a->json, "JSON output");
  return [a, agg] { return agg->parsed() ? run_aggregate(*a) : run_doctor(*a); };
}

} // namespace cli
