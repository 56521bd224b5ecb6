/* mesonproj._fib: fib(n), the n-th Fibonacci number as an unsigned 64-bit integer. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#include "configured.h"

static PyObject *fib(PyObject *self, PyObject *arg) {
    long n = PyLong_AsLong(arg);
    if (n == -1 && PyErr_Occurred()) {
        return NULL;
    }
    /* fib(93) is the largest that fits in 64 bits. */
    if (n < 0 || n > 93) {
        PyErr_SetString(PyExc_ValueError, "fib() needs 0 <= n <= 93");
        return NULL;
    }
    uint64_t a = 0, b = 1;
    for (long i = 0; i < n; i++) {
        uint64_t next = a + b;
        a = b;
        b = next;
    }
    return PyLong_FromUnsignedLongLong(a);
}

static PyMethodDef methods[] = {
    {"fib", fib, METH_O, "fib(n) -> int: the n-th Fibonacci number."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "mesonproj._fib", NULL, -1, methods};

PyMODINIT_FUNC PyInit__fib(void) {
    PyObject *m = PyModule_Create(&module);
    /* What a target program printed at configure time (meson's cc.run()). */
    if (m != NULL && PyModule_AddStringConstant(m, "configured_machine", CONFIGURED_MACHINE) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
