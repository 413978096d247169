// The one-liner forms end to end: -e (run, check, compile, and bare `bpfql -e`), queries from
// stdin, FIFOs and /dev/stdin, `convert` both ways, and -c's exit statuses.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include "tests/cli/cli_support.h"
#include "tests/support/process.h"

namespace bpfql::test {
namespace {

namespace fs = std::filesystem;

#define REQUIRE_TRACEFS_HERE()                                                            \
  do {                                                                                    \
    if (!tracefs_readable()) {                                                            \
      MESSAGE("skipped: tracefs is not readable here (run as root, or mount tracefs)");  \
      return;                                                                             \
    }                                                                                     \
  } while (0)

const std::string kCount = "SELECT comm, count() FROM t:syscalls:sys_enter_openat GROUP BY comm";

// `bpfql ARGS` with `input` on its stdin.
Completed with_stdin(const std::vector<std::string>& args, const std::string& input) {
  std::vector<std::string> argv{BPFQL_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  Process p = Process::spawn(argv);
  p.write_stdin(input);
  p.close_stdin();
  auto status = p.wait(std::chrono::seconds(60));
  REQUIRE(status.has_value());
  return Completed{*status, p.out(), p.err(), false};
}

const std::string kYaml = "probe: tracepoint:syscalls:sys_enter_getppid\nselect: count()\n";

}  // namespace

TEST_CASE("-e: check, compile and errors with the one-liner's line and caret") {
  REQUIRE_TRACEFS_HERE();
  Completed ok = bpfql({"check", "-e", kCount + "; SELECT count() FROM t:syscalls:sys_enter_read"});
  CHECK(ok.status.exited_with(0));
  CHECK(ok.out == "query-1: ok (1 probe, aggregates in the kernel)\n"
                  "query-2: ok (1 probe, aggregates in the kernel)\n");
  Completed c = bpfql({"compile", "-e", kCount});
  CHECK(c.status.exited_with(0));
  CHECK(c.out.find("bpf_get_current_comm") != std::string::npos);

  Completed bad = bpfql({"check", "-e", "SELECT count() FROM t:syscalls:sys_enter_read WHRE fd = 1"});
  CHECK(bad.status.exited_with(2));
  CHECK(bad.err ==
        "-e:1:47: error: unexpected 'WHRE' after the probe; did you mean 'WHERE'?\n"
        "  SELECT count() FROM t:syscalls:sys_enter_read WHRE fd = 1\n"
        "                                                ^\n");
  // The checker's errors point into the one-liner too.
  Completed field = bpfql({"check", "-e", "SELECT count() FROM t:syscalls:sys_enter_read WHERE args.fdd = 1"});
  CHECK(field.status.exited_with(2));
  CHECK(field.err.starts_with("-e:1:53: error: unknown field 'fdd' in tracepoint "
                              "syscalls:sys_enter_read; did you mean 'fd'?\n"));
  // $name with -p; a -p naming no $name is an error.
  CHECK(bpfql({"check", "-e", "SELECT count() FROM t:syscalls:sys_enter_read WHERE pid == $p",
               "-p", "p=1"}).status.exited_with(0));
  Completed extra = bpfql({"check", "-e", "SELECT count() FROM t:syscalls:sys_enter_read", "-p",
                           "x=1"});
  CHECK(extra.status.exited_with(2));
  CHECK(extra.err.find("'x'") != std::string::npos);
  Completed none = bpfql({"check"});
  CHECK(none.status.exited_with(2));
  CHECK(none.err == "bpfql: give a query: a file, a library name, '-' (stdin) or -e 'SELECT ...'\n");
}

TEST_CASE("-e: bare `bpfql -e` runs the one-liner") {
  REQUIRE_TRACEFS_HERE();
  if (::geteuid() != 0) {
    MESSAGE("skipped: run needs root");
    return;
  }
  Completed run = bpfql({"-e", "SELECT count() FROM t:syscalls:sys_enter_getppid FOR 300ms", "-f",
                         "json"});
  CHECK(run.status.exited_with(0));
  CHECK(run.out.find("\"query\":\"query\"") != std::string::npos);
}

TEST_CASE("stdin, FIFOs and /dev/stdin as query files") {
  REQUIRE_TRACEFS_HERE();
  Completed dash = with_stdin({"check", "-"}, kYaml);
  CHECK(dash.status.exited_with(0));
  CHECK(dash.out == "query: ok (1 probe, aggregates in the kernel)\n");
  Completed dev = with_stdin({"check", "/dev/stdin"}, kYaml);
  CHECK(dev.status.exited_with(0));
  CHECK(dev.out == "stdin: ok (1 probe, aggregates in the kernel)\n");
  // An error in stdin's text has its caret line (the text is not read twice).
  Completed bad = with_stdin({"check", "-"}, "probe: tracepoint:syscalls:sys_enter_getppid\nselect: cont()\n");
  CHECK(bad.status.exited_with(2));
  CHECK(bad.err.starts_with("-:2:9: error: "));
  CHECK(bad.err.find("  select: cont()\n") != std::string::npos);

  std::string fifo = fs::temp_directory_path() / ("bpfql-fifo-" + std::to_string(getpid()));
  fs::remove(fifo);
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  std::thread writer([&] { std::ofstream(fifo) << kYaml; });
  Completed from_fifo = bpfql({"check", fifo});
  writer.join();
  fs::remove(fifo);
  CHECK(from_fifo.status.exited_with(0));

  Completed device = bpfql({"check", "/dev/null"});
  CHECK(device.status.exited_with(2));
  CHECK(device.err == "/dev/null: error: is a character device, not a query file (a query is "
                      "read from a file, a FIFO, /dev/stdin or '-')\n");
}

TEST_CASE("convert: SQL to YAML and back") {
  Completed yaml = bpfql({"convert", "-e", kCount + " ORDER BY count() DESC LIMIT 5 EVERY 2s"});
  CHECK(yaml.status.exited_with(0));
  CHECK(yaml.out == "name: query\n"
                    "probe: t:syscalls:sys_enter_openat\n"
                    "select: comm, count()\n"
                    "group_by: comm\n"
                    "order_by: count() desc\n"
                    "limit: 5\n"
                    "interval: 2s\n");
  Completed sql = with_stdin({"convert", "-"}, yaml.out);
  CHECK(sql.status.exited_with(0));
  CHECK(sql.out == "SELECT comm, count() FROM t:syscalls:sys_enter_openat GROUP BY comm ORDER BY "
                   "count() DESC LIMIT 5 EVERY 2s WITH (name = 'query')\n");
  Completed lib = bpfql({"convert", "syscalls/top", "--to", "sql"});
  CHECK(lib.status.exited_with(0));
  CHECK(lib.out.starts_with("SELECT count() as syscalls FROM tracepoint:raw_syscalls:sys_enter"));
  Completed bad = bpfql({"convert", "-e", "SELECT count() FRM x:y"});
  CHECK(bad.status.exited_with(2));
  CHECK(bad.err.starts_with("-e:1:"));
}

TEST_CASE("convert: macros and lists from an include are carried, never dropped") {
  fs::path dir = fs::temp_directory_path() / fmt::format("bpfql-convert-{}", getpid());
  fs::create_directories(dir / "shared");
  {
    std::ofstream(dir / "shared" / "web.inc.yml") << "lists:\n  web: [nginx, php-fpm]\n  ports: [80, 443]\n"
                                                 "macros:\n  is_web: comm in web\n";
    std::ofstream(dir / "q.yml") << "include: shared/web\n"
                                    "name: q\n"
                                    "probe: tracepoint:syscalls:sys_enter_openat\n"
                                    "where: is_web\n"
                                    "select: count()\n";
  }
  Completed yaml = bpfql({"convert", (dir / "q.yml").string(), "--to", "yaml"});
  CHECK(yaml.status.exited_with(0));
  CHECK(yaml.out.starts_with("lists:\n  ports: [80, 443]\n  web: ['nginx', 'php-fpm']\n"
                             "macros:\n  is_web: comm in web\n"));
  CHECK(yaml.out.find("include:") == std::string::npos);
  // The printed file stands alone: it loads (and, where tracefs is readable, checks) by itself.
  fs::path standalone = dir / "standalone.yml";
  std::ofstream(standalone) << yaml.out;
  Completed again = bpfql({"convert", standalone.string(), "--to", "yaml"});
  CHECK(again.status.exited_with(0));
  CHECK(again.out == yaml.out);
  if (tracefs_readable()) CHECK(bpfql({"check", standalone.string()}).status.exited_with(0));
  // The SQL form cannot name them: refused at the definition, not printed as `where is_web`.
  Completed sql = bpfql({"convert", (dir / "q.yml").string(), "--to", "sql"});
  CHECK(sql.status.exited_with(2));
  CHECK(sql.out.empty());
  CHECK(sql.err.find("the SQL form has no macros or lists") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("-c: usage and start errors; the command's own status is only reported") {
  REQUIRE_TRACEFS_HERE();
  Completed both = bpfql({"run", "-e", kCount, "-c", "true", "--pid", "1"});
  CHECK(both.status.exited_with(2));
  CHECK(both.err == "bpfql: -c and --pid both say which process to trace; give one\n");
  if (::geteuid() != 0) {
    MESSAGE("skipped: run needs root");
    return;
  }
  Completed missing = bpfql({"run", "-e", kCount, "-c", "/nonexistent/cmd --flag"});
  CHECK(missing.status.exited_with(1));
  CHECK(missing.err == "bpfql: cannot run '/nonexistent/cmd': No such file or directory\n");
  Completed quote = bpfql({"run", "-e", kCount, "-c", "sh -c 'exit 3"});
  CHECK(quote.status.exited_with(1));
  CHECK(quote.err == "bpfql: -c has an unterminated ' quote\n");
  Completed failing = bpfql({"run", "-e", "SELECT count() FROM t:syscalls:sys_enter_getppid", "-c",
                             "sh -c 'exit 3'"});
  CHECK(failing.status.exited_with(0));
  CHECK(failing.err.find("exited with status 3") != std::string::npos);
}

}  // namespace bpfql::test
