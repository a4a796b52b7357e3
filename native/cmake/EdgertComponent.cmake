# edgert_add_component(): one shared library per component, built once, file name == SONAME.
#
#   edgert_add_component(<component>
#     LIBRARY <output name>          # libedgert_kernels.so <- "edgert_kernels"
#     SOURCES <files...>
#     [LINKS <targets...>]           # other edgert targets or system libraries
#     [KEEP_LINKS <targets...>]      # registration-only libraries: kept even under --as-needed
#     [DEFINITIONS <macros...>]      # private compile definitions
#     [PLUGIN])                      # not a CMake SDK component (e.g. the export plugin)
#
# Creates the target edgert_<component>, installs it into <package>/lib with the run-time
# search path the release pipeline decided for it (EDGERT_SEARCH_PATH_<component>), and
# records it for the installed CMake package.
#
# Search paths are decided once, by the pipeline (the manifest's layout and the platform's
# rule, release/building/resolved.py search_paths()); this project only receives them. A plain CMake
# build without them links no run-time search path: build through
# `python -m release build --until install` to get a tree that runs in place.

include(GNUInstallDirs)

set(EDGERT_CMAKE_DIR "${CMAKE_CURRENT_LIST_DIR}")

set(EDGERT_INSTALL_LIBDIR "${EDGERT_PACKAGE_DIR}/lib")
set(EDGERT_INSTALL_INCLUDEDIR "${EDGERT_PACKAGE_DIR}/include")
set(EDGERT_INSTALL_CMAKEDIR "${EDGERT_PACKAGE_DIR}/lib/cmake/edgert")

option(EDGERT_MONOLITHIC
  "Never shipped: build components as static archives linked whole into the extension (the layout before components were shared libraries; benchmarks compare its size)"
  OFF)

# Link feature: a registration-only library stays on the link line under --as-needed.
# (The monolithic build links its registration archives whole in native/python instead.)
if(EDGERT_MONOLITHIC)
  set(CMAKE_LINK_LIBRARY_USING_EDGERT_KEEP "<LINK_ITEM>")
elseif(APPLE AND CMAKE_HOST_APPLE)
  # Apple's linker drops a dylib nothing references under -dead_strip_dylibs; a
  # -needed_library dylib is always loaded (ld64 takes a path there).
  set(CMAKE_LINK_LIBRARY_USING_EDGERT_KEEP "LINKER:-needed_library,<LINK_ITEM>")
elseif(APPLE)
  # Cross-built with zig (docs/macos.md): its linker keeps every dylib of the link line
  # unless -dead_strip_dylibs, and reads -needed_library as a library name, not a path.
  set(CMAKE_LINK_LIBRARY_USING_EDGERT_KEEP "<LINK_ITEM>")
elseif(WIN32)
  set(CMAKE_LINK_LIBRARY_USING_EDGERT_KEEP "<LINK_ITEM>")
else()
  set(CMAKE_LINK_LIBRARY_USING_EDGERT_KEEP
      "LINKER:--push-state,--no-as-needed" "<LINK_ITEM>" "LINKER:--pop-state")
endif()
set(CMAKE_LINK_LIBRARY_USING_EDGERT_KEEP_SUPPORTED TRUE)

# Build paths never leak into binaries.
add_compile_options(
  "-ffile-prefix-map=${CMAKE_SOURCE_DIR}=edgert"
  "-ffile-prefix-map=${CMAKE_BINARY_DIR}=build")
# Floating-point expressions are computed as written: no multiply and add fused into one FMA
# (GCC's default for C++, Clang's within one expression), which would round differently on
# processors that have FMA (aarch64, AVX-512 code paths) than on those that do not. The
# kernels' documented arithmetic (docs/operators.md, docs/kernels.md) relies on it.
add_compile_options("-ffp-contract=off")
if(CMAKE_SYSTEM_NAME STREQUAL "Linux")
  add_link_options("LINKER:--enable-new-dtags")
elseif(WIN32 AND NOT MSVC)
  # No PDB and no debug directory: a PDB's GUID differs per build folder, so without this two
  # builds of the same sources would differ (and each DLL would double in size).
  add_link_options("-s")
endif()

# Each shared library exports exactly its API (cmake/edgert.map): no libstdc++ instantiation
# leaks out of one component into another's symbol lookup.
function(edgert_export_only_api target)
  get_target_property(type ${target} TYPE)
  if(CMAKE_SYSTEM_NAME STREQUAL "Linux" AND (type STREQUAL "SHARED_LIBRARY" OR type STREQUAL "MODULE_LIBRARY"))
    target_link_options(${target} PRIVATE "LINKER:--version-script=${EDGERT_CMAKE_DIR}/edgert.map")
    set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS "${EDGERT_CMAKE_DIR}/edgert.map")
  endif()
endfunction()

function(edgert_add_component component)
  cmake_parse_arguments(ARG "PLUGIN" "LIBRARY" "SOURCES;LINKS;KEEP_LINKS;DEFINITIONS" ${ARGN})
  if(NOT ARG_LIBRARY OR NOT ARG_SOURCES)
    message(FATAL_ERROR "edgert_add_component(${component}): LIBRARY and SOURCES are required")
  endif()
  set(target "edgert_${component}")
  if(EDGERT_MONOLITHIC AND NOT ARG_PLUGIN)
    add_library(${target} STATIC ${ARG_SOURCES})
  else()
    add_library(${target} SHARED ${ARG_SOURCES})
  endif()
  add_library(edgert::${component} ALIAS ${target})
  set_target_properties(${target} PROPERTIES
    OUTPUT_NAME "${ARG_LIBRARY}"
    INSTALL_RPATH "${EDGERT_SEARCH_PATH_${component}}"
    # Every library lands in one build folder and is linked with its final, relative
    # search path: no build path is ever written into a shipped binary, so builds in
    # different folders give identical bytes, and install needs no rewrite.
    LIBRARY_OUTPUT_DIRECTORY "${CMAKE_BINARY_DIR}/lib"
    RUNTIME_OUTPUT_DIRECTORY "${CMAKE_BINARY_DIR}/lib"
    BUILD_WITH_INSTALL_RPATH ON)
  if(WIN32)
    # A DLL is named as on Linux without "lib" (edgert_kernels.dll), whichever compiler built
    # it: the names are the SDK's interface. Its import library is <name>.lib, the name MSVC
    # users link (a GNU-built COFF import library serves MSVC's linker too).
    set_target_properties(${target} PROPERTIES PREFIX "" IMPORT_PREFIX "" IMPORT_SUFFIX ".lib")
  endif()
  edgert_export_only_api(${target})
  target_include_directories(${target} PUBLIC
    "$<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>"
    "$<INSTALL_INTERFACE:${EDGERT_INSTALL_INCLUDEDIR}>")
  if(ARG_DEFINITIONS)
    target_compile_definitions(${target} PRIVATE ${ARG_DEFINITIONS})
  endif()
  # A registration-only component stays "kept" wherever it is linked: CMake refuses a link
  # item that appears both with and without the EDGERT_KEEP feature in one link line.
  foreach(link IN LISTS ARG_LINKS)
    set(keep FALSE)
    if(link MATCHES "^edgert_(.+)$")
      get_property(keep GLOBAL PROPERTY EDGERT_COMPONENT_${CMAKE_MATCH_1}_KEEP)
    endif()
    if(keep)
      target_link_libraries(${target} PUBLIC "$<LINK_LIBRARY:EDGERT_KEEP,${link}>")
    else()
      target_link_libraries(${target} PUBLIC ${link})
    endif()
  endforeach()
  foreach(keep IN LISTS ARG_KEEP_LINKS)
    target_link_libraries(${target} PUBLIC "$<LINK_LIBRARY:EDGERT_KEEP,${keep}>")
  endforeach()
  install(TARGETS ${target}
    LIBRARY DESTINATION "${EDGERT_INSTALL_LIBDIR}" COMPONENT ${component}
    RUNTIME DESTINATION "${EDGERT_INSTALL_LIBDIR}" COMPONENT ${component}
    ARCHIVE DESTINATION "${EDGERT_INSTALL_LIBDIR}" COMPONENT ${component})
  if(NOT ARG_PLUGIN)
    set(dependencies "")
    foreach(link IN LISTS ARG_LINKS ARG_KEEP_LINKS)
      if(link MATCHES "^edgert_(.+)$")
        list(APPEND dependencies "${CMAKE_MATCH_1}")
      endif()
    endforeach()
    set_property(GLOBAL APPEND PROPERTY EDGERT_SDK_COMPONENTS "${component}")
    if(WIN32)
      set(file "${ARG_LIBRARY}.dll")   # no prefix on Windows (above)
    else()
      set(file "${CMAKE_SHARED_LIBRARY_PREFIX}${ARG_LIBRARY}${CMAKE_SHARED_LIBRARY_SUFFIX}")
    endif()
    set_property(GLOBAL PROPERTY EDGERT_COMPONENT_${component}_LIBRARY "${file}")
    set_property(GLOBAL PROPERTY EDGERT_COMPONENT_${component}_OUTPUT_NAME "${ARG_LIBRARY}")
    set_property(GLOBAL PROPERTY EDGERT_COMPONENT_${component}_DEPENDS "${dependencies}")
  endif()
endfunction()

# Marks a component whose library only registers things (operators, backends): consumers
# must keep it on the link line even under --as-needed. Call after edgert_add_component.
#
# On Windows a DLL is imported only when one of its symbols is used, whatever the link line
# says: whoever links a registration library also asks for its marker function
# (edgert_<component>_component), which keeps the import.
function(edgert_component_registers component)
  set_property(GLOBAL PROPERTY EDGERT_COMPONENT_${component}_KEEP TRUE)
  if(MSVC)
    target_link_options(edgert_${component} INTERFACE "LINKER:/INCLUDE:edgert_${component}_component")
  elseif(WIN32)
    target_link_options(edgert_${component} INTERFACE "LINKER:-u,edgert_${component}_component")
  endif()
endfunction()
