#define PY_SSIZE_T_CLEAN
#include <Python.h>

double fortranproj_series(int n);
void fortranproj_format_e(double value, char *out);

static PyObject *series(PyObject *self, PyObject *args) {
    int n;
    if (!PyArg_ParseTuple(args, "i", &n)) return NULL;
    if (n < 1) {
        PyErr_SetString(PyExc_ValueError, "n must be at least 1");
        return NULL;
    }
    return PyFloat_FromDouble(fortranproj_series(n));
}

static PyObject *format_e(PyObject *self, PyObject *args) {
    double value;
    char out[13];
    if (!PyArg_ParseTuple(args, "d", &value)) return NULL;
    fortranproj_format_e(value, out);
    return PyUnicode_FromString(out);
}

static PyMethodDef methods[] = {
    {"series", series, METH_VARARGS, "sum of exp(i/n) + log(i), computed in Fortran"},
    {"format_e", format_e, METH_VARARGS, "a float as Fortran's ES12.5 writes it"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_flib", NULL, -1, methods};

PyMODINIT_FUNC PyInit__flib(void) { return PyModule_Create(&module); }
