// y = a*x + y on the GPU, and the CUDA runtime's answers, for Python.
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <cuda_runtime.h>

#include <vector>

// In an anonymous namespace, as much CUDA code keeps its kernels: nvcc names such a
// namespace from the source's path, which the determinism test then covers.
namespace {
__global__ void saxpy_kernel(int n, float a, const float *x, float *y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = a * x[i] + y[i];
    }
}
}  // namespace

// Raises RuntimeError("<error name>: <description>") for a failed CUDA call.
static PyObject *cuda_error(cudaError_t error) {
    PyErr_Format(PyExc_RuntimeError, "%s: %s", cudaGetErrorName(error),
                 cudaGetErrorString(error));
    return NULL;
}

static PyObject *runtime_version(PyObject *, PyObject *) {
    int version = 0;
    cudaError_t error = cudaRuntimeGetVersion(&version);
    if (error != cudaSuccess) {
        return cuda_error(error);
    }
    return PyLong_FromLong(version);
}

static PyObject *device_count(PyObject *, PyObject *) {
    int count = 0;
    cudaError_t error = cudaGetDeviceCount(&count);
    if (error != cudaSuccess) {
        return cuda_error(error);
    }
    return PyLong_FromLong(count);
}

static bool floats(PyObject *sequence, std::vector<float> &out) {
    PyObject *fast = PySequence_Fast(sequence, "x and y must be sequences of numbers");
    if (fast == NULL) {
        return false;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    out.resize(n);
    for (Py_ssize_t i = 0; i < n; i++) {
        out[i] = (float)PyFloat_AsDouble(PySequence_Fast_GET_ITEM(fast, i));
    }
    Py_DECREF(fast);
    return !PyErr_Occurred();
}

static PyObject *saxpy(PyObject *, PyObject *args) {
    float a;
    PyObject *x_in, *y_in;
    if (!PyArg_ParseTuple(args, "fOO", &a, &x_in, &y_in)) {
        return NULL;
    }
    std::vector<float> x, y;
    if (!floats(x_in, x) || !floats(y_in, y)) {
        return NULL;
    }
    if (x.size() != y.size()) {
        PyErr_SetString(PyExc_ValueError, "x and y differ in length");
        return NULL;
    }
    int n = (int)x.size();
    size_t bytes = x.size() * sizeof(float);
    float *dx = NULL, *dy = NULL;
    cudaError_t error = cudaMalloc(&dx, bytes);
    if (error == cudaSuccess) error = cudaMalloc(&dy, bytes);
    if (error == cudaSuccess) error = cudaMemcpy(dx, x.data(), bytes, cudaMemcpyHostToDevice);
    if (error == cudaSuccess) error = cudaMemcpy(dy, y.data(), bytes, cudaMemcpyHostToDevice);
    if (error == cudaSuccess) {
        saxpy_kernel<<<(n + 255) / 256, 256>>>(n, a, dx, dy);
        error = cudaGetLastError();
    }
    if (error == cudaSuccess) error = cudaMemcpy(y.data(), dy, bytes, cudaMemcpyDeviceToHost);
    cudaFree(dx);
    cudaFree(dy);
    if (error != cudaSuccess) {
        return cuda_error(error);
    }
    PyObject *result = PyList_New(n);
    for (int i = 0; i < n; i++) {
        PyList_SET_ITEM(result, i, PyFloat_FromDouble(y[i]));
    }
    return result;
}

static PyMethodDef methods[] = {
    {"runtime_version", runtime_version, METH_NOARGS,
     "The CUDA runtime's version, 1000 * major + 10 * minor."},
    {"device_count", device_count, METH_NOARGS,
     "The number of CUDA devices; RuntimeError with CUDA's own error where there are none."},
    {"saxpy", saxpy, METH_VARARGS, "saxpy(a, x, y): a*x + y, computed on the GPU."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_saxpy", NULL, -1, methods};

PyMODINIT_FUNC PyInit__saxpy(void) { return PyModule_Create(&module); }
