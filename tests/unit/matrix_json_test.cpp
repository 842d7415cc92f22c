#include <doctest/doctest.h>

#include "compat_matrix/matrix_json.hpp"

#include <set>
#include <string>

namespace unit_matrix_json_test {

namespace {

std::set<std::string> keys(const nlohmann::json& j) {
  std::set<std::string> out;
  for (const auto& [k, v] : j.items()) {
    out.insert(k);
  }
  return out;
}

} // namespace

TEST_CASE("matrix show: no table shows every table, a named one only itself") {
  CHECK(compat::shows_table("", "cuda"));
  CHECK(compat::shows_table("", "paddle"));
  CHECK(compat::shows_table("gpus", "gpus"));
  CHECK_FALSE(compat::shows_table("gpus", "cuda"));
  CHECK_FALSE(compat::shows_table("cudnn", "paddle"));
}

TEST_CASE("matrix show --json: each table's keys, every row with its source and confirmation") {
  compat::Matrix m = compat::Matrix::builtin();
  using Keys = std::set<std::string>;
  CHECK(keys(compat::matrix_json(m, "cuda")) == Keys{"cuda", "forward_compat"});
  CHECK(keys(compat::matrix_json(m, "gpus")) == Keys{"gpus"});
  CHECK(keys(compat::matrix_json(m, "cudnn")) == Keys{"cudnn", "tensorrt"});
  CHECK(keys(compat::matrix_json(m, "paddle")) == Keys{"paddle", "registries"});
  nlohmann::json all = compat::matrix_json(m, "");
  CHECK(keys(all) == Keys{"cuda", "forward_compat", "gpus", "cudnn", "tensorrt", "paddle", "registries"});

  REQUIRE(all["cuda"].size() == m.cuda.size());
  REQUIRE(!m.cuda.empty());
  CHECK(all["cuda"][0]["version"] == m.cuda[0].version);
  CHECK(all["cuda"][0]["origin"] == m.cuda[0].origin);
  CHECK(all["forward_compat"]["branches"].size() == m.forward_branches.size());
  CHECK(all["forward_compat"]["gpu_classes"] == m.forward_gpu_classes);
  REQUIRE(all["gpus"].size() == m.gpus.size());
  REQUIRE(!m.gpus.empty());
  CHECK(all["gpus"][0]["class"] == m.gpus[0].gpu_class);
  CHECK(all["gpus"][0]["confirmed"] == m.gpus[0].confirmed);
  CHECK(all["cudnn"].size() == m.cudnn.size());
  CHECK(all["tensorrt"].size() == m.tensorrt.size());
  CHECK(all["registries"].size() == m.registries.size());
  REQUIRE(all["paddle"].size() == m.paddle.size());
  REQUIRE(!m.paddle.empty());
  CHECK(all["paddle"][0]["images"].size() == m.paddle[0].images.size());
  REQUIRE(!m.paddle[0].images.empty());
  CHECK(all["paddle"][0]["images"][0]["tag"] == m.paddle[0].images[0].tag);
  CHECK(all["paddle"][0]["images"][0]["archs"] == m.paddle[0].images[0].archs);
}

} // namespace unit_matrix_json_test
