"""Database connection, transactions and migrations (`dlbench results list --db sqlite:///tmp/x.db` opens one).

- `connect(url)` creates a SQLAlchemy engine. For SQLite it sets a busy timeout and real transactions: the
  driver is put in autocommit mode and dlbench emits `BEGIN` itself (`BEGIN IMMEDIATE` for writes, so that a
  writer waits for the lock up front instead of failing half-way), as the SQLAlchemy documentation recommends
  for pysqlite. That also makes schema changes transactional. WAL mode (readers never block the writer) is
  switched on by `migrate`, once the file is known to be empty or dlbench's.
- `transaction(engine, write=...)` is one all-or-nothing transaction; `retry_locked(fn)` runs it again when
  SQLite still reports "database is locked" after the busy timeout (two `dlbench run` at once).
- `migrate(engine, label)` brings the schema to the newest Alembic revision; it runs every time a store is
  opened and does nothing when the schema is current. A file that is not a dlbench database, a corrupt file and
  a database from a newer dlbench are refused with `DataError`: nothing is ever re-created or dropped.
- `database_errors(label)` turns driver errors into one-line `DataError`s naming the file or URL.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

import sqlalchemy as sa
from sqlalchemy import event

from dlbench.errors import BadInput, DataError
from dlbench.store.schema import HEAD_REVISION

MIGRATIONS_DIR = Path(__file__).parent / "migrations"
BUSY_TIMEOUT_S = 30.0  # how long SQLite waits for another writer before reporting "locked"
LOCK_RETRIES = 5  # extra attempts after that, with growing random back-off

T = TypeVar("T")


def describe_url(url: sa.URL) -> str:
    """The SQLite file path, or the URL with its password hidden (for messages)."""
    if url.get_backend_name() == "sqlite":
        return url.database or ":memory:"
    return url.render_as_string(hide_password=True)


def connect(url: str) -> tuple[sa.Engine, str]:
    """An engine for `url` and a label for messages. A malformed URL or missing driver → `BadInput`."""
    try:
        parsed = sa.make_url(url)
    except sa.exc.ArgumentError:
        raise BadInput(f"not a database URL: {url!r} (expected e.g. sqlite:////path/to/dlbench.db)") from None
    label = describe_url(parsed)
    is_sqlite = parsed.get_backend_name() == "sqlite"
    try:
        if is_sqlite:
            engine = sa.create_engine(parsed, connect_args={"timeout": BUSY_TIMEOUT_S})
        else:
            engine = sa.create_engine(parsed, pool_pre_ping=True)
    except (sa.exc.NoSuchModuleError, ModuleNotFoundError, ImportError) as exc:
        raise BadInput(f"cannot use database {label}: {exc} (is its driver installed?)") from None
    except sa.exc.ArgumentError as exc:
        raise BadInput(f"cannot use database {label}: {exc}") from None
    if is_sqlite:
        _setup_sqlite(engine)
    return engine, label


def _setup_sqlite(engine: sa.Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection, _record) -> None:
        dbapi_connection.isolation_level = None  # dlbench emits BEGIN itself (below)
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
            cursor.execute("PRAGMA foreign_keys = ON")
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: sa.Connection) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get("dlbench_write") else "BEGIN")


@contextmanager
def transaction(engine: sa.Engine, write: bool = False) -> Iterator[sa.Connection]:
    """One transaction: committed when the block ends, rolled back (nothing written) when it raises."""
    with engine.connect() as conn:
        if write:
            conn.execution_options(dlbench_write=True)
        with conn.begin():
            yield conn


def is_locked_error(exc: BaseException) -> bool:
    """True for SQLite's "database is locked" / "busy" errors, which are worth another try."""
    if not isinstance(exc, sa.exc.OperationalError):
        return False
    text = str(exc.orig).lower()
    return "locked" in text or "busy" in text


def retry_locked(fn: Callable[[], T]) -> T:
    """Run `fn` (a whole transaction); if SQLite is still locked after its busy timeout, run it again."""
    for attempt in range(LOCK_RETRIES + 1):
        try:
            return fn()
        except sa.exc.OperationalError as exc:
            if not is_locked_error(exc) or attempt == LOCK_RETRIES:
                raise
            time.sleep(random.uniform(0.05, 0.2) * 2**attempt)
    raise AssertionError("unreachable")


def _driver_reason(exc: sa.exc.DBAPIError) -> str:
    return str(exc.orig).strip().splitlines()[0] if exc.orig is not None else str(exc).splitlines()[0]


@contextmanager
def database_errors(label: str) -> Iterator[None]:
    """Turn driver errors into one-line `DataError`s that name the database; the file is never touched."""
    try:
        yield
    except sa.exc.DBAPIError as exc:
        reason = _driver_reason(exc)
        low = reason.lower()
        if "not a database" in low or "malformed" in low or "corrupt" in low:
            raise DataError(f"{label}: the database file is corrupt or not a SQLite database ({reason}); "
                            "it was left untouched: move it aside or choose another with --db / DLBENCH_DB") from None
        if "unable to open" in low:
            raise DataError(f"{label}: cannot open the database file ({reason}); does its folder exist and "
                            "is it writable?") from None
        if "disk is full" in low or "disk i/o error" in low:  # SQLite's SQLITE_FULL, SQLITE_IOERR
            raise DataError(f"{label}: cannot write the database ({reason}); is its disk full?") from None
        if is_locked_error(exc):
            raise DataError(f"{label}: the database stayed locked by another process ({reason}); "
                            "try again when the other dlbench command has finished") from None
        if isinstance(exc, sa.exc.OperationalError) and "://" in label:  # a server, not a SQLite file
            raise DataError(f"cannot reach database {label}: {reason}") from None
        raise DataError(f"{label}: database error: {reason}") from None


def _alembic_config(connection: sa.Connection | None = None):
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR).replace("%", "%%"))
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg


def script_directory():
    """Alembic's view of the migrations folder (revisions, heads)."""
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(_alembic_config())


def current_revisions(conn: sa.Connection, label: str) -> set[str]:
    """The revisions the database is at (empty for an empty database); a foreign database → `DataError`.

    Plain SQL on Alembic's `alembic_version` table, so that opening a current database never imports Alembic.
    """
    tables = set(sa.inspect(conn).get_table_names())
    if not tables:
        return set()
    if "alembic_version" not in tables:
        names = ", ".join(sorted(tables)[:5])
        raise DataError(f"{label}: not a dlbench database (it has tables {names} but no dlbench schema "
                        "version); it was left untouched: choose another with --db / DLBENCH_DB")
    version = sa.table("alembic_version", sa.column("version_num"))
    return set(conn.execute(sa.select(version.c.version_num)).scalars())


def _check_known(current: set[str], known: set[str], label: str) -> None:
    unknown = current - known
    if unknown:
        raise DataError(f"{label}: the database schema is at revision {', '.join(sorted(unknown))}, which this "
                        "dlbench does not know (written by a newer dlbench?); upgrade dlbench to use it")


def _enable_wal(engine: sa.Engine) -> None:
    raw = engine.raw_connection()  # outside any transaction: SQLite cannot change journal mode inside one
    dbapi = engine.dialect.dbapi
    try:
        raw.driver_connection.execute("PRAGMA journal_mode = WAL")
    except dbapi.Error as exc:  # as SQLAlchemy would wrap it, so that retries and messages apply
        raise sa.exc.DBAPIError.instance("PRAGMA journal_mode = WAL", None, exc, dbapi.Error) from exc
    finally:
        raw.close()


def migrate(engine: sa.Engine, label: str) -> None:
    """Upgrade the schema to the newest revision in one transaction (no-op when already there)."""
    with database_errors(label):
        with transaction(engine) as conn:
            current = current_revisions(conn, label)
        # Only now that the file is known to be empty or dlbench's: WAL lets readers run beside a writer.
        # The mode is stored in the file, so this changes nothing after the first time.
        if engine.dialect.name == "sqlite":
            retry_locked(lambda: _enable_wal(engine))
        if current == {HEAD_REVISION}:
            return
        from alembic import command

        script = script_directory()
        known = {rev.revision for rev in script.walk_revisions()}
        _check_known(current, known, label)
        heads = set(script.get_heads())

        def upgrade() -> None:
            with transaction(engine, write=True) as conn:
                # Checked again under the write lock: another process may have migrated meanwhile.
                now = current_revisions(conn, label)
                _check_known(now, known, label)
                if now != heads:
                    command.upgrade(_alembic_config(conn), "head")

        retry_locked(upgrade)
