// `bpfql serve` on top of the run session (see serve.h).
#include "runtime/serve/serve.h"

#include <algorithm>
#include <iostream>

#include <fmt/format.h>

#include "runtime/serve/process_metrics.h"
#include "runtime/serve/sd_notify.h"

namespace bpfql {

void prepare_serve_plan(Plan& plan, std::optional<uint64_t> refresh_ns) {
  for (auto& q : plan.queries) {
    q.cumulative = true;
    q.limit = 0;
    // A query's interval is how often `run` prints; serve's counters are cumulative, so reading
    // them more often only makes a scrape fresher: at most kDefaultServeInterval old, unless
    // --interval says otherwise.
    q.interval_ns = refresh_ns && *refresh_ns ? *refresh_ns : kDefaultServeInterval;
  }
}

PrometheusOutput::PrometheusOutput(const Plan& plan, HttpExporter& exporter, std::string version,
                                   size_t max_series, std::vector<std::string> failed)
    : renderer_(plan, max_series, std::move(failed)), exporter_(exporter), texts_(plan.queries.size()), version_(std::move(version)),
      refreshed_(plan.queries.size(), false) {
  for (const auto& q : plan.queries)
    if (q.interval_ns) refresh_ns_ = std::max(refresh_ns_, *q.interval_ns);
  publish();
}

// Each query is rendered once per read; flush() only joins the texts (the session flushes after
// every query's print, so rendering everything there would repeat the work per query).
void PrometheusOutput::interval(const IntervalResult& result) {
  int i = renderer_.query_index(result.query);
  if (i < 0) return;
  texts_[i] = renderer_.render_query(result);
  refreshed_[i] = true;
  IntervalResult summary;
  summary.query = result.query;
  summary.time = result.time;
  summary.interval_s = result.interval_s;
  summary.dropped = result.dropped;
  summary.lost = result.lost;
  summary.read_seconds = result.read_seconds;
  summary.program_stats = result.program_stats;
  summary.program_runs = result.program_runs;
  summary.program_run_ns = result.program_run_ns;
  for (auto& r : latest_)
    if (r.query == result.query) {
      r = std::move(summary);
      return;
    }
  latest_.push_back(std::move(summary));
}

// The session flushes after each query it read; every query is read on the same tick (one
// refresh interval for all), so the exposition is built once that tick has read them all, or
// when one and a half refresh intervals passed without (a query that is slow to read does not
// hold the rest back).
void PrometheusOutput::flush() {
  bool all = std::all_of(refreshed_.begin(), refreshed_.end(), [](bool b) { return b; });
  auto now = std::chrono::steady_clock::now();
  if (!all && now - published_ < std::chrono::nanoseconds(refresh_ns_ + refresh_ns_ / 2)) return;
  publish();
}

void PrometheusOutput::publish() {
  size_t size = 0;
  for (const auto& t : texts_) size += t.size();
  std::string self = renderer_.render_self(latest_, attached_) + render_process_metrics(version_);
  std::string text;
  text.reserve(size + self.size());
  for (const auto& t : texts_) text += t;
  text += self;
  bool fresh = std::all_of(refreshed_.begin(), refreshed_.end(), [](bool b) { return b; });
  exporter_.publish(std::move(text), fresh);
  std::fill(refreshed_.begin(), refreshed_.end(), false);
  published_ = std::chrono::steady_clock::now();
}

void PrometheusOutput::started() {
  attached_ = true;
  publish();
  exporter_.serve();
  sd_notify_state(fmt::format("READY=1\nSTATUS=serving {} queries on {}", texts_.size(),
                              exporter_.address()));
  if (exporter_.address().starts_with("unix:"))
    std::cerr << "Serving metrics on " << exporter_.address() << " (GET /metrics)\n" << std::flush;
  else
    std::cerr << "Serving metrics on " << exporter_.scheme() << "://" << exporter_.address() << "/metrics\n"
              << std::flush;
}

int serve_plan(const Plan& plan, HttpExporter& exporter, RunOptions options, std::string version,
               size_t max_series, std::vector<std::string> failed) {
  exporter.refresh_on_demand(kMaxScrapeAge, kScrapeWait);
  PrometheusOutput output(plan, exporter, std::move(version), max_series, std::move(failed));
  options.output = &output;
  options.refresh_fd = exporter.refresh_request_fd();
  options.final_read = false;
  options.export_rows = true;
  int status = run_plan(plan, options);
  sd_notify_state("STOPPING=1");
  return status;
}

}  // namespace bpfql
