/* Joining and ranking for rankcli.formats.trec_native (see module.c): the slices put together, then, query by query,
 * each run line matched with its judgment and each query's lines put in trec_eval's rank order. */
#include "trec_native.h"

/* Renumber the queries of slices 1.. into slice 0's table, and close the gaps between the slices' lines in `out`
 * (each slice read into its share of out's arrays, sized by its bytes' lines: a gap where a slice had blank or
 * comment lines). In place: a slice's lines only move down. */
int trec_merge_slices(Slice *slices, int count, Lines *out)
{
    out->queries = slices[0].queries;
    memset(&slices[0].queries, 0, sizeof(QueryTable));
    Py_ssize_t at = 0;
    int tagged = 0;
    for (int k = 0; k < count; k++) {
        Slice *s = &slices[k];
        if (s->n && !tagged) {
            out->tag_start = s->tag_start;
            out->tag_len = s->tag_len;
            tagged = 1;
        }
        if (k > 0) {
            int32_t *renumber = malloc((size_t)(s->queries.count ? s->queries.count : 1) * sizeof(int32_t));
            if (renumber == NULL)
                return FAST_NOMEM;
            for (Py_ssize_t j = 0; j < s->queries.count; j++) {
                int err = trec_query_code(&out->queries, s->queries.items[j].p, s->queries.items[j].len, 1, &renumber[j]);
                if (err) {
                    free(renumber);
                    return err;
                }
            }
            for (Py_ssize_t i = 0; i < s->n; i++)  /* out->codes + at <= s->codes: each line read before written */
                out->codes[at + i] = renumber[s->codes[i]];
            free(renumber);
        }
        if (s->values != out->values + at) {
            memmove(out->values + at, s->values, (size_t)s->n * sizeof(double));
            memmove(out->doc + at, s->doc, (size_t)s->n * sizeof(uint64_t));
            if (k == 0)
                memmove(out->codes, s->codes, (size_t)s->n * sizeof(int32_t));
        }
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
    int32_t member;         /* -1: empty */
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

/* The member (an index into `members`, document ids of file `md`) whose document is `doc` of file `d`, -1 if none;
 * `insert` >= 0 adds that member when the document is absent. */
static inline int32_t docset_find(DocSet *s, const unsigned char *md, const uint64_t *members, const unsigned char *d,
                                  uint64_t doc, int32_t insert)
{
    const unsigned char *p = doc_bytes(d, doc);
    size_t len = doc_len(doc);
    uint32_t h = (uint32_t)hash_bytes(p, len);
    Py_ssize_t k = (Py_ssize_t)(h & (uint64_t)s->mask);
    for (; s->slots[k].member >= 0; k = (k + 1) & s->mask) {
        uint64_t other = members[s->slots[k].member];
        if (s->slots[k].hash == h && doc_len(other) == len && memcmp(doc_bytes(md, other), p, len) == 0)
            return s->slots[k].member;
    }
    if (insert >= 0) {
        s->slots[k].member = insert;
        s->slots[k].hash = h;
    }
    return -1;
}

/* The document ids of a query's lines (group g's lines first[c]:first[c + 1] of l): l's own array when its lines
 * are together, else gathered into `room`. */
static const uint64_t *query_docs(const Lines *l, const Groups *g, Py_ssize_t c, uint64_t *room)
{
    if (g->lines == NULL)
        return l->doc + g->first[c];
    for (Py_ssize_t k = g->first[c]; k < g->first[c + 1]; k++)
        room[k - g->first[c]] = l->doc[g->lines[k]];
    return room;
}

typedef struct {
    uint64_t key;           /* ascending key = descending score (score_key) */
    int32_t line;
    int32_t match;          /* the qrels line of its document, -1 if none */
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
    double *ranked_scores;              /* per rank position (queries in order, each in rank order); NULL: none */
    int32_t *ranked_match;              /* the qrels line of each, -1 if none */
    Py_ssize_t run_begin, run_end;      /* this task's queries of the run ... */
    Py_ssize_t qrels_begin, qrels_end;  /* ... and of the qrels */
    Py_ssize_t widest;                  /* the most lines of one query (run or qrels) */
    int err;
} JoinTask;

/* A document judged twice for one query, or ranked twice for one query, is FAST_BAIL. Each query's lines are put in
 * rank order, their scores and the qrels line of the same document listed so (`ranked_scores`, `ranked_match`). */
static int join_queries(JoinTask *t, DocSet *set, Ranked *ranked, Ranked *tmp, uint64_t *room)
{
    const Lines *run = t->run, *qrels = t->qrels;
    const Groups *rg = t->rg, *qg = t->qg;
    int err;
    for (Py_ssize_t c = t->qrels_begin; c < t->qrels_end; c++) {
        Py_ssize_t n = qg->first[c + 1] - qg->first[c];
        const uint64_t *docs = query_docs(qrels, qg, c, room);
        if ((err = docset_reset(set, n)))
            return err;
        for (Py_ssize_t k = 0; k < n; k++)
            if (docset_find(set, qrels->d, docs, qrels->d, docs[k], (int32_t)k) >= 0)
                return FAST_BAIL;
    }
    for (Py_ssize_t c = t->run_begin; c < t->run_end; c++) {
        Py_ssize_t a = rg->first[c], n = rg->first[c + 1] - a;
        const uint64_t *docs = query_docs(run, rg, c, room);
        if ((err = docset_reset(set, n)))
            return err;
        for (Py_ssize_t k = 0; k < n; k++) {
            if (docset_find(set, run->d, docs, run->d, docs[k], (int32_t)k) >= 0)
                return FAST_BAIL;
            int32_t i = group_line(rg, a + k);
            ranked[k] = (Ranked){score_key(run->values[i]), i, -1};
        }
        const Query *q = &run->queries.items[c];
        int32_t qc;
        trec_query_code((QueryTable *)&qrels->queries, q->p, q->len, 0, &qc);  /* a lookup: never fails */
        for (Py_ssize_t k = qc >= 0 ? qg->first[qc] : 0; qc >= 0 && k < qg->first[qc + 1]; k++) {
            int32_t j = group_line(qg, k);
            int32_t member = docset_find(set, run->d, docs, qrels->d, qrels->doc[j], -1);
            if (member >= 0)
                ranked[member].match = j;
        }
        rank_sort(run, ranked, tmp, n);
        for (Py_ssize_t k = 0; k < n; k++)
            t->ranked_match[a + k] = ranked[k].match;
        if (t->ranked_scores != NULL)
            for (Py_ssize_t k = 0; k < n; k++)
                t->ranked_scores[a + k] = run->values[ranked[k].line];
    }
    return 0;
}

static void *join_task(void *arg)
{
    JoinTask *t = arg;
    DocSet set = {NULL, 0, 0};
    Ranked *ranked = malloc((size_t)t->widest * sizeof(Ranked));
    Ranked *tmp = malloc((size_t)(t->widest / 2 + 1) * sizeof(Ranked));
    uint64_t *room = malloc((size_t)t->widest * sizeof(uint64_t));
    t->err = ranked == NULL || tmp == NULL || room == NULL ? FAST_NOMEM : join_queries(t, &set, ranked, tmp, room);
    free(ranked);
    free(tmp);
    free(room);
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

static Py_ssize_t widest_query(const Groups *g, Py_ssize_t nq)
{
    Py_ssize_t widest = 1;
    for (Py_ssize_t c = 0; c < nq; c++)
        widest = g->first[c + 1] - g->first[c] > widest ? g->first[c + 1] - g->first[c] : widest;
    return widest;
}

int trec_join_all(const Lines *run, const Lines *qrels, double *ranked_scores, int32_t *ranked_match,
                    int64_t *run_first, int threads)
{
    Groups rg = {NULL, NULL}, qg = {NULL, NULL};
    JoinTask tasks[MAX_THREADS];
    int err = group(run, &rg);
    if (!err)
        err = group(qrels, &qg);
    if (!err) {
        Py_ssize_t widest = widest_query(&rg, run->queries.count), widest_qrels = widest_query(&qg, qrels->queries.count);
        widest = widest_qrels > widest ? widest_qrels : widest;
        for (int k = 0; k < threads; k++) {
            tasks[k] = (JoinTask){run, qrels, &rg, &qg, ranked_scores, ranked_match,
                                  share_start(&rg, run->queries.count, run->n, k, threads),
                                  share_start(&rg, run->queries.count, run->n, k + 1, threads),
                                  share_start(&qg, qrels->queries.count, qrels->n, k, threads),
                                  share_start(&qg, qrels->queries.count, qrels->n, k + 1, threads), widest, 0};
        }
        trec_run_all(join_task, (char *)tasks, sizeof(JoinTask), threads);
        for (int k = 0; k < threads; k++)
            err = worse(err, tasks[k].err);
        for (Py_ssize_t c = 0; c <= run->queries.count; c++)
            run_first[c] = (int64_t)rg.first[c];
    }
    free(rg.first);
    free(rg.lines);
    free(qg.first);
    free(qg.lines);
    return err;
}

/* ------------------------------------------------------------------------------------------------------------------
 * The run joined as it is read: when each query's lines are together in the file (as runs are written), a thread
 * joins and ranks each query as soon as its last line is read, from a small array of that query's lines, and writes
 * its ranking to the output: no array of every line of the run, no second pass over them. The qrels are read whole
 * first (QrelsIndex). A query met again later, or a number for Python's conversion, is STREAM_FALLBACK: the caller
 * reads the run whole (trec_merge_slices, trec_join_all). */

struct QrelsIndex {
    const Lines *qrels;
    Groups groups;
};

/* The qrels grouped by query and checked for a document judged twice for one query (FAST_BAIL), on `threads`. */
int trec_index_qrels(const Lines *qrels, int threads, QrelsIndex **out)
{
    QrelsIndex *index = calloc(1, sizeof(QrelsIndex));
    if (index == NULL)
        return FAST_NOMEM;
    index->qrels = qrels;
    *out = index;
    int err = group(qrels, &index->groups);
    if (err)
        return err;
    JoinTask tasks[MAX_THREADS];
    Py_ssize_t nq = qrels->queries.count, widest = widest_query(&index->groups, nq);
    for (int k = 0; k < threads; k++)
        tasks[k] = (JoinTask){NULL, qrels, NULL, &index->groups, NULL, NULL, 0, 0,
                              share_start(&index->groups, nq, qrels->n, k, threads),
                              share_start(&index->groups, nq, qrels->n, k + 1, threads), widest, 0};
    trec_run_all(join_task, (char *)tasks, sizeof(JoinTask), threads);
    for (int k = 0; k < threads; k++)
        err = worse(err, tasks[k].err);
    return err;
}

void trec_free_index(QrelsIndex *index)
{
    if (index != NULL) {
        free(index->groups.first);
        free(index->groups.lines);
        free(index);
    }
}

typedef struct Stream {
    const QrelsIndex *index;
    int32_t *ranked_match;      /* the slice's output, from its first line */
    double *ranked_scores;      /* NULL: not wanted */
    Py_ssize_t out;             /* lines written */
    Py_ssize_t *first;          /* per query of the slice, in order (its code): where its ranking starts in the output */
    Py_ssize_t cap_first;
    DocSet set;
    Ranked *ranked, *tmp;
} Stream;

/* Give slice s a stream writing its rankings from ranked_match[0] (and ranked_scores[0] unless NULL). */
int trec_stream_start(Slice *s, const QrelsIndex *index, int32_t *ranked_match, double *ranked_scores)
{
    Stream *t = calloc(1, sizeof(Stream));
    if (t == NULL)
        return FAST_NOMEM;
    *t = (Stream){.index = index, .ranked_match = ranked_match, .ranked_scores = ranked_scores};
    s->stream = t;
    s->cap = 0;
    return trec_stream_grow(s);
}

void trec_stream_free(Slice *s)
{
    Stream *t = s->stream;
    if (t == NULL)
        return;
    free(s->values);
    free(s->doc);
    s->values = NULL;
    s->doc = NULL;
    free(t->first);
    free(t->set.slots);
    free(t->ranked);
    free(t->tmp);
    free(t);
    s->stream = NULL;
}

/* Room for twice as many lines of one query (at least 1024). */
int trec_stream_grow(Slice *s)
{
    Stream *t = s->stream;
    Py_ssize_t cap = s->cap ? 2 * s->cap : 1024;
    double *values = realloc(s->values, (size_t)cap * sizeof(double));
    if (values != NULL)
        s->values = values;
    uint64_t *doc = realloc(s->doc, (size_t)cap * sizeof(uint64_t));
    if (doc != NULL)
        s->doc = doc;
    Ranked *ranked = realloc(t->ranked, (size_t)cap * sizeof(Ranked));
    if (ranked != NULL)
        t->ranked = ranked;
    Ranked *tmp = realloc(t->tmp, (size_t)(cap / 2 + 1) * sizeof(Ranked));
    if (tmp != NULL)
        t->tmp = tmp;
    if (values == NULL || doc == NULL || ranked == NULL || tmp == NULL)
        return FAST_NOMEM;
    s->cap = cap;
    return 0;
}

/* The query `code` of slice s, its n lines in s->values and s->doc: each line matched with the qrels line of its
 * document, a document ranked twice refused (FAST_BAIL), the lines ranked and written out. */
int trec_stream_query(Slice *s, int32_t code, Py_ssize_t n)
{
    Stream *t = s->stream;
    const Lines *qrels = t->index->qrels;
    const Groups *qg = &t->index->groups;
    const unsigned char *d = s->d;
    int err;
    while (code >= t->cap_first) {
        Py_ssize_t cap = t->cap_first ? 2 * t->cap_first : 256;
        Py_ssize_t *first = realloc(t->first, (size_t)cap * sizeof(Py_ssize_t));
        if (first == NULL)
            return FAST_NOMEM;
        t->first = first;
        t->cap_first = cap;
    }
    if ((err = docset_reset(&t->set, n)))
        return err;
    for (Py_ssize_t k = 0; k < n; k++) {
        if (docset_find(&t->set, d, s->doc, d, s->doc[k], (int32_t)k) >= 0)
            return FAST_BAIL;
        t->ranked[k] = (Ranked){score_key(s->values[k]), (int32_t)k, -1};
    }
    const Query *q = &s->queries.items[code];
    int32_t qc;
    trec_query_code((QueryTable *)&qrels->queries, q->p, q->len, 0, &qc);  /* a lookup: never fails */
    for (Py_ssize_t k = qc >= 0 ? qg->first[qc] : 0; qc >= 0 && k < qg->first[qc + 1]; k++) {
        int32_t j = group_line(qg, k);
        int32_t member = docset_find(&t->set, d, s->doc, qrels->d, qrels->doc[j], -1);
        if (member >= 0)
            t->ranked[member].match = j;
    }
    const Lines lines = {.d = d, .doc = s->doc};
    rank_sort(&lines, t->ranked, t->tmp, n);
    for (Py_ssize_t k = 0; k < n; k++)
        t->ranked_match[t->out + k] = t->ranked[k].match;
    if (t->ranked_scores != NULL)
        for (Py_ssize_t k = 0; k < n; k++)
            t->ranked_scores[t->out + k] = s->values[t->ranked[k].line];
    t->first[code] = t->out;
    t->out += n;
    return 0;
}

/* The slices' queries numbered in one table (run->queries, by first appearance; a query in two slices is
 * STREAM_FALLBACK), their rankings closed up in the output (each slice wrote from where its share starts), and where
 * each query's ranking starts (run_first, one more entry: the end). */
int trec_stream_merge(Slice *slices, int count, Lines *run, int32_t *ranked_match, double *ranked_scores,
                      int64_t *run_first)
{
    run->queries = slices[0].queries;
    memset(&slices[0].queries, 0, sizeof(QueryTable));
    Py_ssize_t at = 0, c = 0;
    int tagged = 0;
    for (int k = 0; k < count; k++) {
        Slice *s = &slices[k];
        Stream *t = s->stream;
        if (s->n && !tagged) {
            run->tag_start = s->tag_start;
            run->tag_len = s->tag_len;
            tagged = 1;
        }
        for (Py_ssize_t j = 0; k > 0 && j < s->queries.count; j++) {
            Py_ssize_t known = run->queries.count;
            int32_t code;
            int err = trec_query_code(&run->queries, s->queries.items[j].p, s->queries.items[j].len, 1, &code);
            if (err)
                return err;
            if (run->queries.count == known)
                return STREAM_FALLBACK;
        }
        if (t->ranked_match != ranked_match + at) {
            memmove(ranked_match + at, t->ranked_match, (size_t)t->out * sizeof(int32_t));
            if (ranked_scores != NULL)
                memmove(ranked_scores + at, t->ranked_scores, (size_t)t->out * sizeof(double));
        }
        Py_ssize_t own = k == 0 ? run->queries.count : s->queries.count;  /* slice 0's table is run's now */
        for (Py_ssize_t j = 0; j < own; j++)
            run_first[c++] = (int64_t)(at + t->first[j]);
        at += t->out;
    }
    run_first[c] = (int64_t)at;
    run->n = at;
    return 0;
}
