/* custom_add.c: CPU twin of custom_add.cu with the same MindSpore ABI (host pointers, null
 * stream). Adds any number of elements (the product of the output's dims) in float32 or
 * float64; returns non-zero on a wrong parameter count or dtype, as the ABI prescribes.
 * gcc -shared -fPIC -O2 -o custom_add_cpu.so custom_add.c */
#include <stdint.h>
#include <string.h>

int CustomAdd(int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes,
              void *stream, void *extra) {
    const int OUTPUT_INDEX = 2;
    int64_t size = 1;
    (void)stream;
    (void)extra;
    if (nparam != 3) return 1;
    for (int d = 0; d < ndims[OUTPUT_INDEX]; ++d) size *= shapes[OUTPUT_INDEX][d];
    for (int i = 1; i < nparam; ++i) {
        if (strcmp(dtypes[i], dtypes[0]) != 0) return 2;
    }
    if (strcmp(dtypes[0], "float32") == 0) {
        const float *a = (const float *)params[0], *b = (const float *)params[1];
        float *out = (float *)params[2];
        for (int64_t i = 0; i < size; ++i) out[i] = a[i] + b[i];
        return 0;
    }
    if (strcmp(dtypes[0], "float64") == 0) {
        const double *a = (const double *)params[0], *b = (const double *)params[1];
        double *out = (double *)params[2];
        for (int64_t i = 0; i < size; ++i) out[i] = a[i] + b[i];
        return 0;
    }
    return 3;
}
