#!/bin/bash
# first `make run` of a fresh clone, to /api/status ready
set -u
REV=${1:-main}
B=/tmp/mr; pgrep -af "$B/repo/.venv" && { echo "old run still up"; exit 1; }
rm -rf $B; mkdir -p $B/home
git clone -q /work/main $B/repo && cd $B/repo && git checkout -q $REV
printf '[server]\nport = 47990\n' > $B/home/config.toml
export YULLU_HOME=$B/home YULLU_CONFIG=$B/home/config.toml
t0=$(date +%s.%N)
setsid make run > $B/run.log 2>&1 < /dev/null &
MP=$!
inst=""
for i in $(seq 1 1200); do
  if [ -z "$inst" ] && ls $B/repo/.venv/.installed-* >/dev/null 2>&1; then inst=$(echo "$(date +%s.%N) - $t0" | bc); fi
  if curl -sf http://127.0.0.1:47990/api/status 2>/dev/null | grep -q '"ready": *true'; then break; fi
  sleep 0.5
done
t1=$(date +%s.%N)
echo "install_s=$inst ready_s=$(echo "$t1 - $t0" | bc)" | tee $B/result.txt
du -sh $B/repo/.venv | tee -a $B/result.txt
kill -TERM -- -$MP 2>/dev/null
for i in $(seq 1 60); do pgrep -f "$B/repo/.venv" >/dev/null || break; sleep 1; done
pgrep -af "$B/repo/.venv" && echo LEFTOVER
