// paddle-image render KIND SPEC: a spec rendered through a template (docs/templates.md).
#include "builder/build.hpp"
#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "cli/registry_flags.hpp"
#include "doctor/image.hpp"
#include "oci/reference.hpp"
#include "python/requirement.hpp"
#include "spec/spec.hpp"
#include "templates/ci.hpp"
#include "templates/dockerfile.hpp"
#include "templates/from_dockerfile.hpp"
#include "templates/from_spec.hpp"
#include "templates/init.hpp"
#include "templates/k8s_job.hpp"
#include "util/encoding.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/url.hpp"

#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>

namespace cli {

using util::Error;
using util::ErrorKind;

namespace {

namespace fs = std::filesystem;

const std::vector<std::string> k_render_kinds = {"dockerfile", "github-actions", "gitlab-ci", "k8s-job",
                                                 "paddle-distributed"};

struct RenderArgs {
  std::string kind;
  std::string spec_file;
  std::string output;
  std::string template_dir;
  std::string image;
  std::string requirements;
  std::string layer;
  bool no_sign = false;
  templates::ToolSource tool;
  bool json = false;
  // k8s-job, paddle-distributed
  templates::k8s::JobRequest job; // its kind, spec_file and image are the ones above
  std::string facts;
  RegistryFlags flags; // reading the image's facts from a registry
};

// --tool-archive URL --tool-sha256 HEX | --tool-image REF@sha256:HEX (CI files).
void add_tool_flags(CLI::App* c, templates::ToolSource& t, const std::string& which) {
  c->add_option("--tool-archive", t.archive_url,
                which + ": the pipeline downloads paddle-image's release archive from this URL (with --tool-sha256) "
                        "instead of building it from source");
  c->add_option("--tool-sha256", t.archive_sha256,
                which + ": the archive's SHA-256 (its SHA256SUMS line); the step fails on any other bytes");
  c->add_option("--tool-image", t.image,
                which + ": run the job in paddle-image's own image, pinned by digest (REPO@sha256:HEX)");
}

struct InitArgs {
  std::vector<std::string> args; // TEMPLATE DIR
  std::string image;
  templates::ToolSource tool;
  std::string template_dir;
  std::string from_dockerfile;
  std::vector<std::string> build_args; // NAME=VALUE, or NAME (from the environment)
  bool json = false;
};

// Writes the files under dir, none if any of them exists (exit 3 naming them).
void write_project(const fs::path& dir, const std::vector<templates::ProjectFile>& files) {
  std::vector<std::string> existing;
  for (const auto& f : files) {
    std::error_code ec;
    if (fs::exists(fs::symlink_status(dir / f.path, ec))) {
      existing.push_back((dir / f.path).string());
    }
  }
  if (!existing.empty()) {
    throw Error(ErrorKind::input, "init writes no file over an existing one: " + util::join(existing, ", "),
                "move " + std::string(existing.size() == 1 ? "it" : "them") +
                    " away or choose another directory; nothing was written");
  }
  for (const auto& f : files) {
    fs::path p = dir / f.path;
    util::create_dirs(p.parent_path(), "directory");
    util::write_file_atomic(p, f.content);
  }
}

// What init --from-dockerfile says it did: the files, the steps left out, the locks to write.
std::string from_dockerfile_summary(const fs::path& file, const fs::path& dir, const templates::FromDockerfile& r,
                                    const nlohmann::json& written) {
  std::string summary = "wrote " + (dir / "spec.yaml").string() + " (" + std::to_string(r.unmapped.size()) +
                        " instruction(s) not mapped, listed on stderr)\n";
  for (const auto& w : written) {
    summary += "wrote " + w.get<std::string>() + " (the packages of a pip install line)\n";
  }
  if (!r.left_out.empty()) {
    summary += "left out, as a spec needs nothing for them:\n";
    for (const auto& l : r.left_out) {
      summary += "  " + file.string() + ":" + l + "\n";
    }
  }
  if (!r.commands.empty()) {
    summary += "the layers install from locks, which these write; next, from " + dir.string() + ":\n";
    for (const auto& c : r.commands) {
      summary += "  " + c + "\n";
    }
  }
  return summary;
}

// --build-arg NAME=VALUE, or NAME for the environment's value (left out when unset), as
// docker build reads them.
std::map<std::string, std::string> build_arg_values(const std::vector<std::string>& given) {
  std::map<std::string, std::string> out;
  for (const auto& g : given) {
    std::size_t eq = g.find('=');
    std::string name = g.substr(0, eq);
    if (name.empty() || name.find_first_of(" \t\r\n$") != std::string::npos) {
      throw Error(ErrorKind::usage, "--build-arg '" + util::redact_text(g) + "': expected NAME=VALUE or NAME",
                  "as docker build takes it: --build-arg TAG=2.6.1 (NAME alone takes the environment's value)");
    }
    if (eq != std::string::npos) {
      out[name] = g.substr(eq + 1);
    } else if (const char* env = std::getenv(name.c_str())) {
      out[name] = env;
    }
  }
  return out;
}

// Each `pip install NAME` argument becomes a line of a requirements file that `lock`
// reads with this parser: one that it would refuse is refused at init, on its line.
std::optional<std::string> pep508_error(const std::string& arg) {
  try {
    python::Requirement::parse(arg);
    return std::nullopt;
  } catch (const std::invalid_argument& e) {
    return std::string(e.what());
  }
}

// What init --from-dockerfile says on stderr (warnings, what was not mapped) and as
// its result.
void report_from_dockerfile(const fs::path& file, const fs::path& dir, const templates::FromDockerfile& r,
                            const nlohmann::json& written, const Output& out) {
  nlohmann::json unmapped = nlohmann::json::array();
  for (const auto& name : r.unused_build_args) {
    std::cerr << "warning: --build-arg " << name << ": no ARG in " << file.string()
              << " declares it (docker build warns the same: not consumed)\n";
  }
  for (const auto& u : r.unmapped) {
    std::cerr << file.string() << ":" << u.line << ": not mapped: " << u.instruction << "\n  " << u.reason << "\n";
    unmapped.push_back({{"line", u.line}, {"instruction", u.instruction}, {"reason", u.reason}});
  }
  out.result({{"dockerfile", file.string()},
              {"spec", (dir / "spec.yaml").string()},
              {"unmapped", unmapped},
              {"files", written},
              {"left_out", r.left_out},
              {"unused_build_args", r.unused_build_args},
              {"commands", r.commands}},
             from_dockerfile_summary(file, dir, r, written));
}

int run_from_dockerfile(const InitArgs& a, const Output& out) {
  if (a.args.size() > 1) {
    throw Error(ErrorKind::usage,
                "init --from-dockerfile takes at most a directory: paddle-image init --from-dockerfile "
                "Dockerfile [DIR]",
                "the spec goes to DIR (default: the Dockerfile's directory, its build context)");
  }
  fs::path file = a.from_dockerfile;
  fs::path context = file.parent_path().empty() ? fs::path(".") : file.parent_path();
  fs::path dir = a.args.empty() ? context : fs::path(a.args[0]);
  std::string rel = fs::absolute(context)
                        .lexically_normal()
                        .lexically_relative(fs::absolute(dir).lexically_normal())
                        .generic_string();
  std::string text = util::read_file(file);
  templates::FromDockerfileOptions opts;
  opts.context = rel == "." ? "" : rel;
  opts.requirement_error = pep508_error;
  opts.build_args = build_arg_values(a.build_args);
  templates::FromDockerfile r = templates::spec_from_dockerfile(text, file.filename().string(), opts);
  std::vector<templates::ProjectFile> files = {{"spec.yaml", r.spec}};
  nlohmann::json written = nlohmann::json::array();
  for (const auto& [path, content] : r.files) {
    files.push_back({path, content});
    written.push_back((dir / path).string());
  }
  write_project(dir, files);
  report_from_dockerfile(file, dir, r, written, out);
  return 0;
}

// The lock is what `paddle-image lock` writes for the new requirements.txt (the same
// function, run on the project just written), so the workflow's lock check passes on
// the first push. Nothing is fetched: requirements.txt lists nothing yet. Each lock
// written is added to `written` and `text`.
void write_project_locks(const fs::path& dir, nlohmann::json& written, std::string& text) {
  spec::BuildSpec s = spec::load(dir / "spec.yaml");
  for (const auto& l : s.layers) {
    const spec::WheelsLayerSpec* w = l.as_wheels();
    if (w == nullptr || !w->lock_file || w->lock_file->filename() != "requirements.lock") {
      continue;
    }
    util::TempDir cache(std::filesystem::temp_directory_path(), "paddle-image-init-");
    builder::BuildOptions o;
    o.cache_dir = cache.path();
    python::LockResult r = builder::lock(s, l.name, dir / "requirements.txt", {}, o, {});
    util::write_file_atomic(*w->lock_file, r.text);
    written.push_back(w->lock_file->string());
    text += "wrote " + w->lock_file->string() + "\n";
  }
}

int run_init(const InitArgs& a) {
  Output out = Output::detect(a.json, false);
  if (!a.from_dockerfile.empty()) {
    if (!a.tool.archive_url.empty() || !a.tool.archive_sha256.empty() || !a.tool.image.empty()) {
      throw Error(ErrorKind::usage,
                  "--tool-archive, --tool-sha256 and --tool-image are for the CI file of init TEMPLATE DIR",
                  "--from-dockerfile writes only spec.yaml; render a CI file with paddle-image render github-actions "
                  "spec.yaml --tool-archive ...");
    }
    return run_from_dockerfile(a, out);
  }
  if (!a.build_args.empty()) {
    throw Error(ErrorKind::usage, "--build-arg is for init --from-dockerfile (the Dockerfile's ARGs)",
                "paddle-image init --from-dockerfile Dockerfile --build-arg NAME=VALUE");
  }
  if (a.args.size() != 2) {
    throw Error(ErrorKind::usage, "init needs a template and a directory: paddle-image init TEMPLATE DIR",
                "templates: " + util::join(templates::project_templates(), ", "));
  }
  const std::string& name = a.args[0];
  fs::path dir = a.args[1];
  std::string image = a.image.empty() ? "registry.example.com/team/" + templates::project_name(dir) : a.image;
  std::vector<templates::ProjectFile> files = templates::project_files(name, image, a.template_dir, a.tool);
  write_project(dir, files);
  nlohmann::json written = nlohmann::json::array();
  std::string text;
  for (const auto& f : files) {
    written.push_back((dir / f.path).string());
    text += "wrote " + (dir / f.path).string() + "\n";
  }
  write_project_locks(dir, written, text);
  std::vector<std::string> next = {"cd " + dir.string() + " && paddle-image build spec.yaml",
                                   "list dependencies in requirements.txt, then: paddle-image lock requirements.txt -o "
                                   "requirements.lock --spec spec.yaml --layer deps"};
  text += "next:\n  " + util::join(next, "\n  ") + "\n";
  out.result({{"template", name}, {"dir", dir.string()}, {"image", image}, {"files", written}, {"next", next}}, text);
  return 0;
}

void check_kind(const std::string& kind, const std::vector<std::string>& kinds, const std::string& what) {
  for (const auto& k : kinds) {
    if (k == kind) {
      return;
    }
  }
  std::string near = util::closest(kind, kinds);
  throw Error(ErrorKind::usage, "unknown " + what + " '" + kind + "'",
              (near.empty() ? std::string() : "did you mean '" + near + "'? ") + "known: " + util::join(kinds, ", "));
}

void write_output(const std::string& output, const std::string& text) {
  if (output.empty() || output == "-") {
    std::cout << text << std::flush;
    return;
  }
  util::write_file_atomic(output, text);
  std::cerr << "wrote " << output << "\n";
}

// The flags only the Kubernetes kinds take, and those only one of them takes.
const std::vector<std::string> k_k8s_flags = {"--facts",
                                              "--name",
                                              "--namespace",
                                              "--shm-size",
                                              "--cpu",
                                              "--memory",
                                              "--checkpoint-pvc",
                                              "--checkpoint-path",
                                              "--env",
                                              "--toleration",
                                              "--no-tolerations",
                                              "--node-selector",
                                              "--gpu-type",
                                              "--gpu-product",
                                              "--gfd-label",
                                              "--no-gpu-affinity",
                                              "--allow-minor-compat",
                                              "--allow-tag",
                                              "--matrix",
                                              "--service-account",
                                              "--backoff-limit",
                                              "--insecure",
                                              "--insecure-registry",
                                              "--ca-file",
                                              "-u",
                                              "--password-stdin",
                                              "--retries",
                                              "--timeout",
                                              "--platform",
                                              "--gpus",
                                              "--workers",
                                              "--gpus-per-worker",
                                              "--format",
                                              "--port",
                                              "--train-arg"};

struct Flags {
  const CLI::App& app;
  bool given(const std::string& flag) const {
    const CLI::Option* o = app.get_option_no_throw(flag);
    return o != nullptr && o->count() > 0;
  }
  void refuse(const std::vector<std::string>& flags, const std::string& why, const std::string& fix) const {
    for (const auto& f : flags) {
      if (given(f)) {
        throw Error(ErrorKind::usage, f + " " + why, fix);
      }
    }
  }
};

// The image's GPU facts: read from --facts (oci:DIR[:TAG], docker-archive:FILE or a
// registry reference), else from --image in its registry. Returns the facts and the
// digest of the manifest they were read from.
templates::k8s::ImageFacts image_facts(const RenderArgs& a, const oci::ImageRef& image, const Output& out) {
  std::string source = a.facts.empty() ? a.image : a.facts;
  return util::with_context("reading the image's facts from " + source, [&] {
    oci::ImageRef ref = oci::ImageRef::parse(source);
    RegistrySession sess(a.flags, out, ref.registry);
    oci::ImagePtr img = open_image(ref, sess);
    oci::CopyOptions sel = sess.transfer_options();
    oci::ManifestBlob chosen = oci::select_platform(*img, sel);
    if (!image.digest.empty() && img->root().digest.str() != image.digest && chosen.digest.str() != image.digest) {
      throw Error(ErrorKind::input,
                  "--facts " + source + " is manifest " + chosen.digest.str() + ", but --image pins " + image.digest,
                  "read the facts from the image the job runs: drop --facts, or give the layout the image was "
                  "pushed from");
    }
    doctor::ImageNeeds n = doctor::image_needs(*img, sel, false, source);
    sess.finish();
    templates::k8s::ImageFacts f = n; // the stated facts, without what a layer scan found
    f.source = source;
    return f;
  });
}

struct Rendered {
  std::string text;
  nlohmann::json json;
};

// The flags the Kubernetes kinds refuse: the other files' flags, the other kind's, and
// those that conflict with --no-gpu-affinity or --no-tolerations.
void refuse_k8s_flags(const RenderArgs& a, const Flags& flags) {
  flags.refuse(
      {"--requirements", "--layer", "--no-sign", "--template-dir", "--tool-archive", "--tool-sha256", "--tool-image"},
      "is not for " + a.kind,
      "Kubernetes objects are built as data (docs/templates.md); --template-dir is for the Dockerfile, "
      "CI and init templates");
  if (a.kind == "paddle-distributed") {
    flags.refuse({"--gpus"}, "is for k8s-job", "paddle-distributed takes --workers N --gpus-per-worker G");
  } else {
    flags.refuse({"--workers", "--gpus-per-worker", "--format", "--port", "--train-arg"}, "is for paddle-distributed",
                 "k8s-job renders one pod: --gpus N");
  }
  if (a.job.no_gpu_affinity) {
    flags.refuse({"--gpu-type", "--gpu-product", "--gfd-label", "--allow-minor-compat"},
                 "conflicts with --no-gpu-affinity (nothing would check it)",
                 "drop one of them: --no-gpu-affinity is for clusters without GPU Feature Discovery labels");
  }
  if (a.job.no_tolerations) {
    flags.refuse({"--toleration"}, "conflicts with --no-tolerations", "drop one of them");
  }
}

// render k8s-job|paddle-distributed: templates::k8s::render_job, with the spec's
// environment and command and the image's facts read here.
Rendered render_k8s(const RenderArgs& a, const Flags& flags, const Output& out) {
  refuse_k8s_flags(a, flags);
  templates::k8s::JobRequest job = a.job;
  job.kind = a.kind;
  job.spec_file = a.spec_file;
  job.image = a.image;
  templates::k8s::JobSources src;
  src.spec = [&] {
    spec::BuildSpec s = spec::load(a.spec_file);
    return templates::k8s::SpecConfig{s.config.env, s.config.entrypoint, s.config.cmd};
  };
  src.facts = [&](const oci::ImageRef& ref) { return image_facts(a, ref, out); };
  src.warn = [](const std::string& w) { std::cerr << "warning: " << w << "\n"; };
  templates::k8s::RenderedJob r = templates::k8s::render_job(job, src);
  return {r.text, r.json};
}

// render dockerfile|github-actions|gitlab-ci: the spec through its template.
Rendered render_file(const RenderArgs& a, const Flags& flags) {
  flags.refuse(k_k8s_flags, "is for k8s-job and paddle-distributed only", "drop it for " + a.kind);
  spec::BuildSpec s = spec::load(a.spec_file);
  Rendered r;
  if (a.kind == "dockerfile") {
    flags.refuse({"--tool-archive", "--tool-sha256", "--tool-image"}, "is for github-actions and gitlab-ci",
                 "drop it for a Dockerfile");
    r.text = templates::render_dockerfile(templates::dockerfile_input(s, a.spec_file), a.template_dir);
  } else {
    templates::CiRequest ci{a.spec_file, a.image, a.no_sign, a.tool, a.requirements, a.layer};
    r.text = templates::render_ci(a.kind, templates::ci_input(s, ci), a.template_dir);
  }
  r.json = {{"kind", a.kind}};
  return r;
}

int run_render(const RenderArgs& a, const CLI::App& app) {
  check_kind(a.kind, k_render_kinds, "render kind");
  Output out = Output::detect(a.json, false);
  Flags flags{app};
  Rendered r =
      a.kind == "k8s-job" || a.kind == "paddle-distributed" ? render_k8s(a, flags, out) : render_file(a, flags);
  if (a.json) {
    r.json["text"] = r.text;
    if (!a.output.empty() && a.output != "-") {
      util::write_file_atomic(a.output, r.text);
      r.json["output"] = a.output;
    }
    out.result(r.json, "");
    return 0;
  }
  write_output(a.output, r.text);
  return 0;
}

} // namespace

void add_template_commands(CLI::App& app, std::vector<std::pair<CLI::App*, Action>>& actions) {
  auto a = std::make_shared<RenderArgs>();
  CLI::App* r = app.add_subcommand(
      "render", "Render a spec through a template: dockerfile, github-actions, gitlab-ci (docs/templates.md)");
  r->add_option("kind", a->kind, "What to render: " + util::join(k_render_kinds, ", "))->required();
  r->add_option("spec", a->spec_file, "The spec file")->required();
  r->add_option("-o,--output", a->output, "Write here instead of stdout");
  r->add_option("--template-dir", a->template_dir,
                "A directory whose template files replace the built-in ones of the same name");
  r->add_option("--image", a->image,
                "github-actions, gitlab-ci: the repository to push to (default: the spec's image.name); the tag is "
                "the commit");
  r->add_option("--requirements", a->requirements,
                "github-actions, gitlab-ci: add a step that checks the lock of the spec's wheels layer from an index "
                "is current (paddle-image lock FILE ... && diff)");
  r->add_option("--layer", a->layer, "github-actions, gitlab-ci: the wheels layer --requirements is for");
  r->add_flag("--no-sign", a->no_sign, "github-actions, gitlab-ci: push without --sign (no key secrets)");
  add_tool_flags(r, a->tool, "github-actions, gitlab-ci");
  r->add_flag("--json", a->json, "Print {kind, text, objects, scheduling} as JSON on stdout");
  // k8s-job, paddle-distributed (docs/templates.md#kubernetes-jobs)
  r->add_option("--facts", a->facts,
                "k8s: read the image's facts (labels) here instead of from --image's registry: oci:DIR[:TAG], "
                "docker-archive:FILE or a registry reference");
  r->add_option("--gpus", a->job.gpus, "k8s-job: nvidia.com/gpu per pod (default 1)");
  r->add_option("--workers", a->job.workers, "paddle-distributed: worker pods (default 2)");
  r->add_option("--gpus-per-worker", a->job.gpus_per_worker,
                "paddle-distributed: nvidia.com/gpu per worker (default 1)");
  r->add_option("--format", a->job.format, "paddle-distributed: job (Indexed Job + headless Service) or paddlejob");
  r->add_option("--name", a->job.name, "k8s: the job's name (default: the repository's last part + -train)");
  r->add_option("--namespace", a->job.ns, "k8s: the objects' namespace (default: none, kubectl's)");
  r->add_option("--shm-size", a->job.shm_size, "k8s: /dev/shm size, a memory emptyDir (default 16Gi)");
  r->add_option("--cpu", a->job.cpu, "k8s: CPU request per pod (default 4 per GPU)");
  r->add_option("--memory", a->job.memory, "k8s: memory request per pod (default 16Gi per GPU)");
  r->add_option("--checkpoint-pvc", a->job.checkpoint_pvc, "k8s: the checkpoint claim (default NAME-checkpoints)");
  r->add_option("--checkpoint-path", a->job.checkpoint_path, "k8s: where it is mounted (default /checkpoints)");
  r->add_option("--env", a->job.env, "k8s: NAME=VALUE for the container, over the spec's FLAGS_*/NCCL_* (repeatable)");
  r->add_option("--toleration", a->job.tolerations,
                "k8s: KEY[=VALUE][:EFFECT] (repeatable; default nvidia.com/gpu:NoSchedule)");
  r->add_flag("--no-tolerations", a->job.no_tolerations, "k8s: no tolerations at all");
  r->add_option("--node-selector", a->job.node_selector,
                "k8s: KEY=VALUE node selector, checked against the image (repeatable)");
  r->add_option("--gpu-type", a->job.gpu_types,
                "k8s: only these GPUs (matrix names: A100, T4, sm_80...), checked against the image (repeatable)");
  r->add_option("--gpu-product", a->job.gpu_products,
                "k8s: only nodes whose nvidia.com/gpu.product is this value, checked against the image (repeatable)");
  r->add_option("--gfd-label", a->job.gfd_labels,
                "k8s: NAME=KEY, another node label for a GFD fact (driver.major, driver.minor, driver.rev, "
                "compute.major, compute.minor, memory, product; repeatable)");
  r->add_flag("--no-gpu-affinity", a->job.no_gpu_affinity,
              "k8s: no node affinity (clusters without GPU Feature Discovery)");
  r->add_flag("--allow-minor-compat", a->job.allow_minor_compat,
              "k8s: accept drivers that run the image's CUDA under minor-version compatibility only");
  r->add_flag("--allow-tag", a->job.allow_tag, "k8s: accept an --image pinned by tag only");
  r->add_option("--matrix", a->job.matrix_files, "k8s: extra compatibility-matrix files");
  r->add_option("--service-account", a->job.service_account, "k8s: the pods' service account");
  r->add_option("--backoff-limit", a->job.backoff_limit, "k8s: failed pods replaced before the job fails (default 3)");
  r->add_option("--port", a->job.port, "paddle-distributed: the launch master's port on worker 0 (default 36000)");
  r->add_option("--train-arg", a->job.train_args,
                "paddle-distributed: the training script and its arguments, one per flag (default: the spec's "
                "python entrypoint/cmd)");
  a->flags.add(r, false, true);
  actions.emplace_back(r, [a, r] { return run_render(*a, *r); });

  auto i = std::make_shared<InitArgs>();
  CLI::App* c = app.add_subcommand("init", "Start a project: spec.yaml, .paddleimageignore, requirements, CI file "
                                           "(templates: " +
                                               util::join(templates::project_templates(), ", ") + ")");
  c->add_option("args", i->args, "TEMPLATE DIR (with --from-dockerfile: [DIR])");
  c->add_option("--from-dockerfile", i->from_dockerfile,
                "Write DIR/spec.yaml from a Dockerfile (FROM, COPY/ADD, WORKDIR, ENV, ENTRYPOINT/CMD, EXPOSE, USER, "
                "LABEL, RUN pip install -r); what cannot be mapped is listed with its line");
  c->add_option("--build-arg", i->build_args,
                "With --from-dockerfile: NAME=VALUE for the Dockerfile's ARG NAME, as docker build --build-arg "
                "(NAME alone: the environment's value); repeatable");
  c->add_option("--image", i->image, "The repository the spec and CI push to (default registry.example.com/team/DIR)");
  add_tool_flags(c, i->tool, "The CI file");
  c->add_option("--template-dir", i->template_dir,
                "A directory whose template files replace the built-in ones of the same name");
  c->add_flag("--json", i->json, "Print the result as JSON on stdout");
  actions.emplace_back(c, [i] { return run_init(*i); });
}

} // namespace cli
