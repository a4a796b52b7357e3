// A shape as messages and the profile write it: "[2, 3]".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace edgert {

std::string shape_text(const std::vector<int64_t>& shape);

}  // namespace edgert
