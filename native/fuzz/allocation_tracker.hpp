// Process-wide allocation accounting for the standalone fuzz driver (replaces operator new).
#pragma once

#include <cstddef>

namespace edgert_fuzz {
void reset_peak();          // starts a new measurement from the bytes held now
size_t peak_growth();       // most bytes held since reset_peak(), beyond the bytes held then
size_t load_peak_growth();  // peak_growth() when the target said loading was done
}  // namespace edgert_fuzz

// Called by the fuzz target once the program is loaded, before it runs it (weak there: the
// libFuzzer build has no tracker).
extern "C" void edgert_fuzz_loaded(void);
// Called by the fuzz target after a run in which the CPU delegate ran nodes (weak there too).
extern "C" void edgert_fuzz_delegated(void);
namespace edgert_fuzz {
size_t delegated_runs();  // how many times edgert_fuzz_delegated() was called
}  // namespace edgert_fuzz
