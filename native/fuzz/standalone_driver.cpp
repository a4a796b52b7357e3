// A libFuzzer-compatible driver for compilers without -fsanitize=fuzzer (gcc): replays a
// corpus, then mutates it for a bounded time. Every allocation is tracked: an input that
// makes the loader hold more than a small multiple of its own size fails the run.
//
//   fuzz_program_loader [-max_total_time=SECONDS] [-seed=N] CORPUS_DIR_OR_FILE...
#include <dirent.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <new>
#include <random>
#include <string>
#include <vector>

#include "allocation_tracker.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

using Bytes = std::vector<uint8_t>;
constexpr size_t kMaxInput = 1 << 16;

void add_file(const std::string& path, std::vector<Bytes>& corpus) {
  std::ifstream file(path, std::ios::binary);
  if (file) corpus.emplace_back(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
}

void add_path(const std::string& path, std::vector<Bytes>& corpus) {
  DIR* folder = opendir(path.c_str());
  if (folder == nullptr) return add_file(path, corpus);
  while (dirent* entry = readdir(folder)) {
    if (entry->d_name[0] != '.') add_file(path + "/" + entry->d_name, corpus);
  }
  closedir(folder);
}

// Values that tend to break size and index arithmetic.
uint64_t interesting(std::mt19937_64& random) {
  static const uint64_t values[] = {0,
                                    1,
                                    2,
                                    8,
                                    16,
                                    0x7f,
                                    0x80,
                                    0xff,
                                    0xffff,
                                    0x7fffffff,
                                    0x80000000,
                                    0xffffffff,
                                    0x100000000,
                                    0x7fffffffffffffff,
                                    0xffffffffffffffff,
                                    0x4000000000000000};
  return values[random() % (sizeof values / sizeof values[0])];
}

void mutate(Bytes& input, std::mt19937_64& random) {
  const size_t at = input.empty() ? 0 : random() % input.size();
  switch (random() % 6) {
    case 0:
      if (!input.empty()) input[at] ^= static_cast<uint8_t>(1u << (random() % 8));
      break;
    case 1:
      if (!input.empty()) input[at] = static_cast<uint8_t>(interesting(random));
      break;
    case 2: {
      const size_t width = (random() % 2) ? 4 : 8;
      uint64_t value = interesting(random);
      for (size_t i = 0; i < width && at + i < input.size(); ++i)
        input[at + i] = static_cast<uint8_t>(value >> (8 * i));
      break;
    }
    case 3: input.resize(at); break;
    case 4:
      if (input.size() < kMaxInput) input.insert(input.begin() + at, static_cast<uint8_t>(random()));
      break;
    default:
      if (!input.empty()) input.erase(input.begin() + at);
      break;
  }
}

// Most mutations would die in the 24-byte header: three times in four, the header's size
// field (bytes 16-23) is set to the input's real size, so the sections get exercised.
void keep_header_size(Bytes& input, std::mt19937_64& random) {
  if (input.size() < 24 || random() % 4 == 0) return;
  const uint64_t size = input.size();
  for (size_t i = 0; i < 8; ++i) input[16 + i] = static_cast<uint8_t>(size >> (8 * i));
}

void run_one(const Bytes& input) {
  // Loading may hold a small multiple of the input; running a loaded program may legitimately
  // hold more (outputs), but never more than kRunBudget.
  const size_t budget = 64 * input.size() + (256 << 10);
  constexpr size_t kRunBudget = size_t{256} << 20;
  edgert_fuzz::reset_peak();
  LLVMFuzzerTestOneInput(input.data(), input.size());
  if (edgert_fuzz::load_peak_growth() > budget || edgert_fuzz::peak_growth() > kRunBudget) {
    std::fprintf(stderr, "allocation bound exceeded: %zu bytes held for a %zu-byte input\n", edgert_fuzz::peak_growth(),
                 input.size());
    std::ofstream("crash-allocation.bin", std::ios::binary)
        .write(reinterpret_cast<const char*>(input.data()), static_cast<std::streamsize>(input.size()));
    std::abort();
  }
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 10;
  uint64_t seed = 1;
  std::vector<Bytes> corpus;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "-max_total_time=", 16) == 0)
      seconds = std::atof(argv[i] + 16);
    else if (std::strncmp(argv[i], "-seed=", 6) == 0)
      seed = std::strtoull(argv[i] + 6, nullptr, 10);
    else if (argv[i][0] != '-')
      add_path(argv[i], corpus);
  }
  if (corpus.empty()) corpus.push_back(Bytes());
  for (const Bytes& input : corpus) run_one(input);
  std::mt19937_64 random(seed);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  uint64_t executed = corpus.size();
  while (std::chrono::steady_clock::now() < deadline) {
    for (int batch = 0; batch < 64; ++batch, ++executed) {
      Bytes input = corpus[random() % corpus.size()];
      for (uint64_t rounds = 1 + random() % 8; rounds > 0; --rounds) mutate(input, random);
      keep_header_size(input, random);
      run_one(input);
    }
  }
  std::printf("executed %llu inputs in %.1f s (corpus of %zu); %zu runs delegated to cpu\n",
              static_cast<unsigned long long>(executed), seconds, corpus.size(), edgert_fuzz::delegated_runs());
  return 0;
}
