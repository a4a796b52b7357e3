/* load-dlls: loads DLLs and extension modules the way CPython does on Windows, so a wheel's
 * load checks can run where no Windows Python is at hand (under wine on Linux).
 *
 *   load-dlls.exe [--add-dll-directory DIR]... (--extension | --library) FILE ...
 *
 * Each DIR is added with AddDllDirectory (what os.add_dll_directory does); each FILE is loaded,
 * in order, with LoadLibraryExW and LOAD_LIBRARY_SEARCH_DEFAULT_DIRS |
 * LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR: the flags CPython (3.8 and later) uses for extension
 * modules and ctypes for libraries. An extension must export PyInit_<module>; it is not called
 * (that needs a real interpreter). python3.dll, which a stable-ABI extension imports, is the
 * interpreter's: here a stand-in beside this program (the application folder, as python.exe's
 * is), exporting the stable ABI's names (platforms/windows/python3.def).
 *
 * Exit status: 0 when everything loaded, 1 when a file did not (its name and Windows' error
 * on stderr), 2 for a bad command line. A file whose loading aborts the process (a component
 * registered twice) ends it with that file's status. */
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#include <shellapi.h>
#include <stdio.h>
#include <wchar.h>

static void report(const wchar_t* what, const wchar_t* file, DWORD error) {
  wchar_t message[512] = L"";
  FormatMessageW(FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS, NULL, error, 0,
                 message, sizeof(message) / sizeof(message[0]), NULL);
  fwprintf(stderr, L"load-dlls: %ls %ls: error %lu: %ls\n", what, file, error, message);
}

/* "...\\_C.pyd" and "...\\_C.cp311-win_amd64.pyd" -> "PyInit__C" */
static int init_name(const wchar_t* path, char* name, size_t size) {
  const wchar_t* base = path;
  for (const wchar_t* p = path; *p; ++p) {
    if (*p == L'\\' || *p == L'/') base = p + 1;
  }
  int written = snprintf(name, size, "PyInit_");
  for (const wchar_t* p = base; *p && *p != L'.'; ++p) {
    if (*p > 127 || (size_t)written + 1 >= size) return 0;
    name[written++] = (char)*p;
  }
  name[written] = '\0';
  return 1;
}

int main(void) {
  int argc = 0;
  wchar_t** argv = CommandLineToArgvW(GetCommandLineW(), &argc);
  const DWORD flags = LOAD_LIBRARY_SEARCH_DEFAULT_DIRS | LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR;
  if (argv == NULL) return 2;
  for (int i = 1; i < argc; ++i) {
    const wchar_t* option = argv[i];
    if (i + 1 >= argc) {
      fwprintf(stderr, L"load-dlls: %ls needs a value\n", option);
      return 2;
    }
    const wchar_t* value = argv[++i];
    if (wcscmp(option, L"--add-dll-directory") == 0) {
      if (AddDllDirectory(value) == NULL) {
        report(L"cannot add the DLL directory", value, GetLastError());
        return 1;
      }
    } else if (wcscmp(option, L"--extension") == 0 || wcscmp(option, L"--library") == 0) {
      HMODULE module = LoadLibraryExW(value, NULL, flags);
      if (module == NULL) {
        report(L"cannot load", value, GetLastError());
        return 1;
      }
      char name[256];
      if (option[2] == L'e' && (!init_name(value, name, sizeof(name)) ||
                                GetProcAddress(module, name) == NULL)) {
        fwprintf(stderr, L"load-dlls: %ls exports no %hs: not an extension module\n", value, name);
        return 1;
      }
    } else {
      fwprintf(stderr, L"load-dlls: unknown option %ls\n", option);
      return 2;
    }
  }
  LocalFree(argv);
  return 0;
}
