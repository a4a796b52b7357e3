# edgert_install_package(): installs the headers and the relocatable CMake package
# (edgertConfig.cmake + edgertConfigVersion.cmake) describing every recorded SDK component.
#
# The component table comes from the global properties edgert_add_component() records:
# EDGERT_SDK_COMPONENTS, EDGERT_COMPONENT_<c>_LIBRARY, _DEPENDS and _KEEP.

include(CMakePackageConfigHelpers)

set(EDGERT_PACKAGE_MODULE_DIR "${CMAKE_CURRENT_LIST_DIR}")
# Components that only register operators or backends: consumers keep them under --as-needed.
# The pipeline passes the manifest's list (components with `registers`); this is the default
# of a standalone build.
set(EDGERT_REGISTRATION_ONLY_COMPONENTS "kernels;kernels_quantized;backend_cpu;backend_cuda"
  CACHE STRING "CMake components that only register operators or backends")

function(_edgert_component_table out)
  get_property(components GLOBAL PROPERTY EDGERT_SDK_COMPONENTS)
  set(table "set(_edgert_components ${components})\n")
  string(APPEND table "set(_edgert_opt_in ${EDGERT_OPT_IN_COMPONENTS})\n")
  foreach(component IN LISTS components)
    get_property(library GLOBAL PROPERTY EDGERT_COMPONENT_${component}_LIBRARY)
    get_property(depends GLOBAL PROPERTY EDGERT_COMPONENT_${component}_DEPENDS)
    get_property(keep GLOBAL PROPERTY EDGERT_COMPONENT_${component}_KEEP)
    if(component IN_LIST EDGERT_REGISTRATION_ONLY_COMPONENTS)
      set(keep TRUE)
    endif()
    if(NOT keep)
      set(keep FALSE)
    endif()
    string(APPEND table "set(_edgert_${component}_library \"${library}\")\n")
    string(APPEND table "set(_edgert_${component}_depends ${depends})\n")
    string(APPEND table "set(_edgert_${component}_keep ${keep})\n")
  endforeach()
  set(${out} "${table}" PARENT_SCOPE)
endfunction()

function(edgert_install_package)
  _edgert_component_table(EDGERT_COMPONENT_TABLE)
  set(generated "${CMAKE_BINARY_DIR}/edgert-package")
  configure_file("${EDGERT_PACKAGE_MODULE_DIR}/edgertConfig.cmake.in"
    "${generated}/edgertConfig.cmake" @ONLY)
  write_basic_package_version_file("${generated}/edgertConfigVersion.cmake"
    VERSION "${PROJECT_VERSION}" COMPATIBILITY SameMajorVersion)
  install(FILES "${generated}/edgertConfig.cmake" "${generated}/edgertConfigVersion.cmake"
    DESTINATION "${EDGERT_INSTALL_CMAKEDIR}" COMPONENT sdk)
  install(DIRECTORY "${PROJECT_SOURCE_DIR}/include/edgert"
    DESTINATION "${EDGERT_INSTALL_INCLUDEDIR}" COMPONENT sdk)
endfunction()
