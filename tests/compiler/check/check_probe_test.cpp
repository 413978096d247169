// Probe resolution against the catalog: user binaries given by short library name, and glibc's
// stub libraries (libpthread & co.) whose functions live in libc since glibc 2.34.
#include <doctest/doctest.h>

#include <map>

#include "compiler/check/probe.h"
#include "support/fixture_catalog.h"

namespace b = bpfql;

namespace {

constexpr const char* kLibpthread = "/usr/lib/x86_64-linux-gnu/libpthread.so.0";
constexpr const char* kLibc = "/usr/lib/x86_64-linux-gnu/libc.so.6";

// The fixture catalog plus Debian 12's libpthread.so.0: a stub that defines no pthread function.
b::FixtureCatalog catalog_with_stub_libpthread() {
  b::FixtureCatalog catalog;
  catalog.add_binary({kLibpthread, {"pthread", "libpthread"}, {"__libpthread_version_placeholder"}, {}});
  return catalog;
}

b::Result<std::vector<b::ProbeRef>> resolve(const std::string& spec, const b::KernelCatalog& catalog) {
  return b::resolve_probe(b::Located{spec, b::SourceLoc{"q.yml", 2, 8}}, catalog);
}

}  // namespace

TEST_CASE("uprobe on a short library name resolves to the library's path") {
  auto probes = resolve("uprobe:c:malloc", b::FixtureCatalog{});
  REQUIRE_MESSAGE(probes, probes.error().message);
  REQUIRE(probes->size() == 1);
  CHECK(probes->front().binary == kLibc);
  CHECK(probes->front().symbol == "malloc");
  CHECK(probes->front().spec == std::string("uprobe:") + kLibc + ":malloc");
}

TEST_CASE("uprobe:pthread:pthread_mutex_lock falls back to libc when libpthread is a stub") {
  auto catalog = catalog_with_stub_libpthread();
  auto probes = resolve("uprobe:pthread:pthread_mutex_lock", catalog);
  REQUIRE_MESSAGE(probes, probes.error().message);
  REQUIRE(probes->size() == 1);
  CHECK(probes->front().binary == kLibc);
  CHECK(probes->front().spec == std::string("uprobe:") + kLibc + ":pthread_mutex_lock");
}

TEST_CASE("a uretprobe on libpthread also falls back to libc") {
  auto catalog = catalog_with_stub_libpthread();
  auto probes = resolve("uretprobe:libpthread:pthread_create", catalog);
  REQUIRE_MESSAGE(probes, probes.error().message);
  CHECK(probes->front().binary == kLibc);
  CHECK(probes->front().kind == b::ProbeKind::Uretprobe);
}

TEST_CASE("a symbol libpthread defines itself stays in libpthread") {
  auto catalog = catalog_with_stub_libpthread();
  auto probes = resolve("uprobe:pthread:__libpthread_version_placeholder", catalog);
  REQUIRE_MESSAGE(probes, probes.error().message);
  CHECK(probes->front().binary == kLibpthread);
}

TEST_CASE("error: a symbol in neither libpthread nor libc names both") {
  auto catalog = catalog_with_stub_libpthread();
  auto probes = resolve("uprobe:pthread:pthread_no_such_thing", catalog);
  REQUIRE_FALSE(probes);
  CHECK(probes.error().message ==
        std::string("symbol 'pthread_no_such_thing' is neither in '") + kLibpthread +
            "' nor in libc '" + kLibc +
            "' (glibc 2.34 and later keep that library's functions in libc)");
  CHECK(probes.error().loc.col == 8 + static_cast<int>(std::string("uprobe:pthread:").size()));
}

TEST_CASE("error: no fallback for a library that is not a glibc stub") {
  b::FixtureCatalog catalog;
  catalog.add_binary({"/usr/lib/x86_64-linux-gnu/libz.so.1", {"z"}, {"inflate"}, {}});
  auto probes = resolve("uprobe:z:malloc", catalog);
  REQUIRE_FALSE(probes);
  CHECK(probes.error().message == "symbol 'malloc' is not in '/usr/lib/x86_64-linux-gnu/libz.so.1'");
}

TEST_CASE("error: a misspelt symbol suggests the binary's nearest function") {
  auto probes = resolve("uprobe:c:mallco", b::FixtureCatalog{});
  REQUIRE_FALSE(probes);
  CHECK(probes.error().message ==
        std::string("symbol 'mallco' is not in '") + kLibc + "'; did you mean 'malloc'?");
  CHECK(probes.error().loc.col == 8 + static_cast<int>(std::string("uprobe:c:").size()));
}

TEST_CASE("error: a misspelt symbol on a glibc stub suggests libc's nearest function") {
  auto catalog = catalog_with_stub_libpthread();
  auto probes = resolve("uprobe:pthread:pthread_mutex_lokc", catalog);
  REQUIRE_FALSE(probes);
  CHECK(probes.error().message.ends_with("; did you mean 'pthread_mutex_lock'?"));
}

TEST_CASE("error: an unknown library is named before anything is attached") {
  auto probes = resolve("uprobe:nosuchlib:foo", b::FixtureCatalog{});
  REQUIRE_FALSE(probes);
  CHECK(probes.error().message.find("cannot find binary or library 'nosuchlib'") == 0);
}

TEST_CASE("$params in a probe spec are replaced by their values") {
  std::map<std::string, b::ParamValue> params;
  params["python"] = b::ParamValue{b::ParamType::String, "/usr/bin/python3.11", 0};
  params["hz"] = b::ParamValue{b::ParamType::Int, "", 49};
  auto usdt = b::expand_probe_params({"usdt:$python:python:function__entry", {"q.yml", 3, 8}}, params);
  REQUIRE_MESSAGE(usdt, usdt.error().message);
  CHECK(usdt->text == "usdt:/usr/bin/python3.11:python:function__entry");
  auto profile = b::expand_probe_params({"profile:hz:$hz", {"q.yml", 3, 8}}, params);
  REQUIRE_MESSAGE(profile, profile.error().message);
  CHECK(profile->text == "profile:hz:49");

  auto probes = b::resolve_probes({{"usdt:$python:python:function__entry", {"q.yml", 3, 8}}},
                                  b::FixtureCatalog{}, &params);
  REQUIRE_MESSAGE(probes, probes.error().message);
  CHECK(probes->front().binary == "/usr/bin/python3.11");
}

TEST_CASE("error: a wrong part after a $param points at what was written, not past the line") {
  // The caret of an error found in the expanded spec goes back through the substitution: a
  // longer value must not move it past the end of the written line.
  std::map<std::string, b::ParamValue> params;
  params["python"] = b::ParamValue{b::ParamType::String, "/usr/bin/python3.11", 0};
  auto probes = b::resolve_probes({{"usdt:$python:python:nosuch", {"q.yml", 3, 8}}},
                                  b::FixtureCatalog{}, &params);
  REQUIRE_FALSE(probes);
  CHECK(probes.error().message.find("no USDT probe 'python:nosuch'") != std::string::npos);
  CHECK(probes.error().loc.line == 3);
  CHECK(probes.error().loc.col == 8 + static_cast<int>(std::string("usdt:$python:").size()));
}

TEST_CASE("error: an unknown $param in a probe, with a suggestion and its column") {
  std::map<std::string, b::ParamValue> params;
  params["python"] = b::ParamValue{b::ParamType::String, "python3", 0};
  auto r = b::expand_probe_params({"usdt:$pyton:python:line", {"q.yml", 3, 8}}, params);
  REQUIRE_FALSE(r);
  CHECK(r.error().message ==
        "unknown parameter '$pyton' in probe 'usdt:$pyton:python:line'; did you mean 'python'?");
  CHECK(r.error().loc.col == 8 + 5);
}

TEST_CASE("error: a duration parameter cannot stand in a probe") {
  std::map<std::string, b::ParamValue> params;
  params["every"] = b::ParamValue{b::ParamType::Duration, "", 1000};
  auto r = b::expand_probe_params({"profile:hz:$every", {"q.yml", 3, 8}}, params);
  REQUIRE_FALSE(r);
  CHECK(r.error().message == "parameter 'every' is a duration; a probe takes string or int parameters");
}
