"""A real network partition, measured by hand (not a test: it needs root, network namespaces
and 40 s and more): a private PostgreSQL in a network namespace of its own behind a veth pair,
a store connected to it over TCP, and the link cut by blackhole routes on both sides (every
packet dropped, neither end told: the kernels' own timers run, unlike behind the test proxy of
tests/store/partition.py). It prints when the server ends each of the engine's sessions (its
keepalives and tcp_user_timeout), how long a write takes to fail, and how soon the store
writes again after the heal. Run from the repository's root, as root:

    PYTHONPATH=. python tests/store/partition_netns.py 40   # the partition's length, seconds

Measured on the 2-core test machine (docs/operations.md, On PostgreSQL): every session of the
engine ended by the server 25.5 s after the cut, a write failed after 3.8 s, written again
0.1 s after the heal; before, a write failed after 20 s and the pool's sessions outlived a
40 s partition (the system's keepalives: two hours)."""
import asyncio
import glob
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import time

import psycopg
from structlog.testing import capture_logs
from engine_service.store import ActionRecord, StoreError
from engine_service.store.postgres import PostgresStore
from tests.store.test_store import record

NS, H, N = "pga_ns", "pga_h", "pga_n"
def sh(*a, check=True):
    return subprocess.run(a, capture_output=True, text=True, check=check)
bindir = sorted(glob.glob("/usr/lib/postgresql/*/bin"))[-1]
d = tempfile.mkdtemp(prefix="pga-netns-"); os.chown(d, pwd.getpwnam("postgres").pw_uid, -1)
data = f"{d}/data"
def cleanup():
    sh("ip", "route", "del", "blackhole", "10.203.0.2/32", check=False)
    try:
        os.kill(int(open(f"{data}/postmaster.pid").read().split()[0]), 3)
        time.sleep(1)
    except Exception as e:
        print("cleanup", e)
    sh("ip", "link", "del", H, check=False); sh("ip", "netns", "del", NS, check=False); shutil.rmtree(d, ignore_errors=True)
try:
    sh("ip", "netns", "add", NS)
    sh("ip", "link", "add", H, "type", "veth", "peer", "name", N); sh("ip", "link", "set", N, "netns", NS)
    sh("ip", "addr", "add", "10.203.0.1/30", "dev", H); sh("ip", "link", "set", H, "up")
    sh("ip", "netns", "exec", NS, "ip", "addr", "add", "10.203.0.2/30", "dev", N)
    sh("ip", "netns", "exec", NS, "ip", "link", "set", N, "up"); sh("ip", "netns", "exec", NS, "ip", "link", "set", "lo", "up")
    sh("runuser", "-u", "postgres", "--", f"{bindir}/initdb", "-D", data, "-A", "trust", "-U", "postgres")
    with open(f"{data}/pg_hba.conf", "a") as f: f.write("host all all 10.203.0.0/30 trust\n")
    sh("ip", "netns", "exec", NS, "runuser", "-u", "postgres", "--", f"{bindir}/pg_ctl", "-D", data, "-l", f"{d}/log", "-w",
       "-o", f"-p 5432 -k {d} -c listen_addresses=10.203.0.2", "start")
    admin = f"host={d} port=5432 user=postgres dbname=postgres"  # the Unix socket: not partitioned
    def sessions():
        with psycopg.connect(admin, autocommit=True) as c:
            return {r[0]: r[1] for r in c.execute("SELECT pid, application_name FROM pg_stat_activity WHERE client_addr IS NOT NULL").fetchall()}
    async def go():
        st = PostgresStore("postgresql://postgres@10.203.0.2:5432/postgres")
        await st.open()
        await st.create_match(record(status="active"))
        await st.append_action("m1", ActionRecord(1, 0, "pass", client_action_id="c1"))
        await asyncio.gather(*(st.load_match("m1") for _ in range(4)))
        before = sessions(); print("sessions before:", before)
        with capture_logs() as logs:
            sh("ip", "route", "add", "blackhole", "10.203.0.2/32")
            sh("ip", "netns", "exec", NS, "ip", "route", "add", "blackhole", "10.203.0.1/32")
            cut = time.monotonic(); print("partition at 0 s")
            gone = {}
            while time.monotonic() - cut < float(sys.argv[1]):
                now = sessions()
                for pid in before:
                    if pid not in now and pid not in gone:
                        gone[pid] = round(time.monotonic() - cut, 1); print(f"  server ended {before[pid]!r} pid {pid} at {gone[pid]} s")
                try:
                    t = time.monotonic(); await st.append_action("m1", ActionRecord(2, 0, "pass", client_action_id="c2")); print("written?!")
                except StoreError as e:
                    if time.monotonic() - t > 1: print(f"  write failed after {time.monotonic()-t:.1f} s at {time.monotonic()-cut:.1f} s: {str(e)[:110]}")
                await asyncio.sleep(0.5)
            sh("ip", "route", "del", "blackhole", "10.203.0.2/32")
            sh("ip", "netns", "exec", NS, "ip", "route", "del", "blackhole", "10.203.0.1/32")
            healed = time.monotonic(); print(f"healed at {healed-cut:.1f} s")
            while True:
                try:
                    await st.append_action("m1", ActionRecord(2, 0, "pass", client_action_id="c2")); break
                except StoreError:
                    await asyncio.sleep(0.1)
            print(f"written again {time.monotonic()-healed:.1f} s after the heal")
        for e in logs:
            if e["event"].startswith(("db_", "store_sessions")): print("  log", e["event"], {k: v for k, v in e.items() if k not in ("event", "db", "log_level")})
        await st.close()
    asyncio.run(go())
finally:
    cleanup()
