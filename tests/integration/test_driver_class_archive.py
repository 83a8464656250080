"""The driver's class archive (:mod:`spark_jobs.runtime.jvm_archive`): `make setup` makes it, a
driver that ``build_session`` starts maps it (Spark's classes come from it, not from the jars),
and an archive that is not whole is never handed to a JVM (it would crash it)."""

import subprocess
import sys

import pytest

from spark_jobs.runtime import jvm_archive

pytestmark = pytest.mark.integration


def test_a_driver_takes_sparks_classes_from_the_archive(tmp_path):
    assert jvm_archive.intact(jvm_archive.archive_path()), "no JVM class archive: `make setup`"
    log = tmp_path / "classes.log"
    code = (
        "from spark_jobs.runtime import session\n"
        f"opts = session._log_options(None) + ' -Xlog:class+load=info:file={log}'\n"
        "spark = session.build_session('archive', conf={'spark.driver.extraJavaOptions': opts})\n"
        "assert spark.range(3).count() == 3\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = log.read_text().splitlines()
    # "(top)": the dynamic archive layered on the JDK's own; without it: "source: jar:file:..."
    context = [ln for ln in lines if " org.apache.spark.SparkContext " in ln]
    assert context and "source: shared objects file (top)" in context[0], context
