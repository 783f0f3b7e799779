// The machine's 1-minute load average (/proc/loadavg), written into the actor benches' result lines so a reader
// sees what other work ran beside a measured rate; 0 where the file is absent.
#pragma once

#include <fstream>

namespace gmi::bench {

inline double load_average_1min() {
  std::ifstream la("/proc/loadavg");
  double one = 0;
  la >> one;
  return one;
}

}  // namespace gmi::bench
