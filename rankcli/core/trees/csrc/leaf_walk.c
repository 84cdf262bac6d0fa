/* rankcli.core.trees.leaf_walk: the leaf each row reaches in each tree of a LightGBM ensemble (LightGBM's
 * pred_leaf), walked in C.
 *
 * The rule is LightGBM's own (include/LightGBM/tree.h, Tree::NumericalDecision, and src/c_api.cpp's dense-row
 * reader), the one rankcli.core.trees.ensemble.lightgbm_left states in numpy:
 *   - a value x is read as a double (a float32 widened exactly); |x| <= kZeroThreshold (1e-35f) reaches the trees
 *     as 0.0, because the prediction input keeps only fabs(x) > kZeroThreshold or NaN;
 *   - at a node of missing type NaN, NaN goes the default way; at one of type Zero, NaN and 0.0 go the default way
 *     (NaN becomes 0.0 first, which IsZero takes); at one of type None, NaN becomes 0.0 and is compared;
 *   - anything else goes left when x <= threshold, both doubles.
 * So each node keeps where NaN goes (NAN_LEFT), whether 0.0 takes the default (ZERO_MISSING) and the default
 * (DEFAULT_LEFT), and the step is a comparison and two selections, without a branch on the value; a block of rows
 * without NaN through a model without a node of missing type Zero needs the comparison alone, and gets it.
 *
 * Speed comes from the memory, not the arithmetic: LightGBM walks one row through all trees, whose nodes (megabytes)
 * do not stay in cache, and each step waits for the load before it. Here the rows come in blocks of BLOCK_ROWS,
 * copied once into a buffer of doubles (as the trees see them) that stays in the core's L2 cache while every tree
 * walks it; a tree's nodes (a few KiB, leaves packed as nodes that lead to themselves) stay in L1 while the block
 * goes through it, LANES rows at a time in lockstep, so that the CPU overlaps LANES independent chains of loads.
 * The output is written tree by tree, each tree's leaves for the block's rows contiguous.
 *
 * Threads (POSIX; one elsewhere) take contiguous ranges of row blocks, without the GIL. Categorical splits are not
 * walked (ValueError): the caller leaves such a model to LightGBM. No numpy C API: buffers in, a buffer filled.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifndef _WIN32
#include <pthread.h>
#define HAVE_THREADS 1
#endif

#define MAX_THREADS 64
#ifndef BLOCK_ROWS
#define BLOCK_ROWS 128
#endif
#ifndef LANES
#define LANES 16
#endif
#define K_ZERO_THRESHOLD ((double)1e-35f)

enum { NAN_LEFT = 1, ZERO_MISSING = 2, DEFAULT_LEFT = 4 };
enum { CATEGORICAL_MASK = 1, DEFAULT_LEFT_MASK = 2 };
enum { MISSING_ZERO = 1, MISSING_NAN = 2 };

typedef struct {
    double threshold;
    int32_t feature;
    uint32_t flags;
    int32_t child[2]; /* [right, left]: indices into the packed nodes; a leaf's both are itself */
} Node;

/* The ensemble packed for the walk: tree t holds its internal nodes in LightGBM's order from base[t], then its
 * leaves from first_leaf[t]. */
typedef struct {
    Node *nodes;
    int64_t *base, *first_leaf, *leaf_base; /* leaf_base: the ensemble's index of the tree's leaf 0 */
    Py_ssize_t trees;
    int zero_missing;                       /* any node of missing type Zero */
} Pack;

/* The arrays as rankcli.core.trees.ensemble.Ensemble holds them (child codes: a node index, or -(leaf) - 1). */
typedef struct {
    const double *threshold;
    const int64_t *feature, *decision_type, *left, *right, *roots, *node_offsets, *leaf_offsets;
    Py_ssize_t nodes, leaves, trees, cols;
} Arrays;

static int offsets_ok(const int64_t *offsets, Py_ssize_t trees, Py_ssize_t total)
{
    if (offsets[0] != 0 || offsets[trees] != total)
        return 0;
    for (Py_ssize_t t = 0; t < trees; t++)
        if (offsets[t + 1] < offsets[t])
            return 0;
    return 1;
}

/* The packed index of child code c of tree t, or -1 when c is not a node or leaf of tree t. */
static int64_t packed_child(const Arrays *a, const Pack *p, Py_ssize_t t, int64_t c)
{
    if (c >= 0)
        return c >= a->node_offsets[t] && c < a->node_offsets[t + 1] ? p->base[t] + (c - a->node_offsets[t]) : -1;
    int64_t leaf = -(c + 1);
    return leaf >= a->leaf_offsets[t] && leaf < a->leaf_offsets[t + 1] ?
           p->first_leaf[t] + (leaf - a->leaf_offsets[t]) : -1;
}

static const char *pack_node(const Arrays *a, Pack *p, Py_ssize_t t, Py_ssize_t i)
{
    int64_t dt = a->decision_type[i], missing = (dt >> 2) & 3, at = p->base[t] + (i - a->node_offsets[t]);
    int64_t left = packed_child(a, p, t, a->left[i]), right = packed_child(a, p, t, a->right[i]);
    if (dt & CATEGORICAL_MASK)
        return "a categorical split (the walk compares values with thresholds only)";
    if (left < 0 || right < 0)
        return "a child outside its tree";
    if (a->feature[i] < 0 || a->feature[i] >= a->cols)
        return "a split on a feature beyond the rows' columns";
    int default_left = (dt & DEFAULT_LEFT_MASK) != 0;
    int nan_left = missing == MISSING_ZERO || missing == MISSING_NAN ? default_left : 0.0 <= a->threshold[i];
    p->zero_missing |= missing == MISSING_ZERO;
    p->nodes[at] = (Node){.threshold = a->threshold[i], .feature = (int32_t)a->feature[i],
                          .flags = (nan_left ? NAN_LEFT : 0) | (missing == MISSING_ZERO ? ZERO_MISSING : 0) |
                                   (default_left ? DEFAULT_LEFT : 0),
                          .child = {(int32_t)right, (int32_t)left}};
    return NULL;
}

/* Fill p from a; NULL, or what is wrong with the arrays (p->nodes is then freed by the caller). */
static const char *pack(const Arrays *a, Pack *p)
{
    if (!offsets_ok(a->node_offsets, a->trees, a->nodes) || !offsets_ok(a->leaf_offsets, a->trees, a->leaves))
        return "node or leaf offsets that do not cover the arrays";
    if (a->nodes + a->leaves >= INT32_MAX)
        return "more than 2^31 nodes";
    p->trees = a->trees;
    p->nodes = malloc(sizeof(Node) * (size_t)(a->nodes + a->leaves + 1));
    p->base = malloc(sizeof(int64_t) * (size_t)(3 * a->trees + 1));
    if (p->nodes == NULL || p->base == NULL)
        return "";
    p->first_leaf = p->base + a->trees;
    p->leaf_base = p->first_leaf + a->trees;
    for (Py_ssize_t t = 0; t < a->trees; t++) {
        p->base[t] = a->node_offsets[t] + a->leaf_offsets[t];
        p->first_leaf[t] = p->base[t] + (a->node_offsets[t + 1] - a->node_offsets[t]);
        p->leaf_base[t] = a->leaf_offsets[t];
        if (a->leaf_offsets[t + 1] == a->leaf_offsets[t])
            return "a tree without a leaf";
        for (int64_t j = p->first_leaf[t]; j < p->first_leaf[t] + (a->leaf_offsets[t + 1] - a->leaf_offsets[t]); j++)
            p->nodes[j] = (Node){.threshold = 0.0, .feature = 0, .flags = 0, .child = {(int32_t)j, (int32_t)j}};
        for (Py_ssize_t i = a->node_offsets[t]; i < a->node_offsets[t + 1]; i++) {
            const char *why = pack_node(a, p, t, i);
            if (why != NULL)
                return why;
        }
        if (packed_child(a, p, t, a->roots[t]) != (a->node_offsets[t + 1] > a->node_offsets[t] ? p->base[t] :
                                                   p->first_leaf[t]))
            return "a root that is not its tree's first node (or, for a tree of one leaf, its leaf)";
    }
    return NULL;
}

/* ------------------------------------------------------------------------------------------------------------------
 * The walk */

typedef struct {
    const Pack *pack;
    const void *x;     /* rows x cols, C order */
    int is_float32;
    Py_ssize_t rows, cols, begin, end; /* this task's rows: [begin, end) */
    int64_t *out;      /* trees x rows, C order */
    int err;
} Task;

/* The rows [r0, r0 + n) as the trees see them: doubles, |x| <= kZeroThreshold as 0.0, NaN kept. Returns whether
 * any is NaN. */
static int load_rows(const Task *task, Py_ssize_t r0, Py_ssize_t n, double *buf)
{
    Py_ssize_t count = n * task->cols, start = r0 * task->cols;
    int nan = 0;
    if (task->is_float32) {
        const float *x = (const float *)task->x + start;
        for (Py_ssize_t i = 0; i < count; i++) {
            double v = (double)x[i];
            buf[i] = fabs(v) <= K_ZERO_THRESHOLD ? 0.0 : v;
            nan |= v != v;
        }
    } else {
        const double *x = (const double *)task->x + start;
        for (Py_ssize_t i = 0; i < count; i++) {
            buf[i] = fabs(x[i]) <= K_ZERO_THRESHOLD ? 0.0 : x[i];
            nan |= x[i] != x[i];
        }
    }
    return nan;
}

#if defined(__GNUC__)
#define ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define ALWAYS_INLINE inline
#endif

/* LANES rows through tree t from its root until every one is at a leaf; -1 if a path is longer than the tree has
 * nodes (the children form a cycle). Without `special` (no NaN among the rows, no node of missing type Zero) every
 * step is the comparison alone. */
static ALWAYS_INLINE int walk_lanes(const Pack *p, Py_ssize_t t, const double *const row[LANES], int32_t at[LANES],
                                    const int special)
{
    const Node *nodes = p->nodes;
    int32_t first_leaf = (int32_t)p->first_leaf[t];
    int64_t longest = p->first_leaf[t] - p->base[t];
    for (int k = 0; k < LANES; k++)
        at[k] = (int32_t)p->base[t];  /* the root, or the only leaf */
    for (int64_t step = 0;; step++) {
        int done = 1;
        for (int k = 0; k < LANES; k++)
            done &= at[k] >= first_leaf;
        if (done)
            return 0;
        if (step >= longest)
            return -1;
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC unroll 16
#endif
        for (int k = 0; k < LANES; k++) {
            const Node *n = &nodes[at[k]];
            double v = row[k][n->feature];
            unsigned left = v <= n->threshold;           /* false for NaN */
            if (special) {
                left = v != v ? (n->flags & NAN_LEFT) : left;
                left = (n->flags & ZERO_MISSING) && v == 0.0 ? (n->flags & DEFAULT_LEFT) >> 2 : left;
            }
            at[k] = n->child[left];
        }
    }
}

static int walk_block(const Task *task, Py_ssize_t r0, Py_ssize_t n, const double *buf, int special)
{
    const Pack *p = task->pack;
    const double *row[LANES];
    int32_t at[LANES];
    for (Py_ssize_t t = 0; t < p->trees; t++) {
        int64_t *out = task->out + t * task->rows + r0, shift = p->leaf_base[t] - p->first_leaf[t];
        for (Py_ssize_t g = 0; g < n; g += LANES) {
            for (int k = 0; k < LANES; k++)  /* past the block's end: its last row again, not written */
                row[k] = buf + (g + k < n ? g + k : n - 1) * task->cols;
            if ((special ? walk_lanes(p, t, row, at, 1) : walk_lanes(p, t, row, at, 0)) != 0)
                return -1;
            for (int k = 0; k < LANES && g + k < n; k++)
                out[g + k] = at[k] + shift;
        }
    }
    return 0;
}

static void *walk_task(void *arg)
{
    Task *task = arg;
    /* zeroed: a lane at a leaf reads column 0, which a model without columns does not fill */
    double *buf = calloc((size_t)(BLOCK_ROWS * (task->cols > 0 ? task->cols : 1)), sizeof(double));
    if (buf == NULL) {
        task->err = 2;
        return NULL;
    }
    for (Py_ssize_t r0 = task->begin; r0 < task->end && !task->err; r0 += BLOCK_ROWS) {
        Py_ssize_t n = task->end - r0 < BLOCK_ROWS ? task->end - r0 : BLOCK_ROWS;
        int nan = load_rows(task, r0, n, buf);
        if (walk_block(task, r0, n, buf, nan || task->pack->zero_missing) != 0)
            task->err = 1;
    }
    free(buf);
    return NULL;
}

/* Run every task, task 0 on this thread; a thread that cannot start runs its task here. */
static void run_all(Task *tasks, int count)
{
#ifdef HAVE_THREADS
    pthread_t ids[MAX_THREADS];
    int started[MAX_THREADS] = {0};
    for (int k = 1; k < count; k++)
        started[k] = pthread_create(&ids[k], NULL, walk_task, &tasks[k]) == 0;
    walk_task(&tasks[0]);
    for (int k = 1; k < count; k++) {
        if (started[k])
            pthread_join(ids[k], NULL);
        else
            walk_task(&tasks[k]);
    }
#else
    for (int k = 0; k < count; k++)
        walk_task(&tasks[k]);
#endif
}

/* Split the rows into `threads` ranges of whole blocks and walk them; 0, 1 (a cycle) or 2 (out of memory). */
static int walk_all(const Pack *p, const void *x, int is_float32, Py_ssize_t rows, Py_ssize_t cols, int64_t *out,
                    int threads)
{
    Py_ssize_t blocks = (rows + BLOCK_ROWS - 1) / BLOCK_ROWS;
    if (threads > MAX_THREADS)
        threads = MAX_THREADS;
    if (threads > blocks)
        threads = blocks > 0 ? (int)blocks : 1;
#ifndef HAVE_THREADS
    threads = 1;
#endif
    Task tasks[MAX_THREADS];
    for (int k = 0; k < threads; k++) {
        Py_ssize_t b0 = blocks * k / threads, b1 = blocks * (k + 1) / threads;
        Py_ssize_t end = b1 * BLOCK_ROWS < rows ? b1 * BLOCK_ROWS : rows;
        tasks[k] = (Task){.pack = p, .x = x, .is_float32 = is_float32, .rows = rows, .cols = cols,
                          .begin = b0 * BLOCK_ROWS, .end = end, .out = out, .err = 0};
    }
    Py_BEGIN_ALLOW_THREADS
    run_all(tasks, threads);
    Py_END_ALLOW_THREADS
    int err = 0;
    for (int k = 0; k < threads; k++)
        err = tasks[k].err > err ? tasks[k].err : err;
    return err;
}

/* ------------------------------------------------------------------------------------------------------------------
 * The module */

enum { B_THRESHOLD, B_FEATURE, B_DECISION, B_LEFT, B_RIGHT, B_ROOTS, B_NODE_OFF, B_LEAF_OFF, B_X, B_OUT, N_BUF };

/* Whether every buffer holds what the counts say (a short buffer would be read past its end). */
static int sizes_ok(const Py_buffer *b, const Arrays *a, Py_ssize_t rows, Py_ssize_t itemsize)
{
    Py_ssize_t n = a->nodes * 8;
    if (a->trees < 0 || a->cols < 0 || a->leaves < 0 || rows < 0 ||
        (a->cols > 0 && rows > PY_SSIZE_T_MAX / itemsize / a->cols) ||
        (a->trees > 0 && rows > PY_SSIZE_T_MAX / 8 / a->trees))
        return 0;
    return b[B_THRESHOLD].len == n && b[B_FEATURE].len == n &&
           b[B_DECISION].len == n && b[B_LEFT].len == n && b[B_RIGHT].len == n && b[B_ROOTS].len == a->trees * 8 &&
           b[B_NODE_OFF].len == (a->trees + 1) * 8 && b[B_LEAF_OFF].len == (a->trees + 1) * 8 &&
           b[B_X].len == rows * a->cols * itemsize && b[B_OUT].len == a->trees * rows * 8;
}

static PyObject *walk_buffers(Py_buffer *b, Py_ssize_t leaves, Py_ssize_t cols, Py_ssize_t rows, int is_float32,
                              int threads)
{
    Arrays a = {.threshold = b[B_THRESHOLD].buf, .feature = b[B_FEATURE].buf, .decision_type = b[B_DECISION].buf,
                .left = b[B_LEFT].buf, .right = b[B_RIGHT].buf, .roots = b[B_ROOTS].buf,
                .node_offsets = b[B_NODE_OFF].buf, .leaf_offsets = b[B_LEAF_OFF].buf,
                .nodes = b[B_THRESHOLD].len / 8, .leaves = leaves, .trees = b[B_ROOTS].len / 8, .cols = cols};
    if (!sizes_ok(b, &a, rows, is_float32 ? 4 : 8)) {
        PyErr_SetString(PyExc_ValueError, "leaf_walk.walk: buffers of other sizes than the counts give");
        return NULL;
    }
    Pack p = {0};
    const char *why = pack(&a, &p);
    int err = why == NULL ? walk_all(&p, b[B_X].buf, is_float32, rows, cols, b[B_OUT].buf, threads) : 0;
    free(p.nodes);
    free(p.base);
    if (why != NULL && *why == '\0')
        return PyErr_NoMemory();
    if (why != NULL || err == 1) {
        PyErr_Format(PyExc_ValueError, "leaf_walk.walk: the trees hold %s",
                     why != NULL ? why : "a path longer than the tree's nodes (a cycle)");
        return NULL;
    }
    if (err == 2)
        return PyErr_NoMemory();
    Py_RETURN_NONE;
}

PyDoc_STRVAR(walk_doc,
"walk(threshold, feature, decision_type, left, right, roots, node_offsets, leaf_offsets, n_leaves, x, float32, rows,\n"
"     cols, out, threads)\n"
"\n"
"Fill out (trees x rows int64, C order) with the ensemble's leaf index that each row of x (rows x cols, C order,\n"
"float32 if float32 else float64) reaches in each tree, by LightGBM's rule. The node arrays are int64 (threshold\n"
"float64) as rankcli.core.trees.ensemble.Ensemble holds them. ValueError for a categorical split or arrays that do\n"
"not describe trees.");

static PyObject *walk(PyObject *self, PyObject *args)
{
    Py_buffer b[N_BUF];
    memset(b, 0, sizeof b);
    Py_ssize_t leaves, rows, cols;
    int is_float32, threads;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*y*y*ny*pnnw*i", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &b[6],
                          &b[7], &leaves, &b[B_X], &is_float32, &rows, &cols, &b[B_OUT], &threads))
        return NULL;  /* PyArg_ParseTuple releases the buffers it filled */
    PyObject *result = walk_buffers(b, leaves, cols, rows, is_float32, threads < 1 ? 1 : threads);
    for (int i = 0; i < N_BUF; i++)
        PyBuffer_Release(&b[i]);
    return result;
}

static PyMethodDef methods[] = {
    {"walk", walk, METH_VARARGS, walk_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "leaf_walk",
    "The leaf each row reaches in each tree of a LightGBM ensemble, walked in C (rankcli.core.trees.leaves).", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit_leaf_walk(void)
{
    return PyModule_Create(&module);
}
