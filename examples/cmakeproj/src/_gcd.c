/* cmakeproj._gcd: gcd(a, b) of two non-negative 64-bit integers (Euclid). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyObject *gcd(PyObject *self, PyObject *args) {
    unsigned long long a, b;
    if (!PyArg_ParseTuple(args, "KK:gcd", &a, &b)) {
        return NULL;
    }
    while (b != 0) {
        unsigned long long rest = a % b;
        a = b;
        b = rest;
    }
    return PyLong_FromUnsignedLongLong(a);
}

static PyMethodDef methods[] = {
    {"gcd", gcd, METH_VARARGS, "gcd(a, b) -> int: greatest common divisor."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "cmakeproj._gcd", NULL, -1, methods};

PyMODINIT_FUNC PyInit__gcd(void) {
    PyObject *m = PyModule_Create(&module);
    /* What a target program printed at configure time (CMake's try_run). */
    if (m != NULL && PyModule_AddStringConstant(m, "configured_machine", CONFIGURED_MACHINE) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
