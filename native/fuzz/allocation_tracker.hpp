// Process-wide allocation accounting for the standalone fuzz driver (replaces operator new).
#pragma once

#include <cstddef>

namespace edgert_fuzz {
void reset_peak();           // starts a new measurement from the bytes held now
size_t peak_growth();        // most bytes held since reset_peak(), beyond the bytes held then
}  // namespace edgert_fuzz
