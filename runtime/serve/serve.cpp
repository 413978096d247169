// `bpfql serve` on top of the run session (see serve.h).
#include "runtime/serve/serve.h"

#include <algorithm>
#include <iostream>

#include <fmt/format.h>

#include "runtime/kernel/pending_signals.h"
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
    : renderer_(std::make_unique<PrometheusRenderer>(plan, max_series, std::move(failed))),
      max_series_(max_series),
      exporter_(exporter),
      texts_(plan.queries.size()),
      version_(std::move(version)),
      refreshed_(plan.queries.size(), false) {
  last_reload_success_ = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  for (const auto& q : plan.queries)
    if (q.interval_ns) refresh_ns_ = std::max(refresh_ns_, *q.interval_ns);
  publish();
}

// Each query is rendered once per read; flush() only joins the texts (the session flushes after
// every query's print, so rendering everything there would repeat the work per query).
void PrometheusOutput::interval(const IntervalResult& result) {
  int i = renderer_->query_index(result.query);
  if (i < 0) return;
  texts_[i] = renderer_->render_query(result);
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
  summary.expired_keys = result.expired_keys;
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
  std::string self = renderer_->render_self(latest_, attached_) + render_reload_metrics() +
                     render_process_metrics(version_);
  std::string text;
  text.reserve(size + self.size());
  for (const auto& t : texts_) text += t;
  text += self;
  bool fresh = std::all_of(refreshed_.begin(), refreshed_.end(), [](bool b) { return b; });
  exporter_.publish(std::move(text), fresh);
  std::fill(refreshed_.begin(), refreshed_.end(), false);
  published_ = std::chrono::steady_clock::now();
}

void PrometheusOutput::replan(const Plan& plan, const std::vector<std::string>& kept,
                              std::vector<std::string> failed) {
  auto renderer = std::make_unique<PrometheusRenderer>(plan, max_series_, std::move(failed));
  renderer->carry_admitted(*renderer_, kept);
  renderer->set_expiring(expiring_);
  renderer_ = std::move(renderer);
  texts_.assign(plan.queries.size(), "");
  refreshed_.assign(plan.queries.size(), false);
  latest_.clear();  // they point into the old Plan
  refresh_ns_ = 0;
  for (const auto& q : plan.queries)
    if (q.interval_ns) refresh_ns_ = std::max(refresh_ns_, *q.interval_ns);
  if (refresh_ns_ == 0) refresh_ns_ = kDefaultServeInterval;
}

void PrometheusOutput::set_expiring(bool on) {
  expiring_ = on;
  renderer_->set_expiring(on);
  publish();
}

void PrometheusOutput::reload_result(bool ok) {
  last_reload_ok_ = ok;
  if (ok)
    last_reload_success_ =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  if (!ok) publish();  // after a good reload the new Plan's first read publishes
}

std::string PrometheusOutput::render_reload_metrics() const {
  return fmt::format(
      "# HELP bpfql_config_last_reload_successful Whether the last reload of the queries (SIGHUP) "
      "succeeded (1 before any)\n"
      "# TYPE bpfql_config_last_reload_successful gauge\n"
      "bpfql_config_last_reload_successful {}\n"
      "# HELP bpfql_config_last_reload_success_timestamp_seconds When the queries served were last "
      "loaded: the start or the last successful reload\n"
      "# TYPE bpfql_config_last_reload_success_timestamp_seconds gauge\n"
      "bpfql_config_last_reload_success_timestamp_seconds {:.3f}\n",
      last_reload_ok_ ? 1 : 0, last_reload_success_);
}

void PrometheusOutput::started() {
  attached_ = true;
  if (announced_) {
    // A reload: the old exposition stays published until the new Run's first read of every
    // query (it reads them at once), so no scrape sees the kept series missing.
    sd_notify_state(fmt::format("READY=1\nSTATUS=serving {} queries on {}", texts_.size(), exporter_.address()));
    return;
  }
  announced_ = true;
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
               size_t max_series, std::vector<std::string> failed,
               std::function<std::unique_ptr<Reloader>(PrometheusOutput&)> make_reloader) {
  exporter.refresh_on_demand(kMaxScrapeAge, kScrapeWait);
  PrometheusOutput output(plan, exporter, std::move(version), max_series, std::move(failed));
  options.output = &output;
  output.set_expiring(options.expire_after.count() > 0);
  std::unique_ptr<Reloader> reloader;
  if (make_reloader) {
    reloader = make_reloader(output);
    options.reloader = reloader.get();
    set_sighup_reloads(true);
  }
  options.refresh_fd = exporter.refresh_request_fd();
  options.final_read = false;
  options.export_rows = true;
  int status = run_plan(plan, options);
  sd_notify_state("STOPPING=1");
  return status;
}

}  // namespace bpfql
