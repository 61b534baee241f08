#!/usr/bin/env bash
# dynalite.sh: install dynalite (npm) under bench/.cache if missing and start
# it in the background with an on-disk LevelDB data directory.
#
#   bench/dynalite.sh [--port 4567] [--path DIR] [--log FILE]
#
# Prints the server's pid on stdout (and nothing else) once it accepts
# connections. Stop it with `kill PID`.
#
# Env: DYNALITE_VERSION (default 4.0.0).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="$here/.cache"
prefix="$cache/dynalite"
version="${DYNALITE_VERSION:-4.0.0}"
port=4567
path=""
log=""

while [ $# -gt 0 ]; do
	case "$1" in
	--port) port="$2"; shift 2 ;;
	--path) path="$2"; shift 2 ;;
	--log) log="$2"; shift 2 ;;
	-h|--help) sed -n '2,10p' "$0"; exit 0 ;;
	*) echo "dynalite.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done
[ -n "$path" ] || path="$cache/dynalite-data-$port"
[ -n "$log" ] || log="$cache/dynalite-$port.log"

die() { echo "dynalite.sh: $*" >&2; exit 1; }

command -v node >/dev/null || die "node is not installed (apt-get install nodejs npm)"
command -v npm >/dev/null || die "npm is not installed (apt-get install npm)"

bin="$prefix/node_modules/dynalite/cli.js"
if [ ! -f "$bin" ]; then
	echo "dynalite.sh: installing dynalite@$version into $prefix" >&2
	timeout 60 npm view "dynalite@$version" version >/dev/null 2>&1 ||
		die "'npm view dynalite@$version' failed: the npm registry is unreachable or the version does not exist"
	mkdir -p "$prefix"
	# classic-level (LevelDB, via level@10) ships prebuilt N-API binaries for
	# linux-x64; node-gyp (make, g++, python3) is only needed when no prebuild fits.
	if ! timeout 600 npm install --prefix "$prefix" --no-save --no-package-lock \
		"dynalite@$version" >"$cache/npm-install.log" 2>&1; then
		tail -n 30 "$cache/npm-install.log" >&2
		die "npm install dynalite@$version failed (full log: $cache/npm-install.log)"
	fi
	[ -f "$bin" ] || die "npm install succeeded but $bin is missing"
fi

# Fail early, with the real error, if the LevelDB native module does not load.
if ! (cd "$prefix" && node -e 'require("classic-level")' 2>"$cache/classic-level.err"); then
	cat "$cache/classic-level.err" >&2
	die "dynalite's LevelDB binding (classic-level) does not load; rebuild needs make, g++ and python3: (cd $prefix && npm rebuild classic-level)"
fi

mkdir -p "$path"
nohup node "$bin" --port "$port" --path "$path" >"$log" 2>&1 </dev/null &
pid=$!

for _ in $(seq 1 100); do
	if ! kill -0 "$pid" 2>/dev/null; then
		cat "$log" >&2
		die "dynalite exited during startup"
	fi
	if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
		echo "$pid"
		exit 0
	fi
	sleep 0.1
done
kill "$pid" 2>/dev/null || true
die "dynalite did not listen on port $port within 10s (log: $log)"
