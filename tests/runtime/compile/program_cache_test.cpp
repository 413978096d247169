// The program cache (program_cache.h): what it trusts, and load_program with it: a miss compiles
// and stores, a hit loads without libbcc, and a corrupt, foreign-owned or writable file is
// ignored or refused and compiled again. The kernel parts need root (skipped otherwise).
#include <doctest/doctest.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "runtime/load/loader.h"
#include "runtime/compile/program_cache.h"

using namespace bpfql;
namespace fs = std::filesystem;

namespace {

struct stat stat_of(mode_t type_and_mode, uid_t uid) {
  struct stat st{};
  st.st_mode = type_and_mode;
  st.st_uid = uid;
  return st;
}

// A fresh root-owned 0700 directory, set as BPFQL_CACHE_DIR while it lives.
class CacheDir {
 public:
  CacheDir() {
    char tmpl[] = "/tmp/bpfql-cache-test-XXXXXX";
    path_ = mkdtemp(tmpl);
    const char* old = std::getenv("BPFQL_CACHE_DIR");
    if (old) old_ = old;
    setenv("BPFQL_CACHE_DIR", path_.c_str(), 1);
  }
  ~CacheDir() {
    if (old_) setenv("BPFQL_CACHE_DIR", old_->c_str(), 1);
    else unsetenv("BPFQL_CACHE_DIR");
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::vector<std::string> files() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(path_)) out.push_back(e.path().string());
    return out;
  }

 private:
  std::string path_;
  std::optional<std::string> old_;
};

bool can_load_bpf() {
  Plan empty;
  if (auto problem = check_host(empty)) {
    MESSAGE("skipped: " << *problem);
    return false;
  }
  return true;
}

// A counter of getppid() calls by pid: one map reference in the code.
Plan counting_plan() {
  Plan plan;
  plan.c_source = R"(
BPF_PERCPU_ARRAY(q0_values, u64, 4);
int q0_probe0(void *ctx) {
  int slot = 1;
  u64 *v = q0_values.lookup(&slot);
  if (v) (*v)++;
  return 0;
}
)";
  PlanQuery q;
  q.name = "cached";
  PlanAttach a;
  a.kind = ProbeKind::Tracepoint;
  a.function = "q0_probe0";
  a.tracepoint = "syscalls:sys_enter_getppid";
  a.spec = "tracepoint:syscalls:sys_enter_getppid";
  q.attaches = {a};
  plan.queries = {q};
  return plan;
}

bool contains(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

}  // namespace

TEST_CASE("the cache trusts only root-owned directories and files nobody else can write") {
  CHECK(untrusted_cache_dir(stat_of(S_IFDIR | 0700, 0)).empty());
  CHECK(untrusted_cache_dir(stat_of(S_IFDIR | 0755, 0)).empty());
  CHECK(contains(untrusted_cache_dir(stat_of(S_IFDIR | 0700, 1000)), "not root"));
  CHECK(contains(untrusted_cache_dir(stat_of(S_IFDIR | 0777, 0)), "writable"));
  CHECK(contains(untrusted_cache_dir(stat_of(S_IFDIR | 0770, 0)), "writable"));
  CHECK(contains(untrusted_cache_dir(stat_of(S_IFLNK | 0777, 0)), "not a directory"));

  CHECK(untrusted_cache_file(stat_of(S_IFREG | 0600, 0)).empty());
  CHECK(contains(untrusted_cache_file(stat_of(S_IFREG | 0600, 65534)), "not root"));
  CHECK(contains(untrusted_cache_file(stat_of(S_IFREG | 0602, 0)), "writable"));
  CHECK(contains(untrusted_cache_file(stat_of(S_IFREG | 0620, 0)), "writable"));
  CHECK(contains(untrusted_cache_file(stat_of(S_IFIFO | 0600, 0)), "not a regular file"));
}

TEST_CASE("the cache key covers the C, the probes and the machine; pid-bound USDT is not cached") {
  Plan plan = counting_plan();
  auto a = program_cache_key(plan);
  REQUIRE(a);
  CHECK(contains(*a, plan.c_source));
  CHECK(contains(*a, "libbcc "));
  CHECK(contains(*a, "kernel "));
  // The compiler: counting_plan() has no plain C, so libbcc's helper and the libraries it loads.
  CHECK(contains(*a, "helper "));
  CHECK(contains(*a, "bpfql-compile-libbcc "));
  CHECK(contains(*a, "libLLVM"));
  CHECK(!contains(*a, "helper missing"));
  Plan plain = plan;
  plain.c_plain = "int f(void) { return 0; }";
  auto p = program_cache_key(plain);
  REQUIRE(p);
  CHECK(contains(*p, "bpfql-compile-plain "));
  CHECK(!contains(*p, "bpfql-compile-libbcc "));
  Plan other = plan;
  other.c_source += " ";
  CHECK(*program_cache_key(other) != *a);
  other = plan;
  other.queries[0].attaches[0].kind = ProbeKind::Kprobe;  // another program type
  CHECK(*program_cache_key(other) != *a);

  PlanAttach usdt;
  usdt.kind = ProbeKind::Usdt;
  usdt.function = "q1_p0";
  usdt.binary = "/proc/self/exe";
  usdt.provider = "p";
  usdt.usdt_name = "n";
  other = plan;
  other.queries[0].attaches.push_back(usdt);
  auto with_usdt = program_cache_key(other);
  REQUIRE(with_usdt);
  CHECK(contains(*with_usdt, "usdt p:n q1_p0 /proc/self/exe "));
  other.queries[0].attaches.back().pid = 1;
  CHECK(!program_cache_key(other));
}

TEST_CASE("a cache directory writable by others is not used") {
  if (geteuid() != 0) {
    MESSAGE("skipped: the cache is root's");
    return;
  }
  CacheDir dir;
  chmod(dir.path().c_str(), 0777);
  CHECK(contains(ProgramCache().prepare(), "writable by group or others"));
  chmod(dir.path().c_str(), 0700);
  CHECK(ProgramCache().prepare().empty());
  std::string missing = dir.path() + "/sub";
  CHECK(ProgramCache(missing).prepare().empty());  // created
  struct stat st{};
  REQUIRE(lstat(missing.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
}

TEST_CASE("root: a miss compiles and stores, a hit loads the same maps without libbcc") {
  if (!can_load_bpf()) return;
  CacheDir dir;
  Plan plan = counting_plan();

  LoadResult cold = load_program(plan);
  REQUIRE_MESSAGE(cold.bpf, cold.error);
  INFO("cold log: " << cold.log);
  CHECK(contains(cold.log, "program cache: miss"));
  CHECK(contains(cold.log, "program cache: stored"));
  auto files = dir.files();
  REQUIRE(files.size() == 1);
  struct stat st{};
  REQUIRE(stat(files[0].c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  CHECK(st.st_uid == 0);

  LoadResult warm = load_program(plan);
  REQUIRE_MESSAGE(warm.bpf, warm.error);
  INFO("warm log: " << warm.log);
  CHECK(contains(warm.log, "program cache: hit"));
  CHECK(contains(warm.log, "no compiler run"));
  CHECK(warm.bpf->program_fd("q0_probe0") >= 0);
  int warm_map = warm.bpf->map_fd("q0_values");
  REQUIRE(warm_map >= 0);
  CHECK(warm_map != cold.bpf->map_fd("q0_values"));  // its own map, not shared

  LoadResult bypass = load_program(plan, false, /*use_cache=*/false);
  REQUIRE_MESSAGE(bypass.bpf, bypass.error);
  CHECK(!contains(bypass.log, "program cache"));
}

TEST_CASE("root: a corrupt, foreign-owned or writable cache file is compiled again") {
  if (!can_load_bpf()) return;
  CacheDir dir;
  Plan plan = counting_plan();
  REQUIRE(load_program(plan).bpf);
  std::string file = dir.files().at(0);

  fs::resize_file(file, fs::file_size(file) - 5);  // truncated
  LoadResult r = load_program(plan);
  REQUIRE_MESSAGE(r.bpf, r.error);
  INFO("log: " << r.log);
  CHECK(contains(r.log, "ignored: checksum mismatch"));
  CHECK(contains(r.log, "program cache: stored"));

  {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(40);
    f.put('\x7f');  // a flipped byte in the middle
  }
  r = load_program(plan);
  REQUIRE_MESSAGE(r.bpf, r.error);
  CHECK(contains(r.log, "ignored"));
  CHECK(contains(r.log, "program cache: stored"));

  REQUIRE(chown(file.c_str(), 65534, 65534) == 0);
  r = load_program(plan);
  REQUIRE_MESSAGE(r.bpf, r.error);
  CHECK(contains(r.log, "refused: owned by uid 65534, not root"));
  CHECK(contains(r.log, "program cache: stored"));  // replaced by a root-owned file

  REQUIRE(chmod(file.c_str(), 0666) == 0);
  r = load_program(plan);
  REQUIRE_MESSAGE(r.bpf, r.error);
  CHECK(contains(r.log, "refused: writable by group or others"));
  struct stat st{};
  REQUIRE(stat(file.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);

  r = load_program(plan);
  REQUIRE_MESSAGE(r.bpf, r.error);
  CHECK(contains(r.log, "program cache: hit"));
}

TEST_CASE("root: a cache directory that is a symlink is not used, and the load still works") {
  if (!can_load_bpf()) return;
  CacheDir dir;
  std::string link = dir.path() + "/link";
  fs::create_directory(dir.path() + "/real");
  fs::create_directory_symlink(dir.path() + "/real", link);
  setenv("BPFQL_CACHE_DIR", link.c_str(), 1);
  LoadResult r = load_program(counting_plan());
  REQUIRE_MESSAGE(r.bpf, r.error);
  CHECK(contains(r.log, "program cache: not used: " + link + " is not a directory"));
  CHECK(fs::is_empty(dir.path() + "/real"));
}

TEST_CASE("the cache keeps its most recently used entries") {
  if (geteuid() != 0) {
    MESSAGE("skipped: the cache is root's");
    return;
  }
  CacheDir dir;
  ProgramCache cache;
  REQUIRE(cache.prepare().empty());
  ProgramImage image;
  image.license = "GPL";
  for (int i = 0; i < 5; ++i) {
    std::string key = "key " + std::to_string(i);
    REQUIRE(cache.store(image, key).empty());
    // Distinct, increasing mtimes without sleeping: key 0 is the oldest.
    struct timespec times[2] = {{1000 + i, 0}, {1000 + i, 0}};
    REQUIRE(utimensat(AT_FDCWD, cache.path_for(key).c_str(), times, 0) == 0);
  }
  REQUIRE(cache.load("key 1"));  // a hit makes key 1 the most recently used
  cache.trim(3);
  CHECK(!fs::exists(cache.path_for("key 0")));
  CHECK(fs::exists(cache.path_for("key 1")));
  CHECK(!fs::exists(cache.path_for("key 2")));
  CHECK(fs::exists(cache.path_for("key 3")));
  CHECK(fs::exists(cache.path_for("key 4")));
}
