"""Benchmarks: ratios measured side by side in one Spark session on the same generated files.

``python -m bench`` runs them all (``make bench``), ``--smoke`` a tiny version, ``--only NAME``
one of them. Results are printed as tables and written to ``bench/results/latest.json``
(``smoke.json`` for the smoke run). Benchmarks are not tests: figures vary with the machine's load;
only ratios measured in the same run mean much.
"""
