// bpfql: declarative trace queries compiled to BPF. main() parses the command line (CLI11) and
// hands off to the commands; exceptions stop here.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <limits>
#include <optional>
#include <set>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "cli/query_paths.h"
#include "cli/library_check.h"
#include "compiler/syntax/query.h"
#include "compiler/syntax/query_limits.h"

namespace {

constexpr const char* kExamples = R"(Examples:
  bpfql syscalls/top                       top syscalls by process (from the query library)
  bpfql run q.yml --interval 1s -f json    run a query file, print JSON every second
  bpfql run opens.yml -p target=nginx      set a query parameter
  bpfql check q.yml                        type-check without loading anything
  bpfql compile q.yml                      print the generated BPF C
  bpfql serve q.yml --listen :19435         export the queries as Prometheus metrics (/metrics)
  bpfql list queries                       the query library with descriptions
  bpfql list tracepoints 'syscalls:*open*' kernel tracepoints with their fields
  bpfql describe syscalls/top              a library query's parameters, outputs and text
  bpfql kernel export > host.kernel        this kernel as a file, for check --kernel elsewhere
  bpfql check --kernel host.kernel queries/  check a library against that kernel, no root

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
  std::optional<std::string> one_liner;  // -e
  std::string command;                   // -c
  std::vector<std::string> params;
  std::string interval;
  std::string stop_after;
  std::optional<long long> pid;  // --pid as given: wide enough that -1 and 0 reach our check
  std::string format = "table";
  std::string time = "wall";  // --time: wall, boot or delta
  std::string output;
  bool verbose = false;
  bool no_cache = false;
  bool plain = false;  // compile: the plain C instead of BCC's
  std::string list_kind;  // "" = queries; a word that is not a kind is a pattern (command_list)
  std::string list_pattern;
    std::vector<std::string> kernels;      // check --kernel FILE...
  std::string check_format = "text";     // check -f
  std::string describe_name;
  std::vector<std::string> export_for;   // kernel export --for
  std::string listen = "127.0.0.1:19435";
  std::string web_config;  // serve --web.config.file
  size_t max_series = bpfql::kDefaultMaxSeries;
  bool strict = false;  // serve --strict
  bool no_reload = false;  // serve --no-reload
  std::string expire_after;  // serve --expire-after
};

// Turns -p/--interval/--stop-after/--pid into pipeline input; false (after a message) on error.
bool to_input(const Args& args, bpfql::PipelineInput& input) {
  input.files_or_names = args.files;
  input.one_liner = args.one_liner;
  if (args.files.empty() && !args.one_liner) {
    std::cerr << "bpfql: give a query: a file, a library name, '-' (stdin) or -e 'SELECT ...'\n";
    return false;
  }
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
    if (target == &input.options.interval_ns && *ns < bpfql::kMinIntervalNs) {
      std::cerr << "bpfql: --interval must be at least " << bpfql::kMinIntervalText
                << " (each print reads every map), not '" << *text << "'\n";
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
      {"svg", bpfql::OutputFormat::Svg},
      {"heatmap", bpfql::OutputFormat::Heatmap},
  };
  auto it = formats.find(name);
  if (it == formats.end()) return false;
  format = it->second;
  return true;
}

void add_query_options(CLI::App* cmd, Args& args) {
  cmd->add_option("-e,--expr", args.one_liner,
                  "A SQL-shaped query: -e 'SELECT comm, count() FROM t:syscalls:sys_enter_openat "
                  "GROUP BY comm' (several, separated by ';')");
  // One NAME=VALUE per -p: a vector option would otherwise take the query file after it too.
  cmd->add_option("-p,--param", args.params, "Set a query parameter: -p NAME=VALUE")
      ->allow_extra_args(false);
  cmd->add_option("--interval", args.interval, "Print every D (overrides the queries' interval)");
  cmd->add_option("--stop-after", args.stop_after, "Exit (and print) after D");
  cmd->add_option("--pid", args.pid, "Only this process (every probe kind)");
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
  std::set<std::string> global;
  for (const CLI::Option* option : app.get_options()) {
    for (const auto& name : option->get_snames()) global.insert("-" + name);
    for (const auto& name : option->get_lnames()) global.insert("--" + name);
  }
  std::vector<std::string> words(argv + 1, argv + argc);
  for (size_t i = 0; i < words.size(); ++i) {
    const std::string& w = words[i];
    if (w.empty() || commands.count(w)) break;
    if (w == "-") {  // stdin as the query file
      words.insert(words.begin(), "run");
      break;
    }
    if (w[0] == '-') {
      if (w == "-h" || w == "--help" || w == "--version") break;
      if (!global.count(w) && with_value.count(w)) {  // `bpfql -e '...'`: run's own option
        words.insert(words.begin(), "run");
        break;
      }
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
  run->add_option("files", args.files, "Query files or library names (syscalls/top)")->required(false);
  add_query_options(run, args);
  run->add_option("-f,--format", args.format,
                  "Output: table, json, csv, folded (stacks, whole run), svg (flame graph) or "
                  "heatmap (hist() over time; with -o FILE.svg, a picture)")
      ->check(CLI::IsMember({"table", "json", "csv", "folded", "svg", "heatmap"}));
  run->add_option("-o,--output", args.output, "Write the output to FILE (FILE.svg: a flame graph)");
  run->add_option("--time", args.time, "Event times in tables: wall (clock), boot (s since boot) or delta")
      ->check(CLI::IsMember({"wall", "boot", "delta"}));
  run->add_option("-c,--command", args.command,
                  "Start CMD (one argument, split as a shell would), trace it and its "
                  "descendants, and end with the final print when it exits");
  run->add_flag("-v,--verbose", args.verbose, "Show libbcc's compiler output and the verifier log");
  run->add_flag("--no-cache", args.no_cache,
                "Compile the program (bpfql's clang pass; libbcc for USDT) even if the program "
                "cache (/var/cache/bpfql) has it, and do not store it there");

  auto* serve = app.add_subcommand(
      "serve", "Run continuously as a Prometheus exporter: GET /metrics on --listen");
  serve->add_option("files", args.files, "Query files or library names (aggregating queries)")
      ->required(false);
  add_query_options(serve, args);
  serve->get_option("--interval")->description("Also read the maps every D in the background "
                                               "(default: at scrape time when the last read is "
                                               "older than 0.5s, and every 5m)");
  serve->get_option("--stop-after")->description("Exit after D (default: run until SIGINT/SIGTERM)");
  serve->add_option("--listen", args.listen, "HOST:PORT or unix:/PATH to serve /metrics on")
      ->capture_default_str();
  serve->add_option("--web.config.file", args.web_config,
                    "TLS and basic auth for the listener, in the Prometheus exporters' web "
                    "config format (tls_server_config, basic_auth_users)");
  serve->add_option("--max-series", args.max_series,
                    "Export at most N label sets per query; more are counted in bpfql_series_refused")
      ->capture_default_str()
      ->check(CLI::Range(size_t{1}, size_t{10'000'000}));
  serve->add_flag("--strict", args.strict,
                  "Serve nothing unless every query checks (default: serve the queries that do, "
                  "report the rest and export bpfql_query_up 0 for them)");
  serve->add_option("--expire-after", args.expire_after,
                    "Remove a group key whose values did not change for D (e.g. 5m) from the maps "
                    "and the metrics: bounds the series of processes or connections that are gone "
                    "(a key that comes back restarts from 0, a counter reset to rate())");
  serve->add_flag("--no-reload", args.no_reload,
                  "SIGHUP ends serve instead of reloading the queries, and every capability is "
                  "dropped after attach (a reload needs those that loading needs)");
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

  bpfql serve reads.yml --listen 127.0.0.1:19435 --interval 5s
  curl -s 127.0.0.1:19435/metrics | grep bpfql_read_bytes_bytes)");

  auto* check = app.add_subcommand("check", "Parse and type-check; loads nothing");
  check->add_option("files", args.files,
                    "Query files, library names, or library folders (checked recursively with "
                    "the library rules: unique names, descriptions, documented parameters)")
      ->required(false);
  add_query_options(check, args);
  check->add_flag("-v,--verbose", args.verbose,
                  "Also print notes, such as the fields `select: \"*\"` leaves out and why");
  check->add_option("--kernel", args.kernels,
                    "Check against a kernel snapshot (bpfql kernel export) instead of this "
                    "kernel; repeat for a table of which query works on which kernel")
      ->allow_extra_args(false);
  check->add_option("-f,--format", args.check_format, "text or json (for tools and CI)")
      ->check(CLI::IsMember({"text", "json"}));
  check->footer(R"(Examples:
  bpfql check q.yml                             against this kernel
  bpfql check queries/                          a library: every query, plus the library rules
  bpfql check --kernel web.kernel --kernel db.kernel queries/
                                                which query works on which kernel, and why not
Exit status: 0 all passed, 2 any query or library rule failed.)");

  auto* describe = app.add_subcommand("describe", "Show a library query: parameters, probes, "
                                                  "outputs, whether it can run here, its text");
  describe->add_option("name", args.describe_name, "A library name (syscalls/top) or a file")
      ->required();

  auto* kernel = app.add_subcommand("kernel", "Kernel snapshots for checking queries offline");
  kernel->require_subcommand(1);
  auto* kernel_export = kernel->add_subcommand(
      "export", "Write this kernel's tracepoint formats, BTF, probe kinds and release to one "
                "file, for `bpfql check --kernel FILE` on any machine");
  kernel_export->add_option("--for", args.export_for,
                            "Only what these queries (files, names or folders) need: a small "
                            "snapshot");
  kernel_export->add_option("-o,--output", args.output, "Write to FILE (default: stdout)");

  auto* compile = app.add_subcommand("compile", "Print the generated BPF C");
  compile->add_option("files", args.files, "Query files or library names")->required(false);
  add_query_options(compile, args);
  compile->add_flag("--plain", args.plain,
                    "Print the plain C bpfql compiles itself in one clang pass (tracepoint and "
                    "perf-event programs) instead of the BCC C libbcc compiles");

  std::string convert_to;
  auto* convert = app.add_subcommand(
      "convert", "Print a query in the other syntax: -e's SQL as YAML, a YAML file as SQL");
  convert->add_option("files", args.files, "A query file, library name or '-' (stdin)");
  convert->add_option("-e,--expr", args.one_liner, "A SQL-shaped query to print as YAML");
  convert->add_option("-p,--param", args.params, "A value for a $name the SQL uses: -p NAME=VALUE")
      ->allow_extra_args(false);
  convert->add_option("--to", convert_to, "The syntax to print: yaml or sql (default: the other)")
      ->check(CLI::IsMember({"yaml", "sql"}));

  auto* list = app.add_subcommand("list", "List library queries, kernel tracepoints, or a binary's USDT probes");
  list->add_option("kind", args.list_kind,
                   "queries (default), tracepoints or probes; left out, the first word is the "
                   "pattern for queries");
  list->add_option("pattern", args.list_pattern, "A glob or substring; for probes, the binary");
  list->add_flag("-v,--verbose", args.verbose, "With tracepoints: show every tracepoint's fields");

  // Each subcommand's --help is its own: a line or two of examples, not the top-level block.
  run->footer(R"(Examples:
  bpfql run q.yml --interval 1s -f json     JSON every second
  bpfql run process/cpu-profile -o cpu.svg  a flame graph of the whole run
  bpfql run q.yml --pid 1234                one process; ends when it exits)");
  check->footer("Example: bpfql check q.yml   (exit 0: runs here; 2: query error; 1: this machine cannot run it)");
  compile->footer("Example: bpfql compile q.yml --plain");
  list->footer(R"(Examples:
  bpfql list queries
  bpfql list tracepoints 'syscalls:*open*'
  bpfql list probes /usr/bin/python3)");

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
      // -o out.svg asks for the picture, unless -f says otherwise.
      if (run->count("--format") == 0 && args.output.size() > 4 &&
          args.output.compare(args.output.size() - 4, 4, ".svg") == 0)
        options.format = bpfql::OutputFormat::Svg;
      if (options.format == bpfql::OutputFormat::Heatmap && args.output.size() > 4 &&
          args.output.compare(args.output.size() - 4, 4, ".svg") == 0)
        options.format = bpfql::OutputFormat::HeatmapSvg;
      options.time = args.time == "boot"    ? bpfql::TimeShown::Boot
                     : args.time == "delta" ? bpfql::TimeShown::Delta
                                            : bpfql::TimeShown::Wall;
      if (!args.command.empty()) {
        if (args.pid) {
          std::cerr << "bpfql: -c and --pid both say which process to trace; give one\n";
          return 2;
        }
        return bpfql::command_run_command(input, options, args.command);
      }
      return bpfql::command_run(input, options);
    }
    if (serve->parsed()) {
      if (!bpfql::expand_query_dirs(input.files_or_names)) return 2;
      auto listen = bpfql::parse_listen(args.listen);
      if (!listen) {
        std::cerr << "bpfql: " << listen.error() << "\n";
        return 2;
      }
      bpfql::RunOptions options;
      options.verbose = args.verbose;
      // SIGHUP reloads: loading the new programs needs the capabilities attaching needed, so
      // the session keeps them (the HTTP thread drops all of its own); --no-reload drops them.
      options.drop_privileges = args.no_reload;
      if (!args.expire_after.empty()) {
        auto ns = bpfql::parse_duration(args.expire_after);
        if (!ns || *ns < 1'000'000'000) {
          std::cerr << "bpfql: --expire-after takes a duration of at least 1s, such as 5m, not '"
                    << args.expire_after << "'\n";
          return 2;
        }
        options.expire_after = std::chrono::nanoseconds(*ns);
      }
      bpfql::WebConfig web;
      if (!args.web_config.empty()) {
        auto loaded = bpfql::load_web_config(args.web_config);
        if (!loaded) {
          std::cerr << "bpfql: " << loaded.error() << "\n";
          return 2;
        }
        web = std::move(*loaded);
      }
      return bpfql::command_serve(input, *listen, web, args.max_series, args.strict, options,
                                  args.no_reload ? std::vector<std::string>{} : args.files);
    }
    if (check->parsed()) {
      input.show_notes = args.verbose;
      bpfql::CheckTargets targets{args.kernels, args.check_format == "json"};
      if (bpfql::wants_library_check(input, targets))
        return bpfql::command_check_library(input, targets);
      return bpfql::command_check(input);
    }
    if (describe->parsed()) return bpfql::command_describe(args.describe_name);
    if (kernel_export->parsed()) return bpfql::command_kernel_export(args.export_for, args.output);
    if (compile->parsed()) {
      if (input.files_or_names.size() + (input.one_liner ? 1 : 0) != 1) {
        std::cerr << "bpfql: compile takes one query file\n";
        return 2;
      }
      return bpfql::command_compile(input, args.plain);
    }
    if (convert->parsed()) {
      if (!to_input(args, input)) return 2;
      return bpfql::command_convert(input, convert_to);
    }
    if (list->parsed()) return bpfql::command_list(args.list_kind, args.list_pattern, args.verbose);
  } catch (const std::exception& e) {
    std::cerr << "bpfql: internal error: " << e.what() << "\n";
    return 1;
  }
  return 2;
}
