"""A user's ``--with`` rule is code the operator names: a bad name, a module that will not import,
a rule that raises or returns something other than a row each end in one line, never a traceback
and never a key dropped in silence (the Spark side: test_upgrade_state_rules)."""

from __future__ import annotations

import sys
from types import ModuleType

import pandas as pd
import pytest

from spark_jobs.contract.errors import UserError
from spark_jobs.upgrade import rules

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    "spec, needle",
    [
        ("../../etc:passwd", "write MODULE:FUNCTION"),
        ("a/b:f", "write MODULE:FUNCTION"),
        (".relative:f", "write MODULE:FUNCTION"),
        ("no_such_module_here:f", "cannot import no_such_module_here"),
        ("os:sep", "sep is not a function"),
    ],
)
def test_a_bad_with_is_one_line(spec, needle):
    with pytest.raises(UserError, match=needle) as caught:
        rules.load_function(spec)
    assert "\n" not in str(caught.value)


@pytest.fixture
def user_rules(monkeypatch):
    mod = ModuleType("sk_user_rules")

    def ok(row):
        return {**row, "n": row["n"] + 1}

    def explodes(row):
        if row["n"] == 2:
            raise ValueError("no n=2 here")
        return row

    def text(row):
        return "not a row"

    mod.ok, mod.explodes, mod.text = ok, explodes, text
    monkeypatch.setitem(sys.modules, "sk_user_rules", mod)
    return mod


def _convert(name):
    convert = rules._converter(f"sk_user_rules:{name}", "", -1, [], ["user_id"])
    frame = pd.DataFrame(
        {"user_id": ["u1", "u2"], rules.STATE: ['{"n": 1}', '{"n": 2}'], rules.TIMEOUT: [0, 0]}
    )
    return list(convert(iter([frame])))


def test_a_good_rule_converts_every_row(user_rules):
    (out,) = _convert("ok")
    assert list(out[rules.JSON]) == ['{"n": 2}', '{"n": 3}']


@pytest.mark.parametrize(
    "name, why",
    [
        ("explodes", "--with sk_user_rules:explodes ValueError: no n=2 here (key ('u2',))"),
        (
            "text",
            "--with sk_user_rules:text TypeError: returned a str, not a dict or None (key ('u1',))",
        ),
    ],
)
def test_a_failing_rule_names_itself_its_error_and_the_key(user_rules, name, why):
    with pytest.raises(rules.RuleFailed) as caught:
        _convert(name)
    # as the driver sees it: Spark's error text holds the worker's traceback, this line in it
    spark_text = (
        f"PythonException:\n  Traceback (most recent call last):\n    ...\n{caught.value}\n"
    )
    assert rules.failure(Exception(spark_text)) == why


def test_a_spark_error_of_anything_else_is_not_a_rule_failure():
    assert rules.failure(Exception("Py4JJavaError: An error occurred\n  at x")) is None
