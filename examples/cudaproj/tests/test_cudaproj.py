import cudaproj

# What the CUDA runtime answers on a machine without a usable GPU: no driver library
# (`libcuda.so.1`), or a driver and no device. An import or link error is neither.
NO_GPU = {"cudaErrorInsufficientDriver", "cudaErrorNoDevice"}


def test_the_runtime_is_the_toolkits():
    assert cudaproj.runtime_version() // 1000 == 13


def test_cuda_answers_and_a_gpu_computes_saxpy():
    try:
        count = cudaproj.device_count()
    except RuntimeError as error:
        assert str(error).split(":")[0] in NO_GPU, error
        return
    assert count >= 1
    assert cudaproj.saxpy(2.0, [1.0, 2.0, 3.0], [10.0, 20.0, 30.0]) == [12.0, 24.0, 36.0]
