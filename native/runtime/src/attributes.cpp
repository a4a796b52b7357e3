// Typed node attributes with fallbacks.
#include "edgert/graph.hpp"

namespace edgert {
namespace {

template <class T>
const T* find_as(const std::map<std::string, AttributeValue>& values, const std::string& name) {
  auto found = values.find(name);
  return found == values.end() ? nullptr : std::get_if<T>(&found->second);
}

}  // namespace

int64_t Attributes::get_int(const std::string& name, int64_t fallback) const {
  const int64_t* value = find_as<int64_t>(values_, name);
  return value ? *value : fallback;
}

double Attributes::get_float(const std::string& name, double fallback) const {
  if (const double* value = find_as<double>(values_, name)) return *value;
  if (const int64_t* value = find_as<int64_t>(values_, name)) return static_cast<double>(*value);
  return fallback;
}

std::string Attributes::get_string(const std::string& name, const std::string& fallback) const {
  const std::string* value = find_as<std::string>(values_, name);
  return value ? *value : fallback;
}

std::vector<int64_t> Attributes::get_ints(const std::string& name) const {
  const auto* value = find_as<std::vector<int64_t>>(values_, name);
  return value ? *value : std::vector<int64_t>{};
}

std::vector<double> Attributes::get_floats(const std::string& name) const {
  const auto* value = find_as<std::vector<double>>(values_, name);
  return value ? *value : std::vector<double>{};
}

}  // namespace edgert
