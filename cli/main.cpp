// bpfql: declarative trace queries compiled to BPF. main() parses the command line (CLI11) and
// hands off to the commands; exceptions stop here.
#include <cstring>
#include <iostream>
#include <limits>
#include <optional>
#include <set>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "compiler/syntax/query.h"

namespace {

constexpr const char* kExamples = R"(Examples:
  bpfql syscalls/top                       top syscalls by process (from the query library)
  bpfql run q.yml --interval 1s -f json    run a query file, print JSON every second
  bpfql run opens.yml -p target=nginx      set a query parameter
  bpfql check q.yml                        type-check without loading anything
  bpfql compile q.yml                      print the generated BPF C
  bpfql serve q.yml --listen :9435         export the queries as Prometheus metrics (/metrics)
  bpfql list queries                       the query library with descriptions
  bpfql list tracepoints 'syscalls:*open*' kernel tracepoints with their fields

A query file:
  name: read-bytes
  probe: tracepoint:syscalls:sys_exit_read
  where: retval > 0
  select: sum(retval) as bytes
  group_by: comm
  interval: 5s

Environment: BPFQL_CACHE_DIR (compiled programs; default /var/cache/bpfql, root-owned only),
BPFQL_COMPILER=libbcc (compile with libbcc instead of bpfql's one clang pass),
BPFQL_LIBEXEC_DIR (where bpfql-compile-plain and bpfql-compile-libbcc are; default: next to
bpfql, or its installed libexec/bpfql).

Exit status: 0 success, 1 a runtime failure (load, verify, attach), 2 a usage or query error.)";

struct Args {
  std::vector<std::string> files;
  std::vector<std::string> params;
  std::string interval;
  std::string stop_after;
  std::optional<long long> pid;  // --pid as given: wide enough that -1 and 0 reach our check
  std::string format = "table";
  std::string output;
  bool verbose = false;
  bool no_cache = false;
  bool plain = false;  // compile: the plain C instead of BCC's
  std::string list_kind;  // "" = queries; a word that is not a kind is a pattern (command_list)
  std::string list_pattern;
  std::string listen = "127.0.0.1:9435";
};

// Turns -p/--interval/--stop-after/--pid into pipeline input; false (after a message) on error.
bool to_input(const Args& args, bpfql::PipelineInput& input) {
  input.files_or_names = args.files;
  for (const auto& p : args.params) {
    auto eq = p.find('=');
    if (eq == std::string::npos || eq == 0) {
      std::cerr << "bpfql: -p takes NAME=VALUE, not '" << p << "'\n";
      return false;
    }
    input.params[p.substr(0, eq)] = p.substr(eq + 1);
  }
  for (auto [text, target, flag] :
       {std::tuple{&args.interval, &input.options.interval_ns, "--interval"},
        std::tuple{&args.stop_after, &input.options.stop_after_ns, "--stop-after"}}) {
    if (text->empty()) continue;
    auto ns = bpfql::parse_duration(*text);
    if (!ns || *ns == 0) {
      std::cerr << "bpfql: " << flag << " takes a duration such as 500ms, 5s or 1m, not '" << *text
                << "'\n";
      return false;
    }
    *target = *ns;
  }
  if (args.pid) {
    // 0 and negative numbers are process groups to kill(2), never one process to trace.
    if (*args.pid <= 0 || *args.pid > std::numeric_limits<int>::max()) {
      std::cerr << "bpfql: --pid takes a process id (a positive number), not " << *args.pid << "\n";
      return false;
    }
    input.options.pid = static_cast<int>(*args.pid);
  }
  return true;
}

bool to_format(const std::string& name, bpfql::OutputFormat& format) {
  static const std::map<std::string, bpfql::OutputFormat> formats = {
      {"table", bpfql::OutputFormat::Table},
      {"json", bpfql::OutputFormat::Json},
      {"csv", bpfql::OutputFormat::Csv},
      {"folded", bpfql::OutputFormat::Folded},
  };
  auto it = formats.find(name);
  if (it == formats.end()) return false;
  format = it->second;
  return true;
}

void add_query_options(CLI::App* cmd, Args& args) {
  // One NAME=VALUE per -p: a vector option would otherwise take the query file after it too.
  cmd->add_option("-p,--param", args.params, "Set a query parameter: -p NAME=VALUE")
      ->allow_extra_args(false);
  cmd->add_option("--interval", args.interval, "Print every D (overrides the queries' interval)");
  cmd->add_option("--stop-after", args.stop_after, "Exit (and print) after D");
  cmd->add_option("--pid", args.pid, "Only this process (uprobes, USDT and the pid: key)");
}

// `bpfql [RUN OPTIONS] FILE...` means `bpfql run [RUN OPTIONS] FILE...`. The command names and
// which of the global and run's options take the next word as their value come from the
// parser's own definitions, so a new option needs no list kept here.
std::vector<std::string> with_default_command(const CLI::App& app, const CLI::App& run, int argc,
                                              char** argv) {
  std::set<std::string> commands = {"help"};
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    commands.insert(sub->get_name());
  std::set<std::string> with_value;
  for (const CLI::App* options_of : {&app, &run})
    for (const CLI::Option* option : options_of->get_options()) {
      // A flag expects no items (its type size is 1 all the same: the value it sets).
      if (option->get_items_expected_max() == 0) continue;
      for (const auto& name : option->get_snames()) with_value.insert("-" + name);
      for (const auto& name : option->get_lnames()) with_value.insert("--" + name);
    }
  std::vector<std::string> words(argv + 1, argv + argc);
  for (size_t i = 0; i < words.size(); ++i) {
    const std::string& w = words[i];
    if (w.empty() || commands.count(w)) break;
    if (w[0] == '-') {
      if (w == "-h" || w == "--help" || w == "--version") break;
      if (with_value.count(w)) ++i;
      continue;
    }
    words.insert(words.begin(), "run");  // the first word that is neither option nor command
    break;
  }
  return words;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bpfql: declarative trace queries, compiled to BPF and aggregated in the kernel",
               "bpfql"};
  app.footer(kExamples);
  app.set_version_flag("--version", std::string("bpfql ") + BPFQL_VERSION);
  app.require_subcommand(1);
  Args args;
  app.add_flag("-v,--verbose", args.verbose, "Show libbcc's compiler output and the verifier log");

  auto* run = app.add_subcommand("run", "Compile, attach and print until Ctrl-C or stop_after");
  run->add_option("files", args.files, "Query files or library names (syscalls/top)")->required();
  add_query_options(run, args);
  run->add_option("-f,--format", args.format, "Output: table, json, csv or folded")
      ->check(CLI::IsMember({"table", "json", "csv", "folded"}));
  run->add_option("-o,--output", args.output, "Write the output to FILE");
  run->add_flag("-v,--verbose", args.verbose, "Show libbcc's compiler output and the verifier log");
  run->add_flag("--no-cache", args.no_cache,
                "Compile the program (bpfql's clang pass; libbcc for USDT) even if the program "
                "cache (/var/cache/bpfql) has it, and do not store it there");

  auto* serve = app.add_subcommand(
      "serve", "Run continuously as a Prometheus exporter: GET /metrics on --listen");
  serve->add_option("files", args.files, "Query files or library names (aggregating queries)")
      ->required();
  add_query_options(serve, args);
  serve->get_option("--interval")->description("Refresh the metrics every D (default: the "
                                               "queries' interval, else 1s)");
  serve->get_option("--stop-after")->description("Exit after D (default: run until SIGINT/SIGTERM)");
  serve->add_option("--listen", args.listen, "HOST:PORT to serve /metrics on")
      ->capture_default_str();
  serve->add_flag("-v,--verbose", args.verbose, "Show libbcc's compiler output and the verifier log");
  serve->footer(R"(Metrics: count() and sum() are counters, min/max/avg gauges, stats(E) gives _count and
_sum counters and an _avg gauge, hist/lhist/percentile are histograms with _sum and _count
(le = the bucket's highest integer). Names: bpfql_<query>_<alias or item text>; group_by
keys are labels. Maps are never cleared while serving, so counters only grow. Streaming
queries cannot be served.

Example:
  # reads.yml
  name: read-bytes
  probe: tracepoint:syscalls:sys_exit_read
  where: retval > 0
  select: [count() as reads, sum(retval) as bytes, hist(retval) as size]
  group_by: comm

  bpfql serve reads.yml --listen 127.0.0.1:9435 --interval 5s
  curl -s 127.0.0.1:9435/metrics | grep bpfql_read_bytes_bytes)");

  auto* check = app.add_subcommand("check", "Parse and type-check; loads nothing");
  check->add_option("files", args.files, "Query files or library names")->required();
  add_query_options(check, args);
  check->add_flag("-v,--verbose", args.verbose,
                  "Also print notes, such as the fields `select: \"*\"` leaves out and why");

  auto* compile = app.add_subcommand("compile", "Print the generated BPF C");
  compile->add_option("files", args.files, "Query files or library names")->required();
  add_query_options(compile, args);
  compile->add_flag("--plain", args.plain,
                    "Print the plain C bpfql compiles itself in one clang pass (tracepoint and "
                    "perf-event programs) instead of the BCC C libbcc compiles");

  auto* list = app.add_subcommand("list", "List library queries, kernel tracepoints, or a binary's USDT probes");
  list->add_option("kind", args.list_kind,
                   "queries (default), tracepoints or probes; left out, the first word is the "
                   "pattern for queries");
  list->add_option("pattern", args.list_pattern, "A glob or substring; for probes, the binary");
  list->add_flag("-v,--verbose", args.verbose, "With tracepoints: show every tracepoint's fields");

  std::vector<std::string> words = with_default_command(app, *run, argc, argv);
  std::reverse(words.begin(), words.end());
  try {
    app.parse(words);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  }

  try {
    bpfql::PipelineInput input;
    if (run->parsed() || check->parsed() || compile->parsed() || serve->parsed())
      if (!to_input(args, input)) return 2;
    if (run->parsed()) {
      bpfql::RunOptions options;
      options.output_path = args.output;
      options.verbose = args.verbose;
      options.drop_privileges = true;
      options.use_cache = !args.no_cache;
      if (!to_format(args.format, options.format)) return 2;
      return bpfql::command_run(input, options);
    }
    if (serve->parsed()) {
      auto listen = bpfql::parse_listen(args.listen);
      if (!listen) {
        std::cerr << "bpfql: " << listen.error() << "\n";
        return 2;
      }
      bpfql::RunOptions options;
      options.verbose = args.verbose;
      options.drop_privileges = true;
      return bpfql::command_serve(input, *listen, options);
    }
    if (check->parsed()) {
      input.show_notes = args.verbose;
      return bpfql::command_check(input);
    }
    if (compile->parsed()) {
      if (input.files_or_names.size() != 1) {
        std::cerr << "bpfql: compile takes one query file\n";
        return 2;
      }
      return bpfql::command_compile(input, args.plain);
    }
    if (list->parsed()) return bpfql::command_list(args.list_kind, args.list_pattern, args.verbose);
  } catch (const std::exception& e) {
    std::cerr << "bpfql: internal error: " << e.what() << "\n";
    return 1;
  }
  return 2;
}
