#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "compat_matrix/matrix_json.hpp"
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

// The CUDA table: drivers (full and minor-version compatibility) and SM targets.
std::string cuda_table(const compat::Matrix& m) {
  Table tab({"CUDA", "full driver", "minor-compat", "SM targets"});
  for (const auto& c : m.cuda) {
    if (!c.released) {
      tab.add({c.version, "never released" + flag(c)});
      continue;
    }
    tab.add({c.version, c.driver_full, c.driver_minor.empty() ? "-" : c.driver_minor, last_column(join_ints(c.sm), c)});
  }
  return tab.str();
}

// The GPU table: compute capability, class and aliases.
std::string gpus_table(const compat::Matrix& m) {
  Table tab({"GPU", "compute capability", "class", "aliases"});
  for (const auto& g : m.gpus) {
    tab.add({g.name, g.cc, g.gpu_class, last_column(join(g.aliases), g)});
  }
  return tab.str();
}

// A cuDNN or TensorRT table: each version and the CUDA versions it serves.
std::string library_table(const std::string& library, const std::vector<compat::LibraryRow>& rows) {
  Table tab({library, "CUDA"});
  for (const auto& l : rows) {
    tab.add({l.version, last_column(join(l.cuda), l)});
  }
  return tab.str();
}

// The Paddle releases, each with its images.
std::string paddle_text(const compat::Matrix& m) {
  std::ostringstream t;
  t << "Paddle images (Python, min CC; tag: CUDA/cuDNN/TensorRT, archs)\n";
  for (const auto& rel : m.paddle) {
    t << rel.version << "  (Python " << (rel.python.empty() ? "?" : rel.python) << ", min CC "
      << (rel.min_cc.empty() ? "?" : rel.min_cc) << ")" << flag(rel) << "\n";
    for (const auto& img : rel.images) {
      t << "    " << img.tag << (img.kind == "dev" ? " [dev]" : "") << ": archs " << join_ints(img.archs)
        << (img.archs_confirmed ? "" : " (inferred)") << flag(img) << "\n";
    }
  }
  return t.str();
}

// `matrix show` as text: the tables `table` selects, a blank line between them.
std::string show(const compat::Matrix& m, const std::string& table) {
  std::ostringstream t;
  if (compat::shows_table(table, "cuda")) {
    t << cuda_table(m);
  }
  if (compat::shows_table(table, "gpus")) {
    t << "\n" << gpus_table(m);
  }
  if (compat::shows_table(table, "cudnn")) {
    t << "\n" << library_table("cuDNN", m.cudnn);
    t << "\n" << library_table("TensorRT", m.tensorrt);
  }
  if (compat::shows_table(table, "paddle")) {
    t << "\n" << paddle_text(m);
  }
  return t.str();
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
      out.result(compat::matrix_json(m, a->table), show(m, a->table));
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
