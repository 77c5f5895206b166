/* The compiled heartbeat lane: every complete Heartbeat frame, and every steady
 * ConsumerGroupHeartbeat frame (KIP-848), at the start of a read, answered in one pass,
 * with no Python call per frame.
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
 *
 * A ConsumerGroupHeartbeat frame is answered only when group/consumer/steady.py's ``beat``
 * would answer it with no timer to tell the driver of, by the same tests on the same
 * objects (consumer_beat below), from the consumer lane's memo (handlers/
 * consumer_heartbeat_lane.py); its answer is the consumer lane's template (the general
 * path's encoder's bytes) with the correlation id copied in.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define HEARTBEAT_KEY 12
#define CONSUMER_HEARTBEAT_KEY 68
#define MAX_VERSIONS 16
#define REBALANCE_IN_PROGRESS 27
/* The walker's own cache of memo entries, keyed by version and frame bytes after the
 * correlation id, so that a repeated frame costs neither a bytes object nor siphash. A
 * frame's decoded fields are a function of those bytes alone, so an entry never goes
 * stale; it is replaced when another frame hashes to its slot. */
#define CACHE_SLOTS 65536
#define CACHE_KEY_BYTES 256
/* Slots hold their frame's bytes in a buffer of their own, made on first use: the slots
 * are calloc'd, so a daemon pays memory only for the ones its members' frames use (208
 * bytes each and the frame's). At 4,096 slots 10,000 members' frames mostly missed, and a
 * steady KIP-848 heartbeat's miss costs two Python calls: bench.steady_members measured
 * 13.0 µs per such heartbeat then, 8.6 µs at 65,536 slots. */

typedef struct {
    uint64_t hash;
    int version;  /* a consumer frame's: its version + CONSUMER_KIND */
    Py_ssize_t len;
    PyObject *heard; /* NULL: empty */
    /* A consumer frame's session timer key, and its answer (correlation id 0) made for
     * the heartbeat interval ``interval`` (NULL: not made yet). */
    PyObject *session;
    PyObject *reply;
    long interval;
    unsigned char *key;  /* PyMem; key_cap bytes */
    Py_ssize_t key_cap;
    /* A Heartbeat frame's group, member and session timer as beat() last found them,
     * with the version tags of the dicts they were found in then (found: 0 none). Kept
     * while those tags stand (see remembered); borrowed, for the dicts hold them. The
     * member's session key they were found by is held, so that another key made at the
     * same address cannot pass for it. */
    int found;
    uint64_t groups_tag, members_tag, statics_tag, armed_tag;
    PyObject *g, *m, *armed, *session_key;
    /* A consumer frame's group-wide lookups, kept by the same rule (group_known: 0
     * none): its ledger and its own configs (borrowed; NULL: none), and whether its
     * subscribed topics' partition counts are those of its subscription (see
     * partitions_unchanged), with the tags of the dicts they were read from. */
    int group_known, partitions_same;
    uint64_t ledgers_tag, configs_tag, topics_tag, subscribers_tag, known_tag;
    PyObject *ledger, *configs;
} CacheSlot;

/* Added to a consumer frame's version in the cache, so that the two APIs' frames of the
 * same bytes never share an entry. */
#define CONSUMER_KIND 0x10000

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
    /* The consumer lane (NULL memo: not set up, consumer frames stop the walk). */
    PyObject *c_memo;  /* dict: frame[8:] -> (version, client, group, member, epoch, instance) */
    PyObject *c_group_type, *c_member_type, *c_ledger_type, *c_topic_type, *c_deque_type;
    PyObject *c_stable;      /* MemberState.STABLE */
    PyObject *c_ledgers;     /* shard.ledgers */
    PyObject *c_configs;     /* shard.group_configs */
    PyObject *c_topics;      /* the catalog's topics by name */
    PyObject *c_make_key;    /* (group, member) -> session timer key */
    PyObject *c_make_reply;  /* (version, member, epoch, interval) -> response frame */
    long c_session_ms, c_interval_ms, c_regex_refresh_ms;
    int c_min_version, c_max_version;
    Py_ssize_t cg_group_epoch, cg_assignment_epoch, cg_members, cg_static_members,
        cg_subscription_metadata, cg_dirty, cg_dirty_members, cg_removed_members,
        cg_topic_subscribers, cg_resolved, cg_resolved_with_topics, cg_resolved_at_ms;
    Py_ssize_t cm_member_id, cm_client_id, cm_client_host, cm_state, cm_member_epoch,
        cm_classic;
    Py_ssize_t l_in_flight, t_partitions;
    Py_ssize_t c_counts[MAX_VERSIONS];
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
        for (int i = 0; i < CACHE_SLOTS; i++) {
            Py_XDECREF(self->cache[i].heard);
            Py_XDECREF(self->cache[i].session);
            Py_XDECREF(self->cache[i].reply);
            Py_XDECREF(self->cache[i].session_key);
            PyMem_Free(self->cache[i].key);
        }
        PyMem_Free(self->cache);
    }
    Py_XDECREF(self->c_memo);
    Py_XDECREF(self->c_group_type);
    Py_XDECREF(self->c_member_type);
    Py_XDECREF(self->c_ledger_type);
    Py_XDECREF(self->c_topic_type);
    Py_XDECREF(self->c_deque_type);
    Py_XDECREF(self->c_stable);
    Py_XDECREF(self->c_ledgers);
    Py_XDECREF(self->c_configs);
    Py_XDECREF(self->c_topics);
    Py_XDECREF(self->c_make_key);
    Py_XDECREF(self->c_make_reply);
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

/* Dict version tags (CPython 3.11 to 3.13; 3.14 has none): every change to a dict gives
 * it a tag no dict had before, so a dict showing a tag seen earlier holds the same items
 * as then, and a lookup in it finds what it found then. Without them every frame is
 * looked up. */
#if PY_VERSION_HEX < 0x030E0000
#define HAVE_DICT_TAGS 1
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
static inline uint64_t dict_tag(PyObject *d) { return ((PyDictObject *)d)->ma_version_tag; }
#pragma GCC diagnostic pop
#else
#define HAVE_DICT_TAGS 0
#endif

/* Deadlines.move_heartbeat, where the driver need not be told: the session timer
 * ``armed`` moves in place to ``deadline`` (the same one, from another heartbeat within
 * the millisecond, is left as it is). 0: nothing moved, the Python path answers (an
 * earlier deadline, which the driver must be told of; a timer not armed at all is not
 * found by the lookups, and the Python path arms it). */
static int move_armed(Walker *self, PyObject *armed, long deadline) {
    int ok = 1;
    long before = slot_long(SLOT(armed, self->a_deadline_ms), &ok);
    if (!ok || deadline < before) return 0;
    if (deadline != before) {
        PyObject *deadline_obj = PyLong_FromLong(deadline);
        if (deadline_obj == NULL) { PyErr_Clear(); return 0; }
        slot_set(armed, self->a_deadline_ms, deadline_obj);
        Py_DECREF(deadline_obj);
    }
    return 1;
}

/* What a Heartbeat frame names, found. */
typedef struct {
    PyObject *g, *m, *armed;
} Found;

/* ``found``: g, m and m's session timer ``key``, looked up; 0: no such timer (the Python
 * path arms it). */
static int with_timer(Walker *self, PyObject *g, PyObject *m, PyObject *armed_keys,
                      PyObject *key, Found *found) {
    PyObject *armed = PyDict_GetItemWithError(armed_keys, key);
    if (armed == NULL || (PyObject *)Py_TYPE(armed) != self->armed_type) {
        PyErr_Clear();
        return 0;
    }
    found->g = g;
    found->m = m;
    found->armed = armed;
    return 1;
}

/* The group, member and session timer that ``heard`` names, looked up as membership.beat
 * and ClassicGroup.validate_member look them up; 0: not all there, or not of the exact
 * types (the Python path answers). No Python code runs here: dict lookups by str, slots
 * read by offset, objects of exact types only; so borrowed references hold. */
static int look_up(Walker *self, PyObject *heard, PyObject *groups, PyObject *armed_keys,
                   Found *found) {
    PyObject *group_id = PyTuple_GET_ITEM(heard, 2);
    PyObject *member_id = PyTuple_GET_ITEM(heard, 4);
    PyObject *instance = PyTuple_GET_ITEM(heard, 5);
    if (!PyUnicode_CheckExact(group_id) || PyUnicode_GET_LENGTH(group_id) == 0) return 0;
    if (!PyUnicode_CheckExact(member_id)) return 0;
    PyObject *g = PyDict_GetItemWithError(groups, group_id);
    if (g == NULL || (PyObject *)Py_TYPE(g) != self->classic_type) goto absent;
    if (instance != Py_None) {  /* ClassicGroup.validate_member */
        if (!PyUnicode_CheckExact(instance)) return 0;
        PyObject *statics = SLOT(g, self->g_static_members);
        if (statics == NULL || !PyDict_CheckExact(statics)) return 0;
        PyObject *owner = PyDict_GetItemWithError(statics, instance);
        if (owner == NULL || !PyUnicode_CheckExact(owner)) goto absent;
        if (owner != member_id && PyUnicode_Compare(owner, member_id) != 0) return 0;
    }
    PyObject *members = SLOT(g, self->g_members);
    if (members == NULL || !PyDict_CheckExact(members)) return 0;
    PyObject *m = PyDict_GetItemWithError(members, member_id);
    if (m == NULL || (PyObject *)Py_TYPE(m) != self->member_type) goto absent;
    PyObject *key = SLOT(m, self->m_heartbeat_key);
    if (key == NULL || !PyUnicode_CheckExact(key)) return 0;
    return with_timer(self, g, m, armed_keys, key, found);
absent:
    PyErr_Clear();
    return 0;
}

/* Whether every dict ``slot``'s lookups were made in still shows the tag it showed then
 * (the group's members and static members read by these offsets): then the lookups
 * would find what they found. */
static int tags_stand(const CacheSlot *slot, PyObject *groups, PyObject *armed_keys,
                      Py_ssize_t members_at, Py_ssize_t statics_at) {
#if HAVE_DICT_TAGS
    if (!slot->found || dict_tag(groups) != slot->groups_tag
        || dict_tag(armed_keys) != slot->armed_tag)
        return 0;
    /* g is alive (groups, unchanged, holds it); its dicts may have been replaced or
     * changed since, which their tags tell. */
    PyObject *members = SLOT(slot->g, members_at);
    if (members == NULL || !PyDict_CheckExact(members) || dict_tag(members) != slot->members_tag)
        return 0;
    if (PyTuple_GET_ITEM(slot->heard, 5) != Py_None) {
        PyObject *statics = SLOT(slot->g, statics_at);
        if (statics == NULL || !PyDict_CheckExact(statics)
            || dict_tag(statics) != slot->statics_tag)
            return 0;
    }
    return 1;
#else
    return 0;
#endif
}

/* ``slot`` keeps what its lookups found, and the tags of the dicts they were made in. */
static void keep_found(CacheSlot *slot, PyObject *groups, PyObject *armed_keys,
                       Py_ssize_t members_at, Py_ssize_t statics_at, const Found *found) {
#if HAVE_DICT_TAGS
    PyObject *statics = SLOT(found->g, statics_at);
    slot->groups_tag = dict_tag(groups);
    slot->armed_tag = dict_tag(armed_keys);
    slot->members_tag = dict_tag(SLOT(found->g, members_at));
    slot->statics_tag = statics != NULL && PyDict_CheckExact(statics) ? dict_tag(statics) : 0;
    slot->g = found->g;
    slot->m = found->m;
    slot->armed = found->armed;
    slot->found = 1;
#endif
}

/* What ``slot`` keeps of its lookups (keep_found), into ``found``. */
static inline void kept(const CacheSlot *slot, Found *found) {
    found->g = slot->g;
    found->m = slot->m;
    found->armed = slot->armed;
}

/* What ``slot``'s Heartbeat frame named when beat() last found it, if the tags stand
 * and the member still has the session key it was found by: what look_up would find. */
static int remembered(Walker *self, CacheSlot *slot, PyObject *groups, PyObject *armed_keys,
                      Found *found) {
    if (!tags_stand(slot, groups, armed_keys, self->g_members, self->g_static_members))
        return 0;
    if (SLOT(slot->m, self->m_heartbeat_key) != slot->session_key) return 0;
    kept(slot, found);
    return 1;
}

/* ``slot`` remembers what look_up found for its Heartbeat frame. */
static void remember(Walker *self, CacheSlot *slot, PyObject *groups, PyObject *armed_keys,
                     const Found *found) {
    keep_found(slot, groups, armed_keys, self->g_members, self->g_static_members, found);
    Py_XSETREF(slot->session_key, Py_NewRef(SLOT(found->m, self->m_heartbeat_key)));
}

/* Whether the member named by ``heard`` may be answered now, as membership.beat would
 * answer it (no error, or REBALANCE_IN_PROGRESS) with no timer to tell the driver of.
 * 1: yes, and the session was moved in place (``*rebalancing`` set); 0: no, nothing
 * changed (the Python path answers it). ``slot``: the walker's cache slot holding the
 * frame, or NULL (then every frame is looked up). */
static int beat(Walker *self, CacheSlot *slot, PyObject *heard, PyObject *groups,
                PyObject *armed_keys, long now, PyObject *now_obj, int *rebalancing) {
    Found f;
    if (slot == NULL || !remembered(self, slot, groups, armed_keys, &f)) {
        if (!look_up(self, heard, groups, armed_keys, &f)) return 0;
        if (slot != NULL) remember(self, slot, groups, armed_keys, &f);
    }
    PyObject *state = SLOT(f.g, self->g_state);
    if (state != self->stable && state != self->completing && state != self->preparing)
        return 0;  /* Empty, Dead: the Python path answers */
    int ok = 1;
    long group_generation = slot_long(SLOT(f.g, self->g_generation_id), &ok);
    long heard_generation = slot_long(PyTuple_GET_ITEM(heard, 3), &ok);
    long session_ms = slot_long(SLOT(f.m, self->m_session_timeout_ms), &ok);
    if (!ok || group_generation != heard_generation) return 0;
    if (!move_armed(self, f.armed, now + session_ms)) return 0;
    slot_set(f.m, self->m_last_heartbeat_ms, now_obj);
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

/* Whether ``slot`` holds the frame of this kind (version, or version + CONSUMER_KIND) and
 * these bytes after the correlation id. */
static inline int slot_holds(const CacheSlot *slot, uint64_t h, int kind,
                             const unsigned char *tail, Py_ssize_t n) {
    return slot->heard != NULL && slot->hash == h && slot->version == kind && slot->len == n
           && memcmp(slot->key, tail, n) == 0;
}

/* The frame's decoded fields from the lane's memo (borrowed; NULL if absent), looked up
 * by a bytes object of the frame's bytes after the correlation id. */
static PyObject *memo_get(PyObject *memo, const unsigned char *tail, Py_ssize_t n) {
    PyObject *key = PyBytes_FromStringAndSize((const char *)tail, n);
    if (key == NULL) { PyErr_Clear(); return NULL; }
    PyObject *heard = PyDict_GetItemWithError(memo, key);
    Py_DECREF(key);
    if (heard == NULL) PyErr_Clear();
    return heard;
}

/* ``slot`` now holds ``heard`` (a new reference taken) for this frame, nothing made from
 * its former frame kept; 0 if there was no memory for its bytes (the slot is then empty). */
static int slot_fill(CacheSlot *slot, PyObject *heard, uint64_t h, int kind,
                     const unsigned char *tail, Py_ssize_t n) {
    if (slot->key_cap < n) {
        Py_ssize_t cap = n < 128 ? 128 : CACHE_KEY_BYTES;
        unsigned char *key = PyMem_Realloc(slot->key, cap);
        if (key == NULL) {
            Py_CLEAR(slot->heard);
            Py_CLEAR(slot->session);
            Py_CLEAR(slot->reply);
            return 0;
        }
        slot->key = key;
        slot->key_cap = cap;
    }
    Py_INCREF(heard);
    Py_XSETREF(slot->heard, heard);
    Py_CLEAR(slot->session);
    Py_CLEAR(slot->reply);
    slot->found = 0;
    slot->group_known = 0;
    Py_CLEAR(slot->session_key);
    slot->hash = h;
    slot->version = kind;
    slot->len = n;
    memcpy(slot->key, tail, n);
    return 1;
}

/* The decoded fields of a frame (borrowed), from the walker's cache or the lane's memo;
 * NULL if neither has them. ``*held``: the cache slot holding them, or NULL. */
static PyObject *heard_of(Walker *self, int version, const unsigned char *tail, Py_ssize_t n,
                          CacheSlot **held) {
    uint64_t h = hash_key(version, tail, n);
    CacheSlot *slot = &self->cache[h & (CACHE_SLOTS - 1)];
    *held = NULL;
    if (slot_holds(slot, h, version, tail, n)) {
        *held = slot;
        return slot->heard;
    }
    PyObject *heard = memo_get(self->memo, tail, n);
    if (heard == NULL) return NULL;
    if (!PyTuple_CheckExact(heard) || PyTuple_GET_SIZE(heard) != 6) return NULL;
    PyObject *v = PyTuple_GET_ITEM(heard, 0);
    if (!PyLong_CheckExact(v) || PyLong_AsLong(v) != version) { PyErr_Clear(); return NULL; }
    if (n <= CACHE_KEY_BYTES && slot_fill(slot, heard, h, version, tail, n)) *held = slot;
    return heard;
}

/* Walker.consumer(memo, (ConsumerGroup, ConsumerMember, Ledger, Topic, deque), stable,
 *                 (min_version, max_version), (ledgers, group_configs, topics),
 *                 (session_timeout_ms, heartbeat_interval_ms, regex_refresh_interval_ms),
 *                 make_key, make_reply):
 * sets up the consumer lane's frames (see consumer_beat); the tables are the shard's own
 * dicts (never replaced), the numbers the daemon's consumer group config (frozen). */
static PyObject *Walker_consumer(Walker *self, PyObject *args) {
    PyObject *memo, *group_type, *member_type, *ledger_type, *topic_type, *deque_type,
        *stable, *ledgers, *configs, *topics, *make_key, *make_reply;
    int min_version, max_version;
    long session_ms, interval_ms, refresh_ms;
    if (!PyArg_ParseTuple(args, "O!(O!O!O!O!O!)O(ii)(O!O!O!)(lll)OO", &PyDict_Type, &memo,
                          &PyType_Type, &group_type, &PyType_Type, &member_type, &PyType_Type,
                          &ledger_type, &PyType_Type, &topic_type, &PyType_Type, &deque_type,
                          &stable, &min_version, &max_version, &PyDict_Type, &ledgers,
                          &PyDict_Type, &configs, &PyDict_Type, &topics, &session_ms,
                          &interval_ms, &refresh_ms, &make_key, &make_reply))
        return NULL;
    if (min_version < 0 || max_version < min_version || max_version >= MAX_VERSIONS) {
        PyErr_SetString(PyExc_ValueError, "versions out of range");
        return NULL;
    }
    if (!PyCallable_Check(make_key) || !PyCallable_Check(make_reply)) {
        PyErr_SetString(PyExc_TypeError, "make_key, make_reply: callables");
        return NULL;
    }
    if ((self->cg_group_epoch = slot_offset(group_type, "group_epoch")) < 0
        || (self->cg_assignment_epoch = slot_offset(group_type, "assignment_epoch")) < 0
        || (self->cg_members = slot_offset(group_type, "members")) < 0
        || (self->cg_static_members = slot_offset(group_type, "static_members")) < 0
        || (self->cg_subscription_metadata = slot_offset(group_type, "subscription_metadata")) < 0
        || (self->cg_dirty = slot_offset(group_type, "dirty")) < 0
        || (self->cg_dirty_members = slot_offset(group_type, "dirty_members")) < 0
        || (self->cg_removed_members = slot_offset(group_type, "removed_members")) < 0
        || (self->cg_topic_subscribers = slot_offset(group_type, "topic_subscribers")) < 0
        || (self->cg_resolved = slot_offset(group_type, "resolved")) < 0
        || (self->cg_resolved_with_topics = slot_offset(group_type, "resolved_with_topics")) < 0
        || (self->cg_resolved_at_ms = slot_offset(group_type, "resolved_at_ms")) < 0
        || (self->cm_member_id = slot_offset(member_type, "member_id")) < 0
        || (self->cm_client_id = slot_offset(member_type, "client_id")) < 0
        || (self->cm_client_host = slot_offset(member_type, "client_host")) < 0
        || (self->cm_state = slot_offset(member_type, "state")) < 0
        || (self->cm_member_epoch = slot_offset(member_type, "member_epoch")) < 0
        || (self->cm_classic = slot_offset(member_type, "classic")) < 0
        || (self->l_in_flight = slot_offset(ledger_type, "in_flight")) < 0
        || (self->t_partitions = slot_offset(topic_type, "partitions")) < 0)
        return NULL;
    Py_INCREF(memo); Py_XSETREF(self->c_memo, memo);
    Py_INCREF(group_type); Py_XSETREF(self->c_group_type, group_type);
    Py_INCREF(member_type); Py_XSETREF(self->c_member_type, member_type);
    Py_INCREF(ledger_type); Py_XSETREF(self->c_ledger_type, ledger_type);
    Py_INCREF(topic_type); Py_XSETREF(self->c_topic_type, topic_type);
    Py_INCREF(deque_type); Py_XSETREF(self->c_deque_type, deque_type);
    Py_INCREF(stable); Py_XSETREF(self->c_stable, stable);
    Py_INCREF(ledgers); Py_XSETREF(self->c_ledgers, ledgers);
    Py_INCREF(configs); Py_XSETREF(self->c_configs, configs);
    Py_INCREF(topics); Py_XSETREF(self->c_topics, topics);
    Py_INCREF(make_key); Py_XSETREF(self->c_make_key, make_key);
    Py_INCREF(make_reply); Py_XSETREF(self->c_make_reply, make_reply);
    self->c_min_version = min_version;
    self->c_max_version = max_version;
    self->c_session_ms = session_ms;
    self->c_interval_ms = interval_ms;
    self->c_regex_refresh_ms = refresh_ms;
    Py_RETURN_NONE;
}

/* A consumer frame's cache entry, with its session key and its answer made, or NULL (the
 * Python lane takes the frame: not in its memo, not a steady heartbeat, or too long to
 * keep here). The entry is filled from the memo and by the two Python calls, before any
 * state is read for the frame. */
static CacheSlot *consumer_slot(Walker *self, int version, const unsigned char *tail,
                                Py_ssize_t n) {
    int kind = version + CONSUMER_KIND;
    uint64_t h = hash_key(kind, tail, n);
    CacheSlot *slot = &self->cache[h & (CACHE_SLOTS - 1)];
    if (!slot_holds(slot, h, kind, tail, n)) {
        if (n > CACHE_KEY_BYTES) return NULL;
        PyObject *heard = memo_get(self->c_memo, tail, n);
        if (heard == NULL) return NULL;
        /* (version, client id, group id, member id, epoch, instance id); None: not steady */
        if (!PyTuple_CheckExact(heard) || PyTuple_GET_SIZE(heard) != 6) return NULL;
        PyObject *v = PyTuple_GET_ITEM(heard, 0);
        if (!PyLong_CheckExact(v) || PyLong_AsLong(v) != version) { PyErr_Clear(); return NULL; }
        if (!PyUnicode_CheckExact(PyTuple_GET_ITEM(heard, 1))
            || !PyUnicode_CheckExact(PyTuple_GET_ITEM(heard, 2))
            || !PyUnicode_CheckExact(PyTuple_GET_ITEM(heard, 3))
            || !PyLong_CheckExact(PyTuple_GET_ITEM(heard, 4)))
            return NULL;
        PyObject *instance = PyTuple_GET_ITEM(heard, 5);
        if (instance != Py_None && !PyUnicode_CheckExact(instance)) return NULL;
        Py_INCREF(heard);  /* held across the call */
        PyObject *session = PyObject_CallFunctionObjArgs(
            self->c_make_key, PyTuple_GET_ITEM(heard, 2), PyTuple_GET_ITEM(heard, 3), NULL);
        if (session == NULL || !PyUnicode_CheckExact(session)) {
            PyErr_Clear();
            Py_XDECREF(session);
            Py_DECREF(heard);
            return NULL;
        }
        int filled = slot_fill(slot, heard, h, kind, tail, n);
        Py_DECREF(heard);  /* slot_fill took its own */
        if (!filled) {
            Py_DECREF(session);
            return NULL;
        }
        Py_XSETREF(slot->session, session);
    }
    if (slot->reply == NULL || slot->interval != self->c_interval_ms) {
        PyObject *heard = slot->heard;
        Py_INCREF(heard);
        PyObject *reply = PyObject_CallFunction(self->c_make_reply, "iOOl", version,
                                                PyTuple_GET_ITEM(heard, 3),
                                                PyTuple_GET_ITEM(heard, 4), self->c_interval_ms);
        Py_DECREF(heard);
        if (reply == NULL) { PyErr_Clear(); return NULL; }
        if (!PyBytes_CheckExact(reply) || PyBytes_GET_SIZE(reply) < 8) {
            Py_DECREF(reply);
            return NULL;
        }
        /* The call may have run any Python: the entry must still be this frame's. */
        if (slot->heard != heard || slot->version != kind) { Py_DECREF(reply); return NULL; }
        Py_XSETREF(slot->reply, reply);
        slot->interval = self->c_interval_ms;
    }
    return slot;
}

/* Whether a string is blank to Kafka (Java's trim() leaves nothing: every character is
 * at most U+0020), as heartbeat.py's _blank. */
static int java_blank(PyObject *s) {
    Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    int kind = PyUnicode_KIND(s);
    const void *data = PyUnicode_DATA(s);
    for (Py_ssize_t i = 0; i < n; i++)
        if (PyUnicode_READ(kind, data, i) > 32) return 0;
    return 1;
}

/* A dict slot's value (exact dict), or NULL. */
static inline PyObject *slot_dict(PyObject *obj, Py_ssize_t offset) {
    PyObject *d = SLOT(obj, offset);
    return d != NULL && PyDict_CheckExact(d) ? d : NULL;
}

/* Whether two str objects are equal (both exact str): as str's own equality, the same
 * length, kind and code units (a str's representation is canonical), without the generic
 * comparison's cost (three of these per frame were a fifth of its walk). */
static inline int str_equal(PyObject *a, PyObject *b) {
    if (a == b) return 1;
    if (!PyUnicode_CheckExact(a) || !PyUnicode_CheckExact(b)) return 0;
    Py_ssize_t n = PyUnicode_GET_LENGTH(a);
    int kind = PyUnicode_KIND(a);
    if (n != PyUnicode_GET_LENGTH(b) || kind != (int)PyUnicode_KIND(b)) return 0;
    return memcmp(PyUnicode_DATA(a), PyUnicode_DATA(b), (size_t)n * (size_t)kind) == 0;
}

/* steady.py's partitions_unchanged: the subscribed topics' partition counts are those the
 * group last saw. -1: a value of an unexpected type (the Python lane decides). */
static int partitions_unchanged(Walker *self, PyObject *g) {
    PyObject *subscribers = SLOT(g, self->cg_topic_subscribers);  /* a Counter */
    PyObject *known = slot_dict(g, self->cg_subscription_metadata);
    if (subscribers == NULL || !PyDict_Check(subscribers) || known == NULL) return -1;
    Py_ssize_t pos = 0, seen = 0;
    PyObject *topic, *count;
    while (PyDict_Next(subscribers, &pos, &topic, &count)) {
        int ok = 1;
        long n = slot_long(count, &ok);
        if (!ok || !PyUnicode_CheckExact(topic)) return -1;
        if (n <= 0) continue;
        PyObject *t = PyDict_GetItemWithError(self->c_topics, topic);
        if (t == NULL) {
            if (PyErr_Occurred()) { PyErr_Clear(); return -1; }
            continue;  /* no such topic: 0 partitions */
        }
        if ((PyObject *)Py_TYPE(t) != self->c_topic_type) return -1;
        PyObject *partitions_obj = SLOT(t, self->t_partitions);
        long partitions = slot_long(partitions_obj, &ok);
        if (!ok) return -1;
        if (partitions <= 0) continue;
        PyObject *was = PyDict_GetItemWithError(known, topic);
        if (was == NULL) { PyErr_Clear(); return 0; }
        if (was != partitions_obj) {  /* the same int object (a small one): equal */
            long before = slot_long(was, &ok);
            if (!ok) return -1;
            if (before != partitions) return 0;
        }
        seen++;
    }
    return seen == PyDict_GET_SIZE(known);
}

/* A consumer group's lookups outside the group object: its ledger, its own configs (each
 * NULL: none) and partitions_unchanged's verdict. */
typedef struct {
    PyObject *ledger, *configs;
    int partitions_same;
} GroupWide;

/* ``g``'s GroupWide, as ``slot`` kept it while the dicts it was read from keep their tags
 * (shard.ledgers, shard.group_configs, the catalog's topics, the group's topic
 * subscribers and subscription metadata: a ledger, a configs dict or a frozen Topic is
 * only ever replaced in them), else looked up and kept; 0: a lookup failed. */
static int group_wide(Walker *self, CacheSlot *slot, PyObject *g, PyObject *group_id,
                      GroupWide *w) {
#if HAVE_DICT_TAGS
    PyObject *subscribers = SLOT(g, self->cg_topic_subscribers);
    PyObject *known = SLOT(g, self->cg_subscription_metadata);
    int taggable = subscribers != NULL && PyDict_Check(subscribers) && known != NULL
                   && PyDict_Check(known);
    if (taggable && slot->group_known && dict_tag(self->c_ledgers) == slot->ledgers_tag
        && dict_tag(self->c_configs) == slot->configs_tag
        && dict_tag(self->c_topics) == slot->topics_tag
        && dict_tag(subscribers) == slot->subscribers_tag && dict_tag(known) == slot->known_tag) {
        w->ledger = slot->ledger;
        w->configs = slot->configs;
        w->partitions_same = slot->partitions_same;
        return 1;
    }
#endif
    w->ledger = PyDict_GetItemWithError(self->c_ledgers, group_id);
    if (w->ledger == NULL && PyErr_Occurred()) { PyErr_Clear(); return 0; }
    w->configs = PyDict_GetItemWithError(self->c_configs, group_id);
    if (w->configs == NULL && PyErr_Occurred()) { PyErr_Clear(); return 0; }
    w->partitions_same = partitions_unchanged(self, g);
#if HAVE_DICT_TAGS
    if (taggable) {
        slot->ledger = w->ledger;
        slot->configs = w->configs;
        slot->partitions_same = w->partitions_same;
        slot->ledgers_tag = dict_tag(self->c_ledgers);
        slot->configs_tag = dict_tag(self->c_configs);
        slot->topics_tag = dict_tag(self->c_topics);
        slot->subscribers_tag = dict_tag(subscribers);
        slot->known_tag = dict_tag(known);
        slot->group_known = 1;
    }
#endif
    return 1;
}

/* The group, member (g.static_member for a static one) and session timer that the
 * consumer frame of ``slot`` names, looked up as steady.py's ``beat`` looks them up; 0:
 * not all there, or not of the exact types (the Python path answers). */
static int consumer_look_up(Walker *self, CacheSlot *slot, PyObject *groups,
                            PyObject *armed_keys, Found *found) {
    PyObject *heard = slot->heard;
    PyObject *instance = PyTuple_GET_ITEM(heard, 5);
    PyObject *g = PyDict_GetItemWithError(groups, PyTuple_GET_ITEM(heard, 2));
    if (g == NULL || (PyObject *)Py_TYPE(g) != self->c_group_type) goto absent;
    PyObject *members = slot_dict(g, self->cg_members);
    if (members == NULL) return 0;
    PyObject *member_key = PyTuple_GET_ITEM(heard, 3);
    if (instance != Py_None) {  /* g.static_member(instance) */
        PyObject *statics = slot_dict(g, self->cg_static_members);
        if (statics == NULL) return 0;
        member_key = PyDict_GetItemWithError(statics, instance);
        if (member_key == NULL || !PyUnicode_CheckExact(member_key)) goto absent;
    }
    PyObject *m = PyDict_GetItemWithError(members, member_key);
    if (m == NULL || (PyObject *)Py_TYPE(m) != self->c_member_type) goto absent;
    return with_timer(self, g, m, armed_keys, slot->session, found);
absent:
    PyErr_Clear();
    return 0;
}

/* Whether the consumer frame of ``slot`` may be answered now, as steady.py's ``beat``
 * would answer it (the same tests on the same objects, declining wherever it declines)
 * with no timer to tell the driver of. 1: yes, and the session was moved in place; 0: no,
 * nothing changed (the Python lane decides). No Python code runs here, as in beat(). */
static int consumer_beat(Walker *self, CacheSlot *slot, PyObject *groups, PyObject *armed_keys,
                         PyObject *client_host, long now) {
    PyObject *heard = slot->heard;
    PyObject *client_id = PyTuple_GET_ITEM(heard, 1);
    PyObject *group_id = PyTuple_GET_ITEM(heard, 2);
    PyObject *member_id = PyTuple_GET_ITEM(heard, 3);
    PyObject *instance = PyTuple_GET_ITEM(heard, 5);
    int ok = 1;
    long epoch = slot_long(PyTuple_GET_ITEM(heard, 4), &ok);
    if (!ok || epoch <= 0) return 0;
    Found f;
    if (!tags_stand(slot, groups, armed_keys, self->cg_members, self->cg_static_members)) {
        if (!consumer_look_up(self, slot, groups, armed_keys, &f)) return 0;
        keep_found(slot, groups, armed_keys, self->cg_members, self->cg_static_members, &f);
    } else {
        kept(slot, &f);
    }
    PyObject *g = f.g, *m = f.m;
    /* g.changed: nothing of the group waits to be written (coalesce.stale: held) */
    PyObject *dirty_members = SLOT(g, self->cg_dirty_members);
    PyObject *removed_members = SLOT(g, self->cg_removed_members);
    if (SLOT(g, self->cg_dirty) != Py_False || dirty_members == NULL
        || !PyAnySet_CheckExact(dirty_members) || PySet_GET_SIZE(dirty_members) != 0
        || removed_members == NULL || !PyAnySet_CheckExact(removed_members)
        || PySet_GET_SIZE(removed_members) != 0)
        return 0;
    long group_epoch = slot_long(SLOT(g, self->cg_group_epoch), &ok);
    long assignment_epoch = slot_long(SLOT(g, self->cg_assignment_epoch), &ok);
    if (!ok || group_epoch > assignment_epoch) return 0;
    long member_epoch = slot_long(SLOT(m, self->cm_member_epoch), &ok);
    if (!ok || member_epoch != epoch) return 0;
    if (!str_equal(SLOT(m, self->cm_member_id), member_id)) return 0;
    if (SLOT(m, self->cm_classic) != Py_None) return 0;
    /* is_reconciled_to(assignment_epoch) */
    if (SLOT(m, self->cm_state) != self->c_stable || member_epoch != assignment_epoch) return 0;
    /* a change of either is written to its record */
    if (!str_equal(SLOT(m, self->cm_client_id), client_id)) return 0;
    if (!str_equal(SLOT(m, self->cm_client_host), client_host)) return 0;
    if (instance != Py_None && java_blank(instance)) return 0;
    GroupWide w;
    if (!group_wide(self, slot, g, group_id, &w)) return 0;
    /* the durability rule: the answer would wait for the group's records in flight */
    if (w.ledger != NULL) {
        if ((PyObject *)Py_TYPE(w.ledger) != self->c_ledger_type) return 0;
        PyObject *in_flight = SLOT(w.ledger, self->l_in_flight);
        if (in_flight == NULL || (PyObject *)Py_TYPE(in_flight) != self->c_deque_type) return 0;
        Py_ssize_t waiting = PyObject_Length(in_flight);  /* deque's own length: no Python */
        if (waiting != 0) { PyErr_Clear(); return 0; }
    }
    /* regex.to_resolve(g, None, ...): the group's regexes are due a refresh */
    PyObject *resolved = slot_dict(g, self->cg_resolved);
    if (resolved == NULL) return 0;
    if (PyDict_GET_SIZE(resolved) > 0) {
        long with_topics = slot_long(SLOT(g, self->cg_resolved_with_topics), &ok);
        long resolved_at = slot_long(SLOT(g, self->cg_resolved_at_ms), &ok);
        if (!ok || with_topics != (long)PyDict_GET_SIZE(self->c_topics)
            || now - resolved_at >= self->c_regex_refresh_ms)
            return 0;
    }
    if (w.partitions_same != 1) return 0;  /* the group epoch is bumped */
    /* the group's own configs: the general path applies them */
    if (w.configs != NULL && (!PyDict_CheckExact(w.configs) || PyDict_GET_SIZE(w.configs) != 0))
        return 0;
    return move_armed(self, f.armed, now + self->c_session_ms);
}

/* Room in the answers' buffer for ``more`` bytes; 0 (error set) without memory. */
static int out_room(Walker *self, Py_ssize_t used, Py_ssize_t more) {
    Py_ssize_t need = used + more;
    if (need <= self->out_cap) return 1;
    Py_ssize_t cap = self->out_cap ? self->out_cap : 4096;
    while (cap < need) cap *= 2;
    char *grown = PyMem_Realloc(self->out, cap);
    if (grown == NULL) { PyErr_NoMemory(); return 0; }
    self->out = grown;
    self->out_cap = cap;
    return 1;
}

/* Whether the group ``heard`` names (item 2 of a Heartbeat's or a ConsumerGroupHeartbeat's
 * fields) is one ``admitted`` holds: groups admission let this connection heartbeat in as
 * things stand (ACLs, a cluster's placement; the Python lanes record them,
 * ``admission.admitted_groups``). ``admitted`` NULL: admission checks nothing. */
static inline int group_admitted(PyObject *admitted, PyObject *heard) {
    if (admitted == NULL) return 1;
    PyObject *yes = PyDict_GetItemWithError(admitted, PyTuple_GET_ITEM(heard, 2));
    if (yes == NULL) PyErr_Clear();
    return yes == Py_True;
}

/* Answers the frames at the start of data[0:len] into self->out (``*written`` bytes);
 * returns the bytes of data answered, or -1 (error set). The counts, the client id and
 * ``*answered``/``*consumers`` are then the walk's. ``admitted``: see group_admitted. */
static Py_ssize_t walk_frames(Walker *self, const unsigned char *data, Py_ssize_t len,
                              PyObject *groups, PyObject *armed_keys, long now,
                              long long max_frame, Py_ssize_t limit, PyObject *client_host,
                              PyObject *admitted, Py_ssize_t *written,
                              Py_ssize_t *answered_out, Py_ssize_t *consumers_out) {
    Py_ssize_t at = 0, answered = 0, consumers = 0, o = 0;
    memset(self->counts, 0, sizeof self->counts);
    memset(self->c_counts, 0, sizeof self->c_counts);
    PyObject *now_obj = PyLong_FromLong(now);
    if (now_obj == NULL) return -1;
    while (answered + consumers < limit && len - at >= 4) {
        uint32_t size = be32(data + at);
        if (size > 0x7fffffffu || (long long)size > max_frame) break;  /* refused there */
        if ((Py_ssize_t)size > len - at - 4) break;                    /* incomplete */
        const unsigned char *frame = data + at + 4;
        if (size < 8) break;
        int api = frame[0] << 8 | frame[1];
        int version = frame[2] << 8 | frame[3];
        const char *answer;
        Py_ssize_t n;
        PyObject *client;
        if (api == HEARTBEAT_KEY) {
            if (version < self->min_version || version > self->max_version) break;
            CacheSlot *held;
            PyObject *heard = heard_of(self, version, frame + 8, (Py_ssize_t)size - 8, &held);
            if (heard == NULL) break;  /* not decoded yet: the Python lane decodes it */
            if (!group_admitted(admitted, heard)) break;  /* the Python lane checks it */
            int rebalancing = 0;
            if (!beat(self, held, heard, groups, armed_keys, now, now_obj, &rebalancing)) break;
            answer = self->answer[version][rebalancing];
            n = self->answer_len[version][rebalancing];
            client = PyTuple_GET_ITEM(heard, 1);
            self->counts[(version - self->min_version) * 2 + rebalancing]++;
            answered++;
        } else if (api == CONSUMER_HEARTBEAT_KEY && self->c_memo != NULL) {
            if (version < self->c_min_version || version > self->c_max_version) break;
            CacheSlot *slot = consumer_slot(self, version, frame + 8, (Py_ssize_t)size - 8);
            if (slot == NULL) break;  /* not (yet) a steady heartbeat the lane knows */
            if (!group_admitted(admitted, slot->heard)) break;
            if (!consumer_beat(self, slot, groups, armed_keys, client_host, now)) break;
            answer = PyBytes_AS_STRING(slot->reply);
            n = PyBytes_GET_SIZE(slot->reply);
            client = PyTuple_GET_ITEM(slot->heard, 1);
            self->c_counts[version]++;
            consumers++;
        } else {
            break;
        }
        if (!out_room(self, o, n)) {
            Py_DECREF(now_obj);
            return -1;
        }
        memcpy(self->out + o, answer, n);
        memcpy(self->out + o + 4, frame + 4, 4);  /* the request's correlation id */
        o += n;
        if (client != self->client) {
            Py_INCREF(client);
            Py_XSETREF(self->client, client);
        }
        at += 4 + (Py_ssize_t)size;
    }
    Py_DECREF(now_obj);
    *written = o;
    *answered_out = answered;
    *consumers_out = consumers;
    return at;
}

/* walk(data, groups, armed, now_ms, max_frame_bytes, limit, client_host, admitted)
 *   -> (bytes of data answered, the answers, Heartbeats answered,
 *       ConsumerGroupHeartbeats answered)
 * ``admitted``: None (admission checks nothing), or the dict of groups admission let the
 * connection heartbeat in (a frame of any other group is left to the Python lanes, which
 * check and record).
 * The client id of the last frame answered is then ``client_id``, and the frames answered
 * by version and error ``counts()`` (Heartbeat) and ``consumer_counts()``. */
static PyObject *Walker_walk(Walker *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 8 || !PyDict_CheckExact(args[1]) || !PyDict_CheckExact(args[2])
        || (args[7] != Py_None && !PyDict_CheckExact(args[7]))) {
        PyErr_SetString(PyExc_TypeError,
                        "walk(data, groups, armed, now, max_frame, limit, client_host, admitted)");
        return NULL;
    }
    PyObject *admitted = args[7] == Py_None ? NULL : args[7];
    if (self->cache == NULL || self->memo == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Walker not initialised");
        return NULL;
    }
    long now = PyLong_AsLong(args[3]);
    if (now == -1 && PyErr_Occurred()) return NULL;
    long long max_frame = PyLong_AsLongLong(args[4]);
    if (max_frame == -1 && PyErr_Occurred()) return NULL;
    Py_ssize_t limit = PyLong_AsSsize_t(args[5]);
    if (limit == -1 && PyErr_Occurred()) return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) return NULL;
    Py_ssize_t o, answered, consumers;
    Py_ssize_t at = walk_frames(self, view.buf, view.len, args[1], args[2], now, max_frame,
                                limit, args[6], admitted, &o, &answered, &consumers);
    PyBuffer_Release(&view);
    if (at < 0) return NULL;
    PyObject *out = PyBytes_FromStringAndSize(self->out, o);
    if (out == NULL) return NULL;
    return Py_BuildValue("(nNnn)", at, out, answered, consumers);
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

/* consumer_counts() -> the last walk's ConsumerGroupHeartbeats answered, by version from
 * the consumer lane's min_version. */
static PyObject *Walker_consumer_counts(Walker *self, PyObject *Py_UNUSED(ignored)) {
    if (self->c_memo == NULL) return PyTuple_New(0);
    Py_ssize_t slots = self->c_max_version - self->c_min_version + 1;
    PyObject *counted = PyTuple_New(slots);
    if (counted == NULL) return NULL;
    for (Py_ssize_t i = 0; i < slots; i++) {
        PyObject *c = PyLong_FromSsize_t(self->c_counts[self->c_min_version + i]);
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
     "walk(data, groups, armed, now_ms, max_frame_bytes, limit, client_host) -> "
     "(consumed, answers, heartbeats answered, consumer heartbeats answered)"},
    {"consumer", (PyCFunction)Walker_consumer, METH_VARARGS,
     "Sets up the steady ConsumerGroupHeartbeat frames' answers (see the source)."},
    {"counts", (PyCFunction)Walker_counts, METH_NOARGS,
     "The last walk's Heartbeats answered, per (version - min_version) * 2 + rebalancing."},
    {"consumer_counts", (PyCFunction)Walker_consumer_counts, METH_NOARGS,
     "The last walk's ConsumerGroupHeartbeats answered, per version - their min_version."},
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
    .tp_doc = "Answers the heartbeat frames at the start of a read (see batch.py).",
    .tp_methods = Walker_methods,
    .tp_getset = Walker_getset,
    .tp_init = (initproc)Walker_init,
    .tp_new = PyType_GenericNew,
};

/* ---- Reads taken off the event loop's stream (shell/hot_reads.py) ----------------------
 *
 * A connection whose reads the walker answers whole may be made "hot": its transport stops
 * reading and the loop calls Reader.readable() when its socket (a dup of the transport's)
 * is readable. readable() reads once, answers the frames at the start of what it read as
 * walk() does, and writes the answers itself: no bytes object, no Python frame per read
 * besides the clock and ``tally`` (the bookkeeping the Python side does after a walk).
 * Anything else hands back to Python through ``leave(rest, unsent, error)``: the bytes
 * read and not answered (to be taken as the transport would have given them), the answers
 * not yet written (the transport writes them first), and the exception if the walk failed.
 * The end of the stream or a socket error hands back nothing: the transport, reading again,
 * sees them itself. */
#define READ_BYTES 65536
/* One read buffer for every reader: the loop calls readable() one at a time, and what is
 * handed back is copied out first. */
static unsigned char read_buf[READ_BYTES];

typedef struct {
    PyObject_HEAD
    Walker *walker;
    int fd;  /* the reader's own dup of the socket; -1 once closed */
    PyObject *groups, *armed, *clock, *client_host, *tally, *leave;
    /* With ``loop_clock``, clock() is the event loop's time() and the state machine's
     * milliseconds are LoopClock's: int(time() * 1000 + offset_ms). Else clock() gives
     * them. */
    int loop_clock;
    double offset_ms;
    long long max_frame;
    Py_ssize_t limit;
    /* Without ``tally`` (None), what settle() hands over: the frames answered since, the
     * client id of the last, and the loop time of the last read that answered any. */
    Py_ssize_t owed_answered, owed_consumers;
    PyObject *client;  /* the walker's is the last walk's, of whichever connection */
    double last_read;
} Reader;

static int Reader_traverse(Reader *self, visitproc visit, void *arg) {
    Py_VISIT(self->walker);
    Py_VISIT(self->groups);
    Py_VISIT(self->armed);
    Py_VISIT(self->clock);
    Py_VISIT(self->client_host);
    Py_VISIT(self->tally);
    Py_VISIT(self->leave);
    Py_VISIT(self->client);
    return 0;
}

static int Reader_clear(Reader *self) {
    Py_CLEAR(self->walker);
    Py_CLEAR(self->groups);
    Py_CLEAR(self->armed);
    Py_CLEAR(self->clock);
    Py_CLEAR(self->client_host);
    Py_CLEAR(self->tally);
    Py_CLEAR(self->leave);
    Py_CLEAR(self->client);
    return 0;
}

static void Reader_dealloc(Reader *self) {
    PyObject_GC_UnTrack(self);
    if (self->fd >= 0) close(self->fd);
    Reader_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Reader_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    (void)args;
    (void)kwds;
    Reader *self = (Reader *)type->tp_alloc(type, 0);
    if (self != NULL) self->fd = -1;
    return (PyObject *)self;
}

/* Reader(walker, fd, groups, armed, clock, offset_ms, max_frame_bytes, limit, client_host,
 *        tally, leave): the reader owns ``fd`` (closes it in close() or when freed).
 * ``offset_ms`` None: clock() gives the milliseconds; a float: clock() is the loop's
 * time(), as LoopClock reads it. ``tally`` None: the bookkeeping waits for settle(). */
static int Reader_init(Reader *self, PyObject *args, PyObject *kwds) {
    PyObject *walker, *groups, *armed, *clock, *offset, *client_host, *tally, *leave;
    int fd;
    long long max_frame;
    Py_ssize_t limit;
    (void)kwds;
    if (!PyArg_ParseTuple(args, "O!iO!O!OOLnOOO", &WalkerType, &walker, &fd, &PyDict_Type,
                          &groups, &PyDict_Type, &armed, &clock, &offset, &max_frame, &limit,
                          &client_host, &tally, &leave))
        return -1;
    self->loop_clock = offset != Py_None;
    if (self->loop_clock) {
        self->offset_ms = PyFloat_AsDouble(offset);
        if (self->offset_ms == -1.0 && PyErr_Occurred()) return -1;
    }
    if (((Walker *)walker)->cache == NULL || ((Walker *)walker)->memo == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Walker not initialised");
        return -1;
    }
    if (self->fd >= 0) close(self->fd);
    self->fd = fd;
    Py_XSETREF(self->walker, (Walker *)Py_NewRef(walker));
    Py_XSETREF(self->groups, Py_NewRef(groups));
    Py_XSETREF(self->armed, Py_NewRef(armed));
    Py_XSETREF(self->clock, Py_NewRef(clock));
    Py_XSETREF(self->client_host, Py_NewRef(client_host));
    Py_XSETREF(self->tally, Py_NewRef(tally));
    Py_XSETREF(self->leave, Py_NewRef(leave));
    self->max_frame = max_frame;
    self->limit = limit;
    return 0;
}

/* leave(rest, unsent, error): hands the connection back to the transport. */
static PyObject *hand_back(Reader *self, const unsigned char *rest, Py_ssize_t rest_len,
                           const char *unsent, Py_ssize_t unsent_len, PyObject *error) {
    PyObject *r = PyBytes_FromStringAndSize((const char *)rest, rest_len);
    PyObject *u = r != NULL ? PyBytes_FromStringAndSize(unsent, unsent_len) : NULL;
    PyObject *result = NULL;
    if (u != NULL) {
        PyObject *leave = Py_NewRef(self->leave);  /* leave() may free the reader */
        result = PyObject_CallFunctionObjArgs(leave, r, u, error ? error : Py_None, NULL);
        Py_DECREF(leave);
    }
    Py_XDECREF(r);
    Py_XDECREF(u);
    return result;
}

/* The walk failed (error set): everything read goes back with the error. */
static PyObject *failed(Reader *self, Py_ssize_t read_len) {
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (value == NULL) value = Py_NewRef(Py_None);
    else if (tb != NULL) PyException_SetTraceback(value, tb);
    PyObject *result = hand_back(self, read_buf, read_len, NULL, 0, value);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    return result;
}

static double monotonic_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);  /* time.perf_counter's clock on Linux */
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static PyObject *Reader_readable(Reader *self, PyObject *Py_UNUSED(ignored)) {
    if (self->fd < 0 || self->walker == NULL) Py_RETURN_NONE;
    ssize_t got;
    do got = read(self->fd, read_buf, READ_BYTES);
    while (got < 0 && errno == EINTR);
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) Py_RETURN_NONE;
    if (got <= 0) return hand_back(self, NULL, 0, NULL, 0, NULL);
    double started = self->tally != Py_None ? monotonic_s() : 0.0;  /* for the tally */
    PyObject *now_obj = PyObject_CallNoArgs(self->clock);
    if (now_obj == NULL) return failed(self, got);
    long now;
    double loop_time = 0.0;
    if (self->loop_clock) {
        loop_time = PyFloat_AsDouble(now_obj);
        /* LoopClock.now_ms's arithmetic, step by step (volatile: no fused multiply-add) */
        volatile double ms = loop_time * 1000.0;
        ms = ms + self->offset_ms;
        now = (long)ms;
    } else {
        now = PyLong_AsLong(now_obj);
    }
    Py_DECREF(now_obj);
    if (PyErr_Occurred()) return failed(self, got);
    Walker *walker = self->walker;
    Py_ssize_t o, answered, consumers;
    /* No admitted groups: a connection goes hot only where admission checks nothing (no
     * ACLs, one node: shell/hot_reads.py, heat). */
    Py_ssize_t at = walk_frames(walker, read_buf, got, self->groups, self->armed, now,
                                self->max_frame, self->limit, self->client_host, NULL, &o,
                                &answered, &consumers);
    if (at < 0) return failed(self, got);
    Py_ssize_t sent = 0;
    while (sent < o) {
        ssize_t n = write(self->fd, walker->out + sent, o - sent);
        if (n < 0) {
            if (errno == EINTR) continue;
            break;  /* full (or failed): the transport writes the rest (or sees the error) */
        }
        sent += n;
    }
    if (answered + consumers && self->tally != Py_None) {
        PyObject *told = PyObject_CallFunction(self->tally, "nnd", answered, consumers, started);
        if (told == NULL) PyErr_WriteUnraisable(self->tally);
        Py_XDECREF(told);
    } else if (answered + consumers) {
        self->owed_answered += answered;
        self->owed_consumers += consumers;
        self->last_read = loop_time;
        if (walker->client != self->client) Py_XSETREF(self->client, Py_XNewRef(walker->client));
    }
    if (at < got || sent < o)
        return hand_back(self, read_buf + at, got - at, walker->out + sent, o - sent, NULL);
    Py_RETURN_NONE;
}

/* settle() -> (Heartbeats, ConsumerGroupHeartbeats answered since the last settle(), the
 * client id of the last frame answered, the loop time of the last read that answered
 * any): the bookkeeping owed without a ``tally``. */
static PyObject *Reader_settle(Reader *self, PyObject *Py_UNUSED(ignored)) {
    PyObject *client = self->client != NULL ? self->client : Py_None;
    PyObject *owed = Py_BuildValue("(nnOd)", self->owed_answered, self->owed_consumers,
                                   client, self->last_read);
    if (owed != NULL) self->owed_answered = self->owed_consumers = 0;
    return owed;
}

static PyObject *Reader_close(Reader *self, PyObject *Py_UNUSED(ignored)) {
    if (self->fd >= 0) {
        close(self->fd);
        self->fd = -1;
    }
    Py_RETURN_NONE;
}

static PyObject *Reader_fd(Reader *self, void *Py_UNUSED(closure)) {
    return PyLong_FromLong(self->fd);
}

static PyMethodDef Reader_methods[] = {
    {"readable", (PyCFunction)Reader_readable, METH_NOARGS,
     "Reads once and answers what the walker may (the loop's reader callback)."},
    {"settle", (PyCFunction)Reader_settle, METH_NOARGS,
     "(answered, consumers answered, client id, loop time) owed since the last settle()."},
    {"close", (PyCFunction)Reader_close, METH_NOARGS,
     "Closes the reader's socket (after the loop stopped watching it)."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Reader_getset[] = {
    {"fd", (getter)Reader_fd, NULL, "The reader's socket (-1 once closed).", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject ReaderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "coordinator.fastlane._heartbeats.Reader",
    .tp_basicsize = sizeof(Reader),
    .tp_dealloc = (destructor)Reader_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "A hot connection's reads, answered in C (see shell/hot_reads.py).",
    .tp_traverse = (traverseproc)Reader_traverse,
    .tp_clear = (inquiry)Reader_clear,
    .tp_methods = Reader_methods,
    .tp_getset = Reader_getset,
    .tp_init = (initproc)Reader_init,
    .tp_new = Reader_new,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_heartbeats", "The compiled heartbeat lane.", -1, NULL,
};

PyMODINIT_FUNC PyInit__heartbeats(void) {
    if (PyType_Ready(&WalkerType) < 0 || PyType_Ready(&ReaderType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    Py_INCREF(&WalkerType);
    if (PyModule_AddObject(m, "Walker", (PyObject *)&WalkerType) < 0) {
        Py_DECREF(&WalkerType);
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&ReaderType);
    if (PyModule_AddObject(m, "Reader", (PyObject *)&ReaderType) < 0) {
        Py_DECREF(&ReaderType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
