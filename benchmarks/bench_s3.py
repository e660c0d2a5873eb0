"""Tables on S3: snapshot load, poke and append against delta-rs on the same local S3 server, same run.

    python -m benchmarks.bench_s3 [--quick] [--repeats 15] [--json out.json]

A SeaweedFS server (``weed server``, tests/s3_server.py) runs on 127.0.0.1 for the run. The table is the
read benchmark's 1,000-commit workload (benchmarks/workload.py: versions 0..999, 10 files per commit,
a classic checkpoint written by delta-rs at version 900, so a load reads the checkpoint plus 99 commits),
uploaded to the server. Measured:

- **load**: open the latest version and list its active files. Ours: ``DeltaTable(uri).files()``;
  delta-rs: ``DeltaTable(uri)`` then ``get_add_actions()``. Median of ``--repeats``. Target: ours <= 1.0x.
- **requests** per load, per idle poke (``new_commits`` with nothing new), per poke after one new
  commit, per append (ours), counted on the wire by the counting proxy (tests/s3_proxy.py) that both
  engines talk to for that one measurement.
- **I/O library** (why obstore): the same requests through obstore and through pyarrow's
  ``S3FileSystem``: 100 small GETs (commit-sized), one LIST from a version, and a 1-column and a full
  read of a ~25 MB Parquet file.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from benchmarks.workload import WorkloadSpec, ensure_table

if TYPE_CHECKING:
    from collections.abc import Callable

REPO_ROOT = Path(__file__).resolve().parents[1]
TARGET_RATIO = 1.0


def _median_ms(fn: Callable[[], object], repeats: int) -> float:
    fn()  # warm imports and connections
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def _upload(store: Any, local: Path, prefix: str) -> int:
    import obstore

    paths = [p for p in local.rglob("*") if p.is_file() and p.name != "manifest.json"]
    for path in paths:
        obstore.put(store, f"{prefix}/{path.relative_to(local).as_posix()}", path.read_bytes())
    return len(paths)


def _io_library(server: Any, store: Any, prefix: str, repeats: int) -> dict[str, float]:
    """obstore vs pyarrow's S3FileSystem on the same requests."""
    import numpy as np
    import obstore
    import pyarrow.fs as pafs

    endpoint = server.endpoint.removeprefix("http://")
    opts = server.storage_options
    fs = pafs.S3FileSystem(access_key=opts["AWS_ACCESS_KEY_ID"], secret_key=opts["AWS_SECRET_ACCESS_KEY"],
                           region=opts["AWS_REGION"], endpoint_override=endpoint, scheme="http")
    bucket = server.bucket
    commits = [f"{prefix}/_delta_log/{v:020d}.json" for v in range(900, 1000)]
    rng = np.random.default_rng(0)
    n = 1_000_000
    table = pa.table({"id": np.arange(n), "a": rng.random(n), "b": rng.integers(0, 1 << 40, n),
                      "c": rng.random(n)})
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="snappy")
    key = f"{prefix}/big.parquet"
    obstore.put(store, key, sink.getvalue().to_pybytes())

    from airflow_provider_delta.core.storage import storage_for

    ours = storage_for(f"s3://{bucket}/{prefix}", opts)

    def read_cols(source: Any, cols: list[str] | None) -> None:
        pq.ParquetFile(source).read(columns=cols)

    out = {
        "small_get_x100_obstore_ms": _median_ms(lambda: [bytes(obstore.get(store, c).bytes()) for c in commits],
                                                repeats),
        "small_get_x100_pyarrow_ms": _median_ms(
            lambda: [fs.open_input_stream(f"{bucket}/{c}").read() for c in commits], repeats),
        "list_from_v990_obstore_ms": _median_ms(
            lambda: ours.list_dir("_delta_log", start_after=f"{990:020d}"), repeats),
        "list_all_then_filter_pyarrow_ms": _median_ms(
            lambda: [i for i in fs.get_file_info(pafs.FileSelector(f"{bucket}/{prefix}/_delta_log"))
                     if i.base_name > f"{990:020d}"], repeats),
        "parquet_size_mb": round(sink.getvalue().size / 1e6, 1),
    }
    size = sink.getvalue().size
    for label, cols in (("1col", ["a"]), ("full", None)):
        out[f"parquet_{label}_obstore_ms"] = _median_ms(
            lambda cols=cols: read_cols(ours.open_input_file("big.parquet", size=size), cols), max(3, repeats // 3))
        out[f"parquet_{label}_pyarrow_ms"] = _median_ms(
            lambda cols=cols: read_cols(fs.open_input_file(f"{bucket}/{key}"), cols), max(3, repeats // 3))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--quick", action="store_true", help="5 repeats")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    repeats = 5 if args.quick else args.repeats
    sys.path.insert(0, str(REPO_ROOT))
    import deltalake
    import obstore
    from obstore.store import S3Store

    from airflow_provider_delta.core import DeltaTable
    from airflow_provider_delta.core.log.sensing import new_commits
    from tests.s3_proxy import S3Proxy
    from tests.s3_server import SeaweedS3

    load = os.getloadavg()
    print(f"load average at start: {load[0]:.2f} ({os.cpu_count()} CPUs)", flush=True)
    spec = WorkloadSpec(num_commits=1000, checkpoint=True)
    local, manifest, _ = ensure_table(spec)
    report: dict[str, Any] = {"table": spec.key, "repeats": repeats}
    with SeaweedS3() as server:
        opts = server.storage_options
        store = S3Store(server.bucket, endpoint=server.endpoint, access_key_id=opts["AWS_ACCESS_KEY_ID"],
                        secret_access_key=opts["AWS_SECRET_ACCESS_KEY"], region=opts["AWS_REGION"],
                        client_options={"allow_http": True})
        started = time.perf_counter()
        count = _upload(store, local, "bench")
        print(f"uploaded {count} files of {spec.key} in {time.perf_counter() - started:.1f}s", flush=True)
        uri = server.uri("bench")
        expected = manifest["active_files"][-1] if "active_files" in manifest else None

        ours_files = len(DeltaTable(uri, storage_options=opts).files())
        rs_files = deltalake.DeltaTable(uri, storage_options=opts).get_add_actions().num_rows
        if ours_files != rs_files or (expected is not None and ours_files != expected):
            print(f"CROSS-CHECK FAILED: ours {ours_files} files, delta-rs {rs_files}, expected {expected}")
            return 1
        report["active_files"] = ours_files
        report["load_ours_ms"] = _median_ms(lambda: DeltaTable(uri, storage_options=opts).files(), repeats)
        report["load_delta_rs_ms"] = _median_ms(
            lambda: deltalake.DeltaTable(uri, storage_options=opts).get_add_actions(), repeats)
        report["load_ratio"] = report["load_ours_ms"] / report["load_delta_rs_ms"]

        proxy = S3Proxy(server.endpoint).start()
        via = {**opts, "AWS_ENDPOINT_URL": proxy.endpoint}
        try:
            def count_requests(fn: Callable[[], object]) -> dict[str, int]:
                proxy.reset()
                fn()
                return dict(proxy.snapshot())

            report["requests_load_ours"] = count_requests(lambda: DeltaTable(uri, storage_options=via).files())
            report["requests_load_delta_rs"] = count_requests(
                lambda: deltalake.DeltaTable(uri, storage_options=via).get_add_actions())
            report["requests_poke_idle"] = count_requests(lambda: new_commits(uri, 999, storage_options=via))
            small = s3_small_table(server, via)
            report["requests_append_ours"] = count_requests(lambda: small.append(pa.table({"id": [1]})))
            report["requests_poke_one_new"] = count_requests(
                lambda: new_commits(small.location, small.version - 1, storage_options=via))
            rs_uri = server.uri("bench-rs-append")
            deltalake.write_deltalake(rs_uri, pa.table({"id": [0]}), storage_options=via)
            report["requests_append_delta_rs"] = count_requests(
                lambda: deltalake.write_deltalake(rs_uri, pa.table({"id": [1]}), mode="append", storage_options=via))
        finally:
            proxy.stop()
        report["io_library"] = _io_library(server, store, "bench", repeats)
        del obstore

    print()
    print(f"snapshot load, {spec.key} ({report['active_files']:,} active files), median of {repeats}:")
    print(f"  ours     {report['load_ours_ms']:8.1f} ms   requests {report['requests_load_ours']}")
    print(f"  delta-rs {report['load_delta_rs_ms']:8.1f} ms   requests {report['requests_load_delta_rs']}")
    status = "PASS" if report["load_ratio"] <= TARGET_RATIO else "FAIL"
    print(f"  ratio    {report['load_ratio']:.2f}x (target <= {TARGET_RATIO:.1f}x): {status}")
    print(f"requests per idle poke:        {report['requests_poke_idle']}")
    print(f"requests per poke, 1 new:      {report['requests_poke_one_new']}")
    print(f"requests per append (ours):    {report['requests_append_ours']}")
    print(f"requests per append (delta-rs): {report['requests_append_delta_rs']}")
    print("I/O library (obstore vs pyarrow S3FileSystem), ms:")
    for key, value in report["io_library"].items():
        print(f"  {key:34s} {value:8.1f}")
    load_end = os.getloadavg()
    print(f"load average start {load[0]:.2f}, end {load_end[0]:.2f}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return 0


def s3_small_table(server: Any, options: dict[str, str]) -> Any:
    """A fresh one-column table with a few commits, for per-append request counts."""
    from airflow_provider_delta.core import DeltaTable

    t = DeltaTable.create(server.new_table_uri("append"), pa.schema([("id", pa.int64())]), storage_options=options)
    for i in range(3):
        t.append(pa.table({"id": [i]}))
    return t


if __name__ == "__main__":
    sys.exit(main())
