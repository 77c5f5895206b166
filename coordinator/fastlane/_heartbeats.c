/* The compiled heartbeat lane: every complete Heartbeat frame at the start of a read,
 * answered in one pass, with no Python call per frame.
 *
 * It answers only what the Python lane (handlers/heartbeat_lane.py) would answer without
 * error or with REBALANCE_IN_PROGRESS, from the same state, with the same bytes, and moves
 * the member's session as membership.beat does (in place). The frame's fields come from
 * the Python lane's memo (frame bytes after the correlation id -> decoded fields), so
 * nothing is decoded here: a frame not yet in the memo, or anything else it cannot answer
 * (another API, a refusal, a stale generation, an unknown member, a new or earlier timer,
 * a frame over the size limit, an incomplete frame), stops the walk, and the rest of the
 * read goes the Python way, in order. batch.py is its Python side; the tests hold the two
 * paths to the same bytes and state.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <string.h>

#define HEARTBEAT_KEY 12
#define MAX_VERSIONS 16
#define REBALANCE_IN_PROGRESS 27
/* The walker's own cache of memo entries, keyed by version and frame bytes after the
 * correlation id, so that a repeated frame costs neither a bytes object nor siphash. A
 * frame's decoded fields are a function of those bytes alone, so an entry never goes
 * stale; it is replaced when another frame hashes to its slot. */
#define CACHE_SLOTS 4096
#define CACHE_KEY_BYTES 256

typedef struct {
    uint64_t hash;
    int version;
    Py_ssize_t len;
    PyObject *heard; /* NULL: empty */
    unsigned char key[CACHE_KEY_BYTES];
} CacheSlot;

/* A slot (of a slotted dataclass: ClassicGroup, Member, Armed) read and written by its
 * offset: the walker checks each object's exact type first, so the offset is its own. */
#define SLOT(obj, offset) (*(PyObject **)((char *)(obj) + (offset)))

typedef struct {
    PyObject_HEAD
    PyObject *memo;          /* dict: frame[8:] -> (version, client, group, gen, member, instance) */
    PyObject *classic_type;  /* ClassicGroup */
    PyObject *member_type;   /* Member */
    PyObject *armed_type;    /* Armed */
    Py_ssize_t g_state, g_static_members, g_members, g_generation_id;
    Py_ssize_t m_session_timeout_ms, m_heartbeat_key, m_last_heartbeat_ms, a_deadline_ms;
    CacheSlot *cache;
    PyObject *client;  /* the client id of the last frame answered */
    Py_ssize_t counts[MAX_VERSIONS * 2];
    PyObject *stable, *completing, *preparing;  /* the states a heartbeat is answered in */
    int min_version, max_version;
    /* Per version, the response frames (correlation id 0): [0] no error, [1] rebalancing. */
    char *answer[MAX_VERSIONS][2];
    Py_ssize_t answer_len[MAX_VERSIONS][2];
    Py_ssize_t longest;
    char *out;
    Py_ssize_t out_cap;
} Walker;

/* The offset of ``type``'s slot ``name`` (a writable object slot), or -1 (error set). */
static Py_ssize_t slot_offset(PyObject *type, const char *name) {
    PyObject *descr = PyObject_GetAttrString(type, name);
    if (descr == NULL) return -1;
    Py_ssize_t offset = -1;
    if (Py_TYPE(descr) == &PyMemberDescr_Type) {
        PyMemberDef *def = ((PyMemberDescrObject *)descr)->d_member;
        if (def->type == T_OBJECT_EX && !(def->flags & READONLY)) offset = def->offset;
    }
    Py_DECREF(descr);
    if (offset < 0) PyErr_Format(PyExc_TypeError, "%s is not a slot", name);
    return offset;
}

static void Walker_dealloc(Walker *self) {
    Py_XDECREF(self->memo);
    Py_XDECREF(self->classic_type);
    Py_XDECREF(self->member_type);
    Py_XDECREF(self->armed_type);
    Py_XDECREF(self->client);
    if (self->cache != NULL) {
        for (int i = 0; i < CACHE_SLOTS; i++) Py_XDECREF(self->cache[i].heard);
        PyMem_Free(self->cache);
    }
    Py_XDECREF(self->stable);
    Py_XDECREF(self->completing);
    Py_XDECREF(self->preparing);
    for (int v = 0; v < MAX_VERSIONS; v++) {
        PyMem_Free(self->answer[v][0]);
        PyMem_Free(self->answer[v][1]);
    }
    PyMem_Free(self->out);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Walker(memo, (ClassicGroup, Member, Armed), (stable, completing, preparing),
 *        min_version, answers):
 * ``answers[i]`` is (no-error frame, rebalancing frame) of version min_version + i. */
static int Walker_init(Walker *self, PyObject *args, PyObject *kwds) {
    PyObject *memo, *classic_type, *member_type, *armed_type, *stable, *completing,
        *preparing, *answers;
    int min_version;
    (void)kwds;
    if (!PyArg_ParseTuple(args, "O!(O!O!O!)(OOO)iO!", &PyDict_Type, &memo, &PyType_Type,
                          &classic_type, &PyType_Type, &member_type, &PyType_Type,
                          &armed_type, &stable, &completing, &preparing, &min_version,
                          &PyTuple_Type, &answers))
        return -1;
    if ((self->g_state = slot_offset(classic_type, "state")) < 0
        || (self->g_static_members = slot_offset(classic_type, "static_members")) < 0
        || (self->g_members = slot_offset(classic_type, "members")) < 0
        || (self->g_generation_id = slot_offset(classic_type, "generation_id")) < 0
        || (self->m_session_timeout_ms = slot_offset(member_type, "session_timeout_ms")) < 0
        || (self->m_heartbeat_key = slot_offset(member_type, "heartbeat_key")) < 0
        || (self->m_last_heartbeat_ms = slot_offset(member_type, "last_heartbeat_ms")) < 0
        || (self->a_deadline_ms = slot_offset(armed_type, "deadline_ms")) < 0)
        return -1;
    if (self->cache == NULL) {
        self->cache = PyMem_Calloc(CACHE_SLOTS, sizeof(CacheSlot));
        if (self->cache == NULL) { PyErr_NoMemory(); return -1; }
    }
    Py_INCREF(member_type); Py_XSETREF(self->member_type, member_type);
    Py_INCREF(armed_type); Py_XSETREF(self->armed_type, armed_type);
    Py_ssize_t n = PyTuple_GET_SIZE(answers);
    if (min_version < 0 || n < 1 || min_version + n > MAX_VERSIONS) {
        PyErr_SetString(PyExc_ValueError, "versions out of range");
        return -1;
    }
    Py_INCREF(memo); Py_XSETREF(self->memo, memo);
    Py_INCREF(classic_type); Py_XSETREF(self->classic_type, classic_type);
    Py_INCREF(stable); Py_XSETREF(self->stable, stable);
    Py_INCREF(completing); Py_XSETREF(self->completing, completing);
    Py_INCREF(preparing); Py_XSETREF(self->preparing, preparing);
    self->min_version = min_version;
    self->max_version = min_version + (int)n - 1;
    self->longest = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *pair = PyTuple_GET_ITEM(answers, i);
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
            PyErr_SetString(PyExc_TypeError, "answers: pairs of bytes");
            return -1;
        }
        for (int e = 0; e < 2; e++) {
            PyObject *frame = PyTuple_GET_ITEM(pair, e);
            if (!PyBytes_Check(frame) || PyBytes_GET_SIZE(frame) < 8) {
                PyErr_SetString(PyExc_TypeError, "answers: response frames");
                return -1;
            }
            Py_ssize_t len = PyBytes_GET_SIZE(frame);
            char *copy = PyMem_Malloc(len);
            if (copy == NULL) { PyErr_NoMemory(); return -1; }
            memcpy(copy, PyBytes_AS_STRING(frame), len);
            int v = min_version + (int)i;
            PyMem_Free(self->answer[v][e]);
            self->answer[v][e] = copy;
            self->answer_len[v][e] = len;
            if (len > self->longest) self->longest = len;
        }
    }
    return 0;
}

static inline uint32_t be32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* A slot holding an int, as a C long; 0 and *ok cleared if it is not one. */
static inline long slot_long(PyObject *value, int *ok) {
    if (value == NULL || !PyLong_CheckExact(value)) { *ok = 0; return 0; }
    long v = PyLong_AsLong(value);
    if (v == -1 && PyErr_Occurred()) { PyErr_Clear(); *ok = 0; }
    return v;
}

/* Replace an object slot's value (a T_OBJECT_EX member's store, as PyMember_SetOne). */
static inline void slot_set(PyObject *obj, Py_ssize_t offset, PyObject *value) {
    PyObject *old = SLOT(obj, offset);
    Py_INCREF(value);
    SLOT(obj, offset) = value;
    Py_XDECREF(old);
}

/* Whether the member named by ``heard`` may be answered now, as membership.beat would
 * answer it (no error, or REBALANCE_IN_PROGRESS) with no timer to tell the driver of.
 * 1: yes, and the session was moved in place (``*rebalancing`` set); 0: no, nothing
 * changed (the Python path answers it). No Python code runs here: dict lookups by str,
 * slots read by offset, objects of exact types only; so borrowed references hold. */
static int beat(Walker *self, PyObject *heard, PyObject *groups, PyObject *armed_keys,
                long now, PyObject *now_obj, int *rebalancing) {
    PyObject *group_id = PyTuple_GET_ITEM(heard, 2);
    PyObject *generation = PyTuple_GET_ITEM(heard, 3);
    PyObject *member_id = PyTuple_GET_ITEM(heard, 4);
    PyObject *instance = PyTuple_GET_ITEM(heard, 5);
    if (!PyUnicode_CheckExact(group_id) || PyUnicode_GET_LENGTH(group_id) == 0) return 0;
    if (!PyUnicode_CheckExact(member_id)) return 0;
    PyObject *g = PyDict_GetItemWithError(groups, group_id);
    if (g == NULL || (PyObject *)Py_TYPE(g) != self->classic_type) return 0;
    PyObject *state = SLOT(g, self->g_state);
    if (state != self->stable && state != self->completing && state != self->preparing)
        return 0;  /* Empty, Dead: the Python path answers */
    if (instance != Py_None) {  /* ClassicGroup.validate_member */
        if (!PyUnicode_CheckExact(instance)) return 0;
        PyObject *statics = SLOT(g, self->g_static_members);
        if (statics == NULL || !PyDict_CheckExact(statics)) return 0;
        PyObject *owner = PyDict_GetItemWithError(statics, instance);
        if (owner == NULL || !PyUnicode_CheckExact(owner)) return 0;
        if (owner != member_id && PyUnicode_Compare(owner, member_id) != 0) return 0;
    }
    PyObject *members = SLOT(g, self->g_members);
    if (members == NULL || !PyDict_CheckExact(members)) return 0;
    PyObject *m = PyDict_GetItemWithError(members, member_id);
    if (m == NULL || (PyObject *)Py_TYPE(m) != self->member_type) return 0;
    int ok = 1;
    long group_generation = slot_long(SLOT(g, self->g_generation_id), &ok);
    long heard_generation = slot_long(generation, &ok);
    long session_ms = slot_long(SLOT(m, self->m_session_timeout_ms), &ok);
    if (!ok || group_generation != heard_generation) return 0;
    PyObject *key = SLOT(m, self->m_heartbeat_key);
    if (key == NULL || !PyUnicode_CheckExact(key)) return 0;
    PyObject *armed = PyDict_GetItemWithError(armed_keys, key);
    if (armed == NULL || (PyObject *)Py_TYPE(armed) != self->armed_type) return 0;  /* new */
    long deadline = now + session_ms;
    long before = slot_long(SLOT(armed, self->a_deadline_ms), &ok);
    if (!ok || deadline < before) return 0;  /* an earlier deadline: the driver is told */
    /* Answered: the session moves in place (Deadlines.move_heartbeat, a later deadline;
     * the same one, from another heartbeat within the millisecond, is left as it is). */
    if (deadline != before) {
        PyObject *deadline_obj = PyLong_FromLong(deadline);
        if (deadline_obj == NULL) { PyErr_Clear(); return 0; }
        slot_set(armed, self->a_deadline_ms, deadline_obj);
        Py_DECREF(deadline_obj);
    }
    slot_set(m, self->m_last_heartbeat_ms, now_obj);
    *rebalancing = state == self->preparing;
    return 1;
}

/* A hash of the frame's bytes, eight at a time (a byte at a time was most of the walk). */
static inline uint64_t hash_key(int version, const unsigned char *p, Py_ssize_t n) {
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ ((uint64_t)version << 32) ^ (uint64_t)n;
    Py_ssize_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdULL;
        h ^= h >> 32;
    }
    uint64_t last = 0;
    memcpy(&last, p + i, (size_t)(n - i));
    h = (h ^ last) * 0xc4ceb9fe1a85ec53ULL;
    return h ^ (h >> 29);
}

/* The decoded fields of a frame (borrowed), from the walker's cache or the lane's memo;
 * NULL if neither has them. */
static PyObject *heard_of(Walker *self, int version, const unsigned char *tail, Py_ssize_t n) {
    uint64_t h = hash_key(version, tail, n);
    CacheSlot *slot = &self->cache[h & (CACHE_SLOTS - 1)];
    if (slot->heard != NULL && slot->hash == h && slot->version == version && slot->len == n
        && memcmp(slot->key, tail, n) == 0)
        return slot->heard;
    PyObject *key = PyBytes_FromStringAndSize((const char *)tail, n);
    if (key == NULL) { PyErr_Clear(); return NULL; }
    PyObject *heard = PyDict_GetItemWithError(self->memo, key);
    Py_DECREF(key);
    if (heard == NULL) { PyErr_Clear(); return NULL; }
    if (!PyTuple_CheckExact(heard) || PyTuple_GET_SIZE(heard) != 6) return NULL;
    PyObject *v = PyTuple_GET_ITEM(heard, 0);
    if (!PyLong_CheckExact(v) || PyLong_AsLong(v) != version) { PyErr_Clear(); return NULL; }
    if (n <= CACHE_KEY_BYTES) {
        Py_INCREF(heard);
        Py_XSETREF(slot->heard, heard);
        slot->hash = h;
        slot->version = version;
        slot->len = n;
        memcpy(slot->key, tail, n);
    }
    return heard;
}

/* walk(data, groups, armed, now_ms, max_frame_bytes, limit)
 *   -> (bytes of data answered, the answers, frames answered)
 * The client id of the last frame answered is then ``client_id``, and the frames answered
 * by version and error ``counts()``. */
static PyObject *Walker_walk(Walker *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 6 || !PyDict_CheckExact(args[1]) || !PyDict_CheckExact(args[2])) {
        PyErr_SetString(PyExc_TypeError, "walk(data, groups, armed, now, max_frame, limit)");
        return NULL;
    }
    if (self->cache == NULL || self->memo == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Walker not initialised");
        return NULL;
    }
    PyObject *groups = args[1], *armed_keys = args[2];
    long now = PyLong_AsLong(args[3]);
    if (now == -1 && PyErr_Occurred()) return NULL;
    long long max_frame = PyLong_AsLongLong(args[4]);
    if (max_frame == -1 && PyErr_Occurred()) return NULL;
    Py_ssize_t limit = PyLong_AsSsize_t(args[5]);
    if (limit == -1 && PyErr_Occurred()) return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) return NULL;
    const unsigned char *data = view.buf;
    Py_ssize_t len = view.len, at = 0, answered = 0, o = 0;
    memset(self->counts, 0, sizeof self->counts);
    PyObject *now_obj = PyLong_FromLong(now);
    if (now_obj == NULL) { PyBuffer_Release(&view); return NULL; }
    while (answered < limit && len - at >= 4) {
        uint32_t size = be32(data + at);
        if (size > 0x7fffffffu || (long long)size > max_frame) break;  /* refused there */
        if ((Py_ssize_t)size > len - at - 4) break;                    /* incomplete */
        const unsigned char *frame = data + at + 4;
        if (size < 8 || (frame[0] << 8 | frame[1]) != HEARTBEAT_KEY) break;
        int version = frame[2] << 8 | frame[3];
        if (version < self->min_version || version > self->max_version) break;
        PyObject *heard = heard_of(self, version, frame + 8, (Py_ssize_t)size - 8);
        if (heard == NULL) break;  /* not decoded yet: the Python lane decodes it */
        int rebalancing = 0;
        if (!beat(self, heard, groups, armed_keys, now, now_obj, &rebalancing)) break;
        Py_ssize_t need = o + self->longest;
        if (need > self->out_cap) {
            Py_ssize_t cap = self->out_cap ? self->out_cap : 4096;
            while (cap < need) cap *= 2;
            char *grown = PyMem_Realloc(self->out, cap);
            if (grown == NULL) {
                PyBuffer_Release(&view);
                Py_DECREF(now_obj);
                return PyErr_NoMemory();
            }
            self->out = grown;
            self->out_cap = cap;
        }
        Py_ssize_t n = self->answer_len[version][rebalancing];
        memcpy(self->out + o, self->answer[version][rebalancing], n);
        memcpy(self->out + o + 4, frame + 4, 4);  /* the request's correlation id */
        o += n;
        PyObject *client = PyTuple_GET_ITEM(heard, 1);
        if (client != self->client) {
            Py_INCREF(client);
            Py_XSETREF(self->client, client);
        }
        self->counts[(version - self->min_version) * 2 + rebalancing]++;
        answered++;
        at += 4 + (Py_ssize_t)size;
    }
    PyBuffer_Release(&view);
    Py_DECREF(now_obj);
    PyObject *out = PyBytes_FromStringAndSize(self->out, o);
    if (out == NULL) return NULL;
    return Py_BuildValue("(nNn)", at, out, answered);
}

/* counts() -> the last walk's frames answered, per (version - min_version) * 2 +
 * rebalancing. */
static PyObject *Walker_counts(Walker *self, PyObject *Py_UNUSED(ignored)) {
    Py_ssize_t slots = (self->max_version - self->min_version + 1) * 2;
    PyObject *counted = PyTuple_New(slots);
    if (counted == NULL) return NULL;
    for (Py_ssize_t i = 0; i < slots; i++) {
        PyObject *c = PyLong_FromSsize_t(self->counts[i]);
        if (c == NULL) { Py_DECREF(counted); return NULL; }
        PyTuple_SET_ITEM(counted, i, c);
    }
    return counted;
}

static PyObject *Walker_client_id(Walker *self, void *Py_UNUSED(closure)) {
    return Py_NewRef(self->client != NULL ? self->client : Py_None);
}

static PyMethodDef Walker_methods[] = {
    {"walk", (PyCFunction)(void (*)(void))Walker_walk, METH_FASTCALL,
     "walk(data, groups, armed, now_ms, max_frame_bytes, limit) -> "
     "(consumed, answers, answered)"},
    {"counts", (PyCFunction)Walker_counts, METH_NOARGS,
     "The last walk's frames answered, per (version - min_version) * 2 + rebalancing."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Walker_getset[] = {
    {"client_id", (getter)Walker_client_id, NULL,
     "The client id of the last frame answered (None before any).", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject WalkerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "coordinator.fastlane._heartbeats.Walker",
    .tp_basicsize = sizeof(Walker),
    .tp_dealloc = (destructor)Walker_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Answers the Heartbeat frames at the start of a read (see batch.py).",
    .tp_methods = Walker_methods,
    .tp_getset = Walker_getset,
    .tp_init = (initproc)Walker_init,
    .tp_new = PyType_GenericNew,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_heartbeats", "The compiled heartbeat lane.", -1, NULL,
};

PyMODINIT_FUNC PyInit__heartbeats(void) {
    if (PyType_Ready(&WalkerType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    Py_INCREF(&WalkerType);
    if (PyModule_AddObject(m, "Walker", (PyObject *)&WalkerType) < 0) {
        Py_DECREF(&WalkerType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
