/* rankcli.formats.trec_native: a TREC run and its qrels read, checked and joined in C.
 *
 * This is the fast path of rankcli.formats.trec_fast; the numpy path (rankcli.formats.trec_read and trec_join) is
 * the reference, and it stays the one that reports errors. join() accepts only input whose meaning it is sure of,
 * and returns None for anything else: a line with another field count, a value that is not a plain decimal number,
 * a NUL byte, a (query, document) pair on two lines, an empty file, 2^31 lines or more, a document id of 16 MiB or
 * more. The caller then reads the files with the numpy path, which gives the same result or names the line at fault.
 *
 * What it reads is what trec_read reads: fields separated by any run of C whitespace (space, \t, \v, \f, \r), lines
 * split at \n, blank lines and lines whose first field starts with '#' skipped. Numbers are converted exactly: a
 * decimal of at most 19 significant digits that fits Clinger's fast path (mantissa <= 2^53, power of ten <= 22) by
 * one correctly rounded multiplication or division, any other by Python's correctly rounded PyOS_string_to_double;
 * Arrow's parser, which the numpy path uses, is correctly rounded too, so both give the same double.
 *
 * The work is split over `threads` threads (POSIX threads; one elsewhere), without the GIL: each reads a slice of
 * whole lines of both files, then each joins and ranks a range of queries. Query ids are numbered by first appearance
 * in each slice, then renumbered in slice order, which gives the numbering by first appearance in the file.
 *
 * No numpy C API: the arrays come back as bytearrays, which numpy views without a copy.
 */
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
#define DOC_LEN_BITS 24 /* a document id is kept as its offset in the file (40 bits) and its length (24 bits) */
#define MAX_THREADS 64

/* What a byte is to the reader: part of a field, whitespace within a line (C's isspace: space \t \v \f \r), the
 * end of a line, or a NUL (which would end trec_eval's C strings: refused). */
enum { FIELD = 0, SPACE = 1, NEWLINE = 2, NUL = 3 };
static unsigned char byte_class[256];

/* An array of the input's size: from 4 MiB on, aligned to and advised for transparent huge pages, so that its first
 * touch costs one page fault per 2 MiB rather than per 4 KiB (the kernel's faults were a third of the time).
 * Released with free(). */
static void *big_alloc(size_t size)
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
static int worse(int err, int other)
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

/* Bytes p[0:n] hashed eight at a time; with n mixed in, the words taken determine the bytes. */
static inline uint64_t hash_bytes(const unsigned char *p, size_t n)
{
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ n, w;
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

static void free_queries(QueryTable *t)
{
    free(t->items);
    free(t->slots);
    memset(t, 0, sizeof(*t));
}

static int grow_queries(QueryTable *t)
{
    Py_ssize_t cap = t->cap ? 2 * t->cap : 256;
    Query *items = realloc(t->items, (size_t)cap * sizeof(Query));
    if (items == NULL)
        return FAST_NOMEM;
    t->items = items;
    int32_t *slots = malloc((size_t)(2 * cap) * sizeof(int32_t));
    if (slots == NULL)
        return FAST_NOMEM;
    t->cap = cap;
    free(t->slots);
    t->slots = slots;
    t->nslots = 2 * cap;
    memset(slots, 0xff, (size_t)t->nslots * sizeof(int32_t));
    for (Py_ssize_t i = 0; i < t->count; i++) {
        Py_ssize_t s = (Py_ssize_t)(items[i].hash & (uint64_t)(t->nslots - 1));
        while (slots[s] >= 0)
            s = (s + 1) & (t->nslots - 1);
        slots[s] = (int32_t)i;
    }
    return 0;
}

/* The number of query id p[0:len] in t, -1 if absent; with `add`, an absent id is given the next number. */
static int query_code(QueryTable *t, const unsigned char *p, int32_t len, int add, int32_t *code)
{
    uint64_t h = hash_bytes(p, (size_t)len);
    Py_ssize_t s = (Py_ssize_t)(h & (uint64_t)(t->nslots - 1));
    for (; t->slots[s] >= 0; s = (s + 1) & (t->nslots - 1)) {
        const Query *q = &t->items[t->slots[s]];
        if (q->hash == h && q->len == len && memcmp(q->p, p, (size_t)len) == 0) {
            *code = t->slots[s];
            return 0;
        }
    }
    *code = -1;
    if (!add)
        return 0;
    if (t->count == t->cap) {
        int err = grow_queries(t);
        if (err)
            return err;
        for (s = (Py_ssize_t)(h & (uint64_t)(t->nslots - 1)); t->slots[s] >= 0; s = (s + 1) & (t->nslots - 1))
            ;
    }
    Query *q = &t->items[t->count];
    q->p = p;
    q->len = len;
    q->hash = h;
    *code = (int32_t)t->count;
    t->slots[s] = (int32_t)t->count++;
    return 0;
}

/* ------------------------------------------------------------------------------------------------------------------
 * Numbers */

static const double POW10[23] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14,
                                 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* A decimal number [+-]?(digits[.digits*]|.digits)([eE][+-]?digits)? converted exactly when Clinger's fast path
 * allows; SLOW_NUMBER when it needs Python's conversion; FAST_BAIL for any other token (inf, nan, hex, a stray
 * character: the numpy path decides about those). */
static int parse_number(const unsigned char *p, int32_t len, double *out)
{
    int32_t i = 0;
    int negative = 0;
    if (i < len && (p[i] == '+' || p[i] == '-'))
        negative = p[i++] == '-';
    uint64_t mantissa = 0;
    int significant = 0, digits = 0, inexact = 0;
    int64_t exponent = 0;
    for (; i < len && p[i] >= '0' && p[i] <= '9'; i++, digits++) {
        if (mantissa == 0 && p[i] == '0')
            continue;
        if (significant < 19) {
            mantissa = mantissa * 10 + (uint64_t)(p[i] - '0');
            significant++;
        } else {
            exponent++;
            inexact = 1;
        }
    }
    if (i < len && p[i] == '.') {
        for (i++; i < len && p[i] >= '0' && p[i] <= '9'; i++, digits++) {
            if (mantissa == 0 && p[i] == '0') {
                exponent--;
                continue;
            }
            if (significant < 19) {
                mantissa = mantissa * 10 + (uint64_t)(p[i] - '0');
                significant++;
                exponent--;
            } else {
                inexact = 1;
            }
        }
    }
    if (digits == 0)
        return FAST_BAIL;
    if (i < len && (p[i] == 'e' || p[i] == 'E')) {
        int exp_negative = 0, exp_digits = 0;
        int64_t e = 0;
        i++;
        if (i < len && (p[i] == '+' || p[i] == '-'))
            exp_negative = p[i++] == '-';
        for (; i < len && p[i] >= '0' && p[i] <= '9'; i++, exp_digits++) {
            if (e < 100000000)
                e = e * 10 + (p[i] - '0');
        }
        if (exp_digits == 0)
            return FAST_BAIL;
        exponent += exp_negative ? -e : e;
    }
    if (i != len)
        return FAST_BAIL;
    double v;
    if (mantissa == 0)
        v = 0.0;
    else if (!inexact && mantissa <= (1ULL << 53) && exponent >= -22 && exponent <= 22)
        v = exponent >= 0 ? (double)mantissa * POW10[exponent] : (double)mantissa / POW10[-exponent];
    else
        return SLOW_NUMBER;
    *out = negative ? -v : v;
    return 0;
}

/* Python's correctly rounded, locale-independent conversion of p[0:len] (with the GIL); FAST_BAIL if it refuses. */
static int convert_slowly(const unsigned char *p, Py_ssize_t len, double *out)
{
    char small[64];
    char *text = len < (Py_ssize_t)sizeof(small) ? small : PyMem_Malloc((size_t)len + 1);
    char *end = NULL;
    if (text == NULL)
        return FAST_NOMEM;
    memcpy(text, p, (size_t)len);
    text[len] = '\0';
    double v = PyOS_string_to_double(text, &end, NULL);  /* overflow gives +-inf, as Arrow's parser does */
    int ok = !(v == -1.0 && PyErr_Occurred()) && end == text + len;
    if (text != small)
        PyMem_Free(text);
    PyErr_Clear();
    *out = v;
    return ok ? 0 : FAST_BAIL;
}

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
    Py_ssize_t n;                   /* data lines */
    int32_t *codes;                 /* each line's query, numbered in `queries` */
    double *values;                 /* score (run) or relevance (qrels) */
    uint64_t *doc;                  /* each line's document id: offset << DOC_LEN_BITS | length */
    Pending *pending;               /* values left to Python's conversion */
    Py_ssize_t npending, cap_pending;
    Py_ssize_t tag_start, tag_len;  /* runs: the slice's first line's sixth field */
    QueryTable queries;
    int err;
} Slice;

static void free_slice(Slice *s)
{
    free(s->codes);
    free(s->values);
    free(s->doc);
    free(s->pending);
    free_queries(&s->queries);
    s->codes = NULL;
    s->values = NULL;
    s->doc = NULL;
    s->pending = NULL;
    s->n = s->npending = s->cap_pending = 0;
}

/* The fields of the line at *pos (their starts and lengths), *pos moved past its newline: the number of fields (0:
 * blank or a comment), -1 for a NUL or more than `fields` fields. Unless `guarded`, a newline is known to come
 * before `end`, and the scans need no bounds check. */
static inline int split_line(const unsigned char *d, Py_ssize_t *pos, Py_ssize_t end, const int guarded,
                             const int fields, Py_ssize_t *start, Py_ssize_t *len)
{
#define CLASS_AT(i) (guarded && (i) >= end ? NEWLINE : byte_class[d[i]])
    Py_ssize_t i = *pos;
    int count = 0, cls;
    for (;;) {
        while ((cls = CLASS_AT(i)) == SPACE)
            i++;
        if (cls != FIELD)
            break;
        if (count == 0 && d[i] == '#') {  /* a comment line: skipped whatever it holds */
            const unsigned char *nl = memchr(d + i, '\n', (size_t)(end - i));
            *pos = nl ? nl - d + 1 : end;
            return 0;
        }
        if (count == fields)
            return -1;
        start[count] = i;
        while ((cls = CLASS_AT(i)) == FIELD)
            i++;
        len[count] = i - start[count];
        count++;
    }
#undef CLASS_AT
    *pos = i + 1;
    return cls == NUL ? -1 : count;
}

static int read_slice(Slice *s)
{
    const unsigned char *d = s->d;
    const int fields = s->fields, doc_field = s->doc_field, value_field = s->value_field;
    /* A data line takes at least 2 * fields bytes (each field a byte and a separator); the pages of the arrays
     * beyond the lines read are never touched. */
    Py_ssize_t cap = (s->end - s->begin) / (2 * fields) + 2;
    int err = grow_queries(&s->queries);
    if (err)
        return err;
    s->codes = big_alloc((size_t)cap * sizeof(int32_t));
    s->values = big_alloc((size_t)cap * sizeof(double));
    s->doc = big_alloc((size_t)cap * sizeof(uint64_t));
    if (s->codes == NULL || s->values == NULL || s->doc == NULL)
        return FAST_NOMEM;
    Py_ssize_t tail = s->end;  /* where the last line starts if it lacks a newline: only it needs bounds checks */
    while (tail > s->begin && d[tail - 1] != '\n')
        tail--;
    const unsigned char *last_q = NULL;
    int32_t last_len = -1, last_code = -1;
    Py_ssize_t n = 0, pos = s->begin;
    while (pos < s->end) {
        Py_ssize_t start[6], len[6];
        int count = pos < tail ? split_line(d, &pos, s->end, 0, fields, start, len)
                               : split_line(d, &pos, s->end, 1, fields, start, len);
        if (count == 0)
            continue;  /* blank or comment */
        if (count != fields || len[0] > INT32_MAX || len[doc_field] >= (1 << DOC_LEN_BITS))
            return FAST_BAIL;
        const unsigned char *q = d + start[0];
        if (!(len[0] == last_len && memcmp(q, last_q, (size_t)last_len) == 0)) {
            if ((err = query_code(&s->queries, q, (int32_t)len[0], 1, &last_code)))
                return err;
            last_q = q;
            last_len = (int32_t)len[0];
        }
        err = parse_number(d + start[value_field], (int32_t)len[value_field], &s->values[n]);
        if (err == SLOW_NUMBER) {
            if (s->npending == s->cap_pending) {
                Py_ssize_t more = s->cap_pending ? 2 * s->cap_pending : 64;
                Pending *p = realloc(s->pending, (size_t)more * sizeof(Pending));
                if (p == NULL)
                    return FAST_NOMEM;
                s->pending = p;
                s->cap_pending = more;
            }
            s->pending[s->npending++] = (Pending){n, start[value_field], len[value_field]};
        } else if (err) {
            return err;
        }
        if (n == 0 && fields == 6) {
            s->tag_start = start[5];
            s->tag_len = len[5];
        }
        s->codes[n] = last_code;
        s->doc[n] = (uint64_t)start[doc_field] << DOC_LEN_BITS | (uint64_t)len[doc_field];
        n++;
    }
    s->n = n;
    return 0;
}

/* ------------------------------------------------------------------------------------------------------------------
 * Threads */

typedef void *(*Task)(void *);

/* task(items[0]), ..., task(items[count - 1]), at the same time where threads can be started. */
static void run_all(Task task, char *items, size_t item_size, int count)
{
#ifdef HAVE_THREADS
    pthread_t ids[MAX_THREADS];
    int started[MAX_THREADS] = {0};
    for (int k = 1; k < count; k++)
        started[k] = pthread_create(&ids[k], NULL, task, items + k * item_size) == 0;
    task(items);
    for (int k = 1; k < count; k++) {
        if (started[k])
            pthread_join(ids[k], NULL);
        else
            task(items + k * item_size);
    }
#else
    for (int k = 0; k < count; k++)
        task(items + k * item_size);
#endif
}

typedef struct {
    Slice *run, *qrels;
} ReadTask;

static void *read_task(void *arg)
{
    ReadTask *t = arg;
    t->run->err = read_slice(t->run);
    t->qrels->err = t->run->err ? 0 : read_slice(t->qrels);
    return NULL;
}

/* Slice k of `threads`: whole lines, from after the newline that ends at or past k/threads of the bytes. */
static Py_ssize_t slice_start(const unsigned char *d, Py_ssize_t size, int k, int threads)
{
    if (k == 0)
        return 0;
    if (k == threads)
        return size;
    Py_ssize_t at = (Py_ssize_t)((double)size * k / threads);
    const unsigned char *nl = memchr(d + at, '\n', (size_t)(size - at));
    return nl ? nl - d + 1 : size;
}

/* ------------------------------------------------------------------------------------------------------------------
 * A file's slices put together */

typedef struct {
    const unsigned char *d;
    Py_ssize_t n;
    int32_t *codes;         /* each line's query, by first appearance in the file (a bytearray's buffer) */
    double *values;         /* (a bytearray's buffer) */
    uint64_t *doc;
    Py_ssize_t tag_start, tag_len;
    QueryTable queries;
} Lines;

/* Renumber the queries of slices 1.. into slice 0's table, and copy the lines into `out`: into its codes and
 * values when given (buffers for every line), else into arrays allocated here, or, from a single slice, into none:
 * that slice's arrays become the lines'. */
static int merge_slices(Slice *slices, int count, Lines *out)
{
    out->queries = slices[0].queries;
    memset(&slices[0].queries, 0, sizeof(QueryTable));
    if (count == 1 && out->codes == NULL) {
        Slice *s = &slices[0];
        out->codes = s->codes;
        out->values = s->values;
        out->doc = s->doc;
        out->tag_start = s->tag_start;
        out->tag_len = s->tag_len;
        s->codes = NULL;
        s->values = NULL;
        s->doc = NULL;
        return 0;
    }
    if (out->codes == NULL) {
        out->codes = big_alloc((size_t)(out->n ? out->n : 1) * sizeof(int32_t));
        out->values = big_alloc((size_t)(out->n ? out->n : 1) * sizeof(double));
    }
    out->doc = big_alloc((size_t)(out->n ? out->n : 1) * sizeof(uint64_t));
    if (out->codes == NULL || out->values == NULL || out->doc == NULL)
        return FAST_NOMEM;
    Py_ssize_t at = 0;
    int tagged = 0;
    for (int k = 0; k < count; k++) {
        Slice *s = &slices[k];
        if (s->n && !tagged) {
            out->tag_start = s->tag_start;
            out->tag_len = s->tag_len;
            tagged = 1;
        }
        if (k == 0) {
            memcpy(out->codes, s->codes, (size_t)s->n * sizeof(int32_t));
        } else {
            int32_t *renumber = malloc((size_t)(s->queries.count ? s->queries.count : 1) * sizeof(int32_t));
            if (renumber == NULL)
                return FAST_NOMEM;
            for (Py_ssize_t j = 0; j < s->queries.count; j++) {
                int err = query_code(&out->queries, s->queries.items[j].p, s->queries.items[j].len, 1, &renumber[j]);
                if (err) {
                    free(renumber);
                    return err;
                }
            }
            for (Py_ssize_t i = 0; i < s->n; i++)
                out->codes[at + i] = renumber[s->codes[i]];
            free(renumber);
        }
        memcpy(out->values + at, s->values, (size_t)s->n * sizeof(double));
        memcpy(out->doc + at, s->doc, (size_t)s->n * sizeof(uint64_t));
        at += s->n;
    }
    return 0;
}

static inline const unsigned char *doc_bytes(const unsigned char *d, uint64_t doc)
{
    return d + (doc >> DOC_LEN_BITS);
}

static inline size_t doc_len(uint64_t doc)
{
    return (size_t)(doc & ((1ULL << DOC_LEN_BITS) - 1));
}

typedef struct {            /* lines grouped by query: query c is lines[first[c]:first[c + 1]] */
    Py_ssize_t *first;
    int32_t *lines;         /* NULL when every query's lines are together in the file: line k is k */
} Groups;

static int group(const Lines *l, Groups *g)
{
    Py_ssize_t nq = l->queries.count;
    g->first = calloc((size_t)nq + 1, sizeof(Py_ssize_t));
    if (g->first == NULL)
        return FAST_NOMEM;
    int together = 1;  /* numbered by first appearance: together exactly when the codes never decrease */
    for (Py_ssize_t i = 0; i < l->n; i++) {
        g->first[l->codes[i] + 1]++;
        together &= i == 0 || l->codes[i] >= l->codes[i - 1];
    }
    for (Py_ssize_t c = 0; c < nq; c++)
        g->first[c + 1] += g->first[c];
    if (together)
        return 0;
    Py_ssize_t *fill = malloc((size_t)(nq ? nq : 1) * sizeof(Py_ssize_t));
    g->lines = big_alloc((size_t)l->n * sizeof(int32_t));
    if (fill == NULL || g->lines == NULL) {
        free(fill);
        return FAST_NOMEM;
    }
    memcpy(fill, g->first, (size_t)nq * sizeof(Py_ssize_t));
    for (Py_ssize_t i = 0; i < l->n; i++)
        g->lines[fill[l->codes[i]]++] = (int32_t)i;
    free(fill);
    return 0;
}

static inline int32_t group_line(const Groups *g, Py_ssize_t k)
{
    return g->lines ? g->lines[k] : (int32_t)k;
}

/* ------------------------------------------------------------------------------------------------------------------
 * Joining and ranking, query by query */

typedef struct {
    int32_t line;           /* -1: empty */
    uint32_t hash;
} Slot;

typedef struct {            /* a small hash set of one query's documents, reused query after query */
    Slot *slots;
    Py_ssize_t allocated;
    Py_ssize_t mask;        /* slots in use - 1: a power of two, at least twice the members */
} DocSet;

static int docset_reset(DocSet *s, Py_ssize_t members)
{
    Py_ssize_t want = 16;
    while (want < 2 * members)
        want *= 2;
    if (want > s->allocated) {
        free(s->slots);
        s->slots = malloc((size_t)want * sizeof(Slot));
        s->allocated = s->slots != NULL ? want : 0;
        if (s->slots == NULL)
            return FAST_NOMEM;
    }
    s->mask = want - 1;
    memset(s->slots, 0xff, (size_t)want * sizeof(Slot));
    return 0;
}

/* The line of `members` in the set whose document is that of line i of `l`, -1 if none; with `insert`, line i is
 * added when absent. */
static inline int32_t docset_find(DocSet *s, const Lines *members, const Lines *l, int32_t i, int insert)
{
    uint64_t doc = l->doc[i];
    const unsigned char *p = doc_bytes(l->d, doc);
    size_t len = doc_len(doc);
    uint32_t h = (uint32_t)hash_bytes(p, len);
    Py_ssize_t k = (Py_ssize_t)(h & (uint64_t)s->mask);
    for (; s->slots[k].line >= 0; k = (k + 1) & s->mask) {
        uint64_t other = members->doc[s->slots[k].line];
        if (s->slots[k].hash == h && doc_len(other) == len && memcmp(doc_bytes(members->d, other), p, len) == 0)
            return s->slots[k].line;
    }
    if (insert) {
        s->slots[k].line = i;
        s->slots[k].hash = h;
    }
    return -1;
}

typedef struct {
    uint64_t key;           /* ascending key = descending score (score_key) */
    int32_t line;
} Ranked;

/* An unsigned key that ascends as the score descends; -0.0 and 0.0, equal scores, get one key. */
static inline uint64_t score_key(double score)
{
    uint64_t bits;
    if (score == 0.0)
        score = 0.0;
    memcpy(&bits, &score, sizeof(bits));
    bits = bits >> 63 ? ~bits : bits | 0x8000000000000000ULL;  /* ascends with the score */
    return ~bits;
}

/* Document x before y among equal scores (trec_eval's order): descending in strcmp's byte order (unsigned, a prefix
 * before the longer id). */
static inline int doc_before(const Lines *run, int32_t x, int32_t y)
{
    uint64_t a = run->doc[x], b = run->doc[y];
    size_t la = doc_len(a), lb = doc_len(b);
    int c = memcmp(doc_bytes(run->d, a), doc_bytes(run->d, b), la < lb ? la : lb);
    return c != 0 ? c > 0 : la > lb;
}

static void key_sort(Ranked *v, Ranked *tmp, Py_ssize_t n)
{
    if (n <= 16) {  /* insertion sort: linear on a run already in rank order */
        for (Py_ssize_t i = 1; i < n; i++) {
            Ranked x = v[i];
            Py_ssize_t j = i;
            for (; j > 0 && x.key < v[j - 1].key; j--)
                v[j] = v[j - 1];
            v[j] = x;
        }
        return;
    }
    Py_ssize_t h = n / 2;
    key_sort(v, tmp, h);
    key_sort(v + h, tmp, n - h);
    if (v[h - 1].key <= v[h].key)
        return;  /* already in order */
    memcpy(tmp, v, (size_t)h * sizeof(Ranked));
    Py_ssize_t a = 0, b = h, k = 0;
    while (a < h && b < n) {
        int right = v[b].key < tmp[a].key;
        v[k++] = right ? v[b] : tmp[a];
        b += right;
        a += !right;
    }
    while (a < h)
        v[k++] = tmp[a++];
}

static void doc_sort(const Lines *run, Ranked *v, Ranked *tmp, Py_ssize_t n)
{
    if (n <= 16) {
        for (Py_ssize_t i = 1; i < n; i++) {
            Ranked x = v[i];
            Py_ssize_t j = i;
            for (; j > 0 && doc_before(run, x.line, v[j - 1].line); j--)
                v[j] = v[j - 1];
            v[j] = x;
        }
        return;
    }
    Py_ssize_t h = n / 2;
    doc_sort(run, v, tmp, h);
    doc_sort(run, v + h, tmp, n - h);
    memcpy(tmp, v, (size_t)h * sizeof(Ranked));
    Py_ssize_t a = 0, b = h, k = 0;
    while (a < h && b < n)
        v[k++] = doc_before(run, v[b].line, tmp[a].line) ? v[b++] : tmp[a++];
    while (a < h)
        v[k++] = tmp[a++];
}

/* A query's lines in trec_eval's rank order: by score, then each group of equal scores by document id. */
static void rank_sort(const Lines *run, Ranked *v, Ranked *tmp, Py_ssize_t n)
{
    key_sort(v, tmp, n);
    for (Py_ssize_t a = 0, b; a < n; a = b) {
        for (b = a + 1; b < n && v[b].key == v[a].key; b++)
            ;
        if (b - a > 1)
            doc_sort(run, v + a, tmp, b - a);
    }
}

typedef struct {
    const Lines *run, *qrels;
    const Groups *rg, *qg;
    int32_t *match;                     /* per run line: the qrels line of its document, -1 if none */
    double *ranked_scores;              /* per rank position (queries in order, each in rank order) */
    int32_t *ranked_match;
    Py_ssize_t run_begin, run_end;      /* this task's queries of the run ... */
    Py_ssize_t qrels_begin, qrels_end;  /* ... and of the qrels */
    Py_ssize_t widest;                  /* the most lines of one query in the run */
    int err;
} JoinTask;

/* A document judged twice for one query, or ranked twice for one query, is FAST_BAIL. Each run line gets the qrels
 * line of the same document (`match`, -1 if none); each query's lines are put in rank order, their scores and
 * matches listed so (`ranked_scores`, `ranked_match`). */
static int join_queries(JoinTask *t, DocSet *set, Ranked *ranked, Ranked *tmp)
{
    const Lines *run = t->run, *qrels = t->qrels;
    const Groups *rg = t->rg, *qg = t->qg;
    int err;
    for (Py_ssize_t c = t->qrels_begin; c < t->qrels_end; c++) {
        if ((err = docset_reset(set, qg->first[c + 1] - qg->first[c])))
            return err;
        for (Py_ssize_t k = qg->first[c]; k < qg->first[c + 1]; k++)
            if (docset_find(set, qrels, qrels, group_line(qg, k), 1) >= 0)
                return FAST_BAIL;
    }
    for (Py_ssize_t c = t->run_begin; c < t->run_end; c++) {
        Py_ssize_t a = rg->first[c], b = rg->first[c + 1];
        if ((err = docset_reset(set, b - a)))
            return err;
        for (Py_ssize_t k = a; k < b; k++) {
            int32_t i = group_line(rg, k);
            if (docset_find(set, run, run, i, 1) >= 0)
                return FAST_BAIL;
            t->match[i] = -1;
            ranked[k - a].key = score_key(run->values[i]);
            ranked[k - a].line = i;
        }
        const Query *q = &run->queries.items[c];
        int32_t qc;
        query_code((QueryTable *)&qrels->queries, q->p, q->len, 0, &qc);  /* a lookup: never fails */
        for (Py_ssize_t k = qc >= 0 ? qg->first[qc] : 0; qc >= 0 && k < qg->first[qc + 1]; k++) {
            int32_t j = group_line(qg, k);
            int32_t i = docset_find(set, run, qrels, j, 0);
            if (i >= 0)
                t->match[i] = j;
        }
        rank_sort(run, ranked, tmp, b - a);
        for (Py_ssize_t k = a; k < b; k++) {
            int32_t i = ranked[k - a].line;
            t->ranked_scores[k] = run->values[i];
            t->ranked_match[k] = t->match[i];
        }
    }
    return 0;
}

static void *join_task(void *arg)
{
    JoinTask *t = arg;
    DocSet set = {NULL, 0, 0};
    Ranked *ranked = malloc((size_t)t->widest * sizeof(Ranked));
    Ranked *tmp = malloc((size_t)(t->widest / 2 + 1) * sizeof(Ranked));
    t->err = ranked == NULL || tmp == NULL ? FAST_NOMEM : join_queries(t, &set, ranked, tmp);
    free(ranked);
    free(tmp);
    free(set.slots);
    return NULL;
}

/* The query where the k-th of `count` shares of the lines starts. */
static Py_ssize_t share_start(const Groups *g, Py_ssize_t nq, Py_ssize_t n, int k, int count)
{
    Py_ssize_t target = (Py_ssize_t)((double)n * k / count), lo = 0, hi = nq;
    while (lo < hi) {  /* the first query whose lines start at or after target */
        Py_ssize_t mid = (lo + hi) / 2;
        if (g->first[mid] < target)
            lo = mid + 1;
        else
            hi = mid;
    }
    return k == count ? nq : lo;
}

static int join_all(const Lines *run, const Lines *qrels, double *ranked_scores, int32_t *ranked_match,
                    int64_t *run_first, int threads)
{
    Groups rg = {NULL, NULL}, qg = {NULL, NULL};
    JoinTask tasks[MAX_THREADS];
    int32_t *match = big_alloc((size_t)run->n * sizeof(int32_t));
    int err = match == NULL ? FAST_NOMEM : group(run, &rg);
    if (!err)
        err = group(qrels, &qg);
    if (!err) {
        Py_ssize_t widest = 1;
        for (Py_ssize_t c = 0; c < run->queries.count; c++)
            widest = rg.first[c + 1] - rg.first[c] > widest ? rg.first[c + 1] - rg.first[c] : widest;
        for (int k = 0; k < threads; k++) {
            tasks[k] = (JoinTask){run, qrels, &rg, &qg, match, ranked_scores, ranked_match,
                                  share_start(&rg, run->queries.count, run->n, k, threads),
                                  share_start(&rg, run->queries.count, run->n, k + 1, threads),
                                  share_start(&qg, qrels->queries.count, qrels->n, k, threads),
                                  share_start(&qg, qrels->queries.count, qrels->n, k + 1, threads), widest, 0};
        }
        run_all(join_task, (char *)tasks, sizeof(JoinTask), threads);
        for (int k = 0; k < threads; k++)
            err = worse(err, tasks[k].err);
        for (Py_ssize_t c = 0; c <= run->queries.count; c++)
            run_first[c] = (int64_t)rg.first[c];
    }
    free(match);
    free(rg.first);
    free(rg.lines);
    free(qg.first);
    free(qg.lines);
    return err;
}

/* ------------------------------------------------------------------------------------------------------------------
 * The module */

static PyObject *query_names(const QueryTable *t)
{
    PyObject *names = PyList_New(t->count);
    for (Py_ssize_t i = 0; names != NULL && i < t->count; i++) {
        PyObject *b = PyBytes_FromStringAndSize((const char *)t->items[i].p, t->items[i].len);
        if (b == NULL)
            Py_CLEAR(names);
        else
            PyList_SET_ITEM(names, i, b);
    }
    return names;
}

/* Values that the threads left to Python's conversion (with the GIL). */
static int convert_pending(Slice *s)
{
    for (Py_ssize_t j = 0; j < s->npending; j++) {
        int err = convert_slowly(s->d + s->pending[j].start, s->pending[j].len, &s->values[s->pending[j].line]);
        if (err)
            return err;
    }
    return 0;
}

typedef struct {
    int threads;
    Slice run_slices[MAX_THREADS], qrels_slices[MAX_THREADS];
    Lines run, qrels;
    PyObject *run_first, *ranked_scores, *ranked_match, *qrels_codes, *qrels_values;
} Join;

static int read_both(Join *j, const Py_buffer *run_buf, const Py_buffer *qrels_buf)
{
    const unsigned char *rd = run_buf->buf, *qd = qrels_buf->buf;
    ReadTask tasks[MAX_THREADS];
    for (int k = 0; k < j->threads; k++) {
        j->run_slices[k] = (Slice){.d = rd, .fields = 6, .doc_field = 2, .value_field = 4,
                                   .begin = slice_start(rd, run_buf->len, k, j->threads),
                                   .end = slice_start(rd, run_buf->len, k + 1, j->threads)};
        j->qrels_slices[k] = (Slice){.d = qd, .fields = 4, .doc_field = 2, .value_field = 3,
                                     .begin = slice_start(qd, qrels_buf->len, k, j->threads),
                                     .end = slice_start(qd, qrels_buf->len, k + 1, j->threads)};
        tasks[k] = (ReadTask){&j->run_slices[k], &j->qrels_slices[k]};
    }
    Py_BEGIN_ALLOW_THREADS
    run_all(read_task, (char *)tasks, sizeof(ReadTask), j->threads);
    Py_END_ALLOW_THREADS
    Py_ssize_t nrun = 0, nqrels = 0;
    int err = 0;
    for (int k = 0; k < j->threads; k++) {
        err = worse(worse(err, j->run_slices[k].err), j->qrels_slices[k].err);
        nrun += j->run_slices[k].n;
        nqrels += j->qrels_slices[k].n;
    }
    if (!err && (nrun == 0 || nqrels == 0 || nrun >= INT32_MAX || nqrels >= INT32_MAX ||
                 (uint64_t)run_buf->len >= (1ULL << (64 - DOC_LEN_BITS)) ||
                 (uint64_t)qrels_buf->len >= (1ULL << (64 - DOC_LEN_BITS))))
        err = FAST_BAIL;  /* an empty file (the numpy path says so), or beyond the int32 line numbers */
    for (int k = 0; !err && k < j->threads; k++)
        err = worse(convert_pending(&j->run_slices[k]), convert_pending(&j->qrels_slices[k]));
    if (err)
        return err;
    Py_ssize_t most_queries = 1;  /* the run's distinct queries: at most those of its slices together */
    for (int k = 0; k < j->threads; k++)
        most_queries += j->run_slices[k].queries.count;
    j->run_first = PyByteArray_FromStringAndSize(NULL, most_queries * (Py_ssize_t)sizeof(int64_t));
    j->ranked_scores = PyByteArray_FromStringAndSize(NULL, nrun * (Py_ssize_t)sizeof(double));
    j->ranked_match = PyByteArray_FromStringAndSize(NULL, nrun * (Py_ssize_t)sizeof(int32_t));
    j->qrels_codes = PyByteArray_FromStringAndSize(NULL, nqrels * (Py_ssize_t)sizeof(int32_t));
    j->qrels_values = PyByteArray_FromStringAndSize(NULL, nqrels * (Py_ssize_t)sizeof(double));
    if (!j->run_first || !j->ranked_scores || !j->ranked_match || !j->qrels_codes || !j->qrels_values)
        return FAST_NOMEM;
    j->run.d = rd;
    j->run.n = nrun;
    j->qrels = (Lines){.d = qd, .n = nqrels, .codes = (int32_t *)PyByteArray_AS_STRING(j->qrels_codes),
                       .values = (double *)PyByteArray_AS_STRING(j->qrels_values)};
    return 0;
}

static int merge_and_join(Join *j)
{
    int err = merge_slices(j->run_slices, j->threads, &j->run);
    if (!err)
        err = merge_slices(j->qrels_slices, j->threads, &j->qrels);
    for (int k = 0; k < j->threads; k++) {  /* the lines are in j->run and j->qrels now */
        free_slice(&j->run_slices[k]);
        free_slice(&j->qrels_slices[k]);
    }
    if (!err)
        err = join_all(&j->run, &j->qrels, (double *)PyByteArray_AS_STRING(j->ranked_scores),
                       (int32_t *)PyByteArray_AS_STRING(j->ranked_match),
                       (int64_t *)PyByteArray_AS_STRING(j->run_first), j->threads);
    return err;
}

static void free_join(Join *j)
{
    for (int k = 0; k < j->threads; k++) {
        free_slice(&j->run_slices[k]);
        free_slice(&j->qrels_slices[k]);
    }
    free(j->run.codes);
    free(j->run.values);
    free(j->run.doc);
    free(j->qrels.doc);
    free_queries(&j->run.queries);
    free_queries(&j->qrels.queries);
    Py_XDECREF(j->run_first);
    Py_XDECREF(j->ranked_scores);
    Py_XDECREF(j->ranked_match);
    Py_XDECREF(j->qrels_codes);
    Py_XDECREF(j->qrels_values);
}

PyDoc_STRVAR(join_doc,
"join(run, qrels, threads=1) -> tuple | None\n\n"
"Read a TREC run (qid Q0 docid rank score tag) and its qrels (qid iteration docid relevance), both as bytes, and\n"
"join them, on up to `threads` threads. None when the input is outside the fast path (see the module's source):\n"
"read it with the numpy path. Otherwise (run_qids, run_first, scores, match, tag, qrels_qids, qrels_codes,\n"
"relevance), the arrays as bytearrays: the run's query ids in order of first appearance (a list of bytes); the\n"
"run's lines ranked: query by query in that order (query c at run_first[c]:run_first[c + 1], int64), each query's\n"
"in trec_eval's rank order, their scores (float64) and the qrels line of the same (query, document), -1 if none\n"
"(int32); the sixth field of the run's first line; the qrels' query ids in order of first appearance and per line\n"
"its query's number (int32) and its relevance (float64).");

static PyObject *join(PyObject *self, PyObject *args)
{
    Py_buffer run_buf, qrels_buf;
    int threads = 1;
    if (!PyArg_ParseTuple(args, "y*y*|i:join", &run_buf, &qrels_buf, &threads))
        return NULL;
    Join *j = calloc(1, sizeof(Join));
    PyObject *result = NULL;
    if (j == NULL) {
        PyBuffer_Release(&run_buf);
        PyBuffer_Release(&qrels_buf);
        return PyErr_NoMemory();
    }
    j->threads = threads < 1 ? 1 : threads > MAX_THREADS ? MAX_THREADS : threads;
    int err = read_both(j, &run_buf, &qrels_buf);
    if (!err) {
        Py_BEGIN_ALLOW_THREADS
        err = merge_and_join(j);
        Py_END_ALLOW_THREADS
    }
    if (err == FAST_NOMEM) {
        if (!PyErr_Occurred())
            PyErr_NoMemory();
    } else if (err) {
        result = Py_None;
        Py_INCREF(result);
    } else {
        if (PyByteArray_Resize(j->run_first, (j->run.queries.count + 1) * (Py_ssize_t)sizeof(int64_t)) == 0)
            result = Py_BuildValue("(NOOONNOO)", query_names(&j->run.queries), j->run_first, j->ranked_scores,
                                   j->ranked_match,
                                   PyBytes_FromStringAndSize((const char *)j->run.d + j->run.tag_start,
                                                             j->run.tag_len),
                                   query_names(&j->qrels.queries), j->qrels_codes, j->qrels_values);
    }
    free_join(j);
    free(j);
    PyBuffer_Release(&run_buf);
    PyBuffer_Release(&qrels_buf);
    return result;
}

static PyMethodDef methods[] = {
    {"join", join, METH_VARARGS, join_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "trec_native",
    "A TREC run and its qrels read, checked and joined in C (the fast path of rankcli.formats.trec_fast).", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit_trec_native(void)
{
    static const unsigned char spaces[] = {9, 11, 12, 13, 32};
    for (size_t i = 0; i < sizeof(spaces); i++)
        byte_class[spaces[i]] = SPACE;
    byte_class['\n'] = NEWLINE;
    byte_class[0] = NUL;
    return PyModule_Create(&module);
}
