/*
 * A journal as recovery finds it (fsd/journal.c's jbd2_parse_super and
 * fsd/replay.c's jbd2_replay): the JBD2 superblock, then the log from
 * s_start, descriptor blocks and their tags, revoke blocks, commit
 * blocks, wrapping at s_maxlen. The input is one byte (log2 of the block
 * size, 9 to 12) and the journal file from its first block; blocks past
 * the input read as zeros. Replayed blocks are checked against the
 * volume's size, then dropped.
 */
#include "fuzz.h"
#include "fsd/fsd.h"

#define VOLUME_BLOCKS	(1u << 20)

struct journal_file {
	const uint8_t	*data;
	size_t		 size;
	unsigned	 bs;
	uint32_t	 maxlen;
};

static int
log_read(void *arg, uint32_t lblk, uint8_t *buf)
{
	struct journal_file *jf = arg;
	uint64_t off = (uint64_t)lblk * jf->bs;
	size_t n = 0;

	if (lblk >= jf->maxlen)
		abort();	/* replay reads inside the log only */
	if (off < jf->size)
		n = jf->size - off < jf->bs ? jf->size - off : jf->bs;
	memcpy(buf, jf->data + off, n);
	memset(buf + n, 0, jf->bs - n);
	return 0;
}

static int
home_write(void *arg, uint64_t blkno, const uint8_t *buf)
{
	(void)arg;
	(void)buf;
	if (blkno <= OCFS2_SUPER_BLOCK_BLKNO || blkno >= VOLUME_BLOCKS)
		abort();	/* replay writes inside the volume only */
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct jbd2_log_ops ops = { log_read, home_write };
	struct journal_file jf;
	struct jbd2_info ji;
	struct jbd2_replay_result res;
	uint8_t sb[4096];
	char why[256];

	if (size == 0)
		return 0;
	jf.bs = 1u << (9 + data[0] % 4);
	jf.data = data + 1;
	jf.size = size - 1;
	memset(sb, 0, sizeof(sb));
	memcpy(sb, jf.data, jf.size < jf.bs ? jf.size : jf.bs);
	if (jbd2_parse_super(sb, jf.bs, &ji, why, sizeof(why)) == -1)
		return 0;
	jf.maxlen = ji.maxlen;
	jbd2_replay(&ji, &ops, &jf, VOLUME_BLOCKS, &res, why, sizeof(why));
	return 0;
}
