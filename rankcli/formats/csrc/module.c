/* rankcli.formats.trec_native: a TREC run and its qrels read, checked and joined in C.
 *
 * This is the fast path of rankcli.formats.trec.join_native; the numpy path (rankcli.formats.trec.parse and trec.join) is
 * the reference, and it stays the one that reports errors. join() accepts only input whose meaning it is sure of,
 * and returns None for anything else: a line with another field count, a value that is not a plain decimal number,
 * a NUL byte, a (query, document) pair on two lines, an empty file, 2^31 lines or more, a document id of 16 MiB or
 * more. The caller then reads the files with the numpy path, which gives the same result or names the line at fault.
 *
 * What it reads is what trec.parse reads: fields separated by any run of C whitespace (space, \t, \v, \f, \r), lines
 * split at \n, blank lines and lines whose first field starts with '#' skipped. Numbers are converted exactly: a
 * decimal of at most 19 significant digits that fits Clinger's fast path (mantissa <= 2^53, power of ten <= 22) by
 * one correctly rounded multiplication or division, any other by Python's correctly rounded PyOS_string_to_double;
 * Arrow's parser, which the numpy path uses, is correctly rounded too, so both give the same double.
 *
 * The work is split over `threads` threads (POSIX threads; one elsewhere), without the GIL. The qrels are read
 * whole, each thread a slice of whole lines. The run, when each query's lines are together (as runs are written), is
 * joined as it is read (stream_join): each thread takes a slice of whole queries and ranks each query as soon as its
 * last line is read. Otherwise (read_both, merge_and_join) each thread reads a slice of whole lines of both files,
 * then each joins and ranks a range of queries. Query ids are numbered by first appearance in each slice, then
 * renumbered in slice order, which gives the numbering by first appearance in the file.
 *
 * No numpy C API: the arrays come back as bytearrays, which numpy views without a copy.
 */
#include "trec_native.h"
#include <stdio.h>
#include <time.h>

typedef struct {
    Slice *run, *qrels;
} ReadTask;

static void *count_task(void *arg)
{
    ReadTask *t = arg;
    t->run->cap = trec_count_lines(t->run->d, t->run->begin, t->run->end);
    t->qrels->cap = trec_count_lines(t->qrels->d, t->qrels->begin, t->qrels->end);
    return NULL;
}

static void *read_task(void *arg)
{
    ReadTask *t = arg;
    t->run->err = trec_read_slice(t->run);
    t->qrels->err = t->run->err ? 0 : trec_read_slice(t->qrels);
    return NULL;
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
        int err = trec_convert_slowly(s->d + s->pending[j].start, s->pending[j].len, &s->values[s->pending[j].line]);
        if (err)
            return err;
    }
    return 0;
}

typedef struct {
    int threads, scores;
    Slice run_slices[MAX_THREADS], qrels_slices[MAX_THREADS];
    Lines run, qrels;
    QrelsIndex *index;      /* the streaming path's */
    PyObject *run_first, *ranked_scores, *ranked_match, *qrels_codes, *qrels_values;
} Join;

static void *count_one(void *arg)
{
    Slice *s = arg;
    s->cap = trec_count_lines(s->d, s->begin, s->end);
    return NULL;
}

static void *read_one(void *arg)
{
    Slice *s = arg;
    s->err = trec_read_slice(s);
    return NULL;
}

/* Give each slice its share of the arrays of all the lines, which hold as many lines as the slices' bytes: one
 * array per column, filled in place by the slices and merged in place (no copy of the lines). */
static int share_lines(Slice *slices, int threads, Lines *l)
{
    Py_ssize_t at = 0;
    for (int k = 0; k < threads; k++) {
        slices[k].codes = l->codes + at;
        slices[k].values = l->values + at;
        slices[k].doc = l->doc + at;
        at += slices[k].cap;
    }
    return 0;
}

static Py_ssize_t total_cap(const Slice *slices, int threads)
{
    Py_ssize_t total = 0;
    for (int k = 0; k < threads; k++)
        total += slices[k].cap;
    return total;
}

typedef Py_ssize_t (*SliceStart)(const unsigned char *d, Py_ssize_t size, int k, int threads);

/* Both files' slices, one per thread: the qrels' of whole lines, the run's as `run_start` cuts them. */
static void set_slices(Join *j, const Py_buffer *run_buf, const Py_buffer *qrels_buf, SliceStart run_start)
{
    const unsigned char *rd = run_buf->buf, *qd = qrels_buf->buf;
    for (int k = 0; k < j->threads; k++) {
        j->run_slices[k] = (Slice){.d = rd, .fields = 6, .doc_field = 2, .value_field = 4,
                                   .begin = run_start(rd, run_buf->len, k, j->threads),
                                   .end = run_start(rd, run_buf->len, k + 1, j->threads)};
        j->qrels_slices[k] = (Slice){.d = qd, .fields = 4, .doc_field = 2, .value_field = 3,
                                     .begin = trec_slice_start(qd, qrels_buf->len, k, j->threads),
                                     .end = trec_slice_start(qd, qrels_buf->len, k + 1, j->threads)};
    }
}

static int read_both(Join *j, const Py_buffer *run_buf, const Py_buffer *qrels_buf)
{
    const unsigned char *rd = run_buf->buf, *qd = qrels_buf->buf;
    ReadTask tasks[MAX_THREADS];
    set_slices(j, run_buf, qrels_buf, trec_slice_start);
    for (int k = 0; k < j->threads; k++)
        tasks[k] = (ReadTask){&j->run_slices[k], &j->qrels_slices[k]};
    Py_BEGIN_ALLOW_THREADS
    trec_run_all(count_task, (char *)tasks, sizeof(ReadTask), j->threads);
    Py_END_ALLOW_THREADS
    Py_ssize_t run_cap = total_cap(j->run_slices, j->threads), qrels_cap = total_cap(j->qrels_slices, j->threads);
    if (run_cap == 0 || qrels_cap == 0 || run_cap >= INT32_MAX || qrels_cap >= INT32_MAX ||
        (uint64_t)run_buf->len >= (1ULL << (64 - DOC_LEN_BITS)) ||
        (uint64_t)qrels_buf->len >= (1ULL << (64 - DOC_LEN_BITS)))
        return FAST_BAIL;  /* an empty file (the numpy path says so), or beyond the int32 line numbers */
    j->run = (Lines){.d = rd, .codes = big_alloc((size_t)run_cap * sizeof(int32_t)),
                     .values = big_alloc((size_t)run_cap * sizeof(double)),
                     .doc = big_alloc((size_t)run_cap * sizeof(uint64_t))};
    j->qrels_codes = PyByteArray_FromStringAndSize(NULL, qrels_cap * (Py_ssize_t)sizeof(int32_t));
    j->qrels_values = PyByteArray_FromStringAndSize(NULL, qrels_cap * (Py_ssize_t)sizeof(double));
    if (!j->run.codes || !j->run.values || !j->run.doc || !j->qrels_codes || !j->qrels_values)
        return FAST_NOMEM;
    j->qrels = (Lines){.d = qd, .codes = (int32_t *)PyByteArray_AS_STRING(j->qrels_codes),
                       .values = (double *)PyByteArray_AS_STRING(j->qrels_values),
                       .doc = big_alloc((size_t)qrels_cap * sizeof(uint64_t))};
    if (j->qrels.doc == NULL)
        return FAST_NOMEM;
    share_lines(j->run_slices, j->threads, &j->run);
    share_lines(j->qrels_slices, j->threads, &j->qrels);
    Py_BEGIN_ALLOW_THREADS
    trec_run_all(read_task, (char *)tasks, sizeof(ReadTask), j->threads);
    Py_END_ALLOW_THREADS
    Py_ssize_t nrun = 0, nqrels = 0;
    int err = 0;
    for (int k = 0; k < j->threads; k++) {
        err = worse(worse(err, j->run_slices[k].err), j->qrels_slices[k].err);
        nrun += j->run_slices[k].n;
        nqrels += j->qrels_slices[k].n;
    }
    if (!err && (nrun == 0 || nqrels == 0))
        err = FAST_BAIL;  /* no data lines (the numpy path says so) */
    for (int k = 0; !err && k < j->threads; k++)
        err = worse(convert_pending(&j->run_slices[k]), convert_pending(&j->qrels_slices[k]));
    if (err)
        return err;
    j->run.n = nrun;
    j->qrels.n = nqrels;
    Py_ssize_t most_queries = 1;  /* the run's distinct queries: at most those of its slices together */
    for (int k = 0; k < j->threads; k++)
        most_queries += j->run_slices[k].queries.count;
    j->run_first = PyByteArray_FromStringAndSize(NULL, most_queries * (Py_ssize_t)sizeof(int64_t));
    if (j->scores)
        j->ranked_scores = PyByteArray_FromStringAndSize(NULL, nrun * (Py_ssize_t)sizeof(double));
    j->ranked_match = PyByteArray_FromStringAndSize(NULL, nrun * (Py_ssize_t)sizeof(int32_t));
    if (!j->run_first || (j->scores && !j->ranked_scores) || !j->ranked_match)
        return FAST_NOMEM;
    return 0;
}

static int slices_error(const Slice *slices, int threads, Py_ssize_t *lines)
{
    int err = 0;
    *lines = 0;
    for (int k = 0; k < threads; k++) {
        err = worse(err, slices[k].err);
        *lines += slices[k].n;
    }
    return err;
}

/* The qrels read whole into their arrays (the qrels' bytearrays), converted and merged. */
static int read_qrels(Join *j, const Py_buffer *qrels_buf, Py_ssize_t qrels_cap)
{
    j->qrels_codes = PyByteArray_FromStringAndSize(NULL, qrels_cap * (Py_ssize_t)sizeof(int32_t));
    j->qrels_values = PyByteArray_FromStringAndSize(NULL, qrels_cap * (Py_ssize_t)sizeof(double));
    if (!j->qrels_codes || !j->qrels_values)
        return FAST_NOMEM;
    j->qrels = (Lines){.d = qrels_buf->buf, .codes = (int32_t *)PyByteArray_AS_STRING(j->qrels_codes),
                       .values = (double *)PyByteArray_AS_STRING(j->qrels_values),
                       .doc = big_alloc((size_t)qrels_cap * sizeof(uint64_t))};
    if (j->qrels.doc == NULL)
        return FAST_NOMEM;
    share_lines(j->qrels_slices, j->threads, &j->qrels);
    Py_BEGIN_ALLOW_THREADS
    trec_run_all(read_one, (char *)j->qrels_slices, sizeof(Slice), j->threads);
    Py_END_ALLOW_THREADS
    int err = slices_error(j->qrels_slices, j->threads, &j->qrels.n);
    if (!err && j->qrels.n == 0)
        err = FAST_BAIL;
    for (int k = 0; !err && k < j->threads; k++)
        err = convert_pending(&j->qrels_slices[k]);
    if (!err) {
        Py_BEGIN_ALLOW_THREADS
        err = trec_merge_slices(j->qrels_slices, j->threads, &j->qrels);
        Py_END_ALLOW_THREADS
    }
    return err;
}

/* The streaming path (join.c): the qrels read whole and indexed, then the run joined query by query as it is read,
 * each thread a slice of whole queries; STREAM_FALLBACK when the run does not lend itself to it. */
static int stream_join(Join *j, const Py_buffer *run_buf, const Py_buffer *qrels_buf)
{
    const unsigned char *rd = run_buf->buf;
    set_slices(j, run_buf, qrels_buf, trec_query_slice_start);
    Py_BEGIN_ALLOW_THREADS
    trec_run_all(count_one, (char *)j->run_slices, sizeof(Slice), j->threads);
    trec_run_all(count_one, (char *)j->qrels_slices, sizeof(Slice), j->threads);
    Py_END_ALLOW_THREADS
    Py_ssize_t run_cap = total_cap(j->run_slices, j->threads), qrels_cap = total_cap(j->qrels_slices, j->threads);
    if (run_cap == 0 || qrels_cap == 0 || run_cap >= INT32_MAX || qrels_cap >= INT32_MAX ||
        (uint64_t)run_buf->len >= (1ULL << (64 - DOC_LEN_BITS)) ||
        (uint64_t)qrels_buf->len >= (1ULL << (64 - DOC_LEN_BITS)))
        return FAST_BAIL;
    int err = read_qrels(j, qrels_buf, qrels_cap);
    if (err)
        return err;
    j->ranked_match = PyByteArray_FromStringAndSize(NULL, run_cap * (Py_ssize_t)sizeof(int32_t));
    if (j->scores)
        j->ranked_scores = PyByteArray_FromStringAndSize(NULL, run_cap * (Py_ssize_t)sizeof(double));
    if (!j->ranked_match || (j->scores && !j->ranked_scores))
        return FAST_NOMEM;
    int32_t *match = (int32_t *)PyByteArray_AS_STRING(j->ranked_match);
    double *scores = j->scores ? (double *)PyByteArray_AS_STRING(j->ranked_scores) : NULL;
    Py_ssize_t nrun = 0, at = 0;
    Py_BEGIN_ALLOW_THREADS
    err = trec_index_qrels(&j->qrels, j->threads, &j->index);
    for (int k = 0; !err && k < j->threads; k++) {
        Py_ssize_t share = j->run_slices[k].cap;  /* its lines: where the next slice writes */
        err = trec_stream_start(&j->run_slices[k], j->index, match + at, scores ? scores + at : NULL);
        at += share;
    }
    if (!err) {
        trec_run_all(read_one, (char *)j->run_slices, sizeof(Slice), j->threads);
        err = slices_error(j->run_slices, j->threads, &nrun);
    }
    Py_END_ALLOW_THREADS
    if (!err && nrun == 0)
        err = FAST_BAIL;
    if (err)
        return err;
    Py_ssize_t most_queries = 1;
    for (int k = 0; k < j->threads; k++)
        most_queries += j->run_slices[k].queries.count;
    j->run_first = PyByteArray_FromStringAndSize(NULL, most_queries * (Py_ssize_t)sizeof(int64_t));
    if (j->run_first == NULL)
        return FAST_NOMEM;
    j->run.d = rd;
    return trec_stream_merge(j->run_slices, j->threads, &j->run, match, scores,
                             (int64_t *)PyByteArray_AS_STRING(j->run_first));
}

static int merge_and_join(Join *j)
{
    int err = trec_merge_slices(j->run_slices, j->threads, &j->run);
    if (!err)
        err = trec_merge_slices(j->qrels_slices, j->threads, &j->qrels);
    if (!err)
        err = trec_join_all(&j->run, &j->qrels,
                            j->ranked_scores ? (double *)PyByteArray_AS_STRING(j->ranked_scores) : NULL,
                       (int32_t *)PyByteArray_AS_STRING(j->ranked_match),
                       (int64_t *)PyByteArray_AS_STRING(j->run_first), j->threads);
    return err;
}

static void free_join(Join *j)
{
    for (int k = 0; k < j->threads; k++) {
        trec_free_slice(&j->run_slices[k]);
        trec_free_slice(&j->qrels_slices[k]);
    }
    free(j->run.codes);
    free(j->run.values);
    free(j->run.doc);
    free(j->qrels.doc);
    trec_free_queries(&j->run.queries);
    trec_free_queries(&j->qrels.queries);
    trec_free_index(j->index);
    Py_XDECREF(j->run_first);
    Py_XDECREF(j->ranked_scores);
    Py_XDECREF(j->ranked_match);
    Py_XDECREF(j->qrels_codes);
    Py_XDECREF(j->qrels_values);
}

PyDoc_STRVAR(join_doc,
"join(run, qrels, threads=1, scores=True, stream=True) -> tuple | None\n\n"
"Read a TREC run (qid Q0 docid rank score tag) and its qrels (qid iteration docid relevance), both as bytes, and\n"
"join them, on up to `threads` threads. None when the input is outside the fast path (see the module's source):\n"
"read it with the numpy path. Otherwise (run_qids, run_first, scores, match, tag, qrels_qids, qrels_codes,\n"
"relevance), the arrays as bytearrays: the run's query ids in order of first appearance (a list of bytes); the\n"
"run's lines ranked: query by query in that order (query c at run_first[c]:run_first[c + 1], int64), each query's\n"
"in trec_eval's rank order, their scores (float64; None unless `scores`) and the qrels line of the same (query,\n"
"document), -1 if none\n"
"(int32); the sixth field of the run's first line; the qrels' query ids in order of first appearance and per line\n"
"its query's number (int32) and its relevance (float64).\n\n"
"The run is joined query by query as it is read when each query's lines are together (as runs are written), else\n"
"(or without `stream`) read whole first; both give the same result.");

static PyObject *join(PyObject *self, PyObject *args)
{
    Py_buffer run_buf, qrels_buf;
    int threads = 1, scores = 1, stream = 1;
    if (!PyArg_ParseTuple(args, "y*y*|ipp:join", &run_buf, &qrels_buf, &threads, &scores, &stream))
        return NULL;
    Join *j = calloc(1, sizeof(Join));
    PyObject *result = NULL;
    if (j == NULL) {
        PyBuffer_Release(&run_buf);
        PyBuffer_Release(&qrels_buf);
        return PyErr_NoMemory();
    }
    j->threads = threads < 1 ? 1 : threads > MAX_THREADS ? MAX_THREADS : threads;
    j->scores = scores;
    int err = stream ? stream_join(j, &run_buf, &qrels_buf) : STREAM_FALLBACK;
    if (err == STREAM_FALLBACK) {  /* the run read whole, then joined */
        free_join(j);
        *j = (Join){.threads = j->threads, .scores = scores};
        err = read_both(j, &run_buf, &qrels_buf);
        if (!err) {
            Py_BEGIN_ALLOW_THREADS
            err = merge_and_join(j);
            Py_END_ALLOW_THREADS
        }
    }
    if (err == FAST_NOMEM) {
        if (!PyErr_Occurred())
            PyErr_NoMemory();
    } else if (err) {
        result = Py_None;
        Py_INCREF(result);
    } else {
        if (PyByteArray_Resize(j->run_first, (j->run.queries.count + 1) * (Py_ssize_t)sizeof(int64_t)) == 0 &&
            PyByteArray_Resize(j->qrels_codes, j->qrels.n * (Py_ssize_t)sizeof(int32_t)) == 0 &&
            PyByteArray_Resize(j->qrels_values, j->qrels.n * (Py_ssize_t)sizeof(double)) == 0 &&
            PyByteArray_Resize(j->ranked_match, j->run.n * (Py_ssize_t)sizeof(int32_t)) == 0 &&
            (j->ranked_scores == NULL ||
             PyByteArray_Resize(j->ranked_scores, j->run.n * (Py_ssize_t)sizeof(double)) == 0))
            result = Py_BuildValue("(NOOONNOO)", query_names(&j->run.queries), j->run_first,
                                   j->ranked_scores ? j->ranked_scores : Py_None,
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
    "A TREC run and its qrels read, checked and joined in C (the fast path of rankcli.formats.trec.join_native).", -1,
    methods, NULL, NULL, NULL, NULL,
};

uint64_t trec_hash_seed;

/* The hash seed: from the kernel's random source, else from the clock and an address. */
static void draw_hash_seed(void)
{
    FILE *f = fopen("/dev/urandom", "rb");
    uint64_t seed = 0;
    if (f == NULL || fread(&seed, sizeof seed, 1, f) != 1)
        seed = (uint64_t)time(NULL) * 0x9e3779b97f4a7c15ULL ^ (uint64_t)(uintptr_t)&seed;
    if (f != NULL)
        fclose(f);
    trec_hash_seed = seed;
}

PyMODINIT_FUNC PyInit_trec_native(void)
{
    draw_hash_seed();
    trec_init_byte_classes();
    return PyModule_Create(&module);
}
