#!/bin/bash
# Alternating rounds: many small commands (STORE/SELECT with keywords; one
# new message to an idling session), before (main at b0d7076) and after.
cd /work/wt/imap-layer/imapd
for r in 1 2 3 4; do
  for v in before after2; do
    echo "=== round $r $v load $(cut -d' ' -f1 /proc/loadavg)"
    /tmp/imaplayer/$v.test -test.run XXX -test.bench 'BenchmarkKeywords|BenchmarkIdleNewMessage' -test.benchtime 200x 2>&1 | grep -E "^Benchmark|^ok|FAIL"
  done
done
