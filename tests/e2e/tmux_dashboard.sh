#!/usr/bin/env bash
# End to end in a real terminal (a 120x40 tmux pane): the launcher; train with the dashboard,
# pause, change the learning rate (a bad value first), resume, detach, attach, kill the app and
# attach again, stop.
# Usage: tests/e2e/tmux_dashboard.sh   (PUFFER_TUI_CMD overrides the command, default puffer-tui)
set -euo pipefail

CMD=${PUFFER_TUI_CMD:-$(command -v puffer-tui || true)}  # absolute: the pane's login shell resets PATH
if [ -z "$CMD" ]; then
    echo "FAIL: puffer-tui is not on PATH (activate the virtualenv, or set PUFFER_TUI_CMD)" >&2
    exit 2
fi
WORK=$(mktemp -d)
RUNS="$WORK/runs"
SESSION="puffer-e2e-$$"
# A private tmux server: never touches anyone's sessions, and inherits this environment (PATH).
tmux() { command tmux -L "$SESSION" "$@"; }
TINY="--vec.num-envs 64 --train.minibatch-size 1024 --train.hidden-size 32 --train.torch-threads 1 --train.total-timesteps 1000000000"

cleanup() {
    tmux kill-server 2>/dev/null || true
    # an engine left behind by a failure: stop it by the pid it recorded
    for status in "$RUNS"/*/status.json; do
        [ -f "$status" ] || continue
        pid=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("pid", ""))' "$status")
        state=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("state", ""))' "$status")
        case "$state" in starting|running|paused|stopping) [ -n "$pid" ] && kill "$pid" 2>/dev/null || true;; esac
    done
    rm -rf "$WORK"
}
trap cleanup EXIT

screen() { tmux capture-pane -t "$SESSION" -p; }

# wait_for TEXT [SECONDS]: until TEXT is on screen, or fail showing the screen
wait_for() {
    local text=$1 limit=${2:-60} start=$SECONDS
    while ! screen | grep -qF -- "$text"; do
        if [[ $text != E2E-EXIT-* ]] && screen | grep -q "E2E-EXIT-[0-9]"; then
            echo "FAIL: the command exited while waiting for '$text'; the screen was:" >&2
            screen >&2
            exit 1
        fi
        if (( SECONDS - start > limit )); then
            echo "FAIL: '$text' did not appear within ${limit}s; the screen was:" >&2
            screen >&2
            exit 1
        fi
        sleep 0.2
    done
    echo "ok: $text"
}

key() { tmux send-keys -t "$SESSION" "$@"; sleep 0.3; }

# run_cmd COMMAND: on a cleared screen, so an exit marker left by the previous command cannot
# be mistaken for this one's
run_cmd() {
    tmux send-keys -t "$SESSION" "clear" Enter
    local start=$SECONDS
    while screen | grep -q "E2E-EXIT-[0-9]"; do
        (( SECONDS - start > 10 )) && { echo "FAIL: the screen did not clear" >&2; exit 1; }
        sleep 0.1
    done
    tmux send-keys -t "$SESSION" "$1; echo E2E-EXIT-\$?" Enter
}
type_text() {  # one character at a time, as a person types
    local text=$1 i
    for (( i = 0; i < ${#text}; i++ )); do tmux send-keys -t "$SESSION" -l "${text:i:1}"; sleep 0.05; done
}

tmux new-session -d -s "$SESSION" -x 120 -y 40

# The bare command opens the launcher: envs with their spaces, the preset, recent runs.
run_cmd "PUFFER_TUI_RUNS=$RUNS $CMD"
wait_for "obs Box(121,) uint8  act Discrete(5)" 60
wait_for "env.num_targets"
wait_for "no runs yet"
key q
wait_for "E2E-EXIT-0"

run_cmd "$CMD train squared --runs-dir $RUNS $TINY"

wait_for " running " 90
wait_for "env 0/64"
wait_for "time per epoch"
wait_for "p Pause"

key p
wait_for " paused "
wait_for "p Resume"

key h
wait_for "Live: change while training"
key Tab   # train.update_epochs
key Tab   # train.learning_rate (its text is selected on focus: typing replaces it)
type_text "5"
key Enter
wait_for "refused: train.learning_rate = 5.0 is out of bounds"
key BSpace
type_text "0.01"
key Enter
wait_for "engine: train.learning_rate = 0.01"
key Escape
wait_for "train.learning_rate = 0.01 (from"   # the event log (one line at 120 columns)

key p
wait_for " running "
wait_for "p Pause"

key q
wait_for "Detach (keep training)"
key d
wait_for "Reattach with: puffer-tui attach"
wait_for "E2E-EXIT-0"

run_cmd "$CMD attach --runs-dir $RUNS"
wait_for " running " 60
wait_for "connected to engine"

# Kill the app outright (no detach): training must go on, and attach must pick it up again.
shell_pid=$(tmux display -p -t "$SESSION" "#{pane_pid}")
app_pid=$(pgrep -P "$shell_pid" | head -1)
kill -9 "$app_pid"
sleep 1
tmux respawn-pane -k -t "$SESSION"   # a fresh shell: the killed app could not restore the tty
sleep 0.5
run_cmd "$CMD attach --runs-dir $RUNS"
wait_for " running " 60
wait_for "connected to engine"
echo "ok: the engine outlived a killed app"

key s
wait_for "Stop the run"
key s
wait_for " stopped " 120
key q
wait_for "E2E-EXIT-0"
echo "PASS: tmux end-to-end"
