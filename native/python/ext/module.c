/* edgert._C: a thin layer over the C API (edgert.h) and the thread pool C API (threadpool.h).
 * Built against the CPython stable ABI (3.9); inputs and outputs cross as numpy arrays. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#if defined(_WIN32)
#include <windows.h>
#endif

#include "edgert/edgert.h"
#include "edgert/threadpool.h"

#define MAX_DIMS 8
#define CAPSULE_NAME "edgert._C.program"

static PyObject* native_error; /* edgert._C.NativeError(code, message) */

/* ------------------------------------------------------------------------ buffer protocol
 *
 * The buffer protocol (Py_buffer, PyObject_GetBuffer, PyBuffer_Release) joined the limited
 * API in 3.11, with the layout and functions every CPython 3 has. A 3.9 stable-ABI module
 * declares them itself and looks the functions up when it loads: on Linux and macOS the
 * interpreter of every version exports them; on Windows, python3.dll does from 3.11 on, and
 * for 3.9 and 3.10 they are found in the versioned DLL (python39.dll) beside it. Where they
 * cannot be found, inputs and outputs go through bytes instead (slower, same results). */
typedef struct {
  void* buf;
  PyObject* obj;
  Py_ssize_t len;
  Py_ssize_t itemsize;
  int readonly;
  int ndim;
  char* format;
  Py_ssize_t* shape;
  Py_ssize_t* strides;
  Py_ssize_t* suboffsets;
  void* internal;
} buffer_view; /* Py_buffer */

#define BUFFER_WRITABLE 0x0001
#define BUFFER_FORMAT 0x0004
#define BUFFER_C_CONTIGUOUS (0x0020 | 0x0010 | 0x0008) /* PyBUF_C_CONTIGUOUS */

typedef int (*get_buffer_fn)(PyObject* exporter, buffer_view* view, int flags);
typedef void (*release_buffer_fn)(buffer_view* view);
static get_buffer_fn get_buffer;
static release_buffer_fn release_buffer;
static int host_little_endian;

#if defined(_WIN32)
static void find_buffer_functions(void) {
  HMODULE python = NULL;
  /* The module that defines PyLong_FromLong is the interpreter's versioned DLL. */
  if (!GetModuleHandleExW(GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS | GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT,
                          (LPCWSTR)(void*)&PyLong_FromLong, &python)) {
    return;
  }
  get_buffer = (get_buffer_fn)(void*)GetProcAddress(python, "PyObject_GetBuffer");
  release_buffer = (release_buffer_fn)(void*)GetProcAddress(python, "PyBuffer_Release");
  if (get_buffer == NULL || release_buffer == NULL) get_buffer = NULL, release_buffer = NULL;
}
#else
PyAPI_FUNC(int) PyObject_GetBuffer(PyObject* exporter, buffer_view* view, int flags);
PyAPI_FUNC(void) PyBuffer_Release(buffer_view* view);
static void find_buffer_functions(void) {
  get_buffer = PyObject_GetBuffer;
  release_buffer = PyBuffer_Release;
}
#endif

/* What configure() gave: numpy's pieces and the package's converter. */
static struct {
  int configured;
  int buffers;          /* read and write arrays' memory directly (else through bytes) */
  PyObject* ndarray;    /* numpy.ndarray: the exact type read in place */
  PyObject* empty;      /* numpy.empty */
  PyObject* frombuffer; /* numpy.frombuffer (without the buffer protocol) */
  PyObject* dtypes;     /* numpy dtypes indexed by edgert_dtype code, little-endian */
  PyObject* convert;    /* array-like -> C-contiguous little-endian array of an edgert dtype */
} numpy;

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
    PyObject* item =
        Py_BuildValue("(NN)", PyUnicode_DecodeUTF8(op ? op : "", (Py_ssize_t)strlen(op ? op : ""), "replace"),
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

/* [(operator, "name:kind,..." or None)] in the registry's order. */
static PyObject* py_operator_attributes(PyObject* Py_UNUSED(self), PyObject* Py_UNUSED(unused)) {
  size_t total = edgert_operator_count();
  PyObject* list = PyList_New(0);
  for (size_t i = 0; list != NULL && i < total; ++i) {
    const char* op = edgert_operator_name(i);
    const char* declared = edgert_operator_attributes(i);
    PyObject* text = Py_None;
    if (declared == NULL) {
      Py_INCREF(Py_None);
    } else {
      text = PyUnicode_FromString(declared);
    }
    PyObject* item = text == NULL ? NULL : Py_BuildValue("(sN)", op ? op : "", text);
    if (item == NULL || PyList_Append(list, item) != 0) {
      Py_XDECREF(item);
      Py_DECREF(list);
      return NULL;
    }
    Py_DECREF(item);
  }
  return list;
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

static PyObject* new_handle(edgert_program* program) {
  PyObject* capsule = PyCapsule_New(program, CAPSULE_NAME, free_program);
  if (capsule == NULL) edgert_program_free(program);
  return capsule;
}

/* edgert_program_load_borrowed's release: drops the reference to the bytes object, from
   whichever thread frees the last constant (with the GIL held or not). */
static void release_reference(void* object) {
  if (!Py_IsInitialized()) return; /* after finalization: the process is ending anyway */
  PyGILState_STATE state = PyGILState_Ensure();
  Py_DECREF((PyObject*)object);
  PyGILState_Release(state);
}

static PyObject* py_load(PyObject* Py_UNUSED(self), PyObject* args) {
  PyObject* bytes = NULL;
  if (!PyArg_ParseTuple(args, "O!", &PyBytes_Type, &bytes)) return NULL;
  char* data = NULL;
  Py_ssize_t size = 0;
  if (PyBytes_AsStringAndSize(bytes, &data, &size) != 0) return NULL;
  edgert_program* program = NULL;
  Py_INCREF(bytes); /* the program's: released through release_reference */
  edgert_status status;
  Py_BEGIN_ALLOW_THREADS status = edgert_program_load_borrowed(data, (size_t)size, release_reference, bytes, &program);
  Py_END_ALLOW_THREADS if (status != EDGERT_OK) return raise_status(status);
  return new_handle(program);
}

static PyObject* py_load_file(PyObject* Py_UNUSED(self), PyObject* args) {
  const char* path = NULL;
  if (!PyArg_ParseTuple(args, "y", &path)) return NULL;
  edgert_program* program = NULL;
  edgert_status status;
  Py_BEGIN_ALLOW_THREADS status = edgert_program_load_file(path, &program);
  Py_END_ALLOW_THREADS if (status != EDGERT_OK) return raise_status(status);
  return new_handle(program);
}

static PyObject* py_memory_plan(PyObject* Py_UNUSED(self), PyObject* args) {
  PyObject* capsule = NULL;
  if (!PyArg_ParseTuple(args, "O", &capsule)) return NULL;
  edgert_program* program = program_of(capsule);
  if (program == NULL) return NULL;
  edgert_memory_plan plan;
  edgert_status status;
  Py_BEGIN_ALLOW_THREADS /* takes the program's lock: never while holding the GIL */
      status = edgert_program_memory_plan(program, &plan);
  Py_END_ALLOW_THREADS if (status != EDGERT_OK) return raise_status(status);
  return Py_BuildValue("(KKKKKI)", (unsigned long long)plan.peak_bytes, (unsigned long long)plan.input_bytes,
                       (unsigned long long)plan.output_bytes, (unsigned long long)plan.constant_bytes,
                       (unsigned long long)plan.released_values, (unsigned int)plan.constants);
}

/* *slot = a new reference to value, dropping the one it held. */
static void replace_reference(PyObject** slot, PyObject* value) {
  PyObject* old = *slot;
  Py_INCREF(value);
  *slot = value;
  Py_XDECREF(old);
}

static PyObject* py_configure(PyObject* Py_UNUSED(self), PyObject* args) {
  PyObject *ndarray, *empty, *frombuffer, *dtypes, *convert;
  int buffers = 1;
  if (!PyArg_ParseTuple(args, "OOOO!O|p", &ndarray, &empty, &frombuffer, &PyTuple_Type, &dtypes, &convert, &buffers)) {
    return NULL;
  }
  if (PyTuple_Size(dtypes) != EDGERT_BOOL + 1) {
    PyErr_SetString(PyExc_ValueError, "configure: dtypes holds one numpy dtype per edgert_dtype");
    return NULL;
  }
  replace_reference(&numpy.ndarray, ndarray);
  replace_reference(&numpy.empty, empty);
  replace_reference(&numpy.frombuffer, frombuffer);
  replace_reference(&numpy.dtypes, dtypes);
  replace_reference(&numpy.convert, convert);
  numpy.buffers = buffers && get_buffer != NULL;
  numpy.configured = 1;
  return PyBool_FromLong(numpy.buffers);
}

static PyObject* py_counts(PyObject* Py_UNUSED(self), PyObject* args) {
  PyObject* capsule = NULL;
  if (!PyArg_ParseTuple(args, "O", &capsule)) return NULL;
  edgert_program* program = program_of(capsule);
  if (program == NULL) return NULL;
  return Py_BuildValue("(nn)", (Py_ssize_t)edgert_program_input_count(program),
                       (Py_ssize_t)edgert_program_output_count(program));
}

static PyObject* py_format_version(PyObject* Py_UNUSED(self), PyObject* args) {
  PyObject* capsule = NULL;
  if (!PyArg_ParseTuple(args, "O", &capsule)) return NULL;
  edgert_program* program = program_of(capsule);
  if (program == NULL) return NULL;
  return PyLong_FromUnsignedLong((unsigned long)edgert_program_format_version(program));
}

static PyObject* py_last_warning(PyObject* Py_UNUSED(self), PyObject* Py_UNUSED(unused)) {
  return PyUnicode_DecodeUTF8(edgert_last_warning(), (Py_ssize_t)strlen(edgert_last_warning()), "replace");
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
  edgert_status status = edgert_program_input_info(program, (size_t)index, &dtype, shape, MAX_DIMS, &ndim);
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
  edgert_status status;
  Py_BEGIN_ALLOW_THREADS /* takes the program's lock: never while holding the GIL */
      status = edgert_program_set_backends(program, names);
  Py_END_ALLOW_THREADS if (status != EDGERT_OK) return raise_status(status);
  Py_RETURN_NONE;
}

static PyObject* py_delegated_nodes(PyObject* Py_UNUSED(self), PyObject* args) {
  PyObject* capsule = NULL;
  const char* name = NULL;
  if (!PyArg_ParseTuple(args, "Os", &capsule, &name)) return NULL;
  edgert_program* program = program_of(capsule);
  if (program == NULL) return NULL;
  size_t count;
  Py_BEGIN_ALLOW_THREADS /* takes the program's lock: never while holding the GIL */
      count = edgert_program_delegated_nodes(program, name);
  Py_END_ALLOW_THREADS return PyLong_FromSize_t(count);
}

#define INPUTS_ON_STACK 8 /* inputs and outputs described on the stack; more on the heap */

/* ------------------------------------------------------------------------------ running
 *
 * run(handle, arrays) binds each array's memory as an input without copying it (the buffer
 * protocol; numpy arrays of a supported dtype, C-contiguous and little-endian) and runs with
 * the GIL released, in one edgert_program_run_with call: under the program's lock, so
 * threads may share a handle. The outputs become arrays over their own memory (below).
 * Anything else is first normalized by the package's converter (np.asarray and friends,
 * which raise the package's errors for what cannot be an input). */

typedef struct {
  PyObject* owner;    /* the object whose buffer is held (a new reference) */
  buffer_view buffer; /* valid when held */
  int held;
  int64_t shape[EDGERT_MAX_DIMS];
  PyObject* bytes; /* without the buffer protocol: the input's bytes */
} input_slot;

/* The edgert dtype of a buffer's format ("f", "<f", "=i", ...), or -1 when the format is not
   one the runtime reads in place. */
static int dtype_of_format(const char* format, Py_ssize_t itemsize) {
  if (format == NULL) return -1;
  /* '<' is little-endian; none, '@' and '=' are the host's order, which must be little */
  const int explicit_little = *format == '<';
  const int native = *format == '@' || *format == '=';
  if (explicit_little || native) ++format;
  if (!explicit_little && !host_little_endian) return -1;
  if (format[0] == '\0' || format[1] != '\0') return -1;
  switch (format[0]) {
    case 'f': return itemsize == 4 ? EDGERT_FLOAT32 : -1;
    case 'b': return itemsize == 1 ? EDGERT_INT8 : -1;
    case 'B': return itemsize == 1 ? EDGERT_UINT8 : -1;
    case '?': return itemsize == 1 ? EDGERT_BOOL : -1;
    case 'i':
    case 'l':
    case 'q': return itemsize == 4 ? EDGERT_INT32 : itemsize == 8 ? EDGERT_INT64 : -1;
    default: return -1;
  }
}

/* Holds `object`'s buffer and describes it in `view` when it can be read in place: 1; 0 when
   it cannot (nothing held, no error set: numpy refuses a C-contiguous buffer of a strided
   array with a ValueError, which only means the converter must make a copy). */
static int hold_buffer(PyObject* object, input_slot* slot, edgert_tensor_view* view) {
  if (get_buffer(object, &slot->buffer, BUFFER_C_CONTIGUOUS | BUFFER_FORMAT) != 0) {
    PyErr_Clear();
    return 0;
  }
  int dtype = dtype_of_format(slot->buffer.format, slot->buffer.itemsize);
  if (dtype < 0 || slot->buffer.ndim > EDGERT_MAX_DIMS) {
    release_buffer(&slot->buffer);
    return 0;
  }
  slot->held = 1;
  for (int i = 0; i < slot->buffer.ndim; ++i) slot->shape[i] = slot->buffer.shape[i];
  view->dtype = (edgert_dtype)dtype;
  view->ndim = (size_t)slot->buffer.ndim;
  view->shape = slot->shape;
  view->data = slot->buffer.buf;
  view->nbytes = (size_t)slot->buffer.len;
  return 1;
}

/* Without the buffer protocol (Windows with Python 3.9 or 3.10, whose python3.dll lacks it):
   the converted array's bytes, shape and dtype, through its Python attributes. */
static int describe_by_attributes(PyObject* array, input_slot* slot, edgert_tensor_view* view) {
  PyObject* shape = PyObject_GetAttrString(array, "shape");
  PyObject* dtype = shape == NULL ? NULL : PyObject_GetAttrString(array, "dtype");
  int code = -1;
  for (Py_ssize_t i = 0; dtype != NULL && code < 0 && i < PyTuple_Size(numpy.dtypes); ++i) {
    int same = PyObject_RichCompareBool(dtype, PyTuple_GetItem(numpy.dtypes, i), Py_EQ);
    if (same < 0) break;
    if (same) code = (int)i;
  }
  Py_ssize_t ndim = shape != NULL && PyTuple_Check(shape) ? PyTuple_Size(shape) : -1;
  int ok = code >= 0 && ndim >= 0 && ndim <= EDGERT_MAX_DIMS && !PyErr_Occurred();
  for (Py_ssize_t i = 0; ok && i < ndim; ++i) {
    slot->shape[i] = PyLong_AsLongLong(PyTuple_GetItem(shape, i));
    ok = !PyErr_Occurred();
  }
  Py_XDECREF(shape);
  Py_XDECREF(dtype);
  if (ok) slot->bytes = PyObject_CallMethod(array, "tobytes", NULL);
  if (slot->bytes == NULL) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "the converter returned no edgert array");
    return -1;
  }
  view->dtype = (edgert_dtype)code;
  view->ndim = (size_t)ndim;
  view->shape = slot->shape;
  view->data = PyBytes_AsString(slot->bytes);
  view->nbytes = (size_t)PyBytes_Size(slot->bytes);
  return 0;
}

/* Makes input `item` readable in place: a numpy array as it is when it can be, else what the
   converter makes of it. */
static int prepare_input(PyObject* item, input_slot* slot, edgert_tensor_view* view) {
  if (numpy.configured && numpy.buffers && (PyObject*)Py_TYPE(item) == numpy.ndarray) {
    if (hold_buffer(item, slot, view)) {
      Py_INCREF(item);
      slot->owner = item;
      return 0;
    }
  }
  if (!numpy.configured) {
    PyErr_SetString(PyExc_RuntimeError, "edgert._C.configure() was not called (import edgert)");
    return -1;
  }
  slot->owner = PyObject_CallFunctionObjArgs(numpy.convert, item, NULL);
  if (slot->owner == NULL) return -1;
  if (!numpy.buffers) return describe_by_attributes(slot->owner, slot, view);
  if (hold_buffer(slot->owner, slot, view)) return 0;
  PyErr_SetString(PyExc_TypeError, "the converter returned no edgert array");
  return -1;
}

static void release_input(input_slot* slot) {
  if (slot->held) release_buffer(&slot->buffer);
  slot->held = 0;
  Py_CLEAR(slot->bytes);
  Py_CLEAR(slot->owner);
}

/* ------------------------------------------------------------------------ output memory
 *
 * An output whose memory is its own alone (edgert_tensor_info's exclusive) becomes a numpy
 * array over that memory, without a copy: the array's base is a TensorMemory object that
 * holds the edgert_tensor and exports its bytes (a writable, one-dimensional byte buffer).
 * Any other output (a constant, a view of another output) is copied into a new array, so
 * every array run returns is independent and writable. */

typedef struct {
  PyObject_HEAD edgert_tensor* tensor;
  void* data;
  Py_ssize_t size;
} tensor_memory;

static PyObject* tensor_memory_type;

static int tensor_memory_getbuffer(PyObject* self, buffer_view* view, int flags) {
  tensor_memory* memory = (tensor_memory*)self;
  static char byte_format[] = "B";
  /* writable, contiguous and one-dimensional: every request can be satisfied */
  view->buf = memory->data;
  Py_INCREF(self);
  view->obj = self;
  view->len = memory->size;
  view->itemsize = 1;
  view->readonly = 0;
  view->ndim = 1;
  view->format = (flags & BUFFER_FORMAT) ? byte_format : NULL;
  view->shape = (flags & 0x0008) ? &memory->size : NULL;     /* PyBUF_ND */
  view->strides = (flags & 0x0010) ? &view->itemsize : NULL; /* PyBUF_STRIDES */
  view->suboffsets = NULL;
  view->internal = NULL;
  return 0;
}

static void tensor_memory_dealloc(PyObject* self) {
  PyTypeObject* type = Py_TYPE(self);
  edgert_tensor_free(((tensor_memory*)self)->tensor);
  freefunc free_object = (freefunc)PyType_GetSlot(type, Py_tp_free);
  free_object(self);
  Py_DECREF(type);
}

#ifndef Py_bf_getbuffer /* a slot of the 3.11 limited API that 3.9's PyType_FromSpec takes */
#define Py_bf_getbuffer 1
#endif

static PyType_Slot tensor_memory_slots[] = {
    {Py_tp_doc, (void*)"The memory of a tensor a run returned: the base of its array."},
    {Py_tp_dealloc, (void*)tensor_memory_dealloc},
    {Py_bf_getbuffer, (void*)tensor_memory_getbuffer},
    {0, NULL}};

static PyType_Spec tensor_memory_spec = {"edgert._C.TensorMemory", sizeof(tensor_memory), 0, Py_TPFLAGS_DEFAULT,
                                         tensor_memory_slots};

/* A numpy array over `tensor`'s memory (taking the tensor: freed with the array). */
static PyObject* array_over(edgert_tensor* tensor, const edgert_tensor_view* info, PyObject* shape, PyObject* dtype) {
  tensor_memory* memory = PyObject_New(tensor_memory, (PyTypeObject*)tensor_memory_type);
  if (memory == NULL) {
    edgert_tensor_free(tensor);
    return NULL;
  }
  memory->tensor = tensor;
  memory->data = (void*)info->data;
  memory->size = (Py_ssize_t)info->nbytes;
  PyObject* array = PyObject_CallFunctionObjArgs(numpy.ndarray, shape, dtype, (PyObject*)memory, NULL);
  Py_DECREF(memory); /* the array holds it */
  return array;
}

/* A new numpy array holding a copy of `info`'s bytes. */
static PyObject* array_copy(const edgert_tensor_view* info, PyObject* shape, PyObject* dtype) {
  if (!numpy.buffers) {
    PyObject* bytes = PyByteArray_FromStringAndSize((const char*)info->data, (Py_ssize_t)info->nbytes);
    PyObject* flat = bytes == NULL ? NULL : PyObject_CallFunctionObjArgs(numpy.frombuffer, bytes, dtype, NULL);
    PyObject* array = flat == NULL ? NULL : PyObject_CallMethod(flat, "reshape", "(O)", shape);
    Py_XDECREF(flat);
    Py_XDECREF(bytes);
    return array;
  }
  PyObject* array = PyObject_CallFunctionObjArgs(numpy.empty, shape, dtype, NULL);
  buffer_view target;
  if (array == NULL || get_buffer(array, &target, BUFFER_WRITABLE | BUFFER_C_CONTIGUOUS) != 0) {
    Py_XDECREF(array);
    return NULL;
  }
  if (info->nbytes > 0) memcpy(target.buf, info->data, info->nbytes);
  release_buffer(&target);
  return array;
}

/* The array for one output (taking the tensor). */
static PyObject* output_array(edgert_tensor* tensor) {
  edgert_tensor_view info;
  int exclusive = 0;
  edgert_tensor_info(tensor, &info, &exclusive);
  PyObject* shape = shape_tuple(info.shape, info.ndim);
  PyObject* dtype = shape == NULL ? NULL : PyTuple_GetItem(numpy.dtypes, (Py_ssize_t)info.dtype);
  PyObject* array = NULL;
  if (dtype != NULL && exclusive && numpy.buffers) {
    array = array_over(tensor, &info, shape, dtype);
    tensor = NULL;
  } else if (dtype != NULL) {
    array = array_copy(&info, shape, dtype);
  }
  edgert_tensor_free(tensor);
  Py_XDECREF(shape);
  return array;
}

/* A list of arrays, one per output tensor (taking them all, whatever happens). */
static PyObject* output_list(edgert_tensor** tensors, size_t count) {
  PyObject* list = PyList_New((Py_ssize_t)count);
  for (size_t i = 0; i < count; ++i) {
    PyObject* array = list == NULL ? NULL : output_array(tensors[i]);
    if (list == NULL) edgert_tensor_free(tensors[i]);
    if (array == NULL && list != NULL) {
      Py_CLEAR(list);
      for (size_t rest = i + 1; rest < count; ++rest) edgert_tensor_free(tensors[rest]);
      break;
    }
    if (list != NULL) PyList_SetItem(list, (Py_ssize_t)i, array);
  }
  return list;
}

static PyObject* wrong_input_count(size_t expected, Py_ssize_t given) {
  PyObject* message = PyUnicode_FromFormat("the program takes %zu inputs, %zd given", expected, given);
  PyObject* args = message == NULL ? NULL : Py_BuildValue("(iN)", (int)EDGERT_ERROR_INVALID_ARGUMENT, message);
  if (args != NULL) {
    PyErr_SetObject(native_error, args);
    Py_DECREF(args);
  }
  return NULL;
}

/* Runs with the prepared inputs, with the GIL released (the runtime holds the program's lock
   meanwhile), under `memory_limit` bytes when it is not negative (else the program's own
   limit); the list of output arrays, or NULL with an error set. */
static PyObject* run_prepared(edgert_program* program, const edgert_tensor_view* views, size_t count,
                              long long memory_limit) {
  size_t output_count = edgert_program_output_count(program);
  edgert_tensor* stack_tensors[INPUTS_ON_STACK];
  edgert_tensor** tensors = stack_tensors;
  if (output_count > INPUTS_ON_STACK) {
    tensors = (edgert_tensor**)PyMem_Calloc(output_count, sizeof *tensors);
    if (tensors == NULL) return PyErr_NoMemory();
  }
  edgert_status status;
  Py_BEGIN_ALLOW_THREADS status =
      memory_limit < 0
          ? edgert_program_run_with(program, views, count, tensors, output_count)
          : edgert_program_run_with_limit(program, views, count, tensors, output_count, (uint64_t)memory_limit);
  Py_END_ALLOW_THREADS PyObject* result =
      status == EDGERT_OK ? output_list(tensors, output_count) : raise_status(status);
  if (tensors != stack_tensors) PyMem_Free(tensors);
  return result;
}

static PyObject* py_run(PyObject* Py_UNUSED(self), PyObject* args) {
  const Py_ssize_t given = PyTuple_Size(args);
  PyObject* capsule = given == 2 || given == 3 ? PyTuple_GetItem(args, 0) : NULL;
  PyObject* inputs = capsule == NULL ? NULL : PyTuple_GetItem(args, 1);
  long long memory_limit = -1; /* the program's own */
  if (inputs != NULL && given == 3) {
    memory_limit = PyLong_AsLongLong(PyTuple_GetItem(args, 2));
    if (memory_limit == -1 && PyErr_Occurred()) return NULL;
  }
  if (inputs == NULL || !(PyList_Check(inputs) || PyTuple_Check(inputs))) {
    PyErr_Clear();
    PyErr_SetString(PyExc_TypeError, "run(handle, inputs[, memory_limit]) takes a program handle and a list of arrays");
    return NULL;
  }
  edgert_program* program = program_of(capsule);
  if (program == NULL) return NULL;
  /* The items are held first: converting one can run Python code that changes the list. */
  PyObject* items = PySequence_Tuple(inputs);
  if (items == NULL) return NULL;
  Py_ssize_t count = PyTuple_Size(items);
  size_t expected = edgert_program_input_count(program);
  if ((size_t)count != expected) {
    Py_DECREF(items);
    return wrong_input_count(expected, count);
  }
  input_slot stack_slots[INPUTS_ON_STACK];
  edgert_tensor_view stack_views[INPUTS_ON_STACK];
  input_slot* slots = stack_slots;
  edgert_tensor_view* views = stack_views;
  if (count > INPUTS_ON_STACK) {
    slots = (input_slot*)PyMem_Calloc((size_t)count, sizeof *slots);
    views = (edgert_tensor_view*)PyMem_Calloc((size_t)count, sizeof *views);
    if (slots == NULL || views == NULL) {
      PyMem_Free(slots);
      PyMem_Free(views);
      Py_DECREF(items);
      return PyErr_NoMemory();
    }
  } else {
    memset(stack_slots, 0, sizeof stack_slots);
  }
  PyObject* result = NULL;
  Py_ssize_t prepared = 0;
  while (prepared < count && prepare_input(PyTuple_GetItem(items, prepared), &slots[prepared], &views[prepared]) == 0) {
    ++prepared;
  }
  if (prepared == count) result = run_prepared(program, views, (size_t)count, memory_limit);
  for (Py_ssize_t i = 0; i <= prepared && i < count; ++i) release_input(&slots[i]);
  if (slots != stack_slots) {
    PyMem_Free(slots);
    PyMem_Free(views);
  }
  Py_DECREF(items);
  return result;
}

static PyMethodDef methods[] = {
    {"version", py_version, METH_NOARGS, "edgert version string"},
    {"operators", py_operators, METH_NOARGS, "[(name, owner library path)] sorted by name"},
    {"backends", py_backends, METH_NOARGS, "[(name, owner library path)] sorted by name"},
    {"operator_attributes", py_operator_attributes, METH_NOARGS,
     "[(operator, 'name:kind,...' or None)]: the attributes each operator declared"},
    {"threadpool_size", py_threadpool_size, METH_NOARGS, "threads of the process pool"},
    {"set_threadpool_size", py_set_threadpool_size, METH_VARARGS, "resize the process pool"},
    {"threadpool_instance", py_threadpool_instance, METH_NOARGS, "address of the process pool"},
    {"configure", py_configure, METH_VARARGS,
     "configure(ndarray, empty, frombuffer, dtypes, convert[, buffers]) -> whether arrays are "
     "read and written in place (the package calls it once)"},
    {"load", py_load, METH_VARARGS,
     "load(bytes) -> program handle; the constants are read in place from the bytes object, "
     "which the program holds"},
    {"load_file", py_load_file, METH_VARARGS,
     "load_file(path as bytes) -> program handle; the file is mapped (edgert_program_load_file)"},
    {"memory_plan", py_memory_plan, METH_VARARGS,
     "memory_plan(handle) -> (peak, input, output, constant bytes, released values, storage)"},
    {"counts", py_counts, METH_VARARGS, "counts(handle) -> (inputs, outputs)"},
    {"format_version", py_format_version, METH_VARARGS,
     "format_version(handle) -> the program file's format version (1 or 2)"},
    {"last_warning", py_last_warning, METH_NOARGS,
     "the note of this thread's last load ('' when none: edgert_last_warning)"},
    {"input_info", py_input_info, METH_VARARGS, "input_info(handle, i) -> (dtype, shape)"},
    {"set_backends", py_set_backends, METH_VARARGS, "set_backends(handle, 'a,b')"},
    {"delegated_nodes", py_delegated_nodes, METH_VARARGS, "delegated_nodes(handle, name)"},
    {"run", py_run, METH_VARARGS,
     "run(handle, [arrays][, memory_limit]) -> [arrays]: inputs are read in place, outputs are new "
     "arrays; memory_limit (bytes, 0: none) for this call only; safe to call on one handle from "
     "several threads"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_C", "the native layer under the edgert package", -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__C(void) {
  const uint16_t probe = 1;
  host_little_endian = *(const uint8_t*)&probe == 1;
  find_buffer_functions();
  PyObject* created = PyModule_Create(&module);
  if (created == NULL) return NULL;
  native_error = PyErr_NewExceptionWithDoc("edgert._C.NativeError",
                                           "a C API call failed: args are (edgert_status code, message)", NULL, NULL);
  if (native_error == NULL || PyModule_AddObject(created, "NativeError", native_error) != 0) {
    Py_XDECREF(native_error);
    Py_DECREF(created);
    return NULL;
  }
  Py_INCREF(native_error); /* the module's reference was stolen; keep ours */
  tensor_memory_type = PyType_FromSpec(&tensor_memory_spec);
  if (tensor_memory_type == NULL) {
    Py_DECREF(created);
    return NULL;
  }
  return created;
}
