#!/usr/bin/env bash
# The libFuzzer harnesses (tests/fuzz/), a few seconds each from their
# seeds and the committed corpus, which keeps every input that once
# crashed a daemon: a crash again, or one a short search finds, fails.
# make check builds them into build/fuzz; make soak runs each a million
# times. About 35 s, and 20 s for the build in make check.
TOP=$(cd "$(dirname "$0")/../.." && pwd)
exec "$TOP/tests/fuzz/run" --build "${OCFS2_FUZZ_BUILD:-${OCFS2_BUILD:-$TOP/build}/fuzz}" \
    --seconds "${FUZZ_CI_SECONDS:-1}"
