#!/bin/sh
# Runs its arguments (exec: the same process, signals reach it) with jemalloc preloaded when the
# system has it (Debian/Ubuntu: apt-get install libjemalloc2) and nothing is preloaded already.
# glibc's malloc keeps the native memory a busy server freed: after seeding 100,000 nodes its
# arena held about 100 MB that no garbage collection gives back (RSS 360-379 MB against 242 MB
# with jemalloc, the same seed rate; docs/performance.md "Idle collections, eighth session").
# SVC_JEMALLOC=0 turns it off; SVC_JEMALLOC=/path/to/libjemalloc.so.2 names the library;
# MALLOC_CONF, when set, replaces the options below.
# `npm start` and the benchmarks' server processes start through this script.
# It also sizes libuv's thread pool (every fdatasync, file read and compression of the server runs
# there) to 16 threads unless UV_THREADPOOL_SIZE is set: with the default 4, the fdatasyncs of
# more than four tenants writing at once queued for a thread; with 16, six tenants' writes went
# 9% faster in each of four paired rounds (ext4 folds concurrent fdatasyncs into one journal
# commit; docs/performance.md "Seventeenth session"). It must be set before node starts: the
# pool is made at the first file operation, before any of the server's code runs.
if [ "${SVC_JEMALLOC:-}" != "0" ] && [ -z "${LD_PRELOAD:-}" ]; then
  for lib in "${SVC_JEMALLOC:-}" \
    /usr/lib/x86_64-linux-gnu/libjemalloc.so.2 /usr/lib/aarch64-linux-gnu/libjemalloc.so.2 \
    /usr/lib64/libjemalloc.so.2 /usr/lib/libjemalloc.so.2 /usr/local/lib/libjemalloc.so.2; do
    if [ -n "$lib" ] && [ -f "$lib" ]; then
      LD_PRELOAD="$lib"
      export LD_PRELOAD
      # one arena (the server allocates natively on its main thread mostly; an arena for every
      # few CPUs' threads cost an empty server 10 MB of RSS) and freed pages given back after
      # 1 s instead of 10 (measured: empty server 78-79 MB against 74 with glibc, npm start to
      # the first read at 10,000 nodes 551-644 ms against 583-590; turning the thread caches off
      # as well saved 2 MB more and cost 100-200 ms of start-up)
      MALLOC_CONF="${MALLOC_CONF:-narenas:1,dirty_decay_ms:1000,muzzy_decay_ms:0}"
      export MALLOC_CONF
      break
    fi
  done
fi
UV_THREADPOOL_SIZE="${UV_THREADPOOL_SIZE:-16}"
export UV_THREADPOOL_SIZE
exec "$@"
