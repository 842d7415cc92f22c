#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "compat_matrix/resolver.hpp"
#include "util/encoding.hpp"
#include "util/error.hpp"

#include <memory>
#include <sstream>

namespace cli {

namespace {

struct ResolveArgs {
  compat::Constraints c;
  std::vector<std::string> matrix_files;
  bool dev = false;
  bool all = false;
  bool json = false;
};

} // namespace

Action add_resolve(CLI::App& app) {
  auto a = std::make_shared<ResolveArgs>();
  CLI::App* r = app.add_subcommand("resolve", "Pick a published Paddle GPU base image for your GPUs and drivers");
  r->add_option("--paddle", a->c.paddle, "Paddle version or range, e.g. 3.0.0, 2.6 (the newest 2.6.x) or '>=2.6,<3.1'");
  r->add_flag("--pre", a->c.pre, "Consider pre-releases (3.0.0b2) too; naming one in --paddle does the same");
  r->add_option("--gpu", a->c.gpus, "GPU model or capability (repeatable: the image must serve all), e.g. A100, sm_90");
  r->add_option("--driver", a->c.drivers,
                "Node driver version (repeatable), e.g. 535.104.05; a branch (535) is read as 535.0");
  r->add_option("--cuda", a->c.cuda, "CUDA version or major, e.g. 12.6 or 12");
  r->add_option("--cudnn", a->c.cudnn, "cuDNN version or major, e.g. 9.5");
  r->add_flag("--tensorrt", a->c.need_tensorrt, "The image must contain TensorRT");
  r->add_option("--python", a->c.python, "Python inside the image, e.g. 3.10");
  r->add_option("--registry", a->c.registry, "dockerhub (default), baidu, or a mirror HOST/PATH");
  r->add_flag("--dev", a->dev, "Development images instead of runtime images");
  r->add_flag("--strict-driver", a->c.strict_driver,
              "Refuse minor-version compatibility (driver below the CUDA GA driver)");
  r->add_flag("--allow-forward-compat", a->c.allow_forward_compat,
              "Accept forward compatibility (cuda-compat) on data-center GPUs and supported branches");
  r->add_option("--matrix", a->matrix_files, "Extra matrix file(s) overriding or extending the built-in data");
  r->add_flag("--all", a->all, "List every candidate, ranked");
  r->add_flag("--json", a->json, "JSON output");
  return [a] {
    Output out = Output::detect(a->json, false);
    a->c.kind = a->dev ? "dev" : "runtime";
    compat::Matrix m = compat::load_matrix(a->matrix_files);
    compat::Resolution res = compat::resolve(m, a->c);
    out.result(compat::to_json(res, a->all), compat::describe(res, a->all));
    return res.candidates.empty() ? util::exit_code(util::ErrorKind::incompatible) : 0;
  };
}

namespace {

struct MatrixArgs {
  std::string table;
  std::string lint_file;
  std::vector<std::string> matrix_files;
  bool json = false;
};

std::string join(const std::vector<std::string>& v, std::string_view sep = ", ") {
  return util::join(v, sep);
}

std::string join_ints(const std::vector<int>& v) {
  std::vector<std::string> s;
  for (int x : v) {
    s.push_back(std::to_string(x));
  }
  return join(s, " ");
}

// Rows padded into aligned columns (two spaces between columns; the last one unpadded).
class Table {
public:
  explicit Table(std::vector<std::string> header) { m_rows.push_back(std::move(header)); }
  void add(std::vector<std::string> row) { m_rows.push_back(std::move(row)); }
  std::string str() const {
    std::vector<std::size_t> width;
    for (const auto& r : m_rows) {
      for (std::size_t i = 0; i + 1 < r.size(); ++i) {
        width.resize(std::max(width.size(), i + 1));
        width[i] = std::max(width[i], r[i].size());
      }
    }
    std::string out;
    for (const auto& r : m_rows) {
      std::string line;
      for (std::size_t i = 0; i < r.size(); ++i) {
        line += r[i];
        if (i + 1 < r.size()) {
          line += std::string(width[i] - r[i].size() + 2, ' ');
        }
      }
      while (!line.empty() && line.back() == ' ') {
        line.pop_back();
      }
      out += line + "\n";
    }
    return out;
  }

private:
  std::vector<std::vector<std::string>> m_rows;
};

std::string flag(const compat::Row& r) {
  return r.confirmed ? "" : "  (unconfirmed)";
}

// The last column of a table row, with the unconfirmed mark.
std::string last_column(const std::string& text, const compat::Row& r) {
  return text.empty() && !r.confirmed ? "(unconfirmed)" : text + flag(r);
}

void show(const compat::Matrix& m, const std::string& table, nlohmann::json& j, std::ostringstream& t) {
  if (table.empty() || table == "cuda") {
    j["cuda"] = nlohmann::json::array();
    Table tab({"CUDA", "full driver", "minor-compat", "SM targets"});
    for (const auto& c : m.cuda) {
      j["cuda"].push_back({{"version", c.version},
                           {"released", c.released},
                           {"driver_full", c.driver_full},
                           {"driver_minor", c.driver_minor},
                           {"sm", c.sm},
                           {"source", c.source},
                           {"confirmed", c.confirmed},
                           {"origin", c.origin}});
      if (!c.released) {
        tab.add({c.version, "never released" + flag(c)});
        continue;
      }
      tab.add(
          {c.version, c.driver_full, c.driver_minor.empty() ? "-" : c.driver_minor, last_column(join_ints(c.sm), c)});
    }
    t << tab.str();
    j["forward_compat"] = {{"gpu_classes", m.forward_gpu_classes}, {"branches", nlohmann::json::array()}};
    for (const auto& b : m.forward_branches) {
      j["forward_compat"]["branches"].push_back({{"branch", b.branch},
                                                 {"driver_major", b.driver_major},
                                                 {"kind", b.kind},
                                                 {"eol", b.eol},
                                                 {"cuda_majors", b.cuda_majors},
                                                 {"source", b.source},
                                                 {"confirmed", b.confirmed}});
    }
  }
  if (table.empty() || table == "gpus") {
    j["gpus"] = nlohmann::json::array();
    Table tab({"GPU", "compute capability", "class", "aliases"});
    for (const auto& g : m.gpus) {
      j["gpus"].push_back({{"name", g.name},
                           {"cc", g.cc},
                           {"class", g.gpu_class},
                           {"aliases", g.aliases},
                           {"source", g.source},
                           {"confirmed", g.confirmed}});
      tab.add({g.name, g.cc, g.gpu_class, last_column(join(g.aliases), g)});
    }
    t << "\n" << tab.str();
  }
  if (table.empty() || table == "cudnn") {
    j["cudnn"] = nlohmann::json::array();
    j["tensorrt"] = nlohmann::json::array();
    Table cudnn({"cuDNN", "CUDA"});
    for (const auto& l : m.cudnn) {
      j["cudnn"].push_back(
          {{"version", l.version}, {"cuda", l.cuda}, {"source", l.source}, {"confirmed", l.confirmed}});
      cudnn.add({l.version, last_column(join(l.cuda), l)});
    }
    t << "\n" << cudnn.str();
    Table trt({"TensorRT", "CUDA"});
    for (const auto& l : m.tensorrt) {
      j["tensorrt"].push_back(
          {{"version", l.version}, {"cuda", l.cuda}, {"source", l.source}, {"confirmed", l.confirmed}});
      trt.add({l.version, last_column(join(l.cuda), l)});
    }
    t << "\n" << trt.str();
  }
  if (table.empty() || table == "paddle") {
    j["paddle"] = nlohmann::json::array();
    j["registries"] = nlohmann::json::array();
    t << "\nPaddle images (Python, min CC; tag: CUDA/cuDNN/TensorRT, archs)\n";
    for (const auto& r : m.registries) {
      j["registries"].push_back({{"name", r.name}, {"repository", r.repository}, {"versions", r.versions}});
    }
    for (const auto& rel : m.paddle) {
      nlohmann::json imgs = nlohmann::json::array();
      t << rel.version << "  (Python " << (rel.python.empty() ? "?" : rel.python) << ", min CC "
        << (rel.min_cc.empty() ? "?" : rel.min_cc) << ")" << flag(rel) << "\n";
      for (const auto& img : rel.images) {
        imgs.push_back({{"tag", img.tag},
                        {"kind", img.kind},
                        {"cuda", img.cuda},
                        {"cudnn", img.cudnn},
                        {"tensorrt", img.tensorrt},
                        {"archs", img.archs},
                        {"archs_confirmed", img.archs_confirmed},
                        {"source", img.source},
                        {"confirmed", img.confirmed}});
        t << "    " << img.tag << (img.kind == "dev" ? " [dev]" : "") << ": archs " << join_ints(img.archs)
          << (img.archs_confirmed ? "" : " (inferred)") << flag(img) << "\n";
      }
      j["paddle"].push_back({{"version", rel.version},
                             {"python", rel.python},
                             {"min_cc", rel.min_cc},
                             {"pip_cuda", rel.pip_cuda},
                             {"images", imgs},
                             {"source", rel.source},
                             {"confirmed", rel.confirmed}});
    }
  }
}

} // namespace

Action add_matrix(CLI::App& app) {
  auto a = std::make_shared<MatrixArgs>();
  CLI::App* mx = app.add_subcommand("matrix", "Show or check the compatibility matrix");
  mx->require_subcommand(1);
  CLI::App* s = mx->add_subcommand("show", "Print the matrix (all tables or one)");
  s->add_option("table", a->table, "cuda | gpus | cudnn | paddle")
      ->check(CLI::IsMember({"cuda", "gpus", "cudnn", "paddle"}));
  s->add_option("--matrix", a->matrix_files, "Extra matrix file(s) merged over the built-in data");
  s->add_flag("--json", a->json, "JSON output");
  CLI::App* lint = mx->add_subcommand("lint", "Check a user matrix file (merged over the built-in data)");
  lint->add_option("file", a->lint_file, "YAML file")->required();
  lint->add_flag("--json", a->json, "JSON output");
  return [a, s] {
    Output out = Output::detect(a->json, false);
    if (s->parsed()) {
      compat::Matrix m = compat::load_matrix(a->matrix_files);
      nlohmann::json j = nlohmann::json::object();
      std::ostringstream t;
      show(m, a->table, j, t);
      out.result(j, t.str());
      return 0;
    }
    compat::Matrix m = compat::load_matrix({a->lint_file});
    std::size_t images = 0;
    for (const auto& r : m.paddle) {
      images += r.images.size();
    }
    out.result({{"file", a->lint_file}, {"ok", true}, {"releases", m.paddle.size()}, {"images", images}},
               a->lint_file + ": ok (merged matrix: " + std::to_string(m.paddle.size()) + " Paddle releases, " +
                   std::to_string(images) + " images)\n");
    return 0;
  };
}

} // namespace cli
