#include <doctest/doctest.h>

#include "spec/spec.hpp"
#include "templates/ci.hpp"
#include "templates/dockerfile.hpp"
#include "templates/from_dockerfile.hpp"
#include "templates/init.hpp"
#include "templates/render.hpp"
#include "tests/unit/error_text.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/text.hpp"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace unit_templates_test {

using templates::Escape;
using templates::Template;

namespace {

nlohmann::json schema() {
  return nlohmann::json::parse(R"({"name": null, "items": {"key": null, "value": null}, "flag": null})");
}

} // namespace

TEST_CASE("templates: an unknown variable names the template file and line") {
  Template t{"x.mustache", "a\n{{name}}\n{{#items}}{{key}}\n{{valeu}}{{/items}}\n", "dir/x.mustache"};
  std::string e = error_of([&] { templates::check_variables(t, schema()); });
  CHECK(e.find("dir/x.mustache:4: unknown variable 'valeu'") != std::string::npos);
  CHECK(e.find("did you mean 'value'?") != std::string::npos);
  // outer names are visible inside a section; inner ones are not outside
  Template ok{"y", "{{#items}}{{name}}{{key}}{{/items}}{{^flag}}{{.}}{{/flag}}", "y"};
  CHECK_NOTHROW(templates::check_variables(ok, schema()));
  Template outside{"z", "{{#items}}{{/items}}\n{{key}}", "z"};
  CHECK(error_of([&] { templates::check_variables(outside, schema()); }).find("z:2: unknown variable 'key'") !=
        std::string::npos);
  Template unclosed{"u", "\n{{#items}}", "u"};
  CHECK(error_of([&] {
          templates::check_variables(unclosed, schema());
        }).find("u:2: section 'items' is never closed") != std::string::npos);
  Template partial{"p", "{{> other}}", "p"};
  CHECK(error_of([&] { templates::check_variables(partial, schema()); }).find("p:1: partials") != std::string::npos);
}

TEST_CASE("templates: delimiter changes are followed (GitHub's ${{ }} stays text)") {
  Template t{"g", "{{=[[ ]]=}}\nrun: ${{ github.sha }} [[name]]\n[[nope]]\n", "g"};
  CHECK(error_of([&] { templates::check_variables(t, schema()); }).find("g:3: unknown variable 'nope'") !=
        std::string::npos);
  Template ok{"g", "{{=[[ ]]=}}\nrun: ${{ github.sha }} [[name]]\n", "g"};
  CHECK(templates::render(ok, {{"name", "a:b"}}, schema(), Escape::yaml) == "run: ${{ github.sha }} \"a:b\"\n");
}

TEST_CASE("templates: values are escaped for their target; standalone tag lines leave no line") {
  CHECK(templates::yaml_quote("a: \"b\" # c\nd\\") == R"("a: \"b\" # c\nd\\")");
  CHECK(templates::yaml_quote(std::string("\x01", 1)) == R"("\x01")");
  // Line breaks a YAML parser honours inside a quoted scalar (NEL, U+2028, U+2029) and
  // the C1 controls are escapes, so 1.1 and 1.2 parsers read the value back unfolded.
  CHECK(templates::yaml_quote("a\u0085b\u2028c\u2029d\u009fe\ufefff\u00e9") ==
        "\"a\\x85b\\Lc\\Pd\\x9fe\\uFEFFf\u00e9\"");
  // GitLab expands $VAR in variables: values, $$ is a literal $; GitHub evaluates ${{ }}.
  Template gl{"gl", "X: {{v}}\n", "gl"};
  CHECK(templates::render(gl, {{"v", "a$HOME$$"}}, {{"v", nullptr}}, Escape::gitlab) == "X: \"a$$HOME$$$$\"\n");
  CHECK(templates::render(gl, {{"v", "a${ b"}}, {{"v", nullptr}}, Escape::github) == "X: \"a${ b\"\n");
  CHECK(error_of([&] {
          templates::render(gl, {{"v", "${{ secrets.T }}"}}, {{"v", nullptr}}, Escape::github);
        }).find("GitHub Actions would evaluate") != std::string::npos);
  CHECK(templates::dockerfile_quote("a \"b\" $HOME\\") == R"("a \"b\" \$HOME\\")");
  CHECK_THROWS_AS(templates::dockerfile_quote("a\nb"), util::Error);
  Template t{"s",
             "{{! a comment\n   over lines }}\nstart\n{{#items}}\n- {{key}}: "
             "{{{value}}}\n{{/items}}\n{{^items}}\nnone\n{{/items}}\nend\n",
             "s"};
  nlohmann::json d = {{"items", {{{"key", "k: v"}, {"value", "raw"}}}}};
  CHECK(templates::render(t, d, schema(), Escape::yaml) == "start\n- \"k: v\": raw\nend\n");
  CHECK(templates::render(t, {{"items", nlohmann::json::array()}}, schema(), Escape::none) == "start\nnone\nend\n");
  CHECK(util::shell_quote("/tmp/a") == "/tmp/a");
  CHECK(util::shell_quote("it's") == "'it'\\''s'");
}

TEST_CASE("templates: the Dockerfile keeps the spec's layer order and config") {
  templates::DockerfileInput in;
  in.spec_file = "spec.yaml";
  in.base = "paddlepaddle/paddle:2.6.1-gpu-cuda12.0-cudnn8.9-trt8.6";
  in.python = "python3";
  templates::DockerLayer deps{"deps", "wheels", {}, "", "requirements.lock", {"https://mirror.example/simple"}, {},
                              "",     {},       {}, {}};
  templates::DockerLayer app{"app", "files", {}, "", "", {}, {}, "1000:1000", {}, {}, {}};
  templates::DockerLayer slim{"slim", "wheels", {}, "", "", {}, {}, "", {}, {"opencv-python", "it's"}, {}};
  templates::DockerLayer users{
      "users", "accounts", {}, "", "", {}, {}, "", {}, {}, {"groupadd -g 5 g", "useradd -l -u 5 u"}};
  app.copies.push_back({"src/", "/app/", {"*.pyc"}, std::nullopt, std::nullopt, "", false, {}, {}, false});
  app.copies.push_back({"run.sh", "/usr/local/bin/run", {}, 0755u, std::nullopt, "0:0", false, {}, {}, false});
  templates::DockerCopy link;
  link.to = "/usr/local/bin/start";
  link.symlink = "run x";
  app.copies.push_back(link);
  templates::DockerCopy dir;
  dir.to = "/data/my models";
  dir.directory = true;
  dir.dir_mode = 0700u;
  app.copies.push_back(dir);
  in.layers = {slim, deps, users, app};
  in.config.entrypoint = std::vector<std::string>{"python3", "/app/train.py"};
  in.config.env = {{"A", "x \"y\" $$z"}, {"P", "/opt/bin:${PATH}:${X:-a\"b}"}};
  in.config.labels = {{"team", "ocr: \"vision\""}};
  in.config.ports = {"8080/tcp"};
  in.config.workdir = "/app";
  std::string out = templates::render_dockerfile(in, "");
  auto at = [&](const std::string& s) {
    auto p = out.find(s);
    REQUIRE_MESSAGE(p != std::string::npos, std::string(s + " not in\n" + out));
    return p;
  };
  CHECK(at("FROM paddlepaddle/paddle:2.6.1-gpu-cuda12.0-cudnn8.9-trt8.6\n") <
        at("COPY [\"requirements.lock\", \"/tmp/paddle-image/deps.lock\"]\n"));
  // wheels.uninstall, first: pip uninstall -y, each name shell-quoted.
  CHECK(at("RUN PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip uninstall -y opencv-python 'it'\\''s'\n") <
        at("COPY [\"requirements.lock\", \"/tmp/paddle-image/deps.lock\"]\n"));
  CHECK(at("RUN PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install --require-hashes -r /tmp/paddle-image/deps.lock -i "
           "https://mirror.example/simple\n") < at("COPY --chown=1000:1000 [\"src/\", \"/app/\"]\n"));
  // The accounts layer: its commands in one RUN, before the files that may belong to them.
  CHECK(at("# layer 3: users (accounts)\n") < at("RUN groupadd -g 5 g && useradd -l -u 5 u\n"));
  CHECK(at("RUN groupadd -g 5 g && useradd -l -u 5 u\n") < at("COPY --chown=1000:1000 [\"src/\", \"/app/\"]\n"));
  CHECK(at("COPY --chown=1000:1000 [\"src/\", \"/app/\"]\n") <
        at("COPY --chown=0:0 --chmod=0755 [\"run.sh\", \"/usr/local/bin/run\"]\n"));
  at("# excluded from src/ by the spec (add to .dockerignore): *.pyc\n");
  at("RUN mkdir -p /usr/local/bin && ln -sfn 'run x' /usr/local/bin/start && chown -h 1000:1000 "
     "/usr/local/bin/start\n");
  at("RUN mkdir -p '/data/my models' && chmod 0700 '/data/my models' && chown 1000:1000 '/data/my models'\n");
  at("ENV A=\"x \\\"y\\\" \\$z\"\n");
  at("ENV P=\"/opt/bin:${PATH}:${X:-a\\\"b}\"\n"); // references stay Docker's to expand
  at("LABEL \"team\"=\"ocr: \\\"vision\\\"\"\n");
  at("EXPOSE 8080/tcp\n");
  at("WORKDIR \"/app\"\n");
  at("ENTRYPOINT [\"python3\", \"/app/train.py\"]\n");
  CHECK(out.find("CMD") == std::string::npos);
  CHECK(out.find("\n\n\n") == std::string::npos);
  at("pip compiles .pyc files");

  in.base = "oci:bases/paddle:2.6";
  std::string e = error_of([&] { templates::render_dockerfile(in, ""); });
  CHECK(e.find("cannot name in FROM") != std::string::npos);
  CHECK(e.find("paddle-image push oci:bases/paddle:2.6") != std::string::npos);
  in.base = "scratch";
  in.config.env = {{"A", "two\nlines"}};
  CHECK(error_of([&] { templates::render_dockerfile(in, ""); }).find("line break") != std::string::npos);
  // A layer name goes into a comment: U+2028 (which editors show as a new line), NEL
  // and other control characters are refused there too (issue 34).
  in.config.env = {};
  for (const char* name : {"a\u2028b", "a\u2029b",
                           "a\xc2\x85"
                           "b",
                           "a\x1b[31mb"}) {
    CAPTURE(name);
    in.layers[1].name = name;
    std::string why = error_of([&] { templates::render_dockerfile(in, ""); });
    CHECK(why.find("layer name") != std::string::npos);
    CHECK(why.find("line break or control character") != std::string::npos);
  }
}

TEST_CASE("templates: the Dockerfile data matches the variables the template may use") {
  templates::DockerfileInput in;
  in.base = "scratch";
  in.python = "python3";
  nlohmann::json d = templates::dockerfile_data(in);
  nlohmann::json s = templates::dockerfile_schema();
  for (auto it = d.begin(); it != d.end(); ++it) {
    CHECK_MESSAGE(s.contains(it.key()), it.key());
  }
  for (auto it = s.begin(); it != s.end(); ++it) {
    CHECK_MESSAGE(d.contains(it.key()), it.key());
  }
}

TEST_CASE("templates: CI pipelines push with --digest-file, sign from secrets and check the lock when asked") {
  CHECK(templates::registry_host("registry.example.com/ocr/train") == "registry.example.com");
  CHECK(templates::registry_host("localhost/a") == "localhost");
  CHECK(templates::registry_host("127.0.0.1:5000/a") == "127.0.0.1:5000");
  CHECK(templates::registry_host("team/app") == "docker.io");
  templates::CiInput in{
      "spec.yaml", "registry.example.com/ocr/train", true, "requirements.txt", "requirements.lock", "deps", {}};
  for (const auto& kind : templates::ci_kinds()) {
    nlohmann::json d = templates::ci_data(kind, in);
    CHECK(d.size() == templates::ci_schema().size());
    std::string out = templates::render_ci(kind, in, "");
    CHECK(out.find("--digest-file digest.txt --sign --key") != std::string::npos);
    CHECK(out.find("paddle-image lock \"$REQUIREMENTS\" -o /tmp/check.lock") != std::string::npos);
    CHECK(out.find("IMAGE: \"registry.example.com/ocr/train\"") != std::string::npos);
    in.sign = false;
    in.requirements.clear();
    out = templates::render_ci(kind, in, "");
    CHECK(out.find("--sign") == std::string::npos);
    CHECK(out.find("COSIGN") == std::string::npos);
    CHECK(out.find("paddle-image lock") == std::string::npos);
    in.sign = true;
    in.requirements = "requirements.txt";
  }
}

TEST_CASE("templates: CI pipelines get paddle-image from source, a checked release archive or its pinned image") {
  const std::string sum(64, 'a');
  const std::string pinned = "registry.example.com/tools/paddle-image@sha256:" + std::string(64, 'b');
  for (const auto& kind : templates::ci_kinds()) {
    CAPTURE(kind);
    templates::CiInput in{"spec.yaml", "registry.example.com/ocr/train", true, "", "", "", {}};
    std::string src = templates::render_ci(kind, in, "");
    CHECK(src.find("git clone --depth 1") != std::string::npos);
    CHECK(src.find("sha256sum -c") == std::string::npos);
    in.tool.archive_url = "https://dl.example.com/paddle-image-0.1.0-linux-amd64.tar.gz";
    in.tool.archive_sha256 = sum;
    std::string arc = templates::render_ci(kind, in, "");
    CHECK(arc.find("git clone") == std::string::npos);
    CHECK(arc.find("PADDLE_IMAGE_ARCHIVE: \"https://dl.example.com/paddle-image-0.1.0-linux-amd64.tar.gz\"") !=
          std::string::npos);
    CHECK(arc.find("PADDLE_IMAGE_SHA256: \"" + sum + "\"") != std::string::npos);
    CHECK(arc.find("echo \"$PADDLE_IMAGE_SHA256  /tmp/paddle-image.tar.gz\" | sha256sum -c -") != std::string::npos);
    CHECK(arc.find("debian:12") != std::string::npos);
    in.tool = {};
    in.tool.image = pinned;
    std::string img = templates::render_ci(kind, in, "");
    CHECK(img.find("\"" + pinned + "\"") != std::string::npos);
    auto count = [](const std::string& text, const std::string& what) {
      std::size_t n = 0;
      for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) {
        ++n;
      }
      return n;
    };
    CHECK(count(img, "debian:12") + 1 == count(src, "debian:12")); // the build job's image, not the digest job's
    CHECK(img.find("git clone") == std::string::npos);
  }
  auto refused = [](templates::ToolSource t, const std::string& flag, const std::string& why) {
    CAPTURE(why);
    templates::CiInput in{"spec.yaml", "registry.example.com/ocr/train", true, "", "", "", std::move(t)};
    try {
      (void)templates::render_ci("github-actions", in, "");
      FAIL("accepted");
    } catch (const util::Error& e) {
      CHECK(e.kind() == util::ErrorKind::usage);
      CHECK(std::string(e.what()).rfind(flag + " ", 0) == 0);
      CHECK(std::string(e.what()).find(why) != std::string::npos);
      CHECK(std::string(e.what()).find("s3cret") == std::string::npos);
    }
  };
  refused({"https://x.example/p.tar.gz", "", ""}, "--tool-archive", "needs the other one");
  refused({"", sum, ""}, "--tool-sha256", "needs the other one");
  refused({"ftp://x.example/p.tar.gz", sum, ""}, "--tool-archive", "is not an http(s) URL");
  refused({"https://x.example/p.tar.gz\n  evil: 1", sum, ""}, "--tool-archive", "is not an http(s) URL");
  refused({"https://ci:s3cret@x.example/p.tar.gz", sum, ""}, "--tool-archive", "carries credentials");
  refused({"https://x.example/p.tar.gz", "ABC", ""}, "--tool-sha256", "is not 64 lower-case hex digits");
  refused({"", "", "registry.example.com/tools/paddle-image:latest"}, "--tool-image",
          "is not an image pinned by digest");
  refused({"https://x.example/p.tar.gz", sum, pinned}, "--tool-image", "two ways to get paddle-image");
}

namespace {
// The lines of `text` that contain `what`.
std::vector<std::string> lines_with(const std::string& text, const std::string& what) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    std::string line = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (line.find(what) != std::string::npos) {
      out.push_back(line);
    }
    start = end == std::string::npos ? text.size() : end + 1;
  }
  return out;
}

// The registry build cache in a rendered pipeline: IMAGE/cache read always, written only
// on a protected branch (docs/templates.md, "Registry build cache in CI").
void check_cache_lines(const std::string& kind, const std::string& out) {
  CAPTURE(kind);
  CHECK(out.find("Whoever can write the cache decides what a") != std::string::npos);
  std::size_t build = out.find("paddle-image build \"$SPEC\"");
  REQUIRE(build != std::string::npos);
  if (kind == "github-actions") {
    auto from = lines_with(out, "PADDLE_IMAGE_CACHE_FROM:");
    REQUIRE(from.size() == 1);
    CHECK(from[0] == "          PADDLE_IMAGE_CACHE_FROM: ${{ format('{0}/cache', env.IMAGE) }}");
    auto to = lines_with(out, "PADDLE_IMAGE_CACHE_TO:");
    REQUIRE(to.size() == 1);
    CHECK(to[0] == "          PADDLE_IMAGE_CACHE_TO: ${{ (github.event_name == 'push' && github.ref_protected) && "
                   "format('{0}/cache', env.IMAGE) || '' }}");
    CHECK(out.find("PADDLE_IMAGE_CACHE_TO:") < build); // the build step's env
    return;
  }
  auto from = lines_with(out, "PADDLE_IMAGE_CACHE_FROM=");
  REQUIRE(from.size() == 1);
  CHECK(from[0] == "      export PADDLE_IMAGE_CACHE_FROM=\"$IMAGE/cache\"");
  auto to = lines_with(out, "PADDLE_IMAGE_CACHE_TO");
  REQUIRE(to.size() == 2); // unset, then the export under the condition
  CHECK(to[0] == "      unset PADDLE_IMAGE_CACHE_TO");
  const std::string cond =
      "      if [ \"$CI_COMMIT_REF_PROTECTED\" = \"true\" ] && [ -z \"$CI_MERGE_REQUEST_IID\" ]; then\n";
  CHECK(out.find(cond + to[1] + "\n") != std::string::npos);
  CHECK(to[1] == "        export PADDLE_IMAGE_CACHE_TO=\"$IMAGE/cache\"");
  std::size_t fi = out.find("\n      fi\n", out.find(to[1]));
  CHECK(fi != std::string::npos);
  CHECK(fi < build);
}
} // namespace

TEST_CASE("templates: CI pipelines read the registry cache always and write it only on protected branches") {
  const std::string pinned = "registry.example.com/tools/paddle-image@sha256:" + std::string(64, 'b');
  for (const auto& kind : templates::ci_kinds()) {
    templates::CiInput in{
        "spec.yaml", "registry.example.com/ocr/train", true, "requirements.txt", "requirements.lock", "deps", {}};
    check_cache_lines(kind, templates::render_ci(kind, in, ""));
    in.sign = false;
    in.tool.image = pinned;
    check_cache_lines(kind, templates::render_ci(kind, in, ""));
  }
  auto files = templates::project_files("ocr-train", "reg.example.com/t/p", "");
  REQUIRE(files.back().path == ".github/workflows/build.yml");
  check_cache_lines("github-actions", files.back().content);
}

TEST_CASE("templates: init's project files") {
  CHECK(templates::project_name("/x/My Proj_1") == "my-proj_1");
  CHECK(templates::project_name("/x/--") == "app");
  auto files = templates::project_files("ocr-train", "reg.example.com/t/p", "");
  // The lock is not a template: init runs lock on the written project (cli).
  REQUIRE(files.size() == 6);
  CHECK(files[0].path == "spec.yaml");
  for (const auto& f : files) {
    CHECK(f.path != "requirements.lock");
  }
  CHECK(files[0].content.find("  name: \"reg.example.com/t/p\"\n") != std::string::npos);
  CHECK(files.back().path == ".github/workflows/build.yml");
  std::string e = error_of([] { templates::project_files("ocr-trian", "x", ""); });
  CHECK(e.find("did you mean 'ocr-train'?") != std::string::npos);
}

TEST_CASE("templates: Dockerfile parser (continuations, comments, directives, line numbers)") {
  std::string df = "# syntax=docker/dockerfile:1\n# a comment\nFROM scratch\n\nRUN a && \\\n  # inside\n  b \\\n  c\n"
                   "copy x /y\nCMD [\"a\"]";
  auto ins = templates::parse_dockerfile(df, "Dockerfile");
  REQUIRE(ins.size() == 4);
  CHECK(ins[0].keyword == "FROM");
  CHECK(ins[0].line == 3);
  CHECK(ins[1].keyword == "RUN");
  CHECK(ins[1].line == 5);
  // Joined as BuildKit joins them: nothing added, the blanks before the escape and the
  // next line's indentation kept.
  CHECK(ins[1].args == "a &&   b   c");
  CHECK(ins[1].escape == '\\');
  CHECK(ins[2].keyword == "COPY");
  CHECK(ins[2].line == 9);
  CHECK(ins[3].args == "[\"a\"]");
  auto esc = templates::parse_dockerfile("# escape=`\nFROM scratch\nRUN a `\n b\n", "D");
  REQUIRE(esc.size() == 2);
  CHECK(esc[1].args == "a  b");
  CHECK(esc[1].escape == '`');
  auto joined = templates::spec_from_dockerfile("FROM x\nENV A=x\\\ny B=1\nENV C=\"p \\\n  q\"\n", "D");
  CHECK(joined.unmapped.empty());
  CHECK(joined.spec.find("\"A\": \"xy\"\n    \"B\": \"1\"\n    \"C\": \"p   q\"\n") != std::string::npos);
  // Shown, a continued line's blanks are one.
  auto shown = templates::spec_from_dockerfile("FROM x\nRUN make \\\n      install\n", "D");
  REQUIRE(shown.unmapped.size() == 1);
  CHECK(shown.unmapped[0].instruction == "RUN make install");
  CHECK(error_of([] { templates::parse_dockerfile("FROM x\n--flag y\n", "D"); }).find("D:2:") != std::string::npos);
  auto hd =
      templates::parse_dockerfile("FROM x\nRUN <<EOF\napt-get update\n# not a comment here\nEOF\nCMD [\"a\"]\n", "D");
  REQUIRE(hd.size() == 3);
  CHECK(hd[1].line == 2);
  CHECK(hd[1].args.find("apt-get update") != std::string::npos);
  CHECK(hd[2].line == 6);
  auto env = templates::spec_from_dockerfile("FROM x\nENV A hello world\n", "D");
  CHECK(env.spec.find("\"A\": \"hello world\"") != std::string::npos);
}

TEST_CASE("templates: init maps mkdir to directory rules, a chmod of them to their mode") {
  auto r = templates::spec_from_dockerfile("FROM x\nWORKDIR /w\nRUN mkdir -p a/b /abs/ && chmod 1777 /w/a/b\n"
                                           "RUN mkdir --mode=700 -v logs\nRUN mkdir -m u+rwx sym\n"
                                           "RUN mkdir -Z ctx\n",
                                           "D");
  auto has = [&](const std::string& s) {
    INFO(r.spec);
    CHECK(r.spec.find(s) != std::string::npos);
  };
  has("  - name: \"dirs\"\n    files:\n      - directory: \"/w/a/b\"\n        mode: \"1777\"\n"
      "      - directory: \"/abs\"\n      - directory: \"/w/logs\"\n        mode: \"0700\"\n");
  REQUIRE(r.unmapped.size() == 2); // a symbolic mode, an option a rule has no equivalent for
  CHECK(r.unmapped[0].line == 5);
  CHECK(r.unmapped[1].line == 6);
  CHECK(r.unmapped[0].reason.find("{directory: PATH") != std::string::npos);
}

TEST_CASE("templates: init maps a .bashrc export to config.env, ulimit to nothing; a shell-read value stays") {
  auto r =
      templates::spec_from_dockerfile("FROM x\nRUN echo \"export PYTHONPATH=/app/src\" >> ~/.bashrc && ulimit -n 4096\n"
                                      "RUN echo 'export A=\"x y\"' >> /root/.bashrc\n"
                                      "RUN echo export B=1 >> /etc/bash.bashrc\n",
                                      "D");
  INFO(r.spec);
  CHECK(r.spec.find("\"PYTHONPATH\": \"/app/src\"") != std::string::npos);
  CHECK(r.spec.find("\"B\": \"1\"") != std::string::npos);
  CHECK(r.spec.find("\"A\":") == std::string::npos);
  REQUIRE(r.unmapped.size() == 1);
  CHECK(r.unmapped[0].line == 3);
  CHECK(r.unmapped[0].reason.find("config.env") != std::string::npos);
  REQUIRE(r.left_out.size() == 3);
  const std::string all = r.left_out[0] + "\n" + r.left_out[1] + "\n" + r.left_out[2];
  CHECK(all.find("2: ulimit -n 4096") != std::string::npos);
  CHECK(all.find("2: echo \"export PYTHONPATH=...\" >> .bashrc: PYTHONPATH is in config.env") != std::string::npos);
  CHECK(all.find("4: echo \"export B=...\"") != std::string::npos);
}

TEST_CASE("templates: a seed's Dockerfile mapped onto a spec, the rest listed with line numbers") {
  std::string df = "FROM paddlepaddle/paddle:2.6.1-gpu-cuda11.7-cudnn8.4-trt8.4\n"          // 1
                   "WORKDIR /app\n"                                                         // 2
                   "COPY requirements.txt .\n"                                              // 3
                   "RUN pip install -r requirements.txt -i https://mirror.example/simple\n" // 4
                   "RUN apt-get update && apt-get install -y libgl1\n"                      // 5
                   "COPY --chown=1000:1000 src/ ./src/\n"                                   // 6
                   "ADD https://example.com/m.tar /opt/\n"                                  // 7
                   "ENV A=1 B=\"x: y\"\n"                                                   // 8
                   "ARG V\n"                                                                // 9
                   "EXPOSE 8080\n"                                                          // 10
                   "USER 1000\n"                                                            // 11
                   "ENTRYPOINT [\"python3\"]\n"                                             // 12
                   "CMD train.py --epochs 3\n";                                             // 13
  auto r = templates::spec_from_dockerfile(df, "Dockerfile");
  CHECK(r.unmapped.empty()); // ARG V (line 9) only declares a variable; ADD URL is a download the lock pins
  CHECK(r.spec.find("      - url: \"https://example.com/m.tar\"\n        # sha256: pinned by paddle-image lock "
                    "--sources\n        to: \"/opt/\"\n") != std::string::npos);
  REQUIRE(r.commands.size() == 3);
  CHECK(r.commands[0] == "paddle-image lock requirements.txt -o requirements.txt.lock --spec spec.yaml --layer deps");
  CHECK(r.commands[1] == "paddle-image lock --spec spec.yaml --layer system");
  CHECK(r.commands[2] == "paddle-image lock --sources --spec spec.yaml");
  auto has = [&](const std::string& s) { return r.spec.find(s) != std::string::npos; };
  // apt-get install: the first layer, a debs layer of the base's distribution
  CHECK(has("  - name: \"system\"\n"));
  CHECK(has("    debs:\n      packages: [\"libgl1\"]\n      repositories:\n        - url: "
            "http://archive.ubuntu.com/ubuntu\n"));
  CHECK(r.spec.find("name: \"system\"") < r.spec.find("name: \"deps\""));
  CHECK(has("base: \"paddlepaddle/paddle:2.6.1-gpu-cuda11.7-cudnn8.4-trt8.4\"\n"));
  CHECK(has("  - name: \"deps\"\n    wheels:\n      lock: \"requirements.txt.lock\"\n      index: "
            "\"https://mirror.example/simple\"\n"));
  CHECK(has("      - from: \"src/\"\n        to: \"/app/src/\"\n        owner: \"1000:1000\"\n"));
  CHECK(has("      - from: \"requirements.txt\"\n        to: \"/app/\"\n"));
  CHECK(has("    \"B\": \"x: y\"\n"));
  CHECK(has("  entrypoint: [\"python3\"]\n  cmd: [\"/bin/sh\", \"-c\", \"train.py --epochs 3\"]\n"));
  CHECK(has("  workdir: \"/app\"\n"));
  CHECK(has("  user: \"1000\"\n"));
  CHECK(has("  ports: [\"8080\"]\n"));
  // requirements, then deps, then src: the Dockerfile's order
  CHECK(r.spec.find("requirements.txt\"\n        to") < r.spec.find("name: \"deps\""));
  CHECK(r.spec.find("name: \"deps\"") < r.spec.find("from: \"src/\""));
  // the context as seen from the spec's directory is prefixed
  auto sub = templates::spec_from_dockerfile(df, "Dockerfile", "../seed");
  CHECK(sub.spec.find("from: \"../seed/src/\"") != std::string::npos);
  CHECK(sub.commands[0].find("lock ../seed/requirements.txt -o ../seed/requirements.txt.lock") != std::string::npos);
}

TEST_CASE("templates: apt-get lines of every usual shape map to one debs layer; anything else in the RUN does not") {
  std::string df = "FROM debian:bookworm-slim\n"
                   "RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "
                   "libgl1 libglib2.0-0 && rm -rf /var/lib/apt/lists/*\n"
                   "RUN apt install -y ffmpeg=7:5.1.6-0+deb12u1 libgl1; apt-get clean\n"
                   "RUN apt-get install -y curl && curl -o /x https://example.com/x\n"
                   "RUN apt-get install -y $PKGS\n";
  auto r = templates::spec_from_dockerfile(df, "Dockerfile");
  REQUIRE(r.unmapped.size() == 2);
  CHECK(r.unmapped[0].line == 4); // curl runs: the RUN is not only apt
  CHECK(r.unmapped[1].line == 5);
  CHECK(r.unmapped[1].reason.find("variable") != std::string::npos);
  CHECK(r.spec.find("packages: [\"libgl1\", \"libglib2.0-0\", \"ffmpeg=7:5.1.6-0+deb12u1\"]") != std::string::npos);
  CHECK(r.spec.find("suite: bookworm") != std::string::npos);
  CHECK(r.spec.find("debian-archive-keyring.gpg") != std::string::npos);
  CHECK(r.spec.find("installed Recommends too") != std::string::npos); // line 3 had no --no-install-recommends
  REQUIRE(r.commands.size() == 1);
  CHECK(r.commands[0] == "paddle-image lock --spec spec.yaml --layer system");
}

TEST_CASE("templates: ARG defaults and earlier ENV values are substituted where Dockerfile substitutes them") {
  std::string df = "ARG TAG=2.6.1-gpu-cuda12.0-cudnn8.9-trt8.6\n"                           // 1: global, for FROM
                   "ARG REG\n"                                                              // 2
                   "FROM paddlepaddle/paddle:${TAG}\n"                                      // 3
                   "ARG APP=/workspace/ocr\n"                                               // 4
                   "ARG TAG\n"                                                              // 5: the global value again
                   "ENV PATH=/opt/bin:$PATH LANG=C.UTF-8 DIR=${APP} V=${TAG:-x} W='$APP'\n" // 6
                   "WORKDIR $APP\n"                                                         // 7
                   "COPY requirements.txt ./\n"                                             // 8
                   "USER ${REG}\n"       // 9: global, not declared again
                   "ENV OTHER=$UNSET\n"; // 10
  auto r = templates::spec_from_dockerfile(df, "Dockerfile");
  auto has = [&](const std::string& s) { return r.spec.find(s) != std::string::npos; };
  CHECK(has("base: \"paddlepaddle/paddle:2.6.1-gpu-cuda12.0-cudnn8.9-trt8.6\"\n"));
  CHECK(has("    \"LANG\": \"C.UTF-8\"\n    \"DIR\": \"/workspace/ocr\"\n"));
  CHECK(has("    \"V\": \"2.6.1-gpu-cuda12.0-cudnn8.9-trt8.6\"\n"));
  CHECK(has("    \"W\": \"$$APP\"\n")); // single quotes keep the '$', which the spec writes as $$
  CHECK(has("  workdir: \"/workspace/ocr\"\n"));
  CHECK(has("        to: \"/workspace/ocr/\"\n"));
  // A variable the Dockerfile never set is the base's: the spec refers to it, and the
  // build expands it against the base's config, as Docker does (an unset one is "").
  CHECK(has("    \"PATH\": \"/opt/bin:${PATH}\"\n"));
  CHECK(has("    \"OTHER\": \"${UNSET}\"\n"));
  REQUIRE(r.unmapped.size() == 1);
  CHECK(r.unmapped[0].line == 9);
  CHECK(r.unmapped[0].reason.find("declares it again") != std::string::npos);
  // No global ARG is "an earlier stage".
  for (const auto& u : r.unmapped) {
    CHECK(u.reason.find("earlier stage") == std::string::npos);
  }
  // A FROM with a variable nobody sets is an error naming the line, never `scratch`.
  util::Error e = test_support::error_of(
      [] { templates::spec_from_dockerfile("ARG TAG\nFROM paddlepaddle/paddle:${TAG}\n", "Dockerfile"); });
  CHECK(std::string(e.what()).find("Dockerfile:2: FROM refers to $TAG") != std::string::npos);
  CHECK(e.kind() == util::ErrorKind::input);
}

TEST_CASE("templates: pip lines of every shape: -r followed back through its COPY, named packages to a file") {
  std::string df = "FROM python:3.10\n"         // 1
                   "WORKDIR /srv\n"             // 2
                   "COPY requirements.txt ./\n" // 3
                   "RUN python3 -m pip install --upgrade pip && pip3.10 install --no-cache-dir -r "
                   "requirements.txt && rm requirements.txt\n" // 4
                   "RUN pip install paddlepaddle-gpu==2.4.0.post116 -f https://www.paddlepaddle.org.cn/whl/"
                   "linux/mkl/avx/stable.html\n"                                                        // 5
                   "COPY . /app\n"                                                                      // 6
                   "RUN cd /app && pip install -r deploy/requirements.txt\n"                            // 7
                   "RUN pip install -r /work/requirements.txt\n"                                        // 8
                   "RUN pip install -e .\n"                                                             // 9
                   "RUN git clone --recurse-submodules https://github.com/PaddlePaddle/PaddleOCR.git\n" // 10
                   "RUN chmod +x /app/run.sh\n";                                                        // 11
  auto r = templates::spec_from_dockerfile(df, "Dockerfile");
  auto has = [&](const std::string& s) { return r.spec.find(s) != std::string::npos; };
  REQUIRE(r.commands.size() == 3);
  CHECK(r.commands[0] == "paddle-image lock requirements.txt -o requirements.txt.lock --spec spec.yaml --layer deps");
  CHECK(r.commands[1] ==
        "paddle-image lock requirements-deps-2.txt -o requirements-deps-2.lock --spec spec.yaml --layer deps-2");
  CHECK(r.commands[2] == "paddle-image lock deploy/requirements.txt -o deploy/requirements.txt.lock --spec spec.yaml "
                         "--layer deps-3");
  REQUIRE(r.files.size() == 1);
  CHECK(r.files[0].first == "requirements-deps-2.txt");
  CHECK(r.files[0].second.find("\npaddlepaddle-gpu==2.4.0.post116\n") != std::string::npos);
  CHECK(has("      find_links: [\"https://www.paddlepaddle.org.cn/whl/linux/mkl/avx/stable.html\"]\n"));
  REQUIRE(r.left_out.size() == 2);
  CHECK(r.left_out[0].rfind("4: python3 -m pip install --upgrade pip", 0) == 0);
  CHECK(r.left_out[1] == "4: rm requirements.txt");
  REQUIRE(r.unmapped.size() == 4);
  CHECK(r.unmapped[0].line == 8);
  CHECK(r.unmapped[0].reason.find("no COPY before this RUN puts a file there") != std::string::npos);
  CHECK(r.unmapped[1].line == 9);
  CHECK(r.unmapped[1].reason.find("local project") != std::string::npos);
  CHECK(r.unmapped[2].reason.find("clones code") != std::string::npos);
  CHECK(r.unmapped[3].reason.find("mode:") != std::string::npos);
  // Unpinned names are a requirements input that lock resolves: nothing left by hand.
  auto u = templates::spec_from_dockerfile("FROM python:3.10\nRUN pip install -U shapely \"fonttools>=4.24.0\" "
                                           "'uvicorn[standard]'\n",
                                           "Dockerfile");
  CHECK(u.unmapped.empty());
  REQUIRE(u.files.size() == 1);
  CHECK(u.files[0].first == "requirements-deps.txt");
  CHECK(u.files[0].second.find("\nshapely\nfonttools>=4.24.0\nuvicorn[standard]\n") != std::string::npos);
  CHECK(u.files[0].second.find("resolves these for the base image") != std::string::npos);
  REQUIRE(u.commands.size() == 1);
  CHECK(u.commands[0] ==
        "paddle-image lock requirements-deps.txt -o requirements-deps.lock --spec spec.yaml --layer deps");
  REQUIRE(u.left_out.size() == 1);
  CHECK(u.left_out[0].find("--upgrade") != std::string::npos);
  // -r files and names in one pip install: one input that includes the files.
  auto both = templates::spec_from_dockerfile("FROM python:3.10\nCOPY requirements.txt extra.txt /app/\n"
                                              "RUN pip install -r /app/requirements.txt -r /app/extra.txt flask\n",
                                              "Dockerfile");
  CHECK(both.unmapped.empty());
  REQUIRE(both.files.size() == 1);
  CHECK(both.files[0].second.find("\n-r requirements.txt\n-r extra.txt\nflask\n") != std::string::npos);
  REQUIRE(both.commands.size() == 1);
  CHECK(both.commands[0].find("lock requirements-deps.txt -o requirements-deps.lock") != std::string::npos);
}

TEST_CASE("init --from-dockerfile: each pip install argument is one requirement, never smuggled options") {
  // A quoted argument becomes one line of the requirements file: an option, a comment or
  // a second line inside it would change what lock reads; such a RUN is not mapped, and
  // no requirements file is written for it.
  const std::string df = "FROM python:3.10\n"
                         "RUN pip install \"numpy --index-url http://evil.example/simple\"\n"
                         "RUN pip install \"scipy\t--extra-index-url=http://evil\"\n"
                         "RUN pip install \"requests # pinned elsewhere\"\n"
                         "RUN pip install \"opencv>=>4\"\n"
                         "RUN pip install \"shapely>=2\" \"fonttools[ufo]>=4.24; python_version > '3.8'\"\n";
  auto plain = templates::spec_from_dockerfile(df, "Dockerfile");
  REQUIRE(plain.unmapped.size() == 3); // without a PEP 508 check, opencv>=>4 is left to lock
  CHECK(plain.unmapped[0].line == 2);
  CHECK(plain.unmapped[0].reason.find("pip reads the part from `-` on as options") != std::string::npos);
  CHECK(plain.unmapped[1].line == 3);
  CHECK(plain.unmapped[1].reason.find("`scipy?--extra-index-url=http://evil` holds a control character") !=
        std::string::npos);
  CHECK(plain.unmapped[2].reason.find("as a comment") != std::string::npos);
  templates::FromDockerfileOptions o;
  std::vector<std::string> asked;
  o.requirement_error = [&](const std::string& a) -> std::optional<std::string> {
    asked.push_back(a);
    return a.find(">=>") != std::string::npos ? std::optional<std::string>("bad specifier at column 7") : std::nullopt;
  };
  auto checked = templates::spec_from_dockerfile(df, "Dockerfile", o);
  REQUIRE(checked.unmapped.size() == 4);
  CHECK(checked.unmapped[3].line == 5);
  CHECK(checked.unmapped[3].reason.find("`opencv>=>4` is not a requirement (PEP 508): bad specifier at column 7") !=
        std::string::npos);
  // The checker sees only arguments the lexical rules let through.
  CHECK(asked == std::vector<std::string>{"opencv>=>4", "shapely>=2", "fonttools[ufo]>=4.24; python_version > '3.8'"});
  // Each mapped RUN has its own requirements file: without the check, opencv>=>4's
  // (lock refuses it, naming the line); with it, only the last RUN's.
  REQUIRE(plain.files.size() == 2);
  CHECK(plain.files[0].second.find("\nopencv>=>4\n") != std::string::npos);
  REQUIRE(checked.files.size() == 1);
  for (const auto& r : {plain, checked}) {
    for (const auto& [path, text] : r.files) {
      CHECK(text.find("evil") == std::string::npos);
      CHECK(text.find("requests") == std::string::npos);
    }
    CHECK(r.files.back().second.find("\nshapely>=2\nfonttools[ufo]>=4.24; python_version > '3.8'\n") !=
          std::string::npos);
  }
}

TEST_CASE("init --from-dockerfile: MAINTAINER is the authors label, and a label set twice keeps the later value") {
  auto r = templates::spec_from_dockerfile("FROM python:3.10\nARG WHO=x\nMAINTAINER OCR team <ocr@example.com> $WHO\n"
                                           "LABEL a=1 b=2\nLABEL a=3\n",
                                           "Dockerfile");
  CHECK(r.unmapped.empty());
  // Docker does not expand variables in MAINTAINER: the text as written.
  // (A spec's labels are not expanded either.)
  CHECK(r.spec.find("    \"org.opencontainers.image.authors\": \"OCR team <ocr@example.com> $WHO\"\n") !=
        std::string::npos);
  CHECK(r.spec.find("    \"a\": \"3\"\n    \"b\": \"2\"\n") != std::string::npos);
  auto later = templates::spec_from_dockerfile(
      "FROM python:3.10\nMAINTAINER old@example.com\nLABEL org.opencontainers.image.authors=new@example.com\n",
      "Dockerfile");
  CHECK(later.spec.find("new@example.com") != std::string::npos);
  CHECK(later.spec.find("old@example.com") == std::string::npos);
  auto empty = templates::spec_from_dockerfile("FROM python:3.10\nMAINTAINER \n", "Dockerfile");
  REQUIRE(empty.unmapped.size() == 1);
  CHECK(empty.unmapped[0].reason.find("MAINTAINER requires exactly one argument") != std::string::npos);
}

TEST_CASE("init --from-dockerfile: pip uninstall -y maps to a wheels layer that uninstalls, in the RUN's order") {
  auto r = templates::spec_from_dockerfile("FROM paddlepaddle/paddle:2.6.1\n"
                                           "RUN pip uninstall -y opencv-python Pillow && pip install flask==3.0.0\n"
                                           "RUN python3 -m pip uninstall opencv-contrib-python\n"
                                           "RUN pip uninstall -y -r remove.txt\n"
                                           "RUN pip3 uninstall --yes 'six>=1'\n",
                                           "Dockerfile");
  INFO(r.spec);
  const auto un = r.spec.find("  - name: \"uninstall\"\n    wheels:\n      uninstall: [\"opencv-python\", \"Pillow\"]");
  const auto deps = r.spec.find("  - name: \"deps\"\n    wheels:\n      lock: \"requirements-deps.lock\"");
  CHECK(un != std::string::npos);
  CHECK(deps != std::string::npos);
  CHECK(un < deps);
  REQUIRE(r.unmapped.size() == 3);
  CHECK(r.unmapped[0].line == 3);
  CHECK(r.unmapped[0].reason.find("without -y asks for confirmation") != std::string::npos);
  CHECK(r.unmapped[0].reason.find("uninstall: [opencv-contrib-python]") != std::string::npos);
  CHECK(r.unmapped[1].reason.find("name the projects") != std::string::npos);
  CHECK(r.unmapped[2].reason.find("`six>=1` is not a project name") != std::string::npos);
}

TEST_CASE("init --from-dockerfile --build-arg: an ARG takes the value given, where it is declared, as in Docker") {
  const std::string df = "ARG TAG=2.5.2-gpu-cuda11.7-cudnn8.4-trt8.4\n"
                         "FROM paddlepaddle/paddle:${TAG}\n"
                         "ARG TAG\n"
                         "ARG APP=/srv/app\n"
                         "ARG MODE\n"
                         "WORKDIR $APP\n"
                         "ENV MODE=$MODE PADDLE_TAG=$TAG\n";
  templates::FromDockerfileOptions o;
  o.build_args = {{"TAG", "2.6.1-gpu-cuda12.0-cudnn8.9-trt8.6"}, {"MODE", "train"}, {"NOPE", "x"}};
  auto r = templates::spec_from_dockerfile(df, "Dockerfile", o);
  auto has = [&](const std::string& t) { return r.spec.find(t) != std::string::npos; };
  CHECK(has("base: \"paddlepaddle/paddle:2.6.1-gpu-cuda12.0-cudnn8.9-trt8.6\"\n"));
  CHECK(has("  workdir: \"/srv/app\"\n")); // not given: the default
  CHECK(has("    \"MODE\": \"train\"\n    \"PADDLE_TAG\": \"2.6.1-gpu-cuda12.0-cudnn8.9-trt8.6\"\n"));
  CHECK(r.unmapped.empty());
  CHECK(r.unused_build_args == std::vector<std::string>{"NOPE"});
  // Without it, the ARG without a default leaves MODE listed, and the default base.
  auto d = templates::spec_from_dockerfile(df, "Dockerfile");
  CHECK(d.spec.find("paddlepaddle/paddle:2.5.2-gpu-cuda11.7-cudnn8.4-trt8.4") != std::string::npos);
  REQUIRE(d.unmapped.size() == 1);
  CHECK(d.unmapped[0].reason.find("ENV MODE refers to $MODE, an ARG without a default") != std::string::npos);
}

TEST_CASE("templates: multi-stage Dockerfiles map the last stage and list every earlier instruction") {
  std::string df = "FROM golang AS build\nRUN go build -o /x\nCOPY a /a\nFROM scratch\nCOPY --from=build /x /x\n"
                   "COPY b /b\n";
  auto r = templates::spec_from_dockerfile(df, "D");
  REQUIRE(r.unmapped.size() == 4);
  CHECK(r.unmapped[0].line == 1);
  CHECK(r.unmapped[0].reason.find("earlier stage") != std::string::npos);
  CHECK(r.unmapped[2].line == 3);
  CHECK(r.unmapped[3].line == 5);
  CHECK(r.unmapped[3].reason.find("--from") != std::string::npos);
  CHECK(r.spec.find("base: \"scratch\"") != std::string::npos);
  CHECK(r.spec.find("from: \"b\"") != std::string::npos);
  CHECK(r.spec.find("from: \"a\"") == std::string::npos);
}

TEST_CASE("templates: index credentials never reach a rendered Dockerfile or an init spec") {
  const std::string canary = "T0pS3cretCanary";
  templates::DockerfileInput in;
  in.spec_file = "spec.yaml";
  in.base = "scratch";
  in.python = "python3";
  templates::DockerLayer deps{
      "deps",
      "wheels",
      {},
      "",
      "requirements.lock",
      {"https://ciuser:" + canary + "@mirror.example/simple", "https://" + canary + "@[fd00::5]:8443/extra/"},
      {"https://u:" + canary + "@files.example/links/"},
      "",
      {},
      {},
      {}};
  in.layers = {deps};
  std::string out = templates::render_dockerfile(in, "");
  CHECK(out.find(canary) == std::string::npos);
  CHECK(out.find("ciuser") == std::string::npos);
  CHECK(out.find("RUN --mount=type=secret,id=netrc,target=/root/.netrc PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip "
                 "install --require-hashes -r "
                 "/tmp/paddle-image/deps.lock -i https://mirror.example/simple --extra-index-url "
                 "'https://[fd00::5]:8443/extra/' -f https://files.example/links/\n") != std::string::npos);
  CHECK(out.find("# the credentials for mirror.example, [fd00::5], files.example are not written here: build with "
                 "--secret id=netrc,src=FILE") != std::string::npos);
  // Without credentials nothing is mounted.
  in.layers[0].indexes = {"https://mirror.example/simple"};
  in.layers[0].find_links = {};
  CHECK(templates::render_dockerfile(in, "").find("--mount=type=secret") == std::string::npos);

  std::string df = "FROM python:3.11\n"
                   "COPY requirements.txt .\n"
                   "RUN pip install -r requirements.txt -i https://ci:" +
                   canary + "@mirror.example/simple --extra-index-url https://" + canary +
                   "@extra.example/simple\n"
                   "RUN curl -u ci:" +
                   canary + " https://ci:" + canary +
                   "@files.example/x.tar | tar x\n"
                   "ENV PIP_INDEX_URL=https://ci:" +
                   canary +
                   "@mirror.example/simple MODE=train\n"
                   "ENV HF_TOKEN " +
                   canary + "\n";
  auto r = templates::spec_from_dockerfile(df, "Dockerfile");
  CHECK(r.spec.find(canary) == std::string::npos);
  // A secret in ENV is not copied (an image's environment is public); the rest is.
  CHECK(r.spec.find("\"PIP_INDEX_URL\":") == std::string::npos);
  CHECK(r.spec.find("\"HF_TOKEN\":") == std::string::npos);
  CHECK(r.spec.find("\"MODE\": \"train\"") != std::string::npos);
  CHECK(r.spec.find("ENV HF_TOKEN=***") != std::string::npos); // listed, value hidden
  CHECK(std::count_if(r.unmapped.begin(), r.unmapped.end(),
                      [](const auto& u) { return u.reason.find("holds a secret") != std::string::npos; }) == 2);
  CHECK(r.spec.find("index: [\"https://mirror.example/simple\", \"https://extra.example/simple\"]") !=
        std::string::npos);
  bool told = false;
  for (const auto& u : r.unmapped) {
    CHECK(u.instruction.find(canary) == std::string::npos);
    told = told || u.reason.find("not copied into the spec") != std::string::npos;
  }
  CHECK(told);
  for (const auto& c : r.commands) {
    CHECK(c.find(canary) == std::string::npos);
  }
}

TEST_CASE("templates: COPY --chmod only where it gives paddle-image's modes; the rest is listed") {
  templates::DockerfileInput in;
  in.spec_file = "spec.yaml";
  in.base = "scratch";
  in.python = "python3";
  templates::DockerLayer app{"app", "files", {}, "", "", {}, {}, "", {}, {}, {}};
  app.copies.push_back(
      {"app/", "/app/", {}, 0640u, std::nullopt, "", false, {}, {}, false}); // dirs stay 0755: no --chmod
  app.copies.push_back(
      {"bin/", "/opt/bin/", {}, 0755u, std::nullopt, "", false, {}, {}, false}); // 0755 both: --chmod matches
  app.copies.push_back({"run.sh", "/usr/local/bin/run", {}, 0700u, std::nullopt, "", false, {}, {}, false}); // one file
  app.copies.push_back({"data/", "/data/", {}, 0600u, 0700u, "", false, {}, {}, false}); // both differ
  in.layers = {app};
  std::string out = templates::render_dockerfile(in, "");
  CHECK(out.find("COPY [\"app/\", \"/app/\"]\n") != std::string::npos);
  CHECK(out.find("--chmod=0640") == std::string::npos);
  CHECK(out.find("COPY --chmod=0755 [\"bin/\", \"/opt/bin/\"]\n") != std::string::npos);
  CHECK(out.find("COPY --chmod=0700 [\"run.sh\", \"/usr/local/bin/run\"]\n") != std::string::npos);
  CHECK(out.find("# mode 0640 of app/ is not applied: COPY --chmod would give it to the directories too "
                 "(paddle-image keeps them 0755)") != std::string::npos);
  CHECK(out.find("#   - file and directory modes of app/, data/, data/ are not set as paddle-image sets them") ==
        std::string::npos);
  CHECK(out.find("#   - file and directory modes of app/, data/ are not set as paddle-image sets them") !=
        std::string::npos);
}

TEST_CASE("templates: init --from-dockerfile lists heredocs and a second install of one requirements file") {
  std::string df = "FROM python:3.11\n"                     // 1
                   "COPY <<EOF2 /etc/inline.txt\n"          // 2
                   "hello\n"                                // 3
                   "EOF2\n"                                 // 4
                   "COPY requirements.txt .\n"              // 5
                   "RUN pip install -r requirements.txt\n"  // 6
                   "COPY src/ /app/\n"                      // 7
                   "RUN pip install -r requirements.txt\n"; // 8
  auto r = templates::spec_from_dockerfile(df, "Dockerfile");
  // Listed in the spec's header comment, never as a files layer.
  CHECK(r.spec.find("from: \"<<") == std::string::npos);
  CHECK(r.spec.find("to: \"EOF2") == std::string::npos);
  CHECK(r.spec.find("#   Dockerfile:2: COPY <<EOF2 /etc/inline.txt") != std::string::npos);
  REQUIRE(r.unmapped.size() == 2);
  CHECK(r.unmapped[0].line == 2);
  CHECK(r.unmapped[0].reason.find("heredoc") != std::string::npos);
  CHECK(r.unmapped[1].line == 8);
  CHECK(r.unmapped[1].reason.find("already installs it") != std::string::npos);
  REQUIRE(r.commands.size() == 1); // one lock command, not two writing the same file
  CHECK(r.commands[0].find("-o requirements.txt.lock") != std::string::npos);
}

TEST_CASE("templates: init --from-dockerfile reads several heredocs of one instruction, each body as text") {
  std::string df = "FROM python:3.11\n"            // 1
                   "COPY <<A <<\"B\" /dir/\n"      // 2
                   "ENTRYPOINT [\"evil-a\"]\n"     // 3
                   "A\n"                           // 4
                   "ENTRYPOINT [\"evil-b\"]\n"     // 5
                   "B\n"                           // 6
                   "CMD [\"python\", \"x.py\"]\n"; // 7
  auto ins = templates::parse_dockerfile(df, "Dockerfile");
  REQUIRE(ins.size() == 3);
  CHECK(ins[1].keyword == "COPY");
  CHECK(ins[1].text.find("evil-b") != std::string::npos);
  CHECK(ins[2].keyword == "CMD");
  CHECK(ins[2].line == 7);
  auto r = templates::spec_from_dockerfile(df, "Dockerfile");
  CHECK(r.spec.find("evil-a") == std::string::npos); // not even in the header comment
  CHECK(r.spec.find("entrypoint: [\"evil") == std::string::npos);
  CHECK(r.spec.find("evil-b\"]\n") == std::string::npos);
  REQUIRE(r.unmapped.size() == 1);
  CHECK(r.unmapped[0].line == 2);
}

TEST_CASE("init --from-dockerfile: ADD --checksum URL is a download rule, chmod of a copied file its mode") {
  const std::string df = "FROM paddlepaddle/paddle:2.6.1-gpu-cuda12.0-cudnn8.9-trt8.6\n" // 1
                         "ADD --checksum=sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa "
                         "https://m.example/ppocr/det.tar /opt/models/\n"                           // 2
                         "ADD https://m.example/ppocr/rec.tar /opt/models/\n"                       // 3
                         "COPY run.sh /usr/local/bin/\n"                                            // 4
                         "RUN chmod +x /usr/local/bin/run.sh\n"                                     // 5
                         "RUN chmod 755 /etc/other.sh\n"                                            // 6
                         "RUN wget -q https://m.example/x.tar -O /tmp/x.tar && tar xf /tmp/x.tar\n" // 7
                         "COPY --from=builder /src/dist /app/dist\n";                               // 8
  auto r = templates::spec_from_dockerfile(df, "Dockerfile");
  auto has = [&](const std::string& t) { return r.spec.find(t) != std::string::npos; };
  CHECK(has("    data:\n      - url: \"https://m.example/ppocr/det.tar\"\n        sha256: "
            "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"\n"
            "        to: \"/opt/models/\"\n"));
  CHECK(has("      - from: \"run.sh\"\n        to: \"/usr/local/bin/\"\n        mode: \"0755\"\n"));
  std::vector<int> lines;
  for (const auto& u : r.unmapped) {
    lines.push_back(u.line);
  }
  CHECK(lines == std::vector<int>{6, 8});
  REQUIRE(r.unmapped.size() == 2);
  CHECK(r.unmapped[0].reason.find("mode:") != std::string::npos); // not a copied file: the hint
  CHECK(r.unmapped[1].reason.find("docker build --target builder") != std::string::npos);
  // ADD URL without a checksum, and wget + tar: downloads the sources lock pins.
  CHECK(has("      - url: \"https://m.example/ppocr/rec.tar\"\n        # sha256: pinned by paddle-image lock "
            "--sources\n        to: \"/opt/models/\"\n"));
  CHECK(has("      - url: \"https://m.example/x.tar\"\n        # sha256: pinned by paddle-image lock --sources\n"
            "        extract: true\n        to: \"/\"\n"));
  CHECK(has("      - url: \"https://m.example/x.tar\"\n        # sha256: pinned by paddle-image lock --sources\n"
            "        to: \"/tmp/x.tar\"\n")); // not removed: the archive stays too
  CHECK(r.commands == std::vector<std::string>{"paddle-image lock --sources --spec spec.yaml"});
  // The spec loads.
  util::TempDir tmp(std::filesystem::temp_directory_path());
  util::write_file_atomic(tmp.path() / "run.sh", "#!/bin/sh\n");
  CHECK_NOTHROW(spec::parse(r.spec, tmp.path() / "spec.yaml"));
}

TEST_CASE("init --from-dockerfile: ln -s becomes a symlink rule") {
  const std::string df = "FROM python:3.10\n"                                                  // 1
                         "WORKDIR /opt/app\n"                                                  // 2
                         "RUN ln -s /opt/app/run.sh /usr/local/bin/start && ln -sf run.sh r\n" // 3
                         "RUN ln -snf /opt/conda/bin/python3 /usr/bin/\n"                      // 4
                         "RUN ln /a /b\n";                                                     // 5
  auto r = templates::spec_from_dockerfile(df, "Dockerfile");
  auto has = [&](const std::string& t) { return r.spec.find(t) != std::string::npos; };
  CHECK(has("  - name: \"links\"\n    files:\n      - symlink: \"/opt/app/run.sh\"\n        to: "
            "\"/usr/local/bin/start\"\n      - symlink: \"run.sh\"\n        to: \"/opt/app/r\"\n"
            "      - symlink: \"/opt/conda/bin/python3\"\n        to: \"/usr/bin/python3\"\n"));
  REQUIRE(r.unmapped.size() == 1);
  CHECK(r.unmapped[0].line == 5); // a hard link
  util::TempDir tmp(std::filesystem::temp_directory_path());
  spec::BuildSpec s = spec::parse(r.spec, tmp.path() / "spec.yaml");
  CHECK(s.layers[0].copy().copies[0].symlink == std::optional<std::string>("/opt/app/run.sh"));
}

TEST_CASE("init --from-dockerfile: useradd, adduser and groupadd become the accounts layer; USER keeps the name") {
  const std::string df =
      "FROM ubuntu:22.04\n"                                                                                  // 1
      "RUN groupadd -g 2000 ml && groupadd data && useradd -ms /bin/bash -G ml,video -c \"Paddle\" paddle\n" // 2
      "RUN useradd -r -M svc && adduser --disabled-password --gecos \"\" --uid 1500 alice && adduser alice ml\n"
      "RUN useradd -u 1001 -g users -N bob\n"         // 4
      "COPY --chown=paddle:ml app /home/paddle/app\n" // 5
      "COPY --chown=alice conf /etc/conf\n"           // 6
      "COPY --chown=nobody:nogroup x /x\n"            // 7: the base's user
      "RUN useradd -p secret eve\n"                   // 8
      "RUN useradd -g nosuch carol\n"                 // 9
      "RUN useradd -u 1001 paddle\n"                  // 10: again
      "USER paddle\n";
  auto r = templates::spec_from_dockerfile(df, "Dockerfile");
  auto has = [&](const std::string& t) { return r.spec.find(t) != std::string::npos; };
  CHECK(has("  - name: \"accounts\"\n    accounts:\n      groups:\n        - {name: \"ml\", gid: 2000}\n"
            "        - {name: \"data\", gid: 1000}\n        - {name: \"paddle\", gid: 1001}\n"));
  // useradd's choices where the Dockerfile gives no id: uids and gids counted apart.
  CHECK(has("        - name: \"paddle\"\n          uid: 1000 # the first uid useradd gives"));
  CHECK(has("          gid: 1001\n          shell: \"/bin/bash\"\n          comment: \"Paddle\"\n"
            "          groups: [\"ml\", \"video\"]\n"));
  CHECK(has("        - name: \"svc\"\n          uid: 999 # the highest free system uid"));
  CHECK(has("          create_home: false # useradd without -m\n"));
  CHECK(has("        - name: \"alice\"\n          uid: 1500\n          shell: \"/bin/bash\"\n          groups: "
            "[\"ml\"]\n"));
  CHECK(has("        - name: \"bob\"\n          uid: 1001\n          gid: 100\n          create_home: false"));
  CHECK(has("        to: \"/home/paddle/app\"\n        owner: \"1000:2000\"\n"));
  CHECK(has("        to: \"/etc/conf\"\n        owner: \"1500:1500\"\n"));
  CHECK(has("  user: \"paddle\"\n"));
  REQUIRE(r.unmapped.size() == 4);
  CHECK(r.unmapped[0].line == 7);
  CHECK(r.unmapped[0].reason.find("--chown=nobody:nogroup names a user or group the base has") != std::string::npos);
  CHECK(r.unmapped[1].line == 8);
  CHECK(r.unmapped[1].reason.find("useradd -p sets a password") != std::string::npos);
  CHECK(r.unmapped[2].line == 9);
  CHECK(r.unmapped[2].reason.find("useradd -g nosuch: a group neither this Dockerfile makes") != std::string::npos);
  CHECK(r.unmapped[3].line == 10);
  CHECK(r.unmapped[3].reason.find("adds user paddle, which an earlier line adds") != std::string::npos);
  util::TempDir tmp(std::filesystem::temp_directory_path());
  for (const char* d : {"app", "conf"}) {
    std::filesystem::create_directory(tmp.path() / d);
  }
  util::write_file_atomic(tmp.path() / "x", "x");
  spec::BuildSpec s = spec::parse(r.spec, tmp.path() / "spec.yaml");
  REQUIRE(s.layers[0].as_accounts() != nullptr);
  CHECK(s.layers[0].accounts().users.size() == 4);
  CHECK(s.config.user == "paddle");
}

TEST_CASE("init --from-dockerfile: git clone && git checkout COMMIT is a git source") {
  const std::string df = "FROM python:3.10\n"
                         "WORKDIR /app\n"
                         "RUN git clone https://github.com/PaddlePaddle/PaddleOCR.git && cd PaddleOCR && "
                         "git checkout cccccccccccccccccccccccccccccccccccccccc\n"
                         "RUN git clone -b release/2.7 https://github.com/PaddlePaddle/PaddleDetection.git\n"
                         "RUN git clone https://github.com/PaddlePaddle/PaddleNLP.git nlp && cd nlp && "
                         "git checkout v2.8.0 && rm -rf .git\n"
                         "RUN git clone --recursive https://github.com/PaddlePaddle/FastDeploy.git\n"; // 6
  auto r = templates::spec_from_dockerfile(df, "Dockerfile");
  auto has = [&](const std::string& t) { return r.spec.find(t) != std::string::npos; };
  CHECK(has("      - git: \"https://github.com/PaddlePaddle/PaddleOCR.git\"\n        commit: "
            "\"cccccccccccccccccccccccccccccccccccccccc\"\n"
            "        to: \"/app/PaddleOCR\"\n"));
  CHECK(has("      - git: \"https://github.com/PaddlePaddle/PaddleDetection.git\"\n        ref: \"release/2.7\""));
  CHECK(has("      - git: \"https://github.com/PaddlePaddle/PaddleNLP.git\"\n        ref: \"v2.8.0\" # pinned to "
            "its commit by paddle-image lock --sources\n        to: \"/app/nlp\"\n"));
  CHECK(r.commands == std::vector<std::string>{"paddle-image lock --sources --spec spec.yaml"});
  REQUIRE(r.unmapped.size() == 1);
  CHECK(r.unmapped[0].line == 6);
  CHECK(r.unmapped[0].reason.find("submodules") != std::string::npos);
  CHECK(r.unmapped[0].reason.find("{git: https://github.com/PaddlePaddle/FastDeploy.git, ref: BRANCH-OR-TAG") !=
        std::string::npos);
  util::TempDir tmp(std::filesystem::temp_directory_path());
  CHECK_NOTHROW(spec::parse(r.spec, tmp.path() / "spec.yaml"));
}

} // namespace unit_templates_test
