#!/usr/bin/env bash
# Starts a real etcd 3.4 and ZooKeeper 3.8 on free loopback ports in a
# temporary directory, for tests and benchmarks. Source it:
#
#   source scripts/servers.sh && start_servers
#
# It installs the Debian packages when they are missing (the servers, and a
# JDK with SnakeYAML and Curator for the metadata and e2e tests), exports
# SHARDKEEPER_ETCD_ENDPOINTS and SHARDKEEPER_ZK_SERVERS, and stops both
# servers when the calling shell exits.

install_servers() {
	local need=()
	command -v etcd >/dev/null 2>&1 || need+=(etcd-server)
	command -v etcdctl >/dev/null 2>&1 || need+=(etcd-client)
	[ -f /usr/share/java/zookeeper.jar ] || need+=(zookeeper)
	command -v java >/dev/null 2>&1 || need+=(default-jre-headless)
	# internal/metadata loads what a node persists with SnakeYAML, as ShardingSphere does.
	command -v javac >/dev/null 2>&1 || need+=(default-jdk-headless)
	[ -f /usr/share/java/snakeyaml.jar ] || need+=(libyaml-snake-java)
	# internal/e2e reads a ZooKeeper namespace with Curator, as ShardingSphere does.
	[ -f /usr/share/java/curator-framework.jar ] || need+=(libcurator-framework-java)
	[ -f /usr/share/java/curator-recipes.jar ] || need+=(libcurator-recipes-java)
	command -v chromium >/dev/null 2>&1 || need+=(chromium)
	# internal/pgfront's tests drive the real psql.
	command -v psql >/dev/null 2>&1 || need+=(postgresql-client)
	# internal/e2e drives the MySQL console with the real mariadb client.
	command -v mariadb >/dev/null 2>&1 || need+=(mariadb-client)
	# internal/e2e reads every SHOW with Python's typed drivers, as applications do.
	/usr/bin/python3 -c 'import pymysql' >/dev/null 2>&1 || need+=(python3-pymysql)
	/usr/bin/python3 -c 'import psycopg2' >/dev/null 2>&1 || need+=(python3-psycopg2)
	# internal/e2e browses both consoles through JDBC's DatabaseMetaData, as GUI tools do.
	[ -f /usr/share/java/mariadb-java-client.jar ] || need+=(libmariadb-java)
	[ -f /usr/share/java/postgresql.jar ] || need+=(libpostgresql-jdbc-java)
	# internal/e2e builds the container image and runs it with podman on runc.
	command -v podman >/dev/null 2>&1 || need+=(podman)
	command -v runc >/dev/null 2>&1 || need+=(runc)
	[ -s /etc/ssl/certs/ca-certificates.crt ] || need+=(ca-certificates)
	# deploy/ checks the alerting rules with promtool check and test rules.
	command -v promtool >/dev/null 2>&1 || need+=(prometheus)
	# deploy/systemd checks the unit with systemd-analyze and systemd-sysusers.
	{ command -v systemd-analyze && command -v systemd-sysusers; } >/dev/null 2>&1 || need+=(systemd)
	# scripts/model.sh model-checks the worker-id fence protocol with SPIN (gcc builds its verifier).
	command -v spin >/dev/null 2>&1 || need+=(spin)
	command -v gcc >/dev/null 2>&1 || need+=(gcc)
	if [ ${#need[@]} -gt 0 ]; then
		echo "servers: installing ${need[*]} from Debian packages" >&2
		local sudo=""
		[ "$(id -u)" -eq 0 ] || sudo="sudo"
		$sudo apt-get update -qq
		DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
	fi
}

# free_port prints a TCP port on 127.0.0.1 that nothing listens on.
free_port() {
	local port
	for _ in $(seq 1 200); do
		port=$((20000 + RANDOM % 30000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			echo "$port"
			return 0
		fi
	done
	echo "servers: no free port found" >&2
	return 1
}

# wait_for WHAT PID CMD... runs CMD (which must bound its own time) until it
# succeeds, for at most 60 s; it gives up at once when the server's process
# PID has exited.
wait_for() {
	local what=$1 pid=$2 deadline=$((SECONDS + 60))
	shift 2
	while [ "$SECONDS" -lt "$deadline" ]; do
		if "$@" >/dev/null 2>&1; then
			return 0
		fi
		if ! kill -0 "$pid" 2>/dev/null; then
			echo "servers: $what exited; its log follows" >&2
			return 1
		fi
		sleep 0.2
	done
	echo "servers: $what did not become ready; its log follows" >&2
	return 1
}

zk_ok() {
	exec 3<>"/dev/tcp/127.0.0.1/$1" || return 1
	printf 'ruok' >&3
	local answer
	answer=$(timeout 2 cat <&3)
	exec 3>&-
	[ "$answer" = imok ]
}

# start_zookeeper starts ZooKeeper on a free port other than those in $1
# and waits until it answers; it sets zp, SK_ZK_PID. A server that exits at
# start (its port taken meanwhile by another test's server, or anything
# else) is shown with its log and started again on another port with a
# fresh data directory, three times at most.
start_zookeeper() {
	local attempt logger=""
	# Its warnings and errors (a port in use) go to zk.log where SLF4J's
	# simple binding is installed; without one it logs nothing.
	[ -f /usr/share/java/slf4j-simple.jar ] && logger=:/usr/share/java/slf4j-simple.jar
	for attempt in 1 2 3; do
		zp=$(free_port) || return 1
		case " $1 " in *" $zp "*) continue ;; esac
		rm -rf "$SK_SERVERS_DIR/zk"
		mkdir -p "$SK_SERVERS_DIR/zk/data"
		# Short ticks keep session-expiry tests fast (min session timeout 2 ticks);
		# the max is raised so ordinary 30-60 s sessions are granted as asked.
		cat >"$SK_SERVERS_DIR/zk/zoo.cfg" <<CFG
tickTime=200
minSessionTimeout=400
maxSessionTimeout=60000
dataDir=$SK_SERVERS_DIR/zk/data
clientPort=$zp
clientPortAddress=127.0.0.1
admin.enableServer=false
4lw.commands.whitelist=*
maxClientCnxns=0
CFG
		java -Dzookeeper.log.dir="$SK_SERVERS_DIR/zk" -Dlog4j.configuration=file:/etc/zookeeper/conf/log4j.properties \
			-Dorg.slf4j.simpleLogger.defaultLogLevel=warn -cp "/etc/zookeeper/conf:/usr/share/java/zookeeper.jar$logger" \
			org.apache.zookeeper.server.ZooKeeperServerMain "$SK_SERVERS_DIR/zk/zoo.cfg" \
			>"$SK_SERVERS_DIR/zk.log" 2>&1 &
		SK_ZK_PID=$!
		if wait_for "ZooKeeper on 127.0.0.1:$zp" "$SK_ZK_PID" zk_ok "$zp"; then
			return 0
		fi
		tail -20 "$SK_SERVERS_DIR/zk.log" >&2
		if kill -0 "$SK_ZK_PID" 2>/dev/null; then
			return 1 # running but not answering for 60 s: not a start race
		fi
		wait "$SK_ZK_PID" 2>/dev/null
		echo "servers: ZooKeeper exited at start (attempt $attempt); trying another port" >&2
	done
	return 1
}

stop_servers() {
	[ -n "${SK_ETCD_PID:-}" ] && kill "$SK_ETCD_PID" 2>/dev/null
	[ -n "${SK_ZK_PID:-}" ] && kill "$SK_ZK_PID" 2>/dev/null
	wait 2>/dev/null
	[ -n "${SK_SERVERS_DIR:-}" ] && rm -rf "$SK_SERVERS_DIR"
	return 0
}

start_servers() {
	install_servers || return 1
	SK_SERVERS_DIR=$(mktemp -d /tmp/shardkeeper-servers.XXXXXX)
	trap stop_servers EXIT

	local ec ep zp attempt
	# A free port can be taken by someone else before etcd binds it: then
	# etcd exits at once, and it is started again on other ports.
	for attempt in 1 2 3; do
		ec=$(free_port) && ep=$(free_port) || return 1
		rm -rf "$SK_SERVERS_DIR/etcd"
		etcd --name sk --data-dir "$SK_SERVERS_DIR/etcd" \
			--listen-client-urls "http://127.0.0.1:$ec" --advertise-client-urls "http://127.0.0.1:$ec" \
			--listen-peer-urls "http://127.0.0.1:$ep" --initial-advertise-peer-urls "http://127.0.0.1:$ep" \
			--initial-cluster "sk=http://127.0.0.1:$ep" --log-level error \
			>"$SK_SERVERS_DIR/etcd.log" 2>&1 &
		SK_ETCD_PID=$!
		sleep 0.5
		kill -0 "$SK_ETCD_PID" 2>/dev/null && break
		grep -q "address already in use" "$SK_SERVERS_DIR/etcd.log" || break
		echo "servers: etcd's port was taken meanwhile (attempt $attempt); trying other ports" >&2
	done

	wait_for "etcd on 127.0.0.1:$ec" "$SK_ETCD_PID" etcdctl --dial-timeout 1s --command-timeout 2s --endpoints "http://127.0.0.1:$ec" endpoint health ||
		{ tail -20 "$SK_SERVERS_DIR/etcd.log" >&2; return 1; }
	start_zookeeper "$ec $ep" || return 1

	export SHARDKEEPER_ETCD_ENDPOINTS="http://127.0.0.1:$ec"
	export SHARDKEEPER_ZK_SERVERS="127.0.0.1:$zp"
	export SHARDKEEPER_REQUIRE_SERVERS=1
	echo "servers: etcd $(etcd --version | head -1 | awk '{print $3}') at $SHARDKEEPER_ETCD_ENDPOINTS, ZooKeeper at $SHARDKEEPER_ZK_SERVERS" >&2
}
