/*
 * Seeds for the harnesses whose inputs are messages: one valid input of
 * each kind a harness takes, written to OUTDIR/<harness>/ (the build
 * does this; tests/fuzz/ondisk-seeds.sh makes the on-disk ones).
 * Usage: seeds OUTDIR
 */
#include <sys/stat.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "envelope.pb-c.h"
#include "dlmwire.pb-c.h"
#include "fsdwire.pb-c.h"

static const char *outdir;

struct buf {
	uint8_t	d[16384];
	size_t	n;
};

static void
put(struct buf *b, const void *p, size_t n)
{
	if (b->n + n > sizeof(b->d))
		abort();
	memcpy(b->d + b->n, p, n);
	b->n += n;
}

static void
put8(struct buf *b, unsigned v)
{
	uint8_t c = (uint8_t)v;

	put(b, &c, 1);
}

static void
put16(struct buf *b, unsigned v)
{
	put8(b, v >> 8);
	put8(b, v);
}

static void
put32(struct buf *b, uint32_t v)
{
	put16(b, v >> 16);
	put16(b, v & 0xffff);
}

static void
save(const char *harness, const char *name, const struct buf *b)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", outdir, harness);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%s/%s", outdir, harness, name);
	if ((f = fopen(path, "w")) == NULL || fwrite(b->d, 1, b->n, f) != b->n ||
	    fclose(f) == EOF) {
		perror(path);
		exit(1);
	}
}

/*
 * An Envelope of type t with its payload oneof field `field` (0: none)
 * set to sub, or to an empty message of that field's type.
 */
static size_t
envelope(MsgType t, Kind kind, uint64_t id, unsigned field, ProtobufCMessage *sub, uint8_t *out)
{
	Envelope env = ENVELOPE__INIT;
	const ProtobufCFieldDescriptor *f;
	static uint8_t empty[4096];
	const ProtobufCMessageDescriptor *md;
	size_t n;

	env.type = t;
	env.kind = kind;
	env.id = id;
	if (field != 0) {
		f = protobuf_c_message_descriptor_get_field(&envelope__descriptor, field);
		md = f->descriptor;
		if (sub == NULL) {
			memset(empty, 0, sizeof(empty));
			md->message_init((ProtobufCMessage *)empty);
			sub = (ProtobufCMessage *)empty;
		}
		env.payload_case = (Envelope__PayloadCase)field;
		memcpy((char *)&env + f->offset, &sub, sizeof(sub));
	}
	n = envelope__pack(&env, out);
	return n;
}

/* Messages for the daemon harnesses: a 2-byte length before each Envelope. */
static void
add_msg(struct buf *b, MsgType t, unsigned field, ProtobufCMessage *sub)
{
	static uint64_t id;
	uint8_t e[4096];
	size_t n = envelope(t, KIND__KIND_REQUEST, ++id, field, sub, e);

	put16(b, (unsigned)n);
	put(b, e, n);
}

static void
one(const char *harness, const char *name, MsgType t, unsigned field, ProtobufCMessage *sub)
{
	struct buf b = { .n = 0 };

	add_msg(&b, t, field, sub);
	save(harness, name, &b);
}

static void
nmd_seeds(void)
{
	Nmd__SetAttr sa = NMD__SET_ATTR__INIT;
	Nmd__ItemPath node4 = NMD__ITEM_PATH__INIT, region = NMD__ITEM_PATH__INIT;
	Nmd__RegionAcquire ra = NMD__REGION_ACQUIRE__INIT;
	Nmd__Pin pin = NMD__PIN__INIT;
	Nmd__SetAttr num = NMD__SET_ATTR__INIT;
	struct buf b = { .n = 0 };

	sa.path = "cluster/lc/idle_timeout_ms";
	sa.value = "40000";
	node4.path = "cluster/lc/node/node4";
	region.path = "cluster/lc/heartbeat/0123456789ABCDEF0123456789ABCDEF";
	ra.name = "0123456789ABCDEF0123456789ABCDEF";
	ra.block_bytes = 512;
	ra.start_block = 100;
	ra.blocks = 255;
	ra.dev = "/dev/null";
	pin.node = "node2";
	pin.kind = "link";
	one("nmd_api", "get-config", MSG_TYPE__MSG_NMD_GET_CONFIG, 0, NULL);
	one("nmd_api", "set-attr", MSG_TYPE__MSG_NMD_SET_ATTR, 101, &sa.base);
	one("nmd_api", "reload", MSG_TYPE__MSG_NMD_RELOAD, 0, NULL);
	one("nmd_api", "region-acquire", MSG_TYPE__MSG_NMD_REGION_ACQUIRE, 104, &ra.base);
	one("nmd_api", "region-release", MSG_TYPE__MSG_NMD_REGION_RELEASE, 102, &region.base);
	one("nmd_api", "pin", MSG_TYPE__MSG_NMD_PIN, 106, &pin.base);
	/* a node made, numbered, pinned and removed */
	num.path = "cluster/lc/node/node4/num";
	num.value = "4";
	add_msg(&b, MSG_TYPE__MSG_NMD_MKDIR, 102, &node4.base);
	add_msg(&b, MSG_TYPE__MSG_NMD_SET_ATTR, 101, &num.base);
	pin.node = "node4";
	add_msg(&b, MSG_TYPE__MSG_NMD_PIN, 106, &pin.base);
	add_msg(&b, MSG_TYPE__MSG_NMD_UNPIN, 106, &pin.base);
	add_msg(&b, MSG_TYPE__MSG_NMD_RMDIR, 102, &node4.base);
	save("nmd_api", "node-life", &b);
}

static void
hbd_seeds(void)
{
	Hbd__HbSubscribe sub = HBD__HB_SUBSCRIBE__INIT;
	Hbd__RegisterWriter rw = HBD__REGISTER_WRITER__INIT;
	Hbd__HbGuard g = HBD__HB_GUARD__INIT;
	Hbd__FencedEvent fe = HBD__FENCED_EVENT__INIT;
	struct buf b = { .n = 0 };

	sub.role = HBD__ROLE__ROLE_FS;
	rw.what = "fsd";
	g.on = 1;
	g.what = "dlmd";
	fe.reason = "quorum";
	one("hbd_api", "subscribe", MSG_TYPE__MSG_HBD_SUBSCRIBE, 200, &sub.base);
	one("hbd_api", "ack", MSG_TYPE__MSG_HBD_EVENT_ACK, 201, NULL);
	one("hbd_api", "guard", MSG_TYPE__MSG_HBD_GUARD, 207, &g.base);
	one("hbd_api", "status", MSG_TYPE__MSG_HBD_STATUS, 0, NULL);
	/* a writer registers, the node is fenced (the writer killed), then cleared */
	add_msg(&b, MSG_TYPE__MSG_HBD_SUBSCRIBE, 200, &sub.base);
	add_msg(&b, MSG_TYPE__MSG_HBD_REGISTER_WRITER, 202, &rw.base);
	add_msg(&b, MSG_TYPE__MSG_HBD_FENCE, 206, &fe.base);
	add_msg(&b, MSG_TYPE__MSG_HBD_CLEAR_FENCE, 0, NULL);
	save("hbd_api", "fence-cycle", &b);
}

static void
netd_api_seeds(void)
{
	Netd__NetRegister reg = NETD__NET_REGISTER__INIT;
	Netd__NetSend send = NETD__NET_SEND__INIT;
	Netd__NetSendAll all = NETD__NET_SEND_ALL__INIT;
	Netd__NetReply rep = NETD__NET_REPLY__INIT;
	struct buf b = { .n = 0 };

	reg.type = 600;
	reg.key = 0x1234;
	send.node = 2;
	send.type = 600;
	send.key = 0x1234;
	send.payload.data = (uint8_t *)"query";
	send.payload.len = 5;
	all.type = 600;
	all.key = 0x1234;
	all.payload = send.payload;
	rep.handle = 1;
	one("netd_api", "status", MSG_TYPE__MSG_NETD_STATUS, 0, NULL);
	one("netd_api", "send", MSG_TYPE__MSG_NETD_SEND, 301, &send.base);
	one("netd_api", "send-all", MSG_TYPE__MSG_NETD_SEND_ALL, 302, &all.base);
	one("netd_api", "reply", MSG_TYPE__MSG_NETD_REPLY, 306, &rep.base);
	add_msg(&b, MSG_TYPE__MSG_NETD_REGISTER, 300, &reg.base);
	add_msg(&b, MSG_TYPE__MSG_NETD_SEND, 301, &send.base);
	send.node = 1;
	add_msg(&b, MSG_TYPE__MSG_NETD_SEND, 301, &send.base);
	add_msg(&b, MSG_TYPE__MSG_NETD_UNREGISTER, 300, &reg.base);
	save("netd_api", "register-send", &b);
}

static void
dlmd_api_seeds(void)
{
	Dlmd__Domain dom = DLMD__DOMAIN__INIT;
	Dlmd__LockRequest lr = DLMD__LOCK_REQUEST__INIT;
	Dlmd__UnlockRequest ur = DLMD__UNLOCK_REQUEST__INIT;
	struct buf b = { .n = 0 };

	dom.name = "fuzz";
	lr.domain = "fuzz";
	lr.name.data = (uint8_t *)"Mfuzz-resource";
	lr.name.len = 14;
	lr.mode = DLMD__MODE__MODE_EX;
	lr.flags = 0x100;
	ur.domain = "fuzz";
	ur.lockid = 1;
	one("dlmd_api", "status", MSG_TYPE__MSG_DLMD_STATUS, 0, NULL);
	one("dlmd_api", "dump", MSG_TYPE__MSG_DLMD_DUMP, 400, &dom.base);
	add_msg(&b, MSG_TYPE__MSG_DLMD_JOIN, 400, &dom.base);
	add_msg(&b, MSG_TYPE__MSG_DLMD_LOCK, 402, &lr.base);
	lr.flags = 0x100 | 0x400;
	lr.mode = DLMD__MODE__MODE_PR;
	lr.lockid = 1;
	add_msg(&b, MSG_TYPE__MSG_DLMD_LOCK, 402, &lr.base);
	add_msg(&b, MSG_TYPE__MSG_DLMD_UNLOCK, 404, &ur.base);
	add_msg(&b, MSG_TYPE__MSG_DLMD_LEAVE, 400, &dom.base);
	save("dlmd_api", "join-lock-unlock-leave", &b);
}

/* dlmd's wire messages: type - 500, sender, length, Msg. */
static void
dlmd_wire_seeds(void)
{
	static const unsigned types[] = { 500, 501, 502, 503, 504, 505, 506, 509, 510,
	    511, 512, 513, 515, 517, 518, 523, 524, 525 };
	Dlmwire__Msg m = DLMWIRE__MSG__INIT;
	uint8_t packed[1024];
	struct buf b;
	char name[32];
	size_t i, n;

	m.node = 2;
	m.name.data = (uint8_t *)"Mfuzz-resource";
	m.name.len = 14;
	m.cookie = 2ull << 56 | 7;
	m.mode = 5;
	n = dlmwire__msg__pack(&m, packed);
	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		b.n = 0;
		put8(&b, types[i] - 500);
		put8(&b, 2);
		put16(&b, (unsigned)n);
		put(&b, packed, n);
		snprintf(name, sizeof(name), "type-%u", types[i]);
		save("dlmd_wire", name, &b);
	}
}

/* netd's frame header, big-endian (netd/wire.c). */
static void
wire_hdr(struct buf *b, unsigned magic, uint32_t type, uint32_t msg_num, uint32_t len)
{
	put16(b, magic);
	put16(b, 0);		/* flags */
	put32(b, type);
	put32(b, 0x1234);	/* key */
	put32(b, msg_num);
	put32(b, 0);		/* sys_status */
	put32(b, 0);		/* status */
	put32(b, len);
	put32(b, 0);
	put32(b, 0);		/* seq, high and low */
	put32(b, 0);
}

static void
netd_wire_seeds(void)
{
	Netd__Handshake hs = NETD__HANDSHAKE__INIT;
	uint8_t packed[256];
	struct buf b = { .n = 0 };
	size_t n;

	hs.protocol_version = 1;
	hs.cluster = "lc";
	hs.from_node = 2;
	hs.to_node = 1;
	hs.hb_write_timeout_ms = 60000;
	hs.idle_timeout_ms = 30000;
	hs.keepalive_delay_ms = 2000;
	hs.reconnect_delay_ms = 2000;
	n = netd__handshake__pack(&hs, packed);
	put8(&b, 0);		/* no cluster key */
	wire_hdr(&b, 0xfa59, 0, 0, (uint32_t)n);
	put(&b, packed, n);
	wire_hdr(&b, 0xfa55, 600, 1, 5);
	put(&b, "query", 5);
	wire_hdr(&b, 0xfa56, 600, 1, 0);
	wire_hdr(&b, 0xfa57, 0, 0, 0);
	wire_hdr(&b, 0xfa58, 0, 0, 0);
	save("netd_wire", "plain-link", &b);

	hs.auth = 1;
	hs.nonce.data = (uint8_t *)"their nonce, also 32 bytes long";
	hs.nonce.len = 32;
	n = netd__handshake__pack(&hs, packed);
	b.n = 0;
	put8(&b, 1);		/* a cluster key */
	wire_hdr(&b, 0xfa59, 0, 0, (uint32_t)n);
	put(&b, packed, n);
	save("netd_wire", "keyed-handshake", &b);
}

/* IPC frames: a 4-byte length before each Envelope. */
static void
frame(struct buf *b, MsgType t, Kind kind, uint64_t id, unsigned field, ProtobufCMessage *sub)
{
	uint8_t e[4096];
	size_t n = envelope(t, kind, id, field, sub, e);

	put32(b, (uint32_t)n);
	put(b, e, n);
}

static void
ipc_seeds(void)
{
	Netd__NetRegister reg = NETD__NET_REGISTER__INIT;
	Subscribe sub = SUBSCRIBE__INIT;
	struct buf b = { .n = 0 };

	reg.type = 600;
	sub.topics = 3;
	put8(&b, 0);		/* to the server */
	frame(&b, MSG_TYPE__MSG_PING, KIND__KIND_REQUEST, 1, 0, NULL);
	frame(&b, MSG_TYPE__MSG_SUBSCRIBE, KIND__KIND_REQUEST, 2, 11, &sub.base);
	frame(&b, MSG_TYPE__MSG_NETD_STATUS, KIND__KIND_REQUEST, 3, 0, NULL);
	frame(&b, MSG_TYPE__MSG_NETD_REGISTER, KIND__KIND_ONE_WAY, 0, 300, &reg.base);
	frame(&b, MSG_TYPE__MSG_NETD_REGISTER, KIND__KIND_REQUEST, 4, 300, &reg.base);
	save("ipc", "requests", &b);
	b.n = 0;
	put8(&b, 1);		/* to the client */
	frame(&b, MSG_TYPE__MSG_PING, KIND__KIND_REPLY, 1, 10, NULL);
	frame(&b, MSG_TYPE__MSG_NETD_LINK_EVENT, KIND__KIND_EVENT, 0, 308, NULL);
	frame(&b, MSG_TYPE__MSG_PING, KIND__KIND_REPLY, 2, 0, NULL);
	save("ipc", "replies-events", &b);
}

/*
 * A JBD2 log of 512-byte blocks (fsd/journal.c's format): superblock
 * v2, transaction 5 logging block 100, a revoke of it in transaction 6,
 * and transaction 6 logging it again.
 */
static void
journal_seeds(void)
{
	static const uint8_t uuid[16] = "fuzz journal id";
	uint8_t blk[8][512];
	struct buf b = { .n = 0 };
	struct buf h;
	int i;

	memset(blk, 0, sizeof(blk));
	h.n = 0;		/* superblock */
	put32(&h, 0xc03b3998);
	put32(&h, 4);
	put32(&h, 0);
	put32(&h, 512);		/* s_blocksize */
	put32(&h, 128);		/* s_maxlen */
	put32(&h, 1);		/* s_first */
	put32(&h, 5);		/* s_sequence */
	put32(&h, 1);		/* s_start */
	memcpy(blk[0], h.d, h.n);
	memcpy(blk[0] + 48, uuid, 16);
	for (i = 0; i < 2; i++) {
		int at = i == 0 ? 1 : 5;
		uint32_t seq = 5 + (uint32_t)i;

		h.n = 0;	/* descriptor: one tag, its UUID, last */
		put32(&h, 0xc03b3998);
		put32(&h, 1);
		put32(&h, seq);
		put32(&h, 100);
		put32(&h, 8);
		memcpy(blk[at], h.d, h.n);
		memcpy(blk[at] + h.n, uuid, 16);
		memset(blk[at + 1], 0x5a, 512);
		h.n = 0;	/* commit */
		put32(&h, 0xc03b3998);
		put32(&h, 2);
		put32(&h, seq);
		memcpy(blk[at + 2], h.d, h.n);
	}
	h.n = 0;		/* revoke of block 100, in transaction 6 */
	put32(&h, 0xc03b3998);
	put32(&h, 5);
	put32(&h, 6);
	put32(&h, 20);
	put32(&h, 100);
	memcpy(blk[4], h.d, h.n);
	put8(&b, 0);		/* 512-byte blocks */
	put(&b, blk, sizeof(blk));
	save("fsd_journal", "two-transactions-revoke", &b);
}

static void
fsd_seeds(void)
{
	Fsdwire__PlockQuery q = FSDWIRE__PLOCK_QUERY__INIT;
	struct buf b = { .n = 0 };

	one("fsd_ctl", "status", MSG_TYPE__MSG_FSD_STATUS, 0, NULL);
	one("fsd_ctl", "ping", MSG_TYPE__MSG_PING, 0, NULL);
	q.ino = 4242;
	q.write = 1;
	q.start = 0;
	q.end = 4095;
	b.n = fsdwire__plock_query__pack(&q, b.d);
	save("fsd_plock", "write-query", &b);
}

int
main(int argc, char *argv[])
{
	if (argc != 2) {
		fprintf(stderr, "usage: seeds OUTDIR\n");
		return 2;
	}
	outdir = argv[1];
	mkdir(outdir, 0755);
	nmd_seeds();
	hbd_seeds();
	netd_api_seeds();
	dlmd_api_seeds();
	dlmd_wire_seeds();
	netd_wire_seeds();
	ipc_seeds();
	journal_seeds();
	fsd_seeds();
	return 0;
}
