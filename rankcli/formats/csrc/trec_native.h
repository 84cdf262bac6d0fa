/* rankcli.formats.trec_native: what its three files share (read.c, join.c, module.c). module.c says what the
 * module does and why; read.c reads the files, join.c joins and ranks them. */
#ifndef RANKCLI_TREC_NATIVE_H
#define RANKCLI_TREC_NATIVE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifndef _WIN32
#include <pthread.h>
#include <sys/mman.h>
#define HAVE_THREADS 1
#endif

#define FAST_BAIL 1     /* outside the fast path's input: the caller uses the numpy path */
#define FAST_NOMEM 2    /* out of memory */
#define SLOW_NUMBER 3   /* a number for Python's conversion (with the GIL) */
#define STREAM_FALLBACK 4 /* the run cannot be joined as it is read (a query's lines apart, a number for Python) */
#define DOC_LEN_BITS 24 /* a document id is kept as its offset in the file (40 bits) and its length (24 bits) */
#define MAX_THREADS 64

/* What a byte is to the reader: part of a field, whitespace within a line (C's isspace: space \t \v \f \r), the
 * end of a line, or a NUL (which would end trec_eval's C strings: refused). */
enum { FIELD = 0, SPACE = 1, NEWLINE = 2, NUL = 3 };
extern unsigned char trec_byte_class[256];

/* An array of the input's size: from 4 MiB on, aligned to and advised for transparent huge pages, so that its first
 * touch costs one page fault per 2 MiB rather than per 4 KiB (the kernel's faults were a third of the time).
 * Released with free(). */
static inline void *big_alloc(size_t size)
{
#ifdef MADV_HUGEPAGE
    if (size >= ((size_t)4 << 20)) {
        void *p = NULL;
        if (posix_memalign(&p, (size_t)2 << 20, size) != 0)
            return NULL;
        madvise(p, size, MADV_HUGEPAGE);  /* advice: refused or unsupported, the pages are small */
        return p;
    }
#endif
    return malloc(size);
}

/* Two outcomes as one: out of memory before the input's verdict, FAST_BAIL before success. */
static inline int worse(int err, int other)
{
    return err == FAST_NOMEM || other == FAST_NOMEM ? FAST_NOMEM : err ? err : other;
}

/* ------------------------------------------------------------------------------------------------------------------
 * Hashing and query ids */

static inline uint64_t mix(uint64_t h, uint64_t w)
{
    h = (h ^ w) * 0xff51afd7ed558ccdULL;
    return h ^ (h >> 32);
}

/* A random seed drawn when the module loads (module.c): ids crafted to share one hash under a fixed seed (a flood
 * of collisions in the hash tables, quadratic time) share none under an unknown one. */
extern uint64_t trec_hash_seed;

/* Bytes p[0:n] hashed eight at a time; with n mixed in, the words taken determine the bytes. */
static inline uint64_t hash_bytes(const unsigned char *p, size_t n)
{
    uint64_t h = mix(0x9e3779b97f4a7c15ULL ^ n, trec_hash_seed), w;
    if (n >= 8) {
        size_t i = 0;
        for (; i + 8 <= n; i += 8) {
            memcpy(&w, p + i, 8);
            h = mix(h, w);
        }
        if (i < n) {
            memcpy(&w, p + n - 8, 8);
            h = mix(h, w);
        }
    } else if (n >= 4) {
        uint32_t a, b;
        memcpy(&a, p, 4);
        memcpy(&b, p + n - 4, 4);
        h = mix(h, a | (uint64_t)b << 32);
    } else if (n > 0) {
        h = mix(h, p[0] | (uint64_t)p[n / 2] << 8 | (uint64_t)p[n - 1] << 16);
    }
    h *= 0xc4ceb9fe1a85ec53ULL;
    return h ^ (h >> 29);
}

typedef struct {            /* a distinct query id */
    const unsigned char *p;
    int32_t len;
    uint64_t hash;
} Query;

typedef struct {            /* distinct query ids, numbered in order of first appearance */
    Query *items;
    Py_ssize_t count, cap;
    int32_t *slots;         /* open addressing: index into items, -1 empty; at most half full */
    Py_ssize_t nslots;
} QueryTable;

/* ------------------------------------------------------------------------------------------------------------------
 * Reading: each thread reads a slice of whole lines */

typedef struct {
    Py_ssize_t line;        /* in the slice */
    Py_ssize_t start, len;  /* the token */
} Pending;

typedef struct {
    const unsigned char *d;         /* the whole file */
    Py_ssize_t begin, end;          /* this slice's bytes */
    int fields, doc_field, value_field;
    Py_ssize_t cap;                 /* lines in the slice's bytes (trec_count_lines): room in the arrays below */
    Py_ssize_t n;                   /* data lines */
    /* The slice's share of the arrays of all the lines (Lines; not owned), from the line where it starts: */
    int32_t *codes;                 /* each line's query, numbered in `queries` */
    double *values;                 /* score (run) or relevance (qrels) */
    uint64_t *doc;                  /* each line's document id: offset << DOC_LEN_BITS | length */
    Pending *pending;               /* values left to Python's conversion */
    Py_ssize_t npending, cap_pending;
    Py_ssize_t tag_start, tag_len;  /* runs: the slice's first line's sixth field */
    int tagged;
    QueryTable queries;
    struct Stream *stream;          /* NULL: every line kept in the arrays; else each query joined when read (join.c) */
    int err;
} Slice;

typedef struct {            /* the lines of a file, read by slices into these arrays and merged in place */
    const unsigned char *d;
    Py_ssize_t n;
    int32_t *codes;         /* each line's query, by first appearance in the file (qrels: a bytearray's buffer) */
    double *values;         /* (qrels: a bytearray's buffer) */
    uint64_t *doc;
    Py_ssize_t tag_start, tag_len;
    QueryTable queries;
} Lines;

typedef void *(*Task)(void *);

/* read.c */
void trec_init_byte_classes(void);
void trec_free_queries(QueryTable *t);
int trec_query_code(QueryTable *t, const unsigned char *p, int32_t len, int add, int32_t *code);
int trec_convert_slowly(const unsigned char *p, Py_ssize_t len, double *out);
void trec_free_slice(Slice *s);
Py_ssize_t trec_count_lines(const unsigned char *d, Py_ssize_t begin, Py_ssize_t end);
int trec_read_slice(Slice *s);
void trec_run_all(Task task, char *items, size_t item_size, int count);
Py_ssize_t trec_slice_start(const unsigned char *d, Py_ssize_t size, int k, int threads);

/* join.c: the run joined query by query as it is read (each query's lines together in the file), into the ranked
 * output directly: no array of every line. */
typedef struct QrelsIndex QrelsIndex;
int trec_index_qrels(const Lines *qrels, int threads, QrelsIndex **out);
void trec_free_index(QrelsIndex *index);
int trec_stream_start(Slice *s, const QrelsIndex *index, int32_t *ranked_match, double *ranked_scores);
void trec_stream_free(Slice *s);
int trec_stream_grow(Slice *s);
int trec_stream_query(Slice *s, int32_t code, Py_ssize_t n);
int trec_stream_merge(Slice *slices, int count, Lines *run, int32_t *ranked_match, double *ranked_scores,
                      int64_t *run_first);
Py_ssize_t trec_query_slice_start(const unsigned char *d, Py_ssize_t size, int k, int threads);

/* join.c */
int trec_merge_slices(Slice *slices, int count, Lines *out);
int trec_join_all(const Lines *run, const Lines *qrels, double *ranked_scores, int32_t *ranked_match,
                  int64_t *run_first, int threads);  /* ranked_scores: NULL when not wanted */

#endif
