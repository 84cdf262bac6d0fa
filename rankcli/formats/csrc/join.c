/* Joining and ranking for rankcli.formats.trec_native (see module.c): the slices put together, then, query by query,
 * each run line matched with its judgment and each query's lines put in trec_eval's rank order. */
#include "trec_native.h"

/* Renumber the queries of slices 1.. into slice 0's table, and copy the lines into `out`: into its codes and
 * values when given (buffers for every line), else into arrays allocated here, or, from a single slice, into none:
 * that slice's arrays become the lines'. */
int trec_merge_slices(Slice *slices, int count, Lines *out)
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
                int err = trec_query_code(&out->queries, s->queries.items[j].p, s->queries.items[j].len, 1, &renumber[j]);
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
        trec_query_code((QueryTable *)&qrels->queries, q->p, q->len, 0, &qc);  /* a lookup: never fails */
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

int trec_join_all(const Lines *run, const Lines *qrels, double *ranked_scores, int32_t *ranked_match,
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
        trec_run_all(join_task, (char *)tasks, sizeof(JoinTask), threads);
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
