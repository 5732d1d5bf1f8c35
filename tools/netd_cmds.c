/*
 * o2ctl commands served by netd: link status, an echo handler and a
 * sender that checks every answer (for admins checking a cluster's
 * network, and for the tests), and the cluster key generator.
 */
#include <sys/time.h>

#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ipc.h"
#include "netdanswer.h"
#include "../netd/netd.h"	/* the key file format is netd's (auth.c) */
#include "o2ctl.h"
#include "util.h"

#define ECHO_TYPE	0x4543	/* "EC": the default message type of net-echo */
#define ECHO_KEY	0
#define STREAM_HDR	16	/* payloads of 16+ bytes start with stream id, seq */

static const char *
link_state_name(Netd__LinkState s)
{
	switch (s) {
	case NETD__LINK_STATE__LINK_DOWN: return "down";
	case NETD__LINK_STATE__LINK_CONNECTING: return "connecting";
	case NETD__LINK_STATE__LINK_HANDSHAKE: return "handshake";
	case NETD__LINK_STATE__LINK_UP: return "up";
	case NETD__LINK_STATE__LINK_IDLE: return "idle";
	case NETD__LINK_STATE__LINK_REFUSED: return "refused";
	case NETD__LINK_STATE__LINK_SELF: return "self";
	default: return "unknown";
	}
}

static void
netd_status_json(const Envelope *rep)
{
	const Netd__NetStatus *st = rep->net_status;
	int first = 1, f2;
	size_t i;

	printf("{");
	json_key(stdout, &first, "local_node"); printf("%u", st->local_node);
	json_key(stdout, &first, "cluster"); json_str(stdout, st->cluster);
	json_key(stdout, &first, "hbd_connected"); printf("%s", st->hbd_connected ? "true" : "false");
	json_key(stdout, &first, "auth"); printf("%s", st->auth ? "true" : "false");
	json_key(stdout, &first, "max_payload"); printf("%u", st->max_payload);
	json_key(stdout, &first, "handlers"); printf("%u", st->handlers);
	if (st->quorum != NULL) {
		const Netd__QuorumStatus *q = st->quorum;

		json_key(stdout, &first, "quorum");
		f2 = 1;
		printf("{");
		json_key(stdout, &f2, "heartbeating"); printf("%u", q->heartbeating);
		json_key(stdout, &f2, "connected"); printf("%u", q->connected);
		json_key(stdout, &f2, "holds"); printf("%u", q->holds);
		json_key(stdout, &f2, "pending"); printf("%s", q->pending ? "true" : "false");
		json_key(stdout, &f2, "fenced"); printf("%s", q->fenced ? "true" : "false");
		json_key(stdout, &f2, "fence_reason"); json_str(stdout, q->fence_reason);
		json_key(stdout, &f2, "delay_ms"); printf("%u", q->delay_ms);
		printf("}");
	}
	json_key(stdout, &first, "links");
	printf("[");
	for (i = 0; i < st->n_links; i++) {
		const Netd__LinkStatus *l = st->links[i];

		f2 = 1;
		printf("%s{", i ? "," : "");
		json_key(stdout, &f2, "node"); printf("%u", l->node);
		json_key(stdout, &f2, "name"); json_str(stdout, l->name);
		json_key(stdout, &f2, "address"); json_str(stdout, l->address);
		json_key(stdout, &f2, "link"); json_str(stdout, link_state_name(l->state));
		json_key(stdout, &f2, "heartbeat"); printf("%s", l->heartbeat ? "true" : "false");
		json_key(stdout, &f2, "last_error"); json_str(stdout, l->last_error);
		json_key(stdout, &f2, "sent"); printf("%llu", (unsigned long long)l->sent);
		json_key(stdout, &f2, "received"); printf("%llu", (unsigned long long)l->received);
		json_key(stdout, &f2, "pending"); printf("%u", l->pending);
		json_key(stdout, &f2, "authenticated"); printf("%s", l->authenticated ? "true" : "false");
		printf("}");
	}
	printf("]}\n");
}

static void
netd_status_text(const Envelope *rep)
{
	const Netd__NetStatus *st = rep->net_status;
	size_t i;

	printf("netd: cluster %s, node %u, hbd %s, %s, %u handlers\n",
	    st->cluster, st->local_node, st->hbd_connected ? "connected" :
	    "not connected", st->auth ? "authenticated links" : "no cluster key",
	    st->handlers);
	if (st->quorum != NULL)
		printf("quorum: %u heartbeating, %u connected, %u holds%s%s%s\n",
		    st->quorum->heartbeating, st->quorum->connected,
		    st->quorum->holds, st->quorum->pending ? ", decision pending" : "",
		    st->quorum->fenced ? ", FENCED: " : "",
		    st->quorum->fenced ? st->quorum->fence_reason : "");
	printf("\n  %-4s %-12s %-22s %-10s %-4s %-9s %-9s %-7s %s\n", "NUM", "NODE",
	    "ADDRESS", "LINK", "HB", "SENT", "RECEIVED", "PENDING", "LAST ERROR");
	for (i = 0; i < st->n_links; i++) {
		const Netd__LinkStatus *l = st->links[i];

		printf("  %-4u %-12s %-22s %-10s %-4s %-9llu %-9llu %-7u %s\n",
		    l->node, l->name, l->address, link_state_name(l->state),
		    l->heartbeat ? "up" : "down", (unsigned long long)l->sent,
		    (unsigned long long)l->received, l->pending, l->last_error);
	}
}

int
cmd_net_status(struct o2ctl *ctl, int argc, char **argv)
{
	(void)argv;
	if (argc != 1)
		return EX_USAGE;
	return ctl_show(ctl, "netd", MSG_TYPE__MSG_NETD_STATUS,
	    ENVELOPE__PAYLOAD_NET_STATUS, netd_status_json, netd_status_text);
}

/* The status net-echo answers: a checksum, so a sender can tell it got
 * the answer to exactly the bytes it sent. FNV-1a, 31 bits. */
static int32_t
echo_status(const uint8_t *p, size_t len)
{
	uint32_t h = 2166136261u;
	size_t i;

	for (i = 0; i < len; i++)
		h = (h ^ p[i]) * 16777619u;
	return (int32_t)(h & 0x7fffffff);
}

static uint64_t
get64(const uint8_t *p)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

static void
put64(uint8_t *p, uint64_t v)
{
	int i;

	for (i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static int
parse_u32(const char *s, uint32_t *out)
{
	unsigned long v;

	if (parse_ulong(s, 0, 0xffffffffUL, &v) == -1)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

/* Per-sender streams seen by net-echo, to catch loss, reordering, duplicates. */
struct stream {
	unsigned	node;
	uint64_t	id;
	uint64_t	next;
};

static volatile sig_atomic_t echo_stop;

static void
on_echo_signal(int sig)
{
	(void)sig;
	echo_stop = 1;
}

static int
simple_netd_call(struct o2ctl *ctl, int fd, Envelope *req)
{
	Envelope *rep;
	int rc = 0;

	if (ipc_sync_call(fd, req, &rep, ctl->timeout_ms) == -1) {
		fprintf(stderr, "o2ctl: netd: %s\n", strerror(errno));
		return -1;
	}
	if (rep->status != 0) {
		fprintf(stderr, "o2ctl: %s\n", rep->error[0] ? rep->error :
		    strerror(rep->status));
		rc = -1;
	}
	envelope__free_unpacked(rep, NULL);
	return rc;
}

/*
 * net-echo: register a handler and answer every message with the
 * payload's checksum as status and the payload itself (or, with
 * --reply-size N, N zero bytes) as reply; check that each sender's
 * stream arrives in order, without gaps or repeats.
 */
int
cmd_net_echo(struct o2ctl *ctl, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "type", required_argument, NULL, 't' },
		{ "key", required_argument, NULL, 'k' },
		{ "count", required_argument, NULL, 'c' },
		{ "no-reply", no_argument, NULL, 'N' },
		{ "max-len", required_argument, NULL, 'm' },
		{ "reply-size", required_argument, NULL, 'r' },
		{ NULL, 0, NULL, 0 },
	};
	Envelope req = ENVELOPE__INIT, *ev;
	Netd__NetRegister reg = NETD__NET_REGISTER__INIT;
	struct stream *streams = NULL;
	size_t nstreams = 0, i;
	uint64_t received = 0, disorder = 0, dups = 0;
	unsigned long count = 0, reply_size = 0;
	uint32_t type = ECHO_TYPE, key = ECHO_KEY, maxlen = 0;
	int ch, fd, no_reply = 0, fixed_size = 0;
	uint8_t *zeros = NULL;
	struct pollfd pfd;

	optind = 0;
	while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (ch) {
		case 't': if (parse_u32(optarg, &type) == -1) return EX_USAGE; break;
		case 'k': if (parse_u32(optarg, &key) == -1) return EX_USAGE; break;
		case 'm': if (parse_u32(optarg, &maxlen) == -1) return EX_USAGE; break;
		case 'c':
			if (parse_ulong(optarg, 10, 1UL << 40, &count) == -1)
				return EX_USAGE;
			break;
		case 'N': no_reply = 1; break;
		case 'r':
			if (parse_ulong(optarg, 10, IPC_FRAME_MAX / 2, &reply_size) == -1)
				return EX_USAGE;
			fixed_size = 1;
			break;
		default: return EX_USAGE;
		}
	}
	if (optind != argc)
		return EX_USAGE;
	if ((fd = ctl_connect(ctl, "netd")) == -1)
		return EX_DOWN;
	reg.type = type;
	reg.key = key;
	reg.max_len = maxlen;
	req.type = MSG_TYPE__MSG_NETD_REGISTER;
	req.payload_case = ENVELOPE__PAYLOAD_NET_REGISTER;
	req.net_register = &reg;
	if (simple_netd_call(ctl, fd, &req) == -1) {
		close(fd);
		return EX_FAIL;
	}
	zeros = xcalloc(reply_size + 1, 1);
	signal(SIGTERM, on_echo_signal);
	signal(SIGINT, on_echo_signal);
	printf("echoing type %u key 0x%08x\n", type, key);
	fflush(stdout);
	pfd.fd = fd;
	pfd.events = POLLIN;
	while (!echo_stop && (count == 0 || received < count)) {
		if (poll(&pfd, 1, 200) <= 0)
			continue;
		if (ipc_sync_recv(fd, &ev, -1) == -1) {
			fprintf(stderr, "o2ctl: netd: %s\n", strerror(errno));
			break;
		}
		if (ev->kind != KIND__KIND_EVENT ||
		    ev->payload_case != ENVELOPE__PAYLOAD_NET_MESSAGE) {
			envelope__free_unpacked(ev, NULL);
			continue;
		}
		const Netd__NetMessage *m = ev->net_message;

		received++;
		if (m->payload.len >= STREAM_HDR) {
			uint64_t id = get64(m->payload.data), seq = get64(m->payload.data + 8);

			for (i = 0; i < nstreams; i++)
				if (streams[i].node == m->from && streams[i].id == id)
					break;
			if (i == nstreams) {
				streams = xrealloc(streams, (nstreams + 1) * sizeof(*streams));
				/* Short messages carry no header: a stream may
				 * start past 0. Losses then show in the totals. */
				streams[i].node = m->from;
				streams[i].id = id;
				streams[i].next = seq;
				nstreams++;
			}
			if (seq < streams[i].next)
				dups++;
			else if (seq > streams[i].next)
				disorder++;
			streams[i].next = seq + 1;
		}
		if (!no_reply && netd_answer_fd(fd, m->handle,
		    echo_status(m->payload.data, m->payload.len),
		    fixed_size ? zeros : m->payload.data,
		    fixed_size ? reply_size : m->payload.len) == -1) {
			envelope__free_unpacked(ev, NULL);
			break;
		}
		envelope__free_unpacked(ev, NULL);
	}
	if (ctl->json)
		printf("{\"received\":%llu,\"streams\":%zu,\"out_of_order\":%llu,"
		    "\"duplicates\":%llu}\n", (unsigned long long)received, nstreams,
		    (unsigned long long)disorder, (unsigned long long)dups);
	else
		printf("received %llu messages in %zu streams: %llu out of order, "
		    "%llu duplicates\n", (unsigned long long)received, nstreams,
		    (unsigned long long)disorder, (unsigned long long)dups);
	fflush(stdout);
	free(streams);
	free(zeros);
	close(fd);
	return disorder == 0 && dups == 0 ? EX_OK : EX_FAIL;
}

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One request of net-send, until its answer is checked. */
struct sent {
	size_t	 len;
	int	 done;
};

struct send_totals {
	uint64_t	ok, bad_status, bad_payload, dup_answers;
	uint64_t	errs[256];
};

static void
fill_payload(uint8_t *p, size_t len, uint64_t stream, uint64_t seq)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (uint8_t)(seq * 7 + i * 13);
	if (len >= STREAM_HDR) {
		put64(p, stream);
		put64(p + 8, seq);
	}
}

/* Check one answer against what we sent; the payload is rebuilt from seq. */
static void
check_result(const Netd__NetResult *r, int err, size_t len, uint64_t stream,
    uint64_t seq, uint8_t *scratch, int echo, struct send_totals *t)
{
	if (err != 0) {
		t->errs[err < 256 && err > 0 ? err : 255]++;
		return;
	}
	fill_payload(scratch, len, stream, seq);
	if (r == NULL || r->status != echo_status(scratch, len)) {
		t->bad_status++;
		return;
	}
	if (echo && (r->payload.len != len ||
	    (len > 0 && memcmp(r->payload.data, scratch, len) != 0))) {
		t->bad_payload++;
		return;
	}
	t->ok++;
}

/*
 * net-send NODE|all: send COUNT messages (or one of every size in a
 * range), WINDOW of them in flight at once, and check every answer:
 * the status net-echo computes and the echoed bytes. Exit 0 when every
 * answer was right, or with --expect-errno E when every one failed with E.
 */
int
cmd_net_send(struct o2ctl *ctl, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "type", required_argument, NULL, 't' },
		{ "key", required_argument, NULL, 'k' },
		{ "size", required_argument, NULL, 's' },
		{ "sizes", required_argument, NULL, 'S' },
		{ "count", required_argument, NULL, 'c' },
		{ "window", required_argument, NULL, 'w' },
		{ "no-echo-check", no_argument, NULL, 'E' },
		{ "expect-errno", required_argument, NULL, 'x' },
		{ NULL, 0, NULL, 0 },
	};
	uint32_t type = ECHO_TYPE, key = ECHO_KEY;
	unsigned long node = 0, size = 64, lo = 0, hi = 0, count = 1, window = 64, v;
	int all = 0, sizes = 0, echo = 1, expect = 0, ch, fd, rc = EX_OK, first;
	struct send_totals t;
	struct sent *sent;
	uint8_t *payload, *scratch;
	uint64_t stream, next = 0, answered = 0, inflight = 0;
	double t0, dt;
	char *dash;
	size_t i;

	memset(&t, 0, sizeof(t));
	optind = 0;
	while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (ch) {
		case 't': if (parse_u32(optarg, &type) == -1) return EX_USAGE; break;
		case 'k': if (parse_u32(optarg, &key) == -1) return EX_USAGE; break;
		case 's': if (parse_ulong(optarg, 10, 1UL << 24, &size) == -1) return EX_USAGE; break;
		case 'S':
			if ((dash = strchr(optarg, '-')) == NULL)
				return EX_USAGE;
			*dash = '\0';
			if (parse_ulong(optarg, 10, 1UL << 24, &lo) == -1 ||
			    parse_ulong(dash + 1, 10, 1UL << 24, &hi) == -1 || hi < lo)
				return EX_USAGE;
			sizes = 1;
			break;
		case 'c': if (parse_ulong(optarg, 10, 1UL << 32, &count) == -1) return EX_USAGE; break;
		case 'w': if (parse_ulong(optarg, 10, 1UL << 20, &window) == -1 || window == 0) return EX_USAGE; break;
		case 'E': echo = 0; break;
		case 'x': if (parse_ulong(optarg, 10, 255, &v) == -1) return EX_USAGE; expect = (int)v; break;
		default: return EX_USAGE;
		}
	}
	if (optind != argc - 1)
		return EX_USAGE;
	if (strcmp(argv[optind], "all") == 0)
		all = 1;
	else if (parse_ulong(argv[optind], 10, 254, &node) == -1)
		return EX_USAGE;
	if (sizes)
		count = hi - lo + 1;
	if ((fd = ctl_connect(ctl, "netd")) == -1)
		return EX_DOWN;
	sent = xcalloc(count + 1, sizeof(*sent));
	payload = xmalloc((sizes ? hi : size) + 1);
	scratch = xmalloc((sizes ? hi : size) + 1);
	stream = ((uint64_t)getpid() << 32) ^ (uint64_t)time(NULL);
	t0 = now_s();
	while (answered < count) {
		while (next < count && inflight < window) {
			Envelope req = ENVELOPE__INIT;
			Netd__NetSend ns = NETD__NET_SEND__INIT;
			Netd__NetSendAll na = NETD__NET_SEND_ALL__INIT;
			size_t len = sizes ? lo + next : size;

			fill_payload(payload, len, stream, next);
			req.kind = KIND__KIND_REQUEST;
			req.id = next + 1;	/* our request ids are seq + 1 */
			if (all) {
				na.type = type;
				na.key = key;
				na.payload.data = payload;
				na.payload.len = len;
				req.type = MSG_TYPE__MSG_NETD_SEND_ALL;
				req.payload_case = ENVELOPE__PAYLOAD_NET_SEND_ALL;
				req.net_send_all = &na;
			} else {
				ns.node = (uint32_t)node;
				ns.type = type;
				ns.key = key;
				ns.payload.data = payload;
				ns.payload.len = len;
				req.type = MSG_TYPE__MSG_NETD_SEND;
				req.payload_case = ENVELOPE__PAYLOAD_NET_SEND;
				req.net_send = &ns;
			}
			if (ipc_sync_send(fd, &req) == -1) {
				fprintf(stderr, "o2ctl: netd: %s\n", strerror(errno));
				rc = EX_DOWN;
				goto out;
			}
			sent[next].len = len;
			next++;
			inflight++;
		}
		Envelope *rep;

		if (ipc_sync_recv(fd, &rep, ctl->timeout_ms) == -1) {
			fprintf(stderr, "o2ctl: netd: %s (%llu of %lu answered)\n",
			    strerror(errno), (unsigned long long)answered, count);
			rc = EX_DOWN;
			goto out;
		}
		if (rep->kind != KIND__KIND_REPLY || rep->id == 0 || rep->id > next) {
			envelope__free_unpacked(rep, NULL);
			continue;
		}
		i = rep->id - 1;
		if (sent[i].done) {
			t.dup_answers++;
			envelope__free_unpacked(rep, NULL);
			continue;
		}
		sent[i].done = 1;
		answered++;
		inflight--;
		if (all && rep->payload_case == ENVELOPE__PAYLOAD_NET_RESULTS) {
			size_t k;

			for (k = 0; k < rep->net_results->n_results; k++)
				check_result(rep->net_results->results[k],
				    rep->net_results->results[k]->err, sent[i].len,
				    stream, i, scratch, echo, &t);
		} else {
			check_result(rep->payload_case == ENVELOPE__PAYLOAD_NET_RESULT ?
			    rep->net_result : NULL, rep->status, sent[i].len, stream,
			    i, scratch, echo, &t);
		}
		envelope__free_unpacked(rep, NULL);
	}
out:
	dt = now_s() - t0;
	if (ctl->json) {
		printf("{\"sent\":%llu,\"answered\":%llu,\"ok\":%llu,\"bad_status\":%llu,"
		    "\"bad_payload\":%llu,\"duplicate_answers\":%llu,\"seconds\":%.3f,"
		    "\"errors\":{", (unsigned long long)next, (unsigned long long)answered,
		    (unsigned long long)t.ok, (unsigned long long)t.bad_status,
		    (unsigned long long)t.bad_payload, (unsigned long long)t.dup_answers, dt);
		first = 1;
		for (i = 0; i < 256; i++)
			if (t.errs[i] > 0) {
				printf("%s\"%s\":%llu", first ? "" : ",", strerror((int)i),
				    (unsigned long long)t.errs[i]);
				first = 0;
			}
		printf("}}\n");
	} else {
		printf("sent %llu, answered %llu in %.3f s: %llu ok, %llu bad status, "
		    "%llu bad payload, %llu duplicate answers", (unsigned long long)next,
		    (unsigned long long)answered, dt, (unsigned long long)t.ok,
		    (unsigned long long)t.bad_status, (unsigned long long)t.bad_payload,
		    (unsigned long long)t.dup_answers);
		for (i = 0; i < 256; i++)
			if (t.errs[i] > 0)
				printf(", %llu %s", (unsigned long long)t.errs[i],
				    strerror((int)i));
		printf("\n");
	}
	if (rc == EX_OK) {
		uint64_t errs = 0;

		for (i = 0; i < 256; i++)
			errs += t.errs[i];
		if (expect != 0)
			rc = t.errs[expect] > 0 && t.errs[expect] == errs && t.ok == 0 &&
			    t.dup_answers == 0 ? EX_OK : EX_FAIL;
		else
			rc = errs == 0 && t.bad_status == 0 && t.bad_payload == 0 &&
			    t.dup_answers == 0 ? EX_OK : EX_FAIL;
	}
	free(sent);
	free(payload);
	free(scratch);
	close(fd);
	return rc;
}

int
cmd_keygen(struct o2ctl *ctl, int argc, char **argv)
{
	char why[512];

	(void)ctl;
	if (argc != 2)
		return EX_USAGE;
	if (auth_keygen(argv[1], why, sizeof(why)) == -1) {
		fprintf(stderr, "o2ctl: keygen: %s\n", why);
		return EX_FAIL;
	}
	printf("wrote a new cluster key to %s (mode 0600); copy it to every "
	    "node as %s\n", argv[1], AUTH_DEFAULT_KEYFILE);
	return EX_OK;
}

/* net-watch: print netd's link and quorum events as they happen. */
static int
print_net_event(struct o2ctl *ctl, const Envelope *ev)
{
	if (ev->payload_case == ENVELOPE__PAYLOAD_LINK_EVENT) {
		const Netd__LinkEvent *le = ev->link_event;

		if (ctl->json) {
			printf("{\"event\":\"link\",\"node\":%u,\"link\":", le->node);
			json_str(stdout, link_state_name(le->state));
			printf(",\"reason\":");
			json_str(stdout, le->reason);
			printf("}\n");
		} else {
			printf("link to node %u %s: %s\n", le->node,
			    link_state_name(le->state), le->reason);
		}
		return 1;
	}
	if (ev->payload_case == ENVELOPE__PAYLOAD_QUORUM_EVENT) {
		const Netd__QuorumEvent *qe = ev->quorum_event;

		if (ctl->json) {
			printf("{\"event\":\"quorum\",\"fenced\":%s,\"reason\":",
			    qe->fenced ? "true" : "false");
			json_str(stdout, qe->reason);
			printf("}\n");
		} else {
			printf("quorum: %s%s\n", qe->fenced ? "FENCED: " : "",
			    qe->reason);
		}
		return 1;
	}
	return 0;
}

int
cmd_net_watch(struct o2ctl *ctl, int argc, char **argv)
{
	unsigned long count = 0;

	if (argc > 2 || (argc == 2 && parse_ulong(argv[1], 10, 1000000, &count) == -1))
		return EX_USAGE;
	return ctl_watch(ctl, "netd", NETD_TOPIC_LINK | NETD_TOPIC_QUORUM, count,
	    print_net_event);
}
