/*
 * netd: messaging between the nodes of a cluster, for the local daemons
 * (o2net's job), and quorum (o2quo's). One TCP link per node pair; local
 * clients register (type, key) handlers on netd.sock and send RPCs to
 * other nodes through it.
 */
#ifndef NETD_H
#define NETD_H

#include <sys/queue.h>
#include <stddef.h>
#include <stdint.h>

#include "clusterconf.h"
#include "envelope.pb-c.h"
#include "netdanswer.h"

struct event_base;
struct event;
struct stream;
struct ipc_server;
struct ipc_conn;
struct nmd_client;

#define NETD_PROTOCOL_VERSION	1
#define LINK_OUTQ_MAX		(256u << 20)	/* queued to one peer: past it the peer is stuck, drop the link */
#define NETD_HANDSHAKE_MAX	1024u	/* Handshake and AuthProof frames */

/* Event topics of netd.sock (Subscribe.topics bits). */
#define NETD_TOPIC_LINK		0x1u
#define NETD_TOPIC_QUORUM	0x2u

/* ------------------------------------------------------------ wire.c */

/*
 * Every frame between two netds: this header (big-endian on the wire),
 * `len` payload bytes, then with a cluster key a 32-byte MAC over both.
 */
#define WIRE_HDR_LEN		40
#define WIRE_MAC_LEN		32

enum wire_magic {
	WIRE_REQUEST	= 0xfa55,	/* a message for a (type, key) handler */
	WIRE_REPLY	= 0xfa56,	/* its status, echoing msg_num */
	WIRE_KA_REQ	= 0xfa57,	/* keepalive */
	WIRE_KA_RESP	= 0xfa58,
	WIRE_HANDSHAKE	= 0xfa59,	/* payload: netd.Handshake */
	WIRE_AUTH	= 0xfa5a,	/* payload: netd.AuthProof */
};

#define WIRE_F_MAC	0x0001u

/* Transport status in replies (o2net's sys_status). */
enum wire_sys {
	WIRE_SYS_OK		= 0,
	WIRE_SYS_NO_HANDLER	= 1,	/* -> ENOPROTOOPT */
	WIRE_SYS_OVERFLOW	= 2,	/* -> EOVERFLOW */
	WIRE_SYS_HANDLER_GONE	= 3,	/* the handler process went away: ECONNRESET */
};

struct wire_hdr {
	uint16_t	magic;
	uint16_t	flags;
	uint32_t	type;
	uint32_t	key;
	uint32_t	msg_num;
	uint32_t	sys_status;
	int32_t		status;
	uint32_t	len;
	uint64_t	seq;		/* with a key: per direction, from 1 */
};

void	wire_hdr_encode(const struct wire_hdr *, uint8_t out[WIRE_HDR_LEN]);
void	wire_hdr_decode(const uint8_t in[WIRE_HDR_LEN], struct wire_hdr *);
/* The largest payload a frame of this magic may carry. */
size_t	wire_max_len(uint16_t magic);
/*
 * Look for one whole frame at the front of the len bytes at buf. 1: it
 * is the first *flen bytes; 0: not all there yet, *flen bytes needed
 * (the header's length once it is there); -1: the stream is bad (why
 * says how) and the link must close. mac_required: a cluster key is in
 * use and the session is keyed.
 */
int	wire_peek(const uint8_t *buf, size_t len, int mac_required,
	    struct wire_hdr *, size_t *flen, char *why, size_t whylen);
int	wire_errno(uint32_t sys_status);
const char *wire_magic_name(uint16_t magic);

/* ------------------------------------------------------------ auth.c */

#define AUTH_KEY_LEN	32
#define AUTH_NONCE_LEN	32
#define AUTH_DEFAULT_KEYFILE	"/etc/ocfs2/authkey"

struct auth_session {
	uint8_t		tx_key[AUTH_KEY_LEN];
	uint8_t		rx_key[AUTH_KEY_LEN];
	uint64_t	tx_seq;		/* last sent */
	uint64_t	rx_seq;		/* last accepted */
};

int	auth_init(void);
/* Read a key file (0600, 32-1024 bytes); 0 ok, -1 with why filled. */
int	auth_load_key(const char *path, uint8_t key[AUTH_KEY_LEN], char *why, size_t len);
int	auth_keygen(const char *path, char *why, size_t len);
void	auth_nonce(uint8_t nonce[AUTH_NONCE_LEN]);
/* Proof that node `from` knows key, bound to both nonces of the link. */
void	auth_proof(const uint8_t key[AUTH_KEY_LEN], unsigned from, unsigned to,
	    const uint8_t from_nonce[AUTH_NONCE_LEN],
	    const uint8_t to_nonce[AUTH_NONCE_LEN], uint8_t out[AUTH_KEY_LEN]);
int	auth_proof_ok(const uint8_t a[AUTH_KEY_LEN], const uint8_t b[AUTH_KEY_LEN]);
/* Per-direction MAC keys of one link, as seen by node `self`. */
void	auth_session_init(struct auth_session *, const uint8_t key[AUTH_KEY_LEN],
	    unsigned self, unsigned peer, const uint8_t self_nonce[AUTH_NONCE_LEN],
	    const uint8_t peer_nonce[AUTH_NONCE_LEN]);
void	auth_mac(const uint8_t key[AUTH_KEY_LEN], const uint8_t *data, size_t len,
	    uint8_t out[WIRE_MAC_LEN]);
/*
 * Check a received frame (header with WIRE_F_MAC, payload, MAC): 0 and
 * the session's rx_seq advanced, or -1 with why ("bad MAC", "replayed").
 */
int	auth_check_frame(struct auth_session *, const uint8_t *frame, size_t flen,
	    const struct wire_hdr *, char *why, size_t whylen);

/* ------------------------------------------------------------ handshake.c */

/* What we tell peers and what they must agree with. */
struct hs_params {
	uint32_t	protocol_version;
	char		cluster[CC_CLUSTER_NAME_MAX + 1];
	unsigned	hb_write_timeout_ms;
	unsigned	idle_timeout_ms;
	unsigned	keepalive_delay_ms;
	unsigned	reconnect_delay_ms;
	int		auth;
};

/* Fill a Handshake (strings point into p; nonce into the caller's buffer). */
void	hs_fill(const struct hs_params *p, unsigned from, unsigned to,
	    const uint8_t *nonce, Netd__Handshake *hs);
/*
 * A peer's Handshake against ours, for the link between `self` and the
 * node we identified as `peer`. 0: agreed; -1: refused, with a log line
 * in why naming both values.
 */
int	hs_check(const struct hs_params *ours, unsigned self, unsigned peer,
	    const Netd__Handshake *theirs, char *why, size_t len);

/* ------------------------------------------------------------ quorum.c */

#define QUO_MAX_NODES	CC_MAX_NODES

/*
 * o2quo's state: H heartbeating nodes, C connected nodes (self counts
 * as connected while we listen), holds while a node's heartbeat and
 * link disagree, and per node a "still up" check due `delay_ms` after
 * its link was lost. Time is passed in, so tests drive it synthetically.
 */
struct quorum {
	unsigned	self;
	unsigned	delay_ms;
	uint8_t		hb[QUO_MAX_NODES];
	uint8_t		conn[QUO_MAX_NODES];
	uint8_t		hold[QUO_MAX_NODES];
	uint64_t	still_up_at[QUO_MAX_NODES];	/* 0: none scheduled */
	unsigned	heartbeating;
	unsigned	connected;
	unsigned	holds;
	int		pending;
	int		fenced;
	char		reason[256];
};

void	quo_init(struct quorum *, unsigned self, unsigned delay_ms);
/* Each returns 1 when it made the decision to fence (reason set), else 0. */
int	quo_hb_up(struct quorum *, unsigned node);
int	quo_hb_down(struct quorum *, unsigned node);
int	quo_conn_up(struct quorum *, unsigned node);
int	quo_conn_err(struct quorum *, unsigned node, uint64_t now_ms);
int	quo_tick(struct quorum *, uint64_t now_ms);	/* runs due still-up checks */
uint64_t quo_next_deadline(const struct quorum *);	/* 0: none */
void	quo_unfence(struct quorum *);

/* ------------------------------------------------------------ refusal.c */

#define REFUSAL_WINDOW_MS	10000
#define REFUSAL_BURST		10	/* lines per source address per window */
#define REFUSAL_SOURCES		32	/* addresses counted apart; others share one */

struct refusal_src {
	int		used;
	uint32_t	addr;		/* network order */
	uint64_t	window_start;
	unsigned	logged;		/* lines in this window */
	unsigned	suppressed;	/* refusals not logged in it */
};

struct refusals {
	struct refusal_src	src[REFUSAL_SOURCES + 1];
};

/* addr NULL: the addresses that shared the last entry. */
typedef void refusal_summary_fn(const uint32_t *addr, unsigned n, uint64_t ms, void *);

void	refusal_init(struct refusals *);
/* 1: log this refusal from addr; 0: it is counted, not logged. */
int	refusal_admit(struct refusals *, uint32_t addr, uint64_t now_ms);
/* Sum up, through fn, each window that ended with refusals left out. */
void	refusal_expire(struct refusals *, uint64_t now_ms, refusal_summary_fn *, void *);
uint64_t refusal_next_due(const struct refusals *);	/* 0: nothing to sum up */

/* ------------------------------------------------------------ netd state */

struct netd;
struct link;
struct api_client;
struct handler;

/* A request of a local client to one node, until its status comes back. */
struct rpc {
	TAILQ_ENTRY(rpc)	 node_entry;	/* on its node's waiting or link's sent queue */
	TAILQ_ENTRY(rpc)	 client_entry;
	LIST_ENTRY(rpc)		 hash_entry;
	struct api_client	*client;	/* NULL: the client left, drop the answer */
	struct rpc_all		*all;		/* part of a SEND_ALL, else NULL */
	size_t			 all_idx;	/* its result slot */
	uint64_t		 req_id;
	MsgType			 req_type;
	unsigned		 node;
	uint32_t		 type, key;
	uint32_t		 msg_num;
	uint8_t			*payload;
	size_t			 len;
	int			 sent;
};
TAILQ_HEAD(rpc_list, rpc);

/* A SEND_ALL: answered when every node's part is. */
struct rpc_all {
	TAILQ_ENTRY(rpc_all)	 entry;		/* on its client's list */
	struct api_client	*client;
	uint64_t		 req_id;
	size_t			 outstanding;
	size_t			 n;
	void			*results;	/* Netd__NetResult[n] */
};

/* A message from a peer handed to a local handler, until it answers. */
struct inbound {
	LIST_ENTRY(inbound)	 hash_entry;
	TAILQ_ENTRY(inbound)	 client_entry;
	uint64_t		 handle;
	unsigned		 node;
	uint64_t		 link_gen;	/* answer only on the link it came in on */
	uint32_t		 type, key, msg_num;
	struct api_client	*client;
	int			 hashed;
};

enum link_state { LS_CONNECTING, LS_HANDSHAKE, LS_UP };

#define RPC_HASH	1024

/*
 * One TCP connection to a peer. An accepted one is only a candidate,
 * on its node's `accepting` list, until it has authenticated (with a
 * key: proved it; without: passed every handshake check); only then
 * does it become the node's link. Until then nothing it does touches
 * the node: anyone who can connect from the node's address can make one.
 */
struct link {
	struct netd		*nd;
	struct netd_node	*node;
	TAILQ_ENTRY(link)	 accept_entry;
	uint32_t		 addr;		/* the peer's, network order */
	struct stream		*st;
	struct event		*flush_ev;	/* writes what this wakeup queued */
	int			 flush_pending;
	enum link_state		 state;
	int			 outgoing;
	uint64_t		 gen;
	int			 timed_out;	/* idle: quorum counts it lost */
	int			 closing;
	/* handshake */
	int			 got_hs, got_proof;
	uint8_t			 nonce[AUTH_NONCE_LEN];
	uint8_t			 peer_nonce[AUTH_NONCE_LEN];
	int			 tx_keyed;	/* our frames carry MACs from now on */
	int			 rx_keyed;	/* and the peer's */
	struct auth_session	 auth;
	/* timers: keepalive.c */
	struct event		*ka_timer;
	struct event		*idle_timer;
	struct event		*hs_timer;
	uint64_t		 last_rx_ms;
	/* requests: rpc.c */
	struct rpc_list		 sent;
	LIST_HEAD(, rpc)	 hash[RPC_HASH];
	uint32_t		 next_msg_num;
	size_t			 npending;
};

/* A configured node, as nmd describes it, and what we know of it. */
struct netd_node {
	struct netd		*nd;
	unsigned		 num;
	char			 name[CC_NODE_NAME_MAX + 1];
	uint32_t		 addr;		/* network order */
	uint16_t		 port;
	int			 configured;
	int			 hb_up;
	char			 last_error[256];	/* of our own attempts and links */
	int			 failed_since_up;	/* sends fail fast instead of waiting */
	struct link		*link;		/* ours, or accepted and authenticated */
	TAILQ_HEAD(, link)	 accepting;	/* accepted, not authenticated yet */
	unsigned		 naccepting;
	struct event		*connect_timer;
	struct event		*expire_timer;
	int			 expired;	/* it fired this outage: once is enough */
	uint64_t		 last_attempt_ms;
	uint64_t		 attempt_logged_ms;	/* last "connecting failed" line */
	unsigned		 failed_attempts;	/* since that line */
	uint64_t		 up_since_ms;
	uint64_t		 nsent, nreceived;
	struct rpc_list		 waiting;	/* sends before the first link comes up */
	int			 pinned;	/* nmd "link" pin held */
};

struct netd {
	struct event_base	*base;
	const char		*rundir;
	const char		*tunables_path;
	const char		*node_name;
	const char		*keyfile;

	/* From nmd. */
	char			 cluster[CC_CLUSTER_NAME_MAX + 1];
	unsigned		 self;
	struct netd_node	*nodes[CC_MAX_NODES];
	unsigned		 idle_timeout_ms;
	unsigned		 keepalive_delay_ms;
	unsigned		 reconnect_delay_ms;
	unsigned		 dead_threshold;
	unsigned		 hb_interval_ms;
	struct hs_params	 hs;

	/* Authentication (auth.c), when a key file exists. */
	int			 auth;
	uint8_t			 key[AUTH_KEY_LEN];

	/* Links (link.c). */
	int			 listen_fd;
	struct event		*listen_ev;
	uint64_t		 next_link_gen;
	struct refusals		 refusals;	/* refusal.c */
	struct event		*refusal_timer;

	/* Quorum (quorum.c) and its timer. */
	struct quorum		 quo;
	struct event		*quo_timer;
	int			 fenced;

	/* Local API (api.c, rpc.c). */
	struct ipc_server	*ipc;
	LIST_HEAD(, handler)	 handlers;
	LIST_HEAD(, inbound)	 inbound[RPC_HASH];
	uint64_t		 next_handle;

	/* nmd and hbd clients (config.c, hb.c). */
	struct nmd_client	*nmd;
	struct event		*nmd_wait;	/* for the first configuration */
	int			 configured;	/* it came: netd serves */
	void			(*on_configured)(struct netd *);
	const char		*membership;	/* hbd, or pcmkd on the pcmk stack */
	struct ipc_conn		*hbd;		/* to it */
	int			 hbd_connected;
	int			 hbd_fenced;	/* hbd has our fence on record */
};


/* config.c: the configuration from nmd, link pins. */
/* Follow nmd; configured() runs once, with the first configuration. */
void	config_start(struct netd *, void (*configured)(struct netd *));
void	config_pin(struct netd *, struct netd_node *, int pin);
struct netd_node *config_node_by_addr(struct netd *, uint32_t addr);
char	*config_keyfile_from_tunables(const char *path);

/* hb.c: hbd's node up/down events (ROLE_NET). */
void	hb_start(struct netd *);
void	hb_fence(struct netd *, const char *reason);

/* link.c: connections. */
int	link_listen(struct netd *);
void	link_node_init(struct netd *, struct netd_node *);
void	link_node_up(struct netd *, struct netd_node *);
void	link_node_down(struct netd *, struct netd_node *);
void	link_close(struct link *, const char *why);
/* A connection's failure before it became a link: logged, rate-limited if accepted. */
void	link_log_failure(struct link *, const char *fmt, ...) __attribute__((__format__(printf, 2, 3)));
void	link_send_frame(struct link *, struct wire_hdr *, const uint8_t *payload, size_t len);
void	link_stop_all(struct netd *, const char *why);
void	link_resume_all(struct netd *);
void	link_node_free(struct netd *, struct netd_node *);
int	link_is_up(const struct netd_node *);

/* refusal.c: netd's rate-limited refusal lines. */
void	refusal_start(struct netd *);
void	refusal_log(struct netd *, uint32_t addr, const char *fmt, ...)
	    __attribute__((__format__(printf, 3, 4)));

/* keepalive.c: keepalive, idle timeout, handshake timeout. */
void	ka_link_start(struct link *);		/* handshake done */
void	ka_link_rx(struct link *);		/* any frame received */
void	ka_link_free(struct link *);
void	ka_hs_start(struct link *);

/* fence.c: quorum's timer and its verdict. */
void	fence_start(struct netd *);
void	fence_check(struct netd *, int fence);	/* after any quo_* call */
void	fence_lift(struct netd *, const char *how);	/* hbd's fence was cleared */

/* rpc.c: requests in flight. */
void	rpc_link_up(struct netd *, struct netd_node *);
void	rpc_link_lost(struct netd *, struct link *);
void	rpc_node_unreachable(struct netd *, struct netd_node *, int err);
void	rpc_node_expired(struct netd *, struct netd_node *, uint64_t waited_ms);
void	rpc_submit(struct netd *, struct rpc *);
void	rpc_complete(struct netd *, struct rpc *, int err, int32_t status,
	    const uint8_t *payload, size_t len);
void	rpc_on_reply(struct link *, const struct wire_hdr *, const uint8_t *payload);
void	rpc_on_request(struct link *, const struct wire_hdr *, const uint8_t *payload);
void	rpc_answer(struct netd *, struct inbound *, uint32_t sys, int32_t status,
	    const uint8_t *payload, size_t len);
void	rpc_inbound_add(struct netd *, struct inbound *);
struct inbound *rpc_inbound_find(struct netd *, uint64_t handle);

/* api.c: netd.sock. */
void	api_start(struct netd *);
void	api_publish_link(struct netd *, unsigned node, int state, const char *reason);
void	api_publish_quorum(struct netd *, const char *reason);
/* Deliver a message to its handler; -1 and *sys when there is none. */
int	api_deliver(struct netd *, struct inbound *, const uint8_t *payload,
	    size_t len, uint32_t *sys);
void	api_reply_rpc(struct netd *, struct rpc *, int err, int32_t status,
	    const uint8_t *payload, size_t len);
void	api_reply_all(struct netd *, struct rpc_all *);
void	api_inbound_done(struct netd *, struct inbound *);

#endif
