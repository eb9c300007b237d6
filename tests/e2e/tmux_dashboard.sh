#!/usr/bin/env bash
# End to end in a real terminal, an 80x24 tmux pane (the default terminal size): the launcher
# through the envs of E2E_ENVS (Down to each, Enter on its preset, the dashboard shows it
# training, stop, b back to the launcher); then one run with the editor (a bad value first), the palette,
# pause/resume, resizes to 200x60 and back, detach, attach, a killed app and attach again, stop.
# Usage: tests/e2e/tmux_dashboard.sh   (PUFFER_TUI_CMD overrides the command, default puffer-tui)
# E2E_ENVS: the envs started from the launcher, "all" for every one. The default is the first
# (the launcher's default, no Down) and the three whose presets no other test trains (snake,
# multi-agent; cpr; breakout, last in the list: Down through all of it); tests/learning/test_learning.py
# trains the other six presets to a solve. The launcher path itself is the same for every env.
set -euo pipefail
# COLUMNS and LINES in the environment override the terminal's own size for Python programs
# (shutil.get_terminal_size, which Textual asks on every resize): pytest-xdist's workers export
# 80 and 24, and the app inside the pane then never followed a resize to 200x60.
unset COLUMNS LINES

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
    echo "ok (${SECONDS}s): $text"
}

# appears TEXT SECONDS: whether TEXT comes on screen within SECONDS (no failure if not)
appears() {
    local start=$SECONDS
    while ! screen | grep -qF -- "$1"; do (( SECONDS - start > $2 )) && return 1; sleep 0.2; done
}

# wait_wider COLUMNS: until the app draws a line wider than COLUMNS (it redrew after a resize)
wait_wider() {
    local start=$SECONDS
    until [ "$(widest)" -gt "$1" ]; do
        if (( SECONDS - start > 30 )); then
            echo "FAIL: the screen did not grow past $1 columns (the window is" \
                "$(tmux display -p -t "$SESSION" '#{window_width}x#{window_height}')); the screen was:" >&2
            screen >&2
            exit 1
        fi
        sleep 0.2
    done
}

# wait_header REGEX [SECONDS]: until the first line (the run header) matches REGEX
wait_header() {
    local regex=$1 limit=${2:-60} start=$SECONDS
    while ! screen | head -1 | grep -qE -- "$regex"; do
        if (( SECONDS - start > limit )); then
            echo "FAIL: the header did not match '$regex' within ${limit}s; the screen was:" >&2
            screen >&2
            exit 1
        fi
        sleep 0.2
    done
    echo "ok (${SECONDS}s): header $regex"
}

key() { tmux send-keys -t "$SESSION" "$@"; sleep 0.3; }
downs() {  # downs N: Down N times at a quick typist's pace (0.3 s each cost seconds per env)
    local i
    for (( i = 0; i < $1; i++ )); do tmux send-keys -t "$SESSION" Down; sleep 0.05; done
}
absent() {  # absent TEXT: fail if TEXT is on screen now
    if screen | grep -qF -- "$1"; then
        echo "FAIL: '$1' should not be on screen; the screen was:" >&2; screen >&2; exit 1
    fi
    echo "ok: no $1"
}
widest() { screen | wc -L; }  # display columns of the widest line

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

# the built-in envs, from the command under test (the python3 on PATH may lack the package)
ENVS=$($CMD envs --json | python3 -c 'import json, sys
print(" ".join(e["name"] for e in json.load(sys.stdin)["envs"] if e["source"] == "built-in"))')
[ -n "$ENVS" ] || { echo "FAIL: could not list the envs" >&2; exit 2; }
CHOSEN=${E2E_ENVS:-squared snake cpr breakout}
[ "$CHOSEN" = all ] && CHOSEN=$ENVS
for env in $CHOSEN; do  # a name the launcher does not list fails here, not as a timeout
    [[ " $ENVS " == *" $env "* ]] || { echo "FAIL: E2E_ENVS names '$env', not one of: $ENVS" >&2; exit 2; }
done

tmux new-session -d -s "$SESSION" -x 80 -y 24

# The bare command opens the launcher. Every env: Down to it, Enter on its preset, see its
# dashboard training, stop it, and go back to the launcher with b.
run_cmd "PUFFER_TUI_RUNS=$RUNS $CMD"
wait_for "no runs yet" 60
for env in $CHOSEN; do
    index=0  # the env's place in the launcher's list
    for name in $ENVS; do [ "$name" = "$env" ] && break; index=$((index + 1)); done
    wait_for "Enter on an env: train it"
    wait_for "squared  obs"          # the launcher opens on the default env
    downs "$index"
    wait_for "$env  obs"
    key Enter
    wait_header "$env-2.* (running|finished) " 90   # the new run of this env, training
    wait_for "now "                  # telemetry from training (steps / second)
    key s
    if appears "Stop training?" 5; then key s; fi   # no question if it finished just now
    wait_header " (stopped|finished) " 60
    wait_for "b Launcher"
    absent "c Checkpoint"            # nothing to steer once the run is over
    key b
done
wait_for "Enter on an env: train it"
key q
wait_for "E2E-EXIT-0"

run_cmd "$CMD train squared --runs-dir $RUNS $TINY"
wait_for " running " 90
wait_for "env 0/64"
wait_for "p Pause"

# The editor opens on its first live field (train.total_timesteps); tab to the next
# (train.update_epochs): a bad value, then a good one.
key h
wait_for "Live: change while training"
key Tab
type_text "99"
key Enter
wait_for "not sent: '99'"
key BSpace BSpace
type_text "2"
key Enter
wait_for "engine: train.update_epochs = 2"
key Escape
wait_for "p Pause"

# The palette offers the one of Pause / Resume that applies, and Help.
key C-p
wait_for "Search for commands"
type_text "pause"
wait_for "Pause training"
key Escape
wait_for "p Pause"
key p
wait_for " paused "
wait_for "now 0 (paused)"
wait_for "p Resume"
key C-p
wait_for "Search for commands"
type_text "resume"
wait_for "Resume training"
absent "Pause training"
key Escape
key C-p
type_text "help"
wait_for "The keys and what each one does"
key Escape
key p
wait_for " running "
wait_for "p Pause"

# Resizes: the layout follows, out to 200x60 and back to 80x24.
tmux resize-window -t "$SESSION" -x 200 -y 60
wait_for "time per epoch"
wait_wider 150
echo "ok: 200x60"
tmux resize-window -t "$SESSION" -x 80 -y 24
sleep 1.5  # the pane is 80 wide at once: what counts is the screen the app draws for it
wait_for "q Quit"
[ "$(widest)" -le 80 ] || { echo "FAIL: the screen did not shrink to 80 columns" >&2; screen >&2; exit 1; }
echo "ok: back to 80x24"

key q
wait_for "Detach (keep training)"
key d
wait_for "Reattach with: puffer-tui attach"
# exit status 4: this command ended, the engine trains on (engine/shared/exit_codes.py)
wait_for "E2E-EXIT-4"

run_cmd "$CMD attach --runs-dir $RUNS"
wait_for " running " 60
# The event log holds the engine's events again. Its own "connected" line can already have
# scrolled away at 80x24 behind the replayed start and checkpoint events (seen in CI).
wait_for " inf "

# Kill the app outright (no detach): training must go on, and attach must pick it up again.
shell_pid=$(tmux display -p -t "$SESSION" "#{pane_pid}")
app_pid=$(pgrep -P "$shell_pid" | head -1)
kill -9 "$app_pid"
sleep 1
tmux respawn-pane -k -t "$SESSION"   # a fresh shell: the killed app could not restore the tty
sleep 0.5
run_cmd "$CMD attach --runs-dir $RUNS"
# " running " in the header comes from the engine's telemetry, so the link is up; the event
# log's "connected" line can already have scrolled away behind checkpoint events at 80x24.
wait_for " running " 60
echo "ok: the engine outlived a killed app"

key s
wait_for "Stop the run"
key s
wait_for " stopped " 120
wait_for "b Launcher"
absent "p Pause"
key q
wait_for "E2E-EXIT-3"
echo "PASS: tmux end-to-end"
