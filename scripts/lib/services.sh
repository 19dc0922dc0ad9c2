# shellcheck shell=bash
#
# Throwaway Redis and MariaDB servers for tests and benchmarks.
#
# Source this file, then:
#
#   trap stop_services EXIT   # or call it from your own cleanup function
#   start_services
#
# start_services installs redis-server and mariadb-server if they are missing
# (apt-get, Debian/Ubuntu), starts both as unprivileged processes on free
# loopback ports with their data in a fresh temporary directory, and exports:
#
#   PROMPTD_TEST_REDIS_URL       redis://127.0.0.1:<port>/0
#   PROMPTD_TEST_MYSQL_DSN       promptd:promptd@tcp(127.0.0.1:<port>)/promptd_test?...
#   PROMPTD_TEST_REDIS_SERVER    path of redis-server, for tests that start their own
#   PROMPTD_TEST_ETCD_ENDPOINTS  http://127.0.0.1:<port>, a single etcd member
#   PROMPTD_TEST_ETCD_SERVER     path of etcd, for tests that start their own
#   PROMPTD_REQUIRE_INTEGRATION  1, so integration tests fail instead of skipping
#
# stop_services stops both servers (TERM, then KILL) and removes the directory.
# It is safe to call more than once, and after a partial start.

PROMPTD_SERVICES_DIR=""
_svc_redis_pid=""
_svc_mysql_pid=""
_svc_mysql_sock=""
_svc_redis_port=""
_svc_mysql_port=""
_svc_etcd_pid=""
_svc_etcd_port=""
_svc_etcd_dir=""

_svc_log() { printf '[services] %s\n' "$*" >&2; }

_svc_is_root() { [ "$(id -u)" -eq 0 ]; }

# _svc_ms prints the wall clock in milliseconds.
_svc_ms() { echo $((${EPOCHREALTIME/./} / 1000)); }

# _svc_mariadbd prints the path of mariadbd, which Debian keeps in /usr/sbin.
_svc_mariadbd() {
	if command -v mariadbd 2>/dev/null; then return 0; fi
	if [ -x /usr/sbin/mariadbd ]; then echo /usr/sbin/mariadbd; return 0; fi
	return 1
}

# _svc_install installs what is missing: the two servers and, because
# go test -race needs cgo, a C compiler.
_svc_install() {
	local pkgs=()
	if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
		pkgs+=(redis-server redis-tools)
	fi
	if ! _svc_mariadbd >/dev/null || ! command -v mariadb-install-db >/dev/null ||
		! command -v mariadb-admin >/dev/null; then
		pkgs+=(mariadb-server mariadb-client)
	fi
	if ! command -v etcd >/dev/null; then
		pkgs+=(etcd-server)
	fi
	if ! command -v curl >/dev/null; then
		pkgs+=(curl)
	fi
	if ! command -v gcc >/dev/null; then
		pkgs+=(gcc libc6-dev)
	fi
	[ ${#pkgs[@]} -eq 0 ] && return 0
	svc_apt_install "${pkgs[@]}"
}

# svc_apt_install installs Debian packages with apt-get (through sudo when
# not root), keeping their init scripts from starting anything. The test
# script uses it for chromium too.
svc_apt_install() {
	local pkgs=("$@")
	local sudo=()
	if ! _svc_is_root; then
		command -v sudo >/dev/null || {
			_svc_log "missing ${pkgs[*]}; not root and no sudo to install them"
			return 1
		}
		sudo=(sudo)
	fi
	_svc_log "installing ${pkgs[*]}"
	# Keep the packages' init scripts from starting system-wide servers: we
	# start our own. policy-rc.d exit 101 means "action forbidden".
	local policy=/usr/sbin/policy-rc.d made_policy=""
	if [ ! -e "$policy" ]; then
		printf '#!/bin/sh\nexit 101\n' | "${sudo[@]}" tee "$policy" >/dev/null
		"${sudo[@]}" chmod 755 "$policy"
		made_policy=1
	fi
	local rc=0
	"${sudo[@]}" apt-get update -q &&
		"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
			apt-get install -y -q --no-install-recommends "${pkgs[@]}" </dev/null || rc=$?
	[ -n "$made_policy" ] && "${sudo[@]}" rm -f "$policy"
	return "$rc"
}

# _svc_free_port prints a loopback TCP port nobody is listening on, from a
# random start in 20000-31999 (below Linux's ephemeral range, 32768+, which
# is where the tests' own port-0 listeners land). It skips ports given as
# arguments.
_svc_free_port() {
	local p=$((20000 + RANDOM % 12000)) i skip taken
	for ((i = 0; i < 500; i++, p = p >= 31999 ? 20000 : p + 1)); do
		taken=""
		for skip in "$@"; do [ "$p" = "$skip" ] && taken=1; done
		[ -n "$taken" ] && continue
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return 0
		fi
	done
	_svc_log "no free port found"
	return 1
}

# _svc_alive reports whether the process with the given pid still runs.
_svc_alive() { [ -n "$1" ] && kill -0 "$1" 2>/dev/null; }

# _svc_wait_until <seconds> <pid> <command...> retries the command every
# 0.1 s until it succeeds; it fails if the time is up or the process died.
_svc_wait_until() {
	local deadline=$((SECONDS + $1)) pid=$2
	shift 2
	until "$@" >/dev/null 2>&1; do
		_svc_alive "$pid" || return 1
		[ "$SECONDS" -lt "$deadline" ] || return 1
		sleep 0.1
	done
}

_svc_redis_pong() { [ "$(redis-cli -h 127.0.0.1 -p "$1" ping 2>/dev/null)" = PONG ]; }

_svc_start_redis() {
	local dir=$PROMPTD_SERVICES_DIR/redis port attempt as=()
	mkdir -p "$dir"
	if _svc_is_root; then
		if id redis >/dev/null 2>&1; then
			chown redis: "$dir"
			# setpriv execs redis-server, so $! is the server itself.
			as=(setpriv --reuid=redis --regid=redis --init-groups --)
		else
			_svc_log "no user 'redis'; running redis-server as root"
		fi
	fi
	# A port found free can be taken before redis binds it: try a few.
	for attempt in 1 2 3; do
		port=$(_svc_free_port "${_svc_mysql_port:-}") || return 1
		"${as[@]}" redis-server --bind 127.0.0.1 --port "$port" \
			--save '' --appendonly no --daemonize no \
			--dir "$dir" --logfile "$dir/redis.log" </dev/null &
		_svc_redis_pid=$!
		if _svc_wait_until 10 "$_svc_redis_pid" _svc_redis_pong "$port"; then
			_svc_redis_port=$port
			return 0
		fi
		_svc_log "redis-server on port $port did not start (attempt $attempt):"
		tail -n 5 "$dir/redis.log" >&2 2>/dev/null || true
		_svc_stop_pid "$_svc_redis_pid" 5
		_svc_redis_pid=""
	done
	return 1
}

_svc_etcd_health() { [[ "$(curl -fsS --max-time 1 "http://127.0.0.1:$1/health" 2>/dev/null)" == *'"true"'* ]]; }

# _svc_start_etcd starts one etcd member with its data in memory (/dev/shm
# when there is one: raft fsyncs every write) and the raft timing of
# internal/harness/testenv's members (50 ms heartbeat, 500 ms election timeout).
_svc_start_etcd() {
	local dir port peer attempt
	dir=$(mktemp -d /dev/shm/promptd-etcd.XXXXXX 2>/dev/null) || dir=$PROMPTD_SERVICES_DIR/etcd
	_svc_etcd_dir=$dir
	mkdir -p "$dir"
	for attempt in 1 2 3; do
		port=$(_svc_free_port "${_svc_mysql_port:-}" "${_svc_redis_port:-}") || return 1
		peer=$(_svc_free_port "$port" "${_svc_mysql_port:-}" "${_svc_redis_port:-}") || return 1
		etcd --name shared --data-dir "$dir/data" \
			--listen-client-urls "http://127.0.0.1:$port" --advertise-client-urls "http://127.0.0.1:$port" \
			--listen-peer-urls "http://127.0.0.1:$peer" --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
			--initial-cluster "shared=http://127.0.0.1:$peer" \
			--heartbeat-interval 50 --election-timeout 500 \
			--logger zap --log-level warn </dev/null >>"$dir/etcd.log" 2>&1 &
		_svc_etcd_pid=$!
		if _svc_wait_until 20 "$_svc_etcd_pid" _svc_etcd_health "$port"; then
			_svc_etcd_port=$port
			return 0
		fi
		_svc_log "etcd on port $port did not start (attempt $attempt):"
		tail -n 5 "$dir/etcd.log" >&2 2>/dev/null || true
		_svc_stop_pid "$_svc_etcd_pid" 5
		_svc_etcd_pid=""
		rm -rf "$dir/data"
	done
	return 1
}

_svc_mysql() { mariadb --no-defaults --socket="$_svc_mysql_sock" -uroot "$@"; }

_svc_start_mysql() {
	local mariadbd data=$PROMPTD_SERVICES_DIR/mysql run=$PROMPTD_SERVICES_DIR/mysql-run
	local user port attempt
	mariadbd=$(_svc_mariadbd) || { _svc_log "mariadbd not found"; return 1; }
	user=$(id -un)
	if _svc_is_root; then user=mysql; fi
	mkdir -p "$data" "$run" "$run/tmp"
	_svc_is_root && chown "$user": "$data" "$run" "$run/tmp"
	_svc_mysql_sock=$run/mysql.sock

	# --skip-test-db: no anonymous users or test database. normal root auth:
	# root@localhost with an empty password, over the socket only.
	# Smaller redo log than the 100 MB default: quicker to create.
	# A private tmpdir: the default /tmp is shared with the test suite's own
	# MariaDB instances, whose internal temporary tables use the same names.
	local common=(--datadir="$data" --tmpdir="$run/tmp" --innodb-log-file-size=16M)
	if ! mariadb-install-db --no-defaults "${common[@]}" --user="$user" \
		--auth-root-authentication-method=normal --skip-test-db \
		>"$run/install.log" 2>&1 </dev/null; then
		_svc_log "mariadb-install-db failed:"
		cat "$run/install.log" >&2
		return 1
	fi
	for attempt in 1 2 3; do
		port=$(_svc_free_port "${_svc_redis_port:-}") || return 1
		# utf8mb4 as in production (MySQL 8 defaults to it; MariaDB to latin1).
		# No native AIO: io_uring and libaio are often refused in containers.
		"$mariadbd" --no-defaults "${common[@]}" --user="$user" \
			--socket="$_svc_mysql_sock" --pid-file="$run/mysqld.pid" \
			--log-error="$run/error.log" \
			--port="$port" --bind-address=127.0.0.1 --skip-name-resolve \
			--character-set-server=utf8mb4 --collation-server=utf8mb4_general_ci \
			--innodb-flush-log-at-trx-commit=1 --innodb-use-native-aio=0 \
			--max-connections=500 </dev/null 2>>"$run/stderr.log" &
		_svc_mysql_pid=$!
		if _svc_wait_until 60 "$_svc_mysql_pid" \
			mariadb-admin --no-defaults --socket="$_svc_mysql_sock" -uroot ping; then
			_svc_mysql_port=$port
			break
		fi
		_svc_log "mariadbd on port $port did not start (attempt $attempt):"
		tail -n 20 "$run/stderr.log" "$run/error.log" >&2 2>/dev/null || true
		_svc_stop_pid "$_svc_mysql_pid" 30
		_svc_mysql_pid=""
	done
	[ -n "$_svc_mysql_pid" ] || return 1

	# Tests create and drop their own databases, hence ALL ON *.*.
	_svc_mysql <<-'SQL'
		CREATE USER 'promptd'@'127.0.0.1' IDENTIFIED BY 'promptd';
		CREATE USER 'promptd'@'localhost' IDENTIFIED BY 'promptd';
		GRANT ALL PRIVILEGES ON *.* TO 'promptd'@'127.0.0.1';
		GRANT ALL PRIVILEGES ON *.* TO 'promptd'@'localhost';
		CREATE DATABASE promptd_test CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
	SQL
}

# _svc_stop_pid <pid> <seconds> sends TERM, waits up to the given time, then
# sends KILL.
_svc_stop_pid() {
	local pid=$1 deadline=$((SECONDS + $2))
	_svc_alive "$pid" || { wait "$pid" 2>/dev/null || true; return 0; }
	kill -TERM "$pid" 2>/dev/null || true
	while _svc_alive "$pid" && [ "$SECONDS" -lt "$deadline" ]; do sleep 0.1; done
	if _svc_alive "$pid"; then
		_svc_log "pid $pid ignored TERM for $2s; sending KILL"
		kill -KILL "$pid" 2>/dev/null || true
	fi
	# Reap it when it is our child; harmless otherwise.
	wait "$pid" 2>/dev/null || true
}

start_services() {
	local t0
	t0=$(_svc_ms)
	_svc_install || return 1
	PROMPTD_SERVICES_DIR=$(mktemp -d -t promptd-test.XXXXXX) || return 1
	# The servers run as other users and must reach their subdirectories.
	chmod 755 "$PROMPTD_SERVICES_DIR"
	_svc_start_mysql || return 1
	_svc_start_redis || return 1
	_svc_start_etcd || return 1

	export PROMPTD_TEST_ETCD_ENDPOINTS="http://127.0.0.1:$_svc_etcd_port"
	export PROMPTD_TEST_ETCD_SERVER
	PROMPTD_TEST_ETCD_SERVER=$(command -v etcd)
	export PROMPTD_TEST_REDIS_URL="redis://127.0.0.1:$_svc_redis_port/0"
	export PROMPTD_TEST_MYSQL_DSN="promptd:promptd@tcp(127.0.0.1:$_svc_mysql_port)/promptd_test?parseTime=true&multiStatements=false"
	export PROMPTD_TEST_REDIS_SERVER
	PROMPTD_TEST_REDIS_SERVER=$(command -v redis-server)
	export PROMPTD_REQUIRE_INTEGRATION=1
	_svc_log "redis $PROMPTD_TEST_REDIS_URL (pid $_svc_redis_pid)"
	_svc_log "mariadb 127.0.0.1:$_svc_mysql_port (pid $_svc_mysql_pid), data in $PROMPTD_SERVICES_DIR"
	_svc_log "etcd $PROMPTD_TEST_ETCD_ENDPOINTS (pid $_svc_etcd_pid)"
	_svc_log "ready in $(($(_svc_ms) - t0)) ms"
}

stop_services() {
	if [ -n "$_svc_redis_pid" ]; then
		_svc_stop_pid "$_svc_redis_pid" 10
		_svc_redis_pid=""
	fi
	if [ -n "$_svc_mysql_pid" ]; then
		_svc_stop_pid "$_svc_mysql_pid" 30
		_svc_mysql_pid=""
	fi
	if [ -n "$_svc_etcd_pid" ]; then
		_svc_stop_pid "$_svc_etcd_pid" 10
		_svc_etcd_pid=""
	fi
	if [ -n "${_svc_etcd_dir:-}" ] && [ -d "$_svc_etcd_dir" ]; then
		rm -rf "$_svc_etcd_dir"
	fi
	_svc_etcd_dir=""
	if [ -n "$PROMPTD_SERVICES_DIR" ] && [ -d "$PROMPTD_SERVICES_DIR" ]; then
		rm -rf "$PROMPTD_SERVICES_DIR"
	fi
	PROMPTD_SERVICES_DIR=""
}
