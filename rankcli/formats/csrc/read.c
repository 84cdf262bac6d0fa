/* Reading TREC files for rankcli.formats.trec_native (see module.c): each thread reads a slice of whole lines. */
#include "trec_native.h"

unsigned char trec_byte_class[256];

void trec_init_byte_classes(void)
{
    static const unsigned char spaces[] = {9, 11, 12, 13, 32};
    for (size_t i = 0; i < sizeof(spaces); i++)
        trec_byte_class[spaces[i]] = SPACE;
    trec_byte_class['\n'] = NEWLINE;
    trec_byte_class[0] = NUL;
}

void trec_free_queries(QueryTable *t)
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
int trec_query_code(QueryTable *t, const unsigned char *p, int32_t len, int add, int32_t *code)
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
int trec_convert_slowly(const unsigned char *p, Py_ssize_t len, double *out)
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

void trec_free_slice(Slice *s)
{
    trec_stream_free(s);
    free(s->pending);
    trec_free_queries(&s->queries);
    s->pending = NULL;
    s->npending = s->cap_pending = 0;
}

/* The lines of d[begin:end]: its newlines, and one more when it ends without one. Eight bytes at a time: a byte of
 * x is zero exactly when its high bit survives in ~(((x & 7f..) + 7f..) | x), with no carry between bytes; those
 * bits, shifted to each byte's low bit, are summed into the top byte by one multiplication. */
Py_ssize_t trec_count_lines(const unsigned char *d, Py_ssize_t begin, Py_ssize_t end)
{
    const uint64_t low7 = 0x7f7f7f7f7f7f7f7fULL, newlines = 0x0a0a0a0a0a0a0a0aULL;
    Py_ssize_t count = 0, i = begin;
    for (; i + 8 <= end; i += 8) {
        uint64_t x;
        memcpy(&x, d + i, 8);
        x ^= newlines;
        uint64_t zero = ~(((x & low7) + low7) | x) & ~low7;
        count += (Py_ssize_t)(((zero >> 7) * 0x0101010101010101ULL) >> 56);
    }
    for (; i < end; i++)
        count += d[i] == '\n';
    return count + (end > begin && d[end - 1] != '\n');
}

#if defined(__GNUC__) || defined(__clang__)
#define HAVE_WORD_SCAN 1
/* C's isspace bytes but the newline (\t \v \f \r and space), as bits of a word: all are below 64. */
#define SPACE_BITS 0x100003A00ULL

/* The common line, eight bytes at a time: fields of bytes from '!' up, separated by whitespace, ending at a newline.
 * A field's end is the lowest byte below '!' of a word, flagged by (x - 0x21..) & ~x & 0x80.. (bytes of 0x80 and
 * above are never flagged, and a borrow only flags bytes above the first); the byte that ends it is read from the
 * word, not loaded again. Returns the number of fields (0: a blank line), -1 for more than `fields` fields, or -2
 * for anything else (a comment, a NUL or other control byte, fewer than eight bytes left before `end`): the byte
 * loop (split_line) reads that line. */
static inline int split_words(const unsigned char *d, Py_ssize_t *pos, Py_ssize_t end, const int fields,
                              Py_ssize_t *start, Py_ssize_t *len)
{
    Py_ssize_t i = *pos;
    int count = 0;
    for (;;) {
        if (i + 8 > end)
            return -2;
        uint64_t x;
        memcpy(&x, d + i, 8);
        unsigned b = (unsigned)(x & 0xff);
        if (b < 0x21) {  /* whitespace before a field, or the line's end */
            if (b == '\n') {
                *pos = i + 1;
                return count;
            }
            if (!((SPACE_BITS >> b) & 1))
                return -2;
            i++;
            continue;
        }
        if (count == 0 && b == '#')
            return -2;
        if (count == fields)
            return -1;
        start[count] = i;
        for (;;) {
            uint64_t below = (x - 0x2121212121212121ULL) & ~x & 0x8080808080808080ULL;
            if (below) {
                int k = __builtin_ctzll(below) >> 3;
                i += k;
                b = (unsigned)((x >> (8 * k)) & 0xff);
                break;
            }
            i += 8;
            if (i + 8 > end)
                return -2;
            memcpy(&x, d + i, 8);
        }
        len[count] = i - start[count];
        count++;
        if (b == '\n') {
            *pos = i + 1;
            return count;
        }
        if (!((SPACE_BITS >> b) & 1))
            return -2;
        i++;
    }
}
#endif

/* The fields of the line at *pos (their starts and lengths), *pos moved past its newline: the number of fields (0:
 * blank or a comment), -1 for a NUL or more than `fields` fields. Unless `guarded`, a newline is known to come
 * before `end`, and the scans need no bounds check. */
static inline int split_line(const unsigned char *d, Py_ssize_t *pos, Py_ssize_t end, const int guarded,
                             const int fields, Py_ssize_t *start, Py_ssize_t *len)
{
#define CLASS_AT(i) (guarded && (i) >= end ? NEWLINE : trec_byte_class[d[i]])
    Py_ssize_t i = *pos;
    int count = 0, cls;
    for (;;) {
        while ((cls = CLASS_AT(i)) == SPACE)
            i++;
        if (cls != FIELD)
            break;
        if (count == 0 && d[i] == '#') {  /* a comment line: skipped whatever it holds but a NUL */
            const unsigned char *nl = memchr(d + i, '\n', (size_t)(end - i));
            Py_ssize_t stop = nl ? nl - d : end;
            if (memchr(d + i, 0, (size_t)(stop - i)) != NULL)
                return -1;  /* refused wherever it is (the numpy path names it) */
            *pos = stop < end ? stop + 1 : end;
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

/* The data lines of a slice into its share of the lines' arrays (s->codes, s->values, s->doc: room for
 * trec_count_lines of its bytes, which no slice exceeds); with a stream (join.c), each query's lines into the
 * stream's arrays, joined and ranked when the query ends. */
int trec_read_slice(Slice *s)
{
    const unsigned char *d = s->d;
    const int fields = s->fields, doc_field = s->doc_field, value_field = s->value_field;
    int err = grow_queries(&s->queries);
    if (err)
        return err;
    Py_ssize_t tail = s->end;  /* where the last line starts if it lacks a newline: only it needs bounds checks */
    while (tail > s->begin && d[tail - 1] != '\n')
        tail--;
    const unsigned char *last_q = NULL;
    int32_t last_len = -1, last_code = -1;
    Py_ssize_t n = 0, lines = 0, pos = s->begin;  /* n: in the arrays (with a stream: of the current query) */
    while (pos < s->end) {
        Py_ssize_t start[6], len[6];
        int count = -2;
#ifdef HAVE_WORD_SCAN
        count = split_words(d, &pos, s->end, fields, start, len);
#endif
        if (count == -2)
            count = pos < tail ? split_line(d, &pos, s->end, 0, fields, start, len)
                               : split_line(d, &pos, s->end, 1, fields, start, len);
        if (count == 0)
            continue;  /* blank or comment */
        if (count != fields || len[0] > INT32_MAX || len[doc_field] >= (1 << DOC_LEN_BITS))
            return FAST_BAIL;
        const unsigned char *q = d + start[0];
        if (!(len[0] == last_len && memcmp(q, last_q, (size_t)last_len) == 0)) {
            if (s->stream != NULL && n > 0) {  /* the query before ends here: joined now */
                if ((err = trec_stream_query(s, last_code, n)))
                    return err;
                n = 0;
            }
            Py_ssize_t known = s->queries.count;
            if ((err = trec_query_code(&s->queries, q, (int32_t)len[0], 1, &last_code)))
                return err;
            if (s->stream != NULL && s->queries.count == known)
                return STREAM_FALLBACK;  /* a query met again after another: its lines are not together */
            last_q = q;
            last_len = (int32_t)len[0];
        }
        if (n == s->cap && (s->stream == NULL || (err = trec_stream_grow(s))))
            return s->stream == NULL ? FAST_BAIL : err;  /* never without a stream: the lines were counted */
        err = parse_number(d + start[value_field], (int32_t)len[value_field], &s->values[n]);
        if (err == SLOW_NUMBER && s->stream != NULL) {
            return STREAM_FALLBACK;  /* converted by Python after the threads: too late to rank the query */
        } else if (err == SLOW_NUMBER) {
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
        if (!s->tagged && fields == 6) {
            s->tag_start = start[5];
            s->tag_len = len[5];
            s->tagged = 1;
        }
        if (s->stream == NULL)
            s->codes[n] = last_code;
        s->doc[n] = (uint64_t)start[doc_field] << DOC_LEN_BITS | (uint64_t)len[doc_field];
        n++;
        lines++;
    }
    if (s->stream != NULL && n > 0 && (err = trec_stream_query(s, last_code, n)))
        return err;
    s->n = lines;
    return 0;
}

/* ------------------------------------------------------------------------------------------------------------------
 * Threads */

typedef void *(*Task)(void *);

/* task(items[0]), ..., task(items[count - 1]), at the same time where threads can be started. */
void trec_run_all(Task task, char *items, size_t item_size, int count)
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

/* Slice k of `threads`: whole lines, from after the newline that ends at or past k/threads of the bytes. */
Py_ssize_t trec_slice_start(const unsigned char *d, Py_ssize_t size, int k, int threads)
{
    if (k == 0)
        return 0;
    if (k == threads)
        return size;
    Py_ssize_t at = (Py_ssize_t)((double)size * k / threads);
    const unsigned char *nl = memchr(d + at, '\n', (size_t)(size - at));
    return nl ? nl - d + 1 : size;
}

/* The first field of the line at d[at:] (its start and length): 0 when the line is blank or a comment. */
static Py_ssize_t first_field(const unsigned char *d, Py_ssize_t size, Py_ssize_t at, Py_ssize_t *start)
{
    while (at < size && trec_byte_class[d[at]] == SPACE)
        at++;
    if (at >= size || trec_byte_class[d[at]] != FIELD || d[at] == '#')
        return 0;
    *start = at;
    while (at < size && trec_byte_class[d[at]] == FIELD)
        at++;
    return at - *start;
}

/* Slice k of `threads` for a run joined as it is read: as trec_slice_start, then moved past the lines that go on
 * with the query of the last data line before it, so that no query's lines are split between two slices. */
Py_ssize_t trec_query_slice_start(const unsigned char *d, Py_ssize_t size, int k, int threads)
{
    Py_ssize_t at = trec_slice_start(d, size, k, threads), end = at, qstart = 0, qlen = 0;
    while (k > 0 && end > 0 && qlen == 0) {  /* the last data line before: back line by line */
        Py_ssize_t line = end - 1;
        while (line > 0 && d[line - 1] != '\n')
            line--;
        qlen = first_field(d, end, line, &qstart);
        end = line;
    }
    while (qlen > 0 && at < size) {
        Py_ssize_t start, len = first_field(d, size, at, &start);
        if (len != 0 && (len != qlen || memcmp(d + start, d + qstart, (size_t)len) != 0))
            break;  /* another query starts here */
        const unsigned char *nl = memchr(d + at, '\n', (size_t)(size - at));
        at = nl ? nl - d + 1 : size;
    }
    return at;
}
