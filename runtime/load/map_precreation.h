// Creating a Plan's maps (plan.h PlanMap) on a thread of their own while the program is compiled
// or read from the cache: the kernel allocates every entry of a preallocated per-CPU hash's
// values one by one (~8 ms for the default 10,240), and nothing else at start takes as long.
// BpfObject::load takes a created map whose attributes are exactly the image's; any other is
// created there as before, and what is not taken is closed.
#pragma once

#include <map>
#include <string>
#include <thread>
#include <vector>

#include "compiler/plan.h"
#include "runtime/compile/program_image.h"

namespace bpfql {

class MapPrecreation {
 public:
  // Starts creating every map that needs no BTF (`possible_cpus` perf buffers for each perf
  // event array).
  MapPrecreation(const std::vector<PlanMap>& maps, uint32_t possible_cpus);
  ~MapPrecreation();  // waits, closes what was not taken
  MapPrecreation(const MapPrecreation&) = delete;
  MapPrecreation& operator=(const MapPrecreation&) = delete;

  // The fd of the map created as `wanted` (name and every attribute), handed over; -1 if none.
  // Waits for the thread first.
  int take(const ImageMap& wanted);

 private:
  void wait();
  std::vector<ImageMap> maps_;
  std::vector<int> fds_;  // by index in maps_; -1: not created, or taken
  std::thread thread_;
};

// The ImageMap a PlanMap becomes.
ImageMap image_map_of(const PlanMap& m, uint32_t possible_cpus);

}  // namespace bpfql
