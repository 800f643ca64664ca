#!/bin/bash
# Alternating rounds of the before (main at b0d7076) and after test binaries.
cd /work/wt/imap-layer/imapd
for r in 1 2 3 4 5 6; do
  for v in before after; do
    echo "=== round $r $v load $(cut -d' ' -f1 /proc/loadavg)"
    /tmp/imaplayer/$v.test -test.run XXX -test.bench 'BenchmarkFolderOpen/n=2000/after|BenchmarkFetchAll|BenchmarkFolderOpenCompress' -test.benchtime 2s 2>&1 | grep -E "^Benchmark|^ok|FAIL"
  done
done
