/* optimized/cuda/kernels.cu — the CUDA backend's own kernels: operand preparation (the exact
 * uint8 -> int8 shift, zero padding, transposition, row and column sums), the modulo-2^32 sum of
 * K chunks, and the exact epilogues. The GEMM itself is cuBLASLt's (matmul.c).
 *
 * The per-element arithmetic lives in epilogue.h and is shared with the host emulation, so
 * what these kernels add is only indexing. */
#include <cuda_runtime.h>

#include <stdlib.h>
#include <string.h>

#include "optimized/cuda/cuda_internal.h"

static int scalar_from_env(void)
{
    const char *v = getenv("QMM_CUDA_SCALAR_KERNELS");
    return v && *v && strcmp(v, "0") != 0;
}

extern "C" int qmm_cu_scalar_kernels(void)
{
    static const int scalar = scalar_from_env(); /* read once (a thread-safe initialization) */
    return scalar;
}

namespace {

constexpr int kTile = 32;

/* The block's row sum: each thread's part added up (modulo 2^32), into *rowsum when `valid`.
 * Every thread of the block calls it. */
__device__ void block_row_sum(uint32_t sum, int valid, int32_t *rowsum)
{
    __shared__ uint32_t warp_sums[32];
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

/* Row r of one matrix: copy with the shift and zero padding, and sum it (one block). */
__device__ void prep_row(const uint8_t *in, int is_signed, int64_t k, int64_t kp, int valid,
                         int8_t *out, int32_t *rowsum)
{
    uint32_t sum = 0;
    for (int64_t c = threadIdx.x; c < kp; c += blockDim.x) {
        int8_t v = valid && c < k ? qmm_cu_s8(in[c], is_signed) : (int8_t)0;
        out[c] = v;
        sum += (uint32_t)(int32_t)v;
    }
    block_row_sum(sum, valid, rowsum);
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

/* prep_rows_kernel when k % 16 == 0 (every row 16-byte aligned): 16 bytes a thread at a time,
 * the shift as a word XOR and the sum by __dp4a (each word's four-byte sum, at most 512 in
 * magnitude, then added modulo 2^32 like every sum here). */
__global__ void prep_rows16_kernel(const uint8_t *src, int is_signed, int64_t nmat, int64_t rows,
                                   int64_t k, int64_t rows_p, int64_t kp, int8_t *dst,
                                   int32_t *rowsum)
{
    const uint32_t flip = is_signed ? 0u : 0x80808080u;
    int64_t r = blockIdx.x;
    for (int64_t mat = blockIdx.y; mat < nmat; mat += gridDim.y) {
        const uint4 *in = reinterpret_cast<const uint4 *>(src + (mat * rows + r) * k);
        uint4 *out = reinterpret_cast<uint4 *>(dst + (mat * rows_p + r) * kp);
        int valid = r < rows;
        uint32_t sum = 0;
        for (int64_t c = threadIdx.x; c < kp / 16; c += blockDim.x) {
            uint4 v = make_uint4(0u, 0u, 0u, 0u);
            if (valid && c < k / 16) {
                v = in[c];
                v.x ^= flip;
                v.y ^= flip;
                v.z ^= flip;
                v.w ^= flip;
                sum += (uint32_t)__dp4a((int)v.x, 0x01010101, 0) +
                       (uint32_t)__dp4a((int)v.y, 0x01010101, 0) +
                       (uint32_t)__dp4a((int)v.z, 0x01010101, 0) +
                       (uint32_t)__dp4a((int)v.w, 0x01010101, 0);
            }
            out[c] = v;
        }
        block_row_sum(sum, valid, rowsum + mat * rows + r);
    }
}

/* prep_cols_kernel when n % 4 == 0 (every row of B 4-byte aligned): a 64 x 64 tile of B (k0..,
 * j0..) read as words, written transposed as words (four K values of one column each), and each
 * column's partial sum reduced over the 16 lanes that hold it before one atomic add. 256
 * threads. */
constexpr int kWide = 64;

__global__ void prep_cols4_kernel(const uint8_t *src, int is_signed, int64_t nmat, int64_t k,
                                  int64_t n, int64_t n_p, int64_t kp, int8_t *dst,
                                  int32_t *colsum)
{
    /* tile[kk][word of 4 columns]; the pitch of 17 words spreads the transposed reads */
    __shared__ uint32_t tile[kWide][kWide / 4 + 1];
    const uint32_t flip = is_signed ? 0u : 0x80808080u;
    const int t = threadIdx.x;
    const int64_t k0 = (int64_t)blockIdx.x * kWide;
    for (int64_t mat = blockIdx.z; mat < nmat; mat += gridDim.z) {
        const uint8_t *in = src + mat * k * n;
        int8_t *out = dst + mat * n_p * kp;
        for (int64_t j0 = (int64_t)blockIdx.y * kWide; j0 < n_p;
             j0 += (int64_t)gridDim.y * kWide) {
            for (int e = t; e < kWide * kWide / 4; e += blockDim.x) {
                int kk = e / (kWide / 4), w = e % (kWide / 4);
                int64_t gk = k0 + kk, gj = j0 + 4 * w;
                uint32_t v = 0;
                if (gk < k && gj < n) /* n % 4 == 0: the whole word is inside B */
                    v = *reinterpret_cast<const uint32_t *>(in + gk * n + gj) ^ flip;
                tile[kk][w] = v;
            }
            __syncthreads();
            for (int e = t; e < kWide * kWide / 4; e += blockDim.x) {
                int jj = e / (kWide / 4), q = e % (kWide / 4); /* column jj, K values 4q.. */
                int sh = 8 * (jj % 4);
                uint32_t b0 = (tile[4 * q][jj / 4] >> sh) & 0xffu;
                uint32_t b1 = (tile[4 * q + 1][jj / 4] >> sh) & 0xffu;
                uint32_t b2 = (tile[4 * q + 2][jj / 4] >> sh) & 0xffu;
                uint32_t b3 = (tile[4 * q + 3][jj / 4] >> sh) & 0xffu;
                uint32_t word = b0 | b1 << 8 | b2 << 16 | b3 << 24;
                int64_t gj = j0 + jj, gk = k0 + 4 * q;
                if (gj < n_p && gk < kp) /* kp % 4 == 0: the whole word is inside the row */
                    *reinterpret_cast<uint32_t *>(out + gj * kp + gk) = word;
                /* the 16 lanes of column jj are one half-warp (e % 16 == q) */
                uint32_t sum = (uint32_t)__dp4a((int)word, 0x01010101, 0);
                for (int off = 8; off > 0; off >>= 1)
                    sum += __shfl_xor_sync(0xffffffffu, sum, off);
                if (q == 0 && gj < n)
                    atomicAdd(reinterpret_cast<unsigned int *>(colsum + mat * n + gj), sum);
            }
            __syncthreads();
        }
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

/* The QLinearMatMul (per-tensor y) and MatMulInteger epilogue, four columns a thread: one
 * 16-byte read of the accumulators, the column terms loaded once for `rows` rows, and one word
 * (QLinearMatMul) or 16 bytes (MatMulInteger) written where n % 4 == 0. The arithmetic is
 * epilogue.h's, element for element (qmm_cu_correct, qmm_cu_requant). p.ldd % 4 == 0 and the
 * accumulators hold whole padded rows, so the read never leaves them. */
/* The exact decision of one element, out of line: rare, and inlined once per element of a
 * four-column thread it made the kernel slower (BENCHMARKS.md, H200). */
__device__ __noinline__ int32_t requant_cold(int32_t acc, double sa, double sb, double sy,
                                             double cm, int32_t zy, int32_t qmin, int32_t qmax)
{
    return qmm_cu_requant(acc, sa, sb, sy, cm, zy, qmin, qmax);
}

constexpr int kEpiRows = 16;  /* rows a thread when M is large ... */
constexpr int kEpiRowsAt = 512; /* ... from this M; below, one row a thread (more threads; on an
                                 * H200 1 row won at M = 16 and 128, 16 rows at M = 1000) */

template <bool MMI> __global__ void epilogue4_kernel(qmm_cu_epi p, int rows)
{
    int64_t j = 4 * ((int64_t)blockIdx.x * blockDim.x + threadIdx.x);
    if (j >= p.n)
        return;
    int nc = p.n - j < 4 ? (int)(p.n - j) : 4;
    int32_t cs[4], db[4];
    double sb[4], cm[4];
    for (int c = 0; c < 4; c++) {
        int64_t jc = c < nc ? j + c : j; /* columns past n repeat column j: never written */
        cs[c] = p.colsum[jc];
        db[c] = p.db[jc];
        sb[c] = MMI ? 0.0 : p.sb[jc];
        cm[c] = MMI ? 0.0 : p.cm[jc];
    }
    int64_t i0 = ((int64_t)blockIdx.y * blockDim.y + threadIdx.y) * rows;
    int64_t stride = (int64_t)gridDim.y * blockDim.y * rows;
    bool whole = nc == 4 && p.n % 4 == 0 && p.ldy % 4 == 0;
    for (int64_t ib = i0; ib < p.m; ib += stride)
        for (int64_t i = ib; i < ib + rows && i < p.m; i++) {
            int4 d = *reinterpret_cast<const int4 *>(p.dot + i * p.ldd + j);
            int32_t dot[4] = {d.x, d.y, d.z, d.w};
            int32_t rs = p.rowsum[i], da = p.da[i];
            double sa = MMI ? 0.0 : p.sa[i];
            int32_t q[4];
            for (int c = 0; c < 4; c++) {
                int32_t acc = qmm_cu_correct(dot[c], rs, cs[c], da, db[c], p.k);
                if (MMI)
                    q[c] = acc;
                else if (!qmm_cu_requant_fast(acc, sa, cm[c], p.zy, p.qmin, p.qmax, &q[c]))
                    q[c] = requant_cold(acc, sa, sb[c], p.sy, cm[c], p.zy, p.qmin, p.qmax);
            }
            int64_t o = i * p.ldy + j;
            if (MMI) {
                int32_t *y = static_cast<int32_t *>(p.y) + o;
                if (whole)
                    *reinterpret_cast<int4 *>(y) = make_int4(q[0], q[1], q[2], q[3]);
                else
                    for (int c = 0; c < nc; c++)
                        y[c] = q[c];
            } else {
                uint8_t *y = static_cast<uint8_t *>(p.y) + o;
                if (whole)
                    *reinterpret_cast<uint32_t *>(y) =
                        ((uint32_t)q[0] & 0xffu) | ((uint32_t)q[1] & 0xffu) << 8 |
                        ((uint32_t)q[2] & 0xffu) << 16 | ((uint32_t)q[3] & 0xffu) << 24;
                else
                    for (int c = 0; c < nc; c++)
                        y[c] = (uint8_t)((uint32_t)q[c] & 0xffu);
            }
        }
}

/* 1 when p is a multiple of `bytes` (the word-wide kernels' vector accesses) */
bool aligned(const void *p, int bytes)
{
    return (uintptr_t)p % (uintptr_t)bytes == 0;
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
    if (k % 16 == 0 && kp % 16 == 0 && aligned(src, 16) && aligned(dst, 16) && !qmm_cu_scalar_kernels())
        prep_rows16_kernel<<<grid, 128, 0, s>>>(src, is_signed, nmat, rows, k, rows_p, kp, dst,
                                                 rowsum);
    else
        prep_rows_kernel<<<grid, 256, 0, s>>>(src, is_signed, nmat, rows, k, rows_p, kp, dst,
                                              rowsum);
    return cudaGetLastError();
}

extern "C" cudaError_t qmm_cu_launch_prep_cols(const uint8_t *src, int is_signed, int64_t nmat,
                                               int64_t k, int64_t n, int64_t n_p, int64_t kp,
                                               int8_t *dst, int32_t *colsum, cudaStream_t s)
{
    if (nmat == 0 || n_p == 0 || kp == 0)
        return cudaSuccess;
    if (n % 4 == 0 && kp % 4 == 0 && aligned(src, 4) && aligned(dst, 4) && !qmm_cu_scalar_kernels()) {
        dim3 grid((unsigned int)((kp + kWide - 1) / kWide), blocks_for(n_p, kWide),
                  blocks_for(nmat, 1));
        prep_cols4_kernel<<<grid, 256, 0, s>>>(src, is_signed, nmat, k, n, n_p, kp, dst, colsum);
        return cudaGetLastError();
    }
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
    /* its 16-byte reads of dot need dot and ldd 16-byte aligned; its word (16-byte, for
     * MatMulInteger) writes of y happen only where n and ldy % 4 == 0, and need y aligned as
     * well */
    if ((!p->mmi && !p->y_per_tensor) || p->ldd % 4 != 0 || !aligned(p->dot, 16) ||
        (p->n % 4 == 0 && p->ldy % 4 == 0 && !aligned(p->y, p->mmi ? 16 : 4)) ||
        qmm_cu_scalar_kernels())
        return launch_epilogue(epilogue_kernel<qmm_cu_epi>, p, s);
    if (p->m == 0 || p->n == 0)
        return cudaSuccess;
    int rows = p->m >= kEpiRowsAt ? kEpiRows : 1;
    dim3 block(32, 4);
    dim3 grid((unsigned int)((p->n + 4 * 32 - 1) / (4 * 32)), blocks_for(p->m, 4 * rows));
    if (p->mmi)
        epilogue4_kernel<true><<<grid, block, 0, s>>>(*p, rows);
    else
        epilogue4_kernel<false><<<grid, block, 0, s>>>(*p, rows);
    return cudaGetLastError();
}

extern "C" cudaError_t qmm_cu_launch_qord_epilogue(const qmm_cu_qord *p, cudaStream_t s)
{
    return launch_epilogue(epilogue_kernel<qmm_cu_qord>, p, s);
}
