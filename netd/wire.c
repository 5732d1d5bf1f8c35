/*
 * The node-to-node wire format: a fixed 40-byte big-endian header, the
 * payload, and with a cluster key a MAC. Frames are found in a stream
 * that may arrive in any split; a frame that cannot be ours (bad magic,
 * unknown flags, a length over its kind's limit) condemns the stream,
 * because after it we cannot find the next frame boundary.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "netd.h"

static void
put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v;
}

static void
put32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

static uint16_t
get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t
get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	    (uint32_t)p[2] << 8 | p[3];
}

void
wire_hdr_encode(const struct wire_hdr *h, uint8_t out[WIRE_HDR_LEN])
{
	put16(out + 0, h->magic);
	put16(out + 2, h->flags);
	put32(out + 4, h->type);
	put32(out + 8, h->key);
	put32(out + 12, h->msg_num);
	put32(out + 16, h->sys_status);
	put32(out + 20, (uint32_t)h->status);
	put32(out + 24, h->len);
	put32(out + 28, 0);
	put32(out + 32, (uint32_t)(h->seq >> 32));
	put32(out + 36, (uint32_t)h->seq);
}

void
wire_hdr_decode(const uint8_t in[WIRE_HDR_LEN], struct wire_hdr *h)
{
	h->magic = get16(in + 0);
	h->flags = get16(in + 2);
	h->type = get32(in + 4);
	h->key = get32(in + 8);
	h->msg_num = get32(in + 12);
	h->sys_status = get32(in + 16);
	h->status = (int32_t)get32(in + 20);
	h->len = get32(in + 24);
	h->seq = (uint64_t)get32(in + 32) << 32 | get32(in + 36);
}

/* Keepalives and replies of status only carry nothing; requests and
 * replies carry client bytes; the handshake frames a small message. */
size_t
wire_max_len(uint16_t magic)
{
	switch (magic) {
	case WIRE_REQUEST:
	case WIRE_REPLY:
		return NETD_MAX_PAYLOAD;
	case WIRE_HANDSHAKE:
	case WIRE_AUTH:
		return NETD_HANDSHAKE_MAX;
	case WIRE_KA_REQ:
	case WIRE_KA_RESP:
		return 0;
	default:
		return 0;
	}
}

const char *
wire_magic_name(uint16_t magic)
{
	switch (magic) {
	case WIRE_REQUEST: return "request";
	case WIRE_REPLY: return "reply";
	case WIRE_KA_REQ: return "keepalive";
	case WIRE_KA_RESP: return "keepalive reply";
	case WIRE_HANDSHAKE: return "handshake";
	case WIRE_AUTH: return "auth";
	default: return "unknown";
	}
}

static int
magic_known(uint16_t magic)
{
	return magic >= WIRE_REQUEST && magic <= WIRE_AUTH;
}

int
wire_peek(const uint8_t *buf, size_t len, int mac_required, struct wire_hdr *h,
    size_t *flen, char *why, size_t whylen)
{
	size_t need;

	*flen = WIRE_HDR_LEN;
	if (len < WIRE_HDR_LEN)
		return 0;
	wire_hdr_decode(buf, h);
	if (!magic_known(h->magic)) {
		snprintf(why, whylen, "bad magic 0x%04x", h->magic);
		return -1;
	}
	if (h->flags & ~WIRE_F_MAC) {
		snprintf(why, whylen, "unknown flags 0x%04x in a %s frame",
		    h->flags, wire_magic_name(h->magic));
		return -1;
	}
	if (h->len > wire_max_len(h->magic)) {
		snprintf(why, whylen, "%s frame of %u bytes (limit %zu)",
		    wire_magic_name(h->magic), h->len, wire_max_len(h->magic));
		return -1;
	}
	/* Once keyed, a frame without a MAC is a forgery, not a mistake. */
	if (mac_required && !(h->flags & WIRE_F_MAC)) {
		snprintf(why, whylen, "%s frame without a MAC",
		    wire_magic_name(h->magic));
		return -1;
	}
	if (!mac_required && (h->flags & WIRE_F_MAC)) {
		snprintf(why, whylen, "%s frame with a MAC on an unkeyed link",
		    wire_magic_name(h->magic));
		return -1;
	}
	need = WIRE_HDR_LEN + h->len + (mac_required ? WIRE_MAC_LEN : 0);
	*flen = need;
	return len < need ? 0 : 1;
}

int
wire_errno(uint32_t sys_status)
{
	switch (sys_status) {
	case WIRE_SYS_OK: return 0;
	case WIRE_SYS_NO_HANDLER: return ENOPROTOOPT;
	case WIRE_SYS_OVERFLOW: return EOVERFLOW;
	case WIRE_SYS_HANDLER_GONE: return ECONNRESET;
	default: return EPROTO;
	}
}
