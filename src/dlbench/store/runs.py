"""The `Store`: saving, finding, listing, importing, exporting and deleting runs (`dlbench results ...`).

Open one with `dlbench.store.open_store(url)`. Every write is one transaction (all or nothing) retried when
SQLite is busy, so two `dlbench run` processes saving at once both land. Every saved or imported run is also
kept as `<run_id>.json` in `paths.results_dir()`: the database can always be rebuilt from those files with
`dlbench results import <results dir>`.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from dlbench import paths
from dlbench.errors import BadInput, DataError
from dlbench.jsonio import write_json_atomic
from dlbench.schema import load_document, upgrade, validate_document
from dlbench.store import db, rows
from dlbench.store.schema import results, runs, step_times

_HEX_RE = re.compile(r"^[0-9a-f]+$")
MAX_CANDIDATES = 10  # ambiguous prefixes list at most this many runs


class Store:
    """A results database. Use `open_store()`; close it (or use `with`) when done."""

    def __init__(self, engine: sa.Engine, label: str) -> None:
        self.engine = engine
        self.label = label  # the SQLite file or the URL without password, for messages

    @classmethod
    def open(cls, url: str | None = None) -> Store:
        engine, label = db.connect(url or paths.default_db_url())
        try:
            db.migrate(engine, label)
        except BaseException:
            engine.dispose()
            raise
        return cls(engine, label)

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _write(self, fn):
        """Run `fn(conn)` in one write transaction, retried while SQLite is locked; DB errors → DataError."""
        def attempt():
            with db.transaction(self.engine, write=True) as conn:
                return fn(conn)

        with db.database_errors(self.label):
            return db.retry_locked(attempt)

    def _read(self, fn):
        """Run `fn(conn)` in one read transaction (a consistent snapshot); DB errors → DataError."""
        def attempt():
            with db.transaction(self.engine) as conn:
                return fn(conn)

        with db.database_errors(self.label):
            return db.retry_locked(attempt)

    # -- writing ---------------------------------------------------------------------------------------

    @staticmethod
    def _stored_document(conn: sa.Connection, run_id: str) -> Any | None:
        """The stored document at the current schema version (a run stored by an older dlbench is kept in the
        database as it was written and upgraded as it is read)."""
        text = conn.execute(sa.select(runs.c.document_json).where(runs.c.run_id == run_id)).scalar_one_or_none()
        return None if text is None else upgrade(json.loads(text))

    @staticmethod
    def _insert(conn: sa.Connection, doc: dict, now: datetime) -> None:
        conn.execute(runs.insert().values(rows.run_row(doc, now)))
        for index, result in enumerate(doc["results"]):
            result_id = conn.execute(
                results.insert().values(rows.result_row(doc["run_id"], index, result))
            ).inserted_primary_key[0]
            insert_step_times(conn, rows.step_time_rows(result_id, result))

    @staticmethod
    def _delete_rows(conn: sa.Connection, run_id: str) -> None:
        # Explicit deletes rather than ON DELETE CASCADE, which SQLite honours only with foreign_keys on.
        result_ids = sa.select(results.c.id).where(results.c.run_id == run_id).scalar_subquery()
        conn.execute(step_times.delete().where(step_times.c.result_id.in_(result_ids)))
        conn.execute(results.delete().where(results.c.run_id == run_id))
        conn.execute(runs.delete().where(runs.c.run_id == run_id))

    def save_run(self, doc: dict) -> str:
        """Store a run (validated) in one transaction and keep its JSON in the results folder; returns its id.

        Saving the same document again changes nothing. Saving a different document with the same run_id
        replaces the stored one, so that a run may be saved as it progresses (the last save wins).
        """
        try:  # the document as it reads back from JSON: tuples become lists, as in the file
            doc = json.loads(rows.dumps(doc))
        except (TypeError, ValueError) as exc:
            validate_document(doc)  # names the offending key when it can (e.g. a NaN)
            raise DataError(f"result document is not valid JSON: {exc}") from None
        doc = validate_document(doc)
        run_id = doc["run_id"]
        # The JSON file first: if the database is unusable, the measurement is still on disk (importable).
        write_json_atomic(paths.results_dir() / f"{run_id}.json", doc)
        new = doc

        def save(conn: sa.Connection) -> None:
            stored = self._stored_document(conn, run_id)
            if stored == new:
                return
            if stored is not None:
                self._delete_rows(conn, run_id)
            self._insert(conn, doc, datetime.now(timezone.utc))

        self._write(save)
        return run_id

    def import_paths(self, sources: Iterable[str | os.PathLike[str]]) -> dict:
        """Import result documents (files, or folders of `*.json` files) in one transaction.

        Every file is validated before anything is written: one malformed or newer-schema file, or a file
        whose run is already stored with different content, rejects the whole import (`DataError` naming the
        file). Runs already stored with the same content are skipped, and documents with no results (an
        interrupted run's file) are left out. Returns
        `{"files", "imported", "skipped", "imported_run_ids", "skipped_run_ids", "empty_files"}`.
        """
        files: list[Path] = []
        for source in sources:
            path = Path(source)
            if path.is_dir():
                files.extend(sorted(p for p in path.glob("*.json") if p.is_file()))
            elif path.is_file():
                files.append(path)
            else:
                raise BadInput(f"{path}: no such file or folder")
        docs: dict[str, tuple[Path, dict]] = {}
        errors: list[str] = []
        empty: list[str] = []
        for file in files:
            try:
                doc = load_document(file)
            except DataError as exc:
                errors.append(exc.format_message())
                continue
            if not doc["results"]:  # dlbench run never stores an empty run: it would only become `latest`
                empty.append(str(file))
                continue
            earlier = docs.get(doc["run_id"])
            if earlier is not None and earlier[1] != doc:
                errors.append(f"{file}: run {doc['run_id']} also comes from {earlier[0]} with different content")
            elif earlier is None:
                docs[doc["run_id"]] = (file, doc)
        if errors:
            more = f" ({len(errors) - 1} more file(s) rejected)" if len(errors) > 1 else ""
            raise DataError(f"{errors[0]}{more}; nothing was imported")

        def write(conn: sa.Connection) -> tuple[list[str], list[str]]:
            imported, skipped = [], []
            now = datetime.now(timezone.utc)
            for run_id, (file, doc) in docs.items():
                stored = self._stored_document(conn, run_id)
                if stored is None:
                    self._insert(conn, doc, now)
                    imported.append(run_id)
                elif stored == doc:  # both as read from JSON
                    skipped.append(run_id)
                else:
                    raise DataError(f"{file}: run {run_id} is already stored with different content; nothing "
                                    f"was imported (delete it first: dlbench results delete {run_id[:12]})")
            return imported, skipped

        imported, skipped = self._write(write)
        folder = paths.results_dir()
        for run_id in imported:
            file, doc = docs[run_id]
            target = folder / f"{run_id}.json"
            if file.resolve() != target.resolve():
                write_json_atomic(target, doc)
        return {"files": len(files), "imported": len(imported), "skipped": len(skipped),
                "imported_run_ids": imported, "skipped_run_ids": skipped, "empty_files": empty}

    def delete_run(self, ref: str) -> str:
        """Delete a run (id, prefix or "latest") from the database and its JSON from the results folder."""
        run_id = self.resolve(ref)
        self._write(lambda conn: self._delete_rows(conn, run_id))
        (paths.results_dir(create=False) / f"{run_id}.json").unlink(missing_ok=True)
        return run_id

    # -- reading ---------------------------------------------------------------------------------------

    def resolve(self, ref: str) -> str:
        """Full run id from a full id, a unique prefix (as git does) or "latest"; `BadInput` otherwise."""
        text = (ref or "").strip().lower()
        if text == "latest":
            newest = self._read(lambda conn: conn.execute(
                sa.select(runs.c.run_id).order_by(runs.c.created_at.desc(), runs.c.run_id.desc()).limit(1)
            ).scalar_one_or_none())
            if newest is None:
                raise BadInput(f"no runs stored yet in {self.label} (dlbench run saves one)")
            return newest
        if not _HEX_RE.match(text):
            raise BadInput(f"{ref!r} is not a run id (hexadecimal characters, a unique prefix, or 'latest')")

        def find(conn: sa.Connection):
            where = runs.c.run_id.startswith(text, autoescape=True)
            count = conn.execute(sa.select(sa.func.count()).select_from(runs).where(where)).scalar_one()
            found = conn.execute(
                sa.select(runs.c.run_id, runs.c.created_at, runs.c.gpu_names).where(where)
                .order_by(runs.c.created_at.desc()).limit(MAX_CANDIDATES)
            ).all()
            return count, found

        count, found = self._read(find)
        if count == 0:
            raise BadInput(f"no stored run matches {ref!r} (dlbench results list shows the stored runs)")
        if count == 1:
            return found[0].run_id
        listed = ", ".join(f"{r.run_id[:12]} ({r.created_at:%Y-%m-%d %H:%M} UTC, {r.gpu_names or 'no GPU'})"
                           for r in found)
        more = f" and {count - len(found)} more" if count > len(found) else ""
        raise BadInput(f"run id prefix {ref!r} is ambiguous: it matches {listed}{more}")

    def get_run(self, ref: str) -> dict:
        """The stored result document (with every raw step time) of a run, at the current schema version."""
        run_id = self.resolve(ref)
        return self._read(lambda conn: self._stored_document(conn, run_id))

    def get_runs(self, run_ids: list[str]) -> list[dict]:
        """The stored documents of many runs (full ids, as `list_runs` gives them), in that order, read in one
        transaction a chunk of ids per query (`dlbench fleet` over thousands of nodes: one query per run, each
        resolving its id first, made that quadratic). An id not stored → `BadInput`."""
        def fetch(conn: sa.Connection) -> dict[str, str]:
            texts: dict[str, str] = {}
            for start in range(0, len(run_ids), 500):  # well below SQLite's limit on bound parameters
                chunk = run_ids[start:start + 500]
                texts.update(conn.execute(sa.select(runs.c.run_id, runs.c.document_json)
                                          .where(runs.c.run_id.in_(chunk))).all())
            return texts

        texts = self._read(fetch)
        missing = [run_id for run_id in run_ids if run_id not in texts]
        if missing:
            raise BadInput(f"no stored run {missing[0]} (deleted meanwhile?)")
        return [upgrade(json.loads(texts[run_id])) for run_id in run_ids]

    def list_runs(self, gpu: str | None = None, workload: str | None = None,
                  since: datetime | None = None) -> list[dict]:
        """Stored runs, newest first. `gpu` and `workload` match case-insensitive substrings; `since` is
        inclusive (an aware datetime, or naive meaning UTC). Each run has its counts of results (`num_results`,
        `num_ok`), the configurations it planned (`planned_results`) and whether it was `cut_short` (fewer
        results than planned: its process killed, interrupted, or stopped by a failed rank)."""
        query = sa.select(runs.c.run_id, runs.c.created_at, runs.c.hostname, runs.c.gpu_names, runs.c.gpu_count,
                          runs.c.dlbench_version, runs.c.planned_results)
        if gpu:
            query = query.where(sa.func.lower(runs.c.gpu_names).contains(gpu.lower(), autoescape=True))
        if workload:
            matching = sa.select(results.c.run_id).where(
                sa.func.lower(results.c.workload).contains(workload.lower(), autoescape=True))
            query = query.where(runs.c.run_id.in_(matching))
        if since is not None:
            query = query.where(runs.c.created_at >= rows.to_db_time(since))
        query = query.order_by(runs.c.created_at.desc(), runs.c.run_id.desc())

        def fetch(conn: sa.Connection):
            selected = conn.execute(query).all()
            ids = sa.select(query.subquery().c.run_id)
            per_result = conn.execute(
                sa.select(results.c.run_id, results.c.workload, results.c.status, results.c.scenario)
                .where(results.c.run_id.in_(ids)).order_by(results.c.run_id, results.c.result_index)
            ).all()
            return selected, per_result

        selected, per_result = self._read(fetch)
        summary: dict[str, dict] = {}
        for row in per_result:
            entry = summary.setdefault(row.run_id, {"num_results": 0, "num_ok": 0, "workloads": [],
                                                    "scenarios": []})
            entry["num_results"] += 1
            entry["num_ok"] += row.status == "ok"
            if row.workload not in entry["workloads"]:
                entry["workloads"].append(row.workload)
            scenario = row.scenario or "train"
            if scenario not in entry["scenarios"]:
                entry["scenarios"].append(scenario)
        out = []
        for row in selected:
            entry = summary.get(row.run_id, {"num_results": 0, "num_ok": 0, "workloads": [], "scenarios": []})
            planned = row.planned_results if row.planned_results is not None else entry["num_results"]
            out.append({
                "run_id": row.run_id,
                "created_at": rows.from_db_time(row.created_at),
                "hostname": row.hostname,
                "gpus": row.gpu_names.split("; ") if row.gpu_names else [],
                "gpu_count": row.gpu_count,
                "dlbench_version": row.dlbench_version,
                **entry,
                "planned_results": planned,
                "cut_short": planned > entry["num_results"],  # killed, interrupted or stopped part-way
            })
        return out

    def export_rows(self, run_ids: Iterable[str] | None = None) -> list[dict]:
        """One flat row per result (unit-suffixed columns, `rows.EXPORT_COLUMNS`) for the given runs (ids,
        prefixes or "latest"), or for every run when none is given; oldest run first."""
        wanted = [self.resolve(ref) for ref in (run_ids or [])]
        columns = [runs.c[name] for name in rows.RUN_EXPORT_COLUMNS] + [results.c[name] for name in
                                                                         rows.RESULT_COLUMNS]
        query = sa.select(*columns).select_from(runs.join(results, results.c.run_id == runs.c.run_id))
        if wanted:
            query = query.where(runs.c.run_id.in_(wanted))
        query = query.order_by(runs.c.created_at, runs.c.run_id, results.c.result_index)
        found = self._read(lambda conn: conn.execute(query).mappings().all())
        out = []
        documents: dict[str, dict] = {}
        for row in found:
            item = dict(row)
            if item["run_id"] not in documents:  # the scenario metrics have no column: read the document
                documents[item["run_id"]] = self._document_of(item["run_id"])
            item["created_at"] = rows.from_db_time(item["created_at"])
            stored = documents[item["run_id"]].get("results") or []
            index = item["result_index"]
            item.update(rows.scenario_metric_cells(stored[index] if 0 <= index < len(stored) else {}))
            out.append(item)
        return out

    def _document_of(self, run_id: str) -> dict:
        query = sa.select(runs.c.document_json).where(runs.c.run_id == run_id)
        text = self._read(lambda conn: conn.execute(query).scalar_one())
        return json.loads(text)


def insert_step_times(conn: sa.Connection, step_rows: list[dict]) -> None:
    """Insert the raw step times of one result (a module function so that tests can interrupt a save)."""
    if step_rows:
        conn.execute(step_times.insert(), step_rows)
