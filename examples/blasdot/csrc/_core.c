/* blasdot._core: dot(a, b) via scipy_cblas_ddot, corename() via scipy_openblas_get_corename. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* The prototypes, not cblas.h: its prototypes depend on the BLAS_SYMBOL_PREFIX macro
   machinery, and these two are all the module needs. */
double scipy_cblas_ddot(int n, const double *x, int incx, const double *y, int incy);
char *scipy_openblas_get_corename(void);

/* Copies a sequence of floats into a new buffer; NULL with an exception set on error. */
static double *as_doubles(PyObject *seq_obj, Py_ssize_t *length, const char *name) {
    PyObject *seq = PySequence_Fast(seq_obj, "dot() arguments must be sequences of floats");
    if (seq == NULL) {
        return NULL;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    double *values = PyMem_Malloc((size_t)(n > 0 ? n : 1) * sizeof(double));
    if (values == NULL) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return NULL;
    }
    PyObject **items = PySequence_Fast_ITEMS(seq);
    for (Py_ssize_t i = 0; i < n; i++) {
        values[i] = PyFloat_AsDouble(items[i]);
        if (values[i] == -1.0 && PyErr_Occurred()) {
            PyErr_Format(PyExc_TypeError, "%s[%zd] is not a float", name, i);
            PyMem_Free(values);
            Py_DECREF(seq);
            return NULL;
        }
    }
    Py_DECREF(seq);
    *length = n;
    return values;
}

static PyObject *dot(PyObject *self, PyObject *args) {
    PyObject *a_obj, *b_obj;
    if (!PyArg_ParseTuple(args, "OO:dot", &a_obj, &b_obj)) {
        return NULL;
    }
    Py_ssize_t n_a, n_b;
    double *a = as_doubles(a_obj, &n_a, "a");
    if (a == NULL) {
        return NULL;
    }
    double *b = as_doubles(b_obj, &n_b, "b");
    if (b == NULL) {
        PyMem_Free(a);
        return NULL;
    }
    if (n_a != n_b || n_a > INT_MAX) {
        PyErr_Format(PyExc_ValueError, "dot() needs two sequences of equal length below 2**31, got %zd and %zd", n_a, n_b);
        PyMem_Free(a);
        PyMem_Free(b);
        return NULL;
    }
    double result;
    Py_BEGIN_ALLOW_THREADS
    result = scipy_cblas_ddot((int)n_a, a, 1, b, 1);
    Py_END_ALLOW_THREADS
    PyMem_Free(a);
    PyMem_Free(b);
    return PyFloat_FromDouble(result);
}

static PyObject *corename(PyObject *self, PyObject *unused) {
    const char *name = scipy_openblas_get_corename();
    return PyUnicode_FromString(name != NULL ? name : "");
}

static PyMethodDef methods[] = {
    {"dot", dot, METH_VARARGS, "dot(a, b) -> float: the dot product of two sequences of floats."},
    {"corename", corename, METH_NOARGS, "corename() -> str: the CPU kernel OpenBLAS picked."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "blasdot._core", NULL, -1, methods};

PyMODINIT_FUNC PyInit__core(void) {
    return PyModule_Create(&module);
}
