// paddle-image render KIND SPEC: a spec rendered through a template (docs/templates.md).
#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "spec/spec.hpp"
#include "templates/ci.hpp"
#include "templates/dockerfile.hpp"
#include "templates/from_dockerfile.hpp"
#include "templates/init.hpp"
#include "util/encoding.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"

#include <iostream>
#include <memory>

namespace cli {

using util::Error;
using util::ErrorKind;

namespace {

namespace fs = std::filesystem;

const std::vector<std::string> k_render_kinds = {"dockerfile", "github-actions", "gitlab-ci"};

struct RenderArgs {
  std::string kind;
  std::string spec_file;
  std::string output;
  std::string template_dir;
  std::string image;
  std::string requirements;
  std::string layer;
  bool no_sign = false;
};

std::string owner_text(const std::optional<spec::OwnerSpec>& o) {
  if (!o) {
    return "";
  }
  return std::to_string(o->uid) + ":" + std::to_string(o->gid);
}

// A host path of the spec as the build context (the spec's directory) sees it.
std::string context_path(const fs::path& p, const fs::path& dir, bool* outside = nullptr) {
  fs::path rel = p.lexically_normal().lexically_relative(dir.lexically_normal());
  std::string s = rel.empty() ? p.string() : rel.generic_string();
  if (s.empty() || s == ".") {
    s = ".";
  }
  if (outside != nullptr) {
    *outside = rel.empty() || s.rfind("..", 0) == 0;
  }
  std::error_code ec;
  if (fs::is_directory(p, ec) && s.back() != '/') {
    s += '/';
  }
  return s;
}

templates::DockerfileInput dockerfile_input(const spec::BuildSpec& s, const std::string& spec_file) {
  templates::DockerfileInput in;
  in.spec_file = spec_file;
  in.base = s.base;
  in.platform = s.platform.os + "/" + s.platform.architecture +
                (s.platform.variant.empty() ? std::string() : "/" + s.platform.variant);
  in.python = "python3";
  if (s.python) {
    in.python = !s.python->interpreter.empty() ? s.python->interpreter : "python" + s.python->version;
  }
  std::error_code ec;
  in.custom_ignore = fs::exists(s.dir / ".paddleimageignore", ec);
  for (const auto& l : s.layers) {
    templates::DockerLayer d;
    d.name = l.name;
    d.kind = l.kind == spec::LayerSpec::Kind::wheels ? "wheels"
             : l.kind == spec::LayerSpec::Kind::data ? "data"
                                                     : "files";
    d.chown = owner_text(l.owner);
    for (const auto& c : l.copies) {
      templates::DockerCopy dc;
      dc.from = context_path(c.from, s.dir, &dc.outside_context);
      dc.to = c.to;
      dc.exclude = c.exclude;
      dc.mode = c.mode;
      dc.dir_mode = c.dir_mode;
      dc.chown = owner_text(c.owner);
      d.copies.push_back(dc);
    }
    if (!l.wheel_dir.empty()) {
      d.wheel_dir = context_path(l.wheel_dir, s.dir);
    }
    if (l.lock_file) {
      d.lock = context_path(*l.lock_file, s.dir);
    }
    d.indexes = l.indexes;
    d.find_links = l.find_links;
    in.layers.push_back(d);
  }
  in.config.entrypoint = s.config.entrypoint;
  in.config.cmd = s.config.cmd;
  in.config.env = s.config.env;
  in.config.workdir = s.config.workdir;
  in.config.user = s.config.user;
  for (const auto& [k, v] : s.config.labels) {
    in.config.labels.emplace_back(k, v);
  }
  in.config.ports = s.config.ports;
  in.config.stop_signal = s.config.stop_signal;
  return in;
}

// The lock check of a CI file: the wheels layer from an index that --requirements is for.
void ci_lock(const spec::BuildSpec& s, const RenderArgs& a, templates::CiInput& in) {
  std::vector<const spec::LayerSpec*> cands;
  for (const auto& l : s.layers) {
    if (l.from_index() && l.lock_file && (a.layer.empty() || l.name == a.layer)) {
      cands.push_back(&l);
    }
  }
  if (a.requirements.empty()) {
    if (!a.layer.empty()) {
      throw Error(ErrorKind::usage, "--layer goes with --requirements",
                  "name the requirements file the lock is made from");
    }
    return;
  }
  if (cands.empty()) {
    throw Error(ErrorKind::usage,
                a.layer.empty() ? "--requirements: the spec has no wheels layer with a lock from an index"
                                : "--layer " + a.layer + ": no wheels layer of that name with a lock from an index",
                "the lock check is for `wheels: {lock: FILE, index: URL}` layers (docs/wheels.md)");
  }
  if (cands.size() > 1) {
    throw Error(ErrorKind::usage, "--requirements: the spec has several wheels layers from an index",
                "name one with --layer");
  }
  in.requirements = a.requirements;
  in.lock_layer = cands[0]->name;
  in.lock_file = context_path(*cands[0]->lock_file, fs::current_path());
}

struct InitArgs {
  std::vector<std::string> args; // TEMPLATE DIR
  std::string image;
  std::string template_dir;
  std::string from_dockerfile;
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
  templates::FromDockerfile r = templates::spec_from_dockerfile(text, file.filename().string(), rel == "." ? "" : rel);
  write_project(dir, {{"spec.yaml", r.spec}});
  nlohmann::json unmapped = nlohmann::json::array();
  for (const auto& u : r.unmapped) {
    std::cerr << file.string() << ":" << u.line << ": not mapped: " << u.instruction << "\n  " << u.reason << "\n";
    unmapped.push_back({{"line", u.line}, {"instruction", u.instruction}, {"reason", u.reason}});
  }
  std::string summary = "wrote " + (dir / "spec.yaml").string() + " (" + std::to_string(r.unmapped.size()) +
                        " instruction(s) not mapped, listed on stderr)\n";
  if (!r.commands.empty()) {
    summary += "a requirements file is not a lock; next, from " + dir.string() + ":\n";
    for (const auto& c : r.commands) {
      summary += "  " + c + "\n";
    }
  }
  out.result({{"dockerfile", file.string()},
              {"spec", (dir / "spec.yaml").string()},
              {"unmapped", unmapped},
              {"commands", r.commands}},
             summary);
  return 0;
}

int run_init(const InitArgs& a) {
  Output out = Output::detect(a.json, false);
  if (!a.from_dockerfile.empty()) {
    return run_from_dockerfile(a, out);
  }
  if (a.args.size() != 2) {
    throw Error(ErrorKind::usage, "init needs a template and a directory: paddle-image init TEMPLATE DIR",
                "templates: " + util::join(templates::project_templates(), ", "));
  }
  const std::string& name = a.args[0];
  fs::path dir = a.args[1];
  std::string image = a.image.empty() ? "registry.example.com/team/" + templates::project_name(dir) : a.image;
  std::vector<templates::ProjectFile> files = templates::project_files(name, image, a.template_dir);
  write_project(dir, files);
  nlohmann::json written = nlohmann::json::array();
  std::string text;
  for (const auto& f : files) {
    written.push_back((dir / f.path).string());
    text += "wrote " + (dir / f.path).string() + "\n";
  }
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

int run_render(const RenderArgs& a) {
  check_kind(a.kind, k_render_kinds, "render kind");
  spec::BuildSpec s = spec::load(a.spec_file);
  std::string text;
  if (a.kind == "dockerfile") {
    text = templates::render_dockerfile(dockerfile_input(s, a.spec_file), a.template_dir);
  } else {
    templates::CiInput in;
    in.spec_file = a.spec_file;
    in.image = a.image.empty() ? s.name : a.image;
    if (in.image.empty()) {
      throw Error(ErrorKind::usage, "the spec names no image (image.name) to push", "give --image REGISTRY/REPO");
    }
    in.sign = !a.no_sign;
    ci_lock(s, a, in);
    text = templates::render_ci(a.kind, in, a.template_dir);
  }
  write_output(a.output, text);
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
  actions.emplace_back(r, [a] { return run_render(*a); });

  auto i = std::make_shared<InitArgs>();
  CLI::App* c = app.add_subcommand("init", "Start a project: spec.yaml, .paddleimageignore, requirements, CI file "
                                           "(templates: " +
                                               util::join(templates::project_templates(), ", ") + ")");
  c->add_option("args", i->args, "TEMPLATE DIR (with --from-dockerfile: [DIR])");
  c->add_option("--from-dockerfile", i->from_dockerfile,
                "Write DIR/spec.yaml from a Dockerfile (FROM, COPY/ADD, WORKDIR, ENV, ENTRYPOINT/CMD, EXPOSE, USER, "
                "LABEL, RUN pip install -r); what cannot be mapped is listed with its line");
  c->add_option("--image", i->image, "The repository the spec and CI push to (default registry.example.com/team/DIR)");
  c->add_option("--template-dir", i->template_dir,
                "A directory whose template files replace the built-in ones of the same name");
  c->add_flag("--json", i->json, "Print the result as JSON on stdout");
  actions.emplace_back(c, [i] { return run_init(*i); });
}

} // namespace cli
