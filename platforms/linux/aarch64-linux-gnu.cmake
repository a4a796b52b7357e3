# CMake toolchain: Linux aarch64 built on another Linux machine with Debian's cross gcc
# (apt-get install g++-aarch64-linux-gnu). The release pipeline passes it for
# `--arch aarch64` (platforms/linux/cross.toml); a consumer of an aarch64 SDK can use it too:
#   cmake -S app -B build -DCMAKE_TOOLCHAIN_FILE=.../aarch64-linux-gnu.cmake -Dedgert_DIR=...
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

# The compilers know their own root (/usr/aarch64-linux-gnu: the target's C library and
# libstdc++). Libraries and headers are looked up there only; programs (python, ninja) are
# this machine's. Packages are looked up in both: a root-only lookup would re-root
# CMAKE_PREFIX_PATH, and an SDK folder given there (an unpacked wheel) would not be found.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)

# The Python extension uses the stable ABI (abi3) and links no libpython: it needs only the
# headers, which the pipeline names (-DPython_INCLUDE_DIR, platforms/linux/cross.py);
# no interpreter of the target machine is needed to build.
