/* Prints one CPython's struct offsets under the names of interposer/capture/python_layout.h, from
   that version's own headers: how the table's rows were measured, and how to add a version.
   Not built by CMake (it needs the interpreter's internal headers):
     P=~/.pyenv/versions/3.12.1; V=3.12
     cc -w -I$P/include/python$V -I$P/include/python$V/internal tests/python/layout_probe.c \
        -o /tmp/probe && /tmp/probe                                                           */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <stddef.h>
#include <stdio.h>
#if PY_VERSION_HEX < 0x030b0000
#include <frameobject.h>
#else
#include "internal/pycore_code.h"
#include "internal/pycore_frame.h"
#endif

#define SHOW(field, value) printf("  .%s = %ld,\n", field, (long)(value))

int main(void) {
  printf("version 0x%04x\n", PY_VERSION_HEX >> 16);
  SHOW("tstate_thread_id", offsetof(PyThreadState, thread_id));
#if PY_VERSION_HEX < 0x030b0000
  SHOW("tstate_frame", offsetof(PyThreadState, frame));
  SHOW("frame_previous", offsetof(PyFrameObject, f_back));
  SHOW("frame_code", offsetof(PyFrameObject, f_code));
  SHOW("frame_instr", offsetof(PyFrameObject, f_lasti));
  SHOW("frame_basicsize", sizeof(PyFrameObject));
#elif PY_VERSION_HEX < 0x030d0000
  SHOW("tstate_frame", offsetof(PyThreadState, cframe));
  SHOW("cframe_frame", offsetof(_PyCFrame, current_frame));
  SHOW("frame_previous", offsetof(_PyInterpreterFrame, previous));
  SHOW("frame_code", offsetof(_PyInterpreterFrame, f_code));
  SHOW("frame_instr", offsetof(_PyInterpreterFrame, prev_instr));
  SHOW("frame_owner", offsetof(_PyInterpreterFrame, owner));
#if PY_VERSION_HEX < 0x030c0000
  SHOW("frame_is_entry", offsetof(_PyInterpreterFrame, is_entry));
#endif
#else
  SHOW("tstate_frame", offsetof(PyThreadState, current_frame));
  SHOW("frame_previous", offsetof(_PyInterpreterFrame, previous));
  SHOW("frame_code", offsetof(_PyInterpreterFrame, f_executable));
  SHOW("frame_instr", offsetof(_PyInterpreterFrame, instr_ptr));
  SHOW("frame_owner", offsetof(_PyInterpreterFrame, owner));
#endif
  SHOW("code_filename", offsetof(PyCodeObject, co_filename));
  SHOW("code_name", offsetof(PyCodeObject, co_name));
#if PY_VERSION_HEX >= 0x030b0000
  SHOW("code_qualname", offsetof(PyCodeObject, co_qualname));
  SHOW("code_adaptive", offsetof(PyCodeObject, co_code_adaptive));
  SHOW("code_firsttraceable", offsetof(PyCodeObject, _co_firsttraceable));
#endif
  SHOW("code_firstlineno", offsetof(PyCodeObject, co_firstlineno));
  SHOW("code_linetable", offsetof(PyCodeObject, co_linetable));
  SHOW("code_basicsize (sizeof; 3.11+: tp_basicsize is code_adaptive)", sizeof(PyCodeObject));
  SHOW("unicode_basicsize", sizeof(PyUnicodeObject));
  SHOW("ascii_data", sizeof(PyASCIIObject));
  SHOW("utf8_length", offsetof(PyCompactUnicodeObject, utf8_length));
  SHOW("utf8", offsetof(PyCompactUnicodeObject, utf8));
  printf("common: ob_type %zu, ob_size %zu, tp_basicsize %zu, bytes ob_sval %zu, str length %zu\n",
         offsetof(PyObject, ob_type), offsetof(PyVarObject, ob_size),
         offsetof(PyTypeObject, tp_basicsize), offsetof(PyBytesObject, ob_sval),
         offsetof(PyASCIIObject, length));
  return 0;
}
