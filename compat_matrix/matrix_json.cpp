#include "compat_matrix/matrix_json.hpp"

namespace compat {

namespace {

// The CUDA rows, and the forward-compatibility GPU classes and driver branches.
void add_cuda(const Matrix& m, nlohmann::json& j) {
  j["cuda"] = nlohmann::json::array();
  for (const auto& c : m.cuda) {
    j["cuda"].push_back({{"version", c.version},
                         {"released", c.released},
                         {"driver_full", c.driver_full},
                         {"driver_minor", c.driver_minor},
                         {"sm", c.sm},
                         {"source", c.source},
                         {"confirmed", c.confirmed},
                         {"origin", c.origin}});
  }
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

// The GPU rows.
void add_gpus(const Matrix& m, nlohmann::json& j) {
  j["gpus"] = nlohmann::json::array();
  for (const auto& g : m.gpus) {
    j["gpus"].push_back({{"name", g.name},
                         {"cc", g.cc},
                         {"class", g.gpu_class},
                         {"aliases", g.aliases},
                         {"source", g.source},
                         {"confirmed", g.confirmed}});
  }
}

// cuDNN or TensorRT rows: a version and the CUDA versions it serves.
nlohmann::json library_rows(const std::vector<LibraryRow>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& l : rows) {
    out.push_back({{"version", l.version}, {"cuda", l.cuda}, {"source", l.source}, {"confirmed", l.confirmed}});
  }
  return out;
}

// One published image of a Paddle release.
nlohmann::json image_json(const ImageRow& img) {
  return {{"tag", img.tag},
          {"kind", img.kind},
          {"cuda", img.cuda},
          {"cudnn", img.cudnn},
          {"tensorrt", img.tensorrt},
          {"archs", img.archs},
          {"archs_confirmed", img.archs_confirmed},
          {"source", img.source},
          {"confirmed", img.confirmed}};
}

// The registries and the Paddle releases with their images.
void add_paddle(const Matrix& m, nlohmann::json& j) {
  j["paddle"] = nlohmann::json::array();
  j["registries"] = nlohmann::json::array();
  for (const auto& r : m.registries) {
    j["registries"].push_back({{"name", r.name}, {"repository", r.repository}, {"versions", r.versions}});
  }
  for (const auto& rel : m.paddle) {
    nlohmann::json imgs = nlohmann::json::array();
    for (const auto& img : rel.images) {
      imgs.push_back(image_json(img));
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

} // namespace

bool shows_table(const std::string& table, const std::string& name) {
  return table.empty() || table == name;
}

nlohmann::json matrix_json(const Matrix& m, const std::string& table) {
  nlohmann::json j = nlohmann::json::object();
  if (shows_table(table, "cuda")) {
    add_cuda(m, j);
  }
  if (shows_table(table, "gpus")) {
    add_gpus(m, j);
  }
  if (shows_table(table, "cudnn")) {
    j["cudnn"] = library_rows(m.cudnn);
    j["tensorrt"] = library_rows(m.tensorrt);
  }
  if (shows_table(table, "paddle")) {
    add_paddle(m, j);
  }
  return j;
}

} // namespace compat
