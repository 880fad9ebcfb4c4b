/* Data tests for the typed, sized and mem RMA families in the style of
 * Intel SHMEM's tester: element counts doubling from 1 to 65536, element
 * offsets, neighbour and all-to-all patterns, strided and block-strided
 * forms (also with negative and zero strides), p/g, nbi + quiet. Every
 * element is checked, and so are the elements just outside the target
 * range. */
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "test_util.h"

#define MAXN 65536
#define PAD 16

static int me, npes, right, left;

/* Copies nbytes of symmetric memory at sym into private memory at chk,
 * which first holds 0xff bytes: a value no check expects (NaN for the
 * floating types), so nothing stale there can pass for a result. */
static void fetch_sym(void *chk, const void *sym, size_t nbytes) {
    memset(chk, 0xff, nbytes);
    SYM_GET(chk, sym, nbytes);
}

/* Value element i of a transfer of n elements from PE pe carries. */
#define VAL(T, pe, i, n, salt) ((T)(((pe) * 37 + (i) * 11 + (n) + (salt)) % 113 + 1))

/* One block per type: contiguous put/get/nbi to the right/left neighbour,
 * with element offsets, then all-to-all, p/g, strided and block-strided. */
#define TEST_TYPE(T, NAME)                                                           \
static void test_##NAME(void) {                                                      \
    T *sym = shmem_malloc((MAXN + 2 * PAD) * sizeof(T));                             \
    T *loc = malloc((MAXN + 2 * PAD) * sizeof(T));                                   \
    T *src = malloc((MAXN + PAD) * sizeof(T));                                       \
    T *chk = malloc((MAXN + 2 * PAD) * sizeof(T)); /* private copy of sym */         \
    CHECK(sym && loc && src && chk, "allocation failed");                            \
    static const int offs[] = {0, 1, 3};                                             \
    for (int variant = 0; variant < 4; variant++)                                    \
    for (size_t n = 1; n <= MAXN; n *= 2)                                            \
    for (int oi = 0; oi < 3; oi++) {                                                 \
        int off = offs[oi];                                                          \
        for (size_t i = 0; i < n + 2 * PAD; i++) chk[i] = (T)0;                      \
        SYM_PUT(sym, chk, (n + 2 * PAD) * sizeof(T));                                \
        for (size_t i = 0; i < n; i++) src[i] = VAL(T, me, i, n, variant);           \
        shmem_barrier_all();                                                         \
        if (variant == 0) shmem_##NAME##_put(sym + PAD + off, src, n, right);        \
        if (variant == 1) { shmem_##NAME##_put_nbi(sym + PAD + off, src, n, right);  \
                            shmem_quiet(); }                                          \
        if (variant >= 2) {                                                          \
            /* stage my data locally, let the left neighbour get it */               \
            SYM_PUT(sym + PAD + off, src, n * sizeof(T));                            \
        }                                                                            \
        shmem_barrier_all();                                                         \
        if (variant < 2) {                                                           \
            fetch_sym(chk, sym, (n + 2 * PAD) * sizeof(T));                          \
            for (size_t i = 0; i < n; i++)                                           \
                CHECK(chk[PAD + off + i] == VAL(T, left, i, n, variant),             \
                      #NAME " put variant %d n=%zu off=%d i=%zu", variant, n, off, i); \
            CHECK(chk[PAD + off - 1] == (T)0 && chk[PAD + off + n] == (T)0,          \
                  #NAME " put wrote outside its range (n=%zu off=%d)", n, off);      \
        } else {                                                                     \
            for (size_t i = 0; i < n + 2; i++) loc[i] = (T)0;                        \
            if (variant == 2) shmem_##NAME##_get(loc + 1, sym + PAD + off, n, right);\
            else { shmem_##NAME##_get_nbi(loc + 1, sym + PAD + off, n, right);       \
                   shmem_quiet(); }                                                  \
            for (size_t i = 0; i < n; i++)                                           \
                CHECK(loc[1 + i] == VAL(T, right, i, n, variant),                    \
                      #NAME " get variant %d n=%zu off=%d i=%zu", variant, n, off, i); \
            CHECK(loc[0] == (T)0 && loc[n + 1] == (T)0,                              \
                  #NAME " get wrote outside its range (n=%zu)", n);                  \
        }                                                                            \
        shmem_barrier_all(); /* peers read my copy before I clear it */              \
    }                                                                                \
    /* all-to-all: block from PE p lands at p * n on every PE */                     \
    for (size_t n = 1; n * npes <= MAXN && n <= 4096; n *= 4) {                      \
        for (size_t i = 0; i < n; i++) src[i] = VAL(T, me, i, n, 7);                 \
        shmem_barrier_all();                                                         \
        for (int k = 0; k < npes; k++)                                               \
            shmem_##NAME##_put(sym + me * n, src, n, (me + k) % npes);               \
        shmem_barrier_all();                                                         \
        fetch_sym(chk, sym, npes * n * sizeof(T));                                   \
        for (int p = 0; p < npes; p++)                                               \
            for (size_t i = 0; i < n; i++)                                           \
                CHECK(chk[p * n + i] == VAL(T, p, i, n, 7),                          \
                      #NAME " all-to-all n=%zu from PE %d i=%zu", n, p, i);          \
    }                                                                                \
    /* p and g: element me on every PE */                                            \
    shmem_barrier_all();                                                             \
    for (int k = 0; k < npes; k++)                                                   \
        shmem_##NAME##_p(sym + me, VAL(T, me, k, 1, 3), k);                          \
    shmem_barrier_all();                                                             \
    fetch_sym(chk, sym, npes * sizeof(T));                                           \
    for (int p = 0; p < npes; p++) {                                                 \
        CHECK(chk[p] == VAL(T, p, me, 1, 3), #NAME " p from PE %d", p);              \
        CHECK(shmem_##NAME##_g(sym + p, right) == VAL(T, p, right, 1, 3),            \
              #NAME " g of element %d from PE %d", p, right);                        \
    }                                                                                \
    /* strided: iput with dst stride 3, src stride 2; iget back with strides 2, 3 */ \
    for (size_t n = 1; n <= 8192; n *= 2) {                                          \
        shmem_barrier_all();                                                         \
        for (size_t i = 0; i < 3 * n + 1; i++) chk[i] = (T)0;                        \
        SYM_PUT(sym, chk, (3 * n + 1) * sizeof(T));                                  \
        for (size_t i = 0; i < 2 * n; i++) src[i] = VAL(T, me, i, n, 5);             \
        shmem_barrier_all();                                                         \
        shmem_##NAME##_iput(sym, src, 3, 2, n, right);                               \
        shmem_barrier_all();                                                         \
        fetch_sym(chk, sym, 3 * n * sizeof(T));                                      \
        for (size_t i = 0; i < 3 * n; i++) {                                         \
            T want = (i % 3 == 0) ? VAL(T, left, (i / 3) * 2, n, 5) : (T)0;          \
            CHECK(chk[i] == want, #NAME " iput n=%zu element %zu", n, i);            \
        }                                                                            \
        for (size_t i = 0; i < 2 * n; i++) loc[i] = (T)0;                            \
        shmem_##NAME##_iget(loc, sym, 2, 3, n, right);                               \
        for (size_t i = 0; i < 2 * n; i++) {                                         \
            T want = (i % 2 == 0) ? VAL(T, me, i, n, 5) : (T)0;                      \
            CHECK(loc[i] == want, #NAME " iget n=%zu element %zu", n, i);            \
        }                                                                            \
    }                                                                                \
    /* block-strided: blocks of 3, dest blocks 5 apart, source blocks 4 apart */     \
    for (size_t nb = 1; nb <= 1024; nb *= 4) {                                       \
        shmem_barrier_all();                                                         \
        for (size_t i = 0; i < 5 * nb + 3; i++) chk[i] = (T)0;                       \
        SYM_PUT(sym, chk, (5 * nb + 3) * sizeof(T));                                 \
        for (size_t i = 0; i < 4 * nb; i++) src[i] = VAL(T, me, i, nb, 9);           \
        shmem_barrier_all();                                                         \
        shmem_##NAME##_ibput(sym, src, 5, 4, 3, nb, right);                          \
        shmem_barrier_all();                                                         \
        fetch_sym(chk, sym, 5 * nb * sizeof(T));                                     \
        for (size_t b = 0; b < nb; b++)                                              \
            for (size_t j = 0; j < 5; j++) {                                         \
                T want = j < 3 ? VAL(T, left, 4 * b + j, nb, 9) : (T)0;              \
                CHECK(chk[5 * b + j] == want, #NAME " ibput nb=%zu block %zu elt %zu", nb, b, j); \
            }                                                                        \
        for (size_t i = 0; i < 4 * nb; i++) loc[i] = (T)0;                           \
        shmem_##NAME##_ibget(loc, sym, 4, 5, 3, nb, right);                          \
        for (size_t b = 0; b < nb; b++)                                              \
            for (size_t j = 0; j < 4; j++) {                                         \
                T want = j < 3 ? VAL(T, me, 4 * b + j, nb, 9) : (T)0;                \
                CHECK(loc[4 * b + j] == want, #NAME " ibget nb=%zu block %zu elt %zu", nb, b, j); \
            }                                                                        \
    }                                                                                \
    shmem_barrier_all();                                                             \
    free(chk); free(src); free(loc);                                                 \
    shmem_free(sym);                                                                 \
}

#define TYPES(X)                                                                     \
    X(float, float) X(double, double) X(char, char) X(signed char, schar)            \
    X(short, short) X(int, int) X(long, long) X(long long, longlong)                 \
    X(unsigned char, uchar) X(unsigned short, ushort) X(unsigned int, uint)          \
    X(unsigned long, ulong) X(unsigned long long, ulonglong)                         \
    X(int8_t, int8) X(int16_t, int16) X(int32_t, int32) X(int64_t, int64)            \
    X(uint8_t, uint8) X(uint16_t, uint16) X(uint32_t, uint32) X(uint64_t, uint64)    \
    X(size_t, size) X(ptrdiff_t, ptrdiff)

TYPES(TEST_TYPE)

/* Sized forms: the bit pattern must arrive exactly. */
typedef struct { uint64_t lo, hi; } b128;
#define BYTEVAL(pe, i, salt) ((unsigned char)(((pe) * 29 + (i) * 13 + (salt)) % 251))

static void fill_bytes(unsigned char *p, size_t nbytes, int pe, int salt) {
    for (size_t i = 0; i < nbytes; i++) p[i] = BYTEVAL(pe, i, salt);
}

#define TEST_SIZED(BITS)                                                             \
static void test_sized_##BITS(void) {                                                \
    const size_t esz = BITS / 8;                                                     \
    unsigned char *sym = shmem_malloc(4096 * esz * 4);                               \
    unsigned char *src = malloc(4096 * esz * 4), *loc = malloc(4096 * esz * 4);      \
    unsigned char *zero = calloc(4096 * esz * 4, 1), *chk = malloc(4096 * esz * 4);  \
    for (size_t n = 1; n <= 4096; n *= 8) {                                          \
        SYM_PUT(sym, zero, 4096 * esz * 4);                                          \
        fill_bytes(src, n * esz * 2, me, BITS);                                      \
        shmem_barrier_all();                                                         \
        shmem_put##BITS(sym, src, n, right);                                         \
        shmem_put##BITS##_nbi(sym + n * esz, src, n, right);                         \
        shmem_quiet();                                                               \
        shmem_barrier_all();                                                         \
        fetch_sym(chk, sym, 2 * n * esz);                                            \
        for (size_t i = 0; i < n * esz; i++) {                                       \
            CHECK(chk[i] == BYTEVAL(left, i, BITS), "put%d n=%zu byte %zu", BITS, n, i); \
            CHECK(chk[n * esz + i] == BYTEVAL(left, i, BITS), "put%d_nbi n=%zu byte %zu", BITS, n, i); \
        }                                                                            \
        shmem_get##BITS(loc, sym, n, right);                                         \
        CHECK(memcmp(loc, src, n * esz) == 0, "get%d n=%zu", BITS, n);               \
        shmem_get##BITS##_nbi(loc, sym + n * esz, n, right);                         \
        shmem_quiet();                                                               \
        CHECK(memcmp(loc, src, n * esz) == 0, "get%d_nbi n=%zu", BITS, n);           \
        shmem_barrier_all();                                                         \
        SYM_PUT(sym, zero, 4096 * esz * 4);                                          \
        shmem_barrier_all();                                                         \
        shmem_iput##BITS(sym, src, 2, 1, n, right); /* element i -> 2i */            \
        shmem_barrier_all();                                                         \
        fetch_sym(chk, sym, 2 * n * esz);                                            \
        for (size_t i = 0; i < n; i++)                                               \
            for (size_t b = 0; b < esz; b++) {                                       \
                CHECK(chk[2 * i * esz + b] == BYTEVAL(left, i * esz + b, BITS),      \
                      "iput%d n=%zu elt %zu", BITS, n, i);                           \
                CHECK(chk[(2 * i + 1) * esz + b] == 0, "iput%d hole n=%zu elt %zu", BITS, n, i); \
            }                                                                        \
        memset(loc, 0, n * esz);                                                     \
        shmem_iget##BITS(loc, sym, 1, 2, n, right);                                  \
        CHECK(memcmp(loc, src, n * esz) == 0, "iget%d n=%zu", BITS, n);              \
        memset(loc, 0, 2 * n * esz);                                                 \
        shmem_ibget##BITS(loc, sym, 1, 2, 1, n, right);                              \
        CHECK(memcmp(loc, src, n * esz) == 0, "ibget%d n=%zu", BITS, n);             \
        shmem_barrier_all();                                                         \
        SYM_PUT(sym, zero, 4096 * esz * 4);                                          \
        shmem_barrier_all();                                                         \
        shmem_ibput##BITS(sym, src, 3, 2, 2, n / 2 + 1, right);                      \
        shmem_barrier_all();                                                         \
        fetch_sym(chk, sym, 3 * (n / 2 + 1) * esz);                                  \
        for (size_t blk = 0; blk < n / 2 + 1; blk++)                                 \
            for (size_t b = 0; b < esz; b++) {                                       \
                CHECK(chk[3 * blk * esz + b] == BYTEVAL(left, 2 * blk * esz + b, BITS) && \
                      chk[(3 * blk + 1) * esz + b] == BYTEVAL(left, (2 * blk + 1) * esz + b, BITS) && \
                      chk[(3 * blk + 2) * esz + b] == 0,                             \
                      "ibput%d n=%zu block %zu byte %zu", BITS, n, blk, b);          \
            }                                                                        \
    }                                                                                \
    shmem_barrier_all();                                                             \
    free(chk); free(zero); free(src); free(loc);                                     \
    shmem_free(sym);                                                                 \
}
TEST_SIZED(8)
TEST_SIZED(16)
TEST_SIZED(32)
TEST_SIZED(64)
TEST_SIZED(128)

/* putmem/getmem at byte offsets 0..15, sizes doubling. */
static void test_mem(void) {
    unsigned char *sym = shmem_malloc(MAXN + 64);
    unsigned char *src = malloc(MAXN + 64), *loc = malloc(MAXN + 64);
    unsigned char *zero = calloc(MAXN + 64, 1), *chk = malloc(MAXN + 64);
    for (size_t n = 1; n <= MAXN; n *= 2)
        for (int off = 0; off < 16; off++) {
            SYM_PUT(sym, zero, MAXN + 64);
            fill_bytes(src, n, me, off);
            shmem_barrier_all();
            if (off % 2) shmem_putmem(sym + off, src, n, right);
            else { shmem_putmem_nbi(sym + off, src, n, right); shmem_quiet(); }
            shmem_barrier_all();
            fetch_sym(chk, sym, off + n + 1);
            for (size_t i = 0; i < n; i++)
                CHECK(chk[off + i] == BYTEVAL(left, i, off), "putmem n=%zu off=%d byte %zu", n, off, i);
            CHECK((off == 0 || chk[off - 1] == 0) && chk[off + n] == 0, "putmem n=%zu off=%d overran", n, off);
            memset(loc, 0xee, n + 2);
            if (off % 2) shmem_getmem(loc + 1, sym + off, n, right);
            else { shmem_getmem_nbi(loc + 1, sym + off, n, right); shmem_quiet(); }
            for (size_t i = 0; i < n; i++)
                CHECK(loc[1 + i] == BYTEVAL(me, i, off), "getmem n=%zu off=%d byte %zu", n, off, i);
            CHECK(loc[0] == 0xee && loc[n + 1] == 0xee, "getmem n=%zu overran", n);
            shmem_barrier_all();
        }
    shmem_barrier_all();
    free(chk); free(zero); free(src); free(loc);
    shmem_free(sym);
}

/* Negative and zero strides: iput to every second element going down,
 * iget back going down on both sides, and a zero source stride (one
 * element to many). Through the proxy these take its strided paths. */
static void test_negative_strides(void) {
    long *x = shmem_calloc(256, sizeof(long));
    long src[64], got[64];
    for (int i = 0; i < 64; i++) src[i] = 1000 * me + i;
    shmem_barrier_all();
    shmem_long_iput(x + 200, src, -2, 3, 20, right);
    shmem_barrier_all();
    for (int i = 0; i < 20; i++)
        CHECK(SYM_LOAD(x + 200 - 2 * i) == 1000 * left + 3 * i, "iput stride -2 element %d", i);
    CHECK(SYM_LOAD(x + 201) == 0 && SYM_LOAD(x + 199) == 0, "iput stride -2 wrote a gap");
    for (int i = 0; i < 64; i++) got[i] = -1;
    shmem_long_iget(got + 40, x + 200, -1, -2, 20, right);
    for (int i = 0; i < 20; i++) CHECK(got[40 - i] == 1000 * me + 3 * i, "iget stride -2 element %d", i);
    CHECK(got[41] == -1 && got[20] == -1, "iget stride -1 wrote outside its range");
    shmem_barrier_all();
    shmem_long_iput(x, src + 5, 1, 0, 8, right);
    shmem_barrier_all();
    for (int i = 0; i < 8; i++) CHECK(SYM_LOAD(x + i) == 1000 * left + 5, "iput source stride 0 element %d", i);
    shmem_barrier_all();
    /* larger blocks going down: 4 blocks of 64 longs, 100 apart from y + 900
     * (through the proxy, one vector put), then 4 elements 20 apart going
     * down from y + 963 (a span far wider than the data: one vector get) */
    long *y = shmem_calloc(1024, sizeof(long));
    long bsrc[256], bgot[64];
    for (int i = 0; i < 256; i++) bsrc[i] = 7000 * me + i;
    shmem_barrier_all();
    shmem_long_ibput(y + 900, bsrc, -100, 64, 64, 4, right);
    shmem_barrier_all();
    for (int b = 0; b < 4; b++)
        for (int j = 0; j < 64; j++)
            CHECK(SYM_LOAD(y + 900 - 100 * b + j) == 7000 * left + 64 * b + j, "ibput stride -100 block %d elt %d", b, j);
    CHECK(SYM_LOAD(y + 964) == 0 && SYM_LOAD(y + 599) == 0 && SYM_LOAD(y + 899) == 0, "ibput stride -100 wrote a gap");
    for (int i = 0; i < 64; i++) bgot[i] = -1;
    shmem_long_iget(bgot + 63, y + 963, -1, -20, 4, right);
    for (int k = 0; k < 4; k++) CHECK(bgot[63 - k] == 7000 * me + 63 - 20 * k, "iget stride -20 element %d", k);
    CHECK(bgot[59] == -1, "iget stride -20 wrote outside its range");
    shmem_barrier_all();
    shmem_free(y);
    shmem_free(x);
}

/* C11 generic selection: shmem_put etc. pick the typed routine. */
static void test_generic(void) {
    double *d = shmem_malloc(8 * sizeof(double));
    long *l = shmem_malloc(8 * sizeof(long));
    double ds[8]; long ls[8];
    for (int i = 0; i < 8; i++) { ds[i] = me + i * 0.5; ls[i] = me * 100 + i; }
    shmem_put(d, ds, 8, right);
    shmem_put(l, ls, 8, right);
    shmem_p(l + 7, -5L, right);
    shmem_barrier_all();
    double dgot[8]; long lgot[8];
    fetch_sym(dgot, d, sizeof dgot);
    fetch_sym(lgot, l, sizeof lgot);
    for (int i = 0; i < 7; i++) {
        CHECK(dgot[i] == left + i * 0.5, "generic put double %d", i);
        CHECK(lgot[i] == left * 100 + i, "generic put long %d", i);
    }
    CHECK(lgot[7] == -5, "generic p");
    CHECK(shmem_g(l + 7, right) == -5, "generic g");
    long back[8];
    shmem_get(back, l, 8, left);
    CHECK(back[0] == ((left + npes - 1) % npes) * 100, "generic get");
    shmem_barrier_all();
    shmem_free(l);
    shmem_free(d);
}

int main(void) {
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    right = (me + 1) % npes;
    left = (me + npes - 1) % npes;
#define CALL(T, NAME) test_##NAME();
    TYPES(CALL)
    test_sized_8(); test_sized_16(); test_sized_32(); test_sized_64(); test_sized_128();
    test_mem();
    test_negative_strides();
    test_generic();
    shmem_finalize();
    return 0;
}
