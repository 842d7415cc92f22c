#pragma once
// `matrix show`: which tables it shows and its rows as JSON, each row with its source
// and whether it is confirmed.
#include "compat_matrix/matrix.hpp"

#include <nlohmann/json.hpp>
#include <string>

namespace compat {

// Whether `matrix show TABLE` includes `name`: "" shows every table. The tables are
// cuda (with the forward-compatibility data), gpus, cudnn (with TensorRT) and paddle
// (with the registries).
bool shows_table(const std::string& table, const std::string& name);

// The rows of the tables `table` selects, as `matrix show --json` prints them: keys
// cuda and forward_compat, gpus, cudnn and tensorrt, paddle and registries.
nlohmann::json matrix_json(const Matrix& m, const std::string& table);

} // namespace compat
