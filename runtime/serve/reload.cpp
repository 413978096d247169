// Reloading serve's queries on SIGHUP (see reload.h).
#include "runtime/serve/reload.h"

#include <algorithm>
#include <iostream>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "runtime/serve/sd_notify.h"

namespace bpfql {
namespace {

void say(const std::string& message) { std::cerr << "bpfql: reload: " << message << "\n" << std::flush; }

}  // namespace

std::unique_ptr<Plan> ServeReloader::next_plan() {
  sd_notify_state("RELOADING=1\nSTATUS=reloading the queries");
  say("SIGHUP: reading the query files again");
  std::optional<CompiledQueries> compiled = compile_();
  if (!compiled) return nullptr;
  if (!compiled->refused.empty()) {
    say(fmt::format("{} did not check (errors above)", fmt::join(compiled->refused, ", ")));
    return nullptr;
  }
  pending_failed_ = std::move(compiled->failed);
  pending_ = std::move(compiled->fingerprints);
  return std::make_unique<Plan>(std::move(compiled->plan));
}

std::map<size_t, size_t> ServeReloader::unchanged(const Plan& current, const Plan& next) {
  std::map<size_t, size_t> out;
  for (size_t to = 0; to < next.queries.size(); ++to)
    for (size_t from = 0; from < current.queries.size(); ++from) {
      const std::string& name = next.queries[to].name;
      if (current.queries[from].name != name) continue;
      auto was = fingerprints_.find(name);
      auto is = pending_.find(name);
      if (was != fingerprints_.end() && is != pending_.end() && was->second == is->second)
        out[to] = from;
    }
  return out;
}

void ServeReloader::reloaded(const Plan& next, const std::vector<std::string>& kept) {
  std::set<std::string> before;
  for (const auto& [name, fp] : fingerprints_) before.insert(name);
  std::vector<std::string> added, changed, removed;
  std::set<std::string> now;
  for (const auto& q : next.queries) {
    now.insert(q.name);
    if (std::ranges::find(kept, q.name) != kept.end()) continue;
    (before.count(q.name) ? changed : added).push_back(q.name);
  }
  for (const auto& name : before)
    if (!now.count(name)) removed.push_back(name);
  fingerprints_ = std::move(pending_);
  pending_.clear();
  output_.replan(next, kept, std::move(pending_failed_));
  output_.reload_result(true);
  say(fmt::format("serving {} queries; kept (counters continue): {}; changed (from zero): {}; new: {}; "
                  "removed: {}",
                  next.queries.size(), kept.empty() ? "none" : fmt::format("{}", fmt::join(kept, ", ")),
                  changed.empty() ? "none" : fmt::format("{}", fmt::join(changed, ", ")),
                  added.empty() ? "none" : fmt::format("{}", fmt::join(added, ", ")),
                  removed.empty() ? "none" : fmt::format("{}", fmt::join(removed, ", "))));
}

void ServeReloader::reload_failed(const std::string& why) {
  pending_.clear();
  output_.reload_result(false);  // published before the log line says so
  say("failed, the queries loaded before keep serving: " + why);
  sd_notify_state("READY=1\nSTATUS=reload failed; serving the queries loaded before");
}

}  // namespace bpfql
