--
-- PostgreSQL database dump
--

\restrict YB3qbcPqYNKbrE3X0Q1ZSl2mbmNQ3dREs7XOBlXRL4HJ7bnix2lEZTt6KMMhzVz

-- Dumped from database version 15.18 (Debian 15.18-0+deb12u1)
-- Dumped by pg_dump version 15.18 (Debian 15.18-0+deb12u1)

SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

SET default_tablespace = '';

SET default_table_access_method = heap;

--
-- Name: acls; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.acls (
    principal text NOT NULL,
    resource_type integer NOT NULL,
    resource_name text NOT NULL,
    pattern_type integer NOT NULL,
    operation integer NOT NULL,
    permission integer NOT NULL,
    host text NOT NULL
);


--
-- Name: cluster_nodes; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.cluster_nodes (
    node_id integer NOT NULL,
    listeners text NOT NULL,
    lease_expires_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone DEFAULT now() NOT NULL,
    console_url text,
    live_since timestamp with time zone
);


--
-- Name: cluster_settings; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.cluster_settings (
    name text NOT NULL,
    value text NOT NULL
);


--
-- Name: consumer_group_members; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.consumer_group_members (
    group_id text NOT NULL,
    member_id text NOT NULL,
    data text NOT NULL,
    coordinator_partition integer
);


--
-- Name: consumer_groups; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.consumer_groups (
    group_id text NOT NULL,
    data text NOT NULL,
    coordinator_partition integer
);


--
-- Name: coordinator_partitions; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.coordinator_partitions (
    partition integer NOT NULL,
    owner integer,
    epoch bigint DEFAULT 0 NOT NULL,
    changed_at timestamp with time zone DEFAULT now() NOT NULL,
    previous_owner integer
);


--
-- Name: coordinator_schema; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.coordinator_schema (
    version integer
);


--
-- Name: group_configs; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.group_configs (
    group_id text NOT NULL,
    data text NOT NULL,
    coordinator_partition integer
);


--
-- Name: group_handovers; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.group_handovers (
    group_id text NOT NULL,
    coordinator_partition integer NOT NULL,
    epoch bigint NOT NULL,
    data text NOT NULL,
    written_at timestamp with time zone DEFAULT now() NOT NULL
);


--
-- Name: groups; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.groups (
    group_id text NOT NULL,
    data text NOT NULL,
    coordinator_partition integer
);


--
-- Name: member_heartbeats; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.member_heartbeats (
    group_id text NOT NULL,
    member_id text NOT NULL,
    last_heartbeat_ms bigint NOT NULL,
    coordinator_partition integer
);


--
-- Name: offsets; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.offsets (
    group_id text NOT NULL,
    topic text NOT NULL,
    partition integer NOT NULL,
    committed_offset bigint NOT NULL,
    leader_epoch integer NOT NULL,
    metadata bytea NOT NULL,
    commit_timestamp_ms bigint NOT NULL,
    expire_timestamp_ms bigint,
    coordinator_partition integer
);


--
-- Name: scram_credentials; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.scram_credentials (
    username text NOT NULL,
    mechanism text NOT NULL,
    salt bytea NOT NULL,
    iterations integer NOT NULL,
    stored_key bytea NOT NULL,
    server_key bytea NOT NULL
);


--
-- Name: topic_id_key; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.topic_id_key (
    one integer NOT NULL,
    key bytea NOT NULL,
    CONSTRAINT topic_id_key_one_check CHECK ((one = 1))
);


--
-- Name: topics; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.topics (
    name text NOT NULL,
    partitions integer NOT NULL,
    unkeyed_id boolean DEFAULT false NOT NULL
);


--
-- Data for Name: acls; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.acls (principal, resource_type, resource_name, pattern_type, operation, permission, host) FROM stdin;
\.


--
-- Data for Name: cluster_nodes; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.cluster_nodes (node_id, listeners, lease_expires_at, started_at, console_url, live_since) FROM stdin;
\.


--
-- Data for Name: cluster_settings; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.cluster_settings (name, value) FROM stdin;
offsets_topic_num_partitions	50
\.


--
-- Data for Name: consumer_group_members; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.consumer_group_members (group_id, member_id, data, coordinator_partition) FROM stdin;
kip848	c1	{"version": 1, "instance_id": null, "rack_id": null, "client_id": "client-c1", "client_host": "/127.0.0.1", "rebalance_timeout_ms": 60000, "subscribed_topic_names": ["orders"], "server_assignor": "uniform", "state": "stable", "member_epoch": 3, "previous_member_epoch": 2, "assigned": {"orders": [0, 1, 2]}, "pending_revocation": {}, "target": {"orders": [0, 1, 2]}, "subscribed_topic_regex": null, "classic_session_timeout_ms": null, "classic_protocols": null}	8
kip848	c2	{"version": 1, "instance_id": "static-2", "rack_id": "rack-1", "client_id": "client-c2", "client_host": "/127.0.0.1", "rebalance_timeout_ms": 60000, "subscribed_topic_names": ["orders"], "server_assignor": "uniform", "state": "unrevoked_partitions", "member_epoch": 3, "previous_member_epoch": 2, "assigned": {"orders": [3, 4]}, "pending_revocation": {"orders": [5]}, "target": {"orders": [3, 4]}, "subscribed_topic_regex": null, "classic_session_timeout_ms": 30000, "classic_protocols": [["range", "AAE="]]}	8
kip848	c3	{"version": 1, "instance_id": null, "rack_id": null, "client_id": "client-c3", "client_host": "/127.0.0.1", "rebalance_timeout_ms": 60000, "subscribed_topic_names": [], "server_assignor": "uniform", "state": "unreleased_partitions", "member_epoch": 3, "previous_member_epoch": 2, "assigned": {}, "pending_revocation": {}, "target": {"events-a": [0, 1, 2], "events-b": [0]}, "subscribed_topic_regex": "events-.*", "classic_session_timeout_ms": null, "classic_protocols": null}	8
converted	v1	{"version": 1, "instance_id": null, "rack_id": null, "client_id": "client-v1", "client_host": "/127.0.0.1", "rebalance_timeout_ms": 60000, "subscribed_topic_names": ["orders"], "server_assignor": "uniform", "state": "stable", "member_epoch": 3, "previous_member_epoch": 2, "assigned": {"orders": [5]}, "pending_revocation": {}, "target": {"orders": [5]}, "subscribed_topic_regex": null, "classic_session_timeout_ms": null, "classic_protocols": null}	14
\.


--
-- Data for Name: consumer_groups; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.consumer_groups (group_id, data, coordinator_partition) FROM stdin;
kip848	{"version": 1, "group_epoch": 4, "assignment_epoch": 4, "subscription_metadata": {"orders": 6, "events-a": 3, "events-b": 1}}	8
converted	{"version": 1, "group_epoch": 1, "assignment_epoch": 1, "subscription_metadata": {"orders": 6}}	14
\.


--
-- Data for Name: coordinator_partitions; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.coordinator_partitions (partition, owner, epoch, changed_at, previous_owner) FROM stdin;
0	\N	0	2026-11-27 16:46:11.938645+00	\N
1	\N	0	2026-11-27 16:46:11.938645+00	\N
2	\N	0	2026-11-27 16:46:11.938645+00	\N
3	\N	0	2026-11-27 16:46:11.938645+00	\N
4	\N	0	2026-11-27 16:46:11.938645+00	\N
5	\N	0	2026-11-27 16:46:11.938645+00	\N
6	\N	0	2026-11-27 16:46:11.938645+00	\N
7	\N	0	2026-11-27 16:46:11.938645+00	\N
8	\N	0	2026-11-27 16:46:11.938645+00	\N
9	\N	0	2026-11-27 16:46:11.938645+00	\N
10	\N	0	2026-11-27 16:46:11.938645+00	\N
11	\N	0	2026-11-27 16:46:11.938645+00	\N
12	\N	0	2026-11-27 16:46:11.938645+00	\N
13	\N	0	2026-11-27 16:46:11.938645+00	\N
14	\N	0	2026-11-27 16:46:11.938645+00	\N
15	\N	0	2026-11-27 16:46:11.938645+00	\N
16	\N	0	2026-11-27 16:46:11.938645+00	\N
17	\N	0	2026-11-27 16:46:11.938645+00	\N
18	\N	0	2026-11-27 16:46:11.938645+00	\N
19	\N	0	2026-11-27 16:46:11.938645+00	\N
20	\N	0	2026-11-27 16:46:11.938645+00	\N
21	\N	0	2026-11-27 16:46:11.938645+00	\N
22	\N	0	2026-11-27 16:46:11.938645+00	\N
23	\N	0	2026-11-27 16:46:11.938645+00	\N
24	\N	0	2026-11-27 16:46:11.938645+00	\N
25	\N	0	2026-11-27 16:46:11.938645+00	\N
26	\N	0	2026-11-27 16:46:11.938645+00	\N
27	\N	0	2026-11-27 16:46:11.938645+00	\N
28	\N	0	2026-11-27 16:46:11.938645+00	\N
29	\N	0	2026-11-27 16:46:11.938645+00	\N
30	\N	0	2026-11-27 16:46:11.938645+00	\N
31	\N	0	2026-11-27 16:46:11.938645+00	\N
32	\N	0	2026-11-27 16:46:11.938645+00	\N
33	\N	0	2026-11-27 16:46:11.938645+00	\N
34	\N	0	2026-11-27 16:46:11.938645+00	\N
35	\N	0	2026-11-27 16:46:11.938645+00	\N
36	\N	0	2026-11-27 16:46:11.938645+00	\N
37	\N	0	2026-11-27 16:46:11.938645+00	\N
38	\N	0	2026-11-27 16:46:11.938645+00	\N
39	\N	0	2026-11-27 16:46:11.938645+00	\N
40	\N	0	2026-11-27 16:46:11.938645+00	\N
41	\N	0	2026-11-27 16:46:11.938645+00	\N
42	\N	0	2026-11-27 16:46:11.938645+00	\N
43	\N	0	2026-11-27 16:46:11.938645+00	\N
44	\N	0	2026-11-27 16:46:11.938645+00	\N
45	\N	0	2026-11-27 16:46:11.938645+00	\N
46	\N	0	2026-11-27 16:46:11.938645+00	\N
47	\N	0	2026-11-27 16:46:11.938645+00	\N
48	\N	0	2026-11-27 16:46:11.938645+00	\N
49	\N	0	2026-11-27 16:46:11.938645+00	\N
\.


--
-- Data for Name: coordinator_schema; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.coordinator_schema (version) FROM stdin;
1
2
3
4
5
6
7
8
\.


--
-- Data for Name: group_configs; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.group_configs (group_id, data, coordinator_partition) FROM stdin;
kip848	{"consumer.session.timeout.ms": 50000}	8
\.


--
-- Data for Name: group_handovers; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.group_handovers (group_id, coordinator_partition, epoch, data, written_at) FROM stdin;
\.


--
-- Data for Name: groups; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.groups (group_id, data, coordinator_partition) FROM stdin;
classic	{"version": 1, "state": "Stable", "state_timestamp_ms": 900000, "protocol_type": "consumer", "protocol_name": "range", "generation_id": 4, "leader_id": "a", "members": [{"member_id": "a", "group_instance_id": "static-a", "client_id": "client-a", "client_host": "/127.0.0.1", "rebalance_timeout_ms": 300000, "session_timeout_ms": 45000, "protocol_type": "consumer", "protocols": [["range", "AAFtZXRh"], ["roundrobin", ""]], "assignment": "AGFzc2lnbmVkLWE=", "last_heartbeat_ms": 900000}, {"member_id": "b", "group_instance_id": null, "client_id": "client-b", "client_host": "/127.0.0.1", "rebalance_timeout_ms": 300000, "session_timeout_ms": 45000, "protocol_type": "consumer", "protocols": [["range", "AAFtZXRh"], ["roundrobin", ""]], "assignment": "AGFzc2lnbmVkLWI=", "last_heartbeat_ms": 900000}]}	32
rebalancing	{"version": 1, "state": "PreparingRebalance", "state_timestamp_ms": 900000, "protocol_type": "consumer", "protocol_name": "range", "generation_id": 7, "leader_id": "r", "members": [{"member_id": "r", "group_instance_id": null, "client_id": "client-r", "client_host": "/127.0.0.1", "rebalance_timeout_ms": 300000, "session_timeout_ms": 45000, "protocol_type": "consumer", "protocols": [["range", "AAFtZXRh"], ["roundrobin", ""]], "assignment": "AGFzc2lnbmVkLXI=", "last_heartbeat_ms": 990000}]}	2
empty	{"version": 1, "state": "Empty", "state_timestamp_ms": 900000, "protocol_type": null, "protocol_name": null, "generation_id": 2, "leader_id": null, "members": []}	39
converted	{"version": 1, "state": "Empty", "state_timestamp_ms": 900000, "protocol_type": null, "protocol_name": null, "generation_id": 5, "leader_id": null, "members": []}	14
\.


--
-- Data for Name: member_heartbeats; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.member_heartbeats (group_id, member_id, last_heartbeat_ms, coordinator_partition) FROM stdin;
classic	b	990000	32
\.


--
-- Data for Name: offsets; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.offsets (group_id, topic, partition, committed_offset, leader_epoch, metadata, commit_timestamp_ms, expire_timestamp_ms, coordinator_partition) FROM stdin;
classic	orders	1	11	-1	\\x6d3131	950000	5000000	32
classic	orders	0	20	6	\\x	950000	\N	32
simple	audit	0	7	-1	\\x6d37	950000	\N	26
simple	audit	1	8	-1	\\x6d38	999000	\N	26
kip848	orders	3	33	-1	\\x6d3333	950000	\N	8
kip-gone	orders	4	44	-1	\\x6d3434	950000	\N	24
converted	orders	5	55	-1	\\x6d3535	950000	\N	14
\.


--
-- Data for Name: scram_credentials; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.scram_credentials (username, mechanism, salt, iterations, stored_key, server_key) FROM stdin;
\.


--
-- Data for Name: topic_id_key; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.topic_id_key (one, key) FROM stdin;
1	\\xe5c214cb443763df1a42728834f1c856db425ca6ceb58b3bb4191e76dd83e966
\.


--
-- Data for Name: topics; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.topics (name, partitions, unkeyed_id) FROM stdin;
\.


--
-- Name: acls acls_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.acls
    ADD CONSTRAINT acls_pkey PRIMARY KEY (principal, resource_type, resource_name, pattern_type, operation, permission, host);


--
-- Name: cluster_nodes cluster_nodes_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.cluster_nodes
    ADD CONSTRAINT cluster_nodes_pkey PRIMARY KEY (node_id);


--
-- Name: cluster_settings cluster_settings_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.cluster_settings
    ADD CONSTRAINT cluster_settings_pkey PRIMARY KEY (name);


--
-- Name: consumer_group_members consumer_group_members_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.consumer_group_members
    ADD CONSTRAINT consumer_group_members_pkey PRIMARY KEY (group_id, member_id);


--
-- Name: consumer_groups consumer_groups_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.consumer_groups
    ADD CONSTRAINT consumer_groups_pkey PRIMARY KEY (group_id);


--
-- Name: coordinator_partitions coordinator_partitions_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.coordinator_partitions
    ADD CONSTRAINT coordinator_partitions_pkey PRIMARY KEY (partition);


--
-- Name: group_configs group_configs_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.group_configs
    ADD CONSTRAINT group_configs_pkey PRIMARY KEY (group_id);


--
-- Name: group_handovers group_handovers_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.group_handovers
    ADD CONSTRAINT group_handovers_pkey PRIMARY KEY (group_id);


--
-- Name: groups groups_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.groups
    ADD CONSTRAINT groups_pkey PRIMARY KEY (group_id);


--
-- Name: member_heartbeats member_heartbeats_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.member_heartbeats
    ADD CONSTRAINT member_heartbeats_pkey PRIMARY KEY (group_id, member_id);


--
-- Name: offsets offsets_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.offsets
    ADD CONSTRAINT offsets_pkey PRIMARY KEY (group_id, topic, partition);


--
-- Name: scram_credentials scram_credentials_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.scram_credentials
    ADD CONSTRAINT scram_credentials_pkey PRIMARY KEY (username, mechanism);


--
-- Name: topic_id_key topic_id_key_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.topic_id_key
    ADD CONSTRAINT topic_id_key_pkey PRIMARY KEY (one);


--
-- Name: topics topics_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.topics
    ADD CONSTRAINT topics_pkey PRIMARY KEY (name);


--
-- Name: consumer_groups_by_partition; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX consumer_groups_by_partition ON public.consumer_groups USING btree (coordinator_partition);


--
-- Name: consumer_members_by_partition; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX consumer_members_by_partition ON public.consumer_group_members USING btree (coordinator_partition);


--
-- Name: group_configs_by_partition; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX group_configs_by_partition ON public.group_configs USING btree (coordinator_partition);


--
-- Name: group_handovers_by_partition; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX group_handovers_by_partition ON public.group_handovers USING btree (coordinator_partition);


--
-- Name: groups_by_partition; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX groups_by_partition ON public.groups USING btree (coordinator_partition);


--
-- Name: heartbeats_by_partition; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX heartbeats_by_partition ON public.member_heartbeats USING btree (coordinator_partition);


--
-- Name: offsets_by_partition; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX offsets_by_partition ON public.offsets USING btree (coordinator_partition);


--
-- PostgreSQL database dump complete
--

\unrestrict YB3qbcPqYNKbrE3X0Q1ZSl2mbmNQ3dREs7XOBlXRL4HJ7bnix2lEZTt6KMMhzVz

