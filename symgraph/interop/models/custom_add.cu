// custom_add.cu: the seed's AOT kernel (MindSpore's ABI), unchanged apart from this header.
// nvcc --shared -Xcompiler -fPIC -o custom_add.so custom_add.cu
constexpr int THREADS = 1024;

__global__ void CustomAddKernel(float *input1, float *input2, float *output, size_t size) {
    auto idx = blockIdx.x * THREADS + threadIdx.x;
    if (idx < size) {
        output[idx] = input1[idx] + input2[idx];
    }
}

extern "C" int CustomAdd(int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes, void *stream,
                         void *extra) {
    cudaStream_t custream = static_cast<cudaStream_t>(stream);
    constexpr int OUTPUT_INDEX = 2;
    float *input1 = static_cast<float *>(params[0]);
    float *input2 = static_cast<float *>(params[1]);
    float *output = static_cast<float *>(params[2]);
    int size = shapes[OUTPUT_INDEX][0];
    int blocks = ceil(size / THREADS) + 1;
    CustomAddKernel<<<blocks, THREADS, 0, custream>>>(input1, input2, output, size);
    return 0;
}
