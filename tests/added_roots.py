"""The roots variables the test session extends with its temporary folder (``conftest.py``), so a
test may keep its landing folders and tables under ``tmp_path``; a test of the roots rule itself
removes them (``monkeypatch.delenv``) to see only the data folder's roots."""

ROOTS_ADDED = ("STATEKEEPER_LANDING_ROOTS", "STATEKEEPER_TABLE_ROOTS")
