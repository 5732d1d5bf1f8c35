#!/usr/bin/env bash
# Lock handoffs write home what the other node needs (doc/lock-handoff.md):
# two nodes take turns changing files, directories, symlinks, modes,
# sizes, times and xattrs in two shared directories, and after each turn
# the other node checks what it sees against a model, sometimes one
# directory only (its lock comes down while the other's changes are still
# dirty: no I/O), sometimes after an fsync (committed, not home: only a
# checkpoint), sometimes everything. Then node2 changes alone, node1
# checking after each change, and node2 is killed (SIGKILL, every daemon)
# at a random point: after node1 recovers it, node1 must see everything
# it had seen, plus at most the change node2 was making. Twice, node2
# coming back in between, once a survivor has recovered its slot: it
# reads that slot's local alloc and truncate log as the recovery left
# them. fsck.ocfs2 finds the volume clean at the end.
#   FSD_HANDOFF_TURNS   turns of the first part (default 60)
#   FSD_HANDOFF_KILLS   kills of node2 (default 2)
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/netd_lib.inc"
source "$(dirname "$0")/fsd_lib.inc"

TURNS=${FSD_HANDOFF_TURNS:-60}
KILLS=${FSD_HANDOFF_KILLS:-2}

lc_setup
trap 'cluster_cleanup 3 fsd' EXIT

M=()
DRIVER=$FSD_DIR/handoff.py
cat >"$DRIVER" <<'EOF'
# The model: relative path -> ("d",) | ("f", mode, bytes, xattr, mtime) | ("l", target).
# alternate A B TURNS SEED: A and B are the two nodes' mounts, taking turns.
# writer W R SEED STATE: W changes alone, R checks after each change,
# until W's mount dies; STATE (JSON) then holds what R saw last and the
# change under way. check R STATE: R shows one of the two.
import errno, json, os, random, sys

DIRS = ("da", "db")

def fail(msg):
    print(msg)
    sys.exit(1)

def scan(root):
    seen = {}
    for d in DIRS:
        base = os.path.join(root, d)
        for name in os.listdir(base):
            rel = d + "/" + name
            p = os.path.join(base, name)
            st = os.lstat(p)
            if os.path.islink(p):
                seen[rel] = ["l", os.readlink(p)]
            elif os.path.isdir(p):
                seen[rel] = ["d"]
            else:
                with open(p, "rb") as f:
                    data = f.read()
                try:
                    x = os.getxattr(p, "user.h").decode()
                except OSError as e:
                    if e.errno != errno.ENODATA:
                        raise
                    x = None
                seen[rel] = ["f", st.st_mode & 0o7777, data.hex(), x, int(st.st_mtime)]
    return seen

def scan_dir(root, d):
    return {k: v for k, v in scan(root).items() if k.startswith(d + "/")}

def files(model):
    return sorted(k for k, v in model.items() if v[0] == "f")

def fresh(model, rng, d=None):
    while True:
        name = (d or rng.choice(DIRS)) + "/n%d" % rng.randrange(100000)
        if name not in model:
            return name

def change(root, model, rng, single):
    """One change on root, applied to a copy of model; returns (what, new model).
    single: only changes that are one system call, all or nothing."""
    m = {k: list(v) for k, v in model.items()}
    fs = files(m)
    kinds = ["create", "mkdir", "symlink"]
    if fs:
        kinds += ["chmod", "rename", "unlink", "truncate", "xattr", "utime", "write"]
    if any(v[0] == "d" for v in m.values()):
        kinds.append("rmdir")
    kind = rng.choice(kinds)
    p = lambda rel: os.path.join(root, rel)
    if kind == "create":
        rel = fresh(m, rng)
        fd = os.open(p(rel), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        os.close(fd)
        m[rel] = ["f", 0o644, "", None, None]
    elif kind == "mkdir":
        rel = fresh(m, rng)
        os.mkdir(p(rel))
        m[rel] = ["d"]
    elif kind == "symlink":
        rel = fresh(m, rng)
        target = "t%d" % rng.randrange(10 ** 6)
        os.symlink(target, p(rel))
        m[rel] = ["l", target]
    elif kind == "rmdir":
        rel = rng.choice(sorted(k for k, v in m.items() if v[0] == "d"))
        os.rmdir(p(rel))
        del m[rel]
    else:
        rel = rng.choice(fs)
        f = m[rel]
        if kind == "chmod":
            f[1] = rng.choice((0o600, 0o640, 0o644, 0o755, 0o700))
            os.chmod(p(rel), f[1])
        elif kind == "rename":
            new = fresh(m, rng, rng.choice(DIRS))
            os.rename(p(rel), p(new))
            m[new] = m.pop(rel)
            rel = new
        elif kind == "unlink":
            os.unlink(p(rel))
            del m[rel]
        elif kind == "truncate":
            n = rng.choice((0, 1, 100, 3000, 9000))
            os.truncate(p(rel), n)
            data = bytes.fromhex(f[2])
            f[2] = (data[:n] + b"\0" * (n - len(data))).hex()
        elif kind == "xattr":
            f[3] = "v%d" % rng.randrange(10 ** 6)
            os.setxattr(p(rel), "user.h", f[3].encode())
        elif kind == "utime":
            f[4] = rng.randrange(10 ** 9, 2 * 10 ** 9)
            os.utime(p(rel), (f[4], f[4]))
        elif kind == "write":
            if single:
                # one page at offset 0: a crash leaves the old bytes or the new
                old = bytes.fromhex(f[2])
                data = os.urandom(rng.choice((10, 500, 4096)))
                fd = os.open(p(rel), os.O_WRONLY)
                os.pwrite(fd, data, 0)
                os.close(fd)
                new = data + old[len(data):]
            else:
                # whole new contents: inline, or in extents past a block
                data = os.urandom(rng.choice((10, 500, 5000, 20000)))
                with open(p(rel), "wb") as fh:
                    fh.write(data)
                new = data
            f[2] = new.hex()
        if kind in ("write", "truncate"):
            f[4] = None	# now: not checked
    return kind + " " + rel, m

def same(want, got):
    """got matches want; an mtime of None in want is not checked."""
    if set(want) != set(got):
        return "names differ: only in the model %s, only seen %s" % (
            sorted(set(want) - set(got)), sorted(set(got) - set(want)))
    for k in want:
        w, g = want[k], got[k]
        if w[0] == "f" and w[4] is None:
            g = g[:4] + [None]
        if w != g:
            return "%s: model %s, seen %s" % (k, str(w)[:120], str(g)[:120])
    return None

def alternate(a, b, turns, seed):
    rng = random.Random(seed)
    roots = (a, b)
    model = scan(a)
    for t in range(turns):
        w, r = roots[t % 2], roots[1 - t % 2]
        whats = []
        for _ in range(rng.randint(1, 3)):
            what, model = change(w, model, rng, False)
            whats.append(what)
        if rng.random() < 0.3 and files(model):
            fd = os.open(os.path.join(w, rng.choice(files(model))), os.O_RDONLY)
            os.fsync(fd)	# committed now: the handoff has only to write it home
            os.close(fd)
            whats.append("fsync")
        scope = rng.choice(("all", "da", "db"))
        if scope == "all":
            err = same(model, scan(r))
        else:
            err = same({k: v for k, v in model.items() if k.startswith(scope + "/")},
                       scan_dir(r, scope))
        if err:
            fail("turn %d (node%d changed: %s; node%d checked %s): %s" % (
                t, t % 2 + 1, ", ".join(whats), 2 - t % 2, scope, err))
        if scope != "all":
            err = same(model, scan(r))
            if err:
                fail("turn %d, then all: %s" % (t, err))
    print("%d turns" % turns)

def writer_dead(w):
    # a killed fsd leaves a dead mount, or none when it saw dlmd go first
    try:
        os.stat(os.path.join(w, "da"))
        return not os.path.ismount(w)
    except OSError:
        return True

def writer(w, r, seed, state):
    rng = random.Random(seed)
    model = scan(r)
    n = 0
    while True:
        pending = None
        try:
            what, pending = change(w, model, rng, True)
        except OSError:
            if writer_dead(w):
                break
            raise
        err = same(pending, scan(r))
        if err:
            if writer_dead(w):
                break
            fail("node2's change %d (%s), as node1 sees it: %s" % (n, what, err))
        model = pending
        pending = None
        n += 1
        if n == 3:
            print("ready", flush=True)	# the kill may come from now on
    with open(state, "w") as f:
        json.dump({"seen": model, "pending": pending, "changes": n}, f)
    print("%d changes seen before the writer died" % n, flush=True)

def check(r, state):
    with open(state) as f:
        s = json.load(f)
    got = scan(r)
    err = same(s["seen"], got)
    if err and s["pending"] is not None:
        err2 = same(s["pending"], got)
        if err2 is None:
            print("with the change under way")
            return
    if err:
        fail("after the recovery, not what node1 had seen: " + err)
    print("without the change under way")

cmd = sys.argv[1]
if cmd == "alternate":
    alternate(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
elif cmd == "writer":
    writer(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5])
else:
    check(sys.argv[2], sys.argv[3])
EOF
# recovered K: how many slots node K's fsd has recovered (its log says so)
recovered() { grep -c 'slot [0-9]* recovered (' "$LOCALCLUSTER_DIR/node$1/log/fsd.log"; }
recovered_since() { (($(recovered 1) > $1 || $(recovered 3) > $2)); }
SEED=${FSD_HANDOFF_SEED:-$RANDOM}
echo "-- seed $SEED (FSD_HANDOFF_SEED)"

echo "-- setup"
if ! netd_up 3; then fail "localcluster up 3"; finish; exit 1; fi
for k in 1 2 3; do run_check "node$k mounts the volume" node_mount "$k"; done
IMG=$(lc exec 1 sh -c 'echo $OCFS2_IMAGE')
mkdir "${M[1]}/da" "${M[1]}/db"

echo "-- two nodes take turns"
check "$TURNS turns, each checked on the other node" python3 "$DRIVER" alternate \
    "${M[1]}" "${M[2]}" "$TURNS" "$SEED"

echo "-- node2 killed while it changes what node1 checks"
for ((i = 1; i <= KILLS; i++)); do
	rm -f "$FSD_DIR/state"
	timeout 120 python3 "$DRIVER" writer "${M[2]}" "${M[1]}" "$((SEED + i))" "$FSD_DIR/state" \
	    >"$FSD_DIR/writer.out" 2>&1 &
	BG+=($!)
	wait_for 60 grep -q '^ready' "$FSD_DIR/writer.out"
	sleep "$(awk -v r=$((RANDOM % 1500)) 'BEGIN { printf "%.3f", r / 1000 }')"
	seen1=$(recovered 1)
	seen3=$(recovered 3)
	lc kill 2 >/dev/null
	wait "${BG[-1]}"
	rc=$?
	unset 'BG[-1]'
	check_eq "kill $i: the driver ends when node2's mount dies ($(tail -n 1 "$FSD_DIR/writer.out"))" 0 "$rc"
	((rc == 0)) || sed 's/^/       | /' "$FSD_DIR/writer.out"
	check "kill $i: node1 sees all it had seen of node2's changes" \
	    python3 "$DRIVER" check "${M[1]}" "$FSD_DIR/state"
	# node2 comes back to the slot a survivor recovered: it reads that
	# slot's local alloc and truncate log as the recovery left them
	check "kill $i: a survivor recovered node2's slot" wait_for 30 recovered_since "$seen1" "$seen3"
	lc umount 2 >/dev/null 2>&1
	lc start 2 >/dev/null
	run_check "kill $i: node2 mounts again" node_mount 2
	check "kill $i: so does node2" python3 "$DRIVER" check "${M[2]}" "$FSD_DIR/state"
done
check "the turns go on after the kills" python3 "$DRIVER" alternate \
    "${M[2]}" "${M[3]}" 10 "$((SEED + 100))"

echo "-- unmount; fsck"
for k in 1 2 3; do check "node$k unmounts" lc umount "$k"; done
check "fsck.ocfs2 -fn finds the volume clean" fsck_clean "$IMG"
finish
