/* optimized/cuda/kernels.cu — the CUDA backend's own kernels: operand preparation (the exact
 * uint8 -> int8 shift, zero padding, transposition, row and column sums), the modulo-2^32 sum of
 * K chunks, and the exact epilogues. The GEMM itself is cuBLASLt's (matmul.c).
 *
 * The per-element arithmetic lives in epilogue.h and is shared with the host emulation, so
 * what these kernels add is only indexing. */
#include <cuda_runtime.h>

#include "optimized/cuda/cuda_internal.h"

namespace {

constexpr int kTile = 32;

/* Row r of one matrix: copy with the shift and zero padding, and sum it (one block). */
__device__ void prep_row(const uint8_t *in, int is_signed, int64_t k, int64_t kp, int valid,
                         int8_t *out, int32_t *rowsum)
{
    __shared__ uint32_t warp_sums[32];
    uint32_t sum = 0;
    for (int64_t c = threadIdx.x; c < kp; c += blockDim.x) {
        int8_t v = valid && c < k ? qmm_cu_s8(in[c], is_signed) : (int8_t)0;
        out[c] = v;
        sum += (uint32_t)(int32_t)v;
    }
    /* integer sums modulo 2^32 are associative: the reduction order does not matter */
    for (int off = 16; off > 0; off >>= 1)
        sum += __shfl_down_sync(0xffffffffu, sum, off);
    if (threadIdx.x % 32 == 0)
        warp_sums[threadIdx.x / 32] = sum;
    __syncthreads();
    if (threadIdx.x == 0 && valid) {
        uint32_t total = 0;
        for (int w = 0; w < (int)(blockDim.x / 32); w++)
            total += warp_sums[w];
        *rowsum = qmm_rq_wrap(total);
    }
    __syncthreads(); /* warp_sums is reused by the block's next row */
}

/* One block per padded row; matrices in a grid-stride loop (their count may pass grid.y). */
__global__ void prep_rows_kernel(const uint8_t *src, int is_signed, int64_t nmat, int64_t rows,
                                 int64_t k, int64_t rows_p, int64_t kp, int8_t *dst,
                                 int32_t *rowsum)
{
    int64_t r = blockIdx.x;
    for (int64_t mat = blockIdx.y; mat < nmat; mat += gridDim.y)
        prep_row(src + (mat * rows + r) * k, is_signed, k, kp, r < rows,
                 dst + (mat * rows_p + r) * kp, rowsum + mat * rows + r);
}

/* One 32 x 32 tile of B (k0.., j0..) through shared memory: reads rows of B coalesced, writes
 * rows of B^T coalesced, and adds the tile's column partial sums atomically (order-free). */
__device__ void prep_tile(const uint8_t *in, int is_signed, int64_t k, int64_t n, int64_t n_p,
                          int64_t kp, int64_t k0, int64_t j0, int8_t *out, int32_t *colsum)
{
    __shared__ int8_t tile[kTile][kTile + 1];
    int tx = threadIdx.x, ty = threadIdx.y; /* blockDim (32, 8) */
    for (int dy = ty; dy < kTile; dy += blockDim.y) {
        int64_t kk = k0 + dy, j = j0 + tx;
        tile[dy][tx] = kk < k && j < n ? qmm_cu_s8(in[kk * n + j], is_signed) : (int8_t)0;
    }
    __syncthreads();
    for (int dy = ty; dy < kTile; dy += blockDim.y) {
        int64_t j = j0 + dy, kk = k0 + tx;
        if (j < n_p && kk < kp)
            out[j * kp + kk] = tile[tx][dy];
    }
    if (ty == 0 && j0 + tx < n) {
        uint32_t sum = 0;
        for (int dk = 0; dk < kTile; dk++)
            sum += (uint32_t)(int32_t)tile[dk][tx];
        atomicAdd(reinterpret_cast<unsigned int *>(colsum + j0 + tx), sum);
    }
    __syncthreads(); /* the tile is reused by the block's next one */
}

/* grid.x over K tiles; column tiles and matrices in grid-stride loops. */
__global__ void prep_cols_kernel(const uint8_t *src, int is_signed, int64_t nmat, int64_t k,
                                 int64_t n, int64_t n_p, int64_t kp, int8_t *dst,
                                 int32_t *colsum)
{
    int64_t k0 = (int64_t)blockIdx.x * kTile;
    for (int64_t mat = blockIdx.z; mat < nmat; mat += gridDim.z)
        for (int64_t j0 = (int64_t)blockIdx.y * kTile; j0 < n_p;
             j0 += (int64_t)gridDim.y * kTile)
            prep_tile(src + mat * k * n, is_signed, k, n, n_p, kp, k0, j0, dst + mat * n_p * kp,
                      colsum + mat * n);
}

/* nmat matrices of rows x cols int8 in cublasLt order `order` (qmm_cu_order_offset), each
 * rows * cols bytes -> ROW rows_p x ld, zero padded; one thread per output byte. */
__global__ void order_to_rows_kernel(const int8_t *src, int order, int64_t nmat, int64_t rows,
                                     int64_t cols, int64_t rows_p, int64_t ld, int8_t *dst)
{
    int64_t total = rows_p * ld;
    for (int64_t mat = blockIdx.y; mat < nmat; mat += gridDim.y)
        for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total;
             e += (int64_t)gridDim.x * blockDim.x) {
            int64_t r = e / ld, c = e % ld;
            dst[mat * total + e] =
                r < rows && c < cols
                    ? src[mat * rows * cols + qmm_cu_order_offset(order, r, c, rows, cols)]
                    : (int8_t)0;
        }
}

__global__ void add_kernel(int32_t *d, const int32_t *t, int64_t count)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < count;
         i += (int64_t)gridDim.x * blockDim.x)
        d[i] = qmm_rq_wrap((uint32_t)d[i] + (uint32_t)t[i]);
}

/* One element of an epilogue's m x n output (epilogue.h), by the parameters' type. */
__device__ inline void epilogue_element(const qmm_cu_epi *p, int64_t i, int64_t j)
{
    qmm_cu_epi_element(p, i, j);
}

__device__ inline void epilogue_element(const qmm_cu_qord *p, int64_t i, int64_t j)
{
    qmm_cu_qord_element(p, i, j);
}

/* An epilogue over its m x n output: column j per thread in x, rows strided in y. */
template <typename P> __global__ void epilogue_kernel(P p)
{
    int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (int64_t i = (int64_t)blockIdx.y * blockDim.y + threadIdx.y; i < p.m;
         i += (int64_t)gridDim.y * blockDim.y)
        if (j < p.n)
            epilogue_element(&p, i, j);
}

unsigned int blocks_for(int64_t count, int per)
{
    int64_t b = (count + per - 1) / per;
    return (unsigned int)(b < 1 ? 1 : b > 65535 ? 65535 : b);
}

} /* namespace */

extern "C" cudaError_t qmm_cu_launch_prep_rows(const uint8_t *src, int is_signed, int64_t nmat,
                                               int64_t rows, int64_t k, int64_t rows_p,
                                               int64_t kp, int8_t *dst, int32_t *rowsum,
                                               cudaStream_t s)
{
    if (nmat == 0 || rows_p == 0)
        return cudaSuccess;
    /* rows_p and nmat stay far below the grid limits for any matrix that fits in memory */
    dim3 grid((unsigned int)rows_p, blocks_for(nmat, 1));
    prep_rows_kernel<<<grid, 256, 0, s>>>(src, is_signed, nmat, rows, k, rows_p, kp, dst, rowsum);
    return cudaGetLastError();
}

extern "C" cudaError_t qmm_cu_launch_prep_cols(const uint8_t *src, int is_signed, int64_t nmat,
                                               int64_t k, int64_t n, int64_t n_p, int64_t kp,
                                               int8_t *dst, int32_t *colsum, cudaStream_t s)
{
    if (nmat == 0 || n_p == 0 || kp == 0)
        return cudaSuccess;
    dim3 grid((unsigned int)((kp + kTile - 1) / kTile), blocks_for(n_p, kTile), blocks_for(nmat, 1));
    prep_cols_kernel<<<grid, dim3(kTile, 8), 0, s>>>(src, is_signed, nmat, k, n, n_p, kp, dst,
                                                     colsum);
    return cudaGetLastError();
}

extern "C" cudaError_t qmm_cu_launch_order_to_rows(const int8_t *src, int order, int64_t nmat,
                                                   int64_t rows, int64_t cols, int64_t rows_p,
                                                   int64_t ld, int8_t *dst, cudaStream_t s)
{
    if (nmat == 0 || rows_p == 0 || ld == 0)
        return cudaSuccess;
    dim3 grid(blocks_for(rows_p * ld, 256), blocks_for(nmat, 1));
    order_to_rows_kernel<<<grid, 256, 0, s>>>(src, order, nmat, rows, cols, rows_p, ld, dst);
    return cudaGetLastError();
}

extern "C" cudaError_t qmm_cu_launch_add(int32_t *d, const int32_t *t, int64_t count,
                                         cudaStream_t s)
{
    if (count == 0)
        return cudaSuccess;
    add_kernel<<<blocks_for(count, 256), 256, 0, s>>>(d, t, count);
    return cudaGetLastError();
}

namespace {

/* An epilogue's launch: one thread per element of its m x n output, in 32 x 8 blocks. */
template <typename P> cudaError_t launch_epilogue(void (*kernel)(P), const P *p, cudaStream_t s)
{
    if (p->m == 0 || p->n == 0)
        return cudaSuccess;
    dim3 block(32, 8);
    dim3 grid((unsigned int)((p->n + 31) / 32), blocks_for(p->m, 8));
    kernel<<<grid, block, 0, s>>>(*p);
    return cudaGetLastError();
}

} /* namespace */

extern "C" cudaError_t qmm_cu_launch_epilogue(const qmm_cu_epi *p, cudaStream_t s)
{
    return launch_epilogue(epilogue_kernel<qmm_cu_epi>, p, s);
}

extern "C" cudaError_t qmm_cu_launch_qord_epilogue(const qmm_cu_qord *p, cudaStream_t s)
{
    return launch_epilogue(epilogue_kernel<qmm_cu_qord>, p, s);
}
