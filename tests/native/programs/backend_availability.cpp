// Registers a backend that cannot run here ("nogpu", like a CUDA delegate on a machine without
// a GPU) and prints what the C API says about the backends: installed (registered), available,
// edgert_backend_available per name, and set_backends' errors.
#include <cstdio>

#include "edgert/edgert.h"
#include "edgert/registry.hpp"

namespace {

class NoDeviceBackend final : public edgert::Backend {
 public:
  const char* name() const override { return "nogpu"; }
  edgert::Status available() const override {
    return edgert::Status(edgert::Code::Unavailable, "no device found");
  }
  size_t claim(const edgert::Graph&, size_t) const override { return 0; }
  edgert::Status run(const edgert::Graph&, size_t, size_t, std::vector<edgert::Tensor>&) override {
    return edgert::Status(edgert::Code::Unavailable, "no device found");
  }
};

}  // namespace

int main(int argc, char** argv) {
  static NoDeviceBackend backend;
  edgert::register_backend(&backend);
  std::printf("installed:");
  for (size_t i = 0; i < edgert_backend_count(); ++i) std::printf(" %s", edgert_backend_name(i));
  std::printf("\navailable:");
  for (size_t i = 0; i < edgert_available_backend_count(); ++i) {
    std::printf(" %s", edgert_available_backend_name(i));
  }
  std::printf("\npast the end: %s\n", edgert_available_backend_name(99) ? "a name" : "null");
  for (const char* name : {"cpu", "nogpu", "cuda", "gpu9"}) {
    const edgert_status status = edgert_backend_available(name);
    std::printf("available(%s) = %d %s\n", name, static_cast<int>(status),
                status == EDGERT_OK ? "" : edgert_last_error());
  }
  if (argc > 1) {
    edgert_program* program = nullptr;
    if (edgert_program_load_file(argv[1], &program) != EDGERT_OK) return 1;
    for (const char* names : {"cuda", "nogpu"}) {
      const edgert_status status = edgert_program_set_backends(program, names);
      std::printf("set_backends(%s) = %d %s\n", names, static_cast<int>(status),
                  edgert_last_error());
    }
    edgert_program_free(program);
  }
  return 0;
}
