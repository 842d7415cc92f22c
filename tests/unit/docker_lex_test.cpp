#include <doctest/doctest.h>

#include "spec/env_value.hpp"
#include "templates/docker_lex.hpp"

#include <string>
#include <vector>

namespace unit_docker_lex_test {

using templates::DockerRefs;
using templates::DockerVars;
using templates::LexedWord;

LexedWord one(const std::string& text, const DockerVars& vars = {}, const DockerRefs& refs = {}, char esc = '\\') {
  return templates::lex_docker_value(text, vars, refs, esc);
}

// The value of a word that refers to nothing outside the Dockerfile.
std::string value(const std::string& text, const DockerVars& vars = {}, char esc = '\\') {
  LexedWord w = one(text, vars, {}, esc);
  CHECK_MESSAGE(!w.refers, text);
  CHECK_MESSAGE(w.unsupported.empty(), text);
  CHECK(w.spec == spec::env_literal(w.value));
  return w.value;
}

TEST_SUITE("docker_lex") {
  TEST_CASE("quotes and the escape character, as BuildKit's shell lexer reads them") {
    CHECK(value("plain") == "plain");
    CHECK(value("'$x \\n'") == "$x \\n"); // single quotes: everything literal
    CHECK(value("\\$x") == "$x");         // outside quotes the escape takes the next character
    CHECK(value("a\\ b") == "a b");
    CHECK(value("\"\\$x \\\" \\\\\"") == "$x \" \\"); // inside "...": only $, " and the escape
    CHECK(value("\"\\n \\a\"") == "\\n \\a");         // ... anything else keeps its backslash
    CHECK(value("\"a b\"'c d'e") == "a bc de");
    CHECK(value("cost$") == "cost$");       // a '$' with no name after it is itself
    CHECK(value("$1x") == "x");             // a positional parameter, never set in a build
    CHECK(value("a`$b", {}, '`') == "a$b"); // # escape=`
    CHECK(value("C:\\dir", {}, '`') == "C:\\dir");
    // One value: blanks between its quoted and unquoted parts are kept, as in an ENV value.
    CHECK(value("a \"b c\"  'd'") == "a b c  d");
  }

  TEST_CASE("the Dockerfile's own variables expand as Docker expands them, once") {
    DockerVars v{{"E", ""}, {"S", "v"}, {"Q", "\"q\" $B \\x"}};
    CHECK(value("$S/${S}", v) == "v/v");
    CHECK(value("${E:-d}|${E-d}|${E:+w}|${E+w}", v) == "d|||w");
    CHECK(value("${S:-d}|${S-d}|${S:+w}|${S+w}", v) == "v|v|w|w");
    CHECK(value("${E:-${S}x}", v) == "vx"); // a modifier's word is a word of its own
    // A substituted value is never lexed again: its quotes, '$' and backslash stay.
    LexedWord q = one("$Q", v);
    CHECK(q.value == "\"q\" $B \\x");
    CHECK(q.spec == "\"q\" $$B \\x");
    CHECK(one("\"$S\"", v).value == "v");
    CHECK(one("'$S'", v).value == "$S");
  }

  TEST_CASE("a name the Dockerfile never set is the base's: the spec form refers to it") {
    LexedWord p = one("/opt/x/bin:$PATH");
    CHECK(p.refers);
    CHECK(p.spec == "/opt/x/bin:${PATH}");
    CHECK(spec::EnvValue::parse(p.spec).references() == std::vector<std::string>{"PATH"});
    LexedWord m = one("${LD_LIBRARY_PATH:-/usr/lib}:'$lit'", {{"X", "1"}});
    CHECK(m.spec == "${LD_LIBRARY_PATH:-/usr/lib}:$$lit");
    LexedWord w = one("${A+$X}", {{"X", "1"}});
    CHECK(w.spec == "${A+1}");
    // A variable whose value refers to the base's carries the reference on.
    DockerRefs refs{{"P", "/x:${PATH}"}};
    LexedWord again = one("$P:/y", {}, refs);
    CHECK(again.refers);
    CHECK(again.spec == "/x:${PATH}:/y");
    CHECK(one("${P:-z}", {}, refs).unsupported.find("whose value comes from the base's") != std::string::npos);
  }

  TEST_CASE("what a spec cannot carry is said, not guessed") {
    CHECK(one("$R/x", {{"R", std::nullopt}}).unset_arg == "R"); // an ARG without a default
    CHECK(one("${A?must be set}").unsupported.find("${A?...}") != std::string::npos);
    CHECK(one("${A#prefix}").unsupported.find("${A#...}") != std::string::npos);
    CHECK(one("\"open").unsupported == "a double quote without its closing one");
    CHECK(one("'open").unsupported == "a single quote without its closing one");
    CHECK(one("${A:-x").unsupported == "a ${ without its closing }");
    CHECK(one("${").unsupported.find("is not a variable reference") != std::string::npos);
  }
}

} // namespace unit_docker_lex_test
