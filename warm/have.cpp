#include "warm/have.hpp"

#include "oci/digest.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/text.hpp"

namespace warm {

using util::Error;
using util::ErrorKind;

namespace {

std::string shown(const std::string& s) {
  std::string out;
  for (char c : s.substr(0, 60)) {
    auto u = static_cast<unsigned char>(c);
    out += u < 0x20 || u == 0x7f ? '?' : c;
  }
  return s.size() > 60 ? out + "..." : out;
}

} // namespace

HaveList parse_have(const std::string& text, const std::string& file) {
  HaveList h;
  h.source = file;
  std::size_t start = 0;
  std::size_t line_no = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    std::string line =
        util::trim(text.substr(start, end == std::string::npos ? std::string::npos : end - start), " \t\r");
    start = end == std::string::npos ? text.size() : end + 1;
    ++line_no;
    if (line.empty() || line[0] == '#') {
      continue;
    }
    if (line.rfind("DIGEST", 0) == 0) {
      throw Error(ErrorKind::input,
                  file + ":" + std::to_string(line_no) + ": this is the table of `ctr content ls`, not a digest list",
                  "write the list with: ctr -n k8s.io content ls -q > " + file);
    }
    try {
      oci::Digest d = oci::Digest::parse(line);
      h.digests.insert(d.str());
    } catch (const Error&) {
      throw Error(ErrorKind::input,
                  file + ":" + std::to_string(line_no) + ": '" + shown(line) + "' is not a digest (sha256:<64 hex>)",
                  "the file holds one digest per line, as `ctr -n k8s.io content ls -q` prints them");
    }
  }
  h.lines = line_no;
  return h;
}

HaveList read_have(const std::filesystem::path& file) {
  std::string text = util::with_context("--have", [&] { return util::read_file(file); });
  return parse_have(text, file.string());
}

} // namespace warm
