#!/usr/bin/env bash
# The end-to-end demo behind `make demo`: Airflow (SQLite, in .demo/airflow) runs example DAG (1), a
# writer plus a deferrable DeltaVersionSensor, then example DAG (2), which checkpoints the same table
# with DeltaCheckpointOperator through a real spark-submit (local[2]), and its nightly DAG, which
# OPTIMIZEs it on Spark. Example DAG (4) evolves a customers table's schema and MERGEs a batch into it
# WITH SCHEMA EVOLUTION on Spark. Then the delta-log CLI prints the tables' history. Everything stays
# under .demo/ (DEMO_DIR); nothing else is touched.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VENV:-$REPO/.venv}"
BIN="$(cd "$VENV/bin" && pwd)"
DEMO_DIR="$(mkdir -p "${DEMO_DIR:-$REPO/.demo}" && cd "${DEMO_DIR:-$REPO/.demo}" && pwd)"
TABLE="$DEMO_DIR/tables/events"
CUSTOMERS="$DEMO_DIR/tables/customers"
LOGS="$DEMO_DIR/logs"

if ! command -v java >/dev/null 2>&1 && [ -z "${JAVA_HOME:-}" ]; then
  echo "error: Spark needs a Java runtime (17 or 21): install one (e.g. apt-get install openjdk-17-jre-headless)" >&2
  echo "       or set JAVA_HOME" >&2
  exit 1
fi

rm -rf "$DEMO_DIR/airflow" "$DEMO_DIR/tables" "$LOGS"
mkdir -p "$DEMO_DIR/airflow" "$DEMO_DIR/tables" "$LOGS"

# Airflow: a private home with a SQLite DB; only the example DAGs; Spark on this machine.
export PATH="$BIN:$PATH"
export AIRFLOW_HOME="$DEMO_DIR/airflow"
export AIRFLOW__CORE__DAGS_FOLDER="$REPO/dags/examples"
export AIRFLOW__CORE__LOAD_EXAMPLES=False
export AIRFLOW_CONN_SPARK_DEFAULT='{"conn_type": "spark", "host": "local[2]"}'
export SPARK_LOCAL_IP=127.0.0.1
# Both examples work on the same table.
export DELTA_EXAMPLE_EVENTS_TABLE="$TABLE"
export DELTA_MAINTENANCE_TABLES="$TABLE"
export DELTA_MAINTENANCE_ENGINE=spark  # the example defaults to engine "local" (no JVM); show Spark here
export DELTA_EXAMPLE_CUSTOMERS_TABLE="$CUSTOMERS"
export DELTA_EXAMPLE_UPDATES="$DEMO_DIR/tables/customers_batch.parquet"

step() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }

run_dag() {  # run_dag <dag_id>: `airflow dags test`, full log in .demo/logs/<dag_id>.log
  local dag_id="$1" log="$LOGS/$1.log" started=$SECONDS
  if ! airflow dags test "$dag_id" >"$log" 2>&1; then
    tail -n 60 "$log"
    echo "error: airflow dags test $dag_id failed (full log: $log)" >&2
    exit 1
  fi
  grep -oE "\[DAG TEST\] running task <TaskInstance: [^ ]+" "$log" | sed -E 's/.*TaskInstance: [^.]+\./   ran task /' \
    | awk '!seen[$0]++' || true
  grep -oE "DagRun Finished: .*, state=[a-z]+" "$log" | sed -E 's/.*, state=([a-z]+)$/   run state: \1/' | tail -n 1 || true
  echo "   $dag_id finished in $((SECONDS - started))s (log: ${log#"$REPO/"})"
}

step "airflow db migrate  (AIRFLOW_HOME=${AIRFLOW_HOME#"$REPO/"})"
airflow db migrate >"$LOGS/db-migrate.log" 2>&1 || { tail -n 40 "$LOGS/db-migrate.log"; exit 1; }

step "example (1): write to ${TABLE#"$REPO/"}, DeltaVersionSensor (deferrable) fires, consumer reads the range"
run_dag example_delta_version_sensor

step "example (2): DeltaCheckpointOperator on Spark (spark-submit, local[2])"
run_dag example_delta_maintenance
grep -oE '"metrics": \{[^}]*\}' "$LOGS/example_delta_maintenance.log" | tail -n 1 | sed 's/^/   /' || true

step "example (2), nightly: DeltaOptimizeOperator compacts the table's small files on Spark"
python - "$TABLE" <<'PY'
import sys
from datetime import datetime

import pyarrow as pa

from airflow_provider_delta.core import DeltaTable

t = DeltaTable(sys.argv[1])
for i in range(4):  # four more small appends: five small files to compact
    t.append(pa.table({"id": [100 + i], "event": ["demo"], "at": [datetime(2026, 1, 1)]}, schema=t.snapshot.arrow_schema))
print(f"   {len(DeltaTable(sys.argv[1]).files())} data files before OPTIMIZE")
PY
run_dag example_delta_maintenance_nightly
grep -oE "optimize of '[^']+': [^[]*" "$LOGS/example_delta_maintenance_nightly.log" | tail -n 1 | sed 's/^/   /' || true

step "example (4): DeltaSchemaEvolveOperator, then DeltaMergeWithEvolutionOperator on Spark"
python - "$DELTA_EXAMPLE_UPDATES" "$CUSTOMERS" <<'PY'
import sys

import pyarrow as pa
import pyarrow.parquet as pq

from airflow_provider_delta.core import DeltaTable

# Three customers to start from (the DAG would create the table empty).
schema = pa.schema([("id", pa.int64()), ("name", pa.string()), ("country", pa.string())])
table = DeltaTable.create(sys.argv[2], schema, partition_by=["country"])
table.append(pa.table({"id": [1, 2, 3], "name": ["ann", "bob", "cy"], "country": ["FR", "DE", "DE"]}, schema=schema))
# The day's batch: an update, a delete (op 'D') and an insert; `signup_channel` is a new column.
pq.write_table(pa.table({"id": pa.array([1, 2, 4], pa.int64()), "name": ["Ann", "Bob", "Dee"],
                         "country": ["FR", "DE", "FR"], "op": ["U", "D", "U"],
                         "signup_channel": ["web", "shop", "app"]}), sys.argv[1])
PY
run_dag example_delta_merge_with_evolution
step "the customers table after the MERGE"
python - "$CUSTOMERS" <<'PY'
import sys

from airflow_provider_delta.core import DeltaTable

t = DeltaTable(sys.argv[1])
print("   columns:", ", ".join(t.schema.names))
for row in sorted(t.to_arrow().to_pylist(), key=lambda r: r["id"]):
    print("  ", row)
PY
delta-log history "$CUSTOMERS"

step "delta-log history ${TABLE#"$REPO/"}"
delta-log history "$TABLE"
step "delta-log describe ${TABLE#"$REPO/"}"
delta-log describe "$TABLE"
step "ls ${TABLE#"$REPO/"}/_delta_log"
ls -1 "$TABLE/_delta_log"
