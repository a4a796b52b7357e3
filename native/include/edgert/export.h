/* Symbol visibility for edgert's shared libraries. Every library is built with
 * -fvisibility=hidden; only what these macros mark is exported. */
#ifndef EDGERT_EXPORT_H
#define EDGERT_EXPORT_H

#if defined(_WIN32)
#define EDGERT_HELPER_EXPORT __declspec(dllexport)
#define EDGERT_HELPER_IMPORT __declspec(dllimport)
#else
#define EDGERT_HELPER_EXPORT __attribute__((visibility("default")))
#define EDGERT_HELPER_IMPORT __attribute__((visibility("default")))
#endif

/* EDGERT_BUILDING_RUNTIME is defined while compiling libedgert itself. */
#if defined(EDGERT_BUILDING_RUNTIME)
#define EDGERT_API EDGERT_HELPER_EXPORT
#else
#define EDGERT_API EDGERT_HELPER_IMPORT
#endif

/* For the other component libraries: always exported from the library that defines it. */
#define EDGERT_COMPONENT_API EDGERT_HELPER_EXPORT

#endif
