// Prepared kernel state shared between programs: two programs holding the same constants and
// attributes for an operator get one prepared state (one copy of a packed weight), however
// they were loaded. Entries are weak: the state lives as long as a program holds it.
#pragma once

#include <memory>

#include "edgert/registry.hpp"

namespace edgert {

// The state `prepare` makes for `context`, made once while any program still holds it. The
// key is the operator, its attributes and each input's constant (dtype, shape and a 128-bit
// digest of its bytes, seeded per process) or its absence.
Status prepare_shared(const PrepareContext& context, PrepareFn prepare, std::shared_ptr<const void>& state);

}  // namespace edgert
