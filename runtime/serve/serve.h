// `bpfql serve`: runs a Plan as a Prometheus exporter. The session (session.h) drives the loop as
// for `run`; its Output renders each refresh to Prometheus text (render/prometheus.h) and
// publishes it to the HTTP listener (http_exporter.h), which answers GET /metrics from its own
// thread with the last published text.
//
// Serving changes a Plan in three ways (prepare_serve_plan): every query is cumulative (maps
// are never cleared, so counters only grow), has no row limit (every key is exported), and is
// read every refresh interval (--interval, else kDefaultServeInterval, whatever the query's own
// interval), and besides at scrape time (see kMaxScrapeAge).
#pragma once

#include <chrono>
#include <functional>
#include <cstdint>
#include <optional>
#include <string>
#include <memory>

#include "compiler/plan.h"
#include "runtime/collect/output.h"
#include "runtime/render/prometheus.h"
#include "runtime/serve/http_exporter.h"
#include "runtime/session.h"

namespace bpfql {

// Without --interval the maps are read at scrape time, when the last read is older than
// kMaxScrapeAge (the scrape waits for it, at most kScrapeWait): state at most 0.5 s old for every
// scrape, at the cost of one read per scrape interval. A host nobody scrapes does no work but a
// background read every 5 minutes (bench/README.md, "serve: idle CPU and memory").
inline constexpr uint64_t kDefaultServeInterval = 300'000'000'000;  // ns
inline constexpr std::chrono::milliseconds kMaxScrapeAge{500};
inline constexpr std::chrono::milliseconds kScrapeWait{3000};

void prepare_serve_plan(Plan& plan, std::optional<uint64_t> refresh_ns = std::nullopt);

// The Output of a serve run: keeps each query's latest result, renders them all on flush() and
// publishes the text to `exporter`; started() starts the listener's thread (after attach and the
// privilege drop, whose credentials its threads inherit).
class PrometheusOutput final : public Output {
 public:
  // `failed`: queries that were not loaded (serve without --strict): bpfql_query_up 0.
  PrometheusOutput(const Plan& plan, HttpExporter& exporter, std::string version = "",
                   size_t max_series = kDefaultMaxSeries, std::vector<std::string> failed = {});
  void interval(const IntervalResult& result) override;
  void event(const StreamRow&) override {}  // serve rejects streaming queries before this
  void events_not_printed(const PlanQuery&, uint64_t) override {}
  void flush() override;
  void started() override;
  // A reload (reload.h): `plan` runs now; `kept` (query names) continue their series.
  void replan(const Plan& plan, const std::vector<std::string>& kept, std::vector<std::string> failed);
  // The outcome of the last SIGHUP, as bpfql_config_last_reload_successful (1 before any reload)
  // and bpfql_config_last_reload_success_timestamp_seconds (the start, then each good reload).
  void reload_result(bool ok);
  // serve --expire-after: exports bpfql_expired_keys_total.
  void set_expiring(bool on);

 private:
  void publish();
  std::string render_reload_metrics() const;
  std::unique_ptr<PrometheusRenderer> renderer_;
  size_t max_series_;
  HttpExporter& exporter_;
  std::vector<IntervalResult> latest_;  // per query in Plan order; rows dropped once rendered
  std::vector<std::string> texts_;      // per query in Plan order: its rendered families
  std::string version_;
  bool attached_ = false;
  bool announced_ = false;  // started() said where it serves (once: a reload starts it again)
  bool last_reload_ok_ = true;
  bool expiring_ = false;
  double last_reload_success_ = 0;  // Unix time
  std::vector<bool> refreshed_;  // per query: read since the last publication
  std::chrono::steady_clock::time_point published_{};
  uint64_t refresh_ns_ = kDefaultServeInterval;  // the longest refresh interval of the queries
};

// Runs `plan` (already prepared) until a signal or stop_after; returns the exit status as
// run_plan does. `exporter` is bound; its listener runs while the probes are attached.
// `version` goes to bpfql_build_info.
// `make_reloader`: given the output, what SIGHUP reloads with (reload.h); none: SIGHUP ends it.
int serve_plan(const Plan& plan, HttpExporter& exporter, RunOptions options, std::string version = "",
               size_t max_series = kDefaultMaxSeries, std::vector<std::string> failed = {},
               std::function<std::unique_ptr<Reloader>(PrometheusOutput&)> make_reloader = {});

}  // namespace bpfql
