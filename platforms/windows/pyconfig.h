/* pyconfig.h for stable-ABI (Py_LIMITED_API) extensions built for 64-bit Windows by a GNU-style
 * compiler on another host (zig targeting x86_64-windows-gnu: UCRT, like CPython).
 *
 * Python.h includes pyconfig.h from its own folder: the release pipeline copies this host's
 * Python headers into the build tree and puts this file in place of the host's own
 * (platforms/windows/__init__.py). It states what CPython's PC/pyconfig.h states for a
 * release build on x86-64 Windows, as far as the limited API reads it: LLP64 sizes, a 64-bit
 * Py_ssize_t, and that the API is imported from the Python DLL. */
#ifndef Py_CONFIG_H
#define Py_CONFIG_H

#if !defined(_WIN64)
#error "this pyconfig.h describes 64-bit Windows"
#endif

#define MS_WIN32
#define MS_WIN64
#define MS_WINDOWS
#define NT_THREADS
#define WITH_THREAD
#define PY_HAVE_THREAD_NATIVE_ID

/* Extensions import the C API from the interpreter's DLL (python3.dll for the stable ABI). */
#define Py_ENABLE_SHARED 1
#define HAVE_DECLSPEC_DLL

/* LLP64: long is 32 bits; pointers, size_t and Py_ssize_t are 64. */
#define SIZEOF_SHORT 2
#define SIZEOF_INT 4
#define SIZEOF_LONG 4
#define SIZEOF_LONG_LONG 8
#define SIZEOF_DOUBLE 8
#define SIZEOF_FLOAT 4
#define SIZEOF_VOID_P 8
#define SIZEOF_SIZE_T 8
#define SIZEOF_TIME_T 8
#define SIZEOF_WCHAR_T 2
#define SIZEOF_FPOS_T 8
#define SIZEOF_OFF_T 4
#define SIZEOF_HKEY 8
#define SIZEOF__BOOL 1
#define ALIGNOF_LONG 4
#define ALIGNOF_SIZE_T 8

typedef long long Py_ssize_t;
typedef Py_ssize_t ssize_t;
#define HAVE_PY_SSIZE_T 1
#define PY_SSIZE_T_MAX 9223372036854775807LL

#define HAVE_LONG_LONG 1
#define PY_LONG_LONG long long
#define PY_LLONG_MIN (-9223372036854775807LL - 1)
#define PY_LLONG_MAX 9223372036854775807LL
#define PY_ULLONG_MAX 18446744073709551615ULL

#define HAVE_WCHAR_H 1
#define HAVE_STDARG_PROTOTYPES 1
#define Py_WCHAR_MAX 65535
#define PY_UNICODE_TYPE wchar_t
#define DONT_HAVE_SIG_ALARM
#define DONT_HAVE_SIG_PAUSE
#define LONG_BIT 32
#define WORD_BIT 32
#define PYLONG_BITS_IN_DIGIT 30

#endif /* Py_CONFIG_H */
