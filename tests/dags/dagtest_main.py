"""Runs ``dag.test()`` for the JSON list of ``{"dag_id", "conf"}`` on stdin; prints one
``RESULT {...}`` line per run (used by the DAG tests through ``airflow_env.run_dags``)."""

from __future__ import annotations

import json
import sys
import time
import traceback


def main() -> int:
    runs = json.loads(sys.stdin.read())
    from airflow.dag_processing.dagbag import DagBag
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    bag = DagBag(dag_folder=None)
    for spec in runs:
        started = time.time()
        out: dict = {"dag_id": spec["dag_id"]}
        try:
            dag = bag.get_dag(spec["dag_id"]) or bag.dags[spec["dag_id"]]
            dr = dag.test(
                run_conf=spec.get("conf") or {}, mark_success_pattern=spec.get("mark_success")
            )
            out["state"] = str(dr.state)
            tis = dr.get_task_instances()
            out["tasks"] = {ti.task_id: str(ti.state) for ti in tis}
            values = {}
            with create_session() as session:
                for x in session.query(XComModel).filter(
                    XComModel.dag_id == dr.dag_id,
                    XComModel.run_id == dr.run_id,
                    XComModel.key == "return_value",
                ):
                    v = x.value
                    values[x.task_id] = json.loads(v) if isinstance(v, str) else v
            out["returns"] = values
        except Exception as exc:  # a run refused before it started (e.g. params invalid)
            out["state"] = "error"
            out["error"] = f"{type(exc).__name__}: {exc}"
            traceback.print_exc()
        out["seconds"] = round(time.time() - started, 1)
        print("RESULT " + json.dumps(out, default=str), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
