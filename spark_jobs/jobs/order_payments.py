"""``order_payments``: orders with their payment (built-in stream-stream left outer join on
order_id, payment within ``payment_within`` of the order). An unpaid order is written with
matched=false once the watermark passes order_time + payment_within."""

from __future__ import annotations

from typing import Any

from spark_jobs.contract.durations import spark_interval
from spark_jobs.io import watermarks
from spark_jobs.jobs.declaration import Duration, JobDef, JobParams, grouped_by, watermarked


class Params(JobParams):
    payment_within: Duration  # a payment later than this after its order is not its payment


def build(spark: Any, spec: Any, events: dict[str, Any]) -> Any:
    from pyspark.sql import functions as F

    within = spark_interval(Params.of(spec).payment_within)
    # the watermark on each input's event_time, renamed after (the alias keeps it)
    orders = watermarks.on(events["orders"], "event_time", spec.watermark_seconds).select(
        "order_id", "user_id", "amount", F.col("event_time").alias("order_time")
    )
    payments = watermarks.on(events["payments"], "event_time", spec.watermark_seconds).select(
        "payment_id",
        F.col("order_id").alias("paid_order_id"),
        F.col("amount").alias("payment_amount"),
        F.col("event_time").alias("payment_time"),
    )
    cond = (
        (F.col("order_id") == F.col("paid_order_id"))
        & (F.col("payment_time") >= F.col("order_time"))
        & (F.col("payment_time") <= F.col("order_time") + F.expr(f"INTERVAL {within}"))
    )
    return orders.join(payments, cond, "leftOuter").select(
        "order_id",
        "user_id",
        "order_time",
        "payment_id",
        "payment_time",
        "amount",
        "payment_amount",
        F.col("payment_id").isNotNull().alias("matched"),
    )


JOB = JobDef(
    name="order_payments",
    inputs=("orders", "payments"),
    schema=(
        "order_id string, user_id string, order_time timestamp, payment_id string, "
        "payment_time timestamp, amount decimal(18,2), payment_amount decimal(18,2), "
        "matched boolean"
    ),
    keys=("order_id",),
    time_column="order_time",
    build=build,
    shuffle_keys=grouped_by({"orders": "order_id", "payments": "order_id"}),
    watermarks=watermarked({"orders": "event_time", "payments": "event_time"}),
    settles_after=lambda spec: Params.of(spec).payment_within,
    params=Params,
)
