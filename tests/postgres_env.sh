# Sourced by `make test` (POSIX sh): a PostgreSQL server for the PostgreSQL store's tests
# (tests/store/pg.py). CARDGAMES_TEST_PG when set; else the machine's server on 127.0.0.1:5432
# (user postgres, trust auth) when it answers; else a private throw-away cluster on port 55432
# (Debian's `postgresql` package, installed first when missing and running as root), stopped
# when the recipe's shell exits. CARDGAMES_PRIVATE_PG=1 forces the private cluster.
if [ -z "${CARDGAMES_TEST_PG:-}" ] && { [ -n "${CARDGAMES_PRIVATE_PG:-}" ] \
    || ! command -v pg_isready >/dev/null 2>&1 || ! pg_isready -q -h 127.0.0.1 -p 5432; }; then
  if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
    if [ "$(id -u)" != 0 ]; then
      echo "tests need PostgreSQL: run a server on 127.0.0.1:5432 (user postgres, trust)," \
           "set CARDGAMES_TEST_PG, or install Debian's postgresql package" >&2
      exit 1
    fi
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql
  fi
  pg_bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
  pg_dir=$(mktemp -d /tmp/cardgames-pg.XXXXXX)
  pg_as=""  # initdb refuses to run as root: the cluster belongs to the postgres user then
  if [ "$(id -u)" = 0 ]; then
    chown postgres "$pg_dir"
    pg_as="runuser -u postgres --"
  fi
  $pg_as "$pg_bin/initdb" -D "$pg_dir/data" -A trust -U postgres >/dev/null
  $pg_as "$pg_bin/pg_ctl" -D "$pg_dir/data" -l "$pg_dir/log" -w \
    -o "-p 55432 -k $pg_dir -c listen_addresses=127.0.0.1" start >/dev/null
  trap '$pg_as "$pg_bin/pg_ctl" -D "$pg_dir/data" -m fast stop >/dev/null; rm -rf "$pg_dir"' EXIT
  export CARDGAMES_TEST_PG=postgresql://postgres@127.0.0.1:55432/postgres
fi
