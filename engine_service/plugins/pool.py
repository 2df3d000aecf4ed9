"""Bot worker processes: decisions run off the event loop, under a hard deadline.

Why not ``concurrent.futures.ProcessPoolExecutor``: it cannot stop one hung task, and one dead
worker breaks the whole executor (``BrokenProcessPool``) and with it the decisions of every
other match. Here each worker is a process with its own socket; the pool hands a decision to an
idle worker and waits for the answer until the deadline, in a thread, so the event loop never
blocks. A worker that misses the deadline is killed (SIGKILL); one that dies (a bot called
``os._exit``, a segfault, the OOM killer) is noticed by end-of-file on its socket. Either way
that decision is a failure (``timeout`` / ``crash``), a ready spare worker takes its place at
once (a new spare starts in the background), and no other match is affected. One bot may hold
at most ``size - 1`` workers at a time, so even a bot that hangs in many matches at once leaves
a worker for the others.

Workers are never forks of the service (forking a process that runs gRPC's threads is unsafe):
a *zygote*, a fresh interpreter (``python -m engine_service.plugins.pool --zygote``) that
loaded the plugins once from the same :class:`~engine_service.plugins.manager.PluginSettings`
and ``sys.path``, forks them on request and hands their socket back over a Unix socket. Only
the request and the reply cross a worker's socket. Should the zygote die, workers start as
fresh interpreters until it is restarted; each loads the plugins on its own and says which bots
it has, as the zygote does, so that one lacking a bot the engine lists is logged
(``bot_worker_catalog_differs``).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import Connection
from typing import Any, Callable, Iterator

import structlog

from ..child_exit import wait_for_exit
from .manager import PluginSettings, load_catalog
from .runner import CRASH, TIMEOUT, BotRunner, Reply

log = structlog.get_logger("engine_service.plugins")

READY_TIMEOUT_S = 120.0  # importing the plugins in a fresh worker; generous on a loaded machine
RESTART_BACKOFF_S = 0.5
SPARES = 2  # ready workers kept aside to replace a killed one without a start-up gap
MAX_BACKOFF_S = 30.0
SHUTDOWN_GRACE_S = 2.0
#: How long a zygote that has answered once (its plugins are loaded) may take to fork a worker
#: (milliseconds, seconds on a loaded machine) before it is taken for hung, killed and restarted.
FORK_TIMEOUT_S = 10.0
#: The share of a decision's time (what was left when it was asked for) that a bot must have
#: had, when a worker took the decision, for a worker it then cost to count against it
#: (WorkerPool's ``on_replace``: the host benches a bot that keeps costing workers).
FAIR_SHARE = 0.5
#: How often the zygote looks again at a killed worker that had not ended yet when it was told
#: to reap it (:func:`_zygote`).
REAP_POLL_S = 0.05


class WorkerLost(Exception):
    """The worker died while idle: no decision was lost; the pool retries on another."""


def _quiet_logging() -> None:
    """A worker (or the zygote) reports only what is critical, as JSON on the engine's stderr,
    through a copy of that descriptor of its own: the parent already logged the plugin load.
    Its stdout and stderr (descriptors 1 and 2, ``sys.stdout``, ``sys.stderr``) go to
    /dev/null: whatever a bot prints there (a debugging ``print(request.view)``, the logging
    module's or a warning's last-resort output) would name its hand in the engine's JSON log,
    in a line that is not JSON. A worker's crash is seen by the parent all the same."""
    own = os.fdopen(os.dup(2), "w", buffering=1, closefd=True)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    os.close(null)
    sys.stdout = sys.stderr = open(os.devnull, "w")
    structlog.configure(
        processors=[structlog.processors.add_log_level, structlog.processors.TimeStamper(fmt="iso"),
                    structlog.processors.JSONRenderer()],
        wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL),
        logger_factory=structlog.PrintLoggerFactory(own),
    )


class PoolClosed(RuntimeError):
    """The pool closed while a worker was being started."""


def _serve(conn: Connection, runner: BotRunner, loaded: tuple[list[str], list[Any]] | None = None) -> None:
    """A worker's life: say it is ready, then answer requests until told to stop (``None``) or
    the parent goes away (end-of-file). What a bot prints goes nowhere (:func:`_quiet_logging`,
    before the plugins are loaded), and a failure ends the worker without a word (below).

    ``loaded``: a fresh-interpreter worker's own bots and load failures, said with ``ready``
    as the zygote says its own (:meth:`WorkerProcess.wait_ready`): it loaded the plugins on its
    own, under the load time limit, and may lack a bot the engine lists. A zygote's fork says
    nothing more: it has the zygote's bots, which the engine compared already."""
    conn.send(("ready", os.getpid()) if loaded is None else ("ready", os.getpid(), *loaded))
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        name, game_id, seat, view, legal, seed, budget_s = msg
        try:
            reply = runner.decide(name, game_id, seat, view, legal, seed, budget_s)
        except BaseException:  # noqa: BLE001 - a bot's sys.exit or KeyboardInterrupt
            # the worker ends (the parent reads end-of-file: a crash) without a word: Python
            # would print the exit message or a traceback, the bot's words (its cards), to the
            # engine's stderr
            os._exit(1)
        try:
            conn.send(reply)
        except (BrokenPipeError, OSError):
            return


def _oom_first() -> None:
    """Make this process (and the workers the zygote forks: they inherit it) the kernel's first
    choice when memory runs out: a bot that allocates without bound must cost its worker (a
    ``crash``), not the engine, which the OOM killer could otherwise pick (it weighs size, and
    in a container with a memory limit the engine can be the largest process). Raising one's
    own score needs no privilege; where /proc is missing or read-only it is left as it is."""
    try:
        with open("/proc/self/oom_score_adj", "w") as f:
            f.write("1000")
    except OSError:
        pass


@contextlib.contextmanager
def _ended_with_the_parent(fd: int) -> Iterator[None]:
    """Exit at once if the parent goes away (end-of-file on ``fd``) while the body, the
    plugins' load, runs. The zygote and a fresh worker ignore SIGTERM and have their own
    session, and otherwise notice their parent's end only when they next read their socket,
    after the load: an engine stopped during its start (a stop signal before it serves ends
    it at once) left its zygote importing a plugin that hangs, for up to the whole load time
    limit (an hour at most) per plugin, holding what the plugins hold. The parent writes
    nothing before the load is reported, so a readable socket meanwhile is its end.

    A thread, gone before the body returns (the zygote forks only once no thread runs), with
    every signal blocked: the load time limit's SIGALRM must interrupt the main thread's
    import, not wake this one."""
    wake_r, wake_w = os.pipe()
    watched = socket.socket(fileno=os.dup(fd))

    def watch() -> None:
        readable, _, _ = select.select([watched, wake_r], [], [])
        if wake_r in readable:
            return
        try:
            gone = watched.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
        except BlockingIOError:
            return
        except OSError:
            gone = True
        if gone:
            os._exit(0)

    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())
    try:
        thread = threading.Thread(target=watch, name="parent-watch", daemon=True)
        thread.start()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
    try:
        yield
    finally:
        os.write(wake_w, b"x")
        thread.join()
        watched.close()  # a copy: the socket itself stays open
        os.close(wake_r)
        os.close(wake_w)


def _process_main(argv: list[str]) -> None:
    """``python -m engine_service.plugins.pool {--worker|--zygote} FD``: FD is this process's
    end of a Unix socket pair; the first message on it is ``(settings, sys.path)``."""
    role, fd = argv[0], int(argv[1])
    # the parent decides when we stop (end-of-file on our socket, or SIGKILL). SIGTERM too:
    # systemd's default KillMode=control-group sends it to every process of the service at
    # once, and a worker that died of it mid-decision while the engine began its drain was a
    # crash (bot_failed, the auto-move written for the bot), its idle ones bot_worker_lost
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    _oom_first()
    _quiet_logging()
    conn = Connection(fd)
    settings, path = conn.recv()
    sys.path[:] = path
    with _ended_with_the_parent(fd):
        catalog = load_catalog(settings)
    if role == "--worker":
        _serve(conn, BotRunner(catalog), loaded=(catalog.names(), catalog.failures))
        return
    # what loaded here, for the engine to list only bots its workers have (Zygote.loaded):
    # each process applies the load time limit on its own, and a plugin whose import takes
    # about the limit may load in one and not the other
    conn.send(("loaded", catalog.names(), catalog.failures))
    control = socket.socket(fileno=os.dup(fd))  # the messages are read whole: nothing buffered
    conn.close()
    # what the plugins' import built, frozen out of the collector's view before the first
    # fork (as gc_policy does in the engine; the gc module's documentation advises it before
    # forking): the zygote's end at the pool's close (the engine's stop, which waits for it)
    # no longer collects it, which took about 60 ms, and its workers' collections never walk
    # it, nor write to the pages they share with the zygote
    gc.freeze()
    _zygote(control, catalog)


def _zygote(control: socket.socket, catalog: Any) -> None:
    """Fork ready-to-serve workers on request, each with a fresh socket pair whose parent end
    travels back over ``control`` (SCM_RIGHTS). The zygote imported everything once, so a
    replacement worker costs a fork (milliseconds) instead of an interpreter start and the
    plugins' imports (a second or more on a busy machine). It runs no threads, which keeps
    forking safe.

    A child is reaped only once the engine is done with it (``R`` and its pid: it killed the
    worker and its process group, :meth:`WorkerProcess.kill`). Until then a dead worker stays
    a zombie, which holds its pid and its process group's id: nothing else can get them while
    the engine may still signal them. Reaped at once (SIGCHLD ignored, as it was), a worker
    that died idle left its pid free for minutes, until the engine next used it; a new
    process of this user given that pid was then taken for the worker, killed, and its group
    with it."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # not ignored, whatever was inherited: no auto-reaping
    done: set[int] = set()  # children the engine is done with, reaped once they have ended
    while True:
        try:
            # a child told killed has often not ended yet when its R arrives (the kill was
            # just sent): it is looked at again every REAP_POLL_S until reaped, rather than
            # left a zombie until the engine's next command, which an idle pool may never send
            if done and not select.select([control], [], [], REAP_POLL_S)[0]:
                command = None
            else:
                command = control.recv(1)
            if command == b"R":
                done.add(int.from_bytes(control.recv(8, socket.MSG_WAITALL), "little"))
        except OSError:
            return
        for pid in list(done):
            try:
                ended = os.waitpid(pid, os.WNOHANG)[0] != 0
            except ChildProcessError:
                ended = True
            if ended:
                done.discard(pid)
        if command is None or command == b"R":
            continue
        if command != b"F":  # end-of-file: the host is gone or closed the pool
            for pid in done:  # killed: they end at once, and are gone when the pool has closed
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, 0)
            return
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        pid = os.fork()
        if pid == 0:  # the new worker
            try:
                # its own process group (a fresh-interpreter worker has its own session):
                # killing the worker kills the group, so a process its bot started (a
                # subprocess, a multiprocessing pool, a fork) does not outlive it
                os.setpgid(0, 0)
                control.close()
                theirs.close()
                _serve(Connection(mine.detach()), BotRunner(catalog))
            finally:
                os._exit(0)
        mine.close()
        try:
            socket.send_fds(control, [pid.to_bytes(8, "little")], [theirs.fileno()])
        except OSError:
            return
        finally:
            theirs.close()


#: The engine's own variables a worker keeps: the plugin selection. Every other
#: ``CARDGAMES_*`` variable (the admin token, the database URL with its password...) and
#: libpq's ``PG*`` stay with the engine: a worker gets its settings over its socket.
WORKER_ENV_KEPT = ("CARDGAMES_BOT_PLUGINS", "CARDGAMES_DISABLE_PLUGIN_AUTOLOAD")


def worker_environment(env: dict[str, str] | os._Environ) -> dict[str, str]:
    """The environment of the bot processes: the engine's without its secrets, so that a bot
    cannot read the admin token and use the admin API to see every hand (docs/bots.md:
    plugins are still trusted code, running as the engine's user)."""
    out = {k: v for k, v in env.items()
           if not (k.startswith("CARDGAMES_") or k.startswith("PG")) or k in WORKER_ENV_KEPT}
    out["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    return out


def _spawn_process(role: str, settings: PluginSettings) -> tuple[subprocess.Popen, socket.socket]:
    """Start ``python -m engine_service.plugins.pool ROLE FD`` with one end of a socket pair;
    return the process and our end (the settings already sent)."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "engine_service.plugins.pool", role, str(theirs.fileno())],
            pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, close_fds=True,
            env=worker_environment(os.environ),
            start_new_session=True)  # a terminal's Ctrl-C goes to the parent only
    finally:
        theirs.close()
    first = Connection(os.dup(ours.fileno()))
    first.send((settings, list(sys.path)))
    first.close()
    return proc, ours


def log_missing_bots(expected: frozenset[str] | None, loaded: tuple[list[str], list[Any]],
                     *, process: str, pid: int) -> list[str]:
    """Log ``bot_worker_catalog_differs`` when a bot process that loaded the plugins on its own
    (``process``: ``zygote``, one restarted after the first died; ``worker``, a fresh
    interpreter started while the zygote failed) lacks bots the engine lists (``expected``;
    None: the host has not compared yet). The engine's list is published by then, so the
    operator is told which bots' decisions in that process can only fail (``unknown_bot``),
    and why: the process's own load failures. Returns the missing names, sorted."""
    missing = sorted(expected - set(loaded[0])) if expected is not None else []
    if missing:
        log.error("bot_worker_catalog_differs", process=process, pid=pid, missing=missing,
                  failures=[f"{f.plugin} ({f.stage}): {f.error}" for f in loaded[1]])
    return missing


class Zygote:
    """The parent's handle on the zygote process (see :func:`_zygote`); thread-safe."""

    def __init__(self, settings: PluginSettings, expected: frozenset[str] | None = None) -> None:
        """``expected``: the bots the host lists (a zygote restarted after the first died):
        one the new zygote did not load (a plugin that timed out this time) is logged
        (``bot_worker_catalog_differs``), its decisions failing as ``unknown_bot``."""
        self._expected = expected
        self._lock = threading.Lock()
        self.process, self._control = _spawn_process("--zygote", settings)
        # the first fork waits for the plugins' imports, however slow (no bot has run yet, so
        # none can have stopped the zygote); the next ones are bounded (fork())
        self._loaded: tuple[list[str], list[Any]] | None = None
        self._loaded_read = False
        self._unreaped: list[int] = []  # its children to reap, not yet told (reap())

    def loaded(self, timeout: float | None) -> tuple[list[str], list[Any]] | None:
        """The names of the bots the zygote loaded and its load failures
        (:class:`~engine_service.plugins.manager.PluginFailure`), as it reports them once its
        plugins are loaded; None when it has not within ``timeout`` seconds (None: however
        long it takes), or died first. Its workers are its forks: they have exactly these."""
        with self._control_held():
            return self._read_loaded(timeout)

    @contextlib.contextmanager
    def _control_held(self) -> Iterator[None]:
        """The control socket, to this thread alone; the reaps told meanwhile (:meth:`reap`)
        are sent as it is let go."""
        try:
            with self._lock:
                yield
        finally:
            self._send_pending_reaps()

    def _read_loaded(self, timeout: float | None) -> tuple[list[str], list[Any]] | None:
        """Read the zygote's first message (under the lock; before the first fork, while the
        control socket is still blocking: a socket timeout would make the descriptor this
        reads through non-blocking too)."""
        if self._loaded_read:
            return self._loaded
        conn = Connection(os.dup(self._control.fileno()))
        try:
            if not conn.poll(timeout):
                return None
            msg = conn.recv()
        except (EOFError, OSError):
            msg = None
        finally:
            conn.close()
        self._loaded_read = True  # read or lost: it comes once
        if isinstance(msg, tuple) and len(msg) == 3 and msg[0] == "loaded":
            self._loaded = (list(msg[1]), list(msg[2]))
            log_missing_bots(self._expected, self._loaded, process="zygote", pid=self.process.pid)
        return self._loaded

    def fork(self) -> tuple[int, int]:
        """A new worker: its pid and our end of its socket (OSError if the zygote is gone or
        does not answer in time).

        A zygote that is alive but does not answer (a bot sent its parent SIGSTOP, or it hung)
        is killed: waiting on it for ever, under the lock, used to starve the pool of workers
        for good, every bot's decisions then timing out; dead, it is restarted
        (WorkerPool._new_worker), and this worker starts as a fresh interpreter meanwhile."""
        with self._control_held():
            self._read_loaded(None)  # not yet read: the zygote sends it before any fork
            try:
                self._control.sendall(b"F")
                data, fds, _flags, _addr = socket.recv_fds(self._control, 8, 1)
            except TimeoutError:
                self.process.kill()
                raise OSError("the bot worker zygote did not answer in time: killed") from None
            if len(data) != 8 or len(fds) != 1:
                for fd in fds:
                    os.close(fd)
                raise OSError("the bot worker zygote did not answer")
            self._control.settimeout(FORK_TIMEOUT_S)
            return int.from_bytes(data, "little"), fds[0]

    def alive(self) -> bool:
        return self.process.poll() is None

    def reap(self, pid: int) -> None:
        """Tell the zygote the engine is done with its child ``pid`` (killed, with its group):
        it may reap it now (:func:`_zygote`). Never waits: while a fork holds the control
        socket (up to ``FORK_TIMEOUT_S``; the pool's close at exit must not), the pid is told
        as that fork lets go of it (it was told only with the next fork or reap, the zombie
        lasting until then: hours in an idle pool). A zygote gone has left its children to
        init."""
        self._unreaped.append(pid)
        self._send_pending_reaps()

    def _send_pending_reaps(self) -> None:
        """Send the pids to reap unless another thread holds the control socket: that one
        sends them as it lets go (:meth:`_control_held`)."""
        while self._unreaped and self._lock.acquire(blocking=False):
            try:
                self._send_reaps()
            finally:
                self._lock.release()

    def _send_reaps(self) -> None:
        """Send the zygote the pids to reap (under the lock)."""
        while self._unreaped:
            pid = self._unreaped.pop()
            try:
                self._control.sendall(b"R" + pid.to_bytes(8, "little"))
            except OSError:
                return

    def close(self) -> None:
        try:
            self._control.close()
        except OSError:
            pass
        if wait_for_exit(self.process, SHUTDOWN_GRACE_S) is None:
            self.process.kill()
            self.process.wait()


def _pidfd_of(pid: int) -> int | None:
    """A pidfd for ``pid`` (Linux 5.3 and later), None where the system has none."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def _zombie(pid: int) -> bool:
    """Whether ``pid`` has ended but is not reaped yet (False where /proc cannot tell)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return False


class WorkerProcess:
    """One worker process and the parent's end of its socket. Used from one thread at a time.

    Workers are forked by the :class:`Zygote` (or, if it has died, started as a fresh
    interpreter): never a fork of the host itself, so nothing of the service (gRPC threads,
    the event loop, open matches) is inherited, and a worker is as isolated as an external bot
    program would be.

    Its pid and process group id are signalled only while they are its own: until
    :meth:`kill` has reaped it (or had the zygote reap it: :meth:`Zygote.reap`), a dead worker
    stays a zombie holding both, so :meth:`alive` asks without reaping (``waitid`` with
    ``WNOWAIT`` for a fresh interpreter, the child of the engine; a pidfd, where the system
    has them, for a zygote's fork), and once :meth:`kill` has reaped it (``reaped``) nothing
    signals it again. Residual risk: a worker whose zygote died is init's child, reaped by
    init when it ends; its own pid is still signalled through its pidfd, but once it is
    reaped its process group's id, if no process of the group is left, may be given to a
    new process that makes itself a group leader before :meth:`kill` signals the group.
    Without pidfds (not Linux), such a worker is signalled by its pid, with the same risk,
    and without ``waitid`` (macOS) a fresh interpreter is reaped by the :meth:`alive` that
    finds it dead, its group signalled after that.
    """

    def __init__(self, pid: int, fd: int, popen: subprocess.Popen | None = None,
                 zygote: Zygote | None = None) -> None:
        self.pid = pid
        self.conn = Connection(fd)
        self.popen = popen
        self.zygote = zygote  # the zygote that forked it (reaps it when told: kill())
        # a zygote's fork, unreaped (the zygote holds it: Zygote.reap), so the pid is its own
        self._pidfd = _pidfd_of(pid) if popen is None else None
        self.ready = False
        self.broken = False  # killed or dead: must be replaced
        self.reaped = False  # killed and reaped: its pid may be another process's now
        #: a fresh-interpreter worker's bots and load failures, as it said them when ready
        #: (None for a zygote's fork: the zygote's)
        self.loaded: tuple[list[str], list[Any]] | None = None

    @classmethod
    def start(cls, settings: PluginSettings, zygote: Zygote | None,
              closed: Callable[[], bool] = lambda: False) -> "WorkerProcess":
        """A new worker, forked by the zygote, or a fresh interpreter when the zygote fails.
        ``closed``: whether the pool has closed meanwhile (its zygote then went with it, which
        is no failure, and no worker is wanted any more: PoolClosed)."""
        if zygote is not None:
            try:
                pid, fd = zygote.fork()
                return cls(pid, fd, zygote=zygote)
            except OSError:
                if closed():
                    raise PoolClosed("the bot worker pool is closed") from None
                log.error("bot_worker_zygote_failed")
        proc, sock = _spawn_process("--worker", settings)
        return cls(proc.pid, sock.detach(), proc)

    def alive(self) -> bool:
        """Whether the worker process runs, asked without reaping it (see the class)."""
        if self.reaped:
            return False
        if self.popen is not None:
            if not hasattr(os, "waitid"):  # macOS: poll() reaps it (see the class's residual risk)
                return self.popen.poll() is None
            try:
                return os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None
            except ChildProcessError:
                return False
        if self._pidfd is not None:
            readable = select.poll()
            readable.register(self._pidfd, select.POLLIN)  # a pidfd is readable once it has ended
            return not readable.poll(0)
        try:
            os.kill(self.pid, 0)
        except (ProcessLookupError, PermissionError):
            return False
        return not _zombie(self.pid)

    def wait_ready(self, timeout: float) -> bool:
        """Block until the worker has loaded its plugins (False: it died or took too long)."""
        try:
            if not self.broken and self.conn.poll(timeout):
                msg = self.conn.recv()
                self.ready = isinstance(msg, tuple) and msg[:1] == ("ready",)
                if self.ready and len(msg) == 4:
                    self.loaded = (list(msg[2]), list(msg[3]))
        except (EOFError, OSError):
            self.ready = False
        if not self.ready:
            self.kill()
        return self.ready

    def call(self, request: tuple, deadline: float) -> Reply:
        """Send one request and wait for the reply until ``deadline`` (``time.monotonic``).

        Raises :class:`WorkerLost` when the worker was already dead before the request was
        sent. Kills the worker on a timeout.
        """
        if not self.alive():
            self.kill()
            raise WorkerLost()
        try:
            self.conn.send(request)
        except (BrokenPipeError, OSError):
            self.kill()
            raise WorkerLost() from None
        try:
            if self.conn.poll(max(0.0, deadline - time.monotonic())):
                reply = self.conn.recv()
                if isinstance(reply, Reply):
                    return reply
                self.kill()
                return Reply(None, CRASH, "the worker sent an unexpected message")
        except (EOFError, OSError):
            self.kill()
            return Reply(None, CRASH, "the worker process exited")
        except Exception:  # bytes no message unpickles from (a bot wrote to the socket): as garbled
            self.kill()
            return Reply(None, CRASH, "the worker sent an unexpected message")
        self.kill()
        return Reply(None, TIMEOUT, "no answer before the deadline; the worker was killed")

    def stop(self) -> None:
        """Ask the worker to exit; kill it if it does not."""
        try:
            self.conn.send(None)
            if self.conn.poll(SHUTDOWN_GRACE_S):
                self.conn.recv()
        except Exception:  # ended (EOFError, OSError), or its last bytes no message: killed all the same
            pass
        self.kill()

    def kill(self) -> None:
        """Kill the worker and its process group, reap it (or have its zygote reap it) and
        close its socket; once only: a reaped worker's pid is no longer its own."""
        self.broken = True
        if not self.reaped:
            self.reaped = True
            # whatever its bots started in its process group (the worker leads it), dead or
            # alive, stopped or not: the group's id is held while the worker is unreaped
            # (and while a member lives)
            try:
                os.killpg(self.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                if self._pidfd is not None:
                    signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)
                else:
                    os.kill(self.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            if self.popen is not None:
                try:
                    self.popen.wait(5.0)
                except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL is not ignorable
                    pass
            elif self.zygote is not None:
                self.zygote.reap(self.pid)
            if self._pidfd is not None:
                os.close(self._pidfd)
                self._pidfd = None
        try:
            self.conn.close()
        except OSError:
            pass


class WorkerPool:
    """A fixed number of worker processes shared by every match, with replacement.

    The zygote starts when the pool is made (its imports overlap the service's start); the
    workers are forked, and the asyncio side is set up, on first use (or :meth:`wait_ready`),
    and belong to that event loop.
    """

    def __init__(self, settings: PluginSettings, size: int,
                 on_replace: Callable[[str, str, bool], None] | None = None) -> None:
        """``on_replace(bot, reason, charged)`` is called when a decision of ``bot`` cost its
        worker (``reason``: ``timeout`` or ``crash``). ``charged``: the bot had a fair share of
        the decision's time, at least half of what was left when it was asked for
        (:data:`FAIR_SHARE`); a decision that waited for a worker until little was left (a
        busy pool) and then ran out is the pool's delay, not the bot's fault."""
        if size < 1:
            raise ValueError("a bot worker pool needs at least one worker")
        self.settings = settings
        self.size = size
        self._threads = ThreadPoolExecutor(max_workers=2 * size + 2, thread_name_prefix="bot-pool")
        self._lock = threading.Lock()
        self._zygote_lock = threading.Lock()
        self._workers: set[WorkerProcess] = set()
        self._zygote = Zygote(settings)  # replaced when found dead, never None
        #: the bots the host lists, once it has compared its catalog with the zygote's (a
        #: restarted zygote that lacks one says so: Zygote)
        self.expected: frozenset[str] | None = None
        self._spares: list[WorkerProcess] = []  # ready, not in rotation: replace a lost worker at once
        self._spares_starting = 0
        #: spares being started (forked, not yet ready): not in rotation either (pids())
        self._spares_not_ready: set[WorkerProcess] = set()
        #: decisions of one bot in flight at once: with two or more workers, one always stays
        #: free for the other bots, so a bot that hangs in many matches cannot starve the rest
        self.per_bot = max(1, size - 1)
        self._bot_slots: dict[str, asyncio.Semaphore] = {}
        self._idle: asyncio.Queue[WorkerProcess] | None = None
        #: set when a worker joins the idle ones or the spares, or the pool closes: wait_ready looks again
        self._grown: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tasks: set[asyncio.Task] = set()
        self._closed = False
        self._on_replace = on_replace

    def _new_worker(self, spare: bool = False) -> WorkerProcess:
        """A new worker (in a thread of the pool). The pool may close while it starts (a
        service whose start failed right after it began warming its workers): the zygote's
        refusal is then no failure to log, and a worker started meanwhile is stopped rather
        than left running after the pool (PoolClosed)."""
        if self._closed:
            raise PoolClosed("the bot worker pool is closed")
        with self._zygote_lock:
            # one thread restarts it: two starting workers at once (a worker and a spare) both
            # found it dead and each started a zygote, one of which was left running, unused
            zygote = self._zygote
            if not zygote.alive():
                log.error("bot_worker_zygote_restarted", exitcode=zygote.process.returncode)
                zygote.close()
                zygote = self._zygote = Zygote(self.settings, self.expected)
        worker = WorkerProcess.start(self.settings, zygote, closed=lambda: self._closed)
        with self._lock:
            if not self._closed:
                self._workers.add(worker)
                if spare:  # marked here, before any other thread can see it among the workers
                    self._spares_not_ready.add(worker)
                return worker
        worker.kill()
        raise PoolClosed("the bot worker pool is closed")

    def loaded(self, timeout: float | None) -> tuple[list[str], list[Any]] | None:
        """What the zygote started with the pool loaded (:meth:`Zygote.loaded`)."""
        return self._zygote.loaded(timeout)

    def _forget(self, worker: WorkerProcess) -> None:
        with self._lock:
            self._workers.discard(worker)
            self._spares_not_ready.discard(worker)

    def _drop(self, worker: WorkerProcess) -> None:
        """Forget a worker found dead or killed, killed first if it is not yet (its socket
        closed, its process group killed: :meth:`WorkerProcess.kill`). One that died on its
        own after an answer, or while set aside as a spare, is not marked broken, and used to
        be forgotten with its socket open until garbage collection, and the processes its
        bot started in its group alive. Killed in a thread of the pool, off the event loop: a
        worker started as a fresh interpreter (while the zygote was dead) is waited for after
        its kill (telling a zygote to reap no longer waits: :meth:`Zygote.reap`)."""
        if not worker.broken:
            self._threads.submit(worker.kill)
        self._forget(worker)

    def _ensure_started(self) -> asyncio.Queue[WorkerProcess]:
        if self._closed:
            raise RuntimeError("the bot worker pool is closed")
        if self._idle is None:
            self._loop = asyncio.get_running_loop()
            self._idle = asyncio.Queue()
            self._grown = asyncio.Event()
            for _ in range(self.size):
                self._spawn_task(self._admit())
            self._top_up_spares()
        return self._idle

    def _top_up_spares(self) -> None:
        while len(self._spares) + self._spares_starting < SPARES and not self._closed:
            self._spares_starting += 1
            self._spawn_task(self._admit(spare=True))

    def _spawn_task(self, coro: Any) -> None:
        assert self._loop is not None
        task = self._loop.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _admit(self, spare: bool = False) -> None:
        """Start a new worker and wait (in a thread) until it is ready, then put it in rotation
        (or aside as a spare); a worker that fails to start is replaced after a pause, so a
        broken environment cannot spin."""
        try:
            await self._admit_loop(spare)
        finally:
            if spare:
                self._spares_starting -= 1

    async def _admit_loop(self, spare: bool) -> None:
        loop = asyncio.get_running_loop()
        backoff = RESTART_BACKOFF_S
        while not self._closed:
            worker = await loop.run_in_executor(self._threads, self._new_worker, spare)
            ok = await loop.run_in_executor(self._threads, worker.wait_ready, READY_TIMEOUT_S)
            if self._closed:
                # the close has it among its workers, and kills or stops it too; not stopped
                # through the pool's threads: close_sync (at exit, the loop still running) has
                # shut them down. A kill does not wait
                worker.kill()
                return
            if ok:
                assert self._idle is not None
                if worker.loaded is not None:
                    # kept all the same: without a zygote it is the pool's only way to run any
                    # bot, and a replacement would load the plugins under the same limit
                    log_missing_bots(self.expected, worker.loaded, process="worker", pid=worker.pid)
                if spare:
                    with self._lock:
                        self._spares_not_ready.discard(worker)
                        self._spares.append(worker)
                else:
                    self._idle.put_nowait(worker)
                self._changed()
                return
            log.error("bot_worker_start_failed", pid=worker.pid,
                      retry_in_s=backoff)
            self._forget(worker)
            await asyncio.sleep(backoff)
            backoff = min(MAX_BACKOFF_S, backoff * 2)

    def start(self) -> None:
        """Fork the workers and spares now, without waiting for them (needs a running event
        loop, which the pool then belongs to)."""
        self._ensure_started()

    async def wait_ready(self, timeout: float = READY_TIMEOUT_S) -> bool:
        """Wait until every worker is ready (tests, and a service that wants warm workers);
        False after ``timeout`` seconds, or once the pool is closed. It looks again as each
        worker is put in rotation or aside (it looked every 20 ms, and the engine's start, which
        waits for it before serving, waited for the next look: 20 ms of it)."""
        idle = self._ensure_started()
        assert self._grown is not None
        try:
            async with asyncio.timeout(timeout):
                while idle.qsize() < self.size or len(self._spares) < SPARES:
                    if self._closed:
                        return False
                    self._grown.clear()
                    await self._grown.wait()
        except TimeoutError:
            return False
        return True

    def _changed(self) -> None:
        """Have :meth:`wait_ready` look again (on the pool's event loop)."""
        if self._grown is not None:
            self._grown.set()

    async def run(self, request: tuple, deadline: float,
                  budget: Callable[[float], float] | None = None) -> Reply:
        """Run one request on an idle worker; a ``timeout`` Reply if none frees up in time.
        ``budget``: the time the bot is told it has (the request's last item), computed from
        the time left when a worker takes the request: a decision that queued for a worker has
        less than it had when it was asked for, and a bot told otherwise would be killed at
        the deadline while it searched."""
        idle = self._ensure_started()
        loop = asyncio.get_running_loop()
        asked = time.monotonic()
        slots = self._bot_slots.get(request[0])
        if slots is None:
            slots = self._bot_slots[request[0]] = asyncio.Semaphore(self.per_bot)
        while True:
            try:
                async with asyncio.timeout(max(0.0, deadline - time.monotonic())):
                    await slots.acquire()
            except TimeoutError:
                return Reply(None, TIMEOUT, "this bot already has every decision slot busy until the deadline")
            try:
                async with asyncio.timeout(max(0.0, deadline - time.monotonic())):
                    worker = await idle.get()
            except BaseException as exc:
                slots.release()
                if isinstance(exc, TimeoutError):
                    return Reply(None, TIMEOUT, "no bot worker was free before the deadline")
                raise
            left = deadline - time.monotonic()
            if left <= 0:
                # nothing sent: a bot given no time must not answer all the same because its
                # worker was quick to reply before the poll (a race on a loaded machine), nor
                # cost its worker a kill for a deadline spent before it was asked
                self._release(worker, slots)
                return Reply(None, TIMEOUT, "no time was left for the decision when a worker was free")
            if budget is not None:
                request = (*request[:-1], budget(left))
            done = self._threads.submit(worker.call, request, deadline)
            # Release when the *thread* is done, not when this coroutine is: a cancelled
            # decision must not hand out a worker (or a slot) that is still busy.
            done.add_done_callback(
                lambda _f, w=worker: loop.call_soon_threadsafe(self._release, w, slots))
            try:
                reply = await asyncio.wrap_future(done)
            except WorkerLost:
                log.warning("bot_worker_lost", pid=worker.pid)
                continue
            if worker.broken and self._on_replace is not None and reply.failure:
                self._on_replace(request[0], reply.failure, left >= FAIR_SHARE * (deadline - asked))
            return reply

    def _release(self, worker: WorkerProcess, slots: asyncio.Semaphore) -> None:
        slots.release()
        if self._closed:  # close() stops every worker it has, this one too; its threads may be gone
            return
        assert self._idle is not None
        if not worker.broken and worker.alive():
            self._idle.put_nowait(worker)
            self._changed()
            return
        self._drop(worker)
        spare = None
        while self._spares and spare is None:
            candidate = self._spares.pop()
            if candidate.alive():
                spare = candidate
            else:
                self._drop(candidate)
        if spare is not None:
            self._idle.put_nowait(spare)  # capacity is back at once
            self._changed()
        else:
            self._spawn_task(self._admit())
        self._top_up_spares()

    def pids(self) -> list[int]:
        """Process ids of the live workers in rotation (spares not included)."""
        with self._lock:
            # and those still starting: a spare forked as fast as a worker (a zygote done
            # loading) was counted in rotation until it said it was ready
            spares = set(self._spares) | self._spares_not_ready
            return [w.pid for w in self._workers if w.alive() and w not in spares]

    async def close(self) -> None:
        """Stop every worker (killing busy ones) and wait for them."""
        if self._closed:
            return
        self._closed = True
        self._changed()
        for task in list(self._tasks):
            task.cancel()
        with self._lock:
            workers = list(self._workers)
            self._workers.clear()
        loop = asyncio.get_running_loop()
        if workers:
            await asyncio.gather(*(loop.run_in_executor(self._threads, w.stop) for w in workers),
                                 return_exceptions=True)
        await loop.run_in_executor(self._threads, self._zygote.close)
        self._threads.shutdown(wait=False, cancel_futures=True)

    def close_sync(self) -> None:
        """Stop every worker without an event loop (used at interpreter exit)."""
        self._closed = True
        with self._lock:
            workers = list(self._workers)
            self._workers.clear()
        for w in workers:
            w.kill()
        self._zygote.process.kill()
        self._threads.shutdown(wait=False, cancel_futures=True)


if __name__ == "__main__":
    _process_main(sys.argv[1:])
