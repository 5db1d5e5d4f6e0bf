// The CUDA kernels tests/cuda_host runs on the host, with C entry points for ctypes: grid and
// block dimensions first, then the kernel's own arguments. Built by test_kernels_on_host.py.
#include "cuda_host.h"

long long zoom_shared[1 << 16];  // _zoom_cuda.cu's interpolation tiles (at most 48 KiB is asked)
unsigned long long warp_slot[1024 / 32 + 1];  // _bilateral_cuda.cu's (the hole list)
alignas(16) unsigned char c3_smem[48 * 1024];  // _convolve3d_cuda.cu's taps
int pf_shared[48 * 1024 / 4];  // _zoom_cuda.cu's prefilter tiles
int fill_shared[1 << 13];  // _bilateral_cuda.cu's hole fill

#include "../../src/portcv/transform/_zoom_cuda.cu"
#include "../../src/portcv/_bilateral_cuda.cu"
#include "../../src/portcv/depth/_propagate_cuda.cu"
#include "../../src/portcv/volume/_convolve3d_cuda.cu"

#define DIMS unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz
#define LAUNCH(...) host_launch(gx, gy, gz, bx, by, bz, [&] { __VA_ARGS__; })

extern "C" {
void prefilter_tiles(DIMS, const unsigned char* in, const int* taps, long long planes, int H, int W, int C, int rows,
                     int px, int tiles_y, int* out) {
    LAUNCH(portcv_spline_prefilter_tiles(in, taps, planes, H, W, C, rows, px, tiles_y, out));
}

#define ZOOM_TILES(NAME, T, TAPS, EXACT)                                                                          \
    void NAME(DIMS, const T* in, long long planes, int H, int W, int C, int dh, int dw, const int* xi,               \
              const int* xw, const int* yi, const int* yw, const int* bands, int tile_rows, int tiles_y,             \
              unsigned long long sx_d, unsigned long long sx_m, int sx_s1, int sx_s2, long long half_sx, int shift,  \
              long long half_div, long long top, int e, int narrow, unsigned long long q_d, unsigned long long q_m,  \
              int q_s1, int q_s2, unsigned char* out) {                                                              \
        LAUNCH(portcv_spline_zoom_tiles<T, TAPS, EXACT>(in, planes, H, W, C, dh, dw, xi, xw, yi, yw, bands,          \
                                                        tile_rows, tiles_y, sx_d, sx_m, sx_s1, sx_s2, half_sx,       \
                                                        shift, half_div, top, e, narrow, q_d, q_m, q_s1, q_s2, out)); \
    }
ZOOM_TILES(zoom_tiles_uchar_1_true, unsigned char, 1, true)
ZOOM_TILES(zoom_tiles_uchar_2_true, unsigned char, 2, true)
ZOOM_TILES(zoom_tiles_uchar_4_true, unsigned char, 4, true)
ZOOM_TILES(zoom_tiles_uchar_1_false, unsigned char, 1, false)
ZOOM_TILES(zoom_tiles_uchar_2_false, unsigned char, 2, false)
ZOOM_TILES(zoom_tiles_uchar_4_false, unsigned char, 4, false)
ZOOM_TILES(zoom_tiles_int_1_true, int, 1, true)
ZOOM_TILES(zoom_tiles_int_2_true, int, 2, true)
ZOOM_TILES(zoom_tiles_int_4_true, int, 4, true)
ZOOM_TILES(zoom_tiles_int_1_false, int, 1, false)
ZOOM_TILES(zoom_tiles_int_2_false, int, 2, false)
ZOOM_TILES(zoom_tiles_int_4_false, int, 4, false)

#define LIST_HOLES(NAME, V)                                                                                 \
    void NAME(DIMS, const V* values, long long n, int fill, V* out, unsigned long long* count, long long* holes) { \
        LAUNCH(portcv_bilateral_list_holes<V>(values, n, fill, out, count, holes));                           \
    }
LIST_HOLES(list_holes_uchar, unsigned char)
LIST_HOLES(list_holes_ushort, unsigned short)

#define FILL_HOLES(NAME, V, CG, L2, WIDE, SHARED)                                                            \
    void NAME(DIMS, const unsigned char* guide, const V* values, const int* table, const int* spatial,         \
              const int2* offsets, int taps, int reach, int table_len, int H, int W, int border, int fill,      \
              const unsigned long long* count, const long long* holes, V* out) {                                \
        LAUNCH((portcv_bilateral_fill_holes<V, CG, L2, WIDE, SHARED>(guide, values, table, spatial, offsets,   \
                                                                     taps, reach, table_len, H, W, border, fill, \
                                                                     count, holes, out)));                      \
    }
#define FILL_HOLES_CG(V, NAME_V, CG)                                                        \
    FILL_HOLES(fill_holes_##NAME_V##_##CG##_false_false_false, V, CG, false, false, false)  \
    FILL_HOLES(fill_holes_##NAME_V##_##CG##_false_true_false, V, CG, false, true, false)    \
    FILL_HOLES(fill_holes_##NAME_V##_##CG##_true_false_false, V, CG, true, false, false)    \
    FILL_HOLES(fill_holes_##NAME_V##_##CG##_true_true_false, V, CG, true, true, false)      \
    FILL_HOLES(fill_holes_##NAME_V##_##CG##_false_false_true, V, CG, false, false, true)    \
    FILL_HOLES(fill_holes_##NAME_V##_##CG##_false_true_true, V, CG, false, true, true)      \
    FILL_HOLES(fill_holes_##NAME_V##_##CG##_true_false_true, V, CG, true, false, true)      \
    FILL_HOLES(fill_holes_##NAME_V##_##CG##_true_true_true, V, CG, true, true, true)
FILL_HOLES_CG(unsigned char, uchar, 1)
FILL_HOLES_CG(unsigned char, uchar, 3)
FILL_HOLES_CG(unsigned short, ushort, 1)
FILL_HOLES_CG(unsigned short, ushort, 3)

void zbuffer_min(DIMS, const long long* dest, const long long* key, long long n, long long slots,
                 unsigned long long* out) {
    LAUNCH(portcv_zbuffer_min(dest, key, n, slots, out));
}

#define PROPAGATION(V, NAME_V)                                                                                     \
    void depth_project_##NAME_V(DIMS, const V* depth, const long long* m, int height, int width, int dh, int dw,     \
                                long long unknown, long long max_depth, int bits, long long* dest, long long* key) { \
        LAUNCH(portcv_depth_project<V>(depth, m, height, width, dh, dw, unknown, max_depth, bits, dest, key));      \
    }                                                                                                                \
    void disparity_project_##NAME_V(DIMS, const V* disparity, int height, int width, int direction, int frac_bits,  \
                                    long long unknown, long long max_value, long long* dest, long long* key) {      \
        LAUNCH(portcv_disparity_project<V>(disparity, height, width, direction, frac_bits, unknown, max_value, dest, \
                                           key));                                                                   \
    }                                                                                                                \
    void zbuffer_gather_##NAME_V(DIMS, const long long* best, long long slots, long long offset, long long sign,     \
                                 long long unknown, const unsigned char* color, int channels, int fill, V* depth,    \
                                 unsigned char* picked) {                                                            \
        LAUNCH(portcv_zbuffer_gather<V>(best, slots, offset, sign, unknown, color, channels, fill, depth, picked));   \
    }
PROPAGATION(unsigned char, uchar)
PROPAGATION(unsigned short, ushort)

#define CONVOLVE3D(NAME, IN, ACC, KW, XS)                                                                        \
    void NAME(DIMS, const IN* src, int* dst, int Tp, int Hp, int Wp, int pitch, int T_out, int H, int W, int KT,  \
              int KH, int F, int t_blocks, const int* taps) {                                                     \
        LAUNCH((portcv_convolve3d<IN, ACC, KW, XS>(src, dst, Tp, Hp, Wp, pitch, T_out, H, W, KT, KH, F, t_blocks,  \
                                                   taps)));                                                       \
    }
#define CONVOLVE3D_KW(IN, NAME_IN, KW, XS)                                   \
    CONVOLVE3D(convolve3d_##NAME_IN##_float_##KW##_##XS, IN, float, KW, XS)  \
    CONVOLVE3D(convolve3d_##NAME_IN##_int_##KW##_##XS, IN, int, KW, XS)
#define CONVOLVE3D_IN(IN, NAME_IN)                                                                                \
    void convolve3d_pad_##NAME_IN(DIMS, const IN* src, IN* dst, int frames, int T, int H, int W, int Tp, int Hp,      \
                                  int Wp, int pitch, int pad_t, int border, int border_value) {                      \
        LAUNCH(portcv_convolve3d_pad<IN>(src, dst, frames, T, H, W, Tp, Hp, Wp, pitch, pad_t, border, border_value)); \
    }                                                                                                                 \
    CONVOLVE3D_KW(IN, NAME_IN, 1, 8) CONVOLVE3D_KW(IN, NAME_IN, 3, 8) CONVOLVE3D_KW(IN, NAME_IN, 5, 8) \
    CONVOLVE3D_KW(IN, NAME_IN, 7, 8) CONVOLVE3D_KW(IN, NAME_IN, 9, 8) CONVOLVE3D_KW(IN, NAME_IN, 11, 4)
CONVOLVE3D_IN(unsigned char, uchar)
CONVOLVE3D_IN(unsigned short, ushort)
CONVOLVE3D_IN(short, short)

#define CONVOLVE3D_TO_FFT(IN, NAME_IN)                                                                             \
    void convolve3d_to_fft_##NAME_IN(DIMS, const IN* src, double* dst, long long rows, int T, int H, int W, int Tp, \
                                     int Hp, int Wp, int T2, int H2, int W2, int pad_t, int ph, int pw, int border,   \
                                     int border_value) {                                                              \
        LAUNCH(portcv_convolve3d_to_fft<IN>(src, dst, rows, T, H, W, Tp, Hp, Wp, T2, H2, W2, pad_t, ph, pw, border,    \
                                            border_value));                                                           \
    }
CONVOLVE3D_TO_FFT(unsigned char, uchar)
CONVOLVE3D_TO_FFT(unsigned short, ushort)
CONVOLVE3D_TO_FFT(short, short)

void convolve3d_spectral_sum(DIMS, const double2* frames, const double2* spectra, double2* out, long long jobs, int Tp,
                             int T_out, int KT, int F, int bins, int runs) {
    LAUNCH(portcv_convolve3d_spectral_sum(frames, spectra, out, jobs, Tp, T_out, KT, F, bins, runs));
}

void convolve3d_round(DIMS, const double* src, int* dst, long long rows, int T_out, int src_frames, int t_off, int H2,
                      int W2, int y0, int x0, int dst_frames, int dst_off, int H, int W) {
    LAUNCH(portcv_convolve3d_round(src, dst, rows, T_out, src_frames, t_off, H2, W2, y0, x0, dst_frames, dst_off, H, W));
}
}
