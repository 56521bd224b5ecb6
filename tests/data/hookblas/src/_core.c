#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

/* scipy-openblas64: ILP64, every symbol prefixed scipy_ and suffixed 64_. */
double scipy_cblas_ddot64_(int64_t n, const double *x, int64_t incx, const double *y, int64_t incy);

static PyObject *dot(PyObject *self, PyObject *args) {
    PyObject *a, *b;
    if (!PyArg_ParseTuple(args, "OO", &a, &b)) return NULL;
    Py_ssize_t n = PySequence_Size(a);
    if (n < 0 || n != PySequence_Size(b) || n > 64) {
        PyErr_SetString(PyExc_ValueError, "two sequences of one length, at most 64");
        return NULL;
    }
    double x[64], y[64];
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *p = PySequence_GetItem(a, i), *q = PySequence_GetItem(b, i);
        x[i] = PyFloat_AsDouble(p);
        y[i] = PyFloat_AsDouble(q);
        Py_XDECREF(p);
        Py_XDECREF(q);
    }
    if (PyErr_Occurred()) return NULL;
    return PyFloat_FromDouble(scipy_cblas_ddot64_(n, x, 1, y, 1));
}

static PyMethodDef methods[] = {{"dot", dot, METH_VARARGS, "OpenBLAS ddot"}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_core", NULL, -1, methods};
PyMODINIT_FUNC PyInit__core(void) { return PyModule_Create(&module); }
