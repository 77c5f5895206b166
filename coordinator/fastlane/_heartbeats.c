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
#include <string.h>

#define HEARTBEAT_KEY 12
#define MAX_VERSIONS 16
#define REBALANCE_IN_PROGRESS 27

typedef struct {
    PyObject_HEAD
    PyObject *memo;          /* dict: frame[8:] -> (version, client, group, gen, member, instance) */
    PyObject *classic_type;  /* ClassicGroup */
    PyObject *stable, *completing, *preparing;  /* the states a heartbeat is answered in */
    int min_version, max_version;
    /* Per version, the response frames (correlation id 0): [0] no error, [1] rebalancing. */
    char *answer[MAX_VERSIONS][2];
    Py_ssize_t answer_len[MAX_VERSIONS][2];
    Py_ssize_t longest;
    char *out;
    Py_ssize_t out_cap;
} Walker;

/* Attribute names, interned once. */
static PyObject *s_state, *s_static_members, *s_members, *s_generation_id,
    *s_session_timeout_ms, *s_heartbeat_key, *s_deadline_ms, *s_last_heartbeat_ms;

static void Walker_dealloc(Walker *self) {
    Py_XDECREF(self->memo);
    Py_XDECREF(self->classic_type);
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

/* Walker(memo, classic_type, stable, completing, preparing, min_version, answers):
 * ``answers[i]`` is (no-error frame, rebalancing frame) of version min_version + i. */
static int Walker_init(Walker *self, PyObject *args, PyObject *kwds) {
    PyObject *memo, *classic_type, *stable, *completing, *preparing, *answers;
    int min_version;
    if (!PyArg_ParseTuple(args, "O!OOOOiO!", &PyDict_Type, &memo, &classic_type, &stable,
                          &completing, &preparing, &min_version, &PyTuple_Type, &answers))
        return -1;
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

/* Whether the member named by ``heard`` may be answered now, as membership.beat would
 * answer it (no error, or REBALANCE_IN_PROGRESS) without a timer to tell the driver of.
 * 1: yes, and the session was moved in place (``*rebalancing`` set); 0: no, nothing
 * changed; -1: a Python error (cleared by the caller: the Python path meets it too). */
static int beat(Walker *self, PyObject *heard, PyObject *groups, PyObject *armed_keys,
                long long now, PyObject *now_obj, int *rebalancing) {
    PyObject *group_id = PyTuple_GET_ITEM(heard, 2);
    PyObject *generation = PyTuple_GET_ITEM(heard, 3);
    PyObject *member_id = PyTuple_GET_ITEM(heard, 4);
    PyObject *instance = PyTuple_GET_ITEM(heard, 5);
    if (!PyUnicode_Check(group_id) || PyUnicode_GET_LENGTH(group_id) == 0) return 0;
    if (!PyUnicode_Check(member_id) || !PyLong_CheckExact(generation)) return 0;
    PyObject *g = PyDict_GetItemWithError(groups, group_id);  /* borrowed */
    if (g == NULL) return PyErr_Occurred() ? -1 : 0;
    if ((PyObject *)Py_TYPE(g) != self->classic_type) return 0;  /* consumer group, ... */
    int result = 0;
    PyObject *state = NULL, *members = NULL, *statics = NULL, *gen = NULL, *session = NULL,
             *key = NULL, *deadline_obj = NULL;
    Py_INCREF(g);
    state = PyObject_GetAttr(g, s_state);
    if (state == NULL) goto error;
    if (state != self->stable && state != self->completing && state != self->preparing)
        goto done;  /* Empty, Dead: the Python path answers */
    if (instance != Py_None) {  /* ClassicGroup.validate_member */
        statics = PyObject_GetAttr(g, s_static_members);
        if (statics == NULL) goto error;
        if (!PyDict_Check(statics)) goto done;
        PyObject *owner = PyDict_GetItemWithError(statics, instance);
        if (owner == NULL) { if (PyErr_Occurred()) goto error; goto done; }
        int same = PyObject_RichCompareBool(owner, member_id, Py_EQ);
        if (same < 0) goto error;
        if (!same) goto done;
    }
    members = PyObject_GetAttr(g, s_members);
    if (members == NULL) goto error;
    if (!PyDict_Check(members)) goto done;
    PyObject *m = PyDict_GetItemWithError(members, member_id);  /* borrowed: members held */
    if (m == NULL) { if (PyErr_Occurred()) goto error; goto done; }
    gen = PyObject_GetAttr(g, s_generation_id);
    if (gen == NULL) goto error;
    if (!PyLong_CheckExact(gen)) goto done;
    int same_gen = PyObject_RichCompareBool(gen, generation, Py_EQ);
    if (same_gen < 0) goto error;
    if (!same_gen) goto done;
    session = PyObject_GetAttr(m, s_session_timeout_ms);
    if (session == NULL) goto error;
    long long session_ms = PyLong_AsLongLong(session);
    if (session_ms == -1 && PyErr_Occurred()) goto error;
    long long deadline = now + session_ms;
    key = PyObject_GetAttr(m, s_heartbeat_key);
    if (key == NULL) goto error;
    PyObject *armed = PyDict_GetItemWithError(armed_keys, key);  /* borrowed */
    if (armed == NULL) { if (PyErr_Occurred()) goto error; goto done; }  /* a new timer */
    Py_INCREF(armed);
    PyObject *before_obj = PyObject_GetAttr(armed, s_deadline_ms);
    if (before_obj == NULL) { Py_DECREF(armed); goto error; }
    long long before = PyLong_AsLongLong(before_obj);
    Py_DECREF(before_obj);
    if (before == -1 && PyErr_Occurred()) { Py_DECREF(armed); goto error; }
    if (deadline < before) { Py_DECREF(armed); goto done; }  /* the driver must be told */
    /* Answered: the session moves in place (Deadlines.move_heartbeat, later deadline). */
    deadline_obj = PyLong_FromLongLong(deadline);
    if (deadline_obj == NULL || PyObject_SetAttr(m, s_last_heartbeat_ms, now_obj) < 0
        || PyObject_SetAttr(armed, s_deadline_ms, deadline_obj) < 0) {
        Py_DECREF(armed);
        goto error;
    }
    Py_DECREF(armed);
    *rebalancing = state == self->preparing;
    result = 1;
    goto done;
error:
    result = -1;
done:
    Py_XDECREF(deadline_obj);
    Py_XDECREF(key);
    Py_XDECREF(session);
    Py_XDECREF(gen);
    Py_XDECREF(members);
    Py_XDECREF(statics);
    Py_XDECREF(state);
    Py_DECREF(g);
    return result;
}

/* walk(data, groups, armed, now_ms, max_frame_bytes, limit)
 *   -> (consumed, answers, memo hits, client id of the last frame answered, counts)
 * ``counts``: per (version - min_version) * 2 + rebalancing, the frames answered; None
 * when none was. */
static PyObject *Walker_walk(Walker *self, PyObject *args) {
    Py_buffer view;
    PyObject *groups, *armed_keys;
    long long now, max_frame;
    Py_ssize_t limit;
    if (!PyArg_ParseTuple(args, "y*O!O!LLn", &view, &PyDict_Type, &groups, &PyDict_Type,
                          &armed_keys, &now, &max_frame, &limit))
        return NULL;
    const unsigned char *data = view.buf;
    Py_ssize_t len = view.len, at = 0, answered = 0, o = 0;
    Py_ssize_t counts[MAX_VERSIONS * 2];
    memset(counts, 0, sizeof counts);
    PyObject *client = Py_None;  /* borrowed from a memo entry, held once chosen */
    PyObject *now_obj = PyLong_FromLongLong(now);
    if (now_obj == NULL) { PyBuffer_Release(&view); return NULL; }
    Py_INCREF(client);
    while (answered < limit && len - at >= 4) {
        uint32_t size = be32(data + at);
        if (size > 0x7fffffffu || (long long)size > max_frame) break;  /* refused there */
        if ((Py_ssize_t)size > len - at - 4) break;                    /* incomplete */
        const unsigned char *frame = data + at + 4;
        if (size < 8 || (frame[0] << 8 | frame[1]) != HEARTBEAT_KEY) break;
        int version = frame[2] << 8 | frame[3];
        if (version < self->min_version || version > self->max_version) break;
        PyObject *tail = PyBytes_FromStringAndSize((const char *)frame + 8, size - 8);
        if (tail == NULL) goto fail;
        PyObject *heard = PyDict_GetItemWithError(self->memo, tail);  /* borrowed */
        Py_DECREF(tail);
        if (heard == NULL) { if (PyErr_Occurred()) PyErr_Clear(); break; }
        if (!PyTuple_CheckExact(heard) || PyTuple_GET_SIZE(heard) != 6) break;
        Py_INCREF(heard);
        long heard_version = PyLong_AsLong(PyTuple_GET_ITEM(heard, 0));
        if (heard_version != version) {
            PyErr_Clear();
            Py_DECREF(heard);
            break;
        }
        int rebalancing = 0;
        int ok = beat(self, heard, groups, armed_keys, now, now_obj, &rebalancing);
        if (ok <= 0) {
            if (ok < 0) PyErr_Clear();  /* the Python path meets it and reports it */
            Py_DECREF(heard);
            break;
        }
        Py_ssize_t need = o + self->longest;
        if (need > self->out_cap) {
            Py_ssize_t cap = self->out_cap ? self->out_cap : 4096;
            while (cap < need) cap *= 2;
            char *grown = PyMem_Realloc(self->out, cap);
            if (grown == NULL) { Py_DECREF(heard); PyErr_NoMemory(); goto fail; }
            self->out = grown;
            self->out_cap = cap;
        }
        Py_ssize_t n = self->answer_len[version][rebalancing];
        memcpy(self->out + o, self->answer[version][rebalancing], n);
        memcpy(self->out + o + 4, frame + 4, 4);  /* the request's correlation id */
        o += n;
        Py_SETREF(client, Py_NewRef(PyTuple_GET_ITEM(heard, 1)));
        Py_DECREF(heard);
        counts[(version - self->min_version) * 2 + rebalancing]++;
        answered++;
        at += 4 + (Py_ssize_t)size;
    }
    PyBuffer_Release(&view);
    Py_DECREF(now_obj);
    PyObject *counted;
    if (answered) {
        Py_ssize_t slots = (self->max_version - self->min_version + 1) * 2;
        counted = PyTuple_New(slots);
        if (counted == NULL) { Py_DECREF(client); return NULL; }
        for (Py_ssize_t i = 0; i < slots; i++) {
            PyObject *c = PyLong_FromSsize_t(counts[i]);
            if (c == NULL) { Py_DECREF(counted); Py_DECREF(client); return NULL; }
            PyTuple_SET_ITEM(counted, i, c);
        }
    } else {
        counted = Py_NewRef(Py_None);
    }
    PyObject *out = PyBytes_FromStringAndSize(self->out, o);
    if (out == NULL) { Py_DECREF(counted); Py_DECREF(client); return NULL; }
    return Py_BuildValue("(nNnNN)", at, out, answered, client, counted);
fail:
    PyBuffer_Release(&view);
    Py_DECREF(now_obj);
    Py_DECREF(client);
    return NULL;
}

static PyMethodDef Walker_methods[] = {
    {"walk", (PyCFunction)Walker_walk, METH_VARARGS,
     "walk(data, groups, armed, now_ms, max_frame_bytes, limit) -> "
     "(consumed, answers, answered, client_id, counts)"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject WalkerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "coordinator.fastlane._heartbeats.Walker",
    .tp_basicsize = sizeof(Walker),
    .tp_dealloc = (destructor)Walker_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Answers the Heartbeat frames at the start of a read (see batch.py).",
    .tp_methods = Walker_methods,
    .tp_init = (initproc)Walker_init,
    .tp_new = PyType_GenericNew,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_heartbeats", "The compiled heartbeat lane.", -1, NULL,
};

#define INTERN(var, text) \
    if ((var = PyUnicode_InternFromString(text)) == NULL) return NULL;

PyMODINIT_FUNC PyInit__heartbeats(void) {
    INTERN(s_state, "state");
    INTERN(s_static_members, "static_members");
    INTERN(s_members, "members");
    INTERN(s_generation_id, "generation_id");
    INTERN(s_session_timeout_ms, "session_timeout_ms");
    INTERN(s_heartbeat_key, "heartbeat_key");
    INTERN(s_deadline_ms, "deadline_ms");
    INTERN(s_last_heartbeat_ms, "last_heartbeat_ms");
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
