"""``python -m spark_jobs kafka (up [--port 9092] | down | status)``: the local broker."""

from __future__ import annotations

import argparse

from spark_jobs.kafka import broker


def cmd_up(args: argparse.Namespace) -> int:
    st = broker.up(port=args.port)
    print(st.bootstrap)
    return 0


def cmd_down(args: argparse.Namespace) -> int:
    was = broker.status()
    broker.down()
    print("kafka stopped" if was.running else "kafka was not running")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    st = broker.status()
    print(st.line())
    return 0 if st.running else 1


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("kafka", help="the local single-node Kafka broker (KRaft, 127.0.0.1)")
    ksub = p.add_subparsers(dest="kafka_command", required=True, parser_class=type(p))
    sp = ksub.add_parser("up", help="start it (a no-op when it runs); prints the bootstrap address")
    sp.add_argument("--port", type=int, default=broker.DEFAULT_PORT)
    sp.set_defaults(func=cmd_up)
    sp = ksub.add_parser("down", help="stop it (its topics are kept)")
    sp.set_defaults(func=cmd_down)
    sp = ksub.add_parser("status", help="running (exit 0) or stopped (exit 1)")
    sp.set_defaults(func=cmd_status)
