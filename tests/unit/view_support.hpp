#pragma once
// Building file-tree views for unit tests: a layer tar from (path, content) pairs and
// a BaseView of layers, bottom to top.
#include "layers/base_view.hpp"
#include "layers/tar.hpp"

#include <algorithm>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace test_support {

// A tar of the given files, each directory on the way first, as real layers have them;
// a path ending in '/' is a directory.
inline std::string make_layer_tar(const std::vector<std::pair<std::string, std::string>>& members) {
  std::string tar;
  layers::TarBuilder tb(0, [&](const char* d, std::size_t n) { tar.append(d, n); });
  std::set<std::string> dirs;
  for (const auto& [path, content] : members) {
    for (auto slash = path.find('/'); slash != std::string::npos && slash + 1 < path.size();
         slash = path.find('/', slash + 1)) {
      if (dirs.insert(path.substr(0, slash)).second) {
        tb.add_dir(path.substr(0, slash));
      }
    }
    if (!path.empty() && path.back() == '/') {
      tb.add_dir(path.substr(0, path.size() - 1));
    } else {
      tb.add_bytes(path, content);
    }
  }
  tb.finish();
  return tar;
}

// The view the layers (file lists, bottom to top) leave; layer i has digest sha256:iii...
inline layers::BaseView
view_of(const std::vector<std::vector<std::pair<std::string, std::string>>>& layers_bottom_to_top) {
  layers::BaseView view;
  char digit = '1';
  for (const auto& members : layers_bottom_to_top) {
    std::string bytes = make_layer_tar(members);
    std::size_t pos = 0;
    view.add_layer(
        [&](char* buf, std::size_t n) {
          std::size_t k = std::min(n, bytes.size() - pos);
          std::copy_n(bytes.data() + pos, k, buf);
          pos += k;
          return k;
        },
        "sha256:" + std::string(64, digit++));
  }
  view.finish({});
  return view;
}

} // namespace test_support
