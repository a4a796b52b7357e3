# edgert_install_package(): installs the headers and the relocatable CMake package
# (edgertConfig.cmake + edgertConfigVersion.cmake) describing every recorded SDK component.
#
# The component table comes from the global properties edgert_add_component() records:
# EDGERT_SDK_COMPONENTS, EDGERT_COMPONENT_<c>_LIBRARY, _DEPENDS and _KEEP.

set(EDGERT_PACKAGE_MODULE_DIR "${CMAKE_CURRENT_LIST_DIR}")
# Components that only register operators or backends: consumers keep them under --as-needed.
# The pipeline passes the manifest's list (components with `registers`); this is the default
# of a standalone build.
set(EDGERT_REGISTRATION_ONLY_COMPONENTS "kernels;kernels_quantized;backend_cpu;backend_cuda"
  CACHE STRING "CMake components that only register operators or backends")

function(_edgert_component_table out)
  get_property(components GLOBAL PROPERTY EDGERT_SDK_COMPONENTS)
  set(table "  set(components ${components})\n")
  string(APPEND table "  set(opt_in ${EDGERT_OPT_IN_COMPONENTS})\n")
  foreach(component IN LISTS components)
    get_property(library GLOBAL PROPERTY EDGERT_COMPONENT_${component}_LIBRARY)
    get_property(depends GLOBAL PROPERTY EDGERT_COMPONENT_${component}_DEPENDS)
    _edgert_kept(${component} keep)
    string(APPEND table "  set(library_${component} \"${library}\")\n")
    string(APPEND table "  set(depends_${component} ${depends})\n")
    string(APPEND table "  set(keep_${component} ${keep})\n")
  endforeach()
  set(${out} "${table}" PARENT_SCOPE)
endfunction()

function(_edgert_kept component out)
  get_property(keep GLOBAL PROPERTY EDGERT_COMPONENT_${component}_KEEP)
  if(component IN_LIST EDGERT_REGISTRATION_ONLY_COMPONENTS)
    set(keep TRUE)
  endif()
  if(NOT keep)
    set(keep FALSE)
  endif()
  set(${out} ${keep} PARENT_SCOPE)
endfunction()

# The C++ ABI the libraries are built with, recorded in the package: the standard library
# (libstdc++, libc++ or MSVC's) and libstdc++'s dual-ABI setting (_GLIBCXX_USE_CXX11_ABI).
function(_edgert_cxx_abi)
  include(CheckCXXSourceCompiles)
  set(CMAKE_REQUIRED_QUIET ON)
  check_cxx_source_compiles("#include <string>\n#ifndef __GLIBCXX__\n#error\n#endif\nint main(){}"
    EDGERT_HAS_LIBSTDCXX)
  check_cxx_source_compiles("#include <string>\n#ifndef _LIBCPP_VERSION\n#error\n#endif\nint main(){}"
    EDGERT_HAS_LIBCXX)
  set(abi "")
  if(EDGERT_HAS_LIBSTDCXX)
    set(stdlib "libstdc++")
    check_cxx_source_compiles("#include <string>\n#if !_GLIBCXX_USE_CXX11_ABI\n#error\n#endif\nint main(){}"
      EDGERT_GLIBCXX_CXX11_ABI)
    if(EDGERT_GLIBCXX_CXX11_ABI)
      set(abi 1)
    else()
      set(abi 0)
    endif()
  elseif(EDGERT_HAS_LIBCXX)
    set(stdlib "libc++")
  elseif(MSVC)
    set(stdlib "msvc")
  else()
    set(stdlib "unknown")
  endif()
  set(EDGERT_CXX_STDLIB "${stdlib}" PARENT_SCOPE)
  set(EDGERT_GLIBCXX_USE_CXX11_ABI "${abi}" PARENT_SCOPE)
endfunction()

# pkg-config files for builds without CMake: edgert.pc (the default components) and one
# edgert-<component>.pc per opt-in component. Registration-only libraries are kept under
# --as-needed; the search path is the package's lib folder (pkg-config has no other way).
function(_edgert_pkg_config generated)
  if(WIN32)
    return()
  endif()
  get_property(components GLOBAL PROPERTY EDGERT_SDK_COMPONENTS)
  set(cflags "-I\${includedir}")
  if(EDGERT_GLIBCXX_USE_CXX11_ABI MATCHES "^[01]$")
    string(APPEND cflags " -D_GLIBCXX_USE_CXX11_ABI=${EDGERT_GLIBCXX_USE_CXX11_ABI}")
  endif()
  set(header "prefix=\${pcfiledir}/../..\nlibdir=\${prefix}/lib\nincludedir=\${prefix}/include\n\n")
  set(kept "")
  set(plain "")
  foreach(component IN LISTS components)
    get_property(library GLOBAL PROPERTY EDGERT_COMPONENT_${component}_OUTPUT_NAME)
    _edgert_kept(${component} keep)
    if(component IN_LIST EDGERT_OPT_IN_COMPONENTS)
      _edgert_pkg_config_libs("-l${library}" "" libs)
      file(WRITE "${generated}/pkgconfig/edgert-${component}.pc" "${header}"
        "Name: edgert-${component}\nDescription: edgert component ${component}\n"
        "Version: ${PROJECT_VERSION}\nRequires: edgert = ${PROJECT_VERSION}\n"
        "Cflags: ${cflags}\nLibs: -L\${libdir} ${libs}\n")
    elseif(keep)
      list(PREPEND kept "-l${library}")
    else()
      list(PREPEND plain "-l${library}")
    endif()
  endforeach()
  _edgert_pkg_config_libs("${kept}" "${plain}" libs)
  file(WRITE "${generated}/pkgconfig/edgert.pc" "${header}"
    "Name: edgert\nDescription: A compact on-device inference runtime (C and C++ SDK)\n"
    "Version: ${PROJECT_VERSION}\nCflags: ${cflags}\nLibs: -L\${libdir} ${libs}\n")
endfunction()

# Each kept library is one token, -Wl,--push-state,--no-as-needed,-l<name>,--pop-state:
# pkg-config drops repeated flags, which would break a separate push/pop pair per file.
function(_edgert_pkg_config_libs kept plain out)
  set(libs "")
  foreach(library IN LISTS kept)
    if(APPLE)
      list(APPEND libs "${library}")
    else()
      list(APPEND libs "-Wl,--push-state,--no-as-needed,${library},--pop-state")
    endif()
  endforeach()
  list(APPEND libs ${plain} "-Wl,-rpath,\${libdir}")
  string(REPLACE ";" " " libs "${libs}")
  set(${out} "${libs}" PARENT_SCOPE)
endfunction()

function(edgert_install_package)
  _edgert_cxx_abi()
  _edgert_component_table(EDGERT_COMPONENT_TABLE)
  set(generated "${CMAKE_BINARY_DIR}/edgert-package")
  configure_file("${EDGERT_PACKAGE_MODULE_DIR}/edgertConfig.cmake.in"
    "${generated}/edgertConfig.cmake" @ONLY)
  configure_file("${EDGERT_PACKAGE_MODULE_DIR}/edgertConfigVersion.cmake.in"
    "${generated}/edgertConfigVersion.cmake" @ONLY)
  install(FILES "${generated}/edgertConfig.cmake" "${generated}/edgertConfigVersion.cmake"
    DESTINATION "${EDGERT_INSTALL_CMAKEDIR}" COMPONENT sdk)
  _edgert_pkg_config("${generated}")
  if(NOT WIN32)
    install(DIRECTORY "${generated}/pkgconfig/"
      DESTINATION "${EDGERT_INSTALL_LIBDIR}/pkgconfig" COMPONENT sdk)
  endif()
  if(WIN32)
    # Windows' SDK is the C API: MSVC cannot use a C++ API built by a GNU-ABI compiler, so
    # the C++ headers are not shipped there (docs/windows.md).
    install(DIRECTORY "${PROJECT_SOURCE_DIR}/include/edgert"
      DESTINATION "${EDGERT_INSTALL_INCLUDEDIR}" COMPONENT sdk FILES_MATCHING PATTERN "*.h")
  else()
    install(DIRECTORY "${PROJECT_SOURCE_DIR}/include/edgert"
      DESTINATION "${EDGERT_INSTALL_INCLUDEDIR}" COMPONENT sdk)
  endif()
endfunction()
