// Query libraries from the command line (issue 18): kernel snapshots (`kernel export`,
// `check --kernel`, one kernel or a table of several), `check DIR` with the library rules and its
// exit status, include files and macros, `requires:`, and discovery (`list queries`, `describe`,
// did-you-mean for library names).
//
// Everything checked against the shipped snapshot (tests/fixtures/kernels/) runs without root
// or tracefs; the round trip against this kernel needs tracefs and skips without it.
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "runtime/kernel/kernel_snapshot.h"
#include "tests/cli/cli_support.h"

namespace bpfql::test {
namespace {

namespace fs = std::filesystem;

const std::string kLibrary = BPFQL_QUERY_LIBRARY_DIR;
const std::string kShipped = BPFQL_FIXTURE_DIR "/kernels/library-6.18.kernel";

// The library's query files (every .yml under it): what `bpfql check` counts.
int64_t library_files() {
  int64_t n = 0;
  for (const auto& entry : fs::recursive_directory_iterator(kLibrary))
    n += entry.is_regular_file() && entry.path().extension() == ".yml";
  return n;
}

// A fresh folder under /tmp, removed at the end of the test.
struct TempDir {
  fs::path path;
  TempDir() {
    char name[] = "/tmp/bpfql-library-test-XXXXXX";
    REQUIRE(mkdtemp(name));
    path = name;
  }
  ~TempDir() { fs::remove_all(path); }
  std::string write(const std::string& relative, const std::string& text) const {
    fs::path file = path / relative;
    fs::create_directories(file.parent_path());
    std::ofstream(file) << text;
    return file.string();
  }
};

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST_CASE("kernel snapshot round trip: checking against an export of this kernel says what check says live") {
  if (!tracefs_readable()) {
    MESSAGE("skipped: tracefs is not readable here (run as root, or mount tracefs)");
    return;
  }
  TempDir dir;
  std::string whole = (dir.path / "host.kernel").string();
  std::string partial = (dir.path / "for-library.kernel").string();
  Completed exported = bpfql({"kernel", "export", "-o", whole});
  INFO("export stderr:\n" << exported.err);
  REQUIRE(exported.status.exited_with(0));
  Completed exported_for = bpfql({"kernel", "export", "--for", kLibrary, "-o", partial});
  INFO("export --for stderr:\n" << exported_for.err);
  REQUIRE(exported_for.status.exited_with(0));
  CHECK(fs::file_size(partial) * 10 < fs::file_size(whole));

  // A library folder, and files given one by one (with one that fails: a misspelt field).
  std::string bad = dir.write("bad.yml", "probe: tracepoint:sched:sched_switch\n"
                                         "select: count()\ngroup_by: args.prev_comn\n");
  std::vector<std::vector<std::string>> inputs = {
      {kLibrary}, {kLibrary + "/sched/switches.yml", bad, kLibrary + "/syscalls/top.yml"}};
  for (const auto& files : inputs) {
    std::vector<std::string> live = {"check"};
    live.insert(live.end(), files.begin(), files.end());
    Completed expected = bpfql(live);
    for (const std::string& snapshot : {whole, partial}) {
      if (snapshot == partial && files.size() > 1) continue;  // --for exported the library only
      std::vector<std::string> offline = {"check", "--kernel", snapshot};
      offline.insert(offline.end(), files.begin(), files.end());
      Completed got = bpfql(offline);
      CAPTURE(snapshot);
      CAPTURE(files.front());
      CHECK(got.status.code == expected.status.code);
      CHECK(got.out == expected.out);
      CHECK(got.err == expected.err);
    }
  }
}

TEST_CASE("the shipped snapshot of this machine's kernel: the whole library checks against it, no root needed") {
  Completed run = bpfql({"check", "--kernel", kShipped, kLibrary});
  INFO("stdout:\n" << run.out << "\nstderr:\n" << run.err);
  CHECK(run.status.exited_with(0));
  CHECK(has(run.out, "top: ok (1 probe, aggregates in the kernel)"));
  CHECK(has(run.out, "execs: ok (1 probe, streams events)"));
  CHECK(has(run.err, "library problem"));
  CHECK(fs::file_size(kShipped) < 200'000);
}

// The fixture snapshot with block:block_rq_issue's `bytes` renamed `nr_bytes`, as another kernel.
std::string renamed_field_snapshot(const TempDir& dir) {
  auto snapshot = decode_snapshot(slurp(kShipped), kShipped);
  REQUIRE(snapshot);
  std::string& format = snapshot->tracepoint_formats.at("block:block_rq_issue");
  size_t at = format.find("unsigned int bytes;");
  REQUIRE(at != std::string::npos);
  format.replace(at, 19, "unsigned int nr_bytes;");
  snapshot->release = "6.19.0-renamed";
  std::string path = (dir.path / "renamed.kernel").string();
  std::ofstream(path) << encode_snapshot(*snapshot);
  return path;
}

TEST_CASE("a library on two kernels: a renamed field passes on one, fails on the other with the reason") {
  TempDir dir;
  std::string renamed = renamed_field_snapshot(dir);
  Completed run = bpfql({"check", "--kernel", kShipped, "--kernel", renamed, kLibrary});
  INFO("stdout:\n" << run.out << "\nstderr:\n" << run.err);
  CHECK(run.status.exited_with(2));
  CHECK(has(run.out, "query                   library-6.18.kernel  renamed.kernel\n"
                     "                        6.18.44-"));
  CHECK(has(run.out, "\nblock/io-by-process     ok                   FAIL\n"));
  CHECK(has(run.out, "\nblock/io-size           ok                   FAIL\n"));
  CHECK(has(run.out, "\nblock/bitesize          ok                   FAIL\n"));
  CHECK(has(run.out, "\nsyscalls/top            ok                   ok\n"));
  CHECK(has(run.out, "block/io-by-process on renamed.kernel (6.19.0-renamed):\n" + kLibrary +
                         "/block/io-by-process.yml:4:35: error: unknown field 'bytes' in tracepoint "
                         "block:block_rq_issue\n"
                         "  select: [count() as requests, sum(args.bytes) as bytes]\n"
                         "                                    ^\n"));
  const int64_t files = library_files();
  CHECK(has(run.err, std::to_string(files) + " files: " + std::to_string(files - 3) +
                         " ok on every kernel, 3 failed; 0 library problems"));

  Completed json = bpfql({"check", "-f", "json", "--kernel", kShipped, "--kernel", renamed, kLibrary});
  CHECK(json.status.exited_with(2));
  auto doc = nlohmann::json::parse(json.out);
  CHECK(doc["ok"] == false);
  CHECK(doc["kernels"][1]["release"] == "6.19.0-renamed");
  bool found = false;
  for (const auto& file : doc["files"]) {
    if (file["name"] == "block/io-size" || file["name"] == "block/bitesize") continue;  // the same field
    if (file["name"] != "block/io-by-process") {
      CHECK(file["results"][1]["ok"] == true);
      continue;
    }
    found = true;
    CHECK(file["results"][0]["ok"] == true);
    CHECK(file["results"][1]["ok"] == false);
    CHECK(file["results"][1]["errors"][0]["line"] == 4);
    CHECK(file["results"][1]["errors"][0]["message"] ==
          "unknown field 'bytes' in tracepoint block:block_rq_issue");
  }
  CHECK(found);
}

TEST_CASE("check DIR: the library rules and the exit status CI relies on") {
  TempDir dir;
  dir.write("lib/net/good.yml", R"(name: good
description: Context switches by process
params:
  min: {type: int, default: 0, doc: "ignore processes with a pid below this"}
probe: tracepoint:sched:sched_switch
where: pid >= $min
select: count()
group_by: comm
)");
  std::string lib = (dir.path / "lib").string();
  Completed ok = bpfql({"check", "--kernel", kShipped, lib});
  INFO("stdout:\n" << ok.out << "\nstderr:\n" << ok.err);
  CHECK(ok.status.exited_with(0));
  CHECK(has(ok.err, "1 file: 1 ok, 0 failed; 0 library problems"));

  std::string bare = dir.write("lib/bare.yml", R"(params:
  who: {type: string}
queries:
  - name: good
    probe: tracepoint:sched:sched_switch
    select: count()
)");
  Completed bad = bpfql({"check", "--kernel", kShipped, lib});
  INFO("stdout:\n" << bad.out << "\nstderr:\n" << bad.err);
  CHECK(bad.status.exited_with(2));
  CHECK(has(bad.err, bare + ":2:3: error: parameter 'who' has no default: a library query must run without -p"));
  CHECK(has(bad.err, bare + ":2:3: error: parameter 'who' has no doc"));
  CHECK(has(bad.err, bare + ":4:5: error: query 'good' has no description"));
  CHECK(has(bad.err, "query name 'good' is also used at"));
  // The query itself does not check without a value for 'who'.
  CHECK(has(bad.err, bare + ":2:3: error: parameter 'who' has no value; give one with -p who=VALUE"));
  CHECK(has(bad.err, "2 files: 1 ok, 1 failed; 4 library problems"));

  Completed json = bpfql({"check", "-f", "json", "--kernel", kShipped, lib});
  CHECK(json.status.exited_with(2));
  auto doc = nlohmann::json::parse(json.out);
  CHECK(doc["ok"] == false);
  CHECK(doc["library_problems"].size() == 4);
  CHECK(doc["files"].size() == 2);
  CHECK(doc["files"][0]["name"] == "bare");
  CHECK(doc["files"][1]["name"] == "net/good");
  CHECK(doc["files"][1]["results"][0]["ok"] == true);

  // Files given one by one are not a library: the rules do not apply.
  Completed files = bpfql({"check", "--kernel", kShipped, lib + "/net/good.yml"});
  CHECK(files.status.exited_with(0));
  CHECK(files.out == "good: ok (1 probe, aggregates in the kernel)\n");

  Completed missing = bpfql({"check", "--kernel", (dir.path / "nope.kernel").string(), lib});
  CHECK(missing.status.exited_with(2));
  CHECK(has(missing.err, "cannot read kernel snapshot"));
  Completed not_one = bpfql({"check", "--kernel", bare, lib});
  CHECK(not_one.status.exited_with(2));
  CHECK(has(not_one.err, "not a bpfql kernel snapshot (not JSON)"));
}

TEST_CASE("include and macros: shared pieces, and errors that point at the definition and the use") {
  TempDir dir;
  std::string shared = dir.write("lib/shared/web.inc.yml", R"(# Which processes serve the web here.
macros:
  is_web: 'comm in ("nginx", "php-fpm")'
  bad: comn == "x"
params:
  min_pid: {type: int, default: 1, doc: "ignore pids below this"}
)");
  std::string good = dir.write("lib/web/switches.yml", R"(include: shared/web
name: web-switches
description: Context switches of the web servers
probe: tracepoint:sched:sched_switch
where: [is_web, pid >= $min_pid]
select: count()
group_by: comm
)");
  SpawnOptions env{.env = {{"BPFQL_PATH", (dir.path / "lib").string()}}};
  Completed ok = bpfql({"check", "--kernel", kShipped, (dir.path / "lib").string()}, env);
  INFO("stdout:\n" << ok.out << "\nstderr:\n" << ok.err);
  CHECK(ok.status.exited_with(0));
  CHECK(ok.out == "web-switches: ok (1 probe, aggregates in the kernel)\n");  // not the .inc.yml

  Completed listed = bpfql({"list", "queries"}, env);
  CHECK(has(listed.out, "web/switches"));
  CHECK(has(listed.out, "-p min_pid=int (default 1)  ignore pids below this"));
  CHECK_FALSE(has(listed.out, "shared/web"));

  std::string uses_bad = dir.write("lib/web/bad.yml", R"(include: shared/web
description: x
probe: tracepoint:sched:sched_switch
where: bad
select: count()
)");
  Completed bad = bpfql({"check", "--kernel", kShipped, uses_bad}, env);
  INFO("stderr:\n" << bad.err);
  CHECK(bad.status.exited_with(2));
  // At the use, with its line and a caret, then a note at the definition with its own.
  CHECK(has(bad.err, uses_bad + ":4:8: error: unknown name 'comn' for probe tracepoint:sched:sched_switch; "
                                "did you mean 'comm'?\n"
                                "  where: bad\n"
                                "         ^\n" +
                         shared + ":4:8: note: in the definition of macro 'bad'\n"
                                  "    bad: comn == \"x\"\n"
                                  "         ^\n"));
  Completed bad_json = bpfql({"check", "-f", "json", "--kernel", kShipped, uses_bad}, env);
  CHECK(bad_json.status.exited_with(2));
  auto bad_doc = nlohmann::json::parse(bad_json.out);
  const auto& error = bad_doc["files"][0]["results"][0]["errors"][0];
  CHECK(error["file"] == uses_bad);
  CHECK(error["line"] == 4);
  CHECK(error["notes"][0]["file"] == shared);
  CHECK(error["notes"][0]["line"] == 4);
  CHECK(error["notes"][0]["col"] == 8);
  CHECK(error["notes"][0]["message"] == "in the definition of macro 'bad'");

  std::string typo = dir.write("lib/web/typo.yml", "include: shared/web\nprobe: tracepoint:sched:sched_switch\n"
                                                   "where: is_wbe\nselect: count()\n");
  Completed misspelt = bpfql({"check", "--kernel", kShipped, typo}, env);
  CHECK(misspelt.status.exited_with(2));
  CHECK(has(misspelt.err, typo + ":3:8: error: unknown name 'is_wbe'"));
  CHECK(has(misspelt.err, "did you mean 'is_web'?"));

  std::string missing = dir.write("lib/web/missing.yml", "include: [shared/web, shared/db]\n"
                                                         "probe: tracepoint:sched:sched_switch\n"
                                                         "select: count()\n");
  Completed no_include = bpfql({"check", "--kernel", kShipped, missing}, env);
  CHECK(no_include.status.exited_with(2));
  CHECK(has(no_include.err, missing + ":1:23: error: include file 'shared/db' not found"));

  std::string twice = dir.write("lib/web/twice.yml", R"(include: shared/web
macros:
  is_web: comm == "apache2"
probe: tracepoint:sched:sched_switch
select: count()
)");
  Completed redefined = bpfql({"check", "--kernel", kShipped, twice}, env);
  CHECK(redefined.status.exited_with(2));
  CHECK(has(redefined.err, twice + ":3:3: error: macro 'is_web' is also defined at " + shared + ":3:3"));
}

TEST_CASE("lists: defined once in an include file, used with `in`; errors at both places") {
  TempDir dir;
  std::string shared = dir.write("lib/shared/hosts.inc.yml", R"(lists:
  web_servers: [nginx, php-fpm]
  ports: [80, 443]
macros:
  is_web: comm in web_servers
)");
  std::string good = dir.write("lib/web/switches.yml", R"(include: shared/hosts
description: Context switches of the web servers
probe: tracepoint:sched:sched_switch
where: [is_web, prev_comm not in web_servers]
select: count()
group_by: comm
)");
  SpawnOptions env{.env = {{"BPFQL_PATH", (dir.path / "lib").string()}}};
  Completed ok = bpfql({"check", "--kernel", kShipped, (dir.path / "lib").string()}, env);
  INFO("stdout:\n" << ok.out << "\nstderr:\n" << ok.err);
  CHECK(ok.status.exited_with(0));
  CHECK(ok.out == "switches: ok (1 probe, aggregates in the kernel)\n");
  if (tracefs_readable()) {  // and generates the same program as the values in parentheses
    std::string written = dir.write("other/switches.yml", R"(description: Context switches of the web servers
probe: tracepoint:sched:sched_switch
where: [comm in ("nginx", "php-fpm"), prev_comm not in ("nginx", "php-fpm")]
select: count()
group_by: comm
)");
    Completed from_lists = bpfql({"compile", good}, env);
    Completed from_values = bpfql({"compile", written}, env);
    CHECK(from_lists.status.exited_with(0));
    // The same C but for its comments (the file, and the filters as written).
    std::regex comment(R"(/\*[^*]*\*/)");
    CHECK(std::regex_replace(from_lists.out, comment, "") ==
          std::regex_replace(from_values.out, comment, ""));
    CHECK(has(from_lists.out, "(key.comm[5] ^ 'p') | (key.comm[6] ^ 'm')"));  // "php-fpm"
  }

  std::string wrong = dir.write("lib/web/wrong.yml", "include: shared/hosts\ndescription: x\n"
                                                     "probe: tracepoint:sched:sched_switch\n"
                                                     "where: comm in ports\nselect: count()\n");
  Completed typed = bpfql({"check", "--kernel", kShipped, wrong}, env);
  INFO("stderr:\n" << typed.err);
  CHECK(typed.status.exited_with(2));
  CHECK(has(typed.err, wrong + ":4:16: error: list 'ports' holds numbers, but 'comm' is a string\n"
                               "  where: comm in ports\n"
                               "                 ^\n" +
                           shared + ":3:3: note: list 'ports' is defined here\n"
                                    "    ports: [80, 443]\n"
                                    "    ^\n"));

  std::string typo = dir.write("lib/web/typo.yml", "include: shared/hosts\ndescription: x\n"
                                                   "probe: tracepoint:sched:sched_switch\n"
                                                   "where: comm in web_server\nselect: count()\n");
  Completed misspelt = bpfql({"check", "--kernel", kShipped, typo}, env);
  CHECK(misspelt.status.exited_with(2));
  CHECK(has(misspelt.err, typo + ":4:16: error: unknown list 'web_server'; did you mean 'web_servers'?"));

  std::string mixed = dir.write("lib/shared/mixed.inc.yml", "lists:\n  odd: [nginx, 80]\n");
  std::string uses_mixed = dir.write("lib/web/mixed.yml", "include: shared/mixed\ndescription: x\n"
                                                          "probe: tracepoint:sched:sched_switch\n"
                                                          "select: count()\n");
  Completed mixed_run = bpfql({"check", "--kernel", kShipped, uses_mixed}, env);
  CHECK(mixed_run.status.exited_with(2));
  CHECK(has(mixed_run.err, mixed + ":2:16: error: list 'odd' mixes strings and numbers"));
}

// The example of deploy/library-package built into a .deb with CMake and CPack, as a team would
// build its own, inspected with dpkg-deb, unpacked into a temporary root, and found there by
// bpfql: through BPFQL_PATH, and (as root, in a private mount namespace with the root's /etc laid
// over the real one) at /etc/bpfql/queries itself, with no variable at all.
TEST_CASE("a team's library as a Debian package: built, inspected, installed, listed and checked") {
  for (const char* tool : {"/usr/bin/cmake", "/usr/bin/cpack", "/usr/bin/dpkg-deb"})
    if (!fs::exists(tool)) {
      MESSAGE("skipped: " << tool << " is not installed");
      return;
    }
  TempDir dir;
  std::string source = std::string(BPFQL_CLI_TEST_DIR) + "/../../deploy/library-package";
  std::string build = (dir.path / "build").string();
  Completed configured = run_to_completion({"/usr/bin/cmake", "-S", source, "-B", build,
                                            "-DBPFQL_LIBRARY_PACKAGE=ops-queries",
                                            "-DBPFQL_LIBRARY_VERSION=2.1.0"},
                                           std::chrono::seconds(60));
  INFO("cmake:\n" << configured.out << configured.err);
  REQUIRE(configured.status.exited_with(0));
  Completed packed = run_to_completion({"/usr/bin/cpack", "-G", "DEB", "--config",
                                        build + "/CPackConfig.cmake", "-B", build},
                                       std::chrono::seconds(60));
  INFO("cpack:\n" << packed.out << packed.err);
  REQUIRE(packed.status.exited_with(0));
  std::string deb = build + "/ops-queries_2.1.0_all.deb";
  REQUIRE(fs::exists(deb));

  Completed listing = run_to_completion({"/usr/bin/dpkg-deb", "-c", deb}, std::chrono::seconds(30));
  REQUIRE(listing.status.exited_with(0));
  CHECK(has(listing.out, " ./etc/bpfql/queries/web/opens.yml\n"));
  CHECK(has(listing.out, " ./etc/bpfql/queries/web/switches.yml\n"));
  CHECK(has(listing.out, " ./etc/bpfql/queries/shared/web.inc.yml\n"));
  CHECK(has(listing.out, "-rw-r--r-- root/root"));
  Completed info = run_to_completion({"/usr/bin/dpkg-deb", "-I", deb}, std::chrono::seconds(30));
  CHECK(has(info.out, " Package: ops-queries\n"));
  CHECK(has(info.out, " Version: 2.1.0\n"));
  CHECK(has(info.out, " Architecture: all\n"));
  CHECK(has(info.out, " Depends: bpfql\n"));
  Completed conffiles = run_to_completion({"/usr/bin/dpkg-deb", "-I", deb, "conffiles"},
                                          std::chrono::seconds(30));
  CHECK(has(conffiles.out, "/etc/bpfql/queries/web/opens.yml\n"));

  std::string root = (dir.path / "root").string();
  Completed unpacked = run_to_completion({"/usr/bin/dpkg-deb", "-x", deb, root}, std::chrono::seconds(30));
  REQUIRE(unpacked.status.exited_with(0));
  std::string installed = root + "/etc/bpfql/queries";
  SpawnOptions env{.env = {{"BPFQL_PATH", installed}}};
  Completed listed = bpfql({"list", "queries"}, env);
  CHECK(listed.status.exited_with(0));
  CHECK(has(listed.out, "web/opens"));
  CHECK(has(listed.out, "-p first_customer_uid=int (default 1000)  the first uid of a hosting customer"));
  CHECK_FALSE(has(listed.out, "shared/web"));
  Completed checked = bpfql({"check", "--kernel", kShipped, installed});
  INFO("check:\n" << checked.out << checked.err);
  CHECK(checked.status.exited_with(0));
  CHECK(has(checked.out, "web-opens: ok (1 probe, aggregates in the kernel)"));
  CHECK(has(checked.err, "2 files: 2 ok, 0 failed; 0 library problems"));
  Completed by_name = bpfql({"check", "--kernel", kShipped, "web/opens"}, env);
  CHECK(by_name.status.exited_with(0));

  // /etc/bpfql/queries itself, as dpkg -i would leave it: the unpacked root's /etc over the
  // real one, seen by this bpfql only.
  if (geteuid() != 0 || !fs::exists("/usr/bin/unshare")) {
    MESSAGE("skipped the /etc/bpfql/queries part: needs root and unshare");
    return;
  }
  std::string script = "mount -t overlay overlay -o lowerdir=" + root + "/etc:/etc /etc && exec " +
                       std::string(BPFQL_BINARY) + " list queries";
  Completed system = run_to_completion({"/usr/bin/unshare", "-m", "--propagation", "private",
                                        "/bin/sh", "-c", script},
                                       std::chrono::seconds(60));
  INFO("in the namespace:\n" << system.out << system.err);
  CHECK(system.status.exited_with(0));
  CHECK(has(system.out, "web/opens"));
  CHECK(has(system.out, "syscalls/top"));  // and bpfql's own library after it
  CHECK_FALSE(fs::exists("/etc/bpfql/queries/web/opens.yml"));  // nothing left behind
}

TEST_CASE("requires: a query that needs what a kernel lacks fails there with the requirement") {
  TempDir dir;
  std::string q = dir.write("q.yml", R"(description: kprobe-only
requires: {kernel: "5.8", probes: [kprobe]}
probe: tracepoint:sched:sched_switch
select: count()
)");
  Completed run = bpfql({"check", "--kernel", kShipped, q});
  CHECK(run.status.exited_with(2));
  CHECK(has(run.err, q + ":2:36: error: requires kprobe probes: kprobes are not available"));
}

TEST_CASE("discovery: describe, list queries with parameters, did-you-mean for library names") {
  SpawnOptions env{.env = {{"BPFQL_PATH", kLibrary}}};
  Completed described = bpfql({"describe", "process/cpu-profile"}, env);
  INFO("stdout:\n" << described.out << "\nstderr:\n" << described.err);
  CHECK(described.status.exited_with(0));
  CHECK(has(described.out, "parameters:\n  -p hz=int (default 49)  samples per second on each CPU\n"));
  CHECK(has(described.out, "  probes:   profile:hz:$hz\n"));
  CHECK(has(described.out, "  outputs:  comm, kstack, ustack, count() as samples\n"));
  CHECK(has(described.out, "  order:    samples, top 50\n"));
  CHECK(has(described.out, "  interval: 5s\n"));
  CHECK(has(described.out, "on this host"));
  CHECK(has(described.out, "text:\n"));

  Completed listed = bpfql({"list", "queries"}, env);
  CHECK(listed.status.exited_with(0));
  CHECK(has(listed.out, "    -p hz=int (default 49)  samples per second on each CPU\n"));

  for (std::vector<std::string> args : {std::vector<std::string>{"top"},
                                        {"describe", "top"},
                                        {"check", "top"},
                                        {"describe", "syscalls/topp"}}) {
    CAPTURE(args.front());
    Completed run = bpfql(args, env);
    CHECK(run.status.exited_with(2));
    CHECK(has(run.err, "did you mean 'syscalls/top'?"));
  }
}

}  // namespace
}  // namespace bpfql::test
