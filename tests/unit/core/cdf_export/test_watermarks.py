"""Vacuum coordination: exporters register their watermark as domain metadata; what they still need."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

import airflow_provider_delta.core.commands.cdf_export.export as export_module
from airflow_provider_delta.core import DeltaTable
from airflow_provider_delta.core.commands.cdf_export import (
    export_changes,
    files_needed_by_exporters,
    refuse_if_exporters_need,
    register_exporter,
    register_exporter_file,
    registered_exporters,
    unregister_exporter,
)
from airflow_provider_delta.core.commands.cdf_export.watermarks import REGISTRY_DIR
from airflow_provider_delta.core.protocol import writer_features
from airflow_provider_delta.exceptions import ExportWatermarkError, ProtocolError
from tests.unit.core.cdf_export.helpers import CDF, SCHEMA, busy_table, read_file_sink, rows, sorted_rows

if TYPE_CHECKING:
    from pathlib import Path

DOMAIN_FEATURE = {"delta.feature.domainMetadata": "supported"}


def test_an_export_registers_in_a_table_that_supports_domain_metadata(tmp_path: Path) -> None:
    busy_table(tmp_path / "src", properties=DOMAIN_FEATURE)  # versions 0..5
    r = export_changes(str(tmp_path / "src"), str(tmp_path / "out"), ending_version=3)
    assert r.registered
    src = DeltaTable(str(tmp_path / "src"))
    assert src.version == 6  # the registration is one commit
    assert src.history(limit=1)[0]["operation"] == "CDF EXPORT WATERMARK"
    [exporter] = registered_exporters(src.snapshot)
    # Registered before the first run wrote anything: everything from the start on is protected.
    assert (exporter.name, exporter.sink, exporter.format, exporter.version) == (
        "default",
        str(tmp_path / "out"),
        "parquet",
        -1,
    )


def test_a_registration_moves_to_the_runs_end_once_it_is_old(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    busy_table(tmp_path / "src", properties=DOMAIN_FEATURE)
    export_changes(str(tmp_path / "src"), str(tmp_path / "out"), ending_version=3)
    monkeypatch.setattr(export_module, "REGISTRATION_REFRESH_MS", 0)
    r = export_changes(str(tmp_path / "src"), str(tmp_path / "out"))
    assert (r.start, r.end) == (4, 6)  # 6 is the first registration's commit: no data change, still a version
    [exporter] = registered_exporters(DeltaTable(str(tmp_path / "src")).snapshot)
    assert exporter.version == 6


def test_without_domain_metadata_a_registration_file_protects_and_the_log_is_untouched(tmp_path: Path) -> None:
    t = busy_table(tmp_path / "src")
    r = export_changes(str(tmp_path / "src"), str(tmp_path / "out"), ending_version=2)
    assert r.registered
    after = DeltaTable(str(tmp_path / "src"))
    assert after.version == t.version and after.protocol == t.protocol  # no commit, no upgrade
    [path] = (tmp_path / "src" / REGISTRY_DIR).iterdir()
    assert path.suffix == ".json"
    [exporter] = registered_exporters(after.snapshot)
    assert (exporter.name, exporter.sink, exporter.version) == ("default", str(tmp_path / "out"), 2)


def test_register_watermark_false_registers_nothing(tmp_path: Path) -> None:
    busy_table(tmp_path / "src")
    r = export_changes(str(tmp_path / "src"), str(tmp_path / "out"), register_watermark=False)
    assert not r.registered
    assert registered_exporters(DeltaTable(str(tmp_path / "src")).snapshot) == []
    assert not (tmp_path / "src" / REGISTRY_DIR).exists()


def test_register_watermark_true_upgrades_the_protocol(tmp_path: Path) -> None:
    busy_table(tmp_path / "src")
    r = export_changes(str(tmp_path / "src"), str(tmp_path / "out"), register_watermark=True)
    assert r.registered
    src = DeltaTable(str(tmp_path / "src"))
    assert "domainMetadata" in writer_features(src.protocol)
    assert registered_exporters(src.snapshot)[0].version == -1


def test_registering_without_the_feature_is_refused_unless_upgrading(tmp_path: Path) -> None:
    t = busy_table(tmp_path / "src")
    with pytest.raises(ProtocolError, match="delta.feature.domainMetadata"):
        register_exporter(t.snapshot, sink="/s", name="n", format="parquet", version=3)
    assert DeltaTable(str(tmp_path / "src")).version == t.version


def test_files_needed_are_every_file_after_the_watermark(tmp_path: Path) -> None:
    t = busy_table(tmp_path / "src", properties=DOMAIN_FEATURE)
    register_exporter(t.snapshot, sink="/exports/a", name="a", format="parquet", version=2)
    register_exporter(t.snapshot, sink="/exports/b", name="b", format="delta", version=4)
    snap = DeltaTable(str(tmp_path / "src")).snapshot
    needs = {n.exporter.name: n for n in files_needed_by_exporters(snap)}
    assert [e.name for e in registered_exporters(snap)] == ["a", "b"]  # lowest watermark first
    # Version 3 deleted rows by rewriting files (cdc files) ; version 5 was a replaceWhere.
    v3 = [p for p in needs["a"].paths if p.startswith("_change_data/")]
    assert v3 and not needs["a"].missing_commits
    assert needs["b"].paths < needs["a"].paths
    for path in needs["a"].paths:
        assert (tmp_path / "src" / path).exists(), path


def test_vacuum_candidates_an_exporter_needs_are_refused_naming_it(tmp_path: Path) -> None:
    t = busy_table(tmp_path / "src", properties=DOMAIN_FEATURE)
    register_exporter(t.snapshot, sink="/exports/a", name="lagging", format="parquet", version=2)
    snap = DeltaTable(str(tmp_path / "src")).snapshot
    removed_at_3 = [r.path for r in snap.tombstones()]
    with pytest.raises(
        ExportWatermarkError, match=r"exporter 'lagging' \(into '/exports/a', at version 2\)"
    ) as info:
        refuse_if_exporters_need(snap, removed_at_3)
    assert (info.value.exporter, info.value.version) == ("lagging", 2)
    refuse_if_exporters_need(snap, ["not-needed.parquet"])  # nothing needed: no error
    assert unregister_exporter(snap, sink="/exports/a", name="lagging") is not None
    refuse_if_exporters_need(DeltaTable(str(tmp_path / "src")).snapshot, removed_at_3)


def test_an_exporter_registered_at_the_latest_version_needs_nothing(tmp_path: Path) -> None:
    t = DeltaTable.create(str(tmp_path / "src"), SCHEMA, properties={**CDF, **DOMAIN_FEATURE})
    t.append(rows([1], ["a"], [1]))
    register_exporter(t.snapshot, sink="/e", name="n", format="parquet", version=2)
    snap = DeltaTable(str(tmp_path / "src")).snapshot
    assert snap.version == 2
    [needs] = files_needed_by_exporters(snap)
    assert needs.paths == frozenset()


def test_vacuum_refuses_files_a_lagging_exporter_needs_unless_told_otherwise(tmp_path: Path) -> None:
    busy_table(tmp_path / "src", properties=DOMAIN_FEATURE)  # versions 0..5, with removed files
    export_changes(str(tmp_path / "src"), str(tmp_path / "out"), ending_version=1)  # registers at -1
    src = DeltaTable(str(tmp_path / "src"))
    planned = src.vacuum(0, dry_run=True, enforce_retention_duration=False).files
    assert planned  # the dry run lists the candidates without the check
    with pytest.raises(ExportWatermarkError, match="exporter .*default.*respect_exports=False") as info:
        src.vacuum(0, enforce_retention_duration=False)
    assert info.value.exporter == "default"
    after = DeltaTable(str(tmp_path / "src"))
    assert after.version == src.version  # no VACUUM START: refused before anything was committed
    assert all((tmp_path / "src" / p).exists() for p in planned if not p.endswith("/"))
    done = after.vacuum(0, enforce_retention_duration=False, respect_exports=False)
    assert set(done.files) == set(planned)


# --- tables without domain metadata: the registration file --------------------------------------------


def _exported(sink: Path) -> list[tuple[object, ...]]:
    return sorted_rows(read_file_sink(sink), ["id", "p", "v", "_change_type", "_commit_version"])


def _feed(src: Path, start: int, end: int) -> list[tuple[object, ...]]:
    changes = DeltaTable(str(src)).changes(start, end)
    return sorted_rows(changes, ["id", "p", "v", "_change_type", "_commit_version"])


def test_a_lagging_exporter_on_an_ordinary_table_keeps_its_files_through_vacuum_and_exports_once(
    tmp_path: Path,
) -> None:
    src, out = tmp_path / "src", tmp_path / "out"
    busy_table(src)  # versions 0..5, no domainMetadata feature
    first = export_changes(str(src), str(out), ending_version=1)
    assert first.registered and (first.start, first.end) == (0, 1)
    t = DeltaTable(str(src))
    t.delete("id = 7")  # more removed files the exporter still has to read
    t.append(rows([8], ["c"], [80]))
    before = DeltaTable(str(src))
    planned = before.vacuum(0, dry_run=True, enforce_retention_duration=False).files
    assert planned
    with pytest.raises(ExportWatermarkError, match=r"exporter 'default' .*at version 1"):
        before.vacuum(0, enforce_retention_duration=False)
    assert DeltaTable(str(src)).version == before.version  # refused before VACUUM START
    assert all((src / p).exists() for p in planned if not p.endswith("/"))
    second = export_changes(str(src), str(out))
    assert (second.start, second.end) == (2, before.version)
    # exactly once: every change of every version, none twice
    expected = _feed(src, 0, before.version)
    assert _exported(out) == expected
    assert [e.version for e in registered_exporters(DeltaTable(str(src)).snapshot)] == [before.version]
    done = DeltaTable(str(src)).vacuum(0, enforce_retention_duration=False)  # caught up: nothing needed
    assert set(done.files) == set(planned)
    assert list((src / REGISTRY_DIR).iterdir())  # VACUUM never deletes the registration
    third = export_changes(str(src), str(out))  # only the two VACUUM commits (no data change) are left
    assert (third.start, third.rows) == (before.version + 1, 0)
    assert _exported(out) == expected


def test_delta_rs_vacuum_keeps_the_registration_file(tmp_path: Path) -> None:
    import deltalake

    busy_table(tmp_path / "src")
    export_changes(str(tmp_path / "src"), str(tmp_path / "out"), ending_version=1)
    files = sorted((tmp_path / "src" / REGISTRY_DIR).iterdir())
    deltalake.DeltaTable(str(tmp_path / "src")).vacuum(retention_hours=0, enforce_retention_duration=False,
                                                       dry_run=False)
    assert sorted((tmp_path / "src" / REGISTRY_DIR).iterdir()) == files
    assert registered_exporters(DeltaTable(str(tmp_path / "src")).snapshot)[0].version == 1


def test_unregistering_deletes_the_registration_file(tmp_path: Path) -> None:
    t = busy_table(tmp_path / "src")
    register_exporter_file(t.snapshot, sink="/exports/a", name="a", format="parquet", version=2)
    assert [e.name for e in registered_exporters(t.snapshot)] == ["a"]
    assert unregister_exporter(t.snapshot, sink="/exports/a", name="a") is None  # no commit
    assert registered_exporters(DeltaTable(str(tmp_path / "src")).snapshot) == []
    assert DeltaTable(str(tmp_path / "src")).version == t.version


def test_a_registration_moves_to_domain_metadata_once_the_table_supports_it(tmp_path: Path) -> None:
    t = busy_table(tmp_path / "src")
    register_exporter_file(t.snapshot, sink="/exports/a", name="a", format="parquet", version=2)
    t.alter("ALTER TABLE t SET TBLPROPERTIES ('delta.feature.domainMetadata' = 'supported')")
    register_exporter(DeltaTable(str(tmp_path / "src")).snapshot, sink="/exports/a", name="a",
                      format="parquet", version=4)
    snap = DeltaTable(str(tmp_path / "src")).snapshot
    assert [(e.name, e.version) for e in registered_exporters(snap)] == [("a", 4)]
    assert list((tmp_path / "src" / REGISTRY_DIR).iterdir()) == []
