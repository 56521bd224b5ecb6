/* blasdot._core: dot(a, b) via scipy_cblas_ddot, balance(a) via LAPACK's dgebal,
   corename() via scipy_openblas_get_corename. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* The prototypes, not cblas.h: its prototypes depend on the BLAS_SYMBOL_PREFIX macro
   machinery, and these two are all the module needs. */
double scipy_cblas_ddot(int n, const double *x, int incx, const double *y, int incy);
char *scipy_openblas_get_corename(void);
/* csrc/_lapack.c */
void blasdot_dgebal(const char *job, const int *n, double *a, const int *lda, int *ilo,
                    int *ihi, double *scale, int *info);

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

/* balance(a, n) -> (balanced, scale): LAPACK's dgebal with JOB='B' (permute and scale) on
   the n-by-n matrix a, given by columns. */
static PyObject *balance(PyObject *self, PyObject *args) {
    PyObject *a_obj;
    int n;
    if (!PyArg_ParseTuple(args, "Oi:balance", &a_obj, &n)) {
        return NULL;
    }
    Py_ssize_t length;
    double *a = as_doubles(a_obj, &length, "a");
    if (a == NULL) {
        return NULL;
    }
    double *scale = PyMem_Malloc((size_t)(n > 0 ? n : 1) * sizeof(double));
    if (n < 1 || n > 4096 || length != (Py_ssize_t)n * n || scale == NULL) {
        PyMem_Free(a);
        PyMem_Free(scale);
        return scale == NULL ? PyErr_NoMemory()
                             : PyErr_Format(PyExc_ValueError, "balance() needs n*n values, 1 <= n <= 4096");
    }
    int ilo = 0, ihi = 0, info = 0;
    blasdot_dgebal("B", &n, a, &n, &ilo, &ihi, scale, &info);
    PyObject *result = NULL;
    if (info != 0) {
        PyErr_Format(PyExc_RuntimeError, "dgebal info %d", info);
    } else {
        PyObject *balanced = PyList_New(length), *scales = PyList_New(n);
        if (balanced != NULL && scales != NULL) {
            for (Py_ssize_t i = 0; i < length; i++) PyList_SET_ITEM(balanced, i, PyFloat_FromDouble(a[i]));
            for (int i = 0; i < n; i++) PyList_SET_ITEM(scales, i, PyFloat_FromDouble(scale[i]));
            result = Py_BuildValue("(OO)", balanced, scales);
        }
        Py_XDECREF(balanced);
        Py_XDECREF(scales);
    }
    PyMem_Free(a);
    PyMem_Free(scale);
    return result;
}

static PyObject *corename(PyObject *self, PyObject *unused) {
    const char *name = scipy_openblas_get_corename();
    return PyUnicode_FromString(name != NULL ? name : "");
}

static PyMethodDef methods[] = {
    {"dot", dot, METH_VARARGS, "dot(a, b) -> float: the dot product of two sequences of floats."},
    {"balance", balance, METH_VARARGS, "balance(a, n) -> (balanced, scale): LAPACK's dgebal, JOB='B'."},
    {"corename", corename, METH_NOARGS, "corename() -> str: the CPU kernel OpenBLAS picked."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "blasdot._core", NULL, -1, methods};

PyMODINIT_FUNC PyInit__core(void) {
    return PyModule_Create(&module);
}
