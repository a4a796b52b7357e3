/* edgert._C: a thin layer over the C API (edgert.h) and the thread pool C API (threadpool.h).
 * Built against the CPython stable ABI; tensors cross as (bytes, shape tuple, dtype code). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#include "edgert/edgert.h"
#include "edgert/threadpool.h"

#define MAX_DIMS 8
#define CAPSULE_NAME "edgert._C.program"

static PyObject* native_error; /* edgert._C.NativeError(code, message) */

static PyObject* raise_status(edgert_status status) {
  const char* message = edgert_last_error();
  /* Messages may quote program bytes (an operator name that is not UTF-8): never let the
     decoding itself fail. */
  PyObject* text = PyUnicode_DecodeUTF8(message, (Py_ssize_t)strlen(message), "replace");
  PyObject* args = text == NULL ? NULL : Py_BuildValue("(iN)", (int)status, text);
  if (args != NULL) {
    PyErr_SetObject(native_error, args);
    Py_DECREF(args);
  }
  return NULL;
}

static void free_program(PyObject* capsule) {
  edgert_program_free((edgert_program*)PyCapsule_GetPointer(capsule, CAPSULE_NAME));
}

/* The program a handle made by load() holds; anything else is a TypeError (not the
   ValueError PyCapsule_GetPointer would raise with its own wording). */
static edgert_program* program_of(PyObject* capsule) {
  if (!PyCapsule_IsValid(capsule, CAPSULE_NAME)) {
    PyErr_SetString(PyExc_TypeError, "expected a program handle made by edgert._C.load()");
    return NULL;
  }
  return (edgert_program*)PyCapsule_GetPointer(capsule, CAPSULE_NAME);
}

static PyObject* shape_tuple(const int64_t* shape, size_t ndim) {
  PyObject* tuple = PyTuple_New((Py_ssize_t)ndim);
  for (size_t i = 0; tuple != NULL && i < ndim; ++i) {
    PyTuple_SetItem(tuple, (Py_ssize_t)i, PyLong_FromLongLong(shape[i]));
  }
  return tuple;
}

static PyObject* py_version(PyObject* Py_UNUSED(self), PyObject* Py_UNUSED(unused)) {
  return PyUnicode_FromString(edgert_version());
}

typedef size_t (*count_fn)(void);
typedef const char* (*text_fn)(size_t);

static PyObject* registry_list(count_fn count, text_fn name, text_fn owner) {
  size_t total = count();
  PyObject* list = PyList_New(0);
  for (size_t i = 0; list != NULL && i < total; ++i) {
    const char* op = name(i);
    const char* by = owner(i);
    PyObject* item = Py_BuildValue("(NN)",
                                   PyUnicode_DecodeUTF8(op ? op : "", (Py_ssize_t)strlen(op ? op : ""), "replace"),
                                   PyUnicode_DecodeUTF8(by ? by : "", (Py_ssize_t)strlen(by ? by : ""), "replace"));
    if (item == NULL || PyList_Append(list, item) != 0) {
      Py_XDECREF(item);
      Py_DECREF(list);
      return NULL;
    }
    Py_DECREF(item);
  }
  return list;
}

static PyObject* py_operators(PyObject* Py_UNUSED(self), PyObject* Py_UNUSED(unused)) {
  return registry_list(edgert_operator_count, edgert_operator_name, edgert_operator_owner);
}

static PyObject* py_backends(PyObject* Py_UNUSED(self), PyObject* Py_UNUSED(unused)) {
  return registry_list(edgert_backend_count, edgert_backend_name, edgert_backend_owner);
}

static PyObject* py_threadpool_size(PyObject* Py_UNUSED(self), PyObject* Py_UNUSED(unused)) {
  return PyLong_FromSize_t(edgert_threadpool_size());
}

static PyObject* py_set_threadpool_size(PyObject* Py_UNUSED(self), PyObject* args) {
  Py_ssize_t threads = 0;
  if (!PyArg_ParseTuple(args, "n", &threads)) return NULL;
  if (threads < 0) {
    PyErr_SetString(PyExc_ValueError, "thread count must be >= 0");
    return NULL;
  }
  edgert_threadpool_set_size((size_t)threads);
  Py_RETURN_NONE;
}

static PyObject* py_threadpool_instance(PyObject* Py_UNUSED(self), PyObject* Py_UNUSED(unused)) {
  return PyLong_FromVoidPtr((void*)edgert_threadpool_instance());
}

static PyObject* py_load(PyObject* Py_UNUSED(self), PyObject* args) {
  const char* data = NULL;
  Py_ssize_t size = 0;
  if (!PyArg_ParseTuple(args, "y#", &data, &size)) return NULL;
  edgert_program* program = NULL;
  edgert_status status = edgert_program_load_bytes(data, (size_t)size, &program);
  if (status != EDGERT_OK) return raise_status(status);
  return PyCapsule_New(program, CAPSULE_NAME, free_program);
}

static PyObject* py_counts(PyObject* Py_UNUSED(self), PyObject* args) {
  PyObject* capsule = NULL;
  if (!PyArg_ParseTuple(args, "O", &capsule)) return NULL;
  edgert_program* program = program_of(capsule);
  if (program == NULL) return NULL;
  return Py_BuildValue("(nn)", (Py_ssize_t)edgert_program_input_count(program),
                       (Py_ssize_t)edgert_program_output_count(program));
}

static PyObject* py_input_info(PyObject* Py_UNUSED(self), PyObject* args) {
  PyObject* capsule = NULL;
  Py_ssize_t index = 0;
  if (!PyArg_ParseTuple(args, "On", &capsule, &index)) return NULL;
  edgert_program* program = program_of(capsule);
  if (program == NULL) return NULL;
  edgert_dtype dtype = EDGERT_FLOAT32;
  int64_t shape[MAX_DIMS];
  size_t ndim = 0;
  edgert_status status =
      edgert_program_input_info(program, (size_t)index, &dtype, shape, MAX_DIMS, &ndim);
  if (status != EDGERT_OK) return raise_status(status);
  PyObject* dims = shape_tuple(shape, ndim < MAX_DIMS ? ndim : MAX_DIMS);
  return dims == NULL ? NULL : Py_BuildValue("(iN)", (int)dtype, dims);
}

static PyObject* py_set_backends(PyObject* Py_UNUSED(self), PyObject* args) {
  PyObject* capsule = NULL;
  const char* names = NULL;
  if (!PyArg_ParseTuple(args, "Os", &capsule, &names)) return NULL;
  edgert_program* program = program_of(capsule);
  if (program == NULL) return NULL;
  edgert_status status = edgert_program_set_backends(program, names);
  if (status != EDGERT_OK) return raise_status(status);
  Py_RETURN_NONE;
}

static PyObject* py_delegated_nodes(PyObject* Py_UNUSED(self), PyObject* args) {
  PyObject* capsule = NULL;
  const char* name = NULL;
  if (!PyArg_ParseTuple(args, "Os", &capsule, &name)) return NULL;
  edgert_program* program = program_of(capsule);
  if (program == NULL) return NULL;
  return PyLong_FromSize_t(edgert_program_delegated_nodes(program, name));
}

/* One input given as (bytes, shape tuple, dtype code). */
static int set_one_input(edgert_program* program, size_t index, PyObject* item) {
  PyObject* data = NULL;
  PyObject* shape_object = NULL;
  int dtype = 0;
  if (!PyArg_ParseTuple(item, "SO!i", &data, &PyTuple_Type, &shape_object, &dtype)) return -1;
  Py_ssize_t ndim = PyTuple_Size(shape_object);
  if (ndim > MAX_DIMS) {
    PyErr_SetString(PyExc_ValueError, "too many dimensions");
    return -1;
  }
  int64_t shape[MAX_DIMS];
  for (Py_ssize_t i = 0; i < ndim; ++i) {
    shape[i] = PyLong_AsLongLong(PyTuple_GetItem(shape_object, i));
    if (PyErr_Occurred()) return -1;
  }
  char* bytes = NULL;
  Py_ssize_t size = 0;
  if (PyBytes_AsStringAndSize(data, &bytes, &size) != 0) return -1;
  edgert_status status = edgert_program_set_input(program, index, (edgert_dtype)dtype, shape,
                                                  (size_t)ndim, bytes, (size_t)size);
  if (status != EDGERT_OK) {
    raise_status(status);
    return -1;
  }
  return 0;
}

static PyObject* collect_outputs(edgert_program* program) {
  size_t count = edgert_program_output_count(program);
  PyObject* list = PyList_New((Py_ssize_t)count);
  for (size_t i = 0; list != NULL && i < count; ++i) {
    edgert_dtype dtype;
    const int64_t* shape = NULL;
    size_t ndim = 0, nbytes = 0;
    const void* data = NULL;
    edgert_status status = edgert_program_output(program, i, &dtype, &shape, &ndim, &data, &nbytes);
    if (status != EDGERT_OK) {
      Py_DECREF(list);
      return raise_status(status);
    }
    PyObject* dims = shape_tuple(shape, ndim);
    PyObject* item = dims == NULL ? NULL
                                  : Py_BuildValue("(y#Ni)", (const char*)data, (Py_ssize_t)nbytes,
                                                  dims, (int)dtype);
    if (item == NULL) {
      Py_DECREF(list);
      return NULL;
    }
    PyList_SetItem(list, (Py_ssize_t)i, item);
  }
  return list;
}

static PyObject* py_run(PyObject* Py_UNUSED(self), PyObject* args) {
  PyObject* capsule = NULL;
  PyObject* inputs = NULL;
  if (!PyArg_ParseTuple(args, "OO!", &capsule, &PyList_Type, &inputs)) return NULL;
  edgert_program* program = program_of(capsule);
  if (program == NULL) return NULL;
  /* A private copy of the list: reading an item can run Python code, which must not be able
     to free the items still to be read. */
  PyObject* items = PyList_GetSlice(inputs, 0, PyList_Size(inputs));
  if (items == NULL) return NULL;
  Py_ssize_t count = PyList_Size(items);
  for (Py_ssize_t i = 0; i < count; ++i) {
    if (set_one_input(program, (size_t)i, PyList_GetItem(items, i)) != 0) {
      Py_DECREF(items);
      return NULL;
    }
  }
  Py_DECREF(items);
  edgert_status status;
  Py_BEGIN_ALLOW_THREADS
  status = edgert_program_run(program);
  Py_END_ALLOW_THREADS
  if (status != EDGERT_OK) return raise_status(status);
  return collect_outputs(program);
}

static PyMethodDef methods[] = {
    {"version", py_version, METH_NOARGS, "edgert version string"},
    {"operators", py_operators, METH_NOARGS, "[(name, owner library path)] sorted by name"},
    {"backends", py_backends, METH_NOARGS, "[(name, owner library path)] sorted by name"},
    {"threadpool_size", py_threadpool_size, METH_NOARGS, "threads of the process pool"},
    {"set_threadpool_size", py_set_threadpool_size, METH_VARARGS, "resize the process pool"},
    {"threadpool_instance", py_threadpool_instance, METH_NOARGS, "address of the process pool"},
    {"load", py_load, METH_VARARGS, "load(bytes) -> program handle"},
    {"counts", py_counts, METH_VARARGS, "counts(handle) -> (inputs, outputs)"},
    {"input_info", py_input_info, METH_VARARGS, "input_info(handle, i) -> (dtype, shape)"},
    {"set_backends", py_set_backends, METH_VARARGS, "set_backends(handle, 'a,b')"},
    {"delegated_nodes", py_delegated_nodes, METH_VARARGS, "delegated_nodes(handle, name)"},
    {"run", py_run, METH_VARARGS, "run(handle, [(bytes, shape, dtype)]) -> same for outputs"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_C",
                                    "the native layer under the edgert package", -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__C(void) {
  PyObject* created = PyModule_Create(&module);
  if (created == NULL) return NULL;
  native_error = PyErr_NewExceptionWithDoc(
      "edgert._C.NativeError", "a C API call failed: args are (edgert_status code, message)",
      NULL, NULL);
  if (native_error == NULL || PyModule_AddObject(created, "NativeError", native_error) != 0) {
    Py_XDECREF(native_error);
    Py_DECREF(created);
    return NULL;
  }
  Py_INCREF(native_error); /* the module's reference was stolen; keep ours */
  return created;
}
